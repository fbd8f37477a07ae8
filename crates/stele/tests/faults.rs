//! An I/O failure (a full disk) at every step of commits and checkpoints: the failing call
//! reports a clear error, the database stays readable and consistent, and nothing that was
//! acknowledged is lost, before or after reopening.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use stele::{Database, DatabaseOptions, Error};
use stele_table::{FsStorage, Storage, StorageFile};

#[derive(Debug)]
struct Faults {
    armed: AtomicBool,
    ops: AtomicU64,
    fail_at: u64,
    fired: AtomicBool,
}

impl Faults {
    fn hit(&self, what: &str) -> io::Result<()> {
        if self.armed.load(Ordering::SeqCst)
            && self.ops.fetch_add(1, Ordering::SeqCst) == self.fail_at
        {
            self.fired.store(true, Ordering::SeqCst);
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!("injected full disk at {what}"),
            ));
        }
        Ok(())
    }
}

#[derive(Debug)]
struct File(Box<dyn StorageFile>, Arc<Faults>);

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.1.hit("write")?;
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl StorageFile for File {
    fn sync(&mut self) -> io::Result<()> {
        self.1.hit("sync")?;
        self.0.sync()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.1.hit("sync_data")?;
        self.0.sync_data()
    }
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        // An empty write is the log's probe for positioned writes: not a step of its own.
        if !buf.is_empty() {
            self.1.hit("write_at")?;
        }
        self.0.write_at(offset, buf)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.1.hit("set_len")?;
        self.0.set_len(len)
    }
}

/// The seam; `positioned`: the log is opened with `open_log` (written at offsets into
/// zeroes written ahead, as on the real file system), else with `open_append` only.
#[derive(Debug)]
struct Seam(Arc<Faults>, bool);

impl Storage for Seam {
    fn open_log(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        if !self.1 {
            return self.open_append(path);
        }
        self.0.hit("open_log")?;
        Ok(Box::new(File(
            FsStorage.open_log(path)?,
            Arc::clone(&self.0),
        )))
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.0.hit("create")?;
        Ok(Box::new(File(FsStorage.create(path)?, Arc::clone(&self.0))))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.0.hit("open_append")?;
        Ok(Box::new(File(
            FsStorage.open_append(path)?,
            Arc::clone(&self.0),
        )))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.hit("rename")?;
        FsStorage.rename(from, to)
    }
    fn rename_new(&self, from: &Path, to: &Path) -> io::Result<bool> {
        self.0.hit("rename")?;
        FsStorage.rename_new(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.hit("sync_dir")?;
        FsStorage.sync_dir(dir)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.hit("remove")?;
        FsStorage.remove(path)
    }
}

type Model = BTreeMap<String, String>;

fn content(db: &Database) -> Model {
    common::content(&db.snapshot(), "c")
}

#[test]
fn a_full_disk_at_any_step_loses_nothing_acknowledged() {
    a_full_disk_at_any_step(true);
}

#[test]
fn a_full_disk_at_any_step_of_an_appended_log_loses_nothing_acknowledged() {
    a_full_disk_at_any_step(false);
}

fn a_full_disk_at_any_step(positioned: bool) {
    let mut steps_seen = 0;
    for fail_at in 0.. {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(Faults {
            armed: AtomicBool::new(false),
            ops: AtomicU64::new(0),
            fail_at,
            fired: AtomicBool::new(false),
        });
        let opts = DatabaseOptions::default()
            .checkpoint_bytes(200)
            .compact_layers(2)
            .storage(Arc::new(Seam(Arc::clone(&faults), positioned)));
        let db = Database::open_with(dir.path(), opts).unwrap();
        faults.armed.store(true, Ordering::SeqCst);
        let mut acked = Model::new();
        let mut failed = None;
        for n in 0..12 {
            let id = format!("d{}", n % 4);
            let json = format!(r#"{{"n":{n}}}"#);
            let mut b = db.batch();
            b.put_json("c", &id, json.as_bytes()).unwrap();
            match db.commit(b) {
                Ok(()) => {
                    acked.insert(id, json);
                }
                Err(e) => {
                    failed = Some((id, json, e));
                    break;
                }
            }
        }
        let explicit = if failed.is_none() {
            db.checkpoint().err()
        } else {
            None
        };
        faults.armed.store(false, Ordering::SeqCst);
        let fired = faults.fired.load(Ordering::SeqCst);
        if !fired {
            steps_seen = fail_at;
            break;
        }
        // Readable and consistent right away: exactly the acknowledged batches.
        assert_eq!(content(&db), acked, "step {fail_at}: live view");
        if let Some((_, _, e)) = &failed {
            let msg = e.to_string();
            assert!(msg.contains("injected full disk"), "step {fail_at}: {msg}");
            assert!(
                matches!(
                    e,
                    Error::CommitFailed { .. } | Error::Io { .. } | Error::LogPoisoned { .. }
                ),
                "{e:?}"
            );
        }
        if let Some(e) = &explicit {
            assert!(e.to_string().contains("injected full disk"), "{e}");
        }
        // Writes work again once the disk has room (unless the log must be reopened).
        let mut b = db.batch();
        b.put_json("c", "after", b"1").unwrap();
        let poisoned = match db.commit(b) {
            Ok(()) => {
                acked.insert("after".into(), "1".into());
                false
            }
            Err(Error::LogPoisoned { .. }) => true,
            Err(e) => panic!("step {fail_at}: commit after the fault: {e}"),
        };
        drop(db);
        let db = Database::open(dir.path()).unwrap();
        let mut got = content(&db);
        // A batch whose commit failed may be on disk only if the log could not be cut
        // back (fsync failures leave the file's state unknown): then it must be whole.
        if let (true, Some((id, json, _))) = (poisoned, &failed)
            && got.get(id) == Some(json)
            && acked.get(id) != Some(json)
        {
            match acked.get(id) {
                Some(old) => got.insert(id.clone(), old.clone()),
                None => got.remove(id),
            };
        }
        assert_eq!(got, acked, "step {fail_at}: after reopening");
    }
    assert!(
        steps_seen > 30,
        "only {steps_seen} storage steps were exercised"
    );
    eprintln!("{steps_seen} storage steps, each failed once");
}
