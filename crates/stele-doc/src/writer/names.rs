//! The names area of the document being written: each distinct key once (varint length + UTF-8
//! bytes), its id being its offset. Interning a key hashes it into an index over the area; for a
//! run of documents of one shape it instead checks the key against the previous document's
//! interning at the same step, which needs no hashing and no index.
//!
//! Prediction is exact: while every key so far matched the previous document step by step, this
//! document's names area is a prefix of the previous one's, so the predicted id is the one the
//! index would give (an existing name keeps its offset; a new one lands at the end, where the
//! previous document had it). At the first mismatch the index is built from the area so far and
//! interning goes on by hash.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::error::{Error, Result};
use crate::format::{get_varint, put_varint};

/// A name in the writer's index: its id with its length and first 8 bytes, so that a probe
/// compares two integers and reads the names area only for names longer than 8 bytes (most
/// JSON keys are shorter). Interning this way instead of comparing the names themselves made
/// conversion 1.03-1.33x faster on the JSON corpus (`docs/benchmarks.md`, "Documents").
#[derive(Debug, Clone, Copy)]
struct NameSlot {
    id: u32,
    len: u32,
    /// [`name_prefix`] of the name.
    prefix: u64,
}

impl NameSlot {
    /// Whether this slot's name, stored in `names`, is `name` (whose prefix is `prefix`).
    #[inline(always)]
    fn holds(&self, names: &[u8], name: &[u8], prefix: u64) -> bool {
        self.prefix == prefix
            && self.len as usize == name.len()
            // Up to 8 bytes, the zero-padded prefix and the length are the whole name.
            && (name.len() <= 8 || same_tail(name_at(names, self.id), name))
    }
}

/// Whether `stored` is `name`, both over 8 bytes long and known to share their first 8 (the
/// prefix): for names of up to 16 bytes (most of the longer JSON keys: `created_at`,
/// `screen_name`) one compare of their last 8 bytes as integers, which cover bytes 8 to the end;
/// longer names compare as slices (a `memcmp` call).
#[inline(always)]
fn same_tail(stored: &[u8], name: &[u8]) -> bool {
    if stored.len() != name.len() {
        return false;
    }
    if name.len() <= 16 {
        return match (stored.last_chunk::<8>(), name.last_chunk::<8>()) {
            (Some(a), Some(b)) => u64::from_ne_bytes(*a) == u64::from_ne_bytes(*b),
            _ => stored == name,
        };
    }
    stored.get(8..) == name.get(8..)
}

