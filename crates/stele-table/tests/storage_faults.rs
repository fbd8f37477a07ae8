//! A failure at any step of writing leaves no table and no temp file.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::path::Path;
use std::sync::Arc;
use stele_table::{Error, Sorter, SorterOptions, Storage, Table, TableBuilder, TableOptions};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    WriteAfter(u64),
    Sync,
    Rename,
    SyncDir,
}

/// A storage that fails as `fault` says: writes past a number of bytes of a file, or every
/// sync, rename or folder sync.
fn faulty(fault: Fault) -> Arc<dyn Storage> {
    let faults = match fault {
        Fault::WriteAfter(n) => Faults::new().fail_writes_past(n),
        Fault::Sync => Faults::new().kinds(&[Op::Sync, Op::SyncData]).fail_from(0),
        Fault::Rename => Faults::new().kinds(&[Op::Rename]).fail_from(0),
        Fault::SyncDir => Faults::new().kinds(&[Op::SyncDir]).fail_from(0),
    };
    FaultyStorage::with_faults(&faults.shared())
}

fn build(dir: &Path, fault: Fault) -> Result<stele_table::TableInfo, Error> {
    let opts = TableOptions::default().storage(faulty(fault));
    let mut b = TableBuilder::new(dir, opts)?;
    // About 1.7 MB: several writes of the 1 MiB buffer.
    for i in 0..250_000u32 {
        b.add(format!("{i:08}").as_bytes(), &i.to_le_bytes())?;
    }
    b.finish()
}

fn files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn failed_writes_leave_nothing() {
    for fault in [
        Fault::WriteAfter(0),
        Fault::WriteAfter(5000),
        Fault::WriteAfter(1_300_000),
        Fault::Sync,
        Fault::Rename,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let err = build(dir.path(), fault).expect_err("fault must surface");
        assert!(matches!(err, Error::Io { .. }), "{fault:?}: {err}");
        assert!(err.to_string().contains("injected"), "{err}");
        assert_eq!(files(dir.path()), Vec::<String>::new(), "{fault:?}");
    }
}

#[test]
fn failed_folder_sync_is_reported_and_the_table_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let err = build(dir.path(), Fault::SyncDir).expect_err("fault must surface");
    assert!(err.to_string().contains("syncing folder"), "{err}");
    // The rename happened: the one file there is a complete table.
    let names = files(dir.path());
    assert_eq!(names.len(), 1);
    let t = Table::open(dir.path().join(&names[0])).unwrap();
    assert_eq!(t.len(), 250_000);
    t.verify_all().unwrap();
}

#[test]
fn failed_sorter_write_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SorterOptions::default()
        .memory_budget_bytes(64 << 10)
        .temp_dir(dir.path())
        .table_options(TableOptions::default().storage(faulty(Fault::WriteAfter(10_000))));
    let mut s = Sorter::new(opts).unwrap();
    for i in (0..5000u32).rev() {
        s.add(format!("{i:08}").as_bytes(), b"v").unwrap();
    }
    assert!(s.spilled_runs() > 0);
    assert!(s.finish(dir.path()).is_err());
    assert_eq!(files(dir.path()), Vec::<String>::new());
}

#[test]
fn same_content_same_name() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let a = build(d1.path(), Fault::WriteAfter(u64::MAX)).unwrap();
    let b = build(d2.path(), Fault::WriteAfter(u64::MAX)).unwrap();
    assert_eq!(a.path.file_name(), b.path.file_name());
    let name = a.path.file_name().unwrap().to_str().unwrap();
    assert_eq!(name.len(), 32 + 4, "{name}");
    // Building it again in the same folder replaces the file with identical bytes.
    let again = build(d1.path(), Fault::WriteAfter(u64::MAX)).unwrap();
    assert_eq!(again.path, a.path);
    assert_eq!(files(d1.path()).len(), 1);
}

#[test]
fn remove_partials_clears_crash_leftovers_only() {
    let dir = tempfile::tempdir().unwrap();
    let info = build(dir.path(), Fault::WriteAfter(u64::MAX)).unwrap();
    std::fs::write(dir.path().join(".stele-1-2-3.partial"), b"half a table").unwrap();
    assert_eq!(stele_table::remove_partials(dir.path()).unwrap(), 1);
    assert_eq!(
        files(dir.path()),
        vec![info.path.file_name().unwrap().to_str().unwrap().to_owned()]
    );
}
