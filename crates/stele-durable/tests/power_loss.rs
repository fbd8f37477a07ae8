//! Power cuts at every moment of durable-map commits (save and root switch), compactions
//! (full, and of the diffs above the base into one), maps built through the sorter and
//! garbage collection: in every state a cut can leave (`stele_testkit`'s crash model,
//! `docs/POWER-LOSS.md`), each root holds a whole
//! generation, the last acknowledged one or a later one, never a mix; and garbage
//! collection run in that state keeps everything the roots need. `STELE_CRASH_STATES` sets
//! how many states are checked.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use stele_durable::{DurableMap, Store, StoreOptions};
use stele_table::Storage;
use stele_testkit::{ExploreOptions, SimDisk, explore};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

use crate::generations;
use generations::model as generation;

/// The map built whole (through the sorter) under root "side".
fn side() -> Model {
    (0..500u32)
        .map(|i| {
            (
                format!("s{i:05}").into_bytes(),
                vec![b'x'; (i % 50) as usize],
            )
        })
        .collect()
}

fn content(map: &DurableMap) -> Result<Model, String> {
    let got: Model = map
        .iter()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if map.len() != got.len() as u64 {
        return Err(format!("len {} but {} entries", map.len(), got.len()));
    }
    Ok(got)
}

/// Checks the roots of the store in `dir`: "main" at a whole generation from `acked` on,
/// "side" whole if acknowledged (or present).
fn check_roots(dir: &Path, acked: u64, last: u64, side_acked: bool) -> Result<(), String> {
    let store = Store::open_with(
        dir,
        StoreOptions::default().storage(stele_testkit::no_sync()),
    )
    .map_err(|e| format!("open: {e}"))?;
    match store.root("main").map_err(|e| e.to_string())? {
        None if acked == 0 => {}
        None => {
            return Err(format!(
                "root main is gone; generation {acked} was acknowledged"
            ));
        }
        Some(_) => {
            let map = store
                .map_at_root("main")
                .map_err(|e| format!("main: {e}"))?;
            let got = content(&map).map_err(|e| format!("main: {e}"))?;
            let g: u64 = got
                .get(&b"gen"[..])
                .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
                .ok_or("main has no generation")?;
            if g < acked || g > last {
                return Err(format!("main at generation {g}, acknowledged {acked}"));
            }
            if got != generation(g) {
                return Err(format!("main mixes generation {g} with another"));
            }
        }
    }
    match store.root("side").map_err(|e| e.to_string())? {
        None if !side_acked => {}
        None => return Err("root side is gone though acknowledged".into()),
        Some(_) => {
            let map = store
                .map_at_root("side")
                .map_err(|e| format!("side: {e}"))?;
            if content(&map).map_err(|e| format!("side: {e}"))? != side() {
                return Err("side holds other pairs".into());
            }
        }
    }
    Ok(())
}

#[test]
fn durable_maps_survive_power_cuts() {
    let root = tempfile::tempdir().unwrap();
    let disk = SimDisk::new(root.path()).unwrap();
    let storage: Arc<dyn Storage> = disk.clone();
    // The store's folders are created through the disk too: they must survive as well.
    let dir = root.path().join("store");
    let store = Store::open_with(&dir, StoreOptions::default().storage(storage)).unwrap();
    let mut map = store.map_at_root_or_new("main").unwrap();
    // Moment each generation's commit returned.
    let mut acks: Vec<(usize, u64)> = Vec::new();
    let mut side_ack = None;
    const GENERATIONS: u64 = 12;
    for g in 1..=GENERATIONS {
        generations::write(&mut map, g).unwrap();
        if g % 5 == 0 {
            // A diff saved but named by no root until the commit below.
            map.save().unwrap();
        }
        map.commit().unwrap();
        acks.push((disk.moment(), g));
        if g % 6 == 0 {
            map.compact().unwrap();
            map.commit().unwrap();
        } else if g % 3 == 0 {
            // A size-tiered compaction: the diffs merged into one on the base.
            map.merge_diffs().unwrap();
            map.commit().unwrap();
        }
        if g % 4 == 0 {
            store.collect_garbage().unwrap();
        }
        if g == 6 {
            let mut s = store.build_map(side()).unwrap();
            s.bind_root("side").unwrap();
            s.commit().unwrap();
            side_ack = Some(disk.moment());
        }
    }
    store.collect_garbage().unwrap();
    let explored = explore(
        &disk.recording(),
        &ExploreOptions::from_env(1200),
        |state| {
            let acked = acks
                .iter()
                .filter(|(m, _)| *m <= state.moment)
                .map(|(_, g)| *g)
                .max()
                .unwrap_or(0);
            let side_acked = side_ack.is_some_and(|m| m <= state.moment);
            let dir = state.dir.join("store");
            check_roots(&dir, acked, GENERATIONS, side_acked)?;
            // Collection in the recovered state must keep what the roots need.
            Store::open(&dir)
                .and_then(|s| s.collect_garbage())
                .map_err(|e| format!("garbage collection: {e}"))?;
            check_roots(&dir, acked, GENERATIONS, side_acked)
                .map_err(|e| format!("after garbage collection: {e}"))
        },
    );
    eprintln!("durable maps: {explored:?}");
    assert!(explored.states > 0);
}
