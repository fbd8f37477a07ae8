#!/usr/bin/env bash
# Every check and test of the project: what CI runs (.ci/run) and what README tells people to run.
#   scripts/check.sh            fmt, clippy, all Rust tests, benchmark smoke runs, Python tests
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
echo "== benchmark smoke runs (tiny inputs; the real runs are in docs/benchmarks.md)"
out_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$out_dir"
cargo run --release --locked -q -p stele-bench --bin stele-bench -- doc --quick > "$out_dir/bench-doc-quick.md"
tail -n 3 "$out_dir/bench-doc-quick.md"
cargo run --release --locked -q -p stele-bench --bin table_bench -- --test > "$out_dir/bench-table-test.md"
tail -n 3 "$out_dir/bench-table-test.md"
cargo run --release --locked -q -p stele-bench --bin compress_bench -- --quick > "$out_dir/bench-compress-quick.md"
tail -n 3 "$out_dir/bench-compress-quick.md"
echo "== tour"
cargo run --release --locked -q -- tour > /dev/null
echo "all checks passed"
