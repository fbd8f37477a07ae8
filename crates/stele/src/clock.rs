//! CLOCK (second chance) eviction, shared by the cache of decoded document blocks
//! (`pack/cache.rs`) and that of decoded index blocks (`index/cache.rs`): a hit only sets a
//! flag, so lookups stay cheap under a cache's lock; an insertion over budget walks the
//! ring from the oldest entry, sparing each recently hit one once.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

/// A cached value, the bytes it is charged, and whether it was hit since the ring last
/// passed it.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    pub(crate) value: T,
    pub(crate) charge_bytes: usize,
    pub(crate) referenced: bool,
}

/// The state of one cache (kept under its lock): values by key, and their keys in
/// insertion order (each cached key appears exactly once).
#[derive(Debug)]
pub(crate) struct Clock<K, T, H> {
    pub(crate) slots: HashMap<K, Slot<T>, H>,
    ring: VecDeque<K>,
    pub(crate) cached_bytes: usize,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

impl<K, T, H: Default> Default for Clock<K, T, H> {
    fn default() -> Self {
        Clock {
            slots: HashMap::default(),
            ring: VecDeque::new(),
            cached_bytes: 0,
            hits: 0,
            misses: 0,
        }
    }
}

impl<K: Copy + Eq + Hash, T, H: BuildHasher> Clock<K, T, H> {
    /// The value under `key`, marked as hit (and the lookup counted).
    pub(crate) fn hit(&mut self, key: K) -> Option<&T> {
        match self.slots.get_mut(&key) {
            Some(slot) => {
                slot.referenced = true;
                self.hits += 1;
                Some(&slot.value)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Caches `value` under `key` unless the key is cached already, then evicts down to
    /// `budget_bytes`.
    pub(crate) fn insert(&mut self, key: K, value: T, charge_bytes: usize, budget_bytes: usize) {
        if self.slots.contains_key(&key) {
            return;
        }
        let slot = Slot {
            value,
            charge_bytes,
            referenced: false,
        };
        self.slots.insert(key, slot);
        self.ring.push_back(key);
        self.cached_bytes += charge_bytes;
        self.evict_over_budget(budget_bytes);
    }

    /// Evicts the oldest entries until `cached_bytes` is within `budget_bytes`. Each pass
    /// over the ring clears every flag it spares, so this ends within two.
    pub(crate) fn evict_over_budget(&mut self, budget_bytes: usize) {
        while self.cached_bytes > budget_bytes {
            let Some(victim) = self.ring.pop_front() else {
                break;
            };
            let spare = self
                .slots
                .get_mut(&victim)
                .is_some_and(|s| std::mem::take(&mut s.referenced));
            if spare {
                self.ring.push_back(victim);
            } else if let Some(slot) = self.slots.remove(&victim) {
                self.cached_bytes -= slot.charge_bytes;
            }
        }
    }
}
