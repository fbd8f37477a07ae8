//! Projections: the parts of each document a query returns.
//!
//! An inclusion (`{"a": 1, "b.c": 1}`, or a list of paths) keeps those paths, nested as in
//! the document: `b.c` gives `{"b": {"c": ..}}`, and through an array of objects
//! (`items.sku`) an array of the objects' projections. An exclusion (`{"a": 0}`) keeps
//! everything else. Properties keep the document's order. `_id` is the row's id, outside
//! the document, so it is accepted and ignored.

use crate::error::{Error, Result};
use crate::query::filter::parse::json_document;
use crate::query::path::DocPath;
use std::collections::BTreeMap;
use stele_doc::{Document, JsonOptions, Value};

/// A set of paths as a tree of property names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Tree {
    /// The whole value at this point is named (a leaf).
    whole: bool,
    children: BTreeMap<String, Tree>,
}

impl Tree {
    fn add(&mut self, path: &DocPath) {
        let mut node = self;
        for step in path.steps() {
            if node.whole {
                return; // a shorter path already takes all of it
            }
            node = node.children.entry(step.to_owned()).or_default();
        }
        node.whole = true;
        node.children.clear();
    }
}

/// Which parts of documents to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Projection {
    include: bool,
    tree: Tree,
    paths: Vec<String>,
}

impl Projection {
    /// Keeps `paths`.
    pub(crate) fn include(paths: &[&str]) -> Result<Projection> {
        let mut tree = Tree::default();
        let mut kept = Vec::new();
        for p in paths {
            if *p == "_id" {
                continue;
            }
            let path = DocPath::parse(p)?;
            tree.add(&path);
            kept.push((*p).to_owned());
        }
        Ok(Projection {
            include: true,
            tree,
            paths: kept,
        })
    }

    /// Keeps (`include`) or drops `paths`, `_id` among them like any path.
    pub(crate) fn of(include: bool, paths: &[&str]) -> Result<Projection> {
        let mut tree = Tree::default();
        for p in paths {
            tree.add(&DocPath::parse(p)?);
        }
        Ok(Projection {
            include,
            tree,
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        })
    }

    /// Parses `{"a": 1, "b": 0}`-style JSON.
    pub(crate) fn parse(json: &str) -> Result<Projection> {
        let bad = |at: &str, reason: &str| Error::InvalidFilter {
            at: at.to_owned(),
            reason: reason.to_owned(),
        };
        let bytes = json_document(json, "projection")?;
        let doc = Document::new(&bytes[..]).map_err(|e| bad("$", &e.to_string()))?;
        let Value::Object(o) = doc.root() else {
            return Err(bad(
                "$",
                "a projection is an object: {\"a\": 1, \"b.c\": 1}",
            ));
        };
        let mut include = None;
        let mut tree = Tree::default();
        let mut paths = Vec::new();
        for (key, v) in o.iter_original() {
            let at = format!("$.{key}");
            let keep = match v {
                Value::Bool(b) => b,
                Value::Int(1) => true,
                Value::Int(0) => false,
                _ => return Err(bad(&at, "takes 1 (keep) or 0 (drop)")),
            };
            if key == "_id" {
                continue;
            }
            if include.is_some_and(|i| i != keep) {
                return Err(bad(
                    &at,
                    "a projection either keeps paths (1) or drops them (0), not both",
                ));
            }
            include = Some(keep);
            let path = DocPath::parse(key).map_err(|e| bad(&at, &e.to_string()))?;
            tree.add(&path);
            paths.push(key.to_owned());
        }
        Ok(Projection {
            include: include.unwrap_or(true),
            tree,
            paths,
        })
    }

    /// The projection of the document `root` as JSON text.
    pub(crate) fn apply(&self, root: Value<'_>) -> String {
        let mut out = Vec::with_capacity(128);
        let opts = JsonOptions::new();
        match root {
            Value::Object(_) => self.object(root, &self.tree, &mut out, &opts),
            other => other.write_json(&mut out, &opts),
        }
        String::from_utf8(out).unwrap_or_default()
    }

    fn object(&self, v: Value<'_>, node: &Tree, out: &mut Vec<u8>, opts: &JsonOptions) {
        let Value::Object(o) = v else {
            return;
        };
        out.push(b'{');
        let mut first = true;
        for (key, child) in o.iter_original() {
            let named = node.children.get(key);
            let keep_whole = match (self.include, named) {
                (true, None) => continue,
                (true, Some(n)) => n.whole,
                (false, None) => true,
                (false, Some(n)) if n.whole => continue,
                (false, Some(_)) => false,
            };
            if !keep_whole && self.include && !matches!(child, Value::Object(_) | Value::Array(_)) {
                continue; // a path through a scalar: nothing below it to keep
            }
            if !first {
                out.push(b',');
            }
            first = false;
            json_string(key, out);
            out.push(b':');
            match (keep_whole, named) {
                (false, Some(n)) => self.nested(child, n, out, opts),
                _ => child.write_json(out, opts),
            }
        }
        out.push(b'}');
    }

    /// A value below a named property that is not kept whole: objects are projected,
    /// arrays element by element; other values are dropped by an inclusion (there is
    /// nothing below them to keep) and kept by an exclusion.
    fn nested(&self, v: Value<'_>, node: &Tree, out: &mut Vec<u8>, opts: &JsonOptions) {
        match v {
            Value::Object(_) => self.object(v, node, out, opts),
            Value::Array(a) => {
                out.push(b'[');
                let mut first = true;
                for e in a.iter() {
                    let keep = match e {
                        Value::Object(_) | Value::Array(_) => true,
                        _ => !self.include,
                    };
                    if !keep {
                        continue;
                    }
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    self.nested(e, node, out, opts);
                }
                out.push(b']');
            }
            other => other.write_json(out, opts),
        }
    }
}

/// Appends `s` as a JSON string, quoted and escaped (the export's escaping).
pub(crate) fn json_string(s: &str, out: &mut Vec<u8>) {
    crate::json_text::write_json_string(out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(p: &Projection, json: &str) -> String {
        let bytes = stele_doc::from_json(json.as_bytes()).unwrap();
        p.apply(Document::new(&bytes[..]).unwrap().root())
    }

    #[test]
    fn inclusions_nest_and_exclusions_drop() {
        let doc = r#"{"z":1,"a":{"b":2,"c":3},"items":[{"sku":"x","q":1},{"q":2},7],"s":"t"}"#;
        let p = Projection::include(&["a.b", "items.sku", "s", "_id"]).unwrap();
        assert_eq!(
            apply(&p, doc),
            r#"{"a":{"b":2},"items":[{"sku":"x"},{}],"s":"t"}"#
        );
        let p = Projection::parse(r#"{"a.c": 0, "items.q": 0, "z": 0}"#).unwrap();
        assert_eq!(
            apply(&p, doc),
            r#"{"a":{"b":2},"items":[{"sku":"x"},{},7],"s":"t"}"#
        );
        assert!(Projection::parse(r#"{"a": 1, "b": 0}"#).is_err());
        assert!(Projection::parse(r#"{"a": "yes"}"#).is_err());
        let p = Projection::include(&["a", "a.b"]).unwrap();
        assert_eq!(apply(&p, doc), r#"{"a":{"b":2,"c":3}}"#);
    }
}
