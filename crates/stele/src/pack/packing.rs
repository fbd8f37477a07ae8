//! [`Packing`]: what packing shares across one open database's states: the next block
//! number and the cache of decoded blocks.

use super::cache::BlockCache;
use std::sync::atomic::{AtomicU64, Ordering};

/// Block numbers and decoded blocks of one open database.
#[derive(Debug)]
pub(crate) struct Packing {
    next_block: AtomicU64,
    pub(crate) cache: BlockCache,
}

impl Default for Packing {
    fn default() -> Self {
        Packing::new(1, 0)
    }
}

impl Packing {
    /// `next_block`: above every block number stored (from the manifest).
    pub(crate) fn new(next_block: u64, cache_bytes: usize) -> Self {
        Packing {
            next_block: AtomicU64::new(next_block.max(1)),
            cache: BlockCache::new(cache_bytes),
        }
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
