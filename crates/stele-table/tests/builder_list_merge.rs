//! Builder errors and policies, lists, the k-way merge, and the access hints.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use std::collections::BTreeMap;
use stele_table::{
    Access, DuplicatePolicy, Error, ListBuilder, Table, TableBuilder, TableList, TableOptions,
    merge,
};

fn build(
    dir: &std::path::Path,
    pairs: &[(&[u8], &[u8])],
    opts: TableOptions,
) -> Result<Table, Error> {
    let mut b = TableBuilder::new(dir, opts)?;
    for (k, v) in pairs {
        b.add(k, v)?;
    }
    Table::open(b.finish()?.path)
}

#[test]
fn out_of_order_names_both_keys() {
    let dir = tempfile::tempdir().unwrap();
    let err = build(
        dir.path(),
        &[(b"b", b""), (b"a", b"")],
        TableOptions::default(),
    )
    .unwrap_err();
    match &err {
        Error::OutOfOrder { previous, got } => assert_eq!(
            (previous.as_slice(), got.as_slice()),
            (&b"b"[..], &b"a"[..])
        ),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("Sorter"), "{err}");
    // Nothing is left behind by the abandoned builder.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn builder_duplicate_policies() {
    let dir = tempfile::tempdir().unwrap();
    let pairs: [(&[u8], &[u8]); 5] = [
        (b"a", b"1"),
        (b"b", b"2"),
        (b"b", b"3"),
        (b"b", b"4"),
        (b"c", b"5"),
    ];
    let err = build(dir.path(), &pairs, TableOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { key } if key == b"b"),
        "{err}"
    );
    let first = build(
        dir.path(),
        &pairs,
        TableOptions::default().duplicates(DuplicatePolicy::KeepFirst),
    )
    .unwrap();
    assert_eq!(first.get(b"b").unwrap(), Some(&b"2"[..]));
    assert_eq!(first.len(), 3);
    let last = build(
        dir.path(),
        &pairs,
        TableOptions::default().duplicates(DuplicatePolicy::KeepLast),
    )
    .unwrap();
    assert_eq!(last.get(b"b").unwrap(), Some(&b"4"[..]));
    assert_eq!(last.get(b"c").unwrap(), Some(&b"5"[..]));
    assert_eq!(last.len(), 3);
}

#[test]
fn invalid_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for opts in [
        TableOptions::default().block_size_bytes(1000),
        TableOptions::default().block_size_bytes(8),
        TableOptions::default().block_size_bytes(1 << 25),
        TableOptions::default().restart_interval(0),
    ] {
        let err = TableBuilder::new(dir.path(), opts).unwrap_err();
        assert!(matches!(err, Error::InvalidOption { .. }), "{err}");
    }
}

#[test]
fn empty_table_and_large_entries() {
    let dir = tempfile::tempdir().unwrap();
    let empty = build(dir.path(), &[], TableOptions::default()).unwrap();
    assert_eq!(empty.len(), 0);
    assert_eq!(empty.get(b"x").unwrap(), None);
    assert!(empty.first().unwrap().is_none() && empty.iter().next().is_none());
    assert_eq!(empty.rank(b"x").unwrap(), 0);
    // Values of 10 KB and keys of 300 B in 4 KiB blocks: multi-unit blocks.
    let big_v = vec![9u8; 10_000];
    let big_k = vec![b'k'; 300];
    let t = build(
        dir.path(),
        &[(b"a", b"1"), (&big_k, &big_v), (b"z", &big_v)],
        TableOptions::default(),
    )
    .unwrap();
    assert_eq!(t.get(&big_k).unwrap(), Some(big_v.as_slice()));
    assert_eq!(t.get(b"z").unwrap(), Some(big_v.as_slice()));
    assert_eq!(
        t.stats().file_bytes % 4096,
        (stele_table::FOOTER_BYTES as u64 + t.stats().index_bytes) % 4096
    );
    t.verify_all().unwrap();
}

#[test]
fn open_with_hints_and_wrong_kind() {
    let dir = tempfile::tempdir().unwrap();
    let t = build(dir.path(), &[(b"a", b"1")], TableOptions::default()).unwrap();
    for access in [Access::Random, Access::Sequential] {
        let t2 = Table::open_with(t.path(), access).unwrap();
        assert_eq!(t2.get(b"a").unwrap(), Some(&b"1"[..]));
    }
    let err = TableList::open(t.path()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::WrongKind {
                expected: "list",
                found: "table"
            }
        ),
        "{err}"
    );
    let not = dir.path().join("not-a-table");
    std::fs::write(&not, b"hello").unwrap();
    assert!(matches!(
        Table::open(&not).unwrap_err(),
        Error::NotATable { .. }
    ));
}

