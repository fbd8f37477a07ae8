//! The document writer: events in (begin/end container, key, scalar), one document out.
//!
//! Values are appended to the output as they arrive; a container's header (its sorted property
//! index or element offsets) is written when it closes, after its children, so offsets always point
//! backwards and the whole document is produced in one forward pass without a tree in memory.
//! [`DocumentWriter`] is both the public builder API and the engine behind the JSON converter and
//! the serde serializer.

mod close;
pub(crate) mod json;
mod names;
pub(crate) mod number;
mod options;
mod scalars;
pub(crate) mod scan;
mod shapes;
mod sort_cache;

pub use options::{
    DEFAULT_COMPRESS_MIN_BYTES, DEFAULT_MAX_DEPTH, DuplicateKeys, KeyOrder, WriteOptions,
};

use crate::error::{Error, Result};
use crate::format::{HEADER_BYTE, Tag, put_uint, width_bytes, width_code_for};
use names::{Names, is_name_at, name_at, name_prefix};

/// Strings shorter than this are never compressed, and the JSON converter writes them with
/// [`DocumentWriter::short_string`].
pub(crate) const SHORT_STRING_BYTES: usize = 16;

/// A child waiting in an open container.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Absolute position of the child's payload (0 for payloadless tags).
    pos: usize,
    /// Name id (offset in the names area); 0 in arrays.
    key: u32,
    /// Position of the child in input order.
    seq: u32,
    tag: Tag,
    /// First 8 bytes of the name, big-endian, zero-padded: sorting compares these integers and
    /// reads the names only on ties (most objects never have one).
    prefix: u64,
}

/// An open container.
#[derive(Debug, Clone, Copy)]
struct Frame {
    is_object: bool,
    /// Index of the container's first child in `entries`.
    start: usize,
    next_seq: u32,
    /// The key this container has in its parent object, and its name prefix.
    parent_key: (u32, u64),
    /// Key ids so far arrived in ascending order: then the input order is implied by the ids
    /// and needs no bytes (`ORDER_BY_ID`).
    ids_ascending: bool,
    /// Key id of the last property, for `ids_ascending`.
    last_key: Option<u32>,
    /// The shape recorded earlier in this document for this object's first key (length 0:
    /// none), and how many of the keys so far matched it at their position. `hits` is 0 when
    /// no object with the same first key came before in this document (or while keys are
    /// predicted from the previous document); otherwise it counts the first key, and the
    /// object's shape is recorded when it closes, unless it matched.
    shape: shapes::Shape,
    hits: u32,
}

/// Writes one document at a time from a stream of events; reuse it for many documents to reuse
/// its buffers.
///
/// ```
/// use stele_doc::{Document, DocumentWriter};
/// let mut w = DocumentWriter::new();
/// w.begin_object()?;
/// w.key("name")?;
/// w.string("Ada")?;
/// w.key("born")?;
/// w.i64(1815)?;
/// w.end_object()?;
/// let bytes = w.finish()?;
/// let doc = Document::new(&bytes)?;
/// assert_eq!(doc.to_json(), r#"{"name":"Ada","born":1815}"#);
/// # Ok::<(), stele_doc::Error>(())
/// ```
pub struct DocumentWriter {
    opts: WriteOptions,
    /// The document so far; always starts with [`HEADER_BYTE`].
    out: Vec<u8>,
    /// The names area and its index.
    names: Names,
    /// Sorted orders of this document's objects by shape, and the scratch that looks them up.
    sort_cache: sort_cache::SortCache,
    /// Key sequences of this document's objects by first key; unused with the portable
    /// scanner (the reference converter of the tests keeps the plain interning).
    shapes: shapes::Shapes,
    shapes_on: bool,
    shape_ids: Vec<u32>,
    shape_hash: Option<u64>,
    sorted: Vec<Entry>,
    entries: Vec<Entry>,
    frames: Vec<Frame>,
    /// Key id and name prefix of the next value in the current object.
    pending_key: Option<(u32, u64)>,
    root: Option<(Tag, usize)>,
    scratch: Vec<u8>,
    /// Unescaped text of the JSON string being parsed.
    pub(crate) unescaped: Vec<u8>,
    order: Vec<u32>,
    /// The LZ4 encoder of strings, kept so compressing a string allocates nothing; the portable
    /// scanner (the tests' reference) calls `lz4_flex` instead.
    lz4: crate::lz4::Lz4Encoder,
}

impl std::fmt::Debug for DocumentWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentWriter")
            .field("options", &self.opts)
            .field("body_len", &self.out.len())
            .field("open_containers", &self.frames.len())
            .finish_non_exhaustive()
    }
}

impl Default for DocumentWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl DocumentWriter {
    /// A writer with [`WriteOptions::default`].
    pub fn new() -> Self {
        Self::with_options(WriteOptions::default())
    }

