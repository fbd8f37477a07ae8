//! A cache of decoded blocks, shared by every snapshot of one database.
//!
//! Keyed by block number alone: every stored block carries a number unique within its
//! database (see [`super::Packing::allocate`]), so a number never names two different blocks
//! in one cache. Eviction is CLOCK (second chance): a hit only sets a flag, so lookups stay
//! cheap under the lock; an insertion over budget walks the ring, sparing each recently hit
//! block once.

use crate::compress::Block;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A decoded block of packed documents: `n` ids in ascending order, then their `n`
/// documents, and which documents have been validated (the bytes never change once decoded,
/// so a document validated once need not be validated again on later reads).
#[derive(Debug)]
pub(crate) struct DecodedBlock {
    block: Block,
    n: usize,
    checked: Box<[AtomicBool]>,
}

impl DecodedBlock {
    /// Checks the layout of a block stored under key `last_id`: an even number of entries,
    /// ids strictly ascending, the last one equal to the key. The reason if not.
    pub(crate) fn new(block: Block, last_id: &[u8]) -> Result<Self, String> {
        let entries = block.len();
        if entries == 0 || !entries.is_multiple_of(2) {
            return Err(format!(
                "a packed block holds ids and documents in pairs, not {entries} entries"
            ));
        }
        let n = entries / 2;
        let ids: Vec<&[u8]> = (0..n).filter_map(|i| block.get(i)).collect();
        if ids.windows(2).any(|w| w.first() >= w.get(1)) {
            return Err("the ids of a packed block are not in ascending order".to_owned());
        }
        if ids.last() != Some(&last_id) {
            return Err("the last id of a packed block differs from its key".to_owned());
        }
        let checked = (0..n).map(|_| AtomicBool::new(false)).collect();
        Ok(DecodedBlock { block, n, checked })
    }

    /// Documents in the block.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Id of document `i` (empty if out of range; callers keep `i < len()`).
    pub(crate) fn id(&self, i: usize) -> &[u8] {
        self.block.get(i).unwrap_or_default()
    }

    /// Document `i` (empty if out of range; callers keep `i < len()`).
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        self.block.get(self.n + i).unwrap_or_default()
    }

    /// Position of `id`, or where it would go.
    pub(crate) fn find(&self, id: &[u8]) -> std::result::Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.id(mid).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Whether document `i` passed `stele_doc::Document::new` before.
    pub(crate) fn is_checked(&self, i: usize) -> bool {
        self.checked
            .get(i)
            .is_some_and(|c| c.load(Ordering::Acquire))
    }

    /// Records that document `i` passed `stele_doc::Document::new`.
    pub(crate) fn mark_checked(&self, i: usize) {
        if let Some(c) = self.checked.get(i) {
            c.store(true, Ordering::Release);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.block.heap_bytes() + self.checked.len()
    }
}

#[derive(Debug)]
struct Slot {
    block: Arc<DecodedBlock>,
    charge_bytes: usize,
    referenced: bool,
}

#[derive(Debug, Default)]
struct Clock {
    slots: HashMap<u64, Slot>,
    /// Insertion order of the cached numbers (each cached number appears exactly once).
    ring: VecDeque<u64>,
    cached_bytes: usize,
    hits: u64,
    misses: u64,
}

/// Decoded blocks by number, up to a byte budget.
#[derive(Debug)]
pub(crate) struct BlockCache {
    budget_bytes: usize,
    clock: Mutex<Clock>,
}

/// Counters of the database's cache of decoded blocks ([`crate::Database::block_cache_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    /// Bytes of decoded blocks held.
    pub cached_bytes: u64,
    /// Blocks held.
    pub blocks: u64,
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that had to decode it.
    pub misses: u64,
}

impl BlockCache {
    pub(crate) fn new(budget_bytes: usize) -> Self {
        BlockCache {
            budget_bytes,
            clock: Mutex::new(Clock::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clock> {
        // The clock holds no invariant a panicking holder could break halfway that matters
        // for correctness (at worst a count is off): keep using it.
        match self.clock.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The decoded block `number`, if cached (and counts the lookup).
    pub(crate) fn get(&self, number: u64) -> Option<Arc<DecodedBlock>> {
        let mut c = self.lock();
        match c.slots.get_mut(&number) {
            Some(slot) => {
                slot.referenced = true;
                let block = Arc::clone(&slot.block);
                c.hits += 1;
                Some(block)
            }
            None => {
                c.misses += 1;
                None
            }
        }
    }

    /// Caches `block` as `number` (a block bigger than the whole budget is not kept).
    pub(crate) fn insert(&self, number: u64, block: &Arc<DecodedBlock>) {
        let charge_bytes = block.heap_bytes() + 64;
        if charge_bytes > self.budget_bytes {
            return;
        }
        let mut c = self.lock();
        if c.slots.contains_key(&number) {
            return;
        }
        c.slots.insert(
            number,
            Slot {
                block: Arc::clone(block),
                charge_bytes,
                referenced: false,
            },
        );
        c.ring.push_back(number);
        c.cached_bytes += charge_bytes;
        // Each pass over the ring clears every flag it spares, so this ends within two.
        while c.cached_bytes > self.budget_bytes {
            let Some(victim) = c.ring.pop_front() else {
                break;
            };
            let spare = match c.slots.get_mut(&victim) {
                Some(slot) if slot.referenced => {
                    slot.referenced = false;
                    true
                }
                _ => false,
            };
            if spare {
                c.ring.push_back(victim);
            } else if let Some(slot) = c.slots.remove(&victim) {
                c.cached_bytes -= slot.charge_bytes;
            }
        }
    }

    pub(crate) fn stats(&self) -> BlockCacheStats {
        let c = self.lock();
        BlockCacheStats {
            cached_bytes: c.cached_bytes as u64,
            blocks: c.slots.len() as u64,
            hits: c.hits,
            misses: c.misses,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn block(bytes: usize) -> Arc<DecodedBlock> {
        Arc::new(
            DecodedBlock::new(
                Block::from_parts(vec![7; bytes], vec![1, bytes]).unwrap(),
                &[7],
            )
            .unwrap(),
        )
    }

    #[test]
    fn keeps_within_budget_and_spares_hit_blocks() {
        let cache = BlockCache::new(10_000);
        for n in 0..5 {
            cache.insert(n, &block(2_000));
        }
        // 5 x (2,000 + 64 + ends) > 10,000: the oldest went.
        assert!(cache.stats().cached_bytes <= 10_000);
        assert!(cache.get(0).is_none());
        assert!(cache.get(4).is_some());
        // Block 1 is hit, so the next insertion evicts 2 (next unreferenced) instead.
        assert!(cache.get(1).is_some());
        cache.insert(5, &block(2_000));
        assert!(cache.get(1).is_some());
        assert!(cache.get(2).is_none());
        assert!(cache.stats().cached_bytes <= 10_000);
    }

    #[test]
    fn a_block_bigger_than_the_budget_is_not_kept() {
        let cache = BlockCache::new(1_000);
        cache.insert(1, &block(5_000));
        assert!(cache.get(1).is_none());
        let none = BlockCache::new(0);
        none.insert(1, &block(1));
        assert!(none.get(1).is_none());
        assert_eq!(none.stats().blocks, 0);
    }
}
