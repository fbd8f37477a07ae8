//! Fixed-place reads of an object's header for cached paths: where a remembered property's
//! key id, offset and tag sit ([`SlotPlace`]), and the [`Object`] methods that check a
//! remembered slot ([`SlotKey`], what a cached path's key step keeps) against another document and read the value there. Split
//! from `container.rs`, which decodes the shapes these read.

use super::types::Object;
use super::types::Value;
use crate::format::{Tag, get_varint};

/// Where a remembered property's key id, offset and tag sit relative to its object's header,
/// with their widths as masks: the same in every object with the same count and flags (hence
/// the same header layout), so a cached path's hit reads them with fixed 8-byte loads and no
/// dispatch on the widths.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotPlace {
    /// Property count of the object this was computed for; `usize::MAX` for none yet (no
    /// object has that many).
    len: usize,
    flags: u8,
    key_rel: usize,
    offset_rel: usize,
    tag_rel: usize,
    key_mask: u64,
    offset_mask: u64,
    /// Bytes from the header that the reads above need (each 8-byte load whole).
    end_rel: usize,
}

impl SlotPlace {
    pub(crate) const NONE: SlotPlace = SlotPlace {
        len: usize::MAX,
        flags: 0,
        key_rel: 0,
        offset_rel: 0,
        tag_rel: 0,
        key_mask: 0,
        offset_mask: 0,
        end_rel: 0,
    };
}

impl SlotPlace {
    /// Bytes from the object's header that a read at this place needs.
    pub(crate) fn end_rel(&self) -> usize {
        self.end_rel
    }
}

/// What a remembered slot must hold for a hit: the key id at the sorted index, and the name
/// entry (varint length, then the bytes) at that key id.
#[derive(Debug, Clone)]
pub(crate) struct SlotKey {
    /// Sorted index of the property last time.
    pub(crate) index: usize,
    /// Its key id (offset of the name in the names area); `usize::MAX` before the first hit,
    /// which no object holds (ids are offsets into an area shorter than that).
    pub(crate) key_id: usize,
    /// The name entry as stored: varint byte length, then the UTF-8 bytes.
    pub(crate) entry: Box<[u8]>,
    /// The entry as a little-endian word (zero above its length) when it has at most 16 bytes
    /// (names up to 15 bytes, most keys), else 0: compared with one masked 16-byte load.
    pub(crate) entry_word: u128,
    /// The low `entry.len()` bytes set (for entries up to 16 bytes): the mask of that load.
    pub(crate) entry_mask: u128,
    /// Where the slot's parts sit in its object's header, for the fixed-width hit check.
    pub(crate) place: SlotPlace,
}

impl SlotKey {
    pub(crate) fn new(key: &str) -> SlotKey {
        let mut entry = Vec::with_capacity(key.len() + 2);
        crate::format::put_varint(&mut entry, key.len() as u64);
        entry.extend_from_slice(key.as_bytes());
        let entry_word = match entry.len() {
            0..=16 => {
                let mut word = [0u8; 16];
                word.get_mut(..entry.len())
                    .unwrap_or_default()
                    .copy_from_slice(&entry);
                u128::from_le_bytes(word)
            }
            _ => 0,
        };
        let entry_mask = match entry.len() {
            len @ 1..=16 => u128::MAX >> (8 * (16 - len)),
            _ => 0,
        };
        SlotKey {
            index: 0,
            key_id: usize::MAX,
            entry: entry.into_boxed_slice(),
            entry_word,
            entry_mask,
            place: SlotPlace::NONE,
        }
    }
}

/// The 8 bytes of `head` from `rel`, little-endian; all ones when fewer are left.
#[inline(always)]
fn head_word(head: &[u8], rel: usize) -> u64 {
    head.get(rel..)
        .and_then(|r| r.first_chunk::<8>())
        .map_or(u64::MAX, |w| u64::from_le_bytes(*w))
}

