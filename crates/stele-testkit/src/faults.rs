//! A fault-injecting storage: the real file system behind the [`Storage`] seam, with a
//! shared [`Faults`] control that fails chosen operations with a chosen I/O error, counts
//! them, and can run a hook before each one.
//!
//! It models a disk that refuses an operation at a given moment: a full disk
//! ([`io::ErrorKind::StorageFull`]) or any other I/O error on a creation, a write, a cut,
//! a sync, a rename, a removal or a folder creation. The operation does not happen; every
//! other one reaches the real files. Tests fail the n-th operation for every n in turn and
//! check that each failure is reported and leaves a consistent state (a table builder's
//! temp files cleared, a root at a committed state, nothing acknowledged lost). Unlike
//! [`crate::SimDisk`] nothing is lost that was written: a failure is an error the code
//! sees, not a power cut.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use stele_table::{FsStorage, Storage, StorageFile};

/// A storage operation, as [`Faults`] counts and fails them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// [`Storage::create`].
    Create,
    /// [`Storage::open_append`].
    OpenAppend,
    /// [`Storage::open_log`] (only with a positioned log: see [`FaultyStorage::appending_log`]).
    OpenLog,
    /// A write at the end of a file (`write` or `write_all`).
    Write,
    /// [`StorageFile::write_at`] with bytes (an empty one is the log's probe for
    /// positioned writes, passed through uncounted).
    WriteAt,
    /// [`StorageFile::set_len`].
    SetLen,
    /// [`StorageFile::sync`].
    Sync,
    /// [`StorageFile::sync_data`].
    SyncData,
    /// [`Storage::sync_dir`].
    SyncDir,
    /// [`Storage::rename`] and [`Storage::rename_new`].
    Rename,
    /// [`Storage::remove`].
    Remove,
    /// [`Storage::create_dir`].
    CreateDir,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 12] = [
        Op::Create,
        Op::OpenAppend,
        Op::OpenLog,
        Op::Write,
        Op::WriteAt,
        Op::SetLen,
        Op::Sync,
        Op::SyncData,
        Op::SyncDir,
        Op::Rename,
        Op::Remove,
        Op::CreateDir,
    ];

    fn bit(self) -> u32 {
        1 << self as u32
    }

    /// The operation's name in error messages and traces.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::OpenAppend => "open_append",
            Op::OpenLog => "open_log",
            Op::Write => "write",
            Op::WriteAt => "write_at",
            Op::SetLen => "set_len",
            Op::Sync => "sync",
            Op::SyncData => "sync_data",
            Op::SyncDir => "sync_dir",
            Op::Rename => "rename",
            Op::Remove => "remove",
            Op::CreateDir => "create_dir",
        }
    }
}

type Hook = dyn Fn(Op, &Path) + Send + Sync;
type PathFilter = dyn Fn(&Path) -> bool + Send + Sync;

/// What a [`FaultyStorage`] fails and counts, shared with the test that arms it and reads
/// the counts. Built with the methods below, then [`Faults::shared`]; by default it counts
/// every operation, fails none and is armed.
///
/// Counted operations are those of the chosen [kinds](Faults::kinds), on paths the
/// [filter](Faults::only) accepts, while armed; they are numbered from 0. The error names
/// the operation: `injected full disk at sync` for [`io::ErrorKind::StorageFull`],
/// `injected failure at sync` for any other kind. Set `TRACE_OPS` in the environment to
/// print every counted operation.
pub struct Faults {
    kinds: u32,
    fail_at: Option<u64>,
    once: bool,
    error: io::ErrorKind,
    writes_past: Option<u64>,
    only: Option<Box<PathFilter>>,
    hook: Option<Box<Hook>>,
    armed: AtomicBool,
    ops: AtomicU64,
    fired: AtomicU64,
    trace: bool,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("kinds", &self.kinds)
            .field("fail_at", &self.fail_at)
            .field("once", &self.once)
            .field("error", &self.error)
            .field("writes_past", &self.writes_past)
            .field("armed", &self.armed)
            .field("ops", &self.ops)
            .field("fired", &self.fired)
            .finish_non_exhaustive()
    }
}

