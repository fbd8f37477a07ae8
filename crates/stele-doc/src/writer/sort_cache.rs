//! Sorted orders of the objects closed so far in the document being written, by their key ids
//! in input order. Objects of one shape repeat within a document (the tweets of a timeline, the
//! events of a catalog); sorting each again compared names that tie on their first 8 bytes
//! byte by byte (a quarter of converting twitter.json went to sorting and deduplicating keys).
//!
//! Within one document a key id names one key, so the same ids in the same input order have the
//! same sorted order. Only objects without repeated keys are cached (their deduplication keeps
//! every entry whatever the policy), only nested ones (a root object has no twin in its document),
//! and only those with [`MIN_KEYS`] keys or more: below that,
//! sorting costs less than hashing the ids.

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;

/// Fewest keys of an object whose sorted order is cached.
pub(super) const MIN_KEYS: usize = 8;

/// A cached shape: its ids and sorted order in `SortCache::data`.
#[derive(Debug, Clone, Copy)]
struct Shape {
    hash: u64,
    /// Where its key ids start in `data` (its permutation follows them).
    at: usize,
    len: usize,
}

/// The cache; cleared with each document.
pub(super) struct SortCache {
    table: HashTable<Shape>,
    /// Per shape, back to back: its key ids in input order, then for each sorted position the
    /// input position of the key there.
    data: Vec<u32>,
    state: foldhash::fast::FixedState,
}

impl SortCache {
    pub(super) fn new() -> SortCache {
        SortCache {
            table: HashTable::new(),
            data: Vec::new(),
            state: foldhash::fast::FixedState::with_seed(0x50e7),
        }
    }

    pub(super) fn clear(&mut self) {
        if !self.table.is_empty() {
            self.table.clear();
        }
        self.data.clear();
    }

    pub(super) fn hash(&self, ids: &[u32]) -> u64 {
        let mut h = self.state.build_hasher();
        for &id in ids {
            h.write_u32(id);
        }
        h.finish()
    }

    /// The sorted order of an object whose key ids in input order are `ids` (hashing to
    /// `hash`): input positions by sorted position.
    pub(super) fn get(&self, hash: u64, ids: &[u32]) -> Option<&[u32]> {
        let data = &self.data;
        let shape = self.table.find(hash, |s| {
            s.hash == hash && s.len == ids.len() && data.get(s.at..s.at + s.len) == Some(ids)
        })?;
        data.get(shape.at + shape.len..shape.at + 2 * shape.len)
    }

    /// Remembers `order` (input positions by sorted position) for `ids`.
    pub(super) fn insert(&mut self, hash: u64, ids: &[u32], order: impl Iterator<Item = u32>) {
        let at = self.data.len();
        self.data.extend_from_slice(ids);
        self.data.extend(order);
        let shape = Shape {
            hash,
            at,
            len: ids.len(),
        };
        self.table.insert_unique(hash, shape, |s| s.hash);
    }
}
