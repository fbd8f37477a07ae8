//! Builder + reader against a BTreeMap model.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use stele_table::{Table, TableBuilder, TableOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet makes long shared prefixes and duplicates of prefixes likely.
    prop::collection::vec(
        prop::sample::select(vec![b'a', b'b', b'c', 0u8, 0xff]),
        0..24,
    )
}

fn model_strategy() -> impl Strategy<Value = Model> {
    prop_oneof![
        prop::collection::btree_map(
            key_strategy(),
            prop::collection::vec(any::<u8>(), 0..40),
            0..400
        ),
        // Fixed-length values: blocks store the length once.
        prop::collection::btree_map(
            key_strategy(),
            prop::collection::vec(any::<u8>(), 8..=8),
            0..400
        ),
    ]
}

fn options_strategy() -> impl Strategy<Value = TableOptions> {
    (
        prop::sample::select(vec![256u32, 512, 4096]),
        prop::sample::select(vec![1u32, 2, 3, 16]),
    )
        .prop_map(|(b, r)| {
            TableOptions::default()
                .block_size_bytes(b)
                .restart_interval(r)
        })
}

fn build(model: &Model, opts: TableOptions) -> (tempfile::TempDir, Table) {
    let dir = tempfile::tempdir().unwrap();
    let mut b = TableBuilder::new(dir.path(), opts).unwrap();
    for (k, v) in model {
        b.add(k, v).unwrap();
    }
    let info = b.finish().unwrap();
    assert_eq!(info.entries, model.len() as u64);
    assert_eq!(
        std::fs::metadata(&info.path).unwrap().len(),
        info.file_bytes
    );
    (dir, Table::open(&info.path).unwrap())
}

fn bound(b: Bound<&Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn collect<B: AsRef<[u8]>>(it: stele_table::Iter<'_, B>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| {
        let (k, v) = r.unwrap();
        (k.into_owned(), v.to_vec())
    })
    .collect()
}

