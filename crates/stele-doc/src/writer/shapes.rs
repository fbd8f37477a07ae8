//! Key sequences of the objects closed so far in the document being written, found by their
//! first key, so that an object of a shape seen earlier in the same document interns its keys
//! without hashing and takes its sorted order without sorting.
//!
//! Objects of one shape repeat within a document (the tweets of a timeline and their users, the
//! events of a catalog), and an object's first key nearly always tells its shape. The key
//! prediction of [`super::names`] covers only a document like the previous one; this covers
//! repeats inside one document (converting twitter.json spent 18 ns per key on hash probes).
//!
//! Exactness: a key id names one name within a document, so a predicted key is accepted only
//! when its name (prefix, length and bytes) equals the key's, and then its id is the one the
//! index would give. An object whose keys all matched a shape has the same key ids in the same
//! input order as the object that recorded it, hence the same sorted order; orders are recorded
//! only from objects without repeated keys (their deduplication keeps every entry whatever the
//! policy), so applying one needs no deduplication either.

use hashbrown::HashTable;

/// A recorded key sequence: `len` keys at `at` in [`Shapes`]' store.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Shape {
    /// Id of its first key (what it is found by).
    first: u32,
    at: u32,
    /// Number of keys; 0 for "no shape".
    pub(super) len: u32,
}

/// One key of a recorded shape.
#[derive(Debug, Clone, Copy)]
struct ShapeKey {
    /// Key id of the property at this input position.
    id: u32,
    /// Input position of the property at this sorted position.
    order: u32,
    /// The key's name prefix (see `names::name_prefix`).
    prefix: u64,
}

/// The shapes of one document; cleared with each document.
pub(super) struct Shapes {
    table: HashTable<Shape>,
    keys: Vec<ShapeKey>,
    /// First keys seen so far, as bits of a hash (a filter: a set bit may be another key's).
    seen: [u64; 4],
}

#[inline(always)]
fn id_hash(id: u32) -> u64 {
    let full = u128::from(id) * 0x9E37_79B9_7F4A_7C15_u128;
    (full as u64) ^ ((full >> 64) as u64)
}

impl Shapes {
    pub(super) fn new() -> Shapes {
        Shapes {
            table: HashTable::new(),
            keys: Vec::new(),
            seen: [0; 4],
        }
    }

    pub(super) fn clear(&mut self) {
        if !self.table.is_empty() {
            self.table.clear();
        }
        self.keys.clear();
        self.seen = [0; 4];
    }

    /// The last recorded shape whose first key is `first`: `None` the first time an object
    /// starts with `first` (which is then remembered), a shape of length 0 when objects started
    /// with it before (or, rarely, another first key with the same filter bit) but none was
    /// recorded. Shapes are recorded from the second object of a first key on, and a first
    /// key seen once costs a multiply and a bit: most objects of a document that repeats
    /// nothing are neither looked up nor copied.
    #[inline]
    pub(super) fn find_or_mark(&mut self, first: u32) -> Option<Shape> {
        let hash = id_hash(first);
        let bit = (hash >> 56) as usize;
        let word = self.seen.get_mut(bit / 64)?;
        let mask = 1u64 << (bit % 64);
        if *word & mask == 0 {
            *word |= mask;
            return None;
        }
        let found = self.table.find(hash, |s| s.first == first).copied();
        Some(found.unwrap_or_default())
    }

    /// Key id and name prefix of the key at input position `pos` of `shape`.
    #[inline(always)]
    pub(super) fn key(&self, shape: Shape, pos: u32) -> Option<(u32, u64)> {
        if pos >= shape.len {
            return None;
        }
        let k = self.keys.get(shape.at as usize + pos as usize)?;
        Some((k.id, k.prefix))
    }

    /// The sorted order of `shape`: input positions by sorted position.
    #[inline]
    pub(super) fn order(&self, shape: Shape) -> impl Iterator<Item = u32> + '_ {
        let at = shape.at as usize;
        self.keys
            .get(at..at + shape.len as usize)
            .unwrap_or_default()
            .iter()
            .map(|k| k.order)
    }

    /// Records an object of `n` properties from its entries sorted without repeated keys,
    /// given as (key id, name prefix, input position) in sorted order; it replaces the shape
    /// recorded for the same first key. Nothing is recorded past 4 Gi keys.
    pub(super) fn record(&mut self, sorted: impl ExactSizeIterator<Item = (u32, u64, u32)>) {
        let n = sorted.len();
        let (Ok(at), Ok(len)) = (u32::try_from(self.keys.len()), u32::try_from(n)) else {
            return;
        };
        if n == 0
            || self
                .keys
                .len()
                .checked_add(n)
                .is_none_or(|e| e > u32::MAX as usize)
        {
            return;
        }
        let start = self.keys.len();
        self.keys.resize(
            start + n,
            ShapeKey {
                id: 0,
                order: 0,
                prefix: 0,
            },
        );
        let Some(slots) = self.keys.get_mut(start..) else {
            return;
        };
        for (sorted_pos, (id, prefix, input_pos)) in sorted.enumerate() {
            if let Some(k) = slots.get_mut(input_pos as usize) {
                k.id = id;
                k.prefix = prefix;
            }
            if let Some(k) = slots.get_mut(sorted_pos) {
                k.order = input_pos;
            }
        }
        let Some(first) = slots.first().map(|k| k.id) else {
            return;
        };
        let shape = Shape { first, at, len };
        let hash = id_hash(first);
        match self.table.find_mut(hash, |s| s.first == first) {
            Some(s) => *s = shape,
            None => {
                self.table.insert_unique(hash, shape, |s| id_hash(s.first));
            }
        }
    }
}
