//! Secondary indexes: for each document, the values at one or more field paths, encoded
//! so that byte order is value order, followed by the document id, stored as the keys of
//! a durable map (values empty).
//!
//! A field path is dot-separated names; `[]` after a name takes every element of an array
//! (`tags[]`, `items[].sku`). A document gets one index entry per combination of values;
//! a document missing a field (or holding an object or array where a scalar is expected)
//! gets no entry for that combination. Entries are kept current by every write, in the
//! same atomic batch.

pub(crate) mod build;
#[cfg(test)]
pub(crate) mod build_tests;
pub(crate) mod encode;
pub(crate) mod packed;
pub(crate) mod stats;

pub use stats::IndexStats;

use crate::error::{Error, Result};
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
}

impl IndexDef {
    /// A definition; checks the names and parses the paths.
    pub fn new(collection: &str, name: &str, fields: &[&str]) -> Result<IndexDef> {
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
        if fields.is_empty() || fields.len() > 16 {
            return Err(Error::InvalidIndex {
                index: name.to_owned(),
                reason: "an index has 1 to 16 fields",
            });
        }
        Ok(IndexDef {
            name: name.to_owned(),
            collection: collection.to_owned(),
            fields: fields
                .iter()
                .map(|f| FieldPath::parse(f))
                .collect::<Result<_>>()?,
        })
    }

    /// The index keys (value tuple + id) of document `doc` with id `id`.
    pub(crate) fn keys(&self, doc: &Document<&[u8]>, id: &[u8]) -> Vec<Vec<u8>> {
        let mut tuples: Vec<Vec<u8>> = vec![Vec::new()];
        for field in &self.fields {
            let mut encoded = Vec::new();
            for v in field.values(doc.root()) {
                let mut e = Vec::new();
                if encode::encode_value(&v, &mut e) {
                    encoded.push(e);
                }
            }
            encoded.sort();
            encoded.dedup();
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
        for _ in &self.fields {
            at += encode::encoded_len(key.get(at..)?)?;
        }
        Some((key.get(..at)?, key.get(at..)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fan_out_over_arrays_and_skip_missing_fields() {
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
        assert!(missing.keys(&doc, b"x").is_empty());
        assert!(FieldPath::parse("a..b").is_err());
        assert!(FieldPath::parse("a[0]").is_err());
        assert!(IndexDef::new("c", "bad name", &["a"]).is_err());
    }
}
