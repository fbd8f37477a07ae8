//! The syncs of opening a new database, importing into it and closing it, counted through
//! the storage seam: opening syncs nothing, the new folders are synced by the first
//! commit or checkpoint (the manifest's sync of the database folder covering its log and
//! tables folders), the log segment and its folder only by the first commit (an import
//! logs nothing), and a clean close cuts the log's zeroes without a sync. Each sync
//! left is needed for durability (`docs/notes/store.md`, "Import time: one dictionary
//! size").
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use stele::import::{ImportOptions, import_reader};
use stele::{Database, DatabaseOptions};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

type Syncs = Arc<Mutex<Vec<(Op, PathBuf)>>>;

/// Options whose storage records every sync (file or folder) and its path.
fn counted() -> (DatabaseOptions, Syncs) {
    let syncs: Syncs = Arc::default();
    let seen = Arc::clone(&syncs);
    let faults = Faults::new()
        .kinds(&[Op::Sync, Op::SyncData, Op::SyncDir])
        .on_op(move |op, path| {
            // The hook sees every operation; the kinds only choose those counted.
            if matches!(op, Op::Sync | Op::SyncData | Op::SyncDir) {
                seen.lock().unwrap().push((op, path.to_path_buf()));
            }
        })
        .shared();
    let opts = DatabaseOptions::default().storage(FaultyStorage::with_faults(&faults));
    (opts, syncs)
}

/// The syncs in `syncs` of files or folders under `dir`.
fn under(syncs: &Syncs, dir: &Path) -> Vec<(Op, PathBuf)> {
    let syncs = syncs.lock().unwrap();
    syncs
        .iter()
        .filter(|(_, p)| p.starts_with(dir))
        .cloned()
        .collect()
}

#[test]
fn an_import_into_a_new_database_syncs_each_folder_and_file_as_needed_once() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let (opts, syncs) = counted();
    let db = Database::open_with(&dir, opts).unwrap();
    let text: String = (0..300)
        .map(|i| format!("{{\"id\":\"k{i:04}\",\"city\":\"Oslo\",\"n\":{i}}}\n"))
        .collect();
    let import = ImportOptions::new().id_field("id");
    import_reader(&db, "c", "in", text.as_bytes(), None, &import, |_| {}).unwrap();
    db.close().unwrap();
    let syncs = syncs.lock().unwrap();
    let count = |op: Op, path: &Path| syncs.iter().filter(|(o, p)| *o == op && p == path).count();
    // The database folder once, for the manifest's rename, which also makes its new log
    // and tables folders durable (opening syncs nothing: `db/folders.rs`); its parent once,
    // after that, for the new folder itself; the tables folder once, for the packs table.
    // With the table and the manifest themselves, five syncs in all.
    assert_eq!(count(Op::SyncDir, &dir), 1, "{syncs:?}");
    assert_eq!(count(Op::SyncDir, work.path()), 1, "{syncs:?}");
    assert_eq!(count(Op::SyncDir, &dir.join("tables")), 1, "{syncs:?}");
    assert_eq!(syncs.len(), 5, "{syncs:?}");
    let at = |path: &Path| {
        syncs
            .iter()
            .position(|(o, p)| *o == Op::SyncDir && p == path)
    };
    assert!(
        at(&dir) < at(work.path()),
        "the parent after the manifest: {syncs:?}"
    );
    // The log and its folder: never (nothing was logged), not even when the close cuts
    // the zeroes opening wrote ahead.
    assert!(
        !syncs.iter().any(|(_, p)| p.starts_with(dir.join("wal"))),
        "{syncs:?}"
    );
    drop(syncs);
    // The database folder holds what a close leaves: no log zeroes.
    let log_bytes: u64 = std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(log_bytes, 0);
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.snapshot().count("c"), 300);
}

