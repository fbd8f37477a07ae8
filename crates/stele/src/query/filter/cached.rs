//! A filter tested against the documents of one scan, each field's lookups remembered from
//! one document to the next ([`Matcher`]): documents of a collection mostly share a shape,
//! so the slot where a field was found last holds it again, checked and read in place
//! instead of searched for by name (`Object::find`, `reach_fast` and their compares were
//! a third of a two-field count over 2,548 documents,
//! `docs/notes/2026-12-02-query-fixed-costs.md`). The answers are [`Filter::matches`']:
//! the same conditions on the same values, only found another way.

use super::{Cand, Cond, Filter, Node, cond_holds, reached_holds};
use crate::index::path::{DocPath, ReachCache, Reached};
use stele_doc::{CachedKey, Document};

/// A stored id as text: `from_utf8`'s check (ids are UTF-8) is a fraction of the lossy
/// conversion's, which walked every id in chunks (2 % of a full-scan count).
pub(crate) fn id_text(id: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(id) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(id),
    }
}

/// A [`Filter`] with a lookup cache per field condition, for one thread's scan (made by
/// [`Filter::matcher`]; not shared: each stretch of a parallel scan makes its own).
pub(crate) struct Matcher<'f> {
    node: Part<'f>,
    scratch: Vec<u8>,
}

/// A node of the filter, as [`Node`], its field conditions holding their caches.
enum Part<'f> {
    And(Vec<Part<'f>>),
    Or(Vec<Part<'f>>),
    Nor(Vec<Part<'f>>),
    /// A condition on the document's id (`_id`), not on a field.
    Id(&'f Cond),
    /// A path of one name (most filters' fields): looked up in the root object directly.
    Key(&'f DocPath, &'f Cond, CachedKey),
    Field(&'f DocPath, &'f Cond, ReachCache),
}

fn parts(fs: &[Filter]) -> Vec<Part<'_>> {
    fs.iter().map(part).collect()
}

fn part(f: &Filter) -> Part<'_> {
    match &f.node {
        Node::And(fs) => Part::And(parts(fs)),
        Node::Or(fs) => Part::Or(parts(fs)),
        Node::Nor(fs) => Part::Nor(parts(fs)),
        Node::Field(field) => {
            let (path, cond) = &**field;
            let mut steps = path.steps();
            match (steps.next(), steps.next()) {
                _ if path.as_str() == "_id" => Part::Id(cond),
                (Some(name), None) => Part::Key(path, cond, CachedKey::new(name)),
                _ => Part::Field(path, cond, path.cache()),
            }
        }
    }
}

impl Filter {
    /// This filter with its field lookups cached, for one scan.
    pub(crate) fn matcher(&self) -> Matcher<'_> {
        Matcher {
            node: part(self),
            scratch: Vec::new(),
        }
    }
}

impl Matcher<'_> {
    /// [`Filter::matches`] of the document `root` with the stored id `id` (made text only
    /// if a condition is on `_id`: most documents of a scan are rejected on their fields).
    #[inline]
    pub(crate) fn matches(&mut self, doc: &Document<&[u8]>, id: &[u8]) -> bool {
        test(&mut self.node, doc, id, &mut self.scratch)
    }
}

