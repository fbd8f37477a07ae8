//! Read-only handles: processes that read a database while one writer process has it
//! open, and never write a byte.
//!
//! A reader builds its state as opening does (the manifest's tables, then the log's
//! records after the manifest's sequence number) without taking the folder lock, creating
//! a file or cutting the log. It holds a shared lock on every table it reads (the store's
//! rule) and on the log segment it tails (`wal::tail`), so the writer never removes what a
//! reader uses and never waits for one. [`ReadOnlyDatabase::refresh`] catches up:
//!
//! - the same log segment: reads the whole records written since the last refresh (one
//!   read of the bytes after them) and applies them to a copy of the state;
//! - the writer started a new segment (a checkpoint) or replaced the manifest (a
//!   checkpoint or compaction): loads again from the new manifest, which holds what the
//!   old segment did;
//! - the last record taken is gone (the writer cut the log back after a failed fsync):
//!   loads again, dropping the commit that failed.
//!
//! Loading retries from the manifest when the writer removed a table or segment between
//! the reader's reading of the manifest and its opening of them.

use super::apply::apply_batches;
use super::open::{load_dictionaries, read_manifest, state_reusing};
use super::{DatabaseOptions, TABLES_DIR, WAL_DIR};
use crate::disk::DiskUsage;
use crate::error::{Error, Result};
use crate::manifest::{self, Manifest};
use crate::snapshot::Snapshot;
use crate::state::State;
use crate::wal::tail::{Read, SegmentReader};
use crate::wal::{self, LoggedBatch};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use stele_durable::{DurableMap, Store, StoreOptions};
use stele_table::TableId;

/// Loads that may start over (the writer moved on meanwhile) before the error is returned.
const LOAD_ATTEMPTS: u32 = 100;

/// A database opened for reading beside the process that writes it (see
/// [`Database::open_read_only`](super::Database::open_read_only)). Cheap to clone;
/// `Send + Sync`.
///
/// ```no_run
/// # fn main() -> stele::Result<()> {
/// let db = stele::Database::open_read_only("/srv/shop")?;
/// let doc = db.snapshot().get("orders", "o-1")?;
/// // ... later, to see what the writer committed since:
/// db.refresh()?;
/// let doc = db.snapshot().get("orders", "o-1")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadOnlyDatabase {
    inner: Arc<ReadInner>,
}

#[derive(Debug)]
struct ReadInner {
    dir: PathBuf,
    opts: DatabaseOptions,
    store: Store,
    /// Held by a refresh from start to end: one refresh at a time.
    view: Mutex<View>,
    /// The state snapshots are taken from: the handle's only reference to it, so that a
    /// refresh finds it uniquely owned when no snapshot is outstanding and applies the log
    /// in place (`in_place`).
    visible: RwLock<Arc<State>>,
}

/// Where the reader stands: the manifest it built its state from and the segment it
/// tails.
#[derive(Debug)]
struct View {
    manifest: Option<Stamp>,
    /// The segment holding the next records; `None` when there was none yet.
    segment: Option<SegmentReader>,
}

/// What tells a replaced manifest from the one read: replacing renames a new file over
/// it, so the inode changes (its number may be reused; size and times tell then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl super::Database {
    /// Opens the database in `dir` for reading only, beside the process that writes it if
    /// one does: see [`ReadOnlyDatabase`]. Writes nothing and creates no file, so it works
    /// on a folder this process may not write; takes no folder lock, so any number of
    /// readers and one writer share the database. Fails with [`Error::NoDatabase`] if
    /// `dir` holds no database, [`Error::NotAFolder`] if it is a file.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<ReadOnlyDatabase> {
        ReadOnlyDatabase::open_with(dir, DatabaseOptions::default())
    }

    /// [`open_read_only`](Self::open_read_only) with options (those about reading count:
    /// the block cache's size, the table options; nothing is written).
    pub fn open_read_only_with(
        dir: impl AsRef<Path>,
        opts: DatabaseOptions,
    ) -> Result<ReadOnlyDatabase> {
        ReadOnlyDatabase::open_with(dir, opts)
    }
}

