//! Objects and arrays read in place: headers decoded once, then O(1) or O(log n) access.

use std::cmp::Ordering;

use super::DocRef;
use super::value::Value;
use crate::format::{
    ARR_UNIFORM, OBJ_HAS_ORDER, Tag, get_uint, get_varint, width_bytes, width_code_for,
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

/// An object: properties sorted by name (bytewise) for binary search, plus the input order when
/// it differs.
#[derive(Clone, Copy)]
pub struct Object<'a> {
    doc: DocRef<'a>,
    /// Position of the header; child offsets count back from here.
    pos: usize,
    len: usize,
    key_width: usize,
    offset_width: usize,
    keys_at: usize,
    /// Width of the input-order entries; 0 if the object has none.
    order_width: usize,
}

impl std::fmt::Debug for Object<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter_original()).finish()
    }
}

impl<'a> Object<'a> {
    #[inline]
    pub(crate) fn at(doc: DocRef<'a>, pos: usize) -> Option<Object<'a>> {
        let flags = *doc.bytes.get(pos)?;
        let (len, used) = get_varint(doc.bytes, pos + 1)?;
        let len = usize::try_from(len).ok()?;
        let order_width = if flags & OBJ_HAS_ORDER != 0 {
            width_bytes(width_code_for(len.saturating_sub(1) as u64))
        } else {
            0
        };
        Some(Object {
            doc,
            pos,
            len,
            key_width: width_bytes(flags >> 2),
            offset_width: width_bytes(flags),
            keys_at: pos + 1 + used,
            order_width,
        })
    }

    /// Number of properties.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the object has no properties.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the object keeps an input order different from the sorted order.
    pub fn has_original_order(&self) -> bool {
        self.order_width != 0
    }

    #[inline]
    pub(crate) fn key_id(&self, i: usize) -> usize {
        get_uint(
            self.doc.bytes,
            self.keys_at + i * self.key_width,
            self.key_width,
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
    #[inline]
    pub fn value_at(&self, i: usize) -> Option<Value<'a>> {
        if i >= self.len {
            return None;
        }
        let offsets_at = self.keys_at + self.len * self.key_width;
        let tags_at = offsets_at + self.len * self.offset_width;
        let tag = Tag::from_u8(*self.doc.bytes.get(tags_at + i)?)?;
        let offset = get_uint(
            self.doc.bytes,
            offsets_at + i * self.offset_width,
            self.offset_width,
        )? as usize;
        Value::decode(self.doc, tag, self.pos.checked_sub(offset)?)
    }

    /// Sorted index of property `key`, by binary search.
    #[inline]
    pub fn find(&self, key: &str) -> Option<usize> {
        let key = key.as_bytes();
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key_bytes(mid).cmp(key) {
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

    /// Sorted index of the `i`-th property in input order.
    #[inline]
    pub fn original_index(&self, i: usize) -> usize {
        if self.order_width == 0 {
            return i;
        }
        let tags_at = self.keys_at + self.len * (self.key_width + self.offset_width);
        let order_at = tags_at + self.len;
        get_uint(
            self.doc.bytes,
            order_at + i * self.order_width,
            self.order_width,
        )
        .unwrap_or(0) as usize
    }

    /// Properties in sorted (bytewise) order.
    pub fn iter(&self) -> ObjectIter<'a> {
        ObjectIter {
            object: *self,
            next: 0,
            original: false,
        }
    }

    /// Properties in the order of the input (sorted if written with `KeyOrder::Sorted`).
    pub fn iter_original(&self) -> ObjectIter<'a> {
        ObjectIter {
            object: *self,
            next: 0,
            original: true,
        }
    }

    /// Bytes of this object's header (flags, count, key ids, offsets, tags, order).
    pub fn header_len(&self) -> usize {
        let tags_end = self.keys_at + self.len * (self.key_width + self.offset_width + 1);
        tags_end + self.len * self.order_width - self.pos
    }

    /// Widths in bytes of (key ids, offsets, order entries).
    pub fn widths(&self) -> (usize, usize, usize) {
        (self.key_width, self.offset_width, self.order_width)
    }
}

/// Iterator over `(name, value)` pairs of an [`Object`].
#[derive(Debug, Clone)]
pub struct ObjectIter<'a> {
    object: Object<'a>,
    next: usize,
    original: bool,
}

impl<'a> Iterator for ObjectIter<'a> {
    type Item = (&'a str, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.object.len {
            return None;
        }
        let i = if self.original {
            self.object.original_index(self.next)
        } else {
            self.next
        };
        self.next += 1;
        Some((
            self.object.key_at(i),
            self.object.value_at(i).unwrap_or(Value::Null),
        ))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.object.len - self.next.min(self.object.len);
        (left, Some(left))
    }
}

impl ExactSizeIterator for ObjectIter<'_> {}

/// An array: O(1) access by index.
#[derive(Clone, Copy)]
pub struct Array<'a> {
    doc: DocRef<'a>,
    pos: usize,
    len: usize,
    offset_width: usize,
    offsets_at: usize,
    uniform: bool,
}

impl std::fmt::Debug for Array<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> Array<'a> {
    #[inline]
    pub(crate) fn at(doc: DocRef<'a>, pos: usize) -> Option<Array<'a>> {
        let flags = *doc.bytes.get(pos)?;
        let (len, used) = get_varint(doc.bytes, pos + 1)?;
        Some(Array {
            doc,
            pos,
            len: usize::try_from(len).ok()?,
            offset_width: width_bytes(flags),
            offsets_at: pos + 1 + used,
            uniform: flags & ARR_UNIFORM != 0,
        })
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        if i >= self.len {
            return None;
        }
        let tags_at = self.offsets_at + self.len * self.offset_width;
        let tag_pos = if self.uniform { tags_at } else { tags_at + i };
        let tag = Tag::from_u8(*self.doc.bytes.get(tag_pos)?)?;
        let offset = get_uint(
            self.doc.bytes,
            self.offsets_at + i * self.offset_width,
            self.offset_width,
        )? as usize;
        Value::decode(self.doc, tag, self.pos.checked_sub(offset)?)
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
        let tags = if self.uniform { 1 } else { self.len };
        self.offsets_at + self.len * self.offset_width + tags - self.pos
    }

    /// Width in bytes of the element offsets.
    pub fn offset_width(&self) -> usize {
        self.offset_width
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
        if self.next >= self.array.len {
            return None;
        }
        let v = self.array.get(self.next).unwrap_or(Value::Null);
        self.next += 1;
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.array.len - self.next.min(self.array.len);
        (left, Some(left))
    }
}

impl ExactSizeIterator for ArrayIter<'_> {}
