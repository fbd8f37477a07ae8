//! The syncs of opening a new database, importing into it and closing it, counted through
//! the storage seam: the folder of a new database is synced once for its log and tables
//! folders (not once each), and a clean close cuts the log's zeroes without a sync. Each
//! sync left is needed for durability (`docs/notes/store.md`, "Import time: one dictionary
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

#[test]
fn an_import_into_a_new_database_syncs_each_folder_and_file_as_needed_once() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let syncs: Arc<Mutex<Vec<(Op, PathBuf)>>> = Arc::default();
    let seen = Arc::clone(&syncs);
    let faults = Faults::new()
        .kinds(&[Op::Sync, Op::SyncData, Op::SyncDir])
        .on_op(move |op, path| seen.lock().unwrap().push((op, path.to_path_buf())))
        .shared();
    let opts = DatabaseOptions::default().storage(FaultyStorage::with_faults(&faults));
    let db = Database::open_with(&dir, opts).unwrap();
    let text: String = (0..300)
        .map(|i| format!("{{\"id\":\"k{i:04}\",\"city\":\"Oslo\",\"n\":{i}}}\n"))
        .collect();
    let import = ImportOptions::new().id_field("id");
    import_reader(&db, "c", "in", text.as_bytes(), None, &import, |_| {}).unwrap();
    db.close().unwrap();
    let syncs = syncs.lock().unwrap();
    let count = |op: Op, path: &Path| syncs.iter().filter(|(o, p)| *o == op && p == path).count();
    // The database folder: once when made (its log and tables folders), once for the
    // manifest's rename; its parent once for the new folder itself.
    assert_eq!(count(Op::SyncDir, &dir), 2, "{syncs:?}");
    assert_eq!(count(Op::SyncDir, work.path()), 1, "{syncs:?}");
    // The log segment: once for the zeroes written ahead of its first record at open,
    // not again when the close cuts them.
    let segments: Vec<&PathBuf> = syncs
        .iter()
        .filter(|(o, p)| matches!(o, Op::Sync | Op::SyncData) && p.starts_with(dir.join("wal")))
        .map(|(_, p)| p)
        .collect();
    assert_eq!(segments.len(), 1, "{syncs:?}");
    // The database folder holds what a close leaves: no log zeroes.
    let log_bytes: u64 = std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(log_bytes, 0);
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.snapshot().count("c"), 300);
}
