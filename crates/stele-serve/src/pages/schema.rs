//! The schema summary of a collection: the fields a sample of its documents has, their
//! types and how often each is present (MongoDB Compass's schema tab, in small).

use crate::error::ServeError;
use crate::options::Deadline;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use stele::Snapshot;

/// Levels of nesting followed (`a.b.c`); deeper fields are counted under their parent.
const MAX_DEPTH: usize = 3;
/// Fields reported at most (a collection of wide documents keeps the most frequent).
const MAX_FIELDS: usize = 200;

/// Documents sampled: a collection's first documents, in id order.
pub(crate) const SAMPLE: usize = 100;
/// Largest sample (ids and stored bytes) kept to tell whether it changed; a bigger one is
/// summarized again at every new commit instead.
const KEEP_SAMPLE_BYTES: usize = 1 << 20;
/// Collections whose summaries are kept at most (past it the cache starts over).
const MAX_COLLECTIONS: usize = 64;

/// The schema summaries of the collections' first [`SAMPLE`] documents, kept between
/// requests: summarizing parses every sampled document, which cost a collection page as
/// much as its own 50 documents. A summary is used again for the snapshot (sequence
/// number) it was made or checked at; at a new commit the sample's ids and stored bytes are
/// read again (no JSON) and compared with the kept ones, and only a changed sample is
/// summarized again. So the summary is always that of the snapshot the request reads.
#[derive(Debug, Default)]
pub(crate) struct SchemaCache {
    by_collection: Mutex<HashMap<String, Cached>>,
}

#[derive(Debug)]
struct Cached {
    seq: u64,
    /// The sample's ids and stored bytes, each length-prefixed; `None` when too big to keep.
    sample: Option<Vec<u8>>,
    summary: Arc<Value>,
}

impl SchemaCache {
    /// The summary of `collection`'s first documents as `snap` holds them.
    pub(crate) fn summary(
        &self,
        snap: &Snapshot,
        collection: &str,
        deadline: &Deadline,
    ) -> Result<Arc<Value>, ServeError> {
        let seq = snap.seq();
        if let Some(c) = self.lock().get(collection)
            && c.seq == seq
        {
            return Ok(c.summary.clone());
        }
        let mut sample = Vec::new();
        let mut docs = Vec::with_capacity(SAMPLE);
        for entry in snap.iter(collection).take(SAMPLE) {
            deadline.check()?;
            let (id, doc) = entry?;
            for part in [id.as_bytes(), doc.bytes()] {
                sample.extend_from_slice(&(part.len() as u64).to_le_bytes());
                sample.extend_from_slice(part);
            }
            docs.push(doc);
        }
        let sample = (sample.len() <= KEEP_SAMPLE_BYTES).then_some(sample);
        if let Some(c) = self.lock().get_mut(collection)
            && sample.is_some()
            && c.sample == sample
        {
            c.seq = seq;
            return Ok(c.summary.clone());
        }
        let mut values = Vec::with_capacity(docs.len());
        for doc in &docs {
            deadline.check()?;
            values.push(super::parse_json(&doc.to_json()?)?);
        }
        let summary = Arc::new(summarize(values.iter()));
        let mut map = self.lock();
        if map.len() >= MAX_COLLECTIONS && !map.contains_key(collection) {
            map.clear();
        }
        map.insert(
            collection.to_owned(),
            Cached {
                seq,
                sample,
                summary: summary.clone(),
            },
        );
        Ok(summary)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        // The map is whole whatever a panicking holder did (entries are replaced whole).
        self.by_collection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Default)]
struct Field {
    /// Order of first appearance, to list fields as documents hold them.
    first_seen: usize,
    /// Documents that have it.
    present: u64,
    /// Values per type name.
    types: BTreeMap<&'static str, u64>,
}

/// Fields of `docs` by path (`a.b`; array elements' fields as `a.b` too, as queries name
/// them), with their types and presence, most frequent first.
pub(crate) fn summarize<'a>(docs: impl Iterator<Item = &'a Value>) -> Value {
    let mut fields: BTreeMap<String, Field> = BTreeMap::new();
    let mut n = 0u64;
    for doc in docs {
        n += 1;
        let mut seen = BTreeMap::new();
        if let Value::Object(map) = doc {
            walk(map, "", 0, &mut fields, &mut seen);
        }
        for path in seen.into_keys() {
            if let Some(f) = fields.get_mut(&path) {
                f.present += 1;
            }
        }
    }
    let mut list: Vec<(String, Field)> = fields.into_iter().collect();
    list.sort_by(|a, b| {
        b.1.present
            .cmp(&a.1.present)
            .then(a.1.first_seen.cmp(&b.1.first_seen))
    });
    list.truncate(MAX_FIELDS);
    list.sort_by_key(|(_, f)| f.first_seen);
    let out: Vec<Value> = list
        .into_iter()
        .map(|(path, f)| {
            json!({
                "path": path,
                "present": f.present,
                "share": if n > 0 { f.present as f64 / n as f64 } else { 0.0 },
                "types": f.types,
            })
        })
        .collect();
    json!({"sampled": n, "fields": out})
}

fn walk(
    map: &Map<String, Value>,
    prefix: &str,
    depth: usize,
    fields: &mut BTreeMap<String, Field>,
    seen: &mut BTreeMap<String, ()>,
) {
    for (k, v) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        add(&path, v, depth, fields, seen);
    }
}

fn add(
    path: &str,
    v: &Value,
    depth: usize,
    fields: &mut BTreeMap<String, Field>,
    seen: &mut BTreeMap<String, ()>,
) {
    let next = fields.len();
    let f = fields.entry(path.to_owned()).or_insert_with(|| Field {
        first_seen: next,
        ..Field::default()
    });
    *f.types.entry(type_name(v)).or_insert(0) += 1;
    seen.insert(path.to_owned(), ());
    if depth + 1 >= MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => walk(m, path, depth + 1, fields, seen),
        Value::Array(items) => {
            for item in items {
                if let Value::Object(m) = item {
                    walk(m, path, depth + 1, fields, seen);
                }
            }
        }
        _ => {}
    }
}

/// The type names of the query language's `$type`.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_presence_and_types() {
        let docs: Vec<Value> = [
            r#"{"a": 1, "b": {"c": "x"}, "t": [{"k": 1}]}"#,
            r#"{"a": "s", "t": []}"#,
        ]
        .iter()
        .filter_map(|s| serde_json::from_str(s).ok())
        .collect();
        let s = summarize(docs.iter());
        assert_eq!(s["sampled"], 2);
        let f = &s["fields"];
        assert_eq!(f[0]["path"], "a");
        assert_eq!(f[0]["present"], 2);
        assert_eq!(f[0]["types"]["integer"], 1);
        assert_eq!(f[0]["types"]["string"], 1);
        assert_eq!(f[1]["path"], "b");
        assert_eq!(f[2]["path"], "b.c");
        assert_eq!(f[2]["present"], 1);
        let tk = f
            .as_array()
            .into_iter()
            .flatten()
            .find(|x| x["path"] == "t.k");
        assert_eq!(tk.map(|x| x["present"].clone()), Some(json!(1)));
    }
}
