#!/usr/bin/env bash
# Installs the peers of the table and durable-map benchmarks that are not Rust crates.
# RocksDB comes as the prebuilt `rocksdict` wheel (no from-source build), in a venv
# at $STELE_BENCH_VENV (default: <repo>/.venv-bench), which git ignores. Bifurcan
# 0.2.0-alpha7 (durable_bench) is fetched by Maven into ~/.m2 (needs mvn and a JDK).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="${STELE_BENCH_VENV:-$repo/.venv-bench}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "rocksdict>=0.3"
"$venv/bin/python" -c 'import rocksdict, sys; print("rocksdict ok", getattr(rocksdict, "__version__", "?"), sys.version.split()[0])'
if command -v mvn > /dev/null; then
    mvn -q dependency:get -Dartifact=io.lacuna:bifurcan:0.2.0-alpha7 -Dtransitive=false
    echo "bifurcan ok: $HOME/.m2/repository/io/lacuna/bifurcan/0.2.0-alpha7/bifurcan-0.2.0-alpha7.jar"
else
    echo "no mvn: durable_bench will skip Bifurcan" >&2
fi
