//! Every operation sequence against a simple model: `BTreeMap` for maps, `Vec` for lists,
//! across save, reopen, compact and snapshots.
#![allow(clippy::unwrap_used, reason = "tests")]

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use stele_durable::{DurableList, DurableMap, Store, StoreOptions};
use stele_table::TableOptions;

#[derive(Debug, Clone)]
enum MapOp {
    Put(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Save,
    Compact,
    Reopen,
    Snapshot,
    /// Compacts what is saved now, on the side (as a background compaction would).
    StartCompaction,
    /// Merges, on the side, the saved diffs above the base into one (as a size-tiered
    /// background compaction would); swapped in by `FinishCompaction`.
    StartDiffMerge,
    /// Merges the saved diffs above the base into one, in place.
    MergeDiffs,
    /// Swaps the side compaction in with `rebase`.
    FinishCompaction,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'b', 0xff]), 0..4)
}

fn map_op() -> impl Strategy<Value = MapOp> {
    prop_oneof![
        6 => (key(), prop::collection::vec(any::<u8>(), 0..12)).prop_map(|(k, v)| MapOp::Put(k, v)),
        3 => key().prop_map(MapOp::Remove),
        1 => Just(MapOp::Save),
        1 => Just(MapOp::Compact),
        1 => Just(MapOp::Reopen),
        1 => Just(MapOp::Snapshot),
        1 => Just(MapOp::StartCompaction),
        1 => Just(MapOp::StartDiffMerge),
        1 => Just(MapOp::MergeDiffs),
        1 => Just(MapOp::FinishCompaction),
    ]
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn entries<'a>(
    it: impl Iterator<Item = stele_durable::Result<(stele_durable::Key<'a>, &'a [u8])>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|e| {
        let (k, v) = e.unwrap();
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

/// Every read of the map agrees with the model.
fn check_map(map: &DurableMap, model: &Model, probes: &[Vec<u8>]) {
    assert_eq!(map.len(), model.len() as u64);
    let all: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(entries(map.iter()), all);
    let mut rev = entries(map.iter().rev());
    rev.reverse();
    assert_eq!(rev, all);
    for (i, (k, v)) in all.iter().enumerate() {
        let (nk, nv) = map.nth(i as u64).unwrap().unwrap();
        assert_eq!((&nk[..], nv), (&k[..], &v[..]), "nth({i})");
    }
    assert!(map.nth(all.len() as u64).unwrap().is_none());
    assert_eq!(
        map.first().unwrap().map(|(k, v)| (k.to_vec(), v.to_vec())),
        all.first().cloned()
    );
    assert_eq!(
        map.last().unwrap().map(|(k, v)| (k.to_vec(), v.to_vec())),
        all.last().cloned()
    );
    for p in probes {
        assert_eq!(
            map.get(p).unwrap(),
            model.get(p).map(Vec::as_slice),
            "get {p:?}"
        );
        assert_eq!(
            map.rank(p).unwrap(),
            model.range::<Vec<u8>, _>(..p.clone()).count() as u64,
            "rank {p:?}"
        );
        assert_eq!(
            map.ceiling(p)
                .unwrap()
                .map(|(k, v)| (k.to_vec(), v.to_vec())),
            model
                .range::<Vec<u8>, _>(p.clone()..)
                .next()
                .map(|(k, v)| (k.clone(), v.clone())),
            "ceiling {p:?}"
        );
        let want: Vec<_> = all
            .iter()
            .filter(|(k, _)| k.starts_with(p))
            .cloned()
            .collect();
        assert_eq!(entries(map.prefix(p)), want, "prefix {p:?}");
        for q in probes {
            for (lo, hi) in [
                (Bound::Included(p.clone()), Bound::Excluded(q.clone())),
                (Bound::Excluded(p.clone()), Bound::Included(q.clone())),
                (Bound::Unbounded, Bound::Included(q.clone())),
            ] {
                let want: Vec<_> = all
                    .iter()
                    .filter(|(k, _)| {
                        RangeBounds::<[u8]>::contains(&(bound(&lo), bound(&hi)), k.as_slice())
                    })
                    .cloned()
                    .collect();
                let got = entries(map.range((bound(&lo), bound(&hi))));
                assert_eq!(got, want, "range {lo:?} {hi:?}");
                // Both ends at once: alternate next and next_back.
                let mut it = map.range((bound(&lo), bound(&hi)));
                let (mut front, mut back) = (Vec::new(), Vec::new());
                let mut toggle = false;
                loop {
                    toggle = !toggle;
                    let e = if toggle { it.next() } else { it.next_back() };
                    let Some(e) = e else { break };
                    let (k, v) = e.unwrap();
                    if toggle {
                        front.push((k.to_vec(), v.to_vec()));
                    } else {
                        back.push((k.to_vec(), v.to_vec()));
                    }
                }
                back.reverse();
                front.extend(back);
                assert_eq!(front, want, "alternating range {lo:?} {hi:?}");
            }
        }
    }
}

fn small_tables() -> StoreOptions {
    StoreOptions::default().table_options(
        TableOptions::default()
            .block_size_bytes(256)
            .restart_interval(2),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(64), ..ProptestConfig::default() })]

    #[test]
    fn map_matches_btreemap(
        initial in prop::collection::vec((key(), prop::collection::vec(any::<u8>(), 0..8)), 0..20),
        ops in prop::collection::vec(map_op(), 1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), small_tables()).unwrap();
        let mut model: Model = initial.iter().cloned().collect();
        let mut map = store.build_map(initial.clone()).unwrap();
        let mut snapshots: Vec<(DurableMap, Model)> = Vec::new();
        let mut pending = None;
        let probes: Vec<Vec<u8>> = vec![vec![], b"a".to_vec(), b"ab".to_vec(), vec![0], vec![0xff, 0xff], b"b".to_vec()];
        for op in ops {
            match op {
                MapOp::Put(k, v) => {
                    map.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                MapOp::Remove(k) => {
                    assert_eq!(map.remove(&k).unwrap(), model.remove(&k).is_some());
                }
                MapOp::Save => {
                    map.save().unwrap();
                    prop_assert_eq!(map.unsaved_changes(), 0);
                }
                MapOp::Compact => {
                    map.compact().unwrap();
                    prop_assert_eq!(map.layer_ids().len(), 1);
                }
                MapOp::Reopen => {
                    let id = map.save().unwrap();
                    let store = Store::open_with(dir.path(), small_tables()).unwrap();
                    map = store.open_map(id).unwrap();
                }
                MapOp::Snapshot => snapshots.push((map.clone(), model.clone())),
                MapOp::StartCompaction => {
                    let mut side = map.saved_only();
                    let covered = side.layer_ids();
                    if !covered.is_empty() {
                        pending = Some((covered, side.compact().unwrap()));
                    }
                }
                MapOp::StartDiffMerge => {
                    let mut side = map.saved_only();
                    let covered = side.layer_ids();
                    if let Some(top) = side.merge_diffs().unwrap() {
                        // The base stays; at most one diff on it.
                        let ids = side.layer_ids();
                        prop_assert_eq!(ids.first(), covered.first());
                        prop_assert!(ids.len() <= 2);
                        pending = Some((covered, top));
                    }
                }
                MapOp::MergeDiffs => {
                    let before = map.layer_ids();
                    let unsaved = map.unsaved_changes();
                    map.merge_diffs().unwrap();
                    let ids = map.layer_ids();
                    prop_assert_eq!(ids.first(), before.first());
                    prop_assert_eq!(ids.len(), before.len().min(2));
                    prop_assert_eq!(map.unsaved_changes(), unsaved);
                }
                MapOp::FinishCompaction => {
                    if let Some((covered, base)) = pending.take() {
                        let before = map.layer_ids();
                        let swapped = map.rebase(&covered, base).unwrap();
                        prop_assert_eq!(swapped, before.starts_with(&covered));
                        if swapped {
                            prop_assert!(map.layer_ids().len() <= 3);
                        }
                    }
                }
            }
            check_map(&map, &model, &probes);
        }
        for (snap, snap_model) in &snapshots {
            check_map(snap, snap_model, &probes);
        }
    }
}