impl Default for Faults {
    fn default() -> Self {
        Self::new()
    }
}

impl Faults {
    /// Counts every operation, fails none, armed.
    pub fn new() -> Self {
        Faults {
            kinds: Op::ALL.iter().fold(0, |k, op| k | op.bit()),
            fail_at: None,
            once: true,
            error: io::ErrorKind::Other,
            writes_past: None,
            only: None,
            hook: None,
            armed: AtomicBool::new(true),
            ops: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            trace: std::env::var_os("TRACE_OPS").is_some(),
        }
    }

    /// Counts (and so fails) only these operations; the others pass through.
    pub fn kinds(mut self, ops: &[Op]) -> Self {
        self.kinds = ops.iter().fold(0, |k, op| k | op.bit());
        self
    }

    /// Does not count these operations (they pass through).
    pub fn except(mut self, ops: &[Op]) -> Self {
        self.kinds &= !ops.iter().fold(0, |k, op| k | op.bit());
        self
    }

    /// Fails the `n`-th counted operation (from 0), once.
    pub fn fail_at(mut self, n: u64) -> Self {
        self.fail_at = Some(n);
        self.once = true;
        self
    }

    /// Fails the `n`-th counted operation (from 0) and every one after it.
    pub fn fail_from(mut self, n: u64) -> Self {
        self.fail_at = Some(n);
        self.once = false;
        self
    }

    /// The error kind of injected failures (default [`io::ErrorKind::Other`]).
    pub fn error(mut self, kind: io::ErrorKind) -> Self {
        self.error = kind;
        self
    }

    /// Fails every write that would take a file past `bytes` bytes written through it (its
    /// bytes count even when it fails): a disk that fills in the middle of a file. Counted
    /// or not, armed or not.
    pub fn fail_writes_past(mut self, bytes: u64) -> Self {
        self.writes_past = Some(bytes);
        self
    }

    /// Counts only operations on paths `keep` accepts (files: the path they were opened at).
    pub fn only(mut self, keep: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Self {
        self.only = Some(Box::new(keep));
        self
    }

    /// Runs `hook` before every operation, counted or not (to pause a thread at a chosen
    /// step, say).
    pub fn on_op(mut self, hook: impl Fn(Op, &Path) + Send + Sync + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// Starts disarmed: nothing is counted or failed until [`Faults::arm`].
    pub fn disarmed(self) -> Self {
        self.armed.store(false, Ordering::SeqCst);
        self
    }

    /// Done: the control to hand to [`FaultyStorage::with_faults`] and keep.
    pub fn shared(self) -> Arc<Faults> {
        Arc::new(self)
    }

    /// Counting (and failing) from now on.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Nothing counted or failed from now on.
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    /// Operations counted so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::SeqCst)
    }

    /// Failures injected so far.
    pub fn fired(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }

    /// Runs the hook, counts the operation if it is counted, and fails it if its turn came.
    fn hit(&self, op: Op, path: &Path) -> io::Result<()> {
        if let Some(hook) = &self.hook {
            hook(op, path);
        }
        if self.kinds & op.bit() == 0
            || !self.armed.load(Ordering::SeqCst)
            || self.only.as_ref().is_some_and(|keep| !keep(path))
        {
            return Ok(());
        }
        let n = self.ops.fetch_add(1, Ordering::SeqCst);
        if self.trace {
            eprintln!("op {n}: {} {}", op.name(), path.display());
        }
        let due = self
            .fail_at
            .is_some_and(|at| n == at || (!self.once && n > at));
        if due {
            return Err(self.injected(op));
        }
        Ok(())
    }

    fn injected(&self, op: Op) -> io::Error {
        self.fired.fetch_add(1, Ordering::SeqCst);
        let what = if self.error == io::ErrorKind::StorageFull {
            "full disk"
        } else {
            "failure"
        };
        io::Error::new(self.error, format!("injected {what} at {}", op.name()))
    }
}

/// The real file system with the failures its [`Faults`] injects. Files it opens are
/// wrapped, so their writes, cuts and syncs go through the same control.
#[derive(Debug, Clone)]
pub struct FaultyStorage {
    faults: Arc<Faults>,
    positioned_log: bool,
}

impl FaultyStorage {
    /// Logs opened as by [`FsStorage`] (written at offsets into space zeroed ahead).
    pub fn with_faults(faults: &Arc<Faults>) -> Arc<dyn Storage> {
        Arc::new(FaultyStorage {
            faults: Arc::clone(faults),
            positioned_log: true,
        })
    }

