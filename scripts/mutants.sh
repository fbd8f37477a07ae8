#!/usr/bin/env bash
# Standing mutants: plants each durability bug of docs/POWER-LOSS.md (its tables of
# deliberate bugs) one at a time in a scratch copy of the tree, runs the tests that must
# catch it, and fails unless every one is caught. A mutant whose code no longer matches
# (the code moved) fails too: update its pattern here. The working tree is never changed.
# Run by scripts/soak.sh, not CI (each mutant rebuilds a crate: about a minute each).
# Usage: scripts/mutants.sh [name ...]     (default: all; names are listed by -l, and
#        scripts/mutants.sh -c checks that every pattern still applies, without building)
#   MUTANTS_EQUIVALENT=1 also runs the equivalent mutants, which must survive.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
work=${MUTANTS_DIR:-$repo/target/mutants}
tree=$work/tree
export CARGO_TARGET_DIR=$work/target
# mutant NAME FILE PERL-SUBSTITUTION EXPECT TEST-ARGS...
#   EXPECT: caught (the tests must fail) or survives (an equivalent mutant).
names=()
declare -A file subst expect tests
mutant() {
  names+=("$1")
  file[$1]=$2
  subst[$1]=$3
  expect[$1]=$4
  shift 4
  tests[${names[-1]}]="$*"
}

# From docs/POWER-LOSS.md, "Deliberate bugs the exploration catches".
mutant commit-no-fdatasync crates/stele/src/wal.rs \
  's/\.and_then\(\|\(\)\| self\.file\.sync_data\(\)\)/.and_then(|()| Ok(()))/' \
  caught -p stele --test it power_loss::the_store_survives_power_cuts
mutant table-link-no-folder-sync crates/stele-table/src/storage.rs \
  's/if created \{\s*self\.storage\s*\.sync_dir\(&self\.dir\)\s*\.map_err\([^;]*\)\?;\s*\}/if created {}/' \
  caught -p stele-table --test it power_loss::
mutant rename-no-folder-sync crates/stele-table/src/storage.rs \
  's/storage\s*\.sync_dir\(dir\)\s*\.map_err\(\|e\| Error::io\("syncing folder", dir, e\)\)\n\}/let _ = dir;\n    Ok(())\n}/' \
  caught -p stele-durable --test it power_loss::
mutant first-checkpoint-no-folder-sync crates/stele/src/db/checkpoint.rs \
  's/self\.inner\s*\.unsynced\s*\.sync\(&\*self\.inner\.opts\.storage, Some\(&self\.inner\.dir\)\)\?;//' \
  caught -p stele --test it power_loss::a_new_databases_first_import_survives_a_power_cut
mutant first-commit-no-folder-sync crates/stele/src/db/commit.rs \
  's/inner\s*\.unsynced\s*\.sync\(&\*inner\.opts\.storage, None\)\s*\.and_then\(\|\(\)\| wal\.append\(&records\)\)/wal.append(\&records)/' \
  caught -p stele --test it power_loss::a_new_databases_first_commit_survives_a_power_cut
# From issue 38.
mutant torn-tail-cut-no-sync crates/stele/src/wal.rs \
  's/file\.sync\(\)\s*\.map_err\(\|e\| Error::io\("syncing log segment", &path, e\)\)\?;//' \
  caught -p stele --test it power_loss_recovery::a_torn_log_tail_cut_at_open_survives_a_power_cut
mutant table-not-synced-before-link crates/stele-table/src/storage.rs \
  's/file\.sync\(\)\s*\.map_err\(\|e\| Error::io\("syncing table file", &self\.temp_path, e\)\)\?;//' \
  caught -p stele-table --test it power_loss::
mutant temp-not-synced-before-rename crates/stele-table/src/storage.rs \
  's/file\.sync\(\)\s*\.map_err\(\|e\| Error::io\("syncing temporary file", temp, e\)\)\?;//' \
  caught -p stele-durable --test it power_loss::
mutant segment-folder-not-synced crates/stele/src/wal.rs \
  's/self\.storage\.sync_dir\(&self\.dir\)\?;//' \
  caught -p stele --test it power_loss::the_store_survives_power_cuts
mutant segments-removed-before-manifest crates/stele/src/db/checkpoint.rs \
  's/(\n(\s*)manifest\.write\(&\*self\.inner\.opts\.storage, &self\.inner\.dir\)\?;)/\n$2self.restart_log(state.seq)?;$1/' \
  caught -p stele --test it power_loss::the_store_survives_power_cuts
mutant record-checksum-ignored crates/stele/src/wal.rs \
  's/if hasher\.digest\(\) != u64::from_le_bytes\(sum\)/if false \&\& hasher.digest() != u64::from_le_bytes(sum)/' \
  caught -p stele --lib wal::
mutant block-checksum-ignored crates/stele-table/src/block/reader.rs \
  's/if stored != computed \{/if false \&\& stored != computed {/' \
  caught -p stele-table --test it corruption::
