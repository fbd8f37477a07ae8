//! Secondary indexes: for each document, the values at one or more field paths, encoded
//! so that byte order is value order, followed by the document id, stored as the keys of
//! a durable map (values empty).
//!
//! A field path is dot-separated names; `[]` after a name takes every element of an array
//! (`tags[]`, `items[].sku`). A document gets one index entry per combination of values;
//! a document missing a field (or holding an object or array where a scalar is expected)
//! gets no entry for that combination. Entries are kept current by every write, in the
//! same atomic batch.

pub(crate) mod arrays;
pub(crate) mod build;
#[cfg(test)]
pub(crate) mod build_tests;
pub(crate) mod cache;
pub(crate) mod encode;
pub(crate) mod packed;
pub mod path;
pub(crate) mod stats;

pub use stats::IndexStats;

use crate::error::{Error, Result};
pub(crate) use arrays::ArrayFields;
use path::DocPath;
use stele_doc::{Document, Value};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    name: String,
    each: bool,
}

/// A parsed field path such as `address.city` or `tags[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

impl FieldPath {
    /// Parses `text`: names separated by dots, each optionally followed by `[]`.
    pub fn parse(text: &str) -> Result<FieldPath> {
        let bad = |reason| Error::InvalidFieldPath {
            path: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(bad("it is empty"));
        }
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (name, each) = match part.strip_suffix("[]") {
                Some(n) => (n, true),
                None => (part, false),
            };
            if name.is_empty() {
                return Err(bad("a name between dots is empty"));
            }
            if name.contains(['[', ']']) {
                return Err(bad("only `[]` (every element) may follow a name"));
            }
            steps.push(Step {
                name: name.to_owned(),
                each,
            });
        }
        Ok(FieldPath {
            text: text.to_owned(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every value the path reaches in `root`.
    pub(crate) fn values<'a>(&self, root: Value<'a>) -> Vec<Value<'a>> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                let Some(child) = v.get(&step.name) else {
                    continue;
                };
                if step.each {
                    if let Some(arr) = child.as_array() {
                        next.extend(arr.iter());
                    }
                } else {
                    next.push(child);
                }
            }
            current = next;
        }
        current
    }
}

/// An index's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// The index's name, unique within its collection.
    pub name: String,
    /// The collection it indexes.
    pub collection: String,
    /// The field paths, in key order.
    pub fields: Vec<FieldPath>,
    /// Per field, whether its values are kept in descending order.
    pub descending: Vec<bool>,
    /// The paths as queries read them (`crate::query::path`).
    doc_paths: Vec<DocPath>,
    /// Keys by the query rules (every value a path reaches, array elements, missing fields
    /// as an entry of their own), which the query planner relies on. `false` for an index
    /// an earlier version made (one entry per scalar value, none for a missing field):
    /// it is kept current, but queries do not use it; drop and create it again.
    pub(crate) query_keys: bool,
}

impl IndexDef {
    /// A definition; checks the names and parses the fields, each a dotted path with an
    /// optional direction: `a`, `b:desc` (also `:asc`, `:1`, `:-1`).
    pub fn new(collection: &str, name: &str, fields: &[&str]) -> Result<IndexDef> {
        let mut paths = Vec::with_capacity(fields.len());
        let mut descending = Vec::with_capacity(fields.len());
        for f in fields {
            let (path, desc) = match f.rsplit_once(':') {
                Some((p, "desc" | "-1")) => (p, true),
                Some((p, "asc" | "1")) => (p, false),
                _ => (*f, false),
            };
            paths.push(path);
            descending.push(desc);
        }
        IndexDef::from_parts(collection, name, &paths, descending, true)
    }