fn test(part: &mut Part<'_>, doc: &Document<&[u8]>, id: &[u8], scratch: &mut Vec<u8>) -> bool {
    match part {
        Part::And(parts) => parts.iter_mut().all(|p| test(p, doc, id, scratch)),
        Part::Or(parts) => parts.iter_mut().any(|p| test(p, doc, id, scratch)),
        Part::Nor(parts) => !parts.iter_mut().any(|p| test(p, doc, id, scratch)),
        Part::Id(cond) => cond_holds(cond, &[Cand::Id(&id_text(id))], scratch),
        Part::Key(path, cond, key) => match doc.root_object() {
            // The condition tested inside the read: the value is not moved as a whole.
            Some(o) => key
                .read(o, |v| reached_holds(cond, Reached::One([v]), scratch))
                .unwrap_or_else(|| reached_holds(cond, Reached::Many(Vec::new()), scratch)),
            None => reached_holds(cond, path.reach_fast(doc.root()), scratch),
        },
        Part::Field(path, cond, cache) => {
            reached_holds(cond, path.reach_cached(doc.root(), cache), scratch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(json: &str) -> Vec<u8> {
        stele_doc::from_json(json.as_bytes()).unwrap()
    }

    /// The cached lookups answer as the plain filter does over documents in turn whose shapes
    /// change from one to the next (keys added, removed, reordered, renamed to the same length,
    /// values of other types, arrays, nested objects, a root that is not an object), each
    /// matcher carrying its remembered slots from one document to the next.
    #[test]
    fn cached_lookups_answer_as_the_filter_whatever_the_shapes_in_turn() {
        let docs = [
            r#"{"a": 1, "b": "x", "c": {"d": 5}}"#,
            r#"{"a": 2, "b": "x", "c": {"d": 6}}"#,
            r#"{"b": "x", "a": 1}"#,
            r#"{"aa": 1, "b": "y", "c": {"e": 5}}"#,
            r#"{"a": [1, 2, 3], "b": ["x", "z"], "c": [{"d": 5}, {"d": 7}]}"#,
            r#"{"z": 0, "a": 1, "b": "x", "c": {"d": 5, "x": 1}}"#,
            r#"{"e": 1, "f": "x", "g": {"d": 5}}"#,
            r#"{"a": "1", "b": 1, "c": "d"}"#,
            r#"{}"#,
            r#"{"a": null, "b": null, "c": null}"#,
            r#"{"a": 1, "b": "x", "c": {"d": 5}, "_id": "x"}"#,
            r#"{"a": 1.5, "b": "xx", "c": {"d": [5]}}"#,
            r#"[{"a": 1}, {"a": 2}]"#,
            r#"{"a": 1, "b": "x", "c": {"d": 5}}"#,
            r#"{"c": {"0": 5}, "a": {"b": 1}}"#,
            r#"{"c": [5, 6], "a": 1}"#,
        ];
        let filters = [
            r#"{"a": 1}"#,
            r#"{"a": 1, "b": "x"}"#,
            r#"{"b": {"$gt": "w"}, "a": {"$lte": 2}}"#,
            r#"{"c.d": 5}"#,
            r#"{"c.d": {"$gte": 6}}"#,
            r#"{"c.0": 5}"#,
            r#"{"a": null}"#,
            r#"{"a": {"$exists": false}}"#,
            r#"{"$or": [{"a": 2}, {"c.d": 7}, {"b": "y"}]}"#,
            r#"{"$nor": [{"a": 1}, {"b": "x"}]}"#,
            r#"{"_id": "k3"}"#,
            r#"{"_id": {"$gt": "k5"}, "a": 1}"#,
            r#"{"b": {"$in": ["x", "y"]}, "a": {"$ne": 1}}"#,
            r#"{"c": {"$elemMatch": {"d": 7}}}"#,
            r#"{"a.b": 1}"#,
        ];
        let stored: Vec<Vec<u8>> = docs.iter().map(|d| doc(d)).collect();
        for text in filters {
            let filter = Filter::parse(text).unwrap();
            let mut matcher = filter.matcher();
            // Twice over, so that the slots remembered at the end meet the first shapes.
            for round in 0..2 {
                for (k, bytes) in stored.iter().enumerate() {
                    let d = Document::new(&bytes[..]).unwrap();
                    let id = format!("k{k}");
                    assert_eq!(
                        matcher.matches(&d, id.as_bytes()),
                        filter.matches(d.root(), &id),
                        "filter {text} on {} (round {round})",
                        docs[k]
                    );
                }
            }
        }
    }
}