/// The low `width` bytes of a word (`width` 1, 2, 4 or 8).
fn width_mask(width: usize) -> u64 {
    u64::MAX >> (64 - 8 * width.clamp(1, 8))
}

impl<'a> Object<'a> {
    /// Whether the property at the remembered sorted index has the remembered key id and the
    /// name `slot.entry`: a cached path's check that a slot remembered from another document
    /// still holds its key. Key ids are offsets into this document's names area, so the name is
    /// compared too (as one masked 16-byte word when it is short, the common case).
    #[inline(always)]
    pub(crate) fn slot_holds(&self, slot: &SlotKey) -> bool {
        let (index, key_id) = (slot.index, slot.key_id);
        index < self.shape.len && self.key_id(index) == key_id && self.names_hold(slot)
    }

    /// Whether the name with id `slot.key_id` is `slot.entry` in this document.
    #[inline(always)]
    fn names_hold(&self, slot: &SlotKey) -> bool {
        let key_id = slot.key_id;
        let names = self.doc.names;
        let entry_len = slot.entry.len();
        if entry_len <= 16 {
            // The 16 bytes from the entry's start, when the names area has them; else the 16
            // bytes that end where the entry ends (the last names of a small area).
            if let Some(word) = names.get(key_id..).and_then(|r| r.first_chunk::<16>()) {
                return u128::from_le_bytes(*word) & slot.entry_mask == slot.entry_word;
            }
            if let Some(word) = key_id
                .checked_add(entry_len)
                .and_then(|end| names.get(end.checked_sub(16)?..end))
                .and_then(|r| r.first_chunk::<16>())
            {
                return u128::from_le_bytes(*word) >> (8 * (16 - entry_len)) == slot.entry_word;
            }
        }
        names.get(key_id..key_id.saturating_add(entry_len)) == Some(&slot.entry[..])
    }

    /// A cached path's hit: when this object has the count and flags the remembered place was
    /// computed for, the key id at the place is the remembered one and that id names the key,
    /// the value there handed to `f` (`Ok`); otherwise `f` back (`Err`) for the slower checks.
    #[inline(always)]
    pub(crate) fn read_place<R, F: FnOnce(Value<'a>) -> R>(
        &self,
        slot: &SlotKey,
        f: F,
    ) -> Result<Option<R>, F> {
        match self.place_holds(slot) {
            Some(head) => Ok(self.read_placed(head, &slot.place, f)),
            None => Err(f),
        }
    }

