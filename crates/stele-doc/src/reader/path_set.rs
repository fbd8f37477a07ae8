//! Several paths read from each document with one check of the root object's shape: the way to
//! read a few fields of many documents.

mod field;
mod hints;
mod shape;

use super::Document;
use super::path::{CachedPath, Path};
use super::slots::SlotPlace;
use super::types::Object;
use super::types::Value;
use crate::error::Result;
use field::{Field, KeyedField};
use hints::Hints;
use shape::{Likeness, Shape};

/// A set of paths read together from each document, each value handed to a closure with the
/// path's index.
///
/// Documents of one collection often have the same root shape: the same keys, so the same root
/// header (count, widths, key ids) and the same names. A `PathSet` remembers the root shape of
/// the last document it learned and where each path's first key sat in it. On the next
/// document it checks the shape once for all paths:
///
/// - the names area's bytes from its start, up to the end of the last name the paths use (when
///   a key was absent, up to the end of the last root key's name, so that the root has the
///   same keys and the key is absent again);
/// - the root header's count and flags (so the same header layout) and its key ids, as bytes.
///
/// When all are equal, every key sits where it sat and each path is an offset and a tag read at
/// a fixed place. When only the header differs, each key is found by its remembered id (a scan
/// of the key ids) and the header is learned. Otherwise each path is read with its own
/// [`CachedPath`] (which remembers its own slot) and the shape is learned again. After a few
/// documents in a row without the remembered shape (root keys that vary from document to
/// document), the set reads the next ones path by path for a while, without comparing or
/// learning, then tries again: on such collections it costs about what separate cached paths
/// cost.
///
/// Paths after their first key (`address.city`) continue with a [`CachedPath`] from the first
/// key's value; a path that starts with an index, and the empty path, are read on their own.
///
/// ```
/// use stele_doc::{Document, PathSet, Value, from_json};
/// let mut set = PathSet::new(["name", "born", "address.city"])?;
/// let mut sum = 0;
/// for text in [
///     r#"{"name":"Ada","born":1815,"address":{"city":"London"}}"#,
///     r#"{"name":"Alan","born":1912,"address":{"city":"Wilmslow"}}"#,
/// ] {
///     let bytes = from_json(text.as_bytes())?;
///     let doc = Document::new(&bytes)?;
///     set.read_doc(&doc, |i, v| match (i, v) {
///         (1, Value::Int(year)) => sum += year,
///         (0 | 2, Value::String(s)) => sum += s.len() as i64,
///         _ => {}
///     });
/// }
/// assert_eq!(sum, 1815 + 1912 + 3 + 6 + 4 + 8);
/// # Ok::<(), stele_doc::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PathSet {
    paths: Box<[Path]>,
    fields: Box<[Field]>,
    shape: Shape,
    /// Documents in a row that did not have the remembered shape.
    misses: u8,
    /// Documents still to read path by path, without comparing or learning shapes.
    skip: u8,
    /// Where the parts a read uses sat in the last document learned, for
    /// [`PathSet::prefetch`].
    hints: Hints,
}

/// After this many documents in a row without the remembered shape (a collection whose root
/// keys vary from one document to the next), the set reads [`SKIP_DOCUMENTS`] documents path by
/// path, as separate [`CachedPath`]s would, instead of comparing and learning shapes that do
/// not repeat; then it tries again.
const MISS_RUN: u8 = 4;
const SKIP_DOCUMENTS: u8 = 64;

