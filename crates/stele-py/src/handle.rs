//! What a `stele.Database` holds: a database open for writing or for reading only, and
//! the process that opened it.
//!
//! A handle is not shared across `fork()`: the child gets a copy of the writer's state
//! (its log position, its locks' file descriptors, threads that did not follow it), and
//! two processes appending to one log through one writer would corrupt it. Every use
//! checks the process id recorded at open and raises `SteleError` in another process,
//! saying to open the database in each worker after the fork.

use std::path::Path;

use pyo3::prelude::*;
use stele::{Database, DiskUsage, ReadOnlyDatabase, Snapshot};

use crate::errors::{Kind, new_err};

/// A database as opened.
#[derive(Debug, Clone)]
pub(crate) enum Handle {
    Writer(Database),
    Reader(ReadOnlyDatabase),
}

/// A handle and the process that opened it.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub(crate) handle: Handle,
    pid: u32,
}

impl Opened {
    pub(crate) fn new(handle: Handle) -> Opened {
        Opened {
            handle,
            pid: std::process::id(),
        }
    }

    /// The handle, in the process that opened it.
    pub(crate) fn checked(self, py: Python<'_>, path: &Path) -> PyResult<Handle> {
        same_process(py, self.pid, || format!("database {}", path.display()))?;
        Ok(self.handle)
    }
}

/// `Ok` in process `pid`; in another (a child forked after `what` was made) the
/// `SteleError` saying to open the database in each worker after the fork. `what` names the
/// object ("database /path", "a snapshot of database /path").
pub(crate) fn same_process(
    py: Python<'_>,
    pid: u32,
    what: impl FnOnce() -> String,
) -> PyResult<()> {
    let now = std::process::id();
    if now == pid {
        return Ok(());
    }
    Err(new_err(
        py,
        Kind::Stele,
        format!(
            "{} belongs to process {pid} and is used in process {now} (a fork): a \
             handle is not shared across processes; open the database in each worker \
             process after the fork (stele.open(path, readonly=True) in readers, one writer)",
            what()
        ),
    ))
}

impl Handle {
    /// The database open for writing; `SteleError` for a read-only one.
    pub(crate) fn writer(self, py: Python<'_>, path: &Path) -> PyResult<Database> {
        match self {
            Handle::Writer(db) => Ok(db),
            Handle::Reader(_) => Err(new_err(
                py,
                Kind::Stele,
                format!(
                    "database {} is open read-only (readonly=True): open it without \
                     readonly in the one process that writes it",
                    path.display()
                ),
            )),
        }
    }

    /// A snapshot: the last commit (writer), or as of the last open or refresh (reader).
    pub(crate) fn snapshot(&self) -> Snapshot {
        match self {
            Handle::Writer(db) => db.snapshot(),
            Handle::Reader(r) => r.snapshot(),
        }
    }

    pub(crate) fn disk_usage(&self) -> DiskUsage {
        match self {
            Handle::Writer(db) => db.disk_usage(),
            Handle::Reader(r) => r.disk_usage(),
        }
    }

    /// Catches a reader up with the writer; a writer sees its commits already.
    pub(crate) fn refresh(&self) -> stele::Result<u64> {
        match self {
            Handle::Writer(db) => Ok(db.snapshot().seq()),
            Handle::Reader(r) => r.refresh(),
        }
    }
}
