//! What the Arrow tests share (`tests/arrow.rs`, `tests/arrow_import.rs`): batches read back
//! as JSON, equality under the inference rule, the shared collections' slices, a reader of
//! given batches.

use super::data::{data_dir, slice};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema};
use serde_json::{Map, Value as Json};
use std::sync::Arc;
use stele::Database;
use stele::arrow::ArrowOptions;
use stele::import::{ImportOptions, import_reader};

pub fn import(db: &Database, coll: &str, lines: &[String]) {
    let text = lines.join("\n") + "\n";
    let opts = ImportOptions::new();
    import_reader(db, coll, "t.jsonl", text.as_bytes(), None, &opts, |_| {}).unwrap();
}

/// Row `i` of a column as JSON: JSON-text columns parsed, struct children that are null
/// left out (a missing field and a null read alike).
pub fn cell(col: &dyn Array, field: &Field, i: usize) -> Json {
    if col.is_null(i) {
        return Json::Null;
    }
    let json_text = field
        .metadata()
        .get("ARROW:extension:name")
        .is_some_and(|v| v == "arrow.json");
    match col.data_type() {
        DataType::Boolean => Json::Bool(col.as_boolean().value(i)),
        DataType::Int64 => Json::from(col.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => Json::from(col.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 if json_text => serde_json::from_str(col.as_string::<i32>().value(i))
            .unwrap_or_else(|e| panic!("{}: {e}", field.name())),
        DataType::Utf8 => Json::String(col.as_string::<i32>().value(i).to_owned()),
        DataType::Struct(fields) => {
            let s = col.as_struct();
            let mut out = Map::new();
            for (f, c) in fields.iter().zip(s.columns()) {
                let v = cell(c.as_ref(), f, i);
                if !v.is_null() {
                    out.insert(f.name().clone(), v);
                }
            }
            Json::Object(out)
        }
        DataType::List(item) => {
            let list = col.as_list::<i32>().value(i);
            Json::Array((0..list.len()).map(|j| cell(&list, item, j)).collect())
        }
        other => panic!("unexpected type {other}"),
    }
}

/// Every row of the batches: (the `_id` column if any, the other columns as an object).
pub fn rows(batches: &[RecordBatch]) -> Vec<(Option<String>, Json)> {
    let mut out = Vec::new();
    for b in batches {
        let schema = b.schema();
        for i in 0..b.num_rows() {
            let mut id = None;
            let mut obj = Map::new();
            for (f, c) in schema.fields().iter().zip(b.columns()) {
                if f.name() == "_id" {
                    id = Some(c.as_string::<i32>().value(i).to_owned());
                    continue;
                }
                let name = if f.name() == "doc._id" {
                    "_id"
                } else {
                    f.name()
                };
                let v = cell(c.as_ref(), f, i);
                if !v.is_null() {
                    obj.insert(name.to_owned(), v);
                }
            }
            out.push((id, Json::Object(obj)));
        }
    }
    out
}

/// Equal under the inference rule: object members that are null count as missing, numbers
/// are equal by value (an integer read into a float column is that float).
pub fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let kept = |m: &Map<String, Json>| m.iter().filter(|(_, v)| !v.is_null()).count();
            kept(x) == kept(y)
                && x.iter()
                    .filter(|(_, v)| !v.is_null())
                    .all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Json::Number(x), Json::Number(y)) => {
            x.to_string() == y.to_string() || x.as_f64().is_some_and(|f| Some(f) == y.as_f64())
        }
        _ => a == b,
    }
}

pub fn read_all(db: &Database, coll: &str, opts: ArrowOptions) -> Vec<RecordBatch> {
    let reader = db.snapshot().scan_arrow(coll, opts).unwrap();
    reader.collect::<Result<Vec<_>, _>>().unwrap()
}

/// The documents of `coll` by id, as JSON.
pub fn documents(db: &Database, coll: &str) -> Vec<(String, Json)> {
    let snap = db.snapshot();
    snap.iter(coll)
        .map(|e| {
            let (id, d) = e.unwrap();
            (id, serde_json::from_str(&d.to_json().unwrap()).unwrap())
        })
        .collect()
}

pub fn assert_round_trip(db: &Database, coll: &str, opts: ArrowOptions) {
    let got = rows(&read_all(db, coll, opts));
    let want = documents(db, coll);
    assert_eq!(got.len(), want.len(), "{coll}");
    for ((gid, g), (wid, w)) in got.iter().zip(&want) {
        assert_eq!(gid.as_deref(), Some(wid.as_str()), "{coll}");
        assert!(same(g, w), "{coll} {wid}:\n got {g}\nwant {w}");
    }
}

/// A reader of given batches, failing after them when asked.
pub struct Given(pub Vec<RecordBatch>, pub Arc<Schema>, pub bool);

impl Iterator for Given {
    type Item = Result<RecordBatch, arrow_schema::ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return self
                .2
                .then(|| Err(arrow_schema::ArrowError::ComputeError("cut".into())))
                .inspect(|_| self.2 = false);
        }
        Some(Ok(self.0.remove(0)))
    }
}

impl RecordBatchReader for Given {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.1.clone()
    }
}

/// A slice of every shared collection, each in a collection of `db` named after its file;
/// returns the collections' names.
pub fn shared_collections(db: &Database) -> Vec<String> {
    let mut files: Vec<(String, usize)> = [
        ("geonames-cities.jsonl.zst", 300),
        ("mdn-compat-features.jsonl.zst", 120),
        ("emojibase.jsonl.zst", 300),
        ("github-webhooks.jsonl.zst", 40),
        ("debian-packages.jsonl.zst", 200),
        ("vega-flights-200k.jsonl.zst", 300),
        ("mongodb-zips.jsonl.zst", 300),
    ]
    .iter()
    .map(|(f, n)| ((*f).to_owned(), *n))
    .collect();
    let samples = data_dir().join("collections/mongodb-samples");
    let mut names: Vec<String> = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for name in names {
        files.push((format!("mongodb-samples/{name}"), 150));
    }
    let mut out = Vec::new();
    for (file, n) in &files {
        let coll: String = file
            .trim_end_matches(".jsonl.zst")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        import(db, &coll, &slice(file, *n));
        out.push(coll);
    }
    out
}
