//! The database: opening and recovery, commits with group commit, checkpoints.

use crate::batch::Batch;
use crate::compress::{CompressOptions, Compressor, NewDictionary};
use crate::error::{Error, Result};
use crate::index::IndexDef;
use crate::manifest::{self, Manifest};
use crate::snapshot::Snapshot;
use crate::wal::{self, LoggedOp, WalWriter};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::sync::{Weak, mpsc};
use stele_durable::{DurableMap, Store, StoreOptions};
use stele_table::{FsStorage, Storage, TableId, TableOptions};

const LOCK_FILE: &str = "LOCK";
const WAL_DIR: &str = "wal";
const TABLES_DIR: &str = "tables";

/// Options of a [`Database`].
#[derive(Debug, Clone)]
pub struct DatabaseOptions {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) checkpoint_bytes: u64,
    pub(crate) compact_layers: usize,
    pub(crate) background_compaction: bool,
    pub(crate) background_training: bool,
    pub(crate) table: TableOptions,
    pub(crate) pack_block_bytes: usize,
    pub(crate) pack_level: i32,
    pub(crate) pack_streams: bool,
    pub(crate) block_cache_bytes: usize,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            storage: Arc::new(FsStorage),
            checkpoint_bytes: 64 << 20,
            compact_layers: 8,
            background_compaction: true,
            background_training: true,
            table: TableOptions::default(),
            pack_block_bytes: 32 * 1024,
            pack_level: 9,
            pack_streams: true,
            block_cache_bytes: 64 << 20,
        }
    }
}

impl DatabaseOptions {
    /// Log bytes written since the last checkpoint that trigger the next one (default
    /// 64 MiB). A checkpoint writes each collection's unsaved changes as a diff table,
    /// records the tables in the manifest and starts a new log segment. Larger values mean
    /// fewer, larger diff tables and longer recovery after a crash (the log is replayed).
    #[must_use]
    pub fn checkpoint_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_bytes = bytes;
        self
    }

    /// Diff tables a collection may collect before a checkpoint compacts it into one
    /// table (default 8). Fewer layers make reads faster; compaction rewrites the
    /// collection.
    #[must_use]
    pub fn compact_layers(mut self, layers: usize) -> Self {
        self.compact_layers = layers.max(1);
        self
    }

    /// Compact collections with too many layers on a background thread (default: on).
    /// The merge runs without blocking readers or writers; only swapping its result in
    /// (rewriting the diffs saved meanwhile, usually small) holds the writer lock. Off:
    /// checkpoints compact in line, holding the writer lock while they merge.
    #[must_use]
    pub fn background_compaction(mut self, on: bool) -> Self {
        self.background_compaction = on;
        self
    }

    /// Retrain compression dictionaries on a background thread (default: on), so that a
    /// commit never waits for a retraining: its documents use the dictionary in force, and a
    /// dictionary trained meanwhile is logged with a later batch and used once that batch is
    /// durable. A collection's first dictionary (and, if that one was trained on few
    /// documents, its one retraining on a full ring of samples) is trained in line either
    /// way, at the end of the commit that made it due (see
    /// [`CompressOptions::background_training`]). Off: every training runs at the end of the
    /// commit that made it due (reproducible dictionaries, for tests).
    #[must_use]
    pub fn background_training(mut self, on: bool) -> Self {
        self.background_training = on;
        self
    }

    /// Size of the blocks compaction packs a compressed collection's documents into
    /// (default 32 KiB of documents before compression; 0 turns packing off).
    ///
    /// At compaction, the documents of a collection with compression on are compressed
    /// together in blocks of this size (zstd level 9, with the collection's newest
    /// dictionary) instead of one by one: on the collections in `docs/benchmarks.md` this
    /// makes the stored collection 2-4x smaller. The price is on uncached reads: reading
    /// one document decodes its whole block (a few microseconds per KiB of block; bigger
    /// blocks compress better and cost more per miss), and the decoded block then serves
    /// its neighbours from the block cache ([`block_cache_bytes`](Self::block_cache_bytes)).
    /// Documents written since the last compaction stay compressed one by one.
    /// `docs/benchmarks.md` ("Block size") measures 16, 32 and 64 KiB side by side: each
    /// doubling makes collections of small documents 2-13 % smaller and doubles the cost of a
    /// read whose block is not cached (debian 20 -> 35 -> 61 us). A block of big documents
    /// grows past this size until it holds 16 of them, up to 4 times the size
    /// ([`crate::compress::block_is_full`]): github-webhooks' documents of 10 KB go 12 or 13
    /// to a 128 KiB block instead of 3 to 32 KiB, which stores the collection 1.4x smaller
    /// and makes an uncached read of one of them decode 4 times as much
    /// (`docs/benchmarks.md`, "Dictionaries for blocks").
    #[must_use]
    pub fn pack_block_bytes(mut self, bytes: usize) -> Self {
        self.pack_block_bytes = bytes;
        self
    }

    /// zstd level of packed blocks (default 9; clamped to 1..=22). Compaction compresses
    /// each block once, off the write path; reads decode equally fast at any level. Higher
    /// levels make collections a few percent smaller for several times the compaction CPU:
    /// level 15 stores 20 of the 24 benchmark collections 1-9 % smaller than level 9
    /// (debian-packages 4 %, emojibase 5 %) and takes 4-9x as long to compact them, and
    /// stores vega-flights' tiny documents 1 % bigger (`docs/benchmarks.md`, "Pack level").
    /// Applies to blocks packed from then on.
    #[must_use]
    pub fn pack_level(mut self, level: i32) -> Self {
        self.pack_level = level.clamp(1, 22);
        self
    }

    /// Whether [`Database::compact`] may store packed documents in their stream form
    /// (default: on; `stele_doc::stream`, `docs/FORMAT.md`): their values in input order
    /// with the keys spelled out and no offsets, which zstd compresses better. Compaction
    /// packs the first block of every 16 both ways and keeps the smaller form until the
    /// next trial, so collections that compress better as documents stay documents. On the
    /// benchmark collections streams (and dictionaries trained on them too,
    /// `CompressOptions::stream_samples`) make the stored collection up to a third smaller
    /// (github-webhooks 4.09x -> 2.71x of whole-file zstd -3, mdn-compat-features 1.86x ->
    /// 1.33x, debian-packages 1.35x -> 1.14x; `docs/benchmarks.md`, "Stream blocks"). The
    /// price: `compact` takes 1.3-2x as long, and a read rebuilds its document from the
    /// stream the first time (0.2-2 us for documents under 1 KiB, kept in the block cache
    /// after). Background compactions never make streams (they run beside writers); blocks
    /// they write are rewritten by the next `compact`.
    #[must_use]
    pub fn pack_streams(mut self, on: bool) -> Self {
        self.pack_streams = on;
        self
    }

    /// Memory for decoded blocks of packed documents, shared by every snapshot of the
    /// database (default 64 MiB). A read of a packed document whose block is cached costs
    /// a lookup; one whose block is not decodes the block and caches it. 0 caches nothing
    /// (every read of a packed document decodes its block).
    #[must_use]
    pub fn block_cache_bytes(mut self, bytes: usize) -> Self {
        self.block_cache_bytes = bytes;
        self
    }

    /// Layout of the tables written (default 4 KiB blocks).
    #[must_use]
    pub fn table_options(mut self, table: TableOptions) -> Self {
        self.table = table;
        self
    }

    /// File operations for every write (default: the real file system). For fault
    /// injection in tests.
    #[must_use]
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = storage;
        self
    }
}

