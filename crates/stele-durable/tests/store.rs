//! Roots, missing layers, garbage collection and injected I/O faults.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::path::Path;
use stele_durable::{Error, Kind, Store, StoreOptions, TableId};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

fn pairs(n: u32, tag: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            (
                format!("k{i:05}").into_bytes(),
                format!("{tag}{i}").into_bytes(),
            )
        })
        .collect()
}

fn tables_in(dir: &Path) -> Vec<TableId> {
    let mut ids: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| TableId::from_path(&e.unwrap().path()))
        .collect();
    ids.sort();
    ids
}

#[test]
fn roots_switch_with_compare_and_swap() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = store.build_map(pairs(10, "a")).unwrap().id().unwrap();
    let b = store.build_map(pairs(10, "b")).unwrap().id().unwrap();
    assert!(store.root("main").unwrap().is_none());
    let info = store.switch_root("main", None, a, Kind::Map).unwrap();
    assert_eq!((info.generation, info.id), (1, a));
    // A writer that expected the root to be absent loses.
    let err = store.switch_root("main", None, b, Kind::Map).unwrap_err();
    assert!(matches!(err, Error::RootConflict { .. }), "{err}");
    assert!(err.to_string().contains("reopen"), "{err}");
    let info = store.switch_root("main", Some(a), b, Kind::Map).unwrap();
    assert_eq!((info.generation, info.id), (2, b));
    assert_eq!(store.roots().unwrap().len(), 1);

    // Wrong kind, bad names, missing roots, unknown tables.
    let err = store.list_at_root("main").unwrap_err();
    assert!(matches!(err, Error::WrongKind { .. }), "{err}");
    assert!(matches!(
        store.root("../x").unwrap_err(),
        Error::InvalidRootName { .. }
    ));
    assert!(matches!(
        store.map_at_root("nope").unwrap_err(),
        Error::NoSuchRoot { .. }
    ));
    let unknown = TableId::from_u128(42);
    assert!(matches!(
        store
            .switch_root("x", None, unknown, Kind::Map)
            .unwrap_err(),
        Error::MissingTable { .. }
    ));

    // Two handles bound to the same root: the second commit conflicts.
    let mut m1 = store.map_at_root("main").unwrap();
    let mut m2 = store.map_at_root("main").unwrap();
    m1.put(b"new", b"1").unwrap();
    m1.commit().unwrap();
    m2.put(b"other", b"2").unwrap();
    assert!(matches!(
        m2.commit().unwrap_err(),
        Error::RootConflict { .. }
    ));
    let now = store.map_at_root("main").unwrap();
    assert_eq!(now.get(b"new").unwrap(), Some(&b"1"[..]));
    assert_eq!(now.get(b"other").unwrap(), None);
    assert!(matches!(
        store.new_map().commit().unwrap_err(),
        Error::NotBoundToRoot
    ));

    store.remove_root("main", now.id().unwrap()).unwrap();
    assert!(store.root("main").unwrap().is_none());
}

#[test]
fn a_diff_without_its_base_names_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut m = store.build_map(pairs(50, "v")).unwrap();
    let base = m.id().unwrap();
    m.put(b"k00001", b"changed").unwrap();
    m.remove(b"k00002").unwrap();
    let diff = m.save().unwrap();
    drop(m);

    // Copy only the diff into another folder.
    let other = tempfile::tempdir().unwrap();
    std::fs::copy(store.table_path(diff), other.path().join(diff.file_name())).unwrap();
    let err = Store::open(other.path())
        .unwrap()
        .open_map(diff)
        .unwrap_err();
    match &err {
        Error::MissingTable { id, needed_by, .. } => {
            assert_eq!((*id, *needed_by), (base, Some(diff)));
        }
        e => panic!("{e}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(&base.to_string()) && msg.contains(&diff.to_string()),
        "{msg}"
    );

    // With the base beside it, it opens and reads merged.
    std::fs::copy(store.table_path(base), other.path().join(base.file_name())).unwrap();
    let m = Store::open(other.path()).unwrap().open_map(diff).unwrap();
    assert_eq!(m.len(), 49);
    assert_eq!(m.get(b"k00001").unwrap(), Some(&b"changed"[..]));
    assert_eq!(m.get(b"k00002").unwrap(), None);
    assert_eq!(m.layer_ids(), vec![base, diff]);
    // A map diff is not a list.
    assert!(matches!(
        Store::open(other.path())
            .unwrap()
            .open_list(diff)
            .unwrap_err(),
        Error::WrongKind { .. }
    ));
}

