#!/usr/bin/env bash
# Coverage-guided fuzzing of the decoders of stored bytes with libFuzzer on stable Rust.
# Usage: scripts/fuzz.sh [target ...|all] [seconds]   (default: every target, 60 s each)
# Targets: document json json_scanners lz4 table stored_value stream log_segment log_tail manifest root packed_block
#          dictionary index_key index_block (several: quote them, "root manifest")
# Findings land in fuzz/artifacts/<target>/; the committed seeds are in fuzz/corpus/<target>/
# (those of the store's files are made by crates/stele/tests/fuzz_seeds.rs).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${2:-60}
all="document json json_scanners lz4 table stored_value stream log_segment log_tail manifest root packed_block dictionary index_key index_block"
targets=${1:-all}
[ "$targets" = all ] && targets=$all
export RUSTFLAGS="-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3 \
  -C llvm-args=-sanitizer-coverage-inline-8bit-counters -C llvm-args=-sanitizer-coverage-pc-table \
  -C llvm-args=-sanitizer-coverage-trace-compares"
# Debug build: optimisation would hide comparisons from libFuzzer. --target keeps the flags
# away from build scripts.
cargo build --target x86_64-unknown-linux-gnu --bins
# Where cargo put them: fuzz/target, unless CARGO_TARGET_DIR says otherwise.
bin_dir=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/debug
for t in $targets; do
  work=$(mktemp -d)
  cp corpus/"$t"/* "$work"/
  mkdir -p artifacts/"$t"
  "$bin_dir/$t" "$work" -max_total_time="$seconds" \
    -artifact_prefix=artifacts/"$t"/ -print_final_stats=1
  rm -rf "$work"
done
