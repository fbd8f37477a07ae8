//! Several paths read from each document with one check of the root object's shape: the way to
//! read a few fields of many documents.

use super::Document;
use super::container::{Object, SlotPlace};
use super::path::{CachedPath, Path};
use super::value::Value;
use crate::error::Result;

/// A set of paths read together from each document, each value handed to a closure with the
/// path's index.
///
/// Documents of one collection often have the same root shape: the same keys, so the same root
/// header (count, widths, key ids) and the same names. A `PathSet` remembers the root shape of
/// the last document it read in full and where each path's first key sat in it. On the next
/// document it checks the shape once: the root header's count and flags, its key ids (compared
/// as bytes), and the names area's bytes up to the last name the paths use (all of it when a
/// key was absent: then every root key's name is compared, so the key is absent again). When they are equal every key sits where it sat,
/// and each path is an offset and a tag read at a fixed place. Otherwise each path is read with
/// its own [`CachedPath`] (which remembers its own slot) and the shape is learned again.
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
}

#[derive(Debug, Clone)]
enum Field {
    /// A path whose first step is a key: that key as a one-key cached path (read when the shape
    /// differs), the steps after it, and where the key sits in the remembered shape (`None`:
    /// absent there).
    Keyed {
        first: CachedPath,
        rest: Option<CachedPath>,
        place: Option<SlotPlace>,
    },
    /// The empty path, or one that starts with an index: read on its own every time.
    Other(CachedPath),
}

/// The root object shape remembered from the last document read in full.
#[derive(Debug, Clone, Default)]
struct Shape {
    /// Whether the fields below describe a document (and the set has keyed paths).
    known: bool,
    len: usize,
    flags: u8,
    key_ids: Vec<u8>,
    /// The names area's bytes from its start: up to the end of the last name a keyed path
    /// found, or the whole area when some key was absent. A document with the same key ids
    /// whose names area starts with these bytes names each key the paths found the same way
    /// (its entry lies inside them); with the whole area, every root key (each root key id
    /// points into it), so the root has the same keys and an absent one is absent again.
    names: Vec<u8>,
    /// Bytes of the root header the fixed-place reads need (the largest place's end).
    head_len: usize,
}

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
                Some((first, rest)) => Field::Keyed {
                    first: CachedPath::from_path(first),
                    rest: rest.map(CachedPath::from_path),
                    place: None,
                },
                None => Field::Other(CachedPath::from_path(p.clone())),
            })
            .collect();
        PathSet {
            paths: paths.into_boxed_slice(),
            fields,
            shape: Shape::default(),
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

    /// Reads every path of the set on `doc` and calls `f(index, value)` for each one that
    /// exists, in index order; paths that do not exist are skipped. The values borrow from
    /// `doc`; like [`CachedPath::read`], `f` runs inside each read, so no whole [`Value`] goes
    /// through memory.
    #[inline]
    pub fn read_doc<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        mut f: impl FnMut(usize, Value<'a>),
    ) {
        if let Some(o) = doc.root_object()
            && let Some(head) = self.shape.head_if_same(&o)
        {
            for (i, field) in self.fields.iter_mut().enumerate() {
                match field {
                    Field::Keyed {
                        place: Some(place),
                        rest,
                        ..
                    } => match rest {
                        None => o.read_placed(head, place, |v| f(i, v)),
                        Some(rest) => o.read_placed(head, place, |v| {
                            rest.read(v, |v| f(i, v));
                        }),
                    },
                    Field::Keyed { place: None, .. } => None,
                    Field::Other(p) => p.read_doc(doc, |v| f(i, v)),
                };
            }
            return;
        }
        self.read_and_learn(doc, f);
    }

    /// Every path read with its own cached path, then the shape of `doc` remembered: the path
    /// when the shape differs from the last one, out of line so the same-shape path stays
    /// small.
    #[inline(never)]
    fn read_and_learn<'a, B: AsRef<[u8]>>(
        &mut self,
        doc: &'a Document<B>,
        mut f: impl FnMut(usize, Value<'a>),
    ) {
        let root = doc.root_object();
        for (i, field) in self.fields.iter_mut().enumerate() {
            match field {
                Field::Keyed { first, rest, place } => {
                    let found = first.read_doc(doc, |v| match rest {
                        None => f(i, v),
                        Some(rest) => {
                            rest.read(v, |v| f(i, v));
                        }
                    });
                    *place = match (found, root, first.key_slot()) {
                        (Some(()), Some(o), Some(slot)) => Some(o.place_of(slot.index)),
                        _ => None,
                    };
                }
                Field::Other(p) => {
                    p.read_doc(doc, |v| f(i, v));
                }
            }
        }
        match root {
            Some(o) => self.shape.learn(&o, &self.fields),
            None => self.shape.known = false,
        }
    }
}