impl ReadOnlyDatabase {
    fn open_with(dir: impl AsRef<Path>, opts: DatabaseOptions) -> Result<ReadOnlyDatabase> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.join(WAL_DIR).is_dir() && !dir.join(manifest::FILE_NAME).is_file() {
            if dir.is_file() {
                return Err(Error::NotAFolder { path: dir });
            }
            return Err(Error::NoDatabase { path: dir });
        }
        let store = Store::open_read_only_with(
            dir.join(TABLES_DIR),
            StoreOptions::default().table_options(opts.table.clone()),
        )?;
        let (view, state) = load(&dir, &store, &opts, None)?;
        let visible = RwLock::new(Arc::new(state));
        Ok(ReadOnlyDatabase {
            inner: Arc::new(ReadInner {
                dir,
                opts,
                store,
                view: Mutex::new(view),
                visible,
            }),
        })
    }

    /// The database folder.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// A consistent view of every collection as of the last open or
    /// [`refresh`](Self::refresh): taking it does no I/O. It keeps its tables on disk
    /// while it lives, across the writer's checkpoints and compactions.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.state())
    }

    fn state(&self) -> Arc<State> {
        match self.inner.visible.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// Catches up with the writer: afterwards, snapshots hold every commit whose record
    /// was whole in the log when this started (the writer acknowledges a commit only after
    /// that). Returns the sequence number of the last batch now visible. Costs what changed:
    /// the records written since the last refresh, or after a checkpoint, opening the
    /// manifest's tables and reading the log after it. Snapshots taken before keep their
    /// view.
    ///
    /// Cheaper with no snapshot outstanding: the documents are then applied in place,
    /// where with one the in-memory maps it shares are copied along every changed path
    /// (`examples/refresh_cost.rs`, 100,000 documents mostly in the diff: 8-11 us of CPU
    /// per document applied against 5-7 us in place; `readers_bench`: a reader's share of
    /// time in `refresh()` beside a busy writer from 26-48% to 12-27%). A
    /// reader that serves from one snapshot at a time gets this with
    /// [`refresh_snapshot`](Self::refresh_snapshot), which drops it first. Meanwhile
    /// [`snapshot`](Self::snapshot) waits for the in-place refresh to end (it takes the
    /// refreshed state); with a snapshot outstanding it never waits.
    pub fn refresh(&self) -> Result<u64> {
        let inner = &*self.inner;
        let mut view = inner.view.lock().map_err(|_| Error::CommitFailed {
            reason: "a thread panicked while refreshing this read-only database".into(),
        })?;
        let manifest_now = manifest_stamp(&inner.dir)?;
        let seq_now = self.state().seq;
        let Some(batches) = tail(&inner.dir, &mut view, manifest_now, seq_now)? else {
            return self.reload(&mut view);
        };
        if batches.is_empty() {
            return Ok(seq_now);
        }
        if super::in_place::eligible(&batches) {
            let mut visible = self.write_visible();
            // Under the write lock no snapshot can be taken: a state no snapshot holds now
            // stays unshared until the lock is let go.
            if let Some(state) = Arc::get_mut(&mut visible) {
                return match super::in_place::apply(&inner.store, state, &batches)? {
                    true => Ok(state.seq),
                    false => {
                        drop(visible);
                        self.reload(&mut view)
                    }
                };
            }
        }
        let mut state = (*self.state()).clone();
        if !apply_batches(&inner.store, &mut state, &batches)? {
            return self.reload(&mut view);
        }
        let seq = state.seq;
        *self.write_visible() = Arc::new(state);
        Ok(seq)
    }

    /// Replaces `snapshot` with one that sees the writer's latest commits, as
    /// [`refresh`](Self::refresh) then [`snapshot`](Self::snapshot) would, but lets go of
    /// the old snapshot first: when it was the last one, the refresh applies the new
    /// documents in place instead of copying the maps the old snapshot shares (see
    /// `refresh`). Returns the sequence number of the last batch now visible. On an error,
    /// `snapshot` holds the view as it stands (the refresh changed nothing visible).
    ///
    /// The pattern of a reader that serves from one snapshot at a time, as a read
    /// transaction in SQLite or LMDB ends before the next starts:
    ///
    /// ```no_run
    /// # fn main() -> stele::Result<()> {
    /// let db = stele::Database::open_read_only("/srv/shop")?;
    /// let mut snap = db.snapshot();
    /// loop {
    ///     for id in ["o-1", "o-2"] {
    ///         let _doc = snap.get("orders", id)?;
    ///     }
    ///     db.refresh_snapshot(&mut snap)?; // instead of db.refresh()?; snap = db.snapshot();
    /// #   break;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn refresh_snapshot(&self, snapshot: &mut Snapshot) -> Result<u64> {
        *snapshot = Snapshot::new(empty_state());
        let refreshed = self.refresh();
        *snapshot = self.snapshot();
        refreshed
    }

    /// Loads the state again from the manifest (the writer checkpointed, or the log and
    /// the view disagree) and publishes it.
    fn reload(&self, view: &mut View) -> Result<u64> {
        let inner = &*self.inner;
        let (loaded, state) = load(&inner.dir, &inner.store, &inner.opts, Some(&self.state()))?;
        *view = loaded;
        let seq = state.seq;
        *self.write_visible() = Arc::new(state);
        Ok(seq)
    }

    fn write_visible(&self) -> std::sync::RwLockWriteGuard<'_, Arc<State>> {
        // A panic while it was held left the state whole (`in_place` takes back a
        // refresh's changes while unwinding).
        self.inner
            .visible
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Bytes the database's folder takes on disk now (see
    /// [`Database::disk_usage`](super::Database::disk_usage)); the zeroes ahead are those
    /// after the records this reader has taken.
    pub fn disk_usage(&self) -> DiskUsage {
        let log_zeroes_bytes = self.inner.view.lock().map_or(0, |v| {
            v.segment
                .as_ref()
                .map_or(0, SegmentReader::bytes_after_records)
        });
        crate::disk::usage(
            &self.inner.dir,
            &self.inner.dir.join(WAL_DIR),
            log_zeroes_bytes,
            crate::index::stats::index_bytes(&self.state(), None),
        )
    }

    /// Whether `collection` stores new documents compressed, as of the last refresh.
    pub fn compression(&self, collection: &str) -> Result<bool> {
        self.state().compression(collection)
    }
}

