//! Power cuts at every moment of table builds (`Sorter::finish`, `TableBuilder`): in every
//! state a cut can leave (`stele_testkit`'s crash model, `docs/POWER-LOSS.md`), a table
//! whose build returned is there whole, and any table file under its final name is whole
//! (its checksums hold and it holds the pairs of the build that wrote it); leftover temp
//! files are cleared. `STELE_CRASH_STATES` sets how many states are checked.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use stele_table::{Sorter, SorterOptions, Storage, Table, TableBuilder, TableOptions, TableSet};
use stele_testkit::{ExploreOptions, SimDisk, explore};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The pairs of build `t`: sorted by construction, values tagged with the build.
fn pairs(t: u32) -> Pairs {
    (0..1500 * (t % 3 + 1))
        .map(|i| {
            (
                format!("key-{i:07}").into_bytes(),
                format!("value {i} of build {}", t % 4).into_bytes(),
            )
        })
        .collect()
}

/// What a table file holds, if it is whole; an error names what is wrong.
fn read_table(path: &Path) -> Result<Pairs, String> {
    let table = Table::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    table
        .verify_all()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    table
        .iter()
        .map(|e| {
            e.map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

#[test]
fn table_builds_survive_power_cuts() {
    let root = tempfile::tempdir().unwrap();
    let tables = root.path().join("tables");
    std::fs::create_dir(&tables).unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let storage: Arc<dyn Storage> = disk.clone();
    let table_opts = TableOptions::default()
        .block_size_bytes(1024)
        .storage(Arc::clone(&storage));
    // File name -> (moment the build returned, pairs); builds 0 and 4 write equal bytes, so
    // the second finds its table there and keeps it.
    let mut built: BTreeMap<String, (usize, Pairs)> = BTreeMap::new();
    for t in 0..6u32 {
        let expected = pairs(t);
        let info = if t % 2 == 0 {
            // A small budget: the sorter spills runs (in the system temp folder, outside
            // the recorded disk) and merges them into the table.
            let mut sorter = Sorter::new(
                SorterOptions::default()
                    .memory_budget_bytes(64 << 10)
                    .table_options(table_opts.clone()),
            )
            .unwrap();
            for (k, v) in expected.iter().rev() {
                sorter.add(k, v).unwrap();
            }
            sorter.finish(&tables).unwrap()
        } else {
            let mut b = TableBuilder::new(&tables, table_opts.clone()).unwrap();
            for (k, v) in &expected {
                b.add(k, v).unwrap();
            }
            b.finish().unwrap()
        };
        let name = info.path.file_name().unwrap().to_str().unwrap().to_owned();
        let moment = disk.moment();
        built.entry(name).or_insert((moment, expected));
    }
    let explored = explore(&disk.recording(), &ExploreOptions::from_env(600), |state| {
        let dir = state.dir.join("tables");
        for (name, (acked, expected)) in &built {
            let path = dir.join(name);
            if path.exists() {
                if read_table(&path)? != *expected {
                    return Err(format!("table {name} holds other pairs"));
                }
            } else if *acked <= state.moment {
                return Err(format!("table {name} was built before the cut and is gone"));
            }
        }
        for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
            let name = entry.map_err(|e| e.to_string())?.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".stt") && !built.contains_key(&*name) {
                return Err(format!("unexpected table file {name}"));
            }
        }
        stele_table::remove_partials(&dir).map_err(|e| e.to_string())?;
        Ok(())
    });
    eprintln!("table builds: {explored:?}");
    assert!(explored.states > 0);
}

/// Every entry of the set whose manifest is `path`, if it opens and reads whole.
fn read_set(path: &Path) -> Result<Pairs, String> {
    let set = TableSet::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    set.verify_all()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    set.iter()
        .map(|e| {
            e.map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// Power cuts while table sets are committed: shards are built, then the manifest written
/// over the previous one. In every state the manifest is absent (before the first commit
/// returned), or the first set, or the second, whole: never a mix, never a manifest naming
/// a shard that is gone.
#[test]
fn table_set_commits_survive_power_cuts() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("set");
    std::fs::create_dir(&out).unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let storage: Arc<dyn Storage> = disk.clone();
    let table_opts = TableOptions::default()
        .block_size_bytes(1024)
        .storage(Arc::clone(&storage));
    let manifest = out.join("data.sts");
    let mut commits: Vec<(usize, Pairs)> = Vec::new();
    for generation in 0..2u32 {
        // Three shards of disjoint ranges; the second generation has other values.
        let mut shards = Vec::new();
        let mut all = Pairs::new();
        for shard in 0..3u32 {
            let mut b = TableBuilder::new(&out, table_opts.clone()).unwrap();
            for i in 0..400u32 {
                let key = format!("s{shard}-{i:05}").into_bytes();
                let value = format!("generation {generation}").into_bytes();
                b.add(&key, &value).unwrap();
                all.push((key, value));
            }
            shards.push(b.finish().unwrap().path);
        }
        let none: &[&[u8]] = &[];
        TableSet::commit_with(&*storage, &manifest, &shards, none).unwrap();
        commits.push((disk.moment(), all));
    }
    let explored = explore(&disk.recording(), &ExploreOptions::from_env(300), |state| {
        let path = state.dir.join("set").join("data.sts");
        let acked: Vec<&Pairs> = commits
            .iter()
            .filter(|(moment, _)| *moment <= state.moment)
            .map(|(_, pairs)| pairs)
            .collect();
        if !path.exists() {
            return match acked.is_empty() {
                true => Ok(()),
                false => Err("the manifest of a committed set is gone".into()),
            };
        }
        let got = read_set(&path)?;
        // The newest acknowledged commit, or one after it that had started: never older.
        let allowed = &commits[acked.len().saturating_sub(1)..];
        if allowed.iter().any(|(_, pairs)| *pairs == got) {
            Ok(())
        } else {
            Err(format!(
                "the manifest reads {} entries of no acknowledged or started commit",
                got.len()
            ))
        }
    });
    eprintln!("table sets: {explored:?}");
    assert!(explored.states > 0);
}