/// A consistent state of every collection.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// Sequence number of the last batch applied.
    pub(crate) seq: u64,
    pub(crate) collections: BTreeMap<String, DurableMap>,
    /// By (collection, index name).
    pub(crate) indexes: BTreeMap<(String, String), IndexState>,
    /// Compression dictionaries by collection, as persisted in the meta collection.
    pub(crate) dicts: BTreeMap<String, crate::compress::Dictionaries>,
    /// Block numbers and the cache of decoded blocks: one per open database, shared by all
    /// its states.
    pub(crate) packing: Arc<crate::pack::Packing>,
    /// Visible documents per collection (a collection's map also holds removal marks and
    /// documents that replace packed ones, so its length is not the count).
    pub(crate) counts: BTreeMap<String, u64>,
}

/// The internal collection holding dictionaries (`dict/<collection>/<id, 10 digits>` to the
/// dictionary's bytes) and settings (`compress/<collection>` to `0` or `1`). Its values are
/// raw bytes, not documents.
pub(crate) const META: &str = "_meta";

fn dict_key(collection: &str, id: crate::compress::DictionaryId) -> Vec<u8> {
    format!("{}{id:010}", dict_prefix(collection)).into_bytes()
}

/// The prefix of the meta keys of `collection`'s dictionaries.
pub(crate) fn dict_prefix(collection: &str) -> String {
    format!("dict/{collection}/")
}

/// The collection and dictionary id a meta key names (the inverse of `dict_key`), or `None` if
/// `key` is not a dictionary key.
pub(crate) fn parse_dict_key(key: &[u8]) -> Option<(&str, crate::compress::DictionaryId)> {
    let rest = std::str::from_utf8(key.strip_prefix(b"dict/")?).ok()?;
    let (collection, id) = rest.rsplit_once('/')?;
    Some((collection, id.parse().ok()?))
}

/// Keeps the in-memory dictionary sets in step with a removal from the meta collection.
fn note_meta_removal(state: &mut State, key: &[u8]) {
    if let Some((collection, id)) = parse_dict_key(key)
        && let Some(dicts) = state.dicts.get_mut(collection)
    {
        dicts.remove(id);
    }
}

/// Keeps the in-memory dictionary sets in step with puts to the meta collection.
fn note_meta(state: &mut State, key: &[u8], value: &[u8]) -> Result<()> {
    if !key.starts_with(b"dict/") {
        return Ok(());
    }
    let Some((collection, id)) = parse_dict_key(key) else {
        return Err(Error::CorruptManifest {
            path: PathBuf::from(META),
            reason: "a dictionary key does not name a collection and an id",
        });
    };
    state
        .dicts
        .entry(collection.to_owned())
        .or_default()
        .insert(id, value)?;
    Ok(())
}

/// Names one map of the state: a collection or an index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum MapRef {
    Collection(String),
    Index(String, String),
}

/// A compaction done on the side: the map, the layers it covers, the new base, and for a
/// packed collection its new packs map (the base is then empty: the packs map holds
/// everything the covered layers held).
#[derive(Debug)]
struct SideCompaction {
    map: MapRef,
    covered: Vec<TableId>,
    base: DurableMap,
    packs: Option<DurableMap>,
}

/// Whether `collection` stores new documents compressed in `state` (the `compress/<name>`
/// setting of the meta collection; default on).
fn compression_in(state: &State, collection: &str) -> Result<bool> {
    let key = format!("compress/{collection}");
    Ok(match state.collections.get(META) {
        Some(m) => m.get(key.as_bytes())?.is_none_or(|v| v != b"0"),
        None => true,
    })
}

/// Whether compaction packs `collection` (see [`DatabaseOptions::pack_block_bytes`]): a
/// user collection with compression on, with packing enabled.
fn packs_collection(opts: &DatabaseOptions, state: &State, collection: &str) -> Result<bool> {
    Ok(opts.pack_block_bytes > 0
        && !collection.starts_with('_')
        && compression_in(state, collection)?)
}

fn pack_settings(opts: &DatabaseOptions) -> crate::pack::PackSettings {
    crate::pack::PackSettings {
        block_bytes: opts.pack_block_bytes,
        level: opts.pack_level,
        streams: opts.pack_streams,
    }
}

/// Rewrites the map of user collection `collection` (`source`: its layers, read
/// sequentially) as one table, dropping removal marks that hide no packed document.
fn merge_plain(
    store: &Store,
    state: &State,
    collection: &str,
    source: &DurableMap,
) -> Result<DurableMap> {
    let packed = state
        .collections
        .contains_key(&crate::pack::packs_name(collection));
    let mut out = store.map_builder()?;
    crate::stored::with_decoder(|decoder| {
        for entry in source.iter() {
            let (id, stored) = entry?;
            if crate::pack::is_removed(stored)
                && (!packed || crate::pack::lookup(state, collection, &id, decoder)?.is_none())
            {
                continue;
            }
            out.add(&id, stored)?;
        }
        Ok(())
    })?;
    Ok(out.finish()?)
}

