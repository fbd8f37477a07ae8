//! Objects and arrays read in place: each header is decoded once into a shape (positions of its
//! parts), then every access is a multiply-add and a load: binary search by name, O(1) by index.

use std::cmp::Ordering;

use super::DocRef;
use super::value::Value;
use crate::format::{
    ARR_UNIFORM, OBJ_HAS_ORDER, OBJ_ORDER_BY_ID, Tag, get_uint, get_varint, width_bytes,
    width_code_for,
};

/// The name with id `id` (its offset in the names area).
#[inline]
pub(crate) fn name_at(names: &[u8], id: usize) -> &[u8] {
    match get_varint(names, id) {
        Some((len, used)) => names
            .get(id + used..(id + used).saturating_add(len as usize))
            .unwrap_or_default(),
        None => &[],
    }
}

/// Bytewise comparison without a `memcmp` call for short names (most keys): the call costs more
/// than comparing a dozen bytes in place.
#[inline]
pub(crate) fn cmp_name(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() <= 16 && b.len() <= 16 {
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        a.len().cmp(&b.len())
    } else {
        a.cmp(b)
    }
}

/// The flags byte and element count that start every container header, and their size.
#[inline]
fn read_prefix(bytes: &[u8], pos: usize) -> Option<(u8, usize, u8)> {
    let flags = *bytes.get(pos)?;
    let (len, used) = get_varint(bytes, pos + 1)?;
    Some((flags, usize::try_from(len).ok()?, 1 + used as u8))
}

/// A container header's prefix, decoded: what an object's and an array's shape share. Plain
/// fields (no enum), so a document's layout stays in registers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Head {
    pos: usize,
    len: usize,
    flags: u8,
    prefix: u8,
}

impl Head {
    /// No container (an empty placeholder).
    pub(crate) const NONE: Head = Head {
        pos: 0,
        len: 0,
        flags: 0,
        prefix: 0,
    };

    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<Head> {
        let (flags, len, prefix) = read_prefix(bytes, pos)?;
        Some(Head {
            pos,
            len,
            flags,
            prefix,
        })
    }

    #[inline]
    pub(crate) fn object(self) -> ObjShape {
        ObjShape {
            pos: self.pos,
            len: self.len,
            flags: self.flags,
            prefix: self.prefix,
        }
    }

    #[inline]
    pub(crate) fn array(self) -> ArrShape {
        ArrShape {
            pos: self.pos,
            len: self.len,
            flags: self.flags,
            prefix: self.prefix,
        }
    }
}

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

/// How an object's input order is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputOrder {
    /// Input order is the sorted order.
    Sorted,
    /// Input order is ascending key id (names were first used in this order).
    ById,
    /// An explicit permutation follows the tags, entries of this many bytes.
    Explicit(usize),
}

/// An object header, decoded: 24 bytes, so values stay small to copy; the positions of its
/// parts are derived with a shift and a multiply-add when needed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjShape {
    /// Position of the header; child offsets count back from here.
    pos: usize,
    len: usize,
    flags: u8,
    /// Bytes of flags and count: where the key ids start, relative to `pos`.
    prefix: u8,
}

impl ObjShape {
    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<ObjShape> {
        Head::read(bytes, pos).map(Head::object)
    }

    #[inline]
    fn key_width(&self) -> usize {
        width_bytes(self.flags >> 2)
    }

    #[inline]
    fn offset_width(&self) -> usize {
        width_bytes(self.flags)
    }

    #[inline]
    fn keys_at(&self) -> usize {
        self.pos + usize::from(self.prefix)
    }

    #[inline]
    fn offsets_at(&self) -> usize {
        self.keys_at() + self.len * self.key_width()
    }

    #[inline]
    fn tags_at(&self) -> usize {
        self.offsets_at() + self.len * self.offset_width()
    }

    #[inline]
    fn order_at(&self) -> usize {
        self.tags_at() + self.len
    }

    #[inline]
    fn order(&self) -> InputOrder {
        if self.flags & OBJ_HAS_ORDER != 0 {
            InputOrder::Explicit(width_bytes(width_code_for(
                self.len.saturating_sub(1) as u64
            )))
        } else if self.flags & OBJ_ORDER_BY_ID != 0 {
            InputOrder::ById
        } else {
            InputOrder::Sorted
        }
    }
}

