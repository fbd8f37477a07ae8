#!/usr/bin/env bash
# Bytes at rest after `stele import` (which closes the database) on every collection of
# ../shared/data/collections, for one or two `stele` binaries side by side: `du -sb` of the
# database folder (its files, and 4 KiB for each of its 4 folders) against the JSON Lines file
# and whole-file zstd -3.
#
#   scripts/at-rest-cli.sh NEW_STELE [OLD_STELE] [--quick]
#
# --quick: the first 200 lines of three collections (a smoke run). The decompressed files go
# to $CARGO_TARGET_DIR/data (default target/data), the databases to a temporary folder.
set -euo pipefail
new=${1:?usage: scripts/at-rest-cli.sh NEW_STELE [OLD_STELE] [--quick]}
shift
old=""
quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    *) old=$a ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
data=$here/../shared/data/collections
cache=${CARGO_TARGET_DIR:-$here/target}/data/at-rest
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

files=$(cd "$data" && find . -name '*.jsonl.zst' | sed 's|^\./||' | sort)
if [ "$quick" = 1 ]; then
  files=$(printf '%s\n' "$files" | grep -E 'geonames|github-webhooks|mongodb-zips')
fi

mb() { awk -v b="$1" 'BEGIN { printf "%.3f", b / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# Imports $3 into a new database with binary $1 (folder $2); prints its bytes at rest.
at_rest() {
  "$1" import "$2" c "$3" >/dev/null 2>&1
  du -sb "$2" | cut -f1
}

header="| collection | docs | JSON MB | zstd -3 MB |"
rule="|---|--:|--:|--:|"
if [ -n "$old" ]; then
  header="$header before: MB | before / JSON |"
  rule="$rule--:|--:|"
fi
echo "$header after: MB | after / JSON | after / zstd | import + close s |"
echo "$rule--:|--:|--:|--:|"
for f in $files; do
  name=${f%.jsonl.zst}
  json=$cache/${name//\//__}.jsonl
  if [ "$quick" = 1 ]; then
    json=$cache/${name//\//__}.head.jsonl
    # zstd stops on the closed pipe once head has its lines.
    [ -s "$json" ] || { (zstd -dc "$data/$f" 2>/dev/null || true) | head -n 200 >"$json"; }
  else
    [ -s "$json" ] || zstd -dcq "$data/$f" -o "$json"
  fi
  bytes=$(stat -c %s "$json")
  docs=$(wc -l <"$json")
  zbytes=$(zstd -3 -c "$json" | wc -c)
  row="| $name | $docs | $(mb "$bytes") | $(mb "$zbytes") |"
  if [ -n "$old" ]; then
    before=$(at_rest "$old" "$work/old-${name//\//__}" "$json")
    row="$row $(mb "$before") | $(ratio "$before" "$bytes") |"
  fi
  started=$(date +%s.%N)
  after=$(at_rest "$new" "$work/new-${name//\//__}" "$json")
  ended=$(date +%s.%N)
  seconds=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.2f", b - a }')
  echo "$row $(mb "$after") | $(ratio "$after" "$bytes") | $(ratio "$after" "$zbytes") | $seconds |"
  rm -rf "$work"/*
done