#[test]
fn table_is_send_and_sync_and_shared_by_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Table>();
    assert_send_sync::<TableList>();
    let dir = tempfile::tempdir().unwrap();
    let mut b = TableBuilder::new(dir.path(), TableOptions::default()).unwrap();
    for i in 0..10_000u32 {
        b.add(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
    }
    let t = Table::open(b.finish().unwrap().path).unwrap();
    std::thread::scope(|s| {
        for part in 0..4u32 {
            let t = &t;
            s.spawn(move || {
                for i in (part..10_000).step_by(4) {
                    assert_eq!(t.get(&i.to_be_bytes()).unwrap(), Some(&i.to_le_bytes()[..]));
                }
            });
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(32), ..ProptestConfig::default() })]

    #[test]
    fn list_matches_vec(
        values in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..600), 0..500),
        block in prop::sample::select(vec![256u32, 4096]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut b = ListBuilder::new(dir.path(), TableOptions::default().block_size_bytes(block)).unwrap();
        for v in &values {
            b.push(v).unwrap();
        }
        let l = TableList::open(b.finish().unwrap().path).unwrap();
        prop_assert_eq!(l.len(), values.len() as u64);
        for (i, v) in values.iter().enumerate() {
            prop_assert_eq!(l.get(i as u64).unwrap(), Some(v.as_slice()));
        }
        prop_assert_eq!(l.get(values.len() as u64).unwrap(), None);
        let all: Vec<Vec<u8>> = l.iter().map(|r| r.unwrap().to_vec()).collect();
        prop_assert_eq!(&all, &values);
        let back: Vec<Vec<u8>> = l.range(1..values.len() as u64).rev().map(|r| r.unwrap().to_vec()).collect();
        let want: Vec<Vec<u8>> = values.iter().skip(1).rev().cloned().collect();
        prop_assert_eq!(back, want);
    }

    #[test]
    fn merge_matches_layered_maps(
        layers in prop::collection::vec(
            prop::collection::btree_map(prop::collection::vec(0u8..4, 0..5), prop::collection::vec(any::<u8>(), 0..4), 0..60),
            0..4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let tables: Vec<Table> = layers.iter().map(|m| {
            let mut b = TableBuilder::new(dir.path(), TableOptions::default().block_size_bytes(256)).unwrap();
            for (k, v) in m { b.add(k, v).unwrap(); }
            Table::open(b.finish().unwrap().path).unwrap()
        }).collect();
        let refs: Vec<&Table> = tables.iter().collect();
        for policy in [DuplicatePolicy::KeepLast, DuplicatePolicy::KeepFirst] {
            let mut want: BTreeMap<Vec<u8>, (Vec<u8>, usize)> = BTreeMap::new();
            for (i, m) in layers.iter().enumerate() {
                for (k, v) in m {
                    if policy == DuplicatePolicy::KeepLast || !want.contains_key(k) {
                        want.insert(k.clone(), (v.clone(), i));
                    }
                }
            }
            let got: BTreeMap<Vec<u8>, (Vec<u8>, usize)> = merge(&refs, policy)
                .map(|r| { let (k, v, i) = r.unwrap(); (k, (v.to_vec(), i)) })
                .collect();
            prop_assert_eq!(got, want);
        }
        let overlap = layers.iter().enumerate().any(|(i, a)| layers.iter().skip(i + 1).any(|b| a.keys().any(|k| b.contains_key(k))));
        let rejected = merge(&refs, DuplicatePolicy::Reject).any(|r| r.is_err());
        prop_assert_eq!(rejected, overlap);
    }
}

/// The empty map durable stores keep in memory is byte for byte what the builder writes
/// for no entries with default options, under the same id.
#[test]
fn the_empty_map_bytes_are_what_the_builder_writes() {
    let dir = tempfile::tempdir().unwrap();
    let info = TableBuilder::new(dir.path(), TableOptions::default())
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(
        std::fs::read(&info.path).unwrap(),
        stele_table::empty_map_bytes()
    );
    assert_eq!(info.id, stele_table::empty_map_id());
    let t = Table::from_bytes(stele_table::empty_map_bytes()).unwrap();
    assert_eq!(t.len(), 0);
    assert_eq!(t.get(b"x").unwrap(), None);
}
