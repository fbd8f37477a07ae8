//! A failure at any step of writing leaves no table and no temp file.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use stele_table::{
    Error, FsStorage, Sorter, SorterOptions, Storage, StorageFile, Table, TableBuilder,
    TableOptions,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    WriteAfter(u64),
    Sync,
    Rename,
    SyncDir,
}

#[derive(Debug)]
struct Faulty {
    fault: Fault,
}

#[derive(Debug)]
struct FaultyFile {
    inner: Box<dyn StorageFile>,
    fail_after: Option<u64>,
    fail_sync: bool,
    written: AtomicU64,
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let w = self.written.fetch_add(buf.len() as u64, Ordering::Relaxed);
        if self.fail_after.is_some_and(|n| w + buf.len() as u64 > n) {
            return Err(io::Error::other("injected write failure"));
        }
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl StorageFile for FaultyFile {
    fn sync(&mut self) -> io::Result<()> {
        if self.fail_sync {
            return Err(io::Error::other("injected sync failure"));
        }
        self.inner.sync()
    }
}

impl Storage for Faulty {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(FaultyFile {
            inner: FsStorage.create(path)?,
            fail_after: match self.fault {
                Fault::WriteAfter(n) => Some(n),
                _ => None,
            },
            fail_sync: self.fault == Fault::Sync,
            written: AtomicU64::new(0),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.fault == Fault::Rename {
            return Err(io::Error::other("injected rename failure"));
        }
        FsStorage.rename(from, to)
    }
    fn rename_new(&self, from: &Path, to: &Path) -> io::Result<bool> {
        if self.fault == Fault::Rename {
            return Err(io::Error::other("injected rename failure"));
        }
        FsStorage.rename_new(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.fault == Fault::SyncDir {
            return Err(io::Error::other("injected folder sync failure"));
        }
        FsStorage.sync_dir(dir)
    }
}

fn build(dir: &Path, fault: Fault) -> Result<stele_table::TableInfo, Error> {
    let opts = TableOptions::default().storage(Arc::new(Faulty { fault }));
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
        .table_options(TableOptions::default().storage(Arc::new(Faulty {
            fault: Fault::WriteAfter(10_000),
        })));
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
