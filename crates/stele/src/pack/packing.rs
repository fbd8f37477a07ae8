//! [`Packing`]: what packing shares across one open database's states: the next block
//! number, the cache of decoded blocks, and a reader's allowance for documents of the log
//! kept decoded.

use super::cache::BlockCache;
use crate::index::cache::KeyBlockCache;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Block numbers and decoded blocks of one open database.
#[derive(Debug)]
pub(crate) struct Packing {
    next_block: AtomicU64,
    pub(crate) cache: BlockCache,
    /// Decoded blocks of packed indexes, within an eighth of the block cache's budget
    /// (`crate::index::cache`).
    pub(crate) index_blocks: KeyBlockCache,
    /// Bytes of compressed documents read from the log that may be kept decoded in the
    /// in-memory diff (0 in a writer, whose diff is saved as it is).
    decoded_budget_bytes: AtomicUsize,
    /// Bytes kept decoded since the diff last started empty (see [`Self::keep_decoded`]).
    decoded_bytes: AtomicUsize,
}

impl Default for Packing {
    fn default() -> Self {
        Packing::new(1, 0)
    }
}

/// The index blocks' cache gets this fraction of the block cache's budget: a selective
/// query reads one or two index blocks of 4-8 KiB decoded where it reads a document block
/// per few hits, so an eighth (8 MiB of the default 64 MiB) holds about a thousand blocks.
const INDEX_CACHE_SHARE: usize = 8;

impl Packing {
    /// `next_block`: above every block number stored (from the manifest).
    pub(crate) fn new(next_block: u64, cache_bytes: usize) -> Self {
        Packing {
            next_block: AtomicU64::new(next_block.max(1)),
            cache: BlockCache::new(cache_bytes),
            index_blocks: KeyBlockCache::new(cache_bytes / INDEX_CACHE_SHARE),
            decoded_budget_bytes: AtomicUsize::new(0),
            decoded_bytes: AtomicUsize::new(0),
        }
    }

    /// Lets refreshes keep up to `budget_bytes` of documents read from the log decoded
    /// (a reader's: see `db::apply::put_doc`), counting from zero: a reader calls
    /// this whenever it loads its state from the manifest, whose checkpoint emptied the
    /// diff (snapshots taken before keep theirs until they are dropped).
    pub(crate) fn allow_decoded(&self, budget_bytes: usize) {
        self.decoded_budget_bytes
            .store(budget_bytes, Ordering::Relaxed);
        self.decoded_bytes.store(0, Ordering::Relaxed);
    }

    /// Whether a document of `bytes` decoded from the log may be kept decoded, charging it
    /// to the allowance if so. Replaced documents are not given back: the count only grows
    /// until the next load, which bounds what one checkpoint's worth of log can pin.
    pub(crate) fn keep_decoded(&self, bytes: usize) -> bool {
        let budget = self.decoded_budget_bytes.load(Ordering::Relaxed);
        self.decoded_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&u| u <= budget)
            })
            .is_ok()
    }

    /// A block number never handed out before.
    pub(crate) fn allocate(&self) -> u64 {
        self.next_block.fetch_add(1, Ordering::Relaxed)
    }

    /// The next number [`allocate`](Self::allocate) would hand out (for the manifest).
    pub(crate) fn next_block(&self) -> u64 {
        self.next_block.load(Ordering::Relaxed)
    }
}