impl Shape {
    /// The root header's bytes the fixed-place reads need, when `o` has the remembered shape:
    /// the same count and flags (so the same header layout), the same key ids in sorted order,
    /// and the same names from the names area's start as far as [`Shape::names`] goes. Then
    /// every keyed path's key sits at its remembered index, or is absent.
    #[inline(always)]
    fn head_if_same<'a>(&self, o: &Object<'a>) -> Option<&'a [u8]> {
        if !self.known || o.len_and_flags() != (self.len, self.flags) {
            return None;
        }
        let names = o.names().get(..self.names.len())?;
        if !same_bytes(o.key_id_bytes(), &self.key_ids) || !same_bytes(names, &self.names) {
            return None;
        }
        o.head_bytes(self.head_len)
    }

    /// Remembers `o`'s shape, the keyed fields' places having just been set from it.
    fn learn(&mut self, o: &Object<'_>, fields: &[Field]) {
        let (mut names_end, mut head_len, mut keyed, mut absent) = (0, 0, false, false);
        for field in fields {
            let Field::Keyed { first, place, .. } = field else {
                continue;
            };
            keyed = true;
            match (place, first.key_slot()) {
                (Some(place), Some(slot)) => {
                    names_end = names_end.max(slot.key_id.saturating_add(slot.entry.len()));
                    head_len = head_len.max(place.end_rel());
                }
                _ => absent = true,
            }
        }
        let names = o.names();
        let names = match absent {
            true => Some(names),
            false => names.get(..names_end),
        };
        let (Some(names), true) = (names, keyed) else {
            // No keyed path (nothing to share), or a broken promise of trusted bytes.
            self.known = false;
            return;
        };
        (self.len, self.flags) = o.len_and_flags();
        self.key_ids.clear();
        self.key_ids.extend_from_slice(o.key_id_bytes());
        self.names.clear();
        self.names.extend_from_slice(names);
        self.head_len = head_len;
        self.known = true;
    }
}

/// `a == b`, without a `memcmp` call for up to 32 bytes (key ids and the first names of most
/// documents): two overlapping loads from each end.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let len = a.len();
    if len != b.len() {
        return false;
    }
    match len {
        0 => true,
        1..4 => a == b,
        4..8 => ends::<4>(a) == ends::<4>(b),
        8..16 => ends::<8>(a) == ends::<8>(b),
        16..=32 => ends::<16>(a) == ends::<16>(b),
        _ => a == b,
    }
}

/// The first and the last `N` bytes of `s` (which has at least `N`; the two overlap when it has
/// fewer than `2 * N`).
#[inline(always)]
fn ends<const N: usize>(s: &[u8]) -> Option<(&[u8; N], &[u8; N])> {
    Some((s.first_chunk::<N>()?, s.last_chunk::<N>()?))
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_is_slice_equality() {
        let a: Vec<u8> = (0..40).collect();
        for len in 0..40 {
            for at in 0..len {
                let mut b = a[..len].to_vec();
                assert!(same_bytes(&a[..len], &b));
                b[at] ^= 1;
                assert!(!same_bytes(&a[..len], &b), "len {len}, byte {at}");
            }
            assert!(!same_bytes(&a[..len], &a[..len + 1]));
        }
    }
}