/// Two maps with the same content share one content-named file. Building the second must
/// not replace the first's file: the first holds its lock on that file, and a replaced file
/// would leave the name unprotected once the second map is gone, so garbage collection
/// would remove a table the first still needs (found by the database's model test as a
/// missing empty table on reopen).
#[test]
fn a_table_built_again_keeps_the_file_its_holders_lock() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // (The bug showed with empty tables, which have no file any more: see
    // `empty_maps_have_no_file`.)
    let first = store.build_map(pairs(10, "e")).unwrap();
    let id = first.id().unwrap();
    let path = store.table_path(id);
    let inode = std::fs::metadata(&path).unwrap().ino();
    for _ in 0..3 {
        let again = store.build_map(pairs(10, "e")).unwrap();
        assert_eq!(again.id(), Some(id));
        assert_eq!(
            std::fs::metadata(&path).unwrap().ino(),
            inode,
            "file replaced"
        );
        drop(again);
        // No root needs it, but `first` holds it: it stays.
        let report = store.collect_garbage().unwrap();
        assert!(report.removed.is_empty(), "{report:?}");
        assert_eq!(report.in_use, vec![id]);
    }
    // The same for a table with content, built while the first is open.
    let a = store.build_map(pairs(50, "x")).unwrap();
    let b = store.build_map(pairs(50, "x")).unwrap();
    assert_eq!(a.id(), b.id());
    drop(b);
    store.collect_garbage().unwrap();
    assert!(store.table_path(a.id().unwrap()).exists());
    assert_eq!(tables_in(dir.path()).len(), 2);
    drop((first, a));
    assert_eq!(store.collect_garbage().unwrap().removed.len(), 2);
}

/// An empty map's base is never written: every empty map (new, emptied and compacted,
/// built from nothing) is the one id whose bytes the store serves from memory. Maps on
/// top of it, roots naming it, reopening and garbage collection work as with a file, and
/// a file of that name left by an older build is read the same.
#[test]
fn empty_maps_have_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let empty = stele_table::empty_map_id();
    let built = store.map_builder().unwrap().finish().unwrap();
    assert_eq!(built.id(), Some(empty));
    assert_eq!(built.table_stats()[0].1.file_bytes, 0);
    let mut m = store.map_at_root_or_new("m").unwrap();
    assert_eq!(m.save().unwrap(), empty);
    m.commit().unwrap();
    assert!(
        tables_in(dir.path()).is_empty(),
        "{:?}",
        tables_in(dir.path())
    );
    // A diff on top of the empty base.
    for (k, v) in pairs(20, "v") {
        m.put(&k, &v).unwrap();
    }
    m.commit().unwrap();
    assert_eq!(tables_in(dir.path()).len(), 1);
    drop((m, built));
    let m = Store::open(dir.path()).unwrap().map_at_root("m").unwrap();
    assert_eq!(m.len(), 20);
    assert_eq!(m.layer_ids()[0], empty);
    // Emptied and compacted: back to no file.
    let mut m = m;
    for (k, _) in pairs(20, "v") {
        m.remove(&k).unwrap();
    }
    assert_eq!(m.compact().unwrap(), empty);
    m.commit().unwrap();
    drop(m);
    store.collect_garbage().unwrap();
    assert!(
        tables_in(dir.path()).is_empty(),
        "{:?}",
        tables_in(dir.path())
    );
    // An older build's file of the empty table: read the same, and kept (a root names it).
    std::fs::write(store.table_path(empty), stele_table::empty_map_bytes()).unwrap();
    let m = store.map_at_root("m").unwrap();
    assert!(m.is_empty());
    store.collect_garbage().unwrap();
    assert!(store.table_path(empty).exists());
}

#[test]
fn garbage_collection_keeps_what_roots_and_snapshots_need() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut m = store.map_at_root_or_new("main").unwrap();
    for (k, v) in pairs(100, "v") {
        m.put(&k, &v).unwrap();
    }
    let base = m.commit().unwrap();
    m.put(b"k00007", b"x").unwrap();
    let diff = m.commit().unwrap();
    let snapshot = m.clone();
    let compacted = m.compact().unwrap();
    let compacted_root = m.commit().unwrap();
    assert_eq!(compacted, compacted_root);
    // Old stack: unreachable from roots but open (the snapshot and m's history).
    let report = store.collect_garbage().unwrap();
    assert!(report.removed.is_empty(), "{report:?}");
    assert_eq!(report.in_use, {
        let mut v = vec![base, diff];
        v.sort();
        v
    });
    assert_eq!(snapshot.get(b"k00007").unwrap(), Some(&b"x"[..]));
    drop(snapshot);
    let report = store.collect_garbage().unwrap();
    let mut want = vec![base, diff];
    want.sort();
    assert_eq!(report.removed, want);
    assert_eq!(tables_in(dir.path()), vec![compacted]);
    // The root's stack is intact.
    let m = store.map_at_root("main").unwrap();
    assert_eq!(m.len(), 100);
    assert_eq!(m.get(b"k00007").unwrap(), Some(&b"x"[..]));
    // A table no root reaches and nobody holds goes.
    let orphan = store.build_map(pairs(3, "o")).unwrap().id().unwrap();
    assert_eq!(store.collect_garbage().unwrap().removed, vec![orphan]);
    // Leftover temp files of a crashed writer go too.
    std::fs::write(dir.path().join(".stele-crash-1.partial"), b"half").unwrap();
    assert_eq!(store.collect_garbage().unwrap().partials_removed, 1);
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The content of the map root "main" points at, read by a fresh store.
fn root_content(dir: &Path) -> Model {
    let store = Store::open(dir).unwrap();
    let m = store.map_at_root("main").unwrap();
    let got: Model = m
        .iter()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    assert_eq!(m.len(), got.len() as u64);
    got
}