/// An object: properties sorted by name (bytewise) for binary search, plus the input order.
#[derive(Clone, Copy)]
pub struct Object<'a> {
    doc: DocRef<'a>,
    shape: ObjShape,
}

impl std::fmt::Debug for Object<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter_original()).finish()
    }
}

impl<'a> Object<'a> {
    #[inline]
    pub(crate) fn at(doc: DocRef<'a>, pos: usize) -> Option<Object<'a>> {
        Some(Object {
            doc,
            shape: ObjShape::read(doc.bytes, pos)?,
        })
    }

    #[inline]
    pub(crate) fn from_shape(doc: DocRef<'a>, shape: ObjShape) -> Object<'a> {
        Object { doc, shape }
    }

    /// Number of properties.
    #[inline]
    pub fn len(&self) -> usize {
        self.shape.len
    }

    /// The document this object is read from.
    #[inline(always)]
    pub(crate) fn doc_ref(&self) -> DocRef<'a> {
        self.doc
    }

    /// Whether the object has no properties.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.shape.len == 0
    }

    /// Whether the object stores an explicit input order (costs one small entry per property;
    /// most objects need none: their input order is sorted or follows first use of the names).
    pub fn has_original_order(&self) -> bool {
        matches!(self.shape.order(), InputOrder::Explicit(_))
    }

    #[inline]
    pub(crate) fn key_id(&self, i: usize) -> usize {
        let s = &self.shape;
        get_uint(
            self.doc.bytes,
            s.keys_at() + i * s.key_width(),
            s.key_width(),
        )
        .unwrap_or(0) as usize
    }