    /// A definition from its stored parts (manifest, log).
    pub(crate) fn from_parts(
        collection: &str,
        name: &str,
        fields: &[&str],
        descending: Vec<bool>,
        query_keys: bool,
    ) -> Result<IndexDef> {
        crate::internal::check_collection_name(collection)?;
        let ok_name = (1..=100).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !ok_name {
            return Err(Error::InvalidIndex {
                index: name.chars().take(120).collect(),
                reason: "names are 1 to 100 letters, digits, '_', '-' or '.'",
            });
        }
        if fields.is_empty() || fields.len() > 16 || descending.len() != fields.len() {
            return Err(Error::InvalidIndex {
                index: name.to_owned(),
                reason: "an index has 1 to 16 fields",
            });
        }
        let mut doc_paths = Vec::with_capacity(fields.len());
        for f in fields {
            doc_paths.push(DocPath::parse(f).map_err(|_| Error::InvalidFieldPath {
                path: (*f).to_owned(),
                reason: "names may not be empty or start with `$`",
            })?);
        }
        Ok(IndexDef {
            name: name.to_owned(),
            collection: collection.to_owned(),
            fields: fields
                .iter()
                .map(|f| FieldPath::parse(f))
                .collect::<Result<_>>()?,
            descending,
            doc_paths,
            query_keys,
        })
    }

    /// The paths as queries read them.
    pub(crate) fn doc_paths(&self) -> &[DocPath] {
        &self.doc_paths
    }

    /// Whether queries may use this index (see `query_keys`).
    pub fn serves_queries(&self) -> bool {
        self.query_keys
    }

    /// The fields as written in a definition: `a`, `b:desc`.
    pub fn field_specs(&self) -> Vec<String> {
        self.fields
            .iter()
            .zip(&self.descending)
            .map(|(f, &d)| {
                if d {
                    format!("{}:desc", f.as_str())
                } else {
                    f.as_str().to_owned()
                }
            })
            .collect()
    }

    /// The encoded values field `i` contributes for a document (before direction); adds
    /// `i` to `arrays` if the path reached an array or several values.
    fn field_values(
        &self,
        i: usize,
        doc: &Document<&[u8]>,
        arrays: &mut ArrayFields,
    ) -> Vec<Vec<u8>> {
        let mut encoded = Vec::new();
        if self.query_keys {
            let Some(path) = self.doc_paths.get(i) else {
                return encoded;
            };
            let mut array = false;
            encoded = query_entries_noting(path, doc.root(), &mut array);
            if array {
                arrays.add(i);
            }
        } else if let Some(field) = self.fields.get(i) {
            // An earlier version's keys: queries do not use the index, so what its fields
            // held is not told apart.
            arrays.add(i);
            for v in field.values(doc.root()) {
                let mut e = Vec::new();
                if encode::encode_value(&v, &mut e) {
                    encoded.push(e);
                }
            }
        }
        if self.descending.get(i).copied().unwrap_or(false) {
            for e in &mut encoded {
                e.iter_mut().for_each(|b| *b = !*b);
            }
        }
        encoded.sort();
        encoded.dedup();
        encoded
    }

    /// The index keys (value tuple + id) of document `doc` with id `id`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn keys(&self, doc: &Document<&[u8]>, id: &[u8]) -> Vec<Vec<u8>> {
        let mut arrays = ArrayFields::NONE;
        self.keys_noting(doc, id, &mut arrays)
    }

    /// The index keys (value tuple + id) of document `doc` with id `id`, adding to
    /// `arrays` the fields whose path reached an array or several values in it (see
    /// [`arrays`]).
    pub(crate) fn keys_noting(
        &self,
        doc: &Document<&[u8]>,
        id: &[u8],
        arrays: &mut ArrayFields,
    ) -> Vec<Vec<u8>> {
        let mut tuples: Vec<Vec<u8>> = vec![Vec::new()];
        for i in 0..self.fields.len() {
            let encoded = self.field_values(i, doc, arrays);
            let mut next = Vec::with_capacity(tuples.len() * encoded.len());
            for t in &tuples {
                for e in &encoded {
                    let mut k = t.clone();
                    k.extend_from_slice(e);
                    next.push(k);
                }
            }
            tuples = next;
        }
        for t in &mut tuples {
            t.extend_from_slice(id);
        }
        tuples
    }

    /// Splits an index key into its value tuple and the document id.
    pub(crate) fn split_key<'k>(&self, key: &'k [u8]) -> Option<(&'k [u8], &'k [u8])> {
        let mut at = 0;
        for &desc in &self.descending {
            let flip = if desc { 0xff } else { 0 };
            at += encode::encoded_len_flipped(key.get(at..)?, flip)?;
        }
        Some((key.get(..at)?, key.get(at..)?))
    }
}

