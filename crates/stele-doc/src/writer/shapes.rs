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

/// A recorded key sequence: `len` keys at `at` in [`Shapes`]' store.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Shape {
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

/// A slot of the direct-mapped table: the shape last recorded for the first key `first`, valid
/// in the document of generation `generation` only.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    generation: u32,
    first: u32,
    shape: Shape,
}

/// Slots of the table: first keys whose hashes share a slot evict each other (a lost
/// prediction, never a wrong one: the slot names its first key).
const SLOTS: usize = 256;

/// The shapes of one document.
pub(super) struct Shapes {
    /// By a hash of the first key's id. Starting a document bumps `generation` instead of
    /// clearing the 4 KiB (small documents would pay for it).
    table: Box<[Slot; SLOTS]>,
    generation: u32,
    keys: Vec<ShapeKey>,
}

#[inline(always)]
fn slot_of(first: u32) -> usize {
    (first.wrapping_mul(0x9E37_79B9) >> 24) as usize % SLOTS
}

impl Shapes {
    pub(super) fn new() -> Shapes {
        Shapes {
            table: Box::new([Slot::default(); SLOTS]),
            generation: 1,
            keys: Vec::new(),
        }
    }

    /// Starts a document: forgets every shape.
    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Once in 4 billion documents: slots of generation 1 may be 4 billion old.
            self.table.fill(Slot::default());
            self.generation = 1;
        }
    }

    /// The last recorded shape whose first key is `first`: `None` the first time an object
    /// starts with `first` (which is then remembered), a shape of length 0 when objects started
    /// with it before but none was recorded. Shapes are recorded from the second object of a
    /// first key on, so most objects of a document that repeats nothing are not copied.
    #[inline]
    pub(super) fn find_or_mark(&mut self, first: u32) -> Option<Shape> {
        let generation = self.generation;
        let slot = self.table.get_mut(slot_of(first))?;
        if slot.generation == generation && slot.first == first {
            return Some(slot.shape);
        }
        *slot = Slot {
            generation,
            first,
            shape: Shape::default(),
        };
        None
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
        let generation = self.generation;
        if let Some(slot) = self.table.get_mut(slot_of(first)) {
            *slot = Slot {
                generation,
                first,
                shape: Shape { at, len },
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_one(shapes: &mut Shapes, first: u32) {
        shapes.record([(first, 0, 0), (first + 1, 0, 1)].into_iter());
    }

    #[test]
    fn shapes_are_forgotten_with_each_document_and_at_the_generation_wrap() {
        let mut shapes = Shapes::new();
        assert!(shapes.find_or_mark(7).is_none());
        assert_eq!(shapes.find_or_mark(7).map(|s| s.len), Some(0));
        record_one(&mut shapes, 7);
        assert_eq!(shapes.find_or_mark(7).map(|s| s.len), Some(2));
        shapes.clear();
        assert!(shapes.find_or_mark(7).is_none());
        // The generation counter wraps: a slot of generation 1 left from 4 billion documents
        // ago must not be found.
        shapes.generation = 1;
        record_one(&mut shapes, 7);
        shapes.generation = u32::MAX;
        record_one(&mut shapes, 9);
        shapes.clear();
        assert_eq!(shapes.generation, 1);
        assert!(shapes.find_or_mark(7).is_none());
        assert!(shapes.find_or_mark(9).is_none());
    }

    #[test]
    fn a_first_key_sharing_a_slot_evicts_the_other() {
        let mut shapes = Shapes::new();
        let a = 3u32;
        let b = (4u32..).find(|&b| slot_of(b) == slot_of(a)).unwrap_or(0);
        record_one(&mut shapes, a);
        assert!(shapes.find_or_mark(b).is_none());
        assert!(shapes.find_or_mark(a).is_none());
        let shape = shapes.find_or_mark(a);
        assert_eq!(shape.map(|s| s.len), Some(0));
    }
}
