//! A cache of documents decoded from compressed values of collections' in-memory diffs.
//!
//! With compression on, a committed document is stored alone, zstd-compressed with the
//! collection's dictionary, in the log and in the in-memory diff until a checkpoint: every
//! read of it would decompress it, rebuild it from its stream form and validate it (1-3 us
//! for a few hundred bytes). Workloads read what they wrote recently, and a reader process
//! tailing a writer's log holds everything since the writer's last checkpoint this way. This
//! cache keeps the decoded, validated document of such a value, keyed by the value's
//! allocation.
//!
//! Keyed by address, checked by identity: an entry holds a strong reference to the stored
//! value it was decoded from, so that allocation cannot be freed and its address reused by
//! another value while the entry exists, and a lookup compares the entry's value with the
//! one it was given (`Arc::ptr_eq`, address and length). A value is immutable once in a map,
//! so an entry stays right for as long as it lives. Eviction is CLOCK, as in the block cache.

use super::decoded::lock_unpoisoned;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

#[derive(Debug)]
struct Entry {
    stored: Arc<[u8]>,
    doc: Arc<[u8]>,
    referenced: bool,
}

#[derive(Debug, Default)]
struct Clock {
    entries: HashMap<usize, Entry>,
    /// Insertion order of the cached addresses (each appears exactly once).
    ring: VecDeque<usize>,
    cached_bytes: usize,
}

/// Decoded documents of compressed in-memory values, up to a byte budget.
#[derive(Debug)]
pub(crate) struct RecentDocs {
    budget_bytes: usize,
    clock: Mutex<Clock>,
}

/// What an entry costs: both byte strings it keeps alive, and its bookkeeping.
fn charge(stored: &[u8], doc: &[u8]) -> usize {
    stored.len() + doc.len() + 96
}

fn address(stored: &Arc<[u8]>) -> usize {
    Arc::as_ptr(stored).cast::<u8>() as usize
}

impl RecentDocs {
    pub(crate) fn new(budget_bytes: usize) -> Self {
        RecentDocs {
            budget_bytes,
            clock: Mutex::new(Clock::default()),
        }
    }

    /// The document decoded from `stored`, if cached.
    pub(crate) fn get(&self, stored: &Arc<[u8]>) -> Option<Arc<[u8]>> {
        let mut c = lock_unpoisoned(&self.clock);
        let entry = c.entries.get_mut(&address(stored))?;
        if !Arc::ptr_eq(&entry.stored, stored) {
            // Same address, other length: a value inside another one cannot be, but an
            // entry is never trusted without the identity check.
            return None;
        }
        entry.referenced = true;
        Some(Arc::clone(&entry.doc))
    }

    /// Caches `doc`, a validated document decoded from `stored`.
    pub(crate) fn insert(&self, stored: &Arc<[u8]>, doc: &Arc<[u8]>) {
        let charge_bytes = charge(stored, doc);
        if charge_bytes > self.budget_bytes {
            return;
        }
        let key = address(stored);
        let mut c = lock_unpoisoned(&self.clock);
        if let Some(old) = c.entries.get(&key) {
            if Arc::ptr_eq(&old.stored, stored) {
                return;
            }
            // Unreachable while entries pin their values; replaced rather than trusted.
            let old_bytes = charge(&old.stored, &old.doc);
            c.cached_bytes -= old_bytes;
            c.entries.remove(&key);
            c.ring.retain(|&k| k != key);
        }
        c.entries.insert(
            key,
            Entry {
                stored: Arc::clone(stored),
                doc: Arc::clone(doc),
                referenced: false,
            },
        );
        c.ring.push_back(key);
        c.cached_bytes += charge_bytes;
        // Each pass over the ring clears every flag it spares, so this ends within two.
        while c.cached_bytes > self.budget_bytes {
            let Some(victim) = c.ring.pop_front() else {
                break;
            };
            let spare = match c.entries.get_mut(&victim) {
                Some(e) if e.referenced => {
                    e.referenced = false;
                    true
                }
                _ => false,
            };
            if spare {
                c.ring.push_back(victim);
            } else if let Some(e) = c.entries.remove(&victim) {
                c.cached_bytes -= charge(&e.stored, &e.doc);
            }
        }
    }

    /// Bytes held (documents, the values they came from, bookkeeping).
    #[cfg(test)]
    pub(crate) fn cached_bytes(&self) -> usize {
        lock_unpoisoned(&self.clock).cached_bytes
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]
mod tests {
    use super::*;

    fn value(n: usize, byte: u8) -> Arc<[u8]> {
        Arc::from(vec![byte; n])
    }

    #[test]
    fn finds_by_identity_and_keeps_within_budget() {
        let cache = RecentDocs::new(2_000);
        let a = value(100, 1);
        let doc_a = value(300, 2);
        cache.insert(&a, &doc_a);
        assert!(Arc::ptr_eq(&cache.get(&a).unwrap(), &doc_a));
        // Equal bytes in another allocation are another value.
        let a2 = value(100, 1);
        assert!(cache.get(&a2).is_none());
        // Entries beyond the budget push out the oldest not read since.
        let mut kept = Vec::new();
        for i in 0..10u8 {
            let v = value(100, i);
            cache.insert(&v, &value(300, i));
            assert!(cache.cached_bytes() <= 2_000);
            kept.push(v);
        }
        assert!(cache.get(&a).is_none(), "the oldest went");
        assert!(cache.get(kept.last().unwrap()).is_some());
        // A value bigger than the budget is not cached.
        let big = value(3_000, 9);
        cache.insert(&big, &value(10, 9));
        assert!(cache.get(&big).is_none());
    }

    #[test]
    fn an_entry_keeps_its_value_alive() {
        let cache = RecentDocs::new(10_000);
        let v = value(50, 3);
        cache.insert(&v, &value(80, 4));
        assert_eq!(Arc::strong_count(&v), 2, "pinned by the cache");
        let weak = Arc::downgrade(&v);
        drop(v);
        // The address stays taken while the entry lives, so no other value can get it.
        assert!(weak.upgrade().is_some());
    }
}