/// An empty state shared by every placeholder snapshot of `refresh_snapshot`, so that
/// replacing one allocates nothing.
fn empty_state() -> Arc<State> {
    static EMPTY: std::sync::OnceLock<Arc<State>> = std::sync::OnceLock::new();
    Arc::clone(EMPTY.get_or_init(|| Arc::new(State::default())))
}

/// The stamp of the manifest now (`None`: there is none yet).
fn manifest_stamp(dir: &Path) -> Result<Option<Stamp>> {
    let path = dir.join(manifest::FILE_NAME);
    match std::fs::metadata(&path) {
        Ok(m) => Ok(Some(Stamp::of(&m))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("reading metadata of manifest", &path, e)),
    }
}

/// Follows the log from where `view` stands (its state at `seq`), if the manifest is
/// still `manifest_now` and the log was neither rotated nor cut back: the batches written
/// since (maybe none), or `None` when the reader must load again from the manifest.
fn tail(
    dir: &Path,
    view: &mut View,
    manifest_now: Option<Stamp>,
    seq: u64,
) -> Result<Option<Vec<LoggedBatch>>> {
    if manifest_now != view.manifest {
        return Ok(None);
    }
    let wal_dir = dir.join(WAL_DIR);
    let mut batches = Vec::new();
    if let Some(segment) = view.segment.as_mut() {
        match segment.read_new()? {
            Read::Batches(b) => batches = b,
            Read::CutBack => return Ok(None),
        }
    }
    let last_seq = batches.last().map_or(seq, |b| b.seq);
    // A segment that starts after the last record: the writer checkpointed and rotated
    // (the manifest it wrote first holds everything before).
    let next = wal::segment_path(&wal_dir, last_seq + 1);
    if view.segment.as_ref().is_none_or(|s| s.path() != next) && next.exists() {
        return Ok(None);
    }
    Ok(Some(batches))
}

/// Why one load attempt did not finish (also a backup's cut: `crate::backup`).
pub(crate) enum Attempt {
    /// The writer moved on under it (a table or segment gone, the segments not following
    /// the manifest): try again from the manifest.
    Again(Error),
    Failed(Error),
}

impl From<Error> for Attempt {
    fn from(e: Error) -> Self {
        match e {
            e @ Error::Durable(stele_durable::Error::MissingTable { .. }) => Attempt::Again(e),
            e => Attempt::Failed(e),
        }
    }
}

