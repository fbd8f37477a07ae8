//! Decoded blocks of packed indexes (`packed.rs`), kept between queries.
//!
//! A selective query reads one or two index blocks, and decompressing and validating one
//! (zstd, then every key's lengths and order) was about 7 % of its time, paid again by every
//! query (`docs/notes/2026-12-02-index-query-costs.md`). The cache is keyed by the block's
//! stored bytes themselves: a hash of them finds the slot, and the slot keeps a copy of the
//! bytes, compared in full before the decoded keys are used. So an entry can never be
//! stale: the decoded keys are a function of the stored bytes, whichever map, table or
//! database state they were read from; a write that changes an index writes loose entries
//! or new blocks, whose bytes are new. Eviction is CLOCK (`crate::clock`), as for documents'
//! blocks (`pack/cache.rs`), within a byte budget of its own.

use std::sync::{Arc, Mutex};

/// The keys of one index block, decoded and validated: strictly increasing, each a whole
/// key (not prefix-coded), so a scan can binary-search them and borrow each.
#[derive(Debug)]
pub(crate) struct KeyBlock {
    bytes: Vec<u8>,
    /// End of each key in `bytes` (key `i` starts where key `i - 1` ends).
    ends: Vec<u32>,
}

impl KeyBlock {
    /// A block from keys appended one by one with [`KeyBlock::push`].
    pub(crate) fn with_capacity(bytes: usize, keys: usize) -> KeyBlock {
        KeyBlock {
            bytes: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(keys),
        }
    }

    /// Appends `key` (the caller has checked it is greater than the last). False if the
    /// block's bytes would pass `u32::MAX` (a block is at most 16 MiB raw; checked anyway).
    pub(crate) fn push(&mut self, key: &[u8]) -> bool {
        let Some(end) = u32::try_from(self.bytes.len() + key.len()).ok() else {
            return false;
        };
        self.bytes.extend_from_slice(key);
        self.ends.push(end);
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Key `i` (empty past the end: callers stay within [`KeyBlock::len`]).
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).map_or(0, |&e| e as usize),
            None => 0,
        };
        let end = self.ends.get(i).map_or(start, |&e| e as usize);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The number of keys for which `before` holds (they come first: keys ascend and
    /// `before` is monotone over them).
    pub(crate) fn partition_point(&self, before: impl Fn(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Memory held, for the cache's budget.
    fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 4
    }
}

/// A cached block and the stored bytes it was decoded from (compared on every hit).
type Cached = (Box<[u8]>, Arc<KeyBlock>);

type Clock = crate::clock::Clock<u64, Cached, std::hash::RandomState>;

/// Decoded index blocks by their stored bytes, up to a byte budget (0: nothing kept).
#[derive(Debug)]
pub(crate) struct KeyBlockCache {
    budget_bytes: usize,
    clock: Mutex<Clock>,
}

/// What a cache slot costs besides the block and its stored copy (the map's and ring's
/// entries, the slot's headers).
const SLOT_OVERHEAD: usize = 96;

fn hash(stored: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(stored)
}

impl KeyBlockCache {
    pub(crate) fn new(budget_bytes: usize) -> KeyBlockCache {
        KeyBlockCache {
            budget_bytes,
            clock: Mutex::new(Clock::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clock> {
        // A panic while holding the lock leaves a consistent map: every change is one
        // insertion or removal with its byte count.
        crate::pack::decoded::lock_unpoisoned(&self.clock)
    }

    /// The decoded keys of the block stored as `stored`, if cached.
    pub(crate) fn get(&self, stored: &[u8]) -> Option<Arc<KeyBlock>> {
        if self.budget_bytes == 0 {
            return None;
        }
        let h = hash(stored);
        let mut c = self.lock();
        let same = c.slots.get(&h).is_some_and(|s| *s.value.0 == *stored);
        if !same {
            c.misses += 1;
            return None;
        }
        c.hit(h).map(|(_, block)| Arc::clone(block))
    }

    /// Keeps `block`, decoded from `stored`. A slot already holding other bytes of the
    /// same hash keeps them (a collision only costs the newcomer its caching).
    pub(crate) fn insert(&self, stored: &[u8], block: &Arc<KeyBlock>) {
        let charge_bytes = stored.len() + block.heap_bytes() + SLOT_OVERHEAD;
        if charge_bytes > self.budget_bytes {
            return;
        }
        let value = (stored.into(), Arc::clone(block));
        let budget_bytes = self.budget_bytes;
        self.lock()
            .insert(hash(stored), value, charge_bytes, budget_bytes);
    }

    /// (blocks held, bytes charged, hits, misses).
    #[cfg(test)]
    pub(crate) fn stats(&self) -> (usize, usize, u64, u64) {
        let c = self.lock();
        (c.slots.len(), c.cached_bytes, c.hits, c.misses)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn block(keys: &[&[u8]]) -> Arc<KeyBlock> {
        let mut b = KeyBlock::with_capacity(0, 0);
        for k in keys {
            assert!(b.push(k));
        }
        Arc::new(b)
    }

    #[test]
    fn a_hit_needs_the_same_stored_bytes() {
        let cache = KeyBlockCache::new(1 << 20);
        let b = block(&[b"\x20a", b"\x20b"]);
        cache.insert(b"stored one", &b);
        let got = cache.get(b"stored one").unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got.key(1), b"\x20b");
        assert!(cache.get(b"stored two").is_none());
        assert!(cache.get(b"stored on").is_none());
        let (blocks, _, hits, misses) = cache.stats();
        assert_eq!((blocks, hits, misses), (1, 1, 2));
    }

    #[test]
    fn stays_within_its_budget_and_zero_keeps_nothing() {
        let cache = KeyBlockCache::new(4 * (SLOT_OVERHEAD + 64));
        for i in 0..50u8 {
            let keys: Vec<Vec<u8>> = (0..4u8).map(|j| vec![0x20, i, j]).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            cache.insert(&[i; 8], &block(&refs));
            let (_, bytes, _, _) = cache.stats();
            assert!(bytes <= 4 * (SLOT_OVERHEAD + 64));
        }
        assert!(cache.get(&[49; 8]).is_some(), "the newest is kept");
        assert!(cache.get(&[0; 8]).is_none(), "the oldest went");
        let none = KeyBlockCache::new(0);
        none.insert(b"x", &block(&[b"\x20a"]));
        assert!(none.get(b"x").is_none());
    }

    #[test]
    fn partition_point_finds_bounds() {
        let b = block(&[b"\x20a", b"\x20c", b"\x20e"]);
        assert_eq!(b.partition_point(|k| k < b"\x20c".as_slice()), 1);
        assert_eq!(b.partition_point(|k| k <= b"\x20c".as_slice()), 2);
        assert_eq!(b.partition_point(|_| true), 3);
        assert_eq!(b.partition_point(|_| false), 0);
        assert_eq!(b.key(3), b"");
    }
}
