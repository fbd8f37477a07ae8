#!/usr/bin/env bash
# Installs the peers of the sorted-table benchmark that are not Rust crates.
# RocksDB comes as the prebuilt `rocksdict` wheel (no from-source build), in a venv
# at $STELE_BENCH_VENV (default: <repo>/.venv-bench), which git ignores.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="${STELE_BENCH_VENV:-$repo/.venv-bench}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "rocksdict>=0.3"
"$venv/bin/python" -c 'import rocksdict, sys; print("rocksdict ok", getattr(rocksdict, "__version__", "?"), sys.version.split()[0])'
