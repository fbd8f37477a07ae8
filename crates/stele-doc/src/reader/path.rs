//! Paths into documents (`address.city`, `tags[2]`, `a["dotted.key"]`) and a lookup cache that
//! makes the same path on many documents of one shape nearly free.

use super::Document;
use super::slots::SlotKey;
use super::types::Object;
use super::types::Value;
use crate::error::{Error, Result};
use crate::format::Tag;

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathSegment {
    /// An object property.
    Key(String),
    /// An array element.
    Index(usize),
}

/// A parsed path.
///
/// Grammar: steps separated by `.`; a step is a bare key (any characters but `.`, `[` and `]`),
/// `[N]` for array element N, or `["key"]` for a key with any characters (`\"` and `\\` escape).
/// The empty path names the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    text: String,
    segments: Vec<PathSegment>,
}

impl Path {
    /// Parses `text`; errors say where and what is wrong.
    pub fn parse(text: &str) -> Result<Path> {
        let err = |at: usize, reason: &'static str| Error::Path {
            path: text.to_owned(),
            at,
            reason,
        };
        let bytes = text.as_bytes();
        let mut segments = Vec::new();
        let mut i = 0;
        let mut expect_key = true;
        while i < bytes.len() {
            match bytes.get(i) {
                Some(b'[') => {
                    i += 1;
                    if bytes.get(i) == Some(&b'"') {
                        i += 1;
                        let mut key = String::new();
                        let mut start = i;
                        loop {
                            match bytes.get(i) {
                                Some(b'"') => break,
                                Some(b'\\') => {
                                    key.push_str(text.get(start..i).unwrap_or_default());
                                    match bytes.get(i + 1) {
                                        Some(&c @ (b'"' | b'\\')) => key.push(c as char),
                                        _ => {
                                            return Err(err(
                                                i,
                                                "only \\\" and \\\\ escapes are allowed in a quoted key",
                                            ));
                                        }
                                    }
                                    i += 2;
                                    start = i;
                                }
                                Some(_) => i += 1,
                                None => return Err(err(i, "unterminated quoted key")),
                            }
                        }
                        key.push_str(text.get(start..i).unwrap_or_default());
                        i += 1;
                        segments.push(PathSegment::Key(key));
                    } else {
                        let start = i;
                        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                            i += 1;
                        }
                        let index = text
                            .get(start..i)
                            .and_then(|d| d.parse().ok())
                            .ok_or_else(|| err(start, "expected an array index or a quoted key"))?;
                        segments.push(PathSegment::Index(index));
                    }
                    if bytes.get(i) != Some(&b']') {
                        return Err(err(i, "expected ']'"));
                    }
                    i += 1;
                    expect_key = false;
                }
                Some(b'.') if !expect_key => {
                    i += 1;
                    expect_key = true;
                    if i == bytes.len() {
                        return Err(err(i, "a path cannot end with '.'"));
                    }
                }
                Some(b'.' | b']') => return Err(err(i, "expected a key")),
                Some(_) if expect_key => {
                    let start = i;
                    while bytes
                        .get(i)
                        .is_some_and(|b| !matches!(b, b'.' | b'[' | b']'))
                    {
                        i += 1;
                    }
                    segments.push(PathSegment::Key(
                        text.get(start..i).unwrap_or_default().to_owned(),
                    ));
                    expect_key = false;
                }
                Some(_) => return Err(err(i, "expected '.' or '[' between steps")),
                None => break,
            }
        }
        Ok(Path {
            text: text.to_owned(),
            segments,
        })
    }

    /// The text the path was parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The steps.
    pub fn segments(&self) -> &[PathSegment] {
        &self.segments
    }

    /// The path split after its first step when that step is a key: the one-key path and the
    /// rest (`None` when nothing follows). `None` for the empty path and paths that start with
    /// an index.
    pub(crate) fn split_first_key(&self) -> Option<(Path, Option<Path>)> {
        let (first, rest) = self.segments.split_first()?;
        let PathSegment::Key(_) = first else {
            return None;
        };
        let part = |segments: &[PathSegment]| Path {
            text: self.text.clone(),
            segments: segments.to_vec(),
        };
        Some((
            part(std::slice::from_ref(first)),
            (!rest.is_empty()).then(|| part(rest)),
        ))
    }

    /// Follows the path from `root`.
    pub fn get<'a>(&self, root: Value<'a>) -> Option<Value<'a>> {
        let mut v = root;
        for seg in &self.segments {
            v = match seg {
                PathSegment::Key(k) => v.get(k)?,
                PathSegment::Index(i) => v.index(*i)?,
            };
        }
        Some(v)
    }
}