/// Compacts map `r` of `state` in line: a user collection with compression on is packed
/// (`full`: every block rewritten, else only those its map's entries fall into), any other
/// map merged.
fn compact_in_line(
    store: &Store,
    opts: &DatabaseOptions,
    state: &mut State,
    r: &MapRef,
    full: bool,
) -> Result<()> {
    let MapRef::Collection(c) = r else {
        if let Some(map) = state.map_mut(r) {
            map.compact()?;
        }
        return Ok(());
    };
    let Some(map) = state.collections.get(c) else {
        return Ok(());
    };
    if c.starts_with('_') {
        let mut map = map.clone();
        map.compact()?;
        state.collections.insert(c.clone(), map);
        return Ok(());
    }
    let source = map.sequential()?;
    if packs_collection(opts, state, c)? {
        let (packs, docs) = crate::pack::pack(store, state, c, &source, full, pack_settings(opts))?;
        drop(source);
        // Everything the map held went into the blocks.
        debug_assert_eq!(docs, crate::collection::count(state, c));
        state.collections.insert(c.clone(), store.new_map());
        let name = crate::pack::packs_name(c);
        if docs == 0 {
            state.collections.remove(&name);
        } else {
            state.collections.insert(name, packs);
        }
        return Ok(());
    }
    let base = merge_plain(store, state, c, &source)?;
    drop(source);
    state.collections.insert(c.clone(), base);
    Ok(())
}

/// An index and its entries: keys are value tuple + id, values empty.
#[derive(Debug, Clone)]
pub(crate) struct IndexState {
    pub(crate) def: Arc<IndexDef>,
    pub(crate) map: DurableMap,
}

impl State {
    /// Every durable map: collections, then indexes.
    fn maps_mut(&mut self) -> impl Iterator<Item = &mut DurableMap> {
        self.collections
            .values_mut()
            .chain(self.indexes.values_mut().map(|ix| &mut ix.map))
    }

    /// The indexes of `collection`.
    fn map_mut(&mut self, r: &MapRef) -> Option<&mut DurableMap> {
        match r {
            MapRef::Collection(c) => self.collections.get_mut(c),
            MapRef::Index(c, n) => self
                .indexes
                .get_mut(&(c.clone(), n.clone()))
                .map(|ix| &mut ix.map),
        }
    }

    /// Every map, named.
    fn map_refs(&self) -> impl Iterator<Item = (MapRef, &DurableMap)> {
        let colls = self
            .collections
            .iter()
            .map(|(c, m)| (MapRef::Collection(c.clone()), m));
        let ixs = self
            .indexes
            .iter()
            .map(|((c, n), ix)| (MapRef::Index(c.clone(), n.clone()), &ix.map));
        colls.chain(ixs)
    }

    pub(crate) fn indexes_of<'a>(
        &'a self,
        collection: &'a str,
    ) -> impl Iterator<Item = &'a IndexState> + 'a {
        self.indexes
            .range((collection.to_owned(), String::new())..)
            .take_while(move |((c, _), _)| c == collection)
            .map(|(_, ix)| ix)
    }
}

/// The index keys of a document, per index of its collection (in `indexes_of` order).
fn doc_keys(defs: &[Arc<IndexDef>], doc: Option<&[u8]>, id: &[u8]) -> Result<Vec<Vec<Vec<u8>>>> {
    let Some(doc) = doc else {
        return Ok(vec![Vec::new(); defs.len()]);
    };
    let doc = stele_doc::Document::new(doc)?;
    Ok(defs.iter().map(|d| d.keys(&doc, id)).collect())
}

/// Moves the index entries of document `id` from its visible version to its new stored
/// value (`None`: removed).
fn reindex(state: &mut State, collection: &str, id: &[u8], new: Option<&[u8]>) -> Result<()> {
    let defs: Vec<Arc<IndexDef>> = state
        .indexes_of(collection)
        .map(|ix| Arc::clone(&ix.def))
        .collect();
    if defs.is_empty() {
        return Ok(());
    }
    let old = crate::collection::get(state, collection, id)?.map(|d| d.into_owned());
    let new = match new {
        Some(stored) => Some(crate::stored::decode(state, collection, id, stored)?.into_owned()),
        None => None,
    };
    let old_keys = doc_keys(&defs, old.as_deref(), id)?;
    let new_keys = doc_keys(&defs, new.as_deref(), id)?;
    for ((def, old), new) in defs.iter().zip(old_keys).zip(new_keys) {
        let Some(ix) = state
            .indexes
            .get_mut(&(collection.to_owned(), def.name.clone()))
        else {
            continue;
        };
        for k in old.iter().filter(|k| !new.contains(k)) {
            ix.map.remove(k)?;
        }
        for k in new.iter().filter(|k| !old.contains(k)) {
            ix.map.put(k, &[])?;
        }
    }
    Ok(())
}

/// Builds index `def` over the documents `state` holds.
fn build_index(store: &Store, state: &State, def: &IndexDef) -> Result<DurableMap> {
    let mut pairs = Vec::new();
    let entries = crate::collection::Entries::new(
        state,
        &def.collection,
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        true,
    )?;
    for entry in entries {
        let (id, doc) = entry?;
        let Some(doc) = doc else { continue };
        let doc = doc.document()?;
        pairs.extend(def.keys(&doc, &id).into_iter().map(|k| (k, [0u8; 0])));
    }
    Ok(store.build_map(pairs)?)
}

/// Puts stored value `value` as document `id` of `collection`, keeping indexes and the count.
fn put_doc(
    store: &Store,
    state: &mut State,
    collection: &str,
    id: &[u8],
    value: &[u8],
) -> Result<()> {
    let existed = crate::collection::contains(state, collection, id)?;
    reindex(state, collection, id, Some(value))?;
    state
        .collections
        .entry(collection.to_owned())
        .or_insert_with(|| store.new_map())
        .put(id, value)?;
    if !existed {
        *state.counts.entry(collection.to_owned()).or_default() += 1;
    }
    Ok(())
}

/// Largest log buffer a commit keeps for the next one (see `Database::lead`).
const RETAINED_LOG_BUFFER_BYTES: usize = 16 << 20;

