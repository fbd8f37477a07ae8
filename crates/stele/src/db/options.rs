//! [`DatabaseOptions`]: what a database can be tuned for.

use std::sync::Arc;
use std::time::Duration;
use stele_table::{FsStorage, Storage, TableOptions};

/// Options of a [`Database`].
#[derive(Debug, Clone)]
pub struct DatabaseOptions {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) checkpoint_bytes: u64,
    pub(crate) compact_layers: usize,
    pub(crate) compact_base_ratio: u64,
    pub(crate) background_compaction: bool,
    pub(crate) background_training: bool,
    pub(crate) table: TableOptions,
    pub(crate) pack_block_bytes: usize,
    pub(crate) pack_level: i32,
    pub(crate) pack_streams: bool,
    pub(crate) block_cache_bytes: usize,
    pub(crate) idle_checkpoint: Option<Duration>,
    pub(crate) pack_on_close: bool,
    pub(crate) create_here: bool,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            storage: Arc::new(FsStorage),
            checkpoint_bytes: 64 << 20,
            compact_layers: 8,
            compact_base_ratio: 8,
            background_compaction: true,
            background_training: true,
            table: TableOptions::default(),
            pack_block_bytes: 32 * 1024,
            pack_level: 9,
            pack_streams: true,
            block_cache_bytes: 64 << 20,
            idle_checkpoint: Some(Duration::from_secs(3)),
            pack_on_close: true,
            create_here: false,
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

    /// How a compaction a checkpoint starts (a collection with more than
    /// [`compact_layers`](Self::compact_layers) layers) treats the collection's base, the
    /// large table at the bottom of its stack (default 8). While the layers above the base
    /// hold under 1/`ratio` of its bytes (for a collection with compression on: the
    /// documents outside packed blocks, against the blocks), only those layers are merged,
    /// into one table on the base: small changes to a large collection rewrite the changes,
    /// not the collection, and an incremental backup after such a compaction copies only
    /// them. Past that share, the base is rewritten (packed) with them. Reads then look at
    /// one more table until the next full merge; [`Database::compact`](crate::Database::compact)
    /// always merges everything. 0: every compaction rewrites the base (the smallest stack,
    /// at the price of rewriting the whole collection every few checkpoints).
    #[must_use]
    pub fn compact_base_ratio(mut self, ratio: u64) -> Self {
        self.compact_base_ratio = ratio;
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
    /// grows past this size until it holds 32 of them, up to 8 times the size
    /// ([`crate::compress::block_is_full`]): github-webhooks' documents of 10 KB go 25 or 26
    /// to a 256 KiB block instead of 3 to 32 KiB, which stores the collection about 1.6x
    /// smaller and makes an uncached read of one of them decode 8 times as much
    /// (`docs/benchmarks.md`, "Dictionaries for blocks"; `crate::compress::MIN_BLOCK_DOCS`).
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
    ///
    /// A read-only database ([`Database::open_read_only_with`]) also keeps up to this many
    /// bytes of the compressed documents its refreshes read from the log decoded, so that
    /// reading them again costs no decompression: counted from each load of its state from
    /// a checkpoint (the writer's every `checkpoint_bytes` of log), and on top of the
    /// block cache. Past it, such documents stay compressed and each read decodes them.
    #[must_use]
    pub fn block_cache_bytes(mut self, bytes: usize) -> Self {
        self.block_cache_bytes = bytes;
        self
    }

    /// Checkpoint when no commit came for this long and the log holds records (default
    /// 3 s; `None`: only by size, [`checkpoint_bytes`](Self::checkpoint_bytes), and at
    /// close). A writer that goes quiet then keeps nothing in the log: a crash later opens
    /// without replaying it, and the log starts over small. A thread looks a few times per
    /// period; the checkpoint waits for commits in flight like any other.
    #[must_use]
    pub fn idle_checkpoint(mut self, idle: Option<Duration>) -> Self {
        self.idle_checkpoint = idle.filter(|d| !d.is_zero());
        self
    }

    /// Whether closing the database ([`Database::close`](crate::Database::close), or
    /// dropping its last handle) packs the collections with compression on of which at
    /// least 1 document in 8 is not in packed blocks (default: on), as
    /// [`Database::compact`](crate::Database::compact) packs them. Then a collection
    /// written through commits (a Python import, `put_many`) is stored compressed in blocks
    /// at rest without a manual `compact`; the price is paid by the close
    /// (`docs/benchmarks.md`, "Document store": close cost). Off: a close only checkpoints
    /// (documents stay compressed one by one in diff tables until a compaction).
    #[must_use]
    pub fn pack_on_close(mut self, on: bool) -> Self {
        self.pack_on_close = on;
        self
    }

    /// Whether a write open may create the database in a folder that holds other entries
    /// (default: off). Off, a database is created only in a folder that does not exist or
    /// is empty: opening a folder of other files fails with
    /// [`Error::NotADatabase`](crate::Error::NotADatabase), naming them, and writes
    /// nothing. A folder that is a database opens either way.
    #[must_use]
    pub fn create_here(mut self, on: bool) -> Self {
        self.create_here = on;
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
