//! Objects read in place: binary search by name over the sorted key ids, the input order
//! kept beside them.

use super::DocRef;
use super::head::{InputOrder, ObjShape, cmp_name, name_at};
use super::types::{Object, Value};
use crate::format::{Tag, get_uint};
use std::cmp::Ordering;

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
