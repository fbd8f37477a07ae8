//! The database: a folder, a write-ahead log with group commit, checkpoints into durable
//! maps, and compactions.
//!
//! Steps, each in its own file: [`options`] (what can be tuned), [`open`] (the folder lock,
//! the manifest and the replay of the log), [`apply`] (what a logged batch does to a state,
//! the same on replay and on commit, indexes included), [`commit`] (group commit and
//! publication of states), [`compression`] (compressing a batch's documents and logging
//! the dictionaries they propose), [`dictionaries`] (training for packing, persisting,
//! removing unused dictionaries), [`checkpoint`] (diff tables, the manifest, log rotation,
//! `compact`), [`compaction`] (merges in line and on the background thread).

mod apply;
mod bulk;
mod checkpoint;
mod close;
mod commit;
mod compaction;
mod compression;
mod create;
mod dictionaries;
mod folders;
mod id_kinds;
mod idle;
mod in_place;
mod open;
mod options;
mod readonly;

pub use options::DatabaseOptions;
pub use readonly::ReadOnlyDatabase;
pub(crate) use readonly::{Attempt, retry};

pub(crate) use bulk::{Landed, Landing, SORT_PREFIX};

use crate::batch::Batch;
use crate::compress::Compressor;
use crate::dicts::Pins;
use crate::error::{Error, Result};
use crate::index::IndexDef;
use crate::snapshot::Snapshot;
use crate::state::{MapRef, State};
use crate::wal::{LoggedOp, WalWriter};
use compaction::SideCompaction;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, RwLock, mpsc};
use stele_durable::Store;

const LOCK_FILE: &str = "LOCK";
pub(crate) const WAL_DIR: &str = "wal";
pub(crate) const TABLES_DIR: &str = "tables";

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    opts: DatabaseOptions,
    pub(crate) store: Store,
    _lock: File,
    writer: Mutex<commit::Writer>,
    wal: Mutex<WalWriter>,
    /// Folders a new database made, synced by the first commit or checkpoint.
    unsynced: folders::UnsyncedFolders,
    group_done: Condvar,
    visible: RwLock<Arc<State>>,
    /// Queue of the background compactor (if enabled), and the maps queued or running.
    compactor: Option<Mutex<mpsc::Sender<MapRef>>>,
    compacting: Mutex<HashSet<MapRef>>,
    /// Compactions finished on the side, swapped in by the next checkpoint. Their tables are
    /// held open (so locked) until then: garbage collection must not take them while no
    /// manifest names them yet.
    ready: Mutex<Vec<SideCompaction>>,
    /// Per-collection compressors, created on first write; they carry training state.
    compressors: Mutex<HashMap<String, Arc<Mutex<Compressor>>>>,
    /// Dictionaries of batches compressed but not applied yet (see `crate::dicts`).
    pins: Arc<Pins>,
    /// User handles ([`Database`] values) alive; the one that takes it to 0 closes the
    /// database (see `close.rs`). Threads of the database itself hold `Inner` without
    /// counting here.
    handles: std::sync::atomic::AtomicUsize,
    /// The last batch's sequence number when the database opened: a close packs only if
    /// something was committed since (a reader's close writes nothing).
    opened_seq: u64,
    /// The process that opened the database. A process forked from it holds a copy of this
    /// writer (log position, file descriptors) but not its threads: its last handle must
    /// not close (checkpoint, cut the log) what the parent still writes.
    opened_pid: u32,
    /// Dropped with `Inner`, which ends the idle-checkpoint thread at once (see `idle.rs`).
    _idle_stop: Option<Mutex<mpsc::Sender<()>>>,
}

/// An embedded database of JSON documents in a folder. Cheap to clone; `Send + Sync`.
///
/// ```no_run
/// # fn main() -> stele::Result<()> {
/// let db = stele::Database::open("/tmp/shop")?;
/// let mut batch = db.batch();
/// batch.put_json("orders", "o-1", br#"{"customer": "ada", "total": 12.50}"#)?;
/// batch.delete("orders", "o-0")?;
/// db.commit(batch)?;                      // durable when it returns
/// let snap = db.snapshot();               // a consistent view of every collection
/// if let Some(doc) = snap.get("orders", "o-1")? {
///     println!("{}", doc.document()?.to_json());
/// }
/// # Ok(()) }
/// ```
///
/// Dropping the last handle closes the database cleanly (see [`Database::close`], which
/// also reports errors): what the log holds goes into tables, so that the database at rest
/// is compact and opens without replaying anything.
#[derive(Debug)]
pub struct Database {
    pub(crate) inner: Arc<Inner>,
    /// Whether this handle no longer counts in `Inner::handles` (closed, or a handle the
    /// database's own threads use, which never counted).
    released: bool,
}

fn lock_poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::CommitFailed {
        reason: "a thread panicked while holding the database's writer lock".into(),
    }
}

impl Database {
    /// The database folder.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// A new, empty batch.
    pub fn batch(&self) -> Batch {
        Batch::new()
    }

    /// A consistent view of every collection as of the last durable commit. Cheap (no
    /// copying); it keeps its tables on disk while it lives.
    pub fn snapshot(&self) -> Snapshot {
        let state = match self.inner.visible.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        };
        Snapshot::new(state)
    }

    /// Counters of the cache of decoded blocks of packed documents (see
    /// [`DatabaseOptions::block_cache_bytes`]).
    pub fn block_cache_stats(&self) -> crate::BlockCacheStats {
        self.snapshot_state().packing.cache.stats()
    }

    /// The folder of the write-ahead log's segments.
    pub(crate) fn wal_dir(&self) -> PathBuf {
        self.inner.dir.join(WAL_DIR)
    }

    /// Zeroes the log has written ahead of its records (0 if its lock is poisoned).
    pub(crate) fn log_zeroes_bytes(&self) -> u64 {
        self.inner
            .wal
            .lock()
            .map_or(0, |wal| wal.zeroes_ahead_bytes())
    }

    /// Creates index `name` on `collection` over the field paths `fields` (see
    /// [`FieldPath`](crate::FieldPath)) and builds it for the documents already there;
    /// from then on every write keeps it current. Blocks other writers while it builds.
    pub fn create_index(&self, collection: &str, name: &str, fields: &[&str]) -> Result<()> {
        let def = IndexDef::new(collection, name, fields)?;
        self.commit_ops(vec![LoggedOp::CreateIndex(def)])
    }

    /// Drops index `name` of `collection`.
    pub fn drop_index(&self, collection: &str, name: &str) -> Result<()> {
        self.commit_ops(vec![LoggedOp::DropIndex {
            collection: collection.to_owned(),
            name: name.to_owned(),
        }])
    }
}

#[cfg(test)]
mod dict_tests;