#[test]
fn an_io_failure_at_any_step_leaves_the_previous_state() {
    let mut fail_at = 0;
    loop {
        let dir = tempfile::tempdir().unwrap();
        // A full disk at the `fail_at`-th step (counted from 0) of writing tables, roots
        // and folders once armed.
        let faults = Faults::new()
            .kinds(&[
                Op::Create,
                Op::Write,
                Op::Sync,
                Op::SyncData,
                Op::Rename,
                Op::SyncDir,
                Op::Remove,
            ])
            .fail_at(fail_at)
            .error(std::io::ErrorKind::StorageFull)
            .disarmed()
            .shared();
        let store = Store::open_with(
            dir.path(),
            StoreOptions::default().storage(FaultyStorage::with_faults(&faults)),
        )
        .unwrap();
        let model: Model = pairs(40, "v").into_iter().collect();
        let mut m = store.map_at_root_or_new("main").unwrap();
        for (k, v) in &model {
            m.put(k, v).unwrap();
        }
        m.commit().unwrap();
        faults.arm();

        // The scenario under test: a diff commit, a compaction commit, a collection.
        let mut next = model.clone();
        next.insert(b"k00003".to_vec(), b"changed".to_vec());
        next.remove(b"k00004".as_slice());
        let result = (|| -> stele_durable::Result<()> {
            m.put(b"k00003", b"changed")?;
            m.remove(b"k00004")?;
            m.commit()?;
            m.put(b"zz", b"last")?;
            m.compact()?;
            m.commit()?;
            store.collect_garbage()?;
            Ok(())
        })();
        faults.disarm();
        let fired = faults.fired() > 0;
        match result {
            Ok(()) => {
                assert!(!fired, "a failure at step {fail_at} went unreported");
                next.insert(b"zz".to_vec(), b"last".to_vec());
                assert_eq!(root_content(dir.path()), next);
                // Every step of the scenario had its turn to fail.
                assert!(fail_at > 20, "only {fail_at} storage steps in the scenario");
                eprintln!("{fail_at} storage steps, each failed once");
                break;
            }
            Err(e) => {
                assert!(fired, "step {fail_at}: error without a fault: {e}");
                assert!(e.to_string().contains("injected"), "{e}");
                // The root shows a state that was committed or being committed: the one
                // before the scenario, after its first commit, or after its second (a
                // failed folder sync after the rename leaves the new root in place).
                let got = root_content(dir.path());
                let store = Store::open(dir.path()).unwrap();
                let mut last = next.clone();
                last.insert(b"zz".to_vec(), b"last".to_vec());
                assert!(
                    got == model || got == next || got == last,
                    "step {fail_at}: the root shows a state never committed"
                );
                // The same handle can carry on once the fault is gone.
                m.put(b"after", b"fault").unwrap();
                m.bind_root("main").unwrap();
                m.commit().unwrap();
                let again = store.map_at_root("main").unwrap();
                assert_eq!(again.get(b"after").unwrap(), Some(&b"fault"[..]));
                store.collect_garbage().unwrap();
            }
        }
        fail_at += 1;
    }
}

#[test]
fn collections_open_by_path_or_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut m = store.build_map(pairs(20, "v")).unwrap();
    m.put(b"extra", b"1").unwrap();
    let id = m.save().unwrap();
    let by_path = Store::open_map_path(store.table_path(id)).unwrap();
    assert_eq!(by_path.len(), 21);
    assert_eq!(by_path.layer_ids(), m.layer_ids());
    let l = store.build_list([b"a", b"b"]).unwrap();
    let by_path = Store::open_list_path(store.table_path(l.id().unwrap())).unwrap();
    assert_eq!(by_path.get(1).unwrap(), Some(&b"b"[..]));
    let err = Store::open_map_path(dir.path().join("nope.txt")).unwrap_err();
    assert!(matches!(err, Error::NotATablePath { .. }), "{err}");
}

#[test]
fn a_sequential_copy_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut m = store.build_map(pairs(300, "v")).unwrap();
    m.put(b"k00010", b"changed").unwrap();
    m.save().unwrap();
    m.remove(b"k00011").unwrap();
    let seq = m.sequential().unwrap();
    let all = |m: &stele_durable::DurableMap| -> Vec<(Vec<u8>, Vec<u8>)> {
        m.iter()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect()
    };
    assert_eq!(all(&seq), all(&m));
    assert_eq!(seq.len(), 299);
    assert_eq!(seq.layer_ids(), m.layer_ids());
}
