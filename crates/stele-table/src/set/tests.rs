#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;

use super::*;
use crate::{DuplicatePolicy, Sorter, SorterOptions};

/// Builds a set of `model` in `dir` the way a distributed build does: split points from
/// every key, one sorter per partition, then the commit.
fn build(dir: &Path, model: &BTreeMap<Vec<u8>, Vec<u8>>, shards: usize) -> TableSet {
    let splits = TableSet::plan(model.keys(), shards);
    let mut paths = Vec::new();
    for part in 0..=splits.len() {
        let mut sorter = Sorter::new(SorterOptions::default()).unwrap();
        for (k, v) in model
            .iter()
            .filter(|(k, _)| TableSet::partition(&splits, k) == part)
        {
            sorter.add(k, v).unwrap();
        }
        paths.push(sorter.finish(dir).unwrap().path);
    }
    TableSet::commit(dir.join("set.sts"), &paths, &splits).unwrap()
}

fn entries<'a>(it: impl Iterator<Item = Result<Entry<'a>>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|e| {
        let (k, v) = e.unwrap();
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"abcde".to_vec()), 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(48), ..ProptestConfig::default() })]

    #[test]
    fn a_set_reads_like_one_sorted_map(
        pairs in prop::collection::btree_map(key(), key(), 0..60),
        shards in 1usize..6,
        probes in prop::collection::vec(key(), 1..20),
        walk in prop::collection::vec(any::<bool>(), 0..80),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let set = build(dir.path(), &pairs, shards);
        let reopened = TableSet::open(set.path()).unwrap();
        prop_assert_eq!(reopened.shards(), set.shards());
        let set = reopened;
        prop_assert_eq!(set.len(), pairs.len() as u64);
        prop_assert!(set.shards().len() <= shards);
        let all: Vec<_> = pairs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(entries(set.iter()), all.clone());
        prop_assert_eq!(entries(set.iter().rev()), all.iter().rev().cloned().collect::<Vec<_>>());
        for (i, (k, v)) in all.iter().enumerate() {
            let (nk, nv) = set.nth(i as u64).unwrap().unwrap();
            prop_assert_eq!((nk.to_vec(), nv.to_vec()), (k.clone(), v.clone()));
        }
        prop_assert!(set.nth(all.len() as u64).unwrap().is_none());
        for p in &probes {
            prop_assert_eq!(set.get(p).unwrap(), pairs.get(p).map(Vec::as_slice));
            prop_assert_eq!(set.rank(p).unwrap(), pairs.range::<Vec<u8>, _>(..p.clone()).count() as u64);
            let want: Vec<_> = pairs.iter().filter(|(k, _)| k.starts_with(p)).map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(entries(set.prefix(p)), want);
        }
        // Ranges of every bound kind, walked from both ends in a random interleaving.
        let (a, b) = (probes[0].clone(), probes[probes.len() - 1].clone());
        for (lo, hi) in [
            (Bound::Included(a.clone()), Bound::Excluded(b.clone())),
            (Bound::Excluded(a.clone()), Bound::Included(b.clone())),
            (Bound::Unbounded, Bound::Included(a.clone())),
            (Bound::Included(b.clone()), Bound::Unbounded),
        ] {
            let mut want: std::collections::VecDeque<_> = if lo_le_hi(&lo, &hi) {
                pairs.range((lo.clone(), hi.clone())).map(|(k, v)| (k.clone(), v.clone())).collect()
            } else {
                Default::default()
            };
            let mut it = set.range((lo, hi));
            for &front in &walk {
                let got = if front { it.next() } else { it.next_back() };
                let expect = if front { want.pop_front() } else { want.pop_back() };
                prop_assert_eq!(got.map(|e| { let (k, v) = e.unwrap(); (k.to_vec(), v.to_vec()) }), expect);
            }
        }
        let first = set.first().unwrap().map(|(k, _)| k.to_vec());
        prop_assert_eq!(first, pairs.keys().next().cloned());
        let last = set.last().unwrap().map(|(k, _)| k.to_vec());
        prop_assert_eq!(last, pairs.keys().next_back().cloned());
    }
}

/// Whether `BTreeMap::range` accepts these bounds (it panics on a reversed range).
fn lo_le_hi(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b || (a == b && !matches!((lo, hi), (Bound::Excluded(_), Bound::Excluded(_))))
        }
        _ => true,
    }
}

fn model(n: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    (0..n)
        .map(|i| (format!("key{i:06}").into_bytes(), i.to_le_bytes().to_vec()))
        .collect()
}