/// A [`Path`] that remembers where each key was found in the last document and tries that slot
/// first: for documents of the same shape a lookup checks the remembered slot (the same key id
/// at the same sorted index, then the name's bytes, compared as one or two words) and reads the
/// value in place, instead of a binary search (the blittable series' property cache). On a miss
/// it searches and remembers the new slot. A hit never returns another key's value: the name at
/// the slot is compared in full every time. To read several paths of each document, a
/// [`crate::PathSet`] checks the root's shape once for all of them.
///
/// ```
/// use stele_doc::{CachedPath, Document, from_json};
/// let mut city = CachedPath::new("address.city")?;
/// for text in [r#"{"address":{"city":"Oslo"}}"#, r#"{"address":{"city":"Lima"}}"#] {
///     let bytes = from_json(text.as_bytes())?;
///     let doc = Document::new(&bytes)?;
///     assert!(city.get(doc.root()).is_some());
/// }
/// # Ok::<(), stele_doc::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CachedPath {
    path: Path,
    /// The steps in the form the hit check reads, with their remembered slots.
    steps: Box<[Step]>,
}

#[derive(Debug, Clone)]
enum Step {
    Key(KeyStep),
    Index(usize),
}

/// A key step: the key as the names area stores it, and where it matched last.
#[derive(Debug, Clone)]
struct KeyStep {
    key: Box<str>,
    /// Where the key sat last time, and its name entry (see [`SlotKey`]).
    slot: SlotKey,
}

impl CachedPath {
    /// Parses `text` (see [`Path::parse`]).
    pub fn new(text: &str) -> Result<CachedPath> {
        Ok(Self::from_path(Path::parse(text)?))
    }

    /// Wraps a parsed path.
    pub fn from_path(path: Path) -> CachedPath {
        let steps = path
            .segments
            .iter()
            .map(|seg| match seg {
                PathSegment::Key(k) => Step::Key(KeyStep {
                    key: k.as_str().into(),
                    slot: SlotKey::new(k),
                }),
                PathSegment::Index(i) => Step::Index(*i),
            })
            .collect();
        CachedPath { path, steps }
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as text, as it was parsed.
    pub fn path_text(&self) -> &str {
        &self.path.text
    }

    /// Follows the path from `root`, checking the remembered slots first.
    #[inline]
    pub fn get<'a>(&mut self, root: Value<'a>) -> Option<Value<'a>> {
        self.read(root, |v| v)
    }

    /// Follows the path from `root` like [`CachedPath::get`] and hands the value to `f`.
    ///
    /// The fast way to read a value: `f` runs inside the read, once per value type, so the
    /// value never goes through memory as a whole `Value` (which `get` returns, 64 bytes).
    ///
    /// ```
    /// use stele_doc::{CachedPath, Document, Value, from_json};
    /// let mut name = CachedPath::new("name")?;
    /// let bytes = from_json(br#"{"name":"Ada","born":1815}"#)?;
    /// let doc = Document::new(&bytes)?;
    /// let len = name.read(doc.root(), |v| match v {
    ///     Value::String(s) => s.len(),
    ///     _ => 0,
    /// });
    /// assert_eq!(len, Some(3));
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    #[inline]
    pub fn read<'a, R>(&mut self, root: Value<'a>, f: impl FnOnce(Value<'a>) -> R) -> Option<R> {
        let Some((last, init)) = self.steps.split_last_mut() else {
            // The empty path names the root.
            return Some(f(root));
        };
        let mut v = root;
        for step in init {
            v = match step {
                Step::Key(step) => step.read(v, |v| v)?,
                Step::Index(i) => v.index(*i)?,
            };
        }
        match last {
            Step::Key(step) => step.read(v, f),
            Step::Index(i) => v.index(*i).map(f),
        }
    }

    /// [`CachedPath::read`] from a document's root: the fastest way to read a field of many
    /// documents (the root object's header was decoded on open; no root [`Value`] is built).
    ///
    /// ```
    /// use stele_doc::{CachedPath, Document, Value, from_json};
    /// let mut born = CachedPath::new("born")?;
    /// let bytes = from_json(br#"{"name":"Ada","born":1815}"#)?;
    /// let doc = Document::new(&bytes)?;
    /// assert_eq!(born.read_doc(&doc, |v| v.as_i64()), Some(Some(1815)));
    /// # Ok::<(), stele_doc::Error>(())
    /// ```
    #[inline]
    pub fn read_doc<'a, B: AsRef<[u8]>, R>(
        &mut self,
        doc: &'a Document<B>,
        f: impl FnOnce(Value<'a>) -> R,
    ) -> Option<R> {
        match (&mut *self.steps, doc.root_object()) {
            ([Step::Key(step)], Some(o)) => step.read_in(o, f),
            _ => self.read(doc.root(), f),
        }
    }

    /// For a path that is one key, where its value is in `o` (type and payload position; the
    /// remembered slot checked first, as [`CachedPath::read`] does, the slot remembered);
    /// `None` if absent or the path is not one key. For callers that decode the value once
    /// themselves ([`Object::decode_at`]).
    #[inline(always)]
    pub(crate) fn locate_in(&mut self, o: Object<'_>) -> Option<(Tag, usize)> {
        match &mut *self.steps {
            [Step::Key(step)] => step.locate(o),
            _ => None,
        }
    }

    /// The remembered slot of a path that is one key: after a read that found the key, where
    /// it was (sorted index, key id, name entry). `None` for other paths.
    pub(crate) fn key_slot(&self) -> Option<&SlotKey> {
        match &*self.steps {
            [Step::Key(step)] => Some(&step.slot),
            _ => None,
        }
    }
}