#[derive(Debug)]
struct Writer {
    /// Every applied batch, durable or not yet.
    state: State,
    /// Log records not yet handed to a leader.
    pending: Vec<u8>,
    /// Tickets order commits for waiting; unlike sequence numbers they are never reused.
    next_ticket: u64,
    durable_ticket: u64,
    /// Tickets up to this one failed with `failure`.
    failed_ticket: u64,
    failure: String,
    leader_active: bool,
    /// Log bytes since the last checkpoint.
    logged_bytes: u64,
    /// Set when the log cannot be written any more (until reopened).
    poisoned: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    dir: PathBuf,
    opts: DatabaseOptions,
    pub(crate) store: Store,
    _lock: File,
    writer: Mutex<Writer>,
    wal: Mutex<WalWriter>,
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
    pins: Arc<crate::dicts::Pins>,
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
#[derive(Debug, Clone)]
pub struct Database {
    pub(crate) inner: Arc<Inner>,
}

fn lock_poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::CommitFailed {
        reason: "a thread panicked while holding the database's writer lock".into(),
    }
}

/// Takes the folder lock, or names the process that holds it.
fn take_lock(dir: &Path) -> Result<File> {
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

pub(crate) fn apply(store: &Store, state: &mut State, ops: &[LoggedOp]) -> Result<()> {
    for op in ops {
        match op {
            LoggedOp::Put {
                collection,
                id,
                value,
            } => {
                if collection == META {
                    note_meta(state, id, value)?;
                }
                put_doc(store, state, collection, id, value)?;
            }
            LoggedOp::Delete { collection, id } => {
                if !crate::collection::contains(state, collection, id)? {
                    continue;
                }
                if collection == META {
                    note_meta_removal(state, id);
                }
                reindex(state, collection, id, None)?;
                let Some(map) = state.collections.get_mut(collection) else {
                    continue;
                };
                // A user collection marks the removal: a packed version may sit below, or
                // end up there when a compaction running now lands.
                if collection.starts_with('_') {
                    map.remove(id)?;
                } else {
                    map.put(id, &crate::pack::REMOVED)?;
                }
                if let Some(n) = state.counts.get_mut(collection) {
                    *n = n.saturating_sub(1);
                }
            }
            LoggedOp::CreateIndex(def) => {
                let key = (def.collection.clone(), def.name.clone());
                if state.indexes.contains_key(&key) {
                    return Err(Error::InvalidIndex {
                        index: def.name.clone(),
                        reason: "an index of this name already exists on the collection (drop it first)",
                    });
                }
                let map = build_index(store, state, def)?;
                state.indexes.insert(
                    key,
                    IndexState {
                        def: Arc::new(def.clone()),
                        map,
                    },
                );
            }
            LoggedOp::DropIndex { collection, name } => {
                if state
                    .indexes
                    .remove(&(collection.clone(), name.clone()))
                    .is_none()
                {
                    return Err(Error::InvalidIndex {
                        index: name.clone(),
                        reason: "no index of this name on the collection",
                    });
                }
            }
            LoggedOp::DropCollection { collection } => {
                state.collections.remove(collection);
                state.counts.remove(collection);
                state
                    .collections
                    .remove(&crate::pack::packs_name(collection));
                state.indexes.retain(|(c, _), _| c != collection);
            }
            LoggedOp::MergeCollection { collection, into } => {
                let Some(from) = state.collections.remove(collection) else {
                    continue;
                };
                state.counts.remove(collection);
                state.indexes.retain(|(c, _), _| c != collection);
                // A snapshot of the source (staging collections are never packed and never
                // see removals): the puts below change only the target.
                for entry in from.iter() {
                    let (id, value) = entry?;
                    if !crate::pack::is_removed(value) {
                        put_doc(store, state, into, &id, value)?;
                    }
                }
            }
        }
    }
    Ok(())
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
        state.packing = Arc::new(crate::pack::Packing::new(
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
            for entry in meta.prefix(b"dict/") {
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
            .filter(|c| c.starts_with(crate::import::STAGING_PREFIX))
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

    /// Applies `batch` atomically and durably: when this returns `Ok`, every operation is
    /// on disk and visible to new snapshots; on error none is applied. Commits from many
    /// threads share one log write and one fsync (group commit).
    pub fn commit(&self, batch: Batch) -> Result<()> {
        let mut ops = batch.into_ops();
        // `_pins` holds the dictionaries these documents were compressed with until the
        // batch is applied (see `crate::dicts`).
        let (proposals, _pins) = self.compress_ops(&mut ops)?;
        self.commit_ops(ops)?;
        // The dictionaries are durable now: later documents may use them.
        for (compressor, dict) in proposals {
            if let Ok(mut c) = compressor.lock() {
                // Refused only if an even newer one was adopted meanwhile: drop this one.
                let _ = c.adopt(dict);
            }
        }
        Ok(())
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

    /// Whether `collection` stores new documents compressed (default: yes).
    pub fn compression(&self, collection: &str) -> Result<bool> {
        let snap = self.snapshot();
        Ok(
            match snap.meta(format!("compress/{collection}").as_bytes())? {
                Some(v) => v != b"0",
                None => true,
            },
        )
    }

    /// Turns compression of new documents in `collection` on or off (documents already
    /// stored stay as they are, readable either way). Logged like any write.
    pub fn set_compression(&self, collection: &str, on: bool) -> Result<()> {
        crate::batch::check_collection_name(collection)?;
        self.commit_ops(vec![LoggedOp::Put {
            collection: META.to_owned(),
            id: format!("compress/{collection}").into_bytes(),
            value: Arc::from(if on { &b"1"[..] } else { &b"0"[..] }),
        }])
    }

    /// The compressor of `collection`, resumed from its persisted dictionaries.
    fn compressor(&self, collection: &str) -> Result<Arc<Mutex<Compressor>>> {
        let mut all = self.inner.compressors.lock().map_err(lock_poisoned)?;
        if let Some(c) = all.get(collection) {
            return Ok(Arc::clone(c));
        }
        // One state for the dictionary and the blocks that may name it.
        let state = self.snapshot_state();
        let last = crate::pack::last_dictionary(&state, collection)?;
        let current = last.as_ref().map(|(id, bytes)| (*id, bytes.as_slice()));
        let packing = self.inner.opts.pack_block_bytes > 0;
        // With packing on, documents stay compressed one by one only until the next
        // compaction packs them (at level 9): level 1 makes commits faster for the same
        // final size (debian-packages 131k -> 157k docs/s, `docs/benchmarks.md`).
        let level = if packing {
            1
        } else {
            CompressOptions::default().level
        };
        let opts = CompressOptions {
            background_training: self.inner.opts.background_training,
            // Packing recompresses every document at compaction, with whatever dictionary
            // exists by then: no commit needs to wait for the first training.
            background_first_training: packing,
            // Full compactions pack stream forms with the collection's newest dictionary.
            stream_samples: packing && self.inner.opts.pack_streams,
            // Documents compressed one by one are packed again at compaction, with a
            // dictionary trained for the blocks.
            light_ingest: packing,
            level,
            ..CompressOptions::default()
        };
        let mut c = Compressor::resume(opts, current, last.as_ref().map_or(0, |(id, _)| *id))?;
        // A dictionary the collection's blocks use was trained for them (by a full
        // compaction, on stream forms): provisional for documents, as it was before the
        // restart. Were it trained on documents, this costs one more training, adopted
        // only if better. A block that cannot be read says nothing here (reads of it report
        // the damage; writes need not fail for it).
        if let Some((id, _)) = &last
            && packing
        {
            let first_block = crate::collection::first_block_dictionary(&state, collection);
            if first_block.ok().flatten() == Some(*id) {
                c.current_serves_blocks();
            }
        }
        let c = Arc::new(Mutex::new(c));
        all.insert(collection.to_owned(), Arc::clone(&c));
        Ok(c)
    }

    /// Compresses the documents of user collections with compression on, in place. Then each
    /// compressor used may hand out a dictionary (trained on everything up to this batch's
    /// last document, or earlier on a background thread): it goes into this batch, ahead of
    /// the documents (none of which uses it), and is adopted once the batch is durable.
    #[expect(
        clippy::type_complexity,
        reason = "one private call site; a struct would only name the pair"
    )]
    fn compress_ops(
        &self,
        ops: &mut Vec<LoggedOp>,
    ) -> Result<(
        Vec<(Arc<Mutex<Compressor>>, NewDictionary)>,
        Vec<crate::dicts::Pin>,
    )> {
        let mut enabled: HashMap<String, bool> = HashMap::new();
        // In order of first use, so that dictionaries are logged in a stable order; with
        // the positions of the operations whose documents each compresses.
        let mut used: Vec<(String, Arc<Mutex<Compressor>>, Vec<usize>)> = Vec::new();
        let mut used_at: HashMap<String, usize> = HashMap::new();
        for (at, op) in ops.iter().enumerate() {
            let LoggedOp::Put {
                collection, value, ..
            } = op
            else {
                continue;
            };
            // Documents staged by an import are compressed as the target's documents.
            let target = match collection.strip_prefix(crate::import::STAGING_PREFIX) {
                Some(staged) => match staged.split_once('/') {
                    Some((_, target)) => target.to_owned(),
                    None => continue,
                },
                None if collection.starts_with('_') => continue,
                None => collection.clone(),
            };
            let collection = &target;
            let on = match enabled.get(collection.as_str()) {
                Some(on) => *on,
                None => {
                    let on = self.compression(collection)?;
                    enabled.insert(collection.clone(), on);
                    on
                }
            };
            if !on || crate::stored::raw(value).is_none() {
                continue;
            }
            match used_at
                .get(collection.as_str())
                .and_then(|&i| used.get_mut(i))
            {
                Some((_, _, positions)) => positions.push(at),
                None => {
                    let c = self.compressor(collection)?;
                    used_at.insert(collection.clone(), used.len());
                    used.push((collection.clone(), c, vec![at]));
                }
            }
        }
        let threads = crate::cores();
        let mut pins = Vec::new();
        for (collection, compressor, positions) in &used {
            let docs: Vec<&[u8]> = positions
                .iter()
                .filter_map(|&at| match ops.get(at) {
                    Some(LoggedOp::Put { value, .. }) => crate::stored::raw(value),
                    _ => None,
                })
                .collect();
            let values = {
                let mut c = compressor.lock().map_err(lock_poisoned)?;
                // Pinned under the compressor's lock, before any removal can read this
                // compressor's current id (the dictionary only changes through `adopt`,
                // which takes the same lock).
                if let Some(id) = c.current_dictionary() {
                    pins.push(self.inner.pins.pin(collection, id));
                }
                c.compress_many(&docs, threads)?
            };
            drop(docs);
            for (&at, compressed) in positions.iter().zip(values) {
                if let Some(LoggedOp::Put { value, .. }) = ops.get_mut(at) {
                    *value = Arc::from(compressed);
                }
            }
        }
        let mut proposals = Vec::new();
        let mut dict_ops = Vec::new();
        for (collection, compressor, _) in used {
            let dict = compressor
                .lock()
                .map_err(lock_poisoned)?
                .take_new_dictionary()?;
            if let Some(dict) = dict {
                dict_ops.push(LoggedOp::Put {
                    collection: META.to_owned(),
                    id: dict_key(&collection, dict.id()),
                    value: Arc::from(dict.bytes()),
                });
                proposals.push((compressor, dict));
            }
        }
        if !dict_ops.is_empty() {
            dict_ops.append(ops);
            *ops = dict_ops;
        }
        Ok((proposals, pins))
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

    pub(crate) fn commit_ops(&self, ops: Vec<LoggedOp>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        let mut w = inner.writer.lock().map_err(lock_poisoned)?;
        if let Some(reason) = &w.poisoned {
            return Err(Error::LogPoisoned {
                path: inner.dir.join(WAL_DIR),
                reason: reason.clone(),
            });
        }
        let seq = w.state.seq + 1;
        // Apply on a copy (O(collections)) so that a failure leaves the state untouched.
        let mut next = w.state.clone();
        apply(&inner.store, &mut next, &ops)?;
        let before = w.pending.len();
        wal::encode_batch(&mut w.pending, seq, &ops)?;
        w.logged_bytes += (w.pending.len() - before) as u64;
        next.seq = seq;
        w.state = next;
        let ticket = w.next_ticket;
        w.next_ticket += 1;
        loop {
            if w.durable_ticket >= ticket {
                return Ok(());
            }
            if w.failed_ticket >= ticket {
                return Err(Error::CommitFailed {
                    reason: w.failure.clone(),
                });
            }
            if w.leader_active {
                w = inner.group_done.wait(w).map_err(lock_poisoned)?;
            } else {
                w = self.lead(w)?;
            }
        }
    }

    /// Writes every pending record with one fsync, then publishes the state. Called with
    /// the writer lock held and no other leader; returns with the lock held again.
    fn lead<'a>(&'a self, mut w: MutexGuard<'a, Writer>) -> Result<MutexGuard<'a, Writer>> {
        let inner = &*self.inner;
        w.leader_active = true;
        let records = std::mem::take(&mut w.pending);
        let upto = w.next_ticket - 1;
        let published = w.state.clone();
        drop(w);
        let result = match inner.wal.lock() {
            Ok(mut wal) => wal.append(&records),
            Err(_) => Err(Error::CommitFailed {
                reason: "a thread panicked while writing the log".into(),
            }),
        };
        let mut w = inner.writer.lock().map_err(lock_poisoned)?;
        w.leader_active = false;
        // The next records go into this buffer again, unless others came meanwhile: its
        // pages are mapped already (a new one faults its pages in as it grows). Kept up to
        // RETAINED_LOG_BUFFER_BYTES.
        if w.pending.is_empty() && records.capacity() <= RETAINED_LOG_BUFFER_BYTES {
            let mut records = records;
            records.clear();
            w.pending = records;
        }
        match result {
            Ok(()) => {
                w.durable_ticket = upto;
                self.publish(Arc::new(published));
                if w.pending.is_empty() && w.logged_bytes >= inner.opts.checkpoint_bytes {
                    // The commits are durable whatever happens here; a failed checkpoint
                    // is retried at the next one and the log still holds everything.
                    let _ = self.checkpoint_locked(&mut w, true);
                }
            }
            Err(e) => {
                // Nothing after the last durable group was applied: go back to it.
                let durable = self.snapshot_state();
                w.state = (*durable).clone();
                w.pending.clear();
                w.failed_ticket = w.next_ticket - 1;
                w.failure = e.to_string();
                if let Error::LogPoisoned { reason, .. } = &e {
                    w.poisoned = Some(reason.clone());
                }
            }
        }
        inner.group_done.notify_all();
        Ok(w)
    }

    fn snapshot_state(&self) -> Arc<State> {
        match self.inner.visible.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    fn publish(&self, state: Arc<State>) {
        match self.inner.visible.write() {
            Ok(mut g) => *g = state,
            Err(p) => *p.into_inner() = state,
        }
    }

    /// Writes every collection's unsaved changes as diff tables, compacts collections
    /// with too many layers, records the tables in the manifest, starts a new log segment
    /// and removes files nothing needs any more. Waits for commits in flight.
    pub fn checkpoint(&self) -> Result<()> {
        let mut w = self.quiet_writer()?;
        self.checkpoint_locked(&mut w, true)
    }

    /// Merges every collection into a single table each (packing every document of a
    /// collection with compression on into new blocks), then checkpoints. Waits first for
    /// dictionary trainings in flight and persists the dictionaries they produce, so that the
    /// blocks are compressed with them. The merges run on the side, without the writer
    /// lock: readers and writers go on meanwhile, and what is written during them lands
    /// as one diff on top of the merged table (writers wait only while that diff is
    /// written and the result swapped in). Ends by removing the compression dictionaries that
    /// no stored document, batch in flight or later write can need any more (once every
    /// document of a collection is packed with its newest dictionary, the older ones are
    /// usually unused); open snapshots keep reading with the dictionaries they had.
    pub fn compact(&self) -> Result<()> {
        self.settle_dictionaries(None)?;
        self.train_for_packing()?;
        // Everything written so far into tables, so that the merges see all of it (without
        // queueing background compactions: the merges below cover every map).
        {
            let mut w = self.quiet_writer()?;
            self.checkpoint_locked(&mut w, false)?;
        }
        let refs: Vec<MapRef> = {
            let w = self.inner.writer.lock().map_err(lock_poisoned)?;
            w.state.map_refs().map(|(r, _)| r).collect()
        };
        let weak = Arc::downgrade(&self.inner);
        let mut sides = Vec::new();
        for r in &refs {
            if let Some(side) = compact_on_the_side(&weak, r, true)? {
                sides.push(side);
            }
        }
        {
            let mut w = self.quiet_writer()?;
            let mut state = w.state.clone();
            for side in sides {
                let r = side.map.clone();
                if !swap_in(&mut state, side)? {
                    // Another compaction of this map landed meanwhile (a background one,
                    // swapped in by a checkpoint a commit triggered): merge what the map
                    // holds now, in line.
                    compact_in_line(&self.inner.store, &self.inner.opts, &mut state, &r, true)?;
                }
            }
            w.state = state;
            self.checkpoint_locked(&mut w, false)?;
        }
        self.remove_unused_dictionaries()?;
        Ok(())
    }

    /// Removes the dictionaries that no stored value, batch in flight or later write can
    /// need (see `crate::dicts` for why each rule is there); returns how many went. Runs
    /// after a full compaction, which leaves packed collections on their newest
    /// dictionary. Skipped while a background compaction runs or waits to be swapped in.
    /// Dictionaries of dropped collections are left as they are.
    fn remove_unused_dictionaries(&self) -> Result<usize> {
        let ops = {
            let w = self.quiet_writer()?;
            let busy = !self
                .inner
                .compacting
                .lock()
                .map_err(lock_poisoned)?
                .is_empty()
                || !self.inner.ready.lock().map_err(lock_poisoned)?.is_empty();
            if busy {
                return Ok(0);
            }
            let mut ops = Vec::new();
            for (collection, dicts) in &w.state.dicts {
                let persisted: std::collections::BTreeSet<_> = dicts.ids().collect();
                if persisted.len() < 2 || !w.state.collections.contains_key(collection) {
                    continue;
                }
                let compressor = self
                    .inner
                    .compressors
                    .lock()
                    .map_err(lock_poisoned)?
                    .get(collection)
                    .cloned();
                // Without a compressor, the next one resumes from the newest dictionary. A
                // compressor without a dictionary may be about to adopt any: keep them all.
                let current = match compressor {
                    Some(c) => c
                        .lock()
                        .map_err(lock_poisoned)?
                        .current_dictionary()
                        .unwrap_or(0),
                    None => persisted.last().copied().unwrap_or(0),
                };
                // Read after the current id: a batch compressed before that read is pinned.
                let Some(pinned) = self.inner.pins.of(collection) else {
                    return Ok(0);
                };
                let named = crate::dicts::named(&w.state, collection)?;
                for id in crate::dicts::removable(&persisted, current, &pinned, &named) {
                    ops.push(LoggedOp::Delete {
                        collection: META.to_owned(),
                        id: dict_key(collection, id),
                    });
                }
            }
            ops
        };
        // Safe after the writer lock is released: from here on, new values name only the
        // current dictionary or newer ones (commits) or the newest (packing), and blocks
        // copied by later packings were part of the scan.
        let removed = ops.len();
        self.commit_ops(ops)?;
        Ok(removed)
    }

    /// Finishes the pending dictionary training of `only` (or of every collection) and
    /// persists (then adopts) a dictionary that came out of it. With packing on, first
    /// trainings run in the background; bulk operations (imports, `compact`) call this so
    /// that a collection written in one go does not end up without any dictionary.
    pub(crate) fn settle_dictionaries(&self, only: Option<&str>) -> Result<()> {
        let compressors: Vec<(String, Arc<Mutex<Compressor>>)> = self
            .inner
            .compressors
            .lock()
            .map_err(lock_poisoned)?
            .iter()
            .filter(|(name, _)| only.is_none_or(|o| o == name.as_str()))
            .map(|(name, c)| (name.clone(), Arc::clone(c)))
            .collect();
        for (collection, compressor) in compressors {
            let dict = {
                let mut c = compressor.lock().map_err(lock_poisoned)?;
                c.finish_training()?;
                // A training that was only due starts here; then wait for it too.
                match c.take_new_dictionary()? {
                    Some(d) => Some(d),
                    None => {
                        c.finish_training()?;
                        c.take_new_dictionary()?
                    }
                }
            };
            if let Some(dict) = dict {
                self.persist_and_adopt(&collection, &compressor, dict)?;
            }
        }
        Ok(())
    }

    /// Stores `dict` durably in the meta collection, then has `compressor` (the one of
    /// `collection` that handed it out) adopt it.
    fn persist_and_adopt(
        &self,
        collection: &str,
        compressor: &Mutex<Compressor>,
        dict: NewDictionary,
    ) -> Result<()> {
        self.commit_ops(vec![LoggedOp::Put {
            collection: META.to_owned(),
            id: dict_key(collection, dict.id()),
            value: Arc::from(dict.bytes()),
        }])?;
        if let Ok(mut c) = compressor.lock() {
            // Refused only if a newer one was adopted meanwhile: drop this one.
            let _ = c.adopt(dict);
        }
        Ok(())
    }

    /// Before a full compaction packs them, trains a dictionary for each collection it
    /// packs on documents spread evenly over the whole collection (every n-th in id order,
    /// up to the compressor's `sample_docs`), and persists and adopts it if the collection's
    /// blocks plus the dictionary come out smaller than with the current one
    /// (`Compressor::train_for_blocks`). Commits train on what was written last, so a
    /// collection written in one go keeps the dictionary of its first documents until its
    /// sample ring fills, which a collection of fewer documents never does.
    fn train_for_packing(&self) -> Result<()> {
        let state = self.snapshot_state();
        for collection in state.collections.keys() {
            if !packs_collection(&self.inner.opts, &state, collection)? {
                continue;
            }
            let compressor = self.compressor(collection)?;
            let (train_after, sample_docs, sample_bytes) = {
                let c = compressor.lock().map_err(lock_poisoned)?;
                let o = c.options();
                (o.train_after, o.sample_docs, o.sample_bytes)
            };
            let count = crate::collection::count(&state, collection);
            if count < train_after.max(1) as u64 {
                continue;
            }
            // Whole documents, so at most twice the bytes a training keeps (it cuts them).
            let budget_bytes = sample_bytes.saturating_mul(2);
            let samples =
                crate::collection::spread_sample(&state, collection, sample_docs, budget_bytes)?;
            let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
            let target = crate::compress::PackTarget {
                block_bytes: self.inner.opts.pack_block_bytes,
                level: self.inner.opts.pack_level,
                docs: count,
            };
            // Commits keep compressing with the current dictionary while this trains.
            let training = compressor
                .lock()
                .map_err(lock_poisoned)?
                .prepare_training_for_blocks(&refs, target)?;
            let Some(trained) = training.map(|t| t.run()).transpose()?.flatten() else {
                continue;
            };
            let dict = compressor
                .lock()
                .map_err(lock_poisoned)?
                .finish_training_for_blocks(trained)?;
            if let Some(dict) = dict {
                self.persist_and_adopt(collection, &compressor, dict)?;
            }
        }
        Ok(())
    }

    /// The writer lock, once no commit is in flight or pending: the working state is
    /// then exactly the durable one.
    fn quiet_writer(&self) -> Result<MutexGuard<'_, Writer>> {
        let mut w = self.inner.writer.lock().map_err(lock_poisoned)?;
        while w.leader_active || !w.pending.is_empty() {
            if w.leader_active {
                w = self.inner.group_done.wait(w).map_err(lock_poisoned)?;
            } else {
                w = self.lead(w)?;
            }
        }
        Ok(w)
    }

    /// The checkpoint itself; the writer lock is held, nothing is pending or in flight,
    /// so the working state is exactly the durable one. `compact_deep`: compact the maps
    /// with more layers than allowed (in line, or queued for the background compactor).
    fn checkpoint_locked(&self, w: &mut Writer, compact_deep: bool) -> Result<()> {
        let inner = &*self.inner;
        let mut state = w.state.clone();
        let ready = std::mem::take(&mut *inner.ready.lock().map_err(lock_poisoned)?);
        for side in ready {
            // An error (say, a full disk while rewriting the newer diffs) leaves the map as
            // it was: the background compaction is dropped and tried again later.
            let _ = swap_in(&mut state, side);
        }
        let background = inner.compactor.is_some();
        for map in state.maps_mut() {
            if map.unsaved_changes() > 0 || map.id().is_none() {
                map.save()?;
            }
        }
        let deep: Vec<MapRef> = if compact_deep {
            state
                .map_refs()
                .filter(|(_, m)| m.layer_ids().len() > inner.opts.compact_layers)
                .map(|(r, _)| r)
                .collect()
        } else {
            Vec::new()
        };
        if !background {
            for r in &deep {
                compact_in_line(&inner.store, &inner.opts, &mut state, r, false)?;
            }
        }
        if let Some(queue) = &inner.compactor {
            let mut queued = inner.compacting.lock().map_err(lock_poisoned)?;
            for r in deep {
                if queued.insert(r.clone())
                    && let Ok(tx) = queue.lock()
                {
                    let _ = tx.send(r);
                }
            }
        }
        let manifest = Manifest {
            seq: state.seq,
            collections: state
                .collections
                .iter()
                .map(|(name, map)| (name.clone(), map.id()))
                .collect(),
            indexes: state
                .indexes
                .values()
                .map(|ix| ((*ix.def).clone(), ix.map.id()))
                .collect(),
            counts: Some(state.counts.clone()),
            next_block: state.packing.next_block(),
        };
        manifest.write(&*inner.opts.storage, &inner.dir)?;
        // From here the tables hold everything; the log restarts after `seq`.
        w.state = state.clone();
        w.logged_bytes = 0;
        self.publish(Arc::new(state));
        let wal_dir = inner.dir.join(WAL_DIR);
        {
            let mut wal = inner.wal.lock().map_err(|_| Error::CommitFailed {
                reason: "a thread panicked while writing the log".into(),
            })?;
            wal.rotate(w.state.seq + 1)?;
        }
        for (first, path) in wal::list_segments(&wal_dir)? {
            if first <= w.state.seq {
                inner
                    .opts
                    .storage
                    .remove(&path)
                    .map_err(|e| Error::io("removing old log segment", &path, e))?;
            }
        }
        let keep: Vec<TableId> = manifest
            .collections
            .values()
            .copied()
            .chain(manifest.indexes.iter().map(|(_, id)| *id))
            .flatten()
            .collect();
        // Without waiting: a compaction building a table on the side holds the store's write
        // guard for its whole run; the files it would free go at a later checkpoint.
        inner.store.try_collect_garbage_keeping(&keep)?;
        Ok(())
    }
}

/// Swaps a compaction done on the side into `state`: `false`, changing nothing, when the
/// map was compacted another way meanwhile (its bottom layers are no longer the ones the
/// compaction covered). An error leaves the map as it was. A packed base goes in only with
/// its packs map, which replaces the old one: the base points into it, and the diffs above
/// the base hold whole documents.
fn swap_in(state: &mut State, side: SideCompaction) -> Result<bool> {
    let Some(map) = state.map_mut(&side.map) else {
        return Ok(false);
    };
    let Some(id) = side.base.id() else {
        return Ok(false);
    };
    let swapped = map.rebase(&side.covered, id)?;
    if let (true, MapRef::Collection(c), Some(packs)) = (swapped, &side.map, side.packs) {
        state.collections.insert(crate::pack::packs_name(c), packs);
    }
    Ok(swapped)
}

/// The background compactor: merges the saved layers of one map at a time without any
/// lock and leaves the result for the next checkpoint to swap in with `rebase`. It holds
/// the database only for an instant at either end, so closing is never delayed by a merge;
/// a merge finished after the database closed is dropped (its table collected later).
fn compactor(weak: &Weak<Inner>, queue: &mpsc::Receiver<MapRef>) {
    while let Ok(r) = queue.recv() {
        // Errors leave the map as it was; a later checkpoint queues it again.
        let done = compact_on_the_side(weak, &r, false).ok().flatten();
        let Some(inner) = weak.upgrade() else { return };
        if let Some(side) = done
            && let Ok(mut ready) = inner.ready.lock()
        {
            ready.push(side);
        }
        if let Ok(mut queued) = inner.compacting.lock() {
            queued.remove(&r);
        }
    }
}

/// Compacts what map `r` has saved now into a new base (for a user collection with
/// compression on: packs it, leaving an empty base; `full`: rewriting every block, even of a
/// collection of one layer); returns what is to be swapped in ([`swap_in`]), or nothing if
/// the map is compact already.
fn compact_on_the_side(
    weak: &Weak<Inner>,
    r: &MapRef,
    full: bool,
) -> Result<Option<SideCompaction>> {
    let (state, store, opts) = {
        let Some(inner) = weak.upgrade() else {
            return Ok(None);
        };
        let w = inner.writer.lock().map_err(lock_poisoned)?;
        let state = w.state.clone();
        drop(w);
        (state, inner.store.clone(), inner.opts.clone())
    };
    let Some(map) = state.map_refs().find(|(m, _)| m == r).map(|(_, m)| m) else {
        return Ok(None);
    };
    let mut side = map.saved_only();
    let covered = side.layer_ids();
    let packed = match r {
        MapRef::Collection(c) if !c.starts_with('_') => packs_collection(&opts, &state, c)?,
        _ => false,
    };
    if covered.is_empty() || (covered.len() == 1 && !(full && packed)) {
        return Ok(None);
    }
    let side_of = |base: DurableMap, packs: Option<DurableMap>| SideCompaction {
        map: r.clone(),
        covered: covered.clone(),
        base,
        packs,
    };
    match r {
        MapRef::Collection(c) if !c.starts_with('_') => {
            let source = side.sequential()?;
            if packed {
                let (packs, _) =
                    crate::pack::pack(&store, &state, c, &source, full, pack_settings(&opts))?;
                let empty = store.map_builder()?.finish()?;
                Ok(Some(side_of(empty, Some(packs))))
            } else {
                let base = merge_plain(&store, &state, c, &source)?;
                Ok(Some(side_of(base, None)))
            }
        }
        _ => {
            side.compact()?;
            Ok(Some(side_of(side, None)))
        }
    }
}

#[cfg(test)]
#[path = "db_dict_tests.rs"]
mod dict_tests;
