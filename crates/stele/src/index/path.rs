//! Dotted paths into documents, as in MongoDB: `address.city`, `items.sku`, `tags.0`.
//!
//! Queries and indexes read documents through them (`crate::query`, [`crate::index`]).
//! A path reaches a set of values in a document:
//! - a name step takes that property of an object; applied to an array, it takes that
//!   property of every element that is an object (`items.sku` reaches every item's `sku`);
//! - a step of digits also indexes an array (`tags.0` is the first tag) and names a property
//!   of an object (`{"0": ..}`);
//! - arrays nested directly in arrays are not entered by a name step.
//!
//! The values reached are not expanded further: a filter then looks at each value and, for
//! an array, at each of its elements (`crate::query::filter`). A trailing `[]` on a step (the index
//! syntax of earlier versions, `tags[]`) is accepted and means nothing more.

use crate::error::{Error, Result};
use stele_doc::{CachedKey, Value};

/// A parsed dotted path such as `address.city` or `items.0.sku`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocPath {
    text: String,
    steps: Vec<String>,
    /// Per step, the array position it names (all digits), if any.
    positions: Vec<Option<usize>>,
}

/// The values a path reached: one (no array on the way, the common case, without
/// allocating), or any number.
pub(crate) enum Reached<'a> {
    One([Value<'a>; 1]),
    Many(Vec<Value<'a>>),
}

impl DocPath {
    /// Parses `text`: names separated by dots. Names may hold any character but a dot; a
    /// name may not be empty, and may not start with `$` (operators are not field names).
    pub fn parse(text: &str) -> Result<DocPath> {
        let bad = |reason: &str| Error::InvalidFilter {
            at: text.to_owned(),
            reason: format!(
                "the field path {text:?} {reason} (write names separated by dots: `address.city`, `items.sku`, `tags.0`)"
            ),
        };
        if text.is_empty() {
            return Err(bad("is empty"));
        }
        let mut steps = Vec::new();
        for part in text.split('.') {
            let name = part.strip_suffix("[]").unwrap_or(part);
            if name.is_empty() {
                return Err(bad("has an empty name between dots"));
            }
            if name.starts_with('$') {
                return Err(bad("has a name starting with `$`, which is an operator"));
            }
            steps.push(name.to_owned());
        }
        Ok(DocPath {
            text: text.to_owned(),
            positions: steps.iter().map(|s| position(s)).collect(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The names of its steps.
    pub fn steps(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(String::as_str)
    }

    /// Every value the path reaches in `root` (empty: the field is missing).
    pub(crate) fn reach<'a>(&self, root: Value<'a>) -> Vec<Value<'a>> {
        match self.reach_fast(root) {
            Reached::One([v]) => vec![v],
            Reached::Many(v) => v,
        }
    }

    /// The same, without allocating while no array is on the way.
    pub(crate) fn reach_fast<'a>(&self, root: Value<'a>) -> Reached<'a> {
        self.reach_with(root, |_, name, o| o.get(name))
    }

    /// The lookups of [`DocPath::reach_cached`], remembered across documents: one per step.
    pub(crate) fn cache(&self) -> ReachCache {
        ReachCache {
            keys: self.steps.iter().map(|s| CachedKey::new(s)).collect(),
        }
    }

    /// [`DocPath::reach_fast`], each object's lookup of a step through `cache` (made by
    /// [`DocPath::cache`] of this path): over documents of one shape the remembered slot
    /// holds and no name is searched for (`Object::find` and its compares were a third of
    /// a two-field count). A cache of another length is not used.
    #[inline]
    pub(crate) fn reach_cached<'a>(&self, root: Value<'a>, cache: &mut ReachCache) -> Reached<'a> {
        if cache.keys.len() != self.steps.len() {
            return self.reach_fast(root);
        }
        let keys = &mut cache.keys;
        self.reach_with(root, |k, name, o| match keys.get_mut(k) {
            Some(key) => key.get(o),
            None => o.get(name),
        })
    }

    /// The walk of [`DocPath::reach_fast`], `get(step, name, object)` looking each name up,
    /// until an array is met (then the general walk).
    #[inline(always)]
    fn reach_with<'a>(
        &self,
        root: Value<'a>,
        mut get: impl FnMut(usize, &str, stele_doc::Object<'a>) -> Option<Value<'a>>,
    ) -> Reached<'a> {
        let mut v = root;
        for (k, name) in self.steps.iter().enumerate() {
            match v {
                Value::Object(o) => match get(k, name, o) {
                    Some(child) => v = child,
                    None => return Reached::Many(Vec::new()),
                },
                Value::Array(_) => return Reached::Many(self.reach_from(v, k)),
                _ => return Reached::Many(Vec::new()),
            }
        }
        Reached::One([v])
    }

    /// The general walk, from `start` at step `from`.
    fn reach_from<'a>(&self, start: Value<'a>, from: usize) -> Vec<Value<'a>> {
        let mut current = vec![start];
        let mut next = Vec::new();
        for (name, index) in self.steps.iter().zip(&self.positions).skip(from) {
            let index = *index;
            for v in current.drain(..) {
                match v {
                    Value::Object(o) => next.extend(o.get(name)),
                    Value::Array(a) => match index {
                        Some(i) => next.extend(a.get(i)),
                        None => {
                            for e in a.iter() {
                                if let Value::Object(o) = e {
                                    next.extend(o.get(name));
                                }
                            }
                        }
                    },
                    _ => {}
                }
            }
            std::mem::swap(&mut current, &mut next);
            if current.is_empty() {
                break;
            }
        }
        current
    }
}

/// A path's object lookups remembered across documents ([`DocPath::cache`]): one
/// [`CachedKey`] per step, in order. Each key compares its name in full on a hit, so a
/// remembered slot never yields another property's value.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReachCache {
    keys: Vec<CachedKey>,
}

/// The array position a step names, if it is all digits.
pub(crate) fn position(name: &str) -> Option<usize> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stele_doc::Document;

    fn reach(json: &str, path: &str) -> Vec<String> {
        let bytes = stele_doc::from_json(json.as_bytes()).unwrap();
        let doc = Document::new(&bytes[..]).unwrap();
        DocPath::parse(path)
            .unwrap()
            .reach(doc.root())
            .iter()
            .map(|v| v.to_json())
            .collect()
    }

    #[test]
    fn paths_reach_through_arrays_of_objects() {
        let doc = r#"{"a":{"b":1},"items":[{"sku":"x"},{"sku":["y","z"]},{"n":1},5],"tags":["p","q"],"m":[[{"sku":9}]],"o":{"0":"zero"}}"#;
        assert_eq!(reach(doc, "a.b"), ["1"]);
        assert_eq!(reach(doc, "items.sku"), [r#""x""#, r#"["y","z"]"#]);
        assert_eq!(reach(doc, "tags.0"), [r#""p""#]);
        assert_eq!(reach(doc, "tags.5"), Vec::<String>::new());
        assert_eq!(reach(doc, "tags[]"), [r#"["p","q"]"#]);
        assert_eq!(reach(doc, "m.sku"), Vec::<String>::new());
        assert_eq!(reach(doc, "o.0"), [r#""zero""#]);
        assert_eq!(reach(doc, "nope.x"), Vec::<String>::new());
        assert!(DocPath::parse("a..b").is_err());
        assert!(DocPath::parse("").is_err());
        assert!(DocPath::parse("a.$gt").is_err());
    }
}