/// One object key looked up in many objects, remembering where it was found: the one-key
/// step of a [`CachedPath`] on its own, for callers that walk paths of their own grammar (a
/// step that may meet an array, say) and only want each object's lookup cached. A hit checks
/// the remembered slot (key id, then the name's bytes in full) and never returns another
/// key's value; a miss searches and remembers the new slot.
///
/// ```
/// use stele_doc::{CachedKey, Document, Value, from_json};
/// let mut born = CachedKey::new("born");
/// for text in [r#"{"name":"Ada","born":1815}"#, r#"{"born":1903,"name":"Kurt"}"#] {
///     let bytes = from_json(text.as_bytes())?;
///     let doc = Document::new(&bytes)?;
///     let Value::Object(o) = doc.root() else { unreachable!() };
///     assert!(born.get(o).is_some_and(|v| v.as_i64().is_some()));
/// }
/// # Ok::<(), stele_doc::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CachedKey(KeyStep);

impl CachedKey {
    /// A lookup of the property named `key` (any text: nothing is parsed).
    pub fn new(key: &str) -> CachedKey {
        CachedKey(KeyStep {
            key: key.into(),
            slot: SlotKey::new(key),
        })
    }

    /// The value of the property in `o`, the remembered slot tried first.
    #[inline]
    pub fn get<'a>(&mut self, o: Object<'a>) -> Option<Value<'a>> {
        self.0.read_in(o, |v| v)
    }

    /// The same, the value handed to `f` inside the read (as [`CachedPath::read`]: it never
    /// goes through memory as a whole [`Value`]); `None` if `o` has no such property.
    #[inline]
    pub fn read<'a, R>(&mut self, o: Object<'a>, f: impl FnOnce(Value<'a>) -> R) -> Option<R> {
        self.0.read_in(o, f)
    }
}

impl KeyStep {
    #[inline(always)]
    fn read<'a, R>(&mut self, v: Value<'a>, f: impl FnOnce(Value<'a>) -> R) -> Option<R> {
        let Value::Object(o) = v else { return None };
        self.read_in(o, f)
    }

    #[inline(always)]
    fn read_in<'a, R>(&mut self, o: Object<'a>, f: impl FnOnce(Value<'a>) -> R) -> Option<R> {
        match o.read_place(&self.slot, f) {
            Ok(read) => read,
            // An object of another count or widths with the key at the same index and id (a
            // collection whose later keys vary): the full check, still in line.
            Err(f) if o.slot_holds(&self.slot) => o.value_at_with(self.slot.index, f),
            Err(f) => self.miss(o).map(f),
        }
    }

    /// The slow path, out of line so the hit path stays small: the remembered key id at another
    /// index, else a binary search; the slot and its place are remembered for the next
    /// document.
    #[inline(never)]
    fn miss<'a>(&mut self, o: Object<'a>) -> Option<Value<'a>> {
        o.value_at(self.miss_index(o)?)
    }

    /// [`KeyStep::miss`] without the value: the key's sorted index, remembered.
    fn miss_index(&mut self, o: Object<'_>) -> Option<usize> {
        let i = match o.find_slot_id(&self.slot) {
            Some(i) => i,
            None => o.find(&self.key)?,
        };
        self.slot.index = i;
        self.slot.key_id = o.key_id(i);
        self.slot.place = o.place_of(i);
        Some(i)
    }

    /// Where the key's value is in `o` (type and payload position): the same checks as
    /// [`KeyStep::read_in`] (the remembered place, the remembered slot, else found and
    /// remembered), without decoding.
    #[inline(always)]
    fn locate(&mut self, o: Object<'_>) -> Option<(Tag, usize)> {
        if let Some(head) = o.place_holds(&self.slot) {
            return o.placed_value(head, &self.slot.place);
        }
        if o.slot_holds(&self.slot) {
            return o.value_pos(self.slot.index);
        }
        o.value_pos(self.miss_index_out_of_line(o)?)
    }

    #[inline(never)]
    fn miss_index_out_of_line(&mut self, o: Object<'_>) -> Option<usize> {
        self.miss_index(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths() {
        let p = Path::parse(r#"a.b[3]["c.d\"e"].f"#).unwrap();
        assert_eq!(
            p.segments(),
            &[
                PathSegment::Key("a".into()),
                PathSegment::Key("b".into()),
                PathSegment::Index(3),
                PathSegment::Key("c.d\"e".into()),
                PathSegment::Key("f".into()),
            ]
        );
        assert_eq!(Path::parse("").unwrap().segments(), &[]);
        assert_eq!(
            Path::parse("[0][1]").unwrap().segments(),
            &[PathSegment::Index(0), PathSegment::Index(1)]
        );
        for bad in [
            "a.", ".a", "a..b", "a[", "a[x]", "a[1", "a]", r#"a["x"#, "a[1]b",
        ] {
            assert!(
                matches!(Path::parse(bad), Err(Error::Path { .. })),
                "{bad} accepted"
            );
        }
    }
}
