//! Opening a database: the folder lock, the manifest, the replay of the log, the
//! compaction thread, and the removal of staging collections a crash left behind.

use super::apply::{apply, note_meta};
use super::commit::Writer;
use super::compaction::compactor;
use super::{Database, DatabaseOptions, Inner, LOCK_FILE, TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::internal::{Internal, META, MetaKey};
use crate::manifest::{self, Manifest};
use crate::state::{IndexState, State};
use crate::wal::{self, LoggedOp, WalWriter};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, RwLock, mpsc};
use stele_durable::{Store, StoreOptions};

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

impl Database {
    /// Opens the database in folder `dir`, creating it if needed, and recovers from the
    /// log. Fails with [`Error::InUse`] if another process has it open.
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        Self::open_with(dir, DatabaseOptions::default())
    }

    /// Opens with options.
    pub fn open_with(dir: impl AsRef<Path>, opts: DatabaseOptions) -> Result<Database> {
        let dir = dir.as_ref().to_path_buf();
        let wal_dir = dir.join(WAL_DIR);
        // Each new folder's parent is synced: a log segment is durable only if its folder is.
        stele_table::create_dir_all(&*opts.storage, &wal_dir)
            .map_err(|e| Error::io("creating folder", &wal_dir, e))?;
        let lock = take_lock(&dir)?;
        let store = Store::open_with(
            dir.join(TABLES_DIR),
            StoreOptions::default()
                .storage(Arc::clone(&opts.storage))
                .table_options(opts.table.clone()),
        )?;
        let manifest_path = dir.join(manifest::FILE_NAME);
        let manifest = match fs::read(&manifest_path) {
            Ok(bytes) => Manifest::decode(&bytes, &manifest_path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
            Err(e) => return Err(Error::io("reading manifest", &manifest_path, e)),
        };
        let mut state = State {
            seq: manifest.seq,
            ..State::default()
        };
        for (def, id) in &manifest.indexes {
            let map = match id {
                Some(id) => store.open_map(*id)?,
                None => store.new_map(),
            };
            let key = (def.collection.clone(), def.name.clone());
            let def = Arc::new(def.clone());
            state.indexes.insert(key, IndexState { def, map });
        }
        for (name, id) in &manifest.collections {
            let map = match id {
                Some(id) => store.open_map(*id)?,
                None => store.new_map(),
            };
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
        // Dictionaries persisted in the meta collection up to the checkpoint.
        if let Some(meta) = state.collections.get(META).cloned() {
            for entry in meta.prefix(MetaKey::DICTS) {
                let (key, value) = entry?;
                note_meta(&mut state, &key, value)?;
            }
        }
        // Replay the log.
        let segments = wal::list_segments(&wal_dir)?;
        let mut logged_bytes = 0u64;
        let mut last = None;
        for (i, (first, path)) in segments.iter().enumerate() {
            let bytes = fs::read(path).map_err(|e| Error::io("reading log segment", path, e))?;
            let (batches, valid, why) = wal::read_segment(&bytes);
            let is_last = i + 1 == segments.len();
            if let (Some(reason), false) = (why, is_last) {
                return Err(Error::CorruptLog {
                    path: path.clone(),
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
                        path: path.clone(),
                        offset: valid,
                        reason: "a batch is missing before this segment's records",
                    });
                }
                apply(&store, &mut state, &batch.ops)?;
                state.seq = batch.seq;
            }
            logged_bytes += valid as u64;
            if is_last {
                // Zeroes after the records: the space the log writer zeroed ahead, kept.
                let zeroes_after = wal::zeroes_after(&bytes, valid);
                last = Some((*first, valid as u64, bytes.len() as u64, zeroes_after));
            }
        }
        let (first, valid, file_bytes, zeroes_after) = last.unwrap_or((state.seq + 1, 0, 0, false));
        let wal = WalWriter::open(
            Arc::clone(&opts.storage),
            &wal_dir,
            first,
            valid,
            file_bytes,
            zeroes_after,
        )?;
        // Staging collections of imports a crash interrupted: dropped below, logged.
        let leftovers: Vec<String> = state
            .collections
            .keys()
            .filter(|c| matches!(Internal::parse(c), Some(Internal::Import { .. })))
            .cloned()
            .collect();
        let visible = Arc::new(state.clone());
        let (tx, rx) = mpsc::channel();
        let background = opts.background_compaction;
        let db = Database {
            inner: Arc::new(Inner {
                dir,
                opts,
                store,
                _lock: lock,
                writer: Mutex::new(Writer {
                    state,
                    pending: Vec::new(),
                    next_ticket: 1,
                    durable_ticket: 0,
                    failed_ticket: 0,
                    failure: String::new(),
                    leader_active: false,
                    logged_bytes,
                    poisoned: None,
                }),
                wal: Mutex::new(wal),
                group_done: Condvar::new(),
                visible: RwLock::new(visible),
                compactor: background.then(|| Mutex::new(tx)),
                compacting: Mutex::new(HashSet::new()),
                ready: Mutex::new(Vec::new()),
                compressors: Mutex::new(HashMap::new()),
                pins: Arc::default(),
            }),
        };
        if background {
            let weak = Arc::downgrade(&db.inner);
            std::thread::Builder::new()
                .name("stele-compactor".into())
                .spawn(move || compactor(&weak, &rx))
                .map_err(|e| Error::io("starting the compaction thread", &db.inner.dir, e))?;
        }
        if !leftovers.is_empty() {
            let ops = leftovers
                .into_iter()
                .map(|collection| LoggedOp::DropCollection { collection })
                .collect();
            db.commit_ops(ops)?;
        }
        Ok(db)
    }
}