/// The first commit syncs the new database's folder and its parent before its records and
/// the log's folder (the new segment's entry) after them, once; later commits sync their
/// records alone. (That a commit survives a power cut
/// before or after that sync is `power_loss`'s to show.)
#[test]
fn the_first_commit_syncs_the_log_folder_once() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let wal = dir.join("wal");
    let (opts, syncs) = counted();
    let db = Database::open_with(&dir, opts).unwrap();
    assert!(syncs.lock().unwrap().is_empty(), "opening syncs nothing");
    for i in 0..3 {
        let mut b = db.batch();
        b.put_json("c", &format!("k{i}"), br#"{"n":1}"#).unwrap();
        db.commit(b).unwrap();
        let log = under(&syncs, &wal);
        let folder = log
            .iter()
            .filter(|(o, p)| *o == Op::SyncDir && *p == wal)
            .count();
        let files = log.iter().filter(|(o, _)| *o != Op::SyncDir).count();
        assert_eq!((folder, files), (1, i + 1), "{log:?}");
        // The new database's folder and its parent: once, by the first commit, before its
        // records.
        let all = syncs.lock().unwrap().clone();
        let first_record = all
            .iter()
            .position(|(o, p)| *o != Op::SyncDir && p.starts_with(&wal));
        for folder in [&dir, &work.path().to_path_buf()] {
            let at: Vec<usize> = (0..all.len())
                .filter(|&k| all[k].0 == Op::SyncDir && all[k].1 == *folder)
                .collect();
            assert_eq!(at.len(), 1, "{folder:?}: {all:?}");
            assert!(Some(at[0]) < first_record, "{all:?}");
        }
    }
    db.close().unwrap();
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.snapshot().count("c"), 3);
}

/// An import into a new database creates the files it keeps and no others: the packs
/// table (through one temporary file) and the manifest (through `MANIFEST.tmp`), besides
/// what opening makes; the imported collection's own map is empty (its documents are in
/// its packs) and gets no table, not even a temporary file made and removed.
#[test]
fn an_import_into_a_new_database_makes_no_temporary_file_for_an_empty_map() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let made: Syncs = Arc::default();
    let seen = Arc::clone(&made);
    let faults = Faults::new()
        .kinds(&[Op::Create])
        .on_op(move |op, path| {
            if op == Op::Create {
                seen.lock().unwrap().push((op, path.to_path_buf()));
            }
        })
        .shared();
    let opts = DatabaseOptions::default().storage(FaultyStorage::with_faults(&faults));
    let db = Database::open_with(&dir, opts).unwrap();
    let text: String = (0..300)
        .map(|i| format!("{{\"id\":\"k{i:04}\",\"city\":\"Oslo\",\"n\":{i}}}\n"))
        .collect();
    let import = ImportOptions::new().id_field("id");
    let before = made.lock().unwrap().len();
    import_reader(&db, "c", "in", text.as_bytes(), None, &import, |_| {}).unwrap();
    db.close().unwrap();
    let made = made.lock().unwrap();
    let tables: Vec<_> = made[before..]
        .iter()
        .filter(|(_, p)| p.starts_with(dir.join("tables")))
        .collect();
    assert_eq!(tables.len(), 1, "{made:?}");
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.snapshot().count("c"), 300);
}

/// A checkpoint with nothing new since the last one (here the import's own landing) syncs
/// and writes nothing; after a commit it checkpoints as ever (the manifest and its folder);
/// a new database's first checkpoint writes its first manifest, even with nothing in it.
#[test]
fn a_checkpoint_with_nothing_new_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let empty = work.path().join("empty");
    let db = Database::open(&empty).unwrap();
    assert!(!empty.join("MANIFEST").exists());
    db.checkpoint().unwrap();
    assert!(
        empty.join("MANIFEST").is_file(),
        "a new database's first manifest"
    );
    drop(db);
    let dir = work.path().join("db");
    let (opts, syncs) = counted();
    let db = Database::open_with(&dir, opts).unwrap();
    let text: String = (0..50)
        .map(|i| format!("{{\"id\":\"k{i:04}\",\"n\":{i}}}\n"))
        .collect();
    let import = ImportOptions::new().id_field("id");
    import_reader(&db, "c", "in", text.as_bytes(), None, &import, |_| {}).unwrap();
    let manifest = std::fs::read(dir.join("MANIFEST")).unwrap();
    let before = syncs.lock().unwrap().len();
    db.checkpoint().unwrap();
    db.checkpoint().unwrap();
    assert_eq!(
        syncs.lock().unwrap()[before..],
        [],
        "nothing new, nothing synced"
    );
    assert_eq!(std::fs::read(dir.join("MANIFEST")).unwrap(), manifest);
    let mut b = db.batch();
    b.put_json("c", "k9999", br#"{"n":1}"#).unwrap();
    db.commit(b).unwrap();
    let before = syncs.lock().unwrap().len();
    db.checkpoint().unwrap();
    let after: Vec<_> = syncs.lock().unwrap()[before..].to_vec();
    assert!(
        after.iter().any(|(o, p)| *o == Op::SyncDir && *p == dir),
        "a commit since: the manifest is written again: {after:?}"
    );
    assert_ne!(std::fs::read(dir.join("MANIFEST")).unwrap(), manifest);
    db.close().unwrap();
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.snapshot().count("c"), 51);
}