/// The index entries of one path in a document, by the query rules: each value reached, an
/// array's elements instead of the array (an empty array as itself), and the missing
/// marker when the path reaches nothing; so every document has at least one entry, and a
/// filter condition on a scalar holds only for documents with an entry it matches.
pub(crate) fn query_entries(path: &DocPath, root: Value<'_>) -> Vec<Vec<u8>> {
    query_entries_noting(path, root, &mut false)
}

/// [`query_entries`], setting `array` if the path reached an array (even an empty one) or
/// more than one value: then the entries need not be one value that is the document's own.
pub(crate) fn query_entries_noting(
    path: &DocPath,
    root: Value<'_>,
    array: &mut bool,
) -> Vec<Vec<u8>> {
    let reached = path.reach(root);
    if reached.is_empty() {
        return vec![vec![encode::MISSING]];
    }
    if reached.len() > 1 {
        *array = true;
    }
    let mut out = Vec::new();
    for v in reached {
        if matches!(v, Value::Array(_)) {
            *array = true;
        }
        match v {
            Value::Array(a) if !a.is_empty() => {
                for e in a.iter() {
                    let mut enc = Vec::new();
                    encode::encode_any(&e, &mut enc);
                    out.push(enc);
                }
            }
            other => {
                let mut enc = Vec::new();
                encode::encode_any(&other, &mut enc);
                out.push(enc);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fan_out_over_arrays_and_mark_missing_fields() {
        let doc = stele_doc::from_json(
            br#"{"city":"Oslo","tags":["b","a","b"],"items":[{"sku":1},{"sku":2},{"x":0}]}"#,
        )
        .unwrap();
        let doc = Document::new(&doc[..]).unwrap();
        let def = IndexDef::new("c", "i", &["tags[]", "city"]).unwrap();
        let keys = def.keys(&doc, b"id7");
        assert_eq!(keys.len(), 2, "duplicate tags are one entry");
        for k in &keys {
            let (tuple, id) = def.split_key(k).unwrap();
            assert_eq!(id, b"id7");
            assert!(!tuple.is_empty());
        }
        let skus = IndexDef::new("c", "s", &["items[].sku"]).unwrap();
        assert_eq!(skus.keys(&doc, b"x").len(), 2);
        let missing = IndexDef::new("c", "m", &["nope"]).unwrap();
        // A missing field is an entry of its own (the missing marker), so every document
        // is in the index.
        assert_eq!(
            missing.keys(&doc, b"x"),
            vec![[&[encode::MISSING][..], b"x"].concat()]
        );
        assert!(FieldPath::parse("a..b").is_err());
        assert!(FieldPath::parse("a[0]").is_err());
        assert!(IndexDef::new("c", "bad name", &["a"]).is_err());
    }

    #[test]
    fn keys_note_the_fields_that_reached_arrays() {
        let def = IndexDef::new("c", "i", &["a", "b.c", "d", "e"]).unwrap();
        let arrays = |json: &str| {
            let bytes = stele_doc::from_json(json.as_bytes()).unwrap();
            let doc = Document::new(&bytes[..]).unwrap();
            let mut found = ArrayFields::NONE;
            def.keys_noting(&doc, b"x", &mut found);
            (0..4).filter(|&i| found.has(i)).collect::<Vec<_>>()
        };
        // Scalars, objects and missing fields are one entry a field.
        assert_eq!(
            arrays(r#"{"a":1,"b":{"c":"x"},"e":{"k":[1]}}"#),
            Vec::<usize>::new()
        );
        assert_eq!(arrays(r#"{"a":[],"b":{"c":[1,2]}}"#), [0, 1]);
        // Through an array of objects: several values, or one.
        assert_eq!(arrays(r#"{"b":[{"c":1},{"c":2}]}"#), [1]);
        assert_eq!(arrays(r#"{"d":[[1]]}"#), [2]);
        assert_eq!(
            arrays(r#"{"b":[{"c":1}]}"#),
            Vec::<usize>::new(),
            "one value, not an array: one entry, its own"
        );
    }
}
