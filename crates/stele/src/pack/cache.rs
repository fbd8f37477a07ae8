//! A cache of decoded blocks, shared by every snapshot of one database.
//!
//! Keyed by block number alone: every stored block carries a number unique within its
//! database (see [`super::packing::Packing::allocate`]), so a number never names two different blocks
//! in one cache. Eviction is CLOCK (second chance): a hit only sets a flag, so lookups stay
//! cheap under the lock; an insertion over budget walks the ring, sparing each recently hit
//! block once.

use super::decoded::DecodedBlock;
use std::sync::{Arc, Mutex};

/// Hashes a block number for the cache's map: a folded 64x64-bit multiply, which spreads
/// consecutive numbers over both the high bits (hashbrown's tags) and the low bits (its
/// buckets). The numbers come from the database, not from users, so no keyed (SipHash)
/// hashing is needed, and this runs on every read of a packed document.
#[derive(Debug, Default, Clone, Copy)]
struct NumberHasher(u64);

impl std::hash::Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        let product = u128::from(self.0) * 0x9E37_79B9_7F4A_7C15_u128;
        (product >> 64) as u64 ^ product as u64
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the key is a u64); any other input still hashes.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Numbers = std::hash::BuildHasherDefault<NumberHasher>;

type Clock = crate::clock::Clock<u64, Arc<DecodedBlock>, Numbers>;

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
        super::decoded::lock_unpoisoned(&self.clock)
    }

    /// The decoded block `number`, if cached (and counts the lookup).
    pub(crate) fn get(&self, number: u64) -> Option<Arc<DecodedBlock>> {
        self.lock().hit(number).map(Arc::clone)
    }

    /// Caches `block` under its number (a block bigger than the whole budget is not kept).
    pub(crate) fn insert(&self, block: &Arc<DecodedBlock>) {
        let number = block.number();
        let charge_bytes = block.heap_bytes() + 64;
        if charge_bytes > self.budget_bytes {
            return;
        }
        let budget_bytes = self.budget_bytes;
        self.lock()
            .insert(number, Arc::clone(block), charge_bytes, budget_bytes);
    }

    /// Changes the charge of `block` by `delta_bytes` (its stream forms were rebuilt into
    /// documents, or dropped), evicting others if that goes over budget. Only if the cache
    /// holds this very block: another decoding of the same number (two readers that missed
    /// at once, one of them cached) has memory of its own.
    pub(crate) fn recharge(&self, block: &DecodedBlock, delta_bytes: isize) {
        if delta_bytes == 0 {
            return;
        }
        let mut c = self.lock();
        let Some(slot) = c.slots.get_mut(&block.number()) else {
            return;
        };
        if !std::ptr::eq(Arc::as_ptr(&slot.value), block) {
            return;
        }
        let old = slot.charge_bytes;
        slot.charge_bytes = old.saturating_add_signed(delta_bytes);
        let new = slot.charge_bytes;
        c.cached_bytes = c.cached_bytes - old + new;
        c.evict_over_budget(self.budget_bytes);
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
    use crate::compress::Block;

    fn block(number: u64, bytes: usize) -> Arc<DecodedBlock> {
        Arc::new(
            DecodedBlock::new(
                number,
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
            cache.insert(&block(n, 2_000));
        }
        // 5 x (2,000 + 64 + ends) > 10,000: the oldest went.
        assert!(cache.stats().cached_bytes <= 10_000);
        assert!(cache.get(0).is_none());
        assert!(cache.get(4).is_some());
        // Block 1 is hit, so the next insertion evicts 2 (next unreferenced) instead.
        assert!(cache.get(1).is_some());
        cache.insert(&block(5, 2_000));
        assert!(cache.get(1).is_some());
        assert!(cache.get(2).is_none());
        assert!(cache.stats().cached_bytes <= 10_000);
    }

    #[test]
    fn recharges_follow_a_block_and_keep_the_budget() {
        let cache = BlockCache::new(10_000);
        for n in 0..3 {
            cache.insert(&block(n, 2_000));
        }
        let full = cache.stats().cached_bytes;
        // Block 2's documents were rebuilt: it grows, and the oldest unreferenced go.
        let two = cache.get(2).unwrap();
        cache.recharge(&two, 5_000);
        let s = cache.stats();
        assert!(s.cached_bytes <= 10_000, "{s:?}");
        assert!(cache.get(2).is_some());
        assert!(cache.get(0).is_none());
        // Its streams were dropped: it shrinks. Unknown numbers are ignored.
        let before = cache.stats().cached_bytes;
        cache.recharge(&two, -3_000);
        assert_eq!(cache.stats().cached_bytes, before - 3_000);
        // Another decoding of number 2, or a number not cached: ignored.
        cache.recharge(&block(2, 2_000), 1_000_000);
        let other = DecodedBlock::new(
            99,
            crate::compress::Block::from_parts(vec![7; 10], vec![1, 10]).unwrap(),
            &[7],
        )
        .unwrap();
        cache.recharge(&other, 1_000_000);
        assert_eq!(cache.stats().cached_bytes, before - 3_000);
        assert!(full > 0);
    }

    #[test]
    fn a_block_bigger_than_the_budget_is_not_kept() {
        let cache = BlockCache::new(1_000);
        cache.insert(&block(1, 5_000));
        assert!(cache.get(1).is_none());
        let none = BlockCache::new(0);
        none.insert(&block(1, 1));
        assert!(none.get(1).is_none());
        assert_eq!(none.stats().blocks, 0);
    }
}