#[test]
fn shards_open_only_when_read_and_missing_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let set = build(dir.path(), &model(1000), 4);
    assert_eq!(set.shards().len(), 4);
    let set = TableSet::open(set.path()).unwrap();
    assert!(
        set.tables.iter().all(|t| t.get().is_none()),
        "nothing opened yet"
    );
    assert!(set.get(b"key000500").unwrap().is_some());
    assert_eq!(set.tables.iter().filter(|t| t.get().is_some()).count(), 1);
    std::fs::remove_file(set.shard_path(3).unwrap()).unwrap();
    let set = TableSet::open(set.path()).unwrap();
    let err = set.get(b"key000999").unwrap_err();
    assert!(matches!(err, Error::MissingShard { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("copy the shards with their manifest"),
        "{err}"
    );
    assert!(
        set.get(b"key000001").unwrap().is_some(),
        "other shards still read"
    );
}

#[test]
fn commit_checks_the_shards() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(100);
    let whole = {
        let mut s = Sorter::new(SorterOptions::default()).unwrap();
        for (k, v) in &m {
            s.add(k, v).unwrap();
        }
        s.finish(dir.path()).unwrap().path
    };
    let splits = vec![b"key000050".to_vec()];
    let err = TableSet::commit(dir.path().join("x.sts"), &[&whole], &splits).unwrap_err();
    assert!(err.to_string().contains("more than one partition"), "{err}");
    // Overlapping shards: the same keys in two tables (no split points to tell them apart).
    let other = {
        let mut s = Sorter::new(SorterOptions::default()).unwrap();
        s.add(b"key000010", b"x").unwrap();
        s.finish(dir.path()).unwrap().path
    };
    let none: &[&[u8]] = &[];
    let err = TableSet::commit(dir.path().join("x.sts"), &[&whole, &other], none).unwrap_err();
    assert!(err.to_string().contains("overlap"), "{err}");
    // A file elsewhere, or not content-named.
    let elsewhere = tempfile::tempdir().unwrap();
    let err = TableSet::commit(elsewhere.path().join("x.sts"), &[&whole], none).unwrap_err();
    assert!(err.to_string().contains("manifest's folder"), "{err}");
    let renamed = dir.path().join("mine.stt");
    std::fs::copy(&whole, &renamed).unwrap();
    let err = TableSet::commit(dir.path().join("x.sts"), &[&renamed], none).unwrap_err();
    assert!(err.to_string().contains("content-named"), "{err}");
    assert!(
        !dir.path().join("x.sts").exists(),
        "no manifest after a failed commit"
    );
    // The same shards twice: the same manifest bytes.
    let a = TableSet::commit(dir.path().join("a.sts"), &[&whole], none).unwrap();
    let b = TableSet::commit(dir.path().join("b.sts"), &[&whole, &whole], none).unwrap();
    assert_eq!(
        std::fs::read(a.path()).unwrap(),
        std::fs::read(b.path()).unwrap()
    );
    // A damaged manifest is named as such.
    let mut bytes = std::fs::read(a.path()).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(a.path(), &bytes).unwrap();
    let err = TableSet::open(a.path()).unwrap_err();
    assert!(matches!(err, Error::CorruptSet { .. }), "{err}");
}

#[test]
fn merge_of_sets_follows_the_duplicate_policy() {
    let (d1, d2, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a: BTreeMap<_, _> = (0..300u32)
        .map(|i| (format!("k{i:04}").into_bytes(), b"a".to_vec()))
        .collect();
    let b: BTreeMap<_, _> = (200..500u32)
        .map(|i| (format!("k{i:04}").into_bytes(), b"b".to_vec()))
        .collect();
    let (sa, sb) = (build(d1.path(), &a, 3), build(d2.path(), &b, 2));
    let merged = TableSet::merge(
        &[&sa, &sb],
        out.path().join("m.sts"),
        4,
        DuplicatePolicy::KeepLast,
    )
    .unwrap();
    let mut want = a.clone();
    want.extend(b.clone());
    assert_eq!(merged.len(), 500);
    assert_eq!(merged.shards().len(), 4);
    assert_eq!(entries(merged.iter()), want.into_iter().collect::<Vec<_>>());
    let first = TableSet::merge(
        &[&sa, &sb],
        out.path().join("f.sts"),
        2,
        DuplicatePolicy::KeepFirst,
    )
    .unwrap();
    assert_eq!(first.get(b"k0250").unwrap(), Some(&b"a"[..]));
    let err = TableSet::merge(
        &[&sa, &sb],
        out.path().join("r.sts"),
        2,
        DuplicatePolicy::Reject,
    )
    .unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
}

#[test]
fn plan_splits_evenly_and_never_on_the_first_key() {
    let keys: Vec<Vec<u8>> = (0..10_000u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let splits = TableSet::plan(&keys, 8);
    assert_eq!(splits.len(), 7);
    let mut sizes = vec![0; 8];
    for k in &keys {
        sizes[TableSet::partition(&splits, k)] += 1;
    }
    assert!(sizes.iter().all(|&n| n == 1250), "{sizes:?}");
    assert!(TableSet::plan([b"a", b"a", b"a"], 4).is_empty());
    assert!(TableSet::plan(Vec::<Vec<u8>>::new(), 4).is_empty());
}
