//! CLOCK (second chance) eviction over a map of charged entries, shared by the block cache
//! and the cache of recent documents: a hit only sets a flag, so lookups stay cheap under
//! the caller's lock; an insertion or growth over budget walks the ring, sparing each
//! recently hit entry once.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

#[derive(Debug)]
struct Slot<V> {
    value: V,
    charge_bytes: usize,
    referenced: bool,
}

/// Entries by key, with what each costs, up to a budget the caller passes.
///
/// Invariants: every key of `slots` appears exactly once in `ring`, and `cached_bytes` is
/// the sum of the slots' charges.
#[derive(Debug)]
pub(crate) struct Clock<K, V, S> {
    slots: HashMap<K, Slot<V>, S>,
    ring: VecDeque<K>,
    cached_bytes: usize,
}

impl<K, V, S: Default> Default for Clock<K, V, S> {
    fn default() -> Self {
        Clock {
            slots: HashMap::default(),
            ring: VecDeque::new(),
            cached_bytes: 0,
        }
    }
}

impl<K: Copy + Eq + Hash, V, S: BuildHasher> Clock<K, V, S> {
    /// The entry of `key`, marked as recently used.
    pub(crate) fn get(&mut self, key: &K) -> Option<&V> {
        let slot = self.slots.get_mut(key)?;
        slot.referenced = true;
        Some(&slot.value)
    }

    /// The entry of `key`, not marked.
    pub(crate) fn peek(&self, key: &K) -> Option<&V> {
        self.slots.get(key).map(|s| &s.value)
    }

    /// Adds `value` under `key` (which must not be present: callers check with `peek`),
    /// then evicts down to `budget_bytes`.
    pub(crate) fn insert(&mut self, key: K, value: V, charge_bytes: usize, budget_bytes: usize) {
        let slot = Slot {
            value,
            charge_bytes,
            referenced: false,
        };
        if let Some(old) = self.slots.insert(key, slot) {
            // Not expected (see above); keep the invariants all the same.
            self.cached_bytes -= old.charge_bytes;
        } else {
            self.ring.push_back(key);
        }
        self.cached_bytes += charge_bytes;
        self.evict(budget_bytes);
    }

    /// Removes the entry of `key`.
    pub(crate) fn remove(&mut self, key: &K) {
        if let Some(old) = self.slots.remove(key) {
            self.cached_bytes -= old.charge_bytes;
            self.ring.retain(|k| k != key);
        }
    }

    /// Changes the charge of `key`'s entry by `delta_bytes` if `applies` says the entry is
    /// the one meant, then evicts down to `budget_bytes`.
    pub(crate) fn recharge(
        &mut self,
        key: &K,
        delta_bytes: isize,
        budget_bytes: usize,
        applies: impl FnOnce(&V) -> bool,
    ) {
        let Some(slot) = self.slots.get_mut(key) else {
            return;
        };
        if !applies(&slot.value) {
            return;
        }
        let old = slot.charge_bytes;
        slot.charge_bytes = old.saturating_add_signed(delta_bytes);
        self.cached_bytes = self.cached_bytes - old + slot.charge_bytes;
        self.evict(budget_bytes);
    }

    fn evict(&mut self, budget_bytes: usize) {
        // Each pass over the ring clears every flag it spares, so this ends within two.
        while self.cached_bytes > budget_bytes {
            let Some(victim) = self.ring.pop_front() else {
                break;
            };
            let spare = match self.slots.get_mut(&victim) {
                Some(slot) if slot.referenced => {
                    slot.referenced = false;
                    true
                }
                _ => false,
            };
            if spare {
                self.ring.push_back(victim);
            } else if let Some(slot) = self.slots.remove(&victim) {
                self.cached_bytes -= slot.charge_bytes;
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn cached_bytes(&self) -> usize {
        self.cached_bytes
    }
}
