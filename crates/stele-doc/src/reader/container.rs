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
    pub(super) pos: usize,
    pub(super) len: usize,
    pub(super) flags: u8,
    /// Bytes of flags and count: where the key ids start, relative to `pos`.
    prefix: u8,
}

impl ObjShape {
    #[inline]
    pub(crate) fn read(bytes: &[u8], pos: usize) -> Option<ObjShape> {
        Head::read(bytes, pos).map(Head::object)
    }

    #[inline]
    pub(super) fn key_width(&self) -> usize {
        width_bytes(self.flags >> 2)
    }

    #[inline]
    pub(super) fn offset_width(&self) -> usize {
        width_bytes(self.flags)
    }

    #[inline]
    pub(super) fn keys_at(&self) -> usize {
        self.pos + usize::from(self.prefix)
    }

    #[inline]
    pub(super) fn offsets_at(&self) -> usize {
        self.keys_at() + self.len * self.key_width()
    }

    #[inline]
    pub(super) fn tags_at(&self) -> usize {
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
    pub(super) doc: DocRef<'a>,
    pub(super) shape: ObjShape,
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
