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
mod path;
mod path_set;
mod slots;
mod value;

pub use array::{Array, ArrayIter};
pub use container::{Object, ObjectIter};
use head::Head;
pub use path::{CachedKey, CachedPath, Path, PathSegment};
pub use path_set::PathSet;
pub use value::{ScaledDecimal, Str, Value};

use crate::error::{Error, Result};
use crate::format::{HEADER_BYTE, MIN_DOCUMENT_BYTES, Tag, get_uint, width_bytes};
use crate::output::JsonOptions;

/// Where the parts of a document are, read from its trailer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// The root container's header, decoded once per document rather than once per access.
    root_shape: RootShape,
    pub(crate) root_tag: Tag,
    pub(crate) root_pos: usize,
    pub(crate) names_pos: usize,
    pub(crate) names_end: usize,
}

impl Layout {
    /// Reads and checks the header byte and the trailer.
    #[inline]
    pub(crate) fn read(bytes: &[u8]) -> Result<Layout> {
        if bytes.len() < MIN_DOCUMENT_BYTES {
            return Err(Error::invalid(
                bytes.len(),
                "too short: a document has at least 5 bytes",
            ));
        }
        match bytes.first() {
            Some(&HEADER_BYTE) => {}
            Some(b) if b >> 4 == HEADER_BYTE >> 4 => {
                return Err(Error::invalid(
                    0,
                    "unsupported format version (this build reads version 1)",
                ));
            }
            _ => return Err(Error::invalid(0, "bad header byte")),
        }
        let len = bytes.len();
        let flags = bytes.get(len - 1).copied().unwrap_or(0xFF);
        if flags & !3 != 0 {
            return Err(Error::invalid(len - 1, "reserved trailer bits are set"));
        }
        let w = width_bytes(flags);
        let root_tag = bytes
            .get(len - 2)
            .and_then(|&t| Tag::from_u8(t))
            .ok_or_else(|| Error::invalid(len - 2, "unknown root type tag"))?;
        let names_end = len
            .checked_sub(2 + 2 * w)
            .filter(|&e| e >= 1)
            .ok_or_else(|| Error::invalid(0, "trailer longer than the document"))?;
        let root_pos = get_uint(bytes, names_end, w).unwrap_or(u64::MAX);
        let names_pos = get_uint(bytes, names_end + w, w).unwrap_or(u64::MAX);
        let names_pos = usize::try_from(names_pos)
            .ok()
            .filter(|&p| p >= 1 && p <= names_end)
            .ok_or_else(|| Error::invalid(names_end + w, "names area position out of bounds"))?;
        let root_pos = usize::try_from(root_pos)
            .ok()
            .filter(|&p| {
                if root_tag.has_payload() {
                    p >= 1 && p < names_pos
                } else {
                    p == 0
                }
            })
            .ok_or_else(|| Error::invalid(names_end, "root position out of bounds"))?;
        Ok(Layout::with_root(
            bytes, root_tag, root_pos, names_pos, names_end,
        ))
    }

    /// The layout from the trailer's positions, the root container's header decoded.
    #[inline(always)]
    fn with_root(
        bytes: &[u8],
        root_tag: Tag,
        root_pos: usize,
        names_pos: usize,
        names_end: usize,
    ) -> Layout {
        // Names are compared next to the root header; ask for them while it is read.
        prefetch(bytes.get(names_pos.saturating_sub(1)..).unwrap_or_default());
        Layout {
            root_shape: RootShape::read(bytes, root_tag, root_pos),
            root_tag,
            root_pos,
            names_pos,
            names_end,
        }
    }

    /// The trailer of bytes promised valid ([`Document::new_unchecked`]): the same positions as
    /// [`Layout::read`] without the checks that only reject invalid documents (header byte,
    /// reserved bits, position order) and without building errors. Every read stays bounds
    /// checked: a broken promise gives `None` or wrong positions, never an access outside
    /// `bytes`.
    #[inline(always)]
    fn read_trusted(bytes: &[u8]) -> Option<Layout> {
        let len = bytes.len();
        let [tag, flags] = *bytes.get(len.checked_sub(2)?..)?.first_chunk::<2>()?;
        let w = width_bytes(flags);
        let root_tag = Tag::from_u8(tag)?;
        let names_end = len.checked_sub(2 + 2 * w)?;
        let root_pos = get_uint(bytes, names_end, w)? as usize;
        let names_pos = get_uint(bytes, names_end + w, w)? as usize;
        Some(Layout::with_root(
            bytes, root_tag, root_pos, names_pos, names_end,
        ))
    }
}

/// Asks the CPU to start loading the parts of a document that opening it reads first (its
/// trailer, where the root header and names usually sit too, and its start), without waiting.
/// For loops over many documents out of cache: hint document `i + 4` while reading document `i`,
/// so its cache misses overlap the work on this one. A hint only: no effect on other CPUs, never
/// faults, any bytes are fine. Reading with a [`PathSet`], prefer [`PathSet::prefetch`]: it also
/// hints the root header, the names and the values, where the set found them last (debian
/// packages, 800-byte documents out of cache: 97-109 ns per document against 143-168).
#[inline]
pub fn prefetch_document(bytes: &[u8]) {
    prefetch(bytes);
    prefetch(
        bytes
            .get(bytes.len().saturating_sub(2)..)
            .unwrap_or_default(),
    );
}

/// Hints the CPU to load the cache line of `bytes`' second byte (a document's first value;
/// no effect on other CPUs).
#[inline(always)]
fn prefetch(bytes: &[u8]) {
    prefetch_at(bytes, 1);
}

/// Hints the CPU to load the cache line that holds `bytes[pos]`; nothing if `pos` is out of
/// bounds (no effect on other CPUs).
#[inline(always)]
fn prefetch_at(bytes: &[u8], pos: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.get(pos) {
        // SAFETY: a prefetch is a hint: it never faults and changes no memory; the address is
        // inside `bytes` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                std::ptr::from_ref(byte).cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, pos);
}

/// The root container's header. A struct, not an enum of shapes: an enum with data was built
/// in memory and read back whole on every open (a store-forwarding stall, profiled).
#[derive(Debug, Clone, Copy)]
struct RootShape {
    kind: RootKind,
    head: Head,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootKind {
    Object,
    Array,
    /// Not a container, or (bytes promised valid but not) a header that does not decode.
    Other,
}

impl RootShape {
    const OTHER: RootShape = RootShape {
        kind: RootKind::Other,
        head: Head::NONE,
    };

    #[inline(always)]
    fn read(bytes: &[u8], root_tag: Tag, root_pos: usize) -> RootShape {
        let kind = match root_tag {
            Tag::Object => RootKind::Object,
            Tag::Array => RootKind::Array,
            _ => return RootShape::OTHER,
        };
        match Head::read(bytes, root_pos) {
            Some(head) => RootShape { kind, head },
            None => RootShape::OTHER,
        }
    }
}

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

    /// Compact JSON in original key order.
    pub fn to_json(&self) -> String {
        self.to_json_with(&JsonOptions::default())
    }

    /// JSON text with the given options.
    pub fn to_json_with(&self, opts: &JsonOptions) -> String {
        self.root().to_json_with(opts)
    }

    /// Appends JSON text to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>, opts: &JsonOptions) {
        self.root().write_json(out, opts);
    }
}
