//! Readers on two threads open the root again and again while a writer commits new
//! generations, compacts and collects garbage: every snapshot is one whole generation.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use stele_durable::Store;

const KEYS: u32 = 500;

#[test]
fn readers_never_see_a_mixed_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut map = store.map_at_root_or_new("main").unwrap();
    for k in 0..KEYS {
        map.put(format!("k{k:04}").as_bytes(), b"0").unwrap();
    }
    map.commit().unwrap();
    let done = AtomicBool::new(false);
    let snapshots = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut last = 0u64;
                while !done.load(Ordering::SeqCst) {
                    let snap = store.map_at_root("main").unwrap();
                    assert_eq!(snap.len(), u64::from(KEYS));
                    let mut generation = None;
                    for entry in snap.iter() {
                        let (k, v) = entry.unwrap();
                        let g: u64 = std::str::from_utf8(v).unwrap().parse().unwrap();
                        let first = *generation.get_or_insert(g);
                        assert_eq!(g, first, "key {:?} is from another generation", &*k);
                    }
                    let g = generation.unwrap();
                    assert!(g >= last, "went back from generation {last} to {g}");
                    last = g;
                    snapshots.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for g in 1..=60u32 {
            let value = g.to_string();
            for k in 0..KEYS {
                map.put(format!("k{k:04}").as_bytes(), value.as_bytes())
                    .unwrap();
            }
            map.commit().unwrap();
            if g % 3 == 0 {
                map.compact().unwrap();
                map.commit().unwrap();
                store.collect_garbage().unwrap();
            }
        }
        done.store(true, Ordering::SeqCst);
    });
    assert!(snapshots.load(Ordering::Relaxed) > 10, "readers barely ran");
    // Nothing is left but the current stack.
    drop(map);
    store.collect_garbage().unwrap();
    let m = store.map_at_root("main").unwrap();
    assert_eq!(m.get(b"k0000").unwrap(), Some(&b"60"[..]));
}
