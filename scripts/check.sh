#!/usr/bin/env bash
# Every check and test of the project: what CI runs (.ci/run) and what README tells people to run.
#   scripts/check.sh            fmt, clippy, all Rust tests, benchmark smoke runs, Python package tests
#   VERBOSE=1 scripts/check.sh  the same, printing every step's whole output as it runs
# Quiet by default: one line per step that passes (its time and the last line it printed);
# a step that fails prints its whole output and stops the run. Full logs of the last run are
# in $out_dir/check-logs/ (target/check-logs/ by default).
# Needs Rust, python3 (3.10+, with venv) and access to PyPI for the pinned Python tools.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d ../shared/data ] && [ -z "${STELE_DATA:-}" ]; then
  echo "error: the shared data folder ../shared/data is missing (or set STELE_DATA=/path/to/data)" >&2
  exit 1
fi

# CI builds everything once, from nothing: without the release profile's line tables
# (debug = "line-tables-only", kept for backtraces and profiles on developers' machines),
# which cost link time and code generation across 40-odd test binaries and the peers.
if [ "${CI:-}" = true ]; then
  export CARGO_PROFILE_RELEASE_DEBUG=false
fi

out_dir=${CARGO_TARGET_DIR:-target}
logs="$out_dir/check-logs"
mkdir -p "$logs"
n=0
started=$SECONDS

# step NAME COMMAND...: runs COMMAND with its output in a log; quiet when it passes.
step() {
  local name=$1
  shift
  n=$((n + 1))
  local log
  log="$logs/$(printf '%02d' "$n")-${name// /-}.log"
  local t0=$SECONDS
  if [ -n "${VERBOSE:-}" ]; then
    echo "== $name"
    "$@" 2>&1 | tee "$log"
    return "${PIPESTATUS[0]}"
  fi
  if "$@" > "$log" 2>&1; then
    local last
    if grep -q '^test result: ' "$log"; then
      # cargo test: the sum over its test binaries, not the last binary's line.
      last=$(grep '^test result: ' "$log" | awk '{p += $4; f += $6; i += $8} END {printf "%d tests passed, %d failed, %d ignored", p, f, i}')
    else
      last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-100 || true)
    fi
    printf 'ok   %-34s %4ss  %s\n' "$name" "$((SECONDS - t0))" "$last"
  else
    local rc=$?
    printf 'FAIL %-34s %4ss  (exit code %s); its output (%s):\n' "$name" "$((SECONDS - t0))" "$rc" "$log"
    cat "$log"
    echo "check failed at: $name"
    exit "$rc"
  fi
}

step "cargo fmt" cargo fmt --all --check
# The later cargo builds reuse the test build only if they resolve the same features (seconds).
step "features unified" scripts/features-unified.sh
step "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test" cargo test --workspace --locked --release
# The fuzzing feature (stele::fuzzing) and the fuzz targets' seeds it reads.
step "clippy, fuzzing feature" cargo clippy -p stele --features fuzzing --all-targets --locked -- -D warnings
step "fuzz seeds" cargo test -p stele --features fuzzing --locked --release --test fuzz_seeds
# Every fuzz target 4 s from its seeds: fails if one stops early (a finding, or a property
# that no longer holds for the current format, which would leave the target quiet). The
# instrumented debug build of the targets costs about 2 minutes on 2 cores, the runs 75 s.
step "fuzz smoke, 4 s per target" scripts/fuzz.sh all 4
# Benchmark smoke runs (tiny inputs; the real runs are in docs/benchmarks.md).
step "bench doc --quick" cargo run --release --locked -q -p stele-bench --bin stele-bench -- doc --quick
step "bench table --test" cargo run --release --locked -q -p stele-bench --bin table_bench -- --test
step "bench store --quick" cargo run --release --locked -q -p stele-bench --bin store_bench -- --quick
step "bench at rest --quick" cargo run --release --locked -q -p stele-bench --bin at_rest_bench -- --quick
step "bench durable --test" cargo run --release --locked -q -p stele-bench --bin durable_bench -- --test
step "bench compress --quick" cargo run --release --locked -q -p stele-bench --bin compress_bench -- --quick
step "bench query --quick" cargo run --release --locked -q -p stele-bench --bin query_bench -- --quick
step "bench readers --quick" cargo run --release --locked -q -p stele-bench --bin readers_bench -- --quick
step "bench backup --quick" cargo run --release --locked -q -p stele-bench --bin backup_bench -- --quick
step "bench serve --quick" cargo run --release --locked -q -p stele-bench --bin serve_bench -- --quick
step "plots up to date" python3 scripts/plots.py --check
# The Python package: a venv of our own (.venv, git-ignored) with the pinned tools, reused
# between runs; build (maturin), pytest, benchmark smoke run.
venv=${STELE_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
step "python tools" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  -r crates/stele-py/requirements-dev.txt -r crates/stele-py/requirements-bench.txt
step "python build" env VIRTUAL_ENV="$(cd "$venv" && pwd)" "$venv/bin/maturin" develop --release \
  --locked -q -m crates/stele-py/Cargo.toml
# Debian's chromium and chromedriver for the browser test of `stele serve`
# (crates/stele-py/tests/test_browser.py), which fails rather than skips when they are missing.
step "browser (chromium)" scripts/setup-browser.sh
step "python tests" env STELE_BROWSER_TEST=1 "$venv/bin/python" -m pytest -q crates/stele-py/tests
step "bench python --quick" "$venv/bin/python" crates/stele-py/bench/bench_py.py --quick
step "bench import --quick" "$venv/bin/python" crates/stele-py/bench/bench_import.py --quick
step "bench arrow --quick" "$venv/bin/python" crates/stele-py/bench/bench_arrow.py --quick
step "bench table sets --quick" "$venv/bin/python" crates/stele-py/bench/bench_sets.py --quick \
  --work "$out_dir/bench-sets-quick"
step "tour" cargo run --release --locked -q -- tour
echo "all checks passed ($n steps, $((SECONDS - started)) s; logs in $logs)"
