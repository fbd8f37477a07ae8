#!/usr/bin/env bash
# Runs a command inside a cgroup v1 memory group, so that everything it maps or caches
# counts against the limit (bigger-than-memory runs of durable_bench).
#   in_cgroup.sh <group name> <limit in bytes> <command> [args...]
# Needs write access to /sys/fs/cgroup/memory (root). The group is created if missing and
# kept afterwards; its page cache stays charged to it between commands.
set -euo pipefail
name=$1
limit=$2
shift 2
cg=/sys/fs/cgroup/memory/$name
mkdir -p "$cg"
echo "$limit" > "$cg/memory.limit_in_bytes"
echo $$ > "$cg/cgroup.procs"
exec "$@"