/// Hash of a name for the writer's index. Names of up to 8 bytes are hashed from their prefix
/// and length (which determine them) with one folded multiply; longer ones with foldhash.
#[inline(always)]
fn name_hash(state: &foldhash::fast::FixedState, name: &[u8], prefix: u64) -> u64 {
    if name.len() <= 8 {
        let x = prefix ^ (name.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let full = u128::from(x) * 0x2D35_8DCC_AA6C_78A5_u128;
        (full as u64) ^ ((full >> 64) as u64)
    } else {
        state.hash_one(name)
    }
}

/// The name stored at id `id` in a names area.
#[inline]
pub(super) fn name_at(names: &[u8], id: u32) -> &[u8] {
    let id = id as usize;
    // Ids are only ever created by `intern`, which wrote a varint and the name there.
    match get_varint(names, id) {
        Some((len, used)) => names
            .get(id + used..id + used + len as usize)
            .unwrap_or_default(),
        None => &[],
    }
}

/// Whether the name with id `id` in `names`, whose prefix is `stored_prefix`, is `name`, whose
/// prefix is `prefix`: one byte read for the length and, past 8 bytes, a compare of the rest.
#[inline(always)]
pub(super) fn is_name_at(
    names: &[u8],
    id: u32,
    stored_prefix: u64,
    name: &[u8],
    prefix: u64,
) -> bool {
    if stored_prefix != prefix {
        return false;
    }
    let at = id as usize;
    match names.get(at) {
        // A one-byte varint length; up to 8 bytes, the length and the zero-padded prefix are
        // the whole name.
        Some(&len) if len < 0x80 => {
            len as usize == name.len()
                && (name.len() <= 8
                    || names
                        .get(at + 1..at + 1 + name.len())
                        .is_some_and(|stored| same_tail(stored, name)))
        }
        _ => name_at(names, id) == name,
    }
}

/// The first 8 bytes of `name` as a big-endian integer, zero-padded: comparing these orders
/// names bytewise except on ties (zero padding sorts like the end of a shorter name).
#[inline]
pub(super) fn name_prefix(name: &[u8]) -> u64 {
    match name.first_chunk::<8>() {
        Some(chunk) => u64::from_be_bytes(*chunk),
        None => {
            // Short names: a byte loop (a runtime-length copy would call `memcpy`).
            let mut prefix = 0u64;
            for (i, &b) in name.iter().enumerate() {
                prefix |= u64::from(b) << (56 - 8 * i);
            }
            prefix
        }
    }
}

/// The names area being written, its index, and the previous document's interning.
pub(super) struct Names {
    /// The names area.
    pub(super) bytes: Vec<u8>,
    /// Name → id over `bytes`; empty while predicting.
    index: HashTable<NameSlot>,
    hash_state: foldhash::fast::FixedState,
    /// Every intern of this document so far, in order: what the next document predicts from.
    interned: Vec<NameSlot>,
    /// The previous document's `interned` and names area.
    prev_interned: Vec<NameSlot>,
    prev_bytes: Vec<u8>,
    /// Invariant while true: every intern of this document matched `prev_interned` at the same
    /// step, `bytes` is a prefix of `prev_bytes`, and `index` is empty.
    predicting: bool,
}

impl Names {
    pub(super) fn new() -> Names {
        Names {
            bytes: Vec::new(),
            index: HashTable::new(),
            hash_state: foldhash::fast::FixedState::with_seed(0x5e1e),
            interned: Vec::new(),
            prev_interned: Vec::new(),
            prev_bytes: Vec::new(),
            predicting: false,
        }
    }

    /// Starts a new document (keeps what the previous finished one interned).
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        if !self.index.is_empty() {
            self.index.clear();
        }
        self.interned.clear();
        self.predicting = !self.prev_interned.is_empty();
    }

    /// Keeps this (finished) document's interning for the next one to predict from.
    pub(super) fn remember_shape(&mut self) {
        std::mem::swap(&mut self.interned, &mut self.prev_interned);
        std::mem::swap(&mut self.bytes, &mut self.prev_bytes);
    }

    /// Forgets the previous document's interning.
    pub(super) fn forget_shape(&mut self) {
        self.prev_interned.clear();
        self.prev_bytes.clear();
        self.predicting = false;
    }

    /// Whether keys are being predicted from the previous document.
    #[inline(always)]
    pub(super) fn predicting(&self) -> bool {
        self.predicting
    }

    /// Records that `name` (prefix `prefix`) was interned as `id` by the caller, which found
    /// it already in this document's names area while not predicting (so the index holds it
    /// and would give the same id): what `intern` would have recorded, without the hash probe.
    #[inline(always)]
    pub(super) fn interned_known(&mut self, id: u32, name: &[u8], prefix: u64) {
        debug_assert!(!self.predicting && name_at(&self.bytes, id) == name);
        self.interned.push(NameSlot {
            id,
            len: name.len() as u32,
            prefix,
        });
    }

    /// The id of `name` (whose [`name_prefix`] is `prefix`) in this document's names area,
    /// adding it on first use.
    #[inline]
    pub(super) fn intern(&mut self, name: &[u8], prefix: u64) -> Result<u32> {
        if self.predicting {
            if let Some(&slot) = self.prev_interned.get(self.interned.len()) {
                let id = slot.id as usize;
                // An existing name (wholly inside `bytes`, equal there and in `prev_bytes`)
                // or the next new one.
                if id <= self.bytes.len() && slot.holds(&self.prev_bytes, name, prefix) {
                    if id == self.bytes.len() {
                        put_varint(&mut self.bytes, name.len() as u64);
                        self.bytes.extend_from_slice(name);
                    }
                    self.interned.push(slot);
                    return Ok(slot.id);
                }
            }
            self.stop_predicting();
        }
        let slot = self.intern_by_hash(name, prefix)?;
        self.interned.push(slot);
        Ok(slot.id)
    }

    /// Leaves prediction: indexes every name written so far.
    #[cold]
    fn stop_predicting(&mut self) {
        self.predicting = false;
        let mut pos = 0;
        while let Some((len, used)) = get_varint(&self.bytes, pos) {
            let start = pos + used;
            let Some(name) = self.bytes.get(start..start + len as usize) else {
                break;
            };
            let prefix = name_prefix(name);
            let slot = NameSlot {
                id: pos as u32,
                len: len as u32,
                prefix,
            };
            let state = &self.hash_state;
            let names = &self.bytes;
            self.index
                .insert_unique(name_hash(state, name, prefix), slot, |s| {
                    name_hash(state, name_at(names, s.id), s.prefix)
                });
            pos = start + len as usize;
        }
    }

    #[inline]
    fn intern_by_hash(&mut self, name: &[u8], prefix: u64) -> Result<NameSlot> {
        let hash = name_hash(&self.hash_state, name, prefix);
        let names = &self.bytes;
        if let Some(slot) = self
            .index
            .find(hash, |slot| slot.holds(names, name, prefix))
        {
            return Ok(*slot);
        }
        let too_many = || Error::Builder {
            expected: "at most 4 GiB of distinct key names per document",
            got: "more",
        };
        let id = u32::try_from(self.bytes.len()).map_err(|_| too_many())?;
        let len = u32::try_from(name.len()).map_err(|_| too_many())?;
        put_varint(&mut self.bytes, name.len() as u64);
        self.bytes.extend_from_slice(name);
        let (names, state) = (&self.bytes, &self.hash_state);
        let slot = NameSlot { id, len, prefix };
        self.index.insert_unique(hash, slot, |s| {
            name_hash(state, name_at(names, s.id), s.prefix)
        });
        Ok(slot)
    }
}