#[derive(Debug, Clone)]
enum ListOp {
    Push(Vec<u8>),
    Set(usize, Vec<u8>),
    Pop,
    Truncate(usize),
    Save,
    Compact,
    Reopen,
}

fn list_op() -> impl Strategy<Value = ListOp> {
    let value = || prop::collection::vec(any::<u8>(), 0..10);
    prop_oneof![
        6 => value().prop_map(ListOp::Push),
        3 => (any::<usize>(), value()).prop_map(|(i, v)| ListOp::Set(i, v)),
        2 => Just(ListOp::Pop),
        1 => any::<usize>().prop_map(ListOp::Truncate),
        1 => Just(ListOp::Save),
        1 => Just(ListOp::Compact),
        1 => Just(ListOp::Reopen),
    ]
}

fn check_list(list: &DurableList, model: &[Vec<u8>]) {
    assert_eq!(list.len(), model.len() as u64);
    let got: Vec<Vec<u8>> = list.iter().map(|v| v.unwrap().to_vec()).collect();
    assert_eq!(got, model);
    let mut rev: Vec<Vec<u8>> = list.iter().rev().map(|v| v.unwrap().to_vec()).collect();
    rev.reverse();
    assert_eq!(rev, model);
    assert_eq!(list.get(model.len() as u64).unwrap(), None);
    if model.len() > 2 {
        let mid: Vec<Vec<u8>> = list
            .range(1..model.len() as u64 - 1)
            .map(|v| v.unwrap().to_vec())
            .collect();
        assert_eq!(mid, &model[1..model.len() - 1]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(64), ..ProptestConfig::default() })]

    #[test]
    fn list_matches_vec(
        initial in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..10), 0..30),
        ops in prop::collection::vec(list_op(), 1..50),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), small_tables()).unwrap();
        let mut model = initial.clone();
        let mut list = store.build_list(&initial).unwrap();
        for op in ops {
            match op {
                ListOp::Push(v) => {
                    list.push(&v).unwrap();
                    model.push(v);
                }
                ListOp::Set(i, v) => {
                    if model.is_empty() {
                        prop_assert!(list.set(0, &v).is_err());
                    } else {
                        let i = i % model.len();
                        list.set(i as u64, &v).unwrap();
                        model[i] = v;
                    }
                }
                ListOp::Pop => prop_assert_eq!(list.pop().unwrap(), model.pop()),
                ListOp::Truncate(n) => {
                    let n = n % (model.len() + 2);
                    list.truncate(n as u64);
                    model.truncate(n);
                }
                ListOp::Save => {
                    list.save().unwrap();
                }
                ListOp::Compact => {
                    list.compact().unwrap();
                    prop_assert_eq!(list.layer_ids().len(), 1);
                }
                ListOp::Reopen => {
                    let id = list.save().unwrap();
                    list = Store::open_with(dir.path(), small_tables()).unwrap().open_list(id).unwrap();
                }
            }
            check_list(&list, &model);
        }
    }
}

#[test]
fn new_map_and_list_save_their_first_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut m = store.new_map();
    assert_eq!(m.id(), None);
    m.put(b"k", b"v").unwrap();
    let id = m.save().unwrap();
    let reopened = store.open_map(id).unwrap();
    assert_eq!(reopened.get(b"k").unwrap(), Some(&b"v"[..]));
    assert_eq!(reopened.layer_ids(), vec![id]);

    let mut l = store.new_list();
    let empty = l.save().unwrap();
    assert_eq!(store.open_list(empty).unwrap().len(), 0);
    l.push(b"x").unwrap();
    let id = l.save().unwrap();
    assert_eq!(l.layer_ids(), vec![empty, id]);
    assert_eq!(
        store.open_list(id).unwrap().get(0).unwrap(),
        Some(&b"x"[..])
    );
}
