//! Opening a database: the folder lock, the manifest, the replay of the log, the
//! compaction thread, and the removal of staging collections a crash left behind.

use super::apply::{apply, note_meta};
use super::commit::Writer;
use super::compaction::compactor;
use super::{Database, DatabaseOptions, Inner, LOCK_FILE, TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::internal::{Internal, META, MetaKey};
use crate::manifest::{self, Manifest};
use crate::state::{IndexState, MapRef, State};
use crate::wal::{self, LoggedOp, WalWriter};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, RwLock, mpsc};
use stele_durable::{DurableMap, Store, StoreOptions};
use stele_table::TableId;

/// Creates the database folder `dir`, its log and tables folders and the tables' roots
/// folder, those that are missing, and returns the folders whose new entries are not synced
/// yet, the deepest first (see `folders.rs`: the first durable act syncs them). A crash
/// before then may lose any of them; nothing was written in them yet, and the next open
/// makes what is missing. The roots folder's entry is never synced here: a database keeps
/// nothing there but the store's lock file (its tables are named by the manifest, not by
/// roots), and the store makes the folder again at open if a power cut lost it.
fn create_folders(storage: &dyn stele_table::Storage, dir: &Path) -> Result<Vec<PathBuf>> {
    let made = |e, path: &Path| Error::io("creating folder", path, e);
    let parents = stele_table::create_dir_all_unsynced(storage, dir).map_err(|e| made(e, dir))?;
    let mut to_sync = Vec::new();
    let tables = dir.join(TABLES_DIR);
    for (path, durable) in [
        (dir.join(WAL_DIR), true),
        (tables.clone(), true),
        (tables.join(stele_durable::ROOTS_DIR), false),
    ] {
        match storage.create_dir(&path) {
            Ok(()) if durable && to_sync.is_empty() => to_sync.push(dir.to_path_buf()),
            Ok(()) => {}
            // Made by an earlier open (or another process meanwhile, which syncs it).
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => {}
            Err(e) => return Err(made(e, &path)),
        }
    }
    // Deepest first: the database folder, then its new parents.
    to_sync.extend(parents);
    Ok(to_sync)
}

/// Takes the folder lock, or names the process that holds it.
pub(super) fn take_lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io("opening lock file", &path, e))?;
    // An instance of this process that is still closing (its last handle was just dropped,
    // by another thread) gets a moment to finish; another process holding it does not.
    let mut waited_ms = 0;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.rewind();
                let _ = file.read_to_string(&mut text);
                let pid = text.trim().parse().unwrap_or(0);
                if pid == std::process::id() && waited_ms < 1000 {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    waited_ms += 10;
                    continue;
                }
                return Err(Error::InUse {
                    path: dir.to_path_buf(),
                    pid,
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io("locking", &path, e)),
        }
    }
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()));
    written.map_err(|e| Error::io("writing lock file", &path, e))?;
    Ok(file)
}

/// Where replaying the log ended: the log writer continues the last segment there.
struct Replayed {
    /// Valid log bytes in every segment, counted toward the next checkpoint.
    logged_bytes: u64,
    /// The last segment: its first sequence number, its valid bytes, its size on disk and
    /// whether only zeroes follow the records. `None` when there is no segment.
    last: Option<(u64, u64, u64, bool)>,
}