    /// [`Object::read_place`]'s check: the header's first bytes (as many as the place needs)
    /// when this object has the place's count and flags and the remembered key there.
    #[inline(always)]
    pub(crate) fn place_holds(&self, slot: &SlotKey) -> Option<&'a [u8]> {
        let (s, p) = (&self.shape, &slot.place);
        if s.len != p.len || s.flags != p.flags {
            return None;
        }
        // One bounds check for the three reads; the ones after only re-slice inside `head`.
        let head = self.head_bytes(p.end_rel)?;
        let key_id = head_word(head, p.key_rel) & p.key_mask;
        (key_id == slot.key_id as u64 && self.names_hold(slot)).then_some(head)
    }

    /// The first `len` bytes from this object's header (`None` past the document's end): the
    /// one bounds check of fixed-place reads.
    #[inline(always)]
    pub(crate) fn head_bytes(&self, len: usize) -> Option<&'a [u8]> {
        let pos = self.shape.pos;
        self.doc.bytes.get(pos..pos.checked_add(len)?)
    }

    /// The value whose offset and tag sit at place `p` of `head` (from [`Object::head_bytes`]
    /// with at least `p.end_rel` bytes), handed to `f`. The caller has checked that this object
    /// has the count and flags `p` was computed for and which key sits there; a place that does
    /// not fit gives `None` or another value of this document, never a read outside it.
    #[inline(always)]
    pub(crate) fn read_placed<R>(
        &self,
        head: &[u8],
        p: &SlotPlace,
        f: impl FnOnce(Value<'a>) -> R,
    ) -> Option<R> {
        self.decode_at(self.placed_value(head, p)?, f)
    }

    /// The type and payload position of the value at place `p` (as [`Object::read_placed`]).
    #[inline(always)]
    pub(crate) fn placed_value(&self, head: &[u8], p: &SlotPlace) -> Option<(Tag, usize)> {
        let offset = (head_word(head, p.offset_rel) & p.offset_mask) as usize;
        let tag = Tag::from_u8(*head.get(p.tag_rel)?)?;
        Some((tag, self.shape.pos.checked_sub(offset)?))
    }

    /// The property count and flags byte: with them equal, two objects' headers have the same
    /// layout (widths, where each part starts).
    #[inline(always)]
    pub(crate) fn len_and_flags(&self) -> (usize, u8) {
        (self.shape.len, self.shape.flags)
    }

    /// Bytes from the header's start to the end of its key ids (flags, count, key ids).
    #[inline]
    pub(crate) fn key_ids_end_rel(&self) -> usize {
        let s = &self.shape;
        s.offsets_at() - s.pos
    }

    /// The key ids in sorted order, as stored.
    #[inline(always)]
    pub(crate) fn key_id_bytes(&self) -> &'a [u8] {
        let s = &self.shape;
        self.doc
            .bytes
            .get(s.keys_at()..s.offsets_at())
            .unwrap_or_default()
    }

    /// Where the last of this object's key names ends in the names area (the largest key id's
    /// entry end): the names area up to there names every key of the object.
    pub(crate) fn names_end_of_keys(&self) -> usize {
        let names = self.doc.names;
        (0..self.shape.len)
            .map(|i| {
                let id = self.key_id(i);
                match get_varint(names, id) {
                    Some((len, used)) => (id + used).saturating_add(len as usize),
                    None => usize::MAX,
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// The document's names area.
    #[inline(always)]
    pub(crate) fn names(&self) -> &'a [u8] {
        self.doc.names
    }

    /// Where property `i`'s parts sit in this object's header (see [`SlotPlace`]).
    pub(crate) fn place_of(&self, i: usize) -> SlotPlace {
        let s = &self.shape;
        let key_rel = s.keys_at() - s.pos + i * s.key_width();
        let offset_rel = s.offsets_at() - s.pos + i * s.offset_width();
        let tag_rel = s.tags_at() - s.pos + i;
        SlotPlace {
            len: s.len,
            flags: s.flags,
            key_rel,
            offset_rel,
            tag_rel,
            key_mask: width_mask(s.key_width()),
            offset_mask: width_mask(s.offset_width()),
            end_rel: (key_rel.max(offset_rel) + 8).max(tag_rel + 1),
        }
    }

    /// The sorted index of the property with the remembered key id, if that id names the
    /// remembered key in this document: a cached path's second try when the key moved to another
    /// index but kept its id (documents whose first keys are the same and later ones vary). Key
    /// ids of one object are distinct, so the id alone finds the property: a scan of the key ids,
    /// no name compared but the one.
    #[inline]
    pub(crate) fn find_slot_id(&self, slot: &SlotKey) -> Option<usize> {
        if !self.names_hold(slot) {
            return None;
        }
        self.find_key_id(slot.key_id)
    }

    /// The sorted index of the property with key id `key_id` (ids of one object are distinct):
    /// a scan of the key ids, bytes compared when they are one byte wide (most objects).
    #[inline]
    pub(crate) fn find_key_id(&self, key_id: usize) -> Option<usize> {
        let s = &self.shape;
        if s.key_width() == 1 {
            let ids = self.doc.bytes.get(s.keys_at()..s.keys_at() + s.len)?;
            let id = u8::try_from(key_id).ok()?;
            return ids.iter().position(|&b| b == id);
        }
        (0..s.len).find(|&i| self.key_id(i) == key_id)
    }
}
