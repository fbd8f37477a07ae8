#!/usr/bin/env bash
# Every check and test of the project: what CI runs (.ci/run) and what README tells people to run.
#   scripts/check.sh            fmt, clippy, all Rust tests, benchmark smoke runs, Python package tests
# Needs Rust, python3 (3.10+, with venv) and access to PyPI for the pinned Python tools.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d ../shared/data ] && [ -z "${STELE_DATA:-}" ]; then
  echo "error: the shared data folder ../shared/data is missing (or set STELE_DATA=/path/to/data)" >&2
  exit 1
fi

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked --release
echo "== the fuzzing feature (stele::fuzzing) and the fuzz targets' seeds it reads"
cargo clippy -p stele --features fuzzing --all-targets --locked -- -D warnings
cargo test -p stele --features fuzzing --locked --release --test fuzz_seeds
echo "== benchmark smoke runs (tiny inputs; the real runs are in docs/benchmarks.md)"
out_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$out_dir"
cargo run --release --locked -q -p stele-bench --bin stele-bench -- doc --quick > "$out_dir/bench-doc-quick.md"
tail -n 3 "$out_dir/bench-doc-quick.md"
cargo run --release --locked -q -p stele-bench --bin table_bench -- --test > "$out_dir/bench-table-test.md"
tail -n 3 "$out_dir/bench-table-test.md"
cargo run --release --locked -q -p stele-bench --bin store_bench -- --quick > "$out_dir/bench-store-quick.md"
tail -n 3 "$out_dir/bench-store-quick.md"
cargo run --release --locked -q -p stele-bench --bin durable_bench -- --test > "$out_dir/bench-durable-test.md"
tail -n 3 "$out_dir/bench-durable-test.md"
cargo run --release --locked -q -p stele-bench --bin compress_bench -- --quick > "$out_dir/bench-compress-quick.md"
tail -n 3 "$out_dir/bench-compress-quick.md"
echo "== Python package: build (maturin), pytest, benchmark smoke run"
# A venv of our own (.venv, git-ignored) with the pinned tools; reused between runs.
venv=${STELE_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  -r crates/stele-py/requirements-dev.txt -r crates/stele-py/requirements-bench.txt
VIRTUAL_ENV="$(cd "$venv" && pwd)" "$venv/bin/maturin" develop --release --locked -q \
  -m crates/stele-py/Cargo.toml
"$venv/bin/python" -m pytest -q crates/stele-py/tests
"$venv/bin/python" crates/stele-py/bench/bench_py.py --quick > "$out_dir/bench-py-quick.md"
tail -n 8 "$out_dir/bench-py-quick.md"
echo "== tour"
cargo run --release --locked -q -- tour > /dev/null
echo "all checks passed"