fn bound_strategy() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key_strategy().prop_map(Bound::Included),
        key_strategy().prop_map(Bound::Excluded),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(96), ..ProptestConfig::default() })]

    #[test]
    fn reads_match_btreemap(
        model in model_strategy(),
        opts in options_strategy(),
        probes in prop::collection::vec(key_strategy(), 0..40),
        ranges in prop::collection::vec((bound_strategy(), bound_strategy()), 0..8),
    ) {
        let (_dir, t) = build(&model, opts);
        let entries: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(t.len(), model.len() as u64);
        // Full iteration, both ways.
        prop_assert_eq!(&collect(t.iter()), &entries);
        let mut rev: Vec<_> = t.iter().rev().map(|r| { let (k, v) = r.unwrap(); (k.into_owned(), v.to_vec()) }).collect();
        rev.reverse();
        prop_assert_eq!(&rev, &entries);
        // Cursor.
        let mut c = t.cursor();
        let mut seen = Vec::new();
        while let Some((k, v)) = c.next_entry().unwrap() {
            seen.push((k.to_vec(), v.to_vec()));
        }
        prop_assert_eq!(&seen, &entries);
        // first/last/nth
        prop_assert_eq!(t.first().unwrap().map(|(k, v)| (k.into_owned(), v.to_vec())), entries.first().cloned());
        prop_assert_eq!(t.last().unwrap().map(|(k, v)| (k.into_owned(), v.to_vec())), entries.last().cloned());
        for (i, e) in entries.iter().enumerate() {
            let (k, v) = t.nth(i as u64).unwrap().unwrap();
            prop_assert_eq!((k.as_ref(), v), (e.0.as_slice(), e.1.as_slice()));
            prop_assert_eq!(t.rank(&e.0).unwrap(), i as u64);
            prop_assert_eq!(t.get(&e.0).unwrap(), Some(e.1.as_slice()));
        }
        prop_assert!(t.nth(entries.len() as u64).unwrap().is_none());
        // Probes: get, contains, rank, prefix.
        for p in &probes {
            prop_assert_eq!(t.get(p).unwrap(), model.get(p).map(Vec::as_slice));
            prop_assert_eq!(t.contains(p).unwrap(), model.contains_key(p));
            prop_assert_eq!(t.rank(p).unwrap(), model.range::<Vec<u8>, _>(..p).count() as u64);
            let want: Vec<_> = entries.iter().filter(|(k, _)| k.starts_with(p)).cloned().collect();
            prop_assert_eq!(&collect(t.prefix(p)), &want);
        }
        // Multi-get, sorted and unsorted.
        let mut sorted = probes.clone();
        sorted.extend(model.keys().take(20).cloned());
        sorted.sort();
        for batch in [&probes, &sorted] {
            let got = t.get_many(batch).unwrap();
            let want: Vec<_> = batch.iter().map(|k| model.get(k).map(Vec::as_slice)).collect();
            prop_assert_eq!(got, want);
        }
        // Ranges, forwards, backwards and from both ends at once.
        for (lo, hi) in &ranges {
            let (lo, hi) = (lo.as_ref(), hi.as_ref());
            let valid = match (lo, hi) {
                (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                    a < b || (a == b && matches!((lo, hi), (Bound::Included(_), Bound::Included(_))))
                }
                _ => true,
            };
            let want: Vec<_> = if valid {
                model.range::<Vec<u8>, _>((lo, hi)).map(|(k, v)| (k.clone(), v.clone())).collect()
            } else {
                Vec::new()
            };
            prop_assert_eq!(&collect(t.range((bound(lo), bound(hi)))), &want);
            let mut it = t.range((bound(lo), bound(hi)));
            let (mut front, mut back) = (Vec::new(), Vec::new());
            let mut toggle = false;
            loop {
                toggle = !toggle;
                let next = if toggle { it.next() } else { it.next_back() };
                let Some(r) = next else { break };
                let (k, v) = r.unwrap();
                if toggle { front.push((k.into_owned(), v.to_vec())) } else { back.push((k.into_owned(), v.to_vec())) }
            }
            back.reverse();
            front.extend(back);
            prop_assert_eq!(&front, &want);
        }
        // Ranges starting at, just past and far past the last key (`range` answers those
        // past it without a search), both ways.
        if let Some(last) = model.keys().next_back() {
            let mut after = last.clone();
            after.push(0);
            let far = vec![0xff; last.len() + 2];
            for lo in [Bound::Included(last), Bound::Excluded(last), Bound::Included(&after), Bound::Excluded(&far)] {
                let want: Vec<_> = model.range::<Vec<u8>, _>((lo, Bound::Unbounded)).map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(&collect(t.range((bound(lo), Bound::Unbounded))), &want);
                let mut back: Vec<_> = t.range((bound(lo), Bound::Unbounded)).rev().map(|r| { let (k, v) = r.unwrap(); (k.into_owned(), v.to_vec()) }).collect();
                back.reverse();
                prop_assert_eq!(&back, &want);
            }
        }
    }

    #[test]
    fn vec_backed_reads_equal_mmap_reads(model in model_strategy(), opts in options_strategy()) {
        let (_dir, t) = build(&model, opts);
        let bytes = std::fs::read(t.path()).unwrap();
        let v = Table::from_bytes(bytes).unwrap();
        prop_assert_eq!(collect(v.iter()), collect(t.iter()));
        for k in model.keys() {
            prop_assert_eq!(v.get(k).unwrap(), t.get(k).unwrap());
        }
    }
}

/// Thousands of blocks whose separators share 8-byte prefixes: exercises the sampled
/// coarse search of the index and its fallback on prefix ties.
#[test]
fn many_blocks_with_shared_prefixes() {
    let mut model = Model::new();
    for i in 0..30_000u32 {
        // Groups of keys share "prefix/xx" (9+ bytes), so many separators tie on 8 bytes.
        let k = format!("prefix/{:02}/{:06}", i % 7, i).into_bytes();
        model.insert(k, i.to_le_bytes().to_vec());
    }
    let (_dir, t) = build(&model, TableOptions::default().block_size_bytes(256));
    assert!(t.stats().blocks > 1000, "{:?}", t.stats());
    for (i, (k, v)) in model.iter().enumerate() {
        assert_eq!(t.get(k).unwrap(), Some(v.as_slice()));
        assert_eq!(t.rank(k).unwrap(), i as u64);
        let mut absent = k.clone();
        absent.push(0);
        assert_eq!(t.get(&absent).unwrap(), None);
        assert_eq!(t.rank(&absent).unwrap(), i as u64 + 1);
    }
    for probe in [
        &b""[..],
        b"prefix",
        b"prefix/",
        b"prefix/06/",
        b"prefix/99",
        b"q",
        b"\xff",
    ] {
        assert_eq!(
            t.rank(probe).unwrap(),
            model.keys().filter(|k| k.as_slice() < probe).count() as u64
        );
    }
}
