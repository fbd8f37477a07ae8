#!/usr/bin/env bash
# Coverage-guided fuzzing of the decoders of stored bytes with libFuzzer on stable Rust.
# Usage: scripts/fuzz.sh [target ...|all] [seconds]   (default: every target, 60 s each)
# Fails if any target stops before its time (a finding). CI runs every target 4 s
# (scripts/check.sh), the soak 600 s (scripts/soak.sh).
# Targets: document json json_scanners lz4 table stored_value stream log_segment log_tail manifest root packed_block
#          dictionary index_key index_block (several: quote them, "root manifest")
# Findings land in fuzz/artifacts/<target>/; the committed seeds are in fuzz/corpus/<target>/
# (seed<n>: made by the real writers, crates/stele/tests/fuzz_seeds.rs, for every target that reads
# stored bytes; hand<n> and the seeds of json, json_scanners and lz4: hand-made inputs).
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
# Each target must run for its whole time: one that stops early (a crash, a failed
# assertion of its property, an out-of-memory or a leak) fails the run, so that a check
# that goes quiet (a property that fails at once on some input) cannot pass unnoticed.
failed=""
for t in $targets; do
  work=$(mktemp -d)
  cp corpus/"$t"/* "$work"/
  mkdir -p artifacts/"$t"
  log=$(mktemp)
  t0=$(date +%s)
  rc=0
  "$bin_dir/$t" "$work" -max_total_time="$seconds" \
    -artifact_prefix=artifacts/"$t"/ -print_final_stats=1 > "$log" 2>&1 || rc=$?
  took=$(($(date +%s) - t0))
  runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  if [ "$rc" -ne 0 ] || [ "$took" -lt "$seconds" ]; then
    cat "$log"
    echo "FAIL fuzz target $t: stopped after ${took} s of $seconds (exit code $rc, $runs runs); inputs in fuzz/artifacts/$t/"
    failed="$failed $t"
  else
    echo "ok   fuzz target $t: $runs runs in ${took} s, corpus $(ls "$work" | wc -l) inputs"
  fi
  rm -rf "$work" "$log"
done
if [ -n "$failed" ]; then
  echo "fuzz targets that stopped early:$failed"
  exit 1
fi
echo "fuzz: every target ran ${seconds} s without a finding"
