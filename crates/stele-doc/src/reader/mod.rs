//! Reading documents in place: no parsing, no allocation, zero-copy strings.
//!
//! A [`Document`] is created either by [`Document::new`], which validates the bytes completely
//! first, or by the `unsafe` [`Document::new_unchecked`] for bytes known to be valid. Every accessor
//! then relies on that invariant: it never needs to re-check UTF-8, and positions it follows are
//! in bounds. Accessors still use checked slicing, so even a broken promise cannot make them read
//! out of bounds; it can only make string contents unsound, which is why the unchecked path is
//! `unsafe`.

mod array;
mod container;
mod head;
pub(crate) mod layout;
mod path;
mod path_set;
mod scalars;
mod slots;
mod types;
mod value;

pub use array::ArrayIter;
pub use container::ObjectIter;
pub(crate) use layout::Layout;
pub use layout::prefetch_document;
use layout::{RootKind, RootShape, prefetch};
pub use path::{CachedKey, CachedPath, Path, PathSegment};
pub use path_set::PathSet;
pub use scalars::{ScaledDecimal, Str};
pub use types::{Array, Object, Value};

use crate::error::Result;
use crate::format::Tag;

/// The borrowed view every accessor carries: the document bytes and its names area.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocRef<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) names: &'a [u8],
}

/// A document over any byte container (`Vec<u8>`, `&[u8]`, an mmap, ...).
///
/// ```
/// let bytes = stele_doc::from_json(br#"{"user": {"name": "Ada", "langs": ["en", "fr"]}}"#)?;
/// let doc = stele_doc::Document::new(bytes.as_slice())?;
/// assert_eq!(doc.path("user.langs[1]")?.and_then(|v| v.as_str()).as_deref(), Some("fr"));
/// let user = doc.get("user").and_then(|v| v.as_object()).unwrap();
/// assert_eq!(user.len(), 2);
/// # Ok::<(), stele_doc::Error>(())
/// ```
#[derive(Clone)]
pub struct Document<B: AsRef<[u8]>> {
    bytes: B,
    layout: Layout,
}

impl<B: AsRef<[u8]>> std::fmt::Debug for Document<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Document")
            .field("bytes", &self.bytes.as_ref().len())
            .field("root", &self.layout.root_tag)
            .finish()
    }
}

impl<B: AsRef<[u8]>> Document<B> {
    /// Validates `bytes` completely (see [`crate::validate`]) and wraps them.
    pub fn new(bytes: B) -> Result<Self> {
        let layout = crate::validate::validate_layout(bytes.as_ref())?;
        Ok(Document { bytes, layout })
    }

    /// Wraps `bytes` without validating them: for bytes that are known valid, e.g. just written by
    /// [`crate::DocumentWriter`], or validated once and protected by a checksum since.
    ///
    /// # Safety
    ///
    /// `bytes` must be a document that [`crate::validate`] accepts. Reading an invalid document
    /// through this path never reads out of bounds, but may produce `str` values that are not
    /// UTF-8, which is undefined behaviour.
    #[inline]
    pub unsafe fn new_unchecked(bytes: B) -> Self {
        // The first values of an object sit at the start (they are written in input order);
        // its header, names and the trailer at the end. Asking for the start now overlaps its
        // cache miss with the trailer's, instead of one after the other.
        prefetch(bytes.as_ref());
        let layout = Layout::read_trusted(bytes.as_ref()).unwrap_or(Layout {
            root_shape: RootShape::OTHER,
            root_tag: Tag::Null,
            root_pos: 0,
            names_pos: 1,
            names_end: 1,
        });
        Document { bytes, layout }
    }

    /// The document's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// Gives back the byte container.
    pub fn into_inner(self) -> B {
        self.bytes
    }

    #[inline]
    pub(crate) fn doc_ref(&self) -> DocRef<'_> {
        let bytes = self.bytes.as_ref();
        DocRef {
            bytes,
            names: bytes
                .get(self.layout.names_pos..self.layout.names_end)
                .unwrap_or_default(),
        }
    }

    /// Size in bytes of the names area (each distinct property name once).
    pub fn names_bytes(&self) -> usize {
        self.layout.names_end.saturating_sub(self.layout.names_pos)
    }

    /// The root value.
    #[inline]
    pub fn root(&self) -> Value<'_> {
        let shape = self.layout.root_shape;
        match shape.kind {
            RootKind::Object => {
                Value::Object(Object::from_shape(self.doc_ref(), shape.head.object()))
            }
            RootKind::Array => Value::Array(Array::from_shape(self.doc_ref(), shape.head.array())),
            RootKind::Other => {
                Value::decode(self.doc_ref(), self.layout.root_tag, self.layout.root_pos)
                    .unwrap_or(Value::Null)
            }
        }
    }

    /// The root as an object; `None` if the root is another type. Cheaper than matching
    /// [`Document::root`]: the object's header was decoded on open, and no whole [`Value`] is
    /// built.
    #[inline(always)]
    pub fn root_object(&self) -> Option<Object<'_>> {
        let shape = self.layout.root_shape;
        match shape.kind {
            RootKind::Object => Some(Object::from_shape(self.doc_ref(), shape.head.object())),
            _ => None,
        }
    }

    /// The root object's property `key`; `None` if absent or the root is not an object.
    pub fn get(&self, key: &str) -> Option<Value<'_>> {
        self.root().as_object()?.get(key)
    }

    /// The value at a path such as `address.city`, `tags[0]` or `a["key.with.dots"][2]`.
    /// `Ok(None)` if some step does not exist; an error only for a malformed path.
    pub fn path(&self, path: &str) -> Result<Option<Value<'_>>> {
        Ok(Path::parse(path)?.get(self.root()))
    }
}
