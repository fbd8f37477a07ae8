//! Arrays read in place: O(1) access by index through the offsets after the header.

use super::DocRef;
use super::head::ArrShape;
use super::types::{Array, Value};
use crate::format::{Tag, get_uint};

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