impl PathSet {
    /// Parses each path (see [`Path::parse`]); the error names the first malformed one.
    pub fn new<'p>(paths: impl IntoIterator<Item = &'p str>) -> Result<PathSet> {
        let paths = paths
            .into_iter()
            .map(Path::parse)
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::from_paths(paths))
    }

    /// A set of parsed paths; values are handed over with their index in `paths`.
    pub fn from_paths(paths: Vec<Path>) -> PathSet {
        let fields = paths
            .iter()
            .map(|p| match p.split_first_key() {
                Some((first, rest)) => Field::Keyed(KeyedField {
                    first: CachedPath::from_path(first),
                    rest: rest.map(CachedPath::from_path),
                    key_id: usize::MAX,
                    at: None,
                    value_pos: usize::MAX,
                }),
                None => Field::Other(CachedPath::from_path(p.clone())),
            })
            .collect();
        PathSet {
            paths: paths.into_boxed_slice(),
            fields,
            shape: Shape::default(),
            misses: 0,
            skip: 0,
            hints: Hints::default(),
        }
    }

    /// The paths, in the order of their indexes.
    pub fn paths(&self) -> &[Path] {
        &self.paths
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether the set has no path.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Asks the CPU to start loading the parts of the document `bytes` that
    /// [`PathSet::read_doc`] will read, without waiting: for loops over many documents that are
    /// not in the CPU's cache (more than a few MB), call it on the document a few ahead of the
    /// one read (2 to 16 ahead measured alike on 800-byte documents; `stele-bench` uses 4), so
    /// that its cache misses overlap the reads in between instead of following each other.
    ///
    /// The set hints where the parts sat in the last document it learned: a document of at
    /// most 1 KB whole, a larger one by parts (the trailer, the root header and the names area
    /// at the same distances from the end, as in documents of one shape, and the values at the
    /// same distances from the start); before the first document, the start and the end. A
    /// hint only: it reads nothing, never faults, changes no result, and any bytes are fine (a
    /// wrong guess costs a useless load).
    ///
    /// ```
    /// use stele_doc::{Document, PathSet, Value, from_json};
    /// let docs: Vec<Vec<u8>> = (0..100)
    ///     .map(|i| from_json(format!(r#"{{"id":{i},"name":"n{i}"}}"#).as_bytes()))
    ///     .collect::<Result<_, _>>()?;
    /// let mut set = PathSet::new(["id"])?;
    /// let mut sum = 0;
    /// for (i, bytes) in docs.iter().enumerate() {
    ///     if let Some(ahead) = docs.get(i + 8) {
    ///         set.prefetch(ahead);
    ///     }
    ///     set.read_doc(&Document::new(bytes.as_slice())?, |_, v| {
    ///         sum += v.as_i64().unwrap_or(0);
    ///     });
    /// }
    /// assert_eq!(sum, 99 * 100 / 2);
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    #[inline]
    pub fn prefetch(&self, bytes: &[u8]) {
        self.hints.prefetch(bytes, self.value_positions());
    }

    /// Reads every path of the set on `doc` and calls `f(index, value)` for each one that
    /// exists, in index order; paths that do not exist are skipped. The values borrow from
    /// `doc`; like [`CachedPath::read`], `f` runs inside each read, so no whole [`Value`] goes
    /// through memory.
    // Always inlined: `f` is called in line once per value type, and the caller's loop must
    // see those calls to inline `f` into them (measured: 30 against 48 ns per document for 3
    // fields when this was a call).
    #[inline(always)]
    pub fn read_doc<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        mut f: impl FnMut(usize, Value<'a>),
    ) {
        if self.skip > 0 {
            self.skip -= 1;
            self.read_each(doc, f);
            return;
        }
        if let Some(o) = doc.root_object() {
            match self.shape.compare(&o) {
                Likeness::Same(head) => {
                    self.misses = 0;
                    for (i, field) in self.fields.iter_mut().enumerate() {
                        // One call of `f` in line (it is inlined into each value type's
                        // arm); longer paths out of line, so that it stays inlined.
                        match field {
                            Field::Keyed(KeyedField {
                                rest: None,
                                at: Some((_, place)),
                                ..
                            }) => {
                                o.read_placed(head, place, |v| f(i, v));
                            }
                            Field::Keyed(KeyedField { at: None, .. }) => {}
                            _ => field.read_longer(doc, &o, head, |v| f(i, v)),
                        }
                    }
                    return;
                }
                Likeness::SameNames if self.find_by_key_ids(&o) => {
                    self.missed();
                    self.read_found(doc, &o, f);
                    return;
                }
                _ => {}
            }
        }
        self.missed();
        self.read_and_learn(doc, f);
    }

    /// Counts a document without the remembered shape; after [`MISS_RUN`] in a row, reads the
    /// next [`SKIP_DOCUMENTS`] path by path. The count restarts two short of the run, so that
    /// after the skip one document is learned and the next compared before skipping again.
    #[inline(always)]
    fn missed(&mut self) {
        self.misses += 1;
        if self.misses >= MISS_RUN {
            self.misses = MISS_RUN - 2;
            self.skip = SKIP_DOCUMENTS;
        }
    }

    /// Every path read with its own cached path; no shape compared or learned.
    #[inline(never)]
    fn read_each<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        mut f: impl FnMut(usize, Value<'a>),
    ) {
        let root = doc.root_object();
        for (i, field) in self.fields.iter_mut().enumerate() {
            // One decode with `f` in line per path: the value found first (the closure stays
            // inlined into each value type's arm, as in `read_doc`'s same-shape loop).
            match (field, root) {
                (
                    Field::Keyed(KeyedField {
                        first, rest: None, ..
                    }),
                    Some(o),
                ) => {
                    if let Some(at) = first.locate_in(o) {
                        o.decode_at(at, |v| f(i, v));
                    }
                }
                (field, _) => {
                    field.read_alone_longer(doc, |v| f(i, v));
                }
            }
        }
    }

    /// Each keyed path's key found by its remembered id in `o` (whose names area names it the
    /// same way), the index kept; `false` if some id is not a key of `o`.
    #[inline]
    fn find_by_key_ids(&mut self, o: &Object<'_>) -> bool {
        for field in self.fields.iter_mut() {
            if let Field::Keyed(k) = field {
                let Some(i) = o.find_key_id(k.key_id) else {
                    return false;
                };
                k.at = Some((i, SlotPlace::NONE));
            }
        }
        true
    }

    /// The values at the indexes [`PathSet::find_by_key_ids`] found, and `o`'s header
    /// remembered (the names are the same).
    #[inline(never)]
    fn read_found<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        o: &Object<'a>,
        mut f: impl FnMut(usize, Value<'a>),
    ) {
        for (i, field) in self.fields.iter_mut().enumerate() {
            match field {
                Field::Keyed(k) => {
                    if let Some((index, place)) = &mut k.at {
                        let at = o.value_pos(*index);
                        k.value_pos = at.map_or(usize::MAX, |(_, pos)| pos);
                        match (&mut k.rest, at) {
                            (None, Some(at)) => {
                                o.decode_at(at, |v| f(i, v));
                            }
                            (Some(rest), _) => Self::read_rest(rest, o, *index, |v| f(i, v)),
                            (None, None) => {}
                        };
                        *place = o.place_of(*index);
                    }
                }
                Field::Other(p) => Self::read_other(p, doc, |v| f(i, v)),
            }
        }
        self.shape.learn_header(o, &self.fields);
        self.learn_hints(doc);
    }

    /// The rest of a path from its first key's value, at sorted index `index` of `o`: out of
    /// line, so that the one call of `f` in the caller stays inlined.
    #[inline(never)]
    fn read_rest<'a>(
        rest: &mut CachedPath,
        o: &Object<'a>,
        index: usize,
        f: impl FnOnce(Value<'a>),
    ) {
        o.value_at_with(index, |v| rest.read(v, f));
    }

    /// A path that starts with an index, read on its own, out of line (as [`PathSet::read_rest`]).
    #[inline(never)]
    fn read_other<'a, B: AsRef<[u8]>>(
        p: &mut CachedPath,
        doc: &'a Document<B>,
        f: impl FnOnce(Value<'a>),
    ) {
        p.read_doc(doc, f);
    }

    /// Every path read with its own cached path, then the shape of `doc` remembered: the path
    /// when the names differ from the last ones, out of line so the others stay small.
    #[inline(never)]
    fn read_and_learn<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        mut f: impl FnMut(usize, Value<'a>),
    ) {
        let root = doc.root_object();
        for (i, field) in self.fields.iter_mut().enumerate() {
            let found = field.read_alone(doc, |v| f(i, v));
            if let Field::Keyed(k) = field {
                (k.key_id, k.at, k.value_pos) = match (found, root, k.first.key_slot()) {
                    (true, Some(o), Some(slot)) => (
                        slot.key_id,
                        Some((slot.index, o.place_of(slot.index))),
                        o.value_pos(slot.index).map_or(usize::MAX, |(_, pos)| pos),
                    ),
                    _ => (usize::MAX, None, usize::MAX),
                };
            }
        }
        match root {
            Some(o) => self.shape.learn(&o, &self.fields),
            None => self.shape.known = false,
        }
        self.learn_hints(doc);
    }

    /// Remembers where the parts of `doc` are that a read uses (the shape just learned from
    /// it), for [`PathSet::prefetch`].
    fn learn_hints<B: AsRef<[u8]>>(&mut self, doc: &Document<B>) {
        match doc.root_object() {
            Some(o) if self.shape.known => {
                // The compare reads the key ids, the fixed-place reads `head_len` bytes.
                let head_bytes = self.shape.head_len.max(o.key_ids_end_rel());
                let names_bytes = self.shape.names.len();
                let len = doc.as_bytes().len();
                self.hints.learn(len, &doc.layout, head_bytes, names_bytes);
            }
            _ => self.hints.forget(),
        }
    }

    /// Where each keyed path's value sat in the last document learned (`usize::MAX`:
    /// nowhere), for [`PathSet::prefetch`].
    #[inline(always)]
    fn value_positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.fields.iter().filter_map(|field| match field {
            Field::Keyed(k) => Some(k.value_pos),
            Field::Other(_) => None,
        })
    }
}