    /// Logs opened with `open_append` (counted as [`Op::OpenAppend`]): they cannot write at
    /// offsets, so the log appends, as on a storage without positioned writes.
    pub fn appending_log(faults: &Arc<Faults>) -> Arc<dyn Storage> {
        Arc::new(FaultyStorage {
            faults: Arc::clone(faults),
            positioned_log: false,
        })
    }

    fn wrap(&self, inner: Box<dyn StorageFile>, path: &Path) -> Box<dyn StorageFile> {
        Box::new(FaultyFile {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
            written: 0,
        })
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Box<dyn StorageFile>,
    path: PathBuf,
    faults: Arc<Faults>,
    /// Bytes written at the end through this handle, failed writes included.
    written: u64,
}

impl FaultyFile {
    fn before_write(&mut self, len: usize) -> io::Result<()> {
        self.faults.hit(Op::Write, &self.path)?;
        self.written += len as u64;
        if self.faults.writes_past.is_some_and(|n| self.written > n) {
            return Err(self.faults.injected(Op::Write));
        }
        Ok(())
    }
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.before_write(buf.len())?;
        self.inner.write(buf)
    }
    /// One operation, as one `write` of all of `buf` (and none if `buf` is empty); passed
    /// on whole, since the real file's `write_all` starts early writeback of large writes.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.before_write(buf.len())?;
        self.inner.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl StorageFile for FaultyFile {
    fn sync(&mut self) -> io::Result<()> {
        self.faults.hit(Op::Sync, &self.path)?;
        self.inner.sync()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.faults.hit(Op::SyncData, &self.path)?;
        self.inner.sync_data()
    }
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        if !buf.is_empty() {
            self.faults.hit(Op::WriteAt, &self.path)?;
        }
        self.inner.write_at(offset, buf)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.faults.hit(Op::SetLen, &self.path)?;
        self.inner.set_len(len)
    }
}

impl Storage for FaultyStorage {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.faults.hit(Op::Create, path)?;
        Ok(self.wrap(FsStorage.create(path)?, path))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.faults.hit(Op::OpenAppend, path)?;
        Ok(self.wrap(FsStorage.open_append(path)?, path))
    }
    fn open_log(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        if !self.positioned_log {
            return self.open_append(path);
        }
        self.faults.hit(Op::OpenLog, path)?;
        Ok(self.wrap(FsStorage.open_log(path)?, path))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.faults.hit(Op::Rename, from)?;
        FsStorage.rename(from, to)
    }
    fn rename_new(&self, from: &Path, to: &Path) -> io::Result<bool> {
        self.faults.hit(Op::Rename, from)?;
        FsStorage.rename_new(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.faults.hit(Op::SyncDir, dir)?;
        FsStorage.sync_dir(dir)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.faults.hit(Op::Remove, path)?;
        FsStorage.remove(path)
    }
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        self.faults.hit(Op::CreateDir, dir)?;
        FsStorage.create_dir(dir)
    }
}
