#!/usr/bin/env bash
# Fails when a build that scripts/check.sh runs after the workspace's test build would resolve a
# dependency with other features than that build did. Each such difference makes cargo compile
# the dependency, and everything above it, once more (on 2 cores, one to two minutes a time):
# crates/stele-workspace-hack (made by `cargo hakari generate`) holds the union of the
# workspace's features, so that every package set builds its dependencies alike.
# Fix a failure with: cargo install cargo-hakari && cargo hakari generate && cargo hakari manage-deps
set -euo pipefail
cd "$(dirname "$0")/.."

features() {
  cargo tree --locked "$@" --prefix none -f '{p} [{f}]' --target x86_64-unknown-linux-gnu \
    | sed 's/ (\*)//; s/ (proc-macro)//' | sort -u
}

workspace=$(features --workspace -e normal,build,dev)
status=0
# The package sets check.sh builds by themselves: the benchmark binaries (cargo run -p
# stele-bench), bench_sets.py's build, the tour (cargo run), the Python extension (maturin).
for set in "-p stele-bench" "-p stele-cli -p stele-bench" "-p stele-cli" "-p stele-py"; do
  # shellcheck disable=SC2086 # the set is several words on purpose
  extra=$(comm -13 <(echo "$workspace") <(features $set -e normal,build))
  if [ -n "$extra" ]; then
    echo "cargo build $set resolves these packages with other features than cargo test --workspace:"
    echo "$extra" | sed 's/^/  /'
    status=1
  fi
done
[ "$status" = 0 ] && echo "every package set resolves its dependencies as the workspace build does"
exit "$status"