    /// A writer with the given options.
    pub fn with_options(opts: WriteOptions) -> Self {
        let shapes_on = !opts.portable_scanner;
        DocumentWriter {
            opts,
            out: vec![HEADER_BYTE],
            names: Names::new(),
            sort_cache: sort_cache::SortCache::new(),
            shapes: shapes::Shapes::new(),
            shapes_on,
            shape_ids: Vec::new(),
            shape_hash: None,
            sorted: Vec::new(),
            entries: Vec::new(),
            frames: Vec::new(),
            pending_key: None,
            root: None,
            scratch: Vec::new(),
            unescaped: Vec::new(),
            order: Vec::new(),
            lz4: crate::lz4::Lz4Encoder::new(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &WriteOptions {
        &self.opts
    }

    /// Drops a partly written document (for example after an error) and starts afresh.
    pub fn reset(&mut self) {
        self.out.clear();
        self.out.push(HEADER_BYTE);
        self.names.clear();
        self.sort_cache.clear();
        self.shapes.clear();
        self.entries.clear();
        self.frames.clear();
        self.pending_key = None;
        self.root = None;
    }

    /// Forgets the key names of the previous document. A writer checks each document's keys
    /// against the previous document's, in order, before hashing them: a run of documents of
    /// one shape interns its keys without hashing. Output is the same either way; benchmarks
    /// that convert one text repeatedly call this to time a first conversion.
    pub fn forget_shape(&mut self) {
        self.names.forget_shape();
    }

    /// Bytes written so far for the current document (body only, without names and trailer).
    pub fn body_len(&self) -> usize {
        self.out.len()
    }

    // ----- slots -------------------------------------------------------------------------------

    /// Checks that a value may come now; returns where its payload will start.
    #[inline]
    fn value_slot(&self, got: &'static str) -> Result<usize> {
        match self.frames.last() {
            None if self.root.is_some() => Err(Error::Builder {
                expected: "finish() after the root value",
                got,
            }),
            Some(f) if f.is_object && self.pending_key.is_none() => Err(Error::Builder {
                expected: "a key",
                got,
            }),
            _ => Ok(self.out.len()),
        }
    }

    /// Records a finished value at `pos` in the current container (or as the root).
    #[inline]
    fn commit(&mut self, tag: Tag, pos: usize) {
        match self.frames.last_mut() {
            None => self.root = Some((tag, pos)),
            Some(frame) => {
                let (key, prefix) = if frame.is_object {
                    let (key, prefix) = self.pending_key.take().unwrap_or_default();
                    frame.ids_ascending &= frame.last_key.is_none_or(|last| last < key);
                    frame.last_key = Some(key);
                    (key, prefix)
                } else {
                    (0, 0)
                };
                self.entries.push(Entry {
                    pos,
                    key,
                    seq: frame.next_seq,
                    tag,
                    prefix,
                });
                frame.next_seq += 1;
            }
        }
    }

    // ----- names -------------------------------------------------------------------------------

    /// Sets the key of the next value from raw UTF-8 (the caller checked it).
    #[inline]
    pub(crate) fn key_bytes(&mut self, name: &[u8]) -> Result<()> {
        let nested = self.frames.len() > 1;
        match self.frames.last_mut() {
            Some(f) if f.is_object && self.pending_key.is_none() => {
                let prefix = name_prefix(name);
                // The key at this position of the shape recorded for the object's first key:
                // if it is this name, its id is known without hashing.
                let id = match self.shapes.key(f.shape, f.next_seq) {
                    Some((id, stored))
                        if is_name_at(&self.names.bytes, id, stored, name, prefix) =>
                    {
                        f.hits += 1;
                        self.names.interned_known(id, name, prefix);
                        id
                    }
                    _ => {
                        let id = self.names.intern(name, prefix)?;
                        // Root objects have no twin in their document.
                        if f.next_seq == 0
                            && self.shapes_on
                            && !self.names.predicting()
                            && nested
                            && let Some(shape) = self.shapes.find_or_mark(id)
                        {
                            f.shape = shape;
                            f.hits = 1;
                        }
                        id
                    }
                };
                self.pending_key = Some((id, prefix));
                Ok(())
            }
            Some(f) if f.is_object => Err(Error::Builder {
                expected: "a value after the key",
                got: "another key",
            }),
            _ => Err(Error::Builder {
                expected: "a value (keys belong in objects)",
                got: "a key",
            }),
        }
    }

    /// Sets the key of the next value in the current object.
    pub fn key(&mut self, name: &str) -> Result<()> {
        self.key_bytes(name.as_bytes())
    }

    // ----- containers --------------------------------------------------------------------------

    /// Opens an object; properties follow as `key` + value pairs until [`Self::end_object`].
    pub fn begin_object(&mut self) -> Result<()> {
        self.begin(true)
    }

    /// Opens an array; elements follow until [`Self::end_array`].
    pub fn begin_array(&mut self) -> Result<()> {
        self.begin(false)
    }

    #[inline]
    fn begin(&mut self, is_object: bool) -> Result<()> {
        self.value_slot(if is_object { "an object" } else { "an array" })?;
        if self.frames.len() >= self.opts.max_depth {
            return Err(Error::TooDeep {
                limit: self.opts.max_depth,
            });
        }
        let parent_key = self.pending_key.take().unwrap_or_default();
        self.frames.push(Frame {
            is_object,
            start: self.entries.len(),
            next_seq: 0,
            parent_key,
            ids_ascending: true,
            last_key: None,
            shape: shapes::Shape::default(),
            hits: 0,
        });
        Ok(())
    }

    /// Closes the innermost object.
    pub fn end_object(&mut self) -> Result<()> {
        self.end(true)
    }

    /// Closes the innermost array.
    pub fn end_array(&mut self) -> Result<()> {
        self.end(false)
    }

    #[inline]
    fn end(&mut self, is_object: bool) -> Result<()> {
        let got = if is_object { "end_object" } else { "end_array" };
        let frame = match self.frames.last() {
            Some(f) if f.is_object == is_object => *f,
            Some(f) if f.is_object => {
                return Err(Error::Builder {
                    expected: "end_object",
                    got,
                });
            }
            Some(_) => {
                return Err(Error::Builder {
                    expected: "end_array",
                    got,
                });
            }
            None => {
                return Err(Error::Builder {
                    expected: "an open container",
                    got,
                });
            }
        };
        if self.pending_key.is_some() {
            return Err(Error::Builder {
                expected: "a value after the key",
                got,
            });
        }
        let header_pos = self.out.len();
        let tag = if frame.start == self.entries.len() {
            // Empty (`{}` and `[]` are common): either kind's header is flags 0 (one-byte
            // widths, no stored order, not uniform) and a count of 0, what the writers below
            // would produce after all their steps.
            self.out.extend_from_slice(&[0, 0]);
            if is_object { Tag::Object } else { Tag::Array }
        } else if is_object {
            self.write_object_header(&frame, header_pos)?;
            Tag::Object
        } else {
            self.write_array_header(frame.start, header_pos);
            Tag::Array
        };
        self.entries.truncate(frame.start);
        self.frames.pop();
        // Give the container back its key in the parent (arrays' children have none).
        if self.frames.last().is_some_and(|f| f.is_object) {
            self.pending_key = Some(frame.parent_key);
        }
        self.commit(tag, header_pos);
        Ok(())
    }

    // ----- finish ------------------------------------------------------------------------------

    /// Completes the document and returns its bytes; the writer is ready for the next one.
    pub fn finish(&mut self) -> Result<Vec<u8>> {
        // An exact-size copy: the working buffer keeps its capacity for the next document, so
        // writing never reallocates once warm, and the caller holds no slack.
        let mut doc = Vec::new();
        self.finish_into(&mut doc)?;
        Ok(doc)
    }

    /// Completes the document and appends its bytes to `out` (which keeps what it held, and
    /// grows by exactly the document's length); the writer is ready for the next one. For
    /// callers that reuse one buffer or put a header before each document. On error `out` is
    /// as it was.
    ///
    /// ```
    /// let mut w = stele_doc::DocumentWriter::new();
    /// let mut framed = vec![0xAA]; // the caller's own header
    /// w.begin_array()?;
    /// w.end_array()?;
    /// w.finish_into(&mut framed)?;
    /// assert_eq!(stele_doc::Document::new(&framed[1..])?.to_json(), "[]");
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    pub fn finish_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if !self.frames.is_empty() {
            return Err(Error::Builder {
                expected: "end_object or end_array for every open container",
                got: "finish",
            });
        }
        let Some((root_tag, root_pos)) = self.root else {
            return Err(Error::Builder {
                expected: "a root value",
                got: "finish",
            });
        };
        let names_pos = self.out.len();
        self.out.extend_from_slice(&self.names.bytes);
        let w = width_code_for(names_pos.max(root_pos) as u64);
        put_uint(&mut self.out, root_pos as u64, width_bytes(w));
        put_uint(&mut self.out, names_pos as u64, width_bytes(w));
        self.out.push(root_tag as u8);
        self.out.push(w);
        let start = out.len();
        out.reserve_exact(self.out.len());
        out.extend_from_slice(&self.out);
        self.names.remember_shape();
        self.reset();
        debug_assert!(
            crate::validate(out.get(start..).unwrap_or_default()).is_ok(),
            "writer produced an invalid document"
        );
        Ok(())
    }
}
