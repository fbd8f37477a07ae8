//! An import whose cancel flag is set stops all or nothing.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use stele::Database;
use stele::import::{ImportError, ImportOptions, import_reader};
use stele_testkit::table_files;

#[test]
fn a_cancelled_import_imports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let text: String = (0..20_000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let flag = Arc::new(AtomicBool::new(false));
    let opts = ImportOptions::new()
        .batch_docs(1000)
        .bulk(false)
        .cancel_flag(Arc::clone(&flag));
    // Cancelled while writing, after some batches were committed to the staging collection.
    let mut reports = 0;
    let err = import_reader(&db, "c", "<test>", text.as_bytes(), None, &opts, |p| {
        reports += 1;
        if p.written >= 3000 {
            flag.store(true, Ordering::Relaxed);
        }
    })
    .unwrap_err();
    assert!(matches!(err, ImportError::Cancelled), "{err}");
    assert!(reports > 3);
    assert_eq!(
        db.snapshot().count("c"),
        0,
        "nothing of a cancelled import lands"
    );
    let left = db
        .snapshot()
        .all_collections()
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>();
    assert!(
        left.iter().all(|c| !c.starts_with("_import")),
        "staging left: {left:?}"
    );
    // Not cancelled: the same import lands whole.
    flag.store(false, Ordering::Relaxed);
    let report = import_reader(&db, "c", "<test>", text.as_bytes(), None, &opts, |_| {}).unwrap();
    assert_eq!(report.documents, 20_000);
    assert_eq!(db.snapshot().count("c"), 20_000);
}

#[test]
fn a_bulk_import_cancelled_while_reading_imports_nothing_and_leaves_no_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    batch.put_json("c", "before", br#"{"n":-1}"#).unwrap();
    db.commit(batch).unwrap();
    // At rest (a close packs and checkpoints), so the close after the import has nothing
    // of its own to write: any table that differs then is the import's.
    db.close().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let before = table_files(dir.path());
    let text: String = (0..20_000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let flag = Arc::new(AtomicBool::new(false));
    let opts = ImportOptions::new().cancel_flag(Arc::clone(&flag));
    let err = import_reader(&db, "c", "<test>", text.as_bytes(), None, &opts, |p| {
        if p.documents >= 4096 {
            flag.store(true, Ordering::Relaxed);
        }
    })
    .unwrap_err();
    assert!(matches!(err, ImportError::Cancelled), "{err}");
    assert_eq!(db.snapshot().count("c"), 1);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.snapshot().count("c"), 1);
    assert_eq!(
        table_files(dir.path()),
        before,
        "no table of the import is left"
    );
}
