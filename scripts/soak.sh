#!/usr/bin/env bash
# Longer runs of the reliability tests than CI's: the SIGKILL crash tests (durable maps, the
# database, imports) and the database's property test against its in-memory model.
# Usage: scripts/soak.sh [crash rounds, default 300] [model cases, default 2000]
# About 5 minutes with the defaults on 2 cores. CI (scripts/check.sh) runs 50 rounds and 48 cases.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-300}
cases=${2:-2000}
export STELE_CRASH_ROUNDS=$rounds STELE_MODEL_CASES=$cases
echo "== crash tests, $rounds rounds each"
cargo test --release --locked -p stele-durable --test crash
cargo test --release --locked -p stele --test crash --test import_crash
echo "== model property test, $cases cases"
cargo test --release --locked -p stele --test db database_matches_model
echo "soak passed: $rounds crash rounds, $cases model cases"