    #[inline]
    pub(crate) fn key_bytes(&self, i: usize) -> &'a [u8] {
        name_at(self.doc.names, self.key_id(i))
    }

    /// Name of the `i`-th property in sorted order.
    #[inline]
    pub fn key_at(&self, i: usize) -> &'a str {
        // SAFETY: validation checked every name in the names area is UTF-8.
        unsafe { std::str::from_utf8_unchecked(self.key_bytes(i)) }
    }

    /// Value of the `i`-th property in sorted order.
    #[inline(always)]
    pub fn value_at(&self, i: usize) -> Option<Value<'a>> {
        self.value_at_with(i, |v| v)
    }

    /// Value of the `i`-th property in sorted order, handed to `f` (see [`Value::decode_with`]).
    #[inline(always)]
    pub(crate) fn value_at_with<R>(&self, i: usize, f: impl FnOnce(Value<'a>) -> R) -> Option<R> {
        self.decode_at(self.value_pos(i)?, f)
    }

    /// The type and payload position of the `i`-th property's value in sorted order.
    #[inline(always)]
    pub(crate) fn value_pos(&self, i: usize) -> Option<(Tag, usize)> {
        let s = &self.shape;
        if i >= s.len {
            return None;
        }
        let tag = Tag::from_u8(*self.doc.bytes.get(s.tags_at() + i)?)?;
        let offset = get_uint(
            self.doc.bytes,
            s.offsets_at() + i * s.offset_width(),
            s.offset_width(),
        )? as usize;
        Some((tag, s.pos.checked_sub(offset)?))
    }

    /// The value of type `tag` at `pos` in this object's document (from
    /// [`Object::value_pos`] or [`Object::placed_value`]), handed to `f`.
    #[inline(always)]
    pub(crate) fn decode_at<R>(
        &self,
        (tag, pos): (Tag, usize),
        f: impl FnOnce(Value<'a>) -> R,
    ) -> Option<R> {
        Value::decode_with(self.doc, tag, pos, f)
    }

    /// Whether the property at the remembered sorted index has the remembered key id and the
    /// name `slot.entry`: a cached path's check that a slot remembered from another document
    /// still holds its key. Key ids are offsets into this document's names area, so the name is
    /// compared too (as one masked 16-byte word when it is short, the common case).
    #[inline(always)]
    pub(crate) fn slot_holds(&self, slot: &super::path::SlotKey) -> bool {
        let (index, key_id) = (slot.index, slot.key_id);
        index < self.shape.len && self.key_id(index) == key_id && self.names_hold(slot)
    }

    /// Whether the name with id `slot.key_id` is `slot.entry` in this document.
    #[inline(always)]
    fn names_hold(&self, slot: &super::path::SlotKey) -> bool {
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
        slot: &super::path::SlotKey,
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
    pub(crate) fn place_holds(&self, slot: &super::path::SlotKey) -> Option<&'a [u8]> {
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
    pub(crate) fn find_slot_id(&self, slot: &super::path::SlotKey) -> Option<usize> {
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

    /// Sorted index of property `key`, by binary search.
    #[inline]
    pub fn find(&self, key: &str) -> Option<usize> {
        let key = key.as_bytes();
        let (mut lo, mut hi) = (0, self.shape.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match cmp_name(self.key_bytes(mid), key) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Property `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        self.value_at(self.find(key)?)
    }

    /// Whether property `key` exists.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// Properties in sorted (bytewise) order.
    pub fn iter(&self) -> ObjectIter<'a> {
        ObjectIter {
            object: *self,
            next: 0,
            order: None,
        }
    }

    /// Calls `f` with the sorted index of each property, in the order of the input (what
    /// [`Object::iter_original`] visits), without allocating for objects of up to
    /// [`SMALL_OBJECT`] properties: the JSON writer's walk, once per object of every row.
    #[inline]
    pub(crate) fn each_in_input_order(&self, mut f: impl FnMut(usize)) {
        let s = &self.shape;
        match s.order() {
            InputOrder::Sorted => (0..s.len).for_each(f),
            InputOrder::Explicit(width) => {
                for k in 0..s.len {
                    f(
                        get_uint(self.doc.bytes, s.order_at() + k * width, width).unwrap_or(0)
                            as u32 as usize,
                    );
                }
            }
            InputOrder::ById if s.len <= SMALL_OBJECT => {
                // Insertion sort of (key id, index) pairs: the same order as the sort in
                // `iter_original` (pairs compare whole, so even equal ids order one way).
                let mut by_id = [(0usize, 0u32); SMALL_OBJECT];
                let by_id = by_id.get_mut(..s.len).unwrap_or_default();
                for i in 0..by_id.len() {
                    let item = (self.key_id(i), i as u32);
                    let mut j = i;
                    while j > 0 && by_id.get(j - 1).is_some_and(|prev| *prev > item) {
                        by_id.swap(j - 1, j);
                        j -= 1;
                    }
                    if let Some(slot) = by_id.get_mut(j) {
                        *slot = item;
                    }
                }
                by_id.iter().for_each(|&(_, i)| f(i as usize));
            }
            InputOrder::ById => self
                .iter_original()
                .order
                .unwrap_or_default()
                .into_iter()
                .for_each(|i| f(i as usize)),
        }
    }

    /// Properties in the order of the input (sorted if written with `KeyOrder::Sorted`).
    pub fn iter_original(&self) -> ObjectIter<'a> {
        let order = match self.shape.order() {
            InputOrder::Sorted => None,
            InputOrder::Explicit(width) => {
                let s = &self.shape;
                Some(
                    (0..s.len)
                        .map(|i| {
                            get_uint(self.doc.bytes, s.order_at() + i * width, width).unwrap_or(0)
                                as u32
                        })
                        .collect(),
                )
            }
            InputOrder::ById => {
                let mut by_id: Vec<(usize, u32)> = (0..self.shape.len)
                    .map(|i| (self.key_id(i), i as u32))
                    .collect();
                by_id.sort_unstable();
                Some(by_id.into_iter().map(|(_, i)| i).collect())
            }
        };
        ObjectIter {
            object: *self,
            next: 0,
            order,
        }
    }

    /// Bytes of this object's header (flags, count, key ids, offsets, tags, order).
    pub fn header_len(&self) -> usize {
        let s = &self.shape;
        let order_width = match s.order() {
            InputOrder::Explicit(w) => w,
            _ => 0,
        };
        s.order_at() + s.len * order_width - s.pos
    }

    /// Widths in bytes of (key ids, offsets, explicit order entries or 0).
    pub fn widths(&self) -> (usize, usize, usize) {
        let s = &self.shape;
        let order_width = match s.order() {
            InputOrder::Explicit(w) => w,
            _ => 0,
        };
        (s.key_width(), s.offset_width(), order_width)
    }
}

/// Objects of up to this many properties are walked in input order without allocating
/// ([`Object::each_in_input_order`]); larger ones sort their order in a `Vec`.
pub(crate) const SMALL_OBJECT: usize = 32;

/// Iterator over `(name, value)` pairs of an [`Object`].
#[derive(Debug, Clone)]
pub struct ObjectIter<'a> {
    object: Object<'a>,
    next: usize,
    /// Sorted indices in the order to visit them; `None` visits in sorted order.
    order: Option<Vec<u32>>,
}

impl<'a> Iterator for ObjectIter<'a> {
    type Item = (&'a str, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let i = match &self.order {
            None if self.next < self.object.len() => self.next,
            Some(order) => *order.get(self.next)? as usize,
            None => return None,
        };
        self.next += 1;
        Some((
            self.object.key_at(i),
            self.object.value_at(i).unwrap_or(Value::Null),
        ))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.object.len() - self.next.min(self.object.len());
        (left, Some(left))
    }
}

impl ExactSizeIterator for ObjectIter<'_> {}

/// An array header, decoded (24 bytes; part positions derived when needed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArrShape {
    pos: usize,
    len: usize,
    flags: u8,
    /// Bytes of flags and count: where the offsets start, relative to `pos`.
    prefix: u8,
}

impl ArrShape {
    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<ArrShape> {
        Head::read(bytes, pos).map(Head::array)
    }

    #[inline]
    fn offset_width(&self) -> usize {
        width_bytes(self.flags)
    }

    #[inline]
    fn offsets_at(&self) -> usize {
        self.pos + usize::from(self.prefix)
    }

    #[inline]
    fn tags_at(&self) -> usize {
        self.offsets_at() + self.len * self.offset_width()
    }

    #[inline]
    fn uniform(&self) -> bool {
        self.flags & ARR_UNIFORM != 0
    }
}

/// An array: O(1) access by index.
#[derive(Clone, Copy)]
pub struct Array<'a> {
    doc: DocRef<'a>,
    shape: ArrShape,
}

impl std::fmt::Debug for Array<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> Array<'a> {
    #[inline]
    pub(crate) fn at(doc: DocRef<'a>, pos: usize) -> Option<Array<'a>> {
        Some(Array {
            doc,
            shape: ArrShape::read(doc.bytes, pos)?,
        })
    }

    #[inline]
    pub(crate) fn from_shape(doc: DocRef<'a>, shape: ArrShape) -> Array<'a> {
        Array { doc, shape }
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.shape.len
    }

    /// The document this array is read from.
    #[inline(always)]
    pub(crate) fn doc_ref(&self) -> DocRef<'a> {
        self.doc
    }

    /// Whether the array is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.shape.len == 0
    }

    /// Element `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        let (tag, pos) = self.value_pos(i)?;
        Value::decode(self.doc, tag, pos)
    }

    /// The type and payload position of element `i`.
    #[inline(always)]
    pub(crate) fn value_pos(&self, i: usize) -> Option<(Tag, usize)> {
        let s = &self.shape;
        if i >= s.len {
            return None;
        }
        let tag_pos = if s.uniform() {
            s.tags_at()
        } else {
            s.tags_at() + i
        };
        let tag = Tag::from_u8(*self.doc.bytes.get(tag_pos)?)?;
        let offset = get_uint(
            self.doc.bytes,
            s.offsets_at() + i * s.offset_width(),
            s.offset_width(),
        )? as usize;
        Some((tag, s.pos.checked_sub(offset)?))
    }

    /// Elements in order.
    pub fn iter(&self) -> ArrayIter<'a> {
        ArrayIter {
            array: *self,
            next: 0,
        }
    }

    /// Bytes of this array's header (flags, count, offsets, tags).
    pub fn header_len(&self) -> usize {
        let s = &self.shape;
        let tags = if s.uniform() { 1 } else { s.len };
        s.tags_at() + tags - s.pos
    }

    /// Width in bytes of the element offsets.
    pub fn offset_width(&self) -> usize {
        self.shape.offset_width()
    }
}

/// Iterator over the elements of an [`Array`].
#[derive(Debug, Clone)]
pub struct ArrayIter<'a> {
    array: Array<'a>,
    next: usize,
}

impl<'a> Iterator for ArrayIter<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        if self.next >= self.array.len() {
            return None;
        }
        let v = self.array.get(self.next).unwrap_or(Value::Null);
        self.next += 1;
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.array.len() - self.next.min(self.array.len());
        (left, Some(left))
    }
}

impl ExactSizeIterator for ArrayIter<'_> {}