mutant verify-skips-blocks crates/stele-table/src/table/mod.rs \
  's/for b in 0\.\.self\.index\.block_count\(\) \{\s*self\.block\(b\)\?;\s*\}/let _ = self.index.block_count();/' \
  caught -p stele-cli --test it verify::
# Equivalent under the crash model (docs/POWER-LOSS.md says why): they must survive.
mutant zeroes-written-after-the-sync crates/stele/src/wal.rs \
  's/\.and_then\(\|\(\)\| write_zeroes\(&mut \*self\.file, zeroed_to\.max\(end\), zero_to\)\)\s*\.and_then\(\|\(\)\| self\.file\.sync_data\(\)\)/.and_then(|()| self.file.sync_data())\n                    .and_then(|()| write_zeroes(\&mut *self.file, zeroed_to.max(end), zero_to))/' \
  survives -p stele --test it power_loss::the_store_survives_power_cuts
mutant garbage-collected-before-manifest crates/stele/src/db/checkpoint.rs \
  's/(\n(\s*)manifest\.write\(&\*self\.inner\.opts\.storage, &self\.inner\.dir\)\?;)/\n$2self.collect_garbage(\&manifest)?;$1/' \
  survives -p stele --test it power_loss::the_store_survives_power_cuts

if [ "${1:-}" = -l ]; then
  printf '%s\n' "${names[@]}"
  exit 0
fi
if [ "${1:-}" = -c ]; then
  stale=0
  for n in "${names[@]}"; do
    if perl -0pe "${subst[$n]}" "${file[$n]}" | cmp -s - "${file[$n]}"; then
      echo "STALE  $n: its pattern no longer matches ${file[$n]}"
      stale=$((stale + 1))
    else
      echo "applies $n"
    fi
  done
  exit $((stale > 0))
fi
# The first run starts from a copy of the tree's release build: the registry crates' builds
# do not depend on where the workspace is, so only the workspace's crates build again.
if [ ! -d "$CARGO_TARGET_DIR/release" ] && [ -d "${CARGO_TARGET_DIR_MAIN:-$repo/target}/release" ]; then
  mkdir -p "$CARGO_TARGET_DIR"
  cp -a "${CARGO_TARGET_DIR_MAIN:-$repo/target}/release" "$CARGO_TARGET_DIR/"
fi
# The scratch tree: the working tree's tracked files as they are now (uncommitted edits
# included), at a fixed place so that its builds stay warm between runs.
mkdir -p "$tree"
# (-u: only files newer than the copy, so that unchanged crates are not built again).
git ls-files -z | xargs -0 cp -u --parents -t "$tree"

chosen=("$@")
if [ ${#chosen[@]} -eq 0 ]; then
  for n in "${names[@]}"; do
    if [ "${expect[$n]}" = caught ] || [ -n "${MUTANTS_EQUIVALENT:-}" ]; then
      chosen+=("$n")
    fi
  done
fi

logs=$work/logs
mkdir -p "$logs"
bad=0
for n in "${chosen[@]}"; do
  f=${file[$n]:?unknown mutant $n (see -l)}
  cp "$repo/$f" "$tree/$f"
  perl -0pi -e "${subst[$n]}" "$tree/$f"
  if cmp -s "$repo/$f" "$tree/$f"; then
    echo "STALE  $n: its pattern no longer matches $f"
    bad=$((bad + 1))
    continue
  fi
  t0=$SECONDS
  rc=0
  # shellcheck disable=SC2086
  (cd "$tree" && cargo test --release --locked ${tests[$n]}) > "$logs/$n.log" 2>&1 || rc=$?
  cp "$repo/$f" "$tree/$f"
  took=$((SECONDS - t0))
  if grep -qE '^error(\[E[0-9]+\])?:' "$logs/$n.log" && ! grep -q 'test result' "$logs/$n.log"; then
    echo "BROKEN $n: does not build ($logs/$n.log)"
    bad=$((bad + 1))
  elif [ $rc -ne 0 ]; then
    # What failed: the violated invariant, else the first assertion, else the test's name.
    why=$(grep -m1 -E 'violates an invariant|assertion|verified as sound' "$logs/$n.log" ||
      grep -m1 FAILED "$logs/$n.log" || true)
    why=$(echo "$why" | cut -c1-150)
    if [ "${expect[$n]}" = caught ]; then
      echo "caught    $n (${took} s): $why"
    else
      echo "CAUGHT    $n (${took} s), listed as equivalent: $why"
      bad=$((bad + 1))
    fi
  elif [ "${expect[$n]}" = caught ]; then
    echo "SURVIVED  $n (${took} s): the tests [${tests[$n]}] pass with it"
    bad=$((bad + 1))
  else
    echo "survived  $n (${took} s), equivalent"
  fi
done
if [ $bad -ne 0 ]; then
  echo "mutants: $bad of ${#chosen[@]} not as expected (logs in $logs)"
  exit 1
fi
echo "mutants: all ${#chosen[@]} as expected"