/// Reads the manifest, the checkpoint file; a database without one is empty.
pub(super) fn read_manifest(dir: &Path) -> Result<Manifest> {
    let manifest_path = dir.join(manifest::FILE_NAME);
    match fs::read(&manifest_path) {
        Ok(bytes) => Manifest::decode(&bytes, &manifest_path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
        Err(e) => Err(Error::io("reading manifest", &manifest_path, e)),
    }
}

/// The state the manifest records: its maps (indexes opened first, then collections),
/// block numbers and counts. Dictionaries are not loaded yet (see `load_dictionaries`).
pub(super) fn state_at_checkpoint(
    store: &Store,
    manifest: &Manifest,
    opts: &DatabaseOptions,
) -> Result<State> {
    state_reusing(store, manifest, opts, &|id| Ok(store.open_map(id)?))
}

/// [`state_at_checkpoint`] with the maps of the manifest's tables opened by `open` (a reader
/// that loads again reuses the maps it has open already).
pub(super) fn state_reusing(
    store: &Store,
    manifest: &Manifest,
    opts: &DatabaseOptions,
    open: &dyn Fn(TableId) -> Result<DurableMap>,
) -> Result<State> {
    let mut state = State {
        seq: manifest.seq,
        ..State::default()
    };
    for entry in &manifest.indexes {
        let map = match entry.table {
            Some(id) => open(id)?,
            None => store.new_map(),
        };
        let def = &entry.def;
        let key = (def.collection.clone(), def.name.clone());
        let def = Arc::new(def.clone());
        let arrays = entry.arrays;
        state.indexes.insert(key, IndexState { def, map, arrays });
    }
    for (name, id) in &manifest.collections {
        let map = match id {
            Some(id) => open(*id)?,
            None => store.new_map(),
        };
        let map = crate::internal::fit_map(name, map);
        state.collections.insert(name.clone(), map);
    }
    state.packing = Arc::new(crate::pack::packing::Packing::new(
        manifest.next_block,
        opts.block_cache_bytes,
    ));
    state.counts = match &manifest.counts {
        Some(counts) => counts.clone(),
        // Version 1: no removal marks, no packed blocks.
        None => state
            .collections
            .iter()
            .map(|(name, map)| (name.clone(), map.len()))
            .collect(),
    };
    Ok(state)
}

/// Loads the dictionaries and id kinds persisted in the meta collection up to the checkpoint (the log's
/// puts to it add the later ones as they replay).
pub(super) fn load_dictionaries(state: &mut State) -> Result<()> {
    if let Some(meta) = state.collections.get(META).cloned() {
        let kinds = meta.prefix(MetaKey::INT_IDS);
        for entry in meta.prefix(MetaKey::DICTS).chain(kinds) {
            let (key, value) = entry?;
            note_meta(state, &key, value)?;
        }
    }
    Ok(())
}

/// Replays every log segment, oldest first, onto `state`. Batches the tables already hold
/// (`seq` up to the state's) are skipped; the others must follow without a gap. Only the
/// last segment may end in a torn or corrupt record (a crash while writing it); the records
/// before the damage count.
fn replay_log(store: &Store, state: &mut State, wal_dir: &Path) -> Result<Replayed> {
    let segments = wal::list_segments(wal_dir)?;
    let mut replayed = Replayed {
        logged_bytes: 0,
        last: None,
    };
    for (i, (first, path)) in segments.iter().enumerate() {
        let bytes = fs::read(path).map_err(|e| Error::io("reading log segment", path, e))?;
        let is_last = i + 1 == segments.len();
        let valid = replay_segment(store, state, path, &bytes, is_last)?;
        replayed.logged_bytes += valid as u64;
        if is_last {
            // Zeroes after the records: the space the log writer zeroed ahead, kept.
            let zeroes_after = wal::zeroes_after(&bytes, valid);
            replayed.last = Some((*first, valid as u64, bytes.len() as u64, zeroes_after));
        }
    }
    Ok(replayed)
}

/// Replays the records of one segment (`bytes`, read from `path`); returns how many of
/// its bytes are valid records.
fn replay_segment(
    store: &Store,
    state: &mut State,
    path: &Path,
    bytes: &[u8],
    is_last: bool,
) -> Result<usize> {
    let (batches, valid, why) = wal::read_segment(bytes);
    if let (Some(reason), false) = (why, is_last) {
        return Err(Error::CorruptLog {
            path: path.to_path_buf(),
            offset: valid,
            reason,
        });
    }
    for batch in batches {
        if batch.seq <= state.seq {
            continue; // already in the tables
        }
        if batch.seq != state.seq + 1 {
            return Err(Error::CorruptLog {
                path: path.to_path_buf(),
                offset: valid,
                reason: "a batch is missing before this segment's records",
            });
        }
        apply(store, state, &batch.ops, super::apply::Ops::Log)?;
        state.seq = batch.seq;
    }
    Ok(valid)
}

/// Opens the log writer where replay ended: after the last segment's valid records, or a
/// new segment starting at `next_seq` when there is none.
fn open_log(
    opts: &DatabaseOptions,
    wal_dir: &Path,
    replayed: &Replayed,
    next_seq: u64,
) -> Result<WalWriter> {
    let (first, valid, file_bytes, zeroes_after) = replayed.last.unwrap_or((next_seq, 0, 0, false));
    WalWriter::open(
        Arc::clone(&opts.storage),
        wal_dir,
        first,
        valid,
        file_bytes,
        zeroes_after,
    )
}

/// Staging collections of imports a crash interrupted (dropped once the database is open,
/// through the log).
fn import_leftovers(state: &State) -> Vec<String> {
    state
        .collections
        .keys()
        .filter(|c| matches!(Internal::parse(c), Some(Internal::Import { .. })))
        .cloned()
        .collect()
}

impl Database {
    /// Opens the database in folder `dir`, creating it if the folder does not exist or is
    /// empty, and recovers from the log. Fails with [`Error::NotADatabase`] for a folder of
    /// other files (see [`DatabaseOptions::create_here`]), [`Error::NotAFolder`] for a file,
    /// and with [`Error::InUse`] if another process has it open for writing (reader
    /// processes, [`Database::open_read_only`], do not count).
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        Self::open_with(dir, DatabaseOptions::default())
    }

    /// Opens with options.
    ///
    /// Steps, in this order: check the folder may hold a database, create the folders, take the folder lock, open the store, read
    /// the state the manifest records and its dictionaries, replay the log onto it, open the
    /// log writer where replay ended, assemble the database, start its compaction thread,
    /// drop the import leftovers (the only batch opening logs), and last remove the tables
    /// no manifest names and the sort folders of killed imports (a new database has none).
    pub fn open_with(dir: impl AsRef<Path>, opts: DatabaseOptions) -> Result<Database> {
        let dir = dir.as_ref().to_path_buf();
        let wal_dir = dir.join(WAL_DIR);
        // A new database (no tables folder yet) has no garbage to collect at open.
        let new = !dir.join(TABLES_DIR).is_dir();
        super::create::check_folder(&dir, opts.create_here)?;
        let unsynced = create_folders(&*opts.storage, &dir)?;
        let lock = take_lock(&dir)?;
        let store = Store::open_with(
            dir.join(TABLES_DIR),
            StoreOptions::default()
                .storage(Arc::clone(&opts.storage))
                .table_options(opts.table.clone()),
        )?;
        let manifest = read_manifest(&dir)?;
        let mut state = state_at_checkpoint(&store, &manifest, &opts)?;
        load_dictionaries(&mut state)?;
        let replayed = replay_log(&store, &mut state, &wal_dir)?;
        let wal = open_log(&opts, &wal_dir, &replayed, state.seq + 1)?;
        // Segments a reader held at the last checkpoint (see `wal::tail`).
        wal::tail::remove_obsolete(&*opts.storage, &wal_dir, manifest.seq)?;
        let leftovers = import_leftovers(&state);
        let writer = Writer::recovered(state, replayed.logged_bytes);
        let (db, queue) = Database::assemble(dir, opts, store, lock, writer, wal, unsynced);
        if let Some(queue) = queue {
            db.start_compactor(queue)?;
        }
        db.drop_import_leftovers(leftovers)?;
        if !new {
            db.collect_unnamed_tables()?;
        }
        Ok(db)
    }

    /// The database over its recovered parts; the state recovered is also the visible one.
    /// With background compaction, also the receiving end of the compactor's queue.
    fn assemble(
        dir: PathBuf,
        opts: DatabaseOptions,
        store: Store,
        lock: File,
        writer: Writer,
        wal: WalWriter,
        unsynced: Vec<PathBuf>,
    ) -> (Database, Option<mpsc::Receiver<MapRef>>) {
        let visible = Arc::new(writer.state.clone());
        let opened_seq = visible.seq;
        let (tx, rx) = mpsc::channel();
        let (idle_tx, idle_rx) = mpsc::channel();
        let idle = opts.idle_checkpoint;
        let background = opts.background_compaction;
        let db = Database {
            inner: Arc::new(Inner {
                dir,
                opts,
                store,
                _lock: lock,
                writer: Mutex::new(writer),
                wal: Mutex::new(wal),
                unsynced: super::folders::UnsyncedFolders::new(unsynced),
                group_done: Condvar::new(),
                visible: RwLock::new(visible),
                compactor: background.then(|| Mutex::new(tx)),
                compacting: Mutex::new(HashSet::new()),
                ready: Mutex::new(Vec::new()),
                compressors: Mutex::new(HashMap::new()),
                pins: Arc::default(),
                handles: std::sync::atomic::AtomicUsize::new(1),
                opened_seq,
                opened_pid: std::process::id(),
                _idle_stop: idle.map(|_| Mutex::new(idle_tx)),
            }),
            released: false,
        };
        if let Some(idle) = idle {
            // Without the thread the database still checkpoints by size and at close.
            let _ = super::idle::start(Arc::downgrade(&db.inner), idle_rx, idle);
        }
        (db, background.then_some(rx))
    }

    /// Starts the background compaction thread; it holds the database weakly and ends
    /// when the database is dropped.
    fn start_compactor(&self, queue: mpsc::Receiver<MapRef>) -> Result<()> {
        let weak = Arc::downgrade(&self.inner);
        std::thread::Builder::new()
            .name("stele-compactor".into())
            .spawn(move || compactor(&weak, &queue))
            .map_err(|e| Error::io("starting the compaction thread", &self.inner.dir, e))?;
        Ok(())
    }

    /// Drops the staging collections `leftovers` in one logged batch (none: no write).
    fn drop_import_leftovers(&self, leftovers: Vec<String>) -> Result<()> {
        if !leftovers.is_empty() {
            let ops = leftovers
                .into_iter()
                .map(|collection| LoggedOp::DropCollection { collection })
                .collect();
            self.commit_ops(ops)?;
        }
        Ok(())
    }
}