/// Builds the reader's view from the manifest and the log, starting over while the writer
/// moves on under it. With the `previous` state of a reader loading again, the maps of
/// tables it has open already are reused (saved layers only, no file opened again) and so is
/// its cache of decoded blocks (block numbers are never reused): the load costs the tables
/// that changed and the log after the manifest.
fn load(
    dir: &Path,
    store: &Store,
    opts: &DatabaseOptions,
    previous: Option<&State>,
) -> Result<(View, State)> {
    retry(|| load_once(dir, store, opts, previous))
}

/// Runs `attempt` until it finishes, or fails otherwise than by the writer moving on under
/// it, or has started over [`LOAD_ATTEMPTS`] times (waiting a little longer each time).
pub(crate) fn retry<T>(mut attempt: impl FnMut() -> std::result::Result<T, Attempt>) -> Result<T> {
    let mut n = 0;
    loop {
        match attempt() {
            Ok(done) => return Ok(done),
            Err(Attempt::Again(e)) => {
                n += 1;
                if n >= LOAD_ATTEMPTS {
                    return Err(e);
                }
                std::thread::sleep(std::time::Duration::from_micros(100 * u64::from(n)));
            }
            Err(Attempt::Failed(e)) => return Err(e),
        }
    }
}

fn load_once(
    dir: &Path,
    store: &Store,
    opts: &DatabaseOptions,
    previous: Option<&State>,
) -> std::result::Result<(View, State), Attempt> {
    let wal_dir = dir.join(WAL_DIR);
    let stamp = manifest_stamp(dir)?;
    let manifest = read_manifest(dir)?;
    // The file read may be newer than the stamp (replaced in between): the next refresh
    // then loads once more, which is harmless.
    let open_maps: HashMap<TableId, &DurableMap> = previous
        .map(|p| {
            p.map_refs()
                .filter_map(|(_, m)| Some((m.id()?, m)))
                .collect()
        })
        .unwrap_or_default();
    let open = |id: TableId| match open_maps.get(&id) {
        Some(map) => Ok(map.saved_only()),
        None => store.open_map(id).map_err(Error::from),
    };
    let mut state = state_reusing(store, &manifest, opts, &open)?;
    if let Some(p) = previous {
        // A reader allocates no block numbers: only the cache matters, and it stays valid.
        state.packing = Arc::clone(&p.packing);
    }
    // The diff starts empty at the manifest: the log's documents may be kept decoded again.
    state.packing.allow_decoded(opts.block_cache_bytes);
    load_dictionaries(&mut state)?;
    let segment = replay(store, &mut state, &wal_dir, &manifest)?;
    Ok((
        View {
            manifest: stamp,
            segment,
        },
        state,
    ))
}

/// Replays the segments after the manifest onto `state`, each share-locked while read;
/// returns the last one, still locked, for tailing.
fn replay(
    store: &Store,
    state: &mut State,
    wal_dir: &Path,
    manifest: &Manifest,
) -> std::result::Result<Option<SegmentReader>, Attempt> {
    let segments = match wal::list_segments(wal_dir) {
        Ok(s) => s,
        // A database at rest with no log folder: nothing after the manifest.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    // The first segment needed: the last one that starts at or before the first record the
    // tables lack (older ones are whole below it and may be gone already).
    let start = segments
        .iter()
        .rposition(|(first, _)| *first <= manifest.seq + 1);
    let Some(start) = start else {
        return match segments.first() {
            // Every segment starts later: the one before was removed after a newer manifest
            // was written.
            Some(_) => Err(Attempt::Again(gap(wal_dir))),
            None => Ok(None),
        };
    };
    let mut last = None;
    for (_, path) in segments.iter().skip(start) {
        let Some(mut segment) = SegmentReader::open(path)? else {
            return Err(Attempt::Again(gap(wal_dir)));
        };
        let batches = match segment.read_new()? {
            Read::Batches(b) => b,
            Read::CutBack => Vec::new(),
        };
        if !apply_batches(store, state, &batches)? {
            return Err(Attempt::Again(gap(wal_dir)));
        }
        last = Some(segment);
    }
    Ok(last)
}

/// The error a load gives after its last attempt found the log not following on.
fn gap(wal_dir: &Path) -> Error {
    Error::CorruptLog {
        path: wal_dir.to_path_buf(),
        offset: 0,
        reason: "the log's segments do not follow on from the manifest (a reader retried \
                 while the writer checkpointed, and gave up)",
    }
}
