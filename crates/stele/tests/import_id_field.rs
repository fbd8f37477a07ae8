//! Ids from a field stored once (issue 33): an import with an id field keeps each record
//! without that field (the block's key holds it) and puts it back, at its place, whenever
//! the document is read: get, export, queries (with and without an index on the field),
//! after a compaction, from a snapshot, beside documents put later in whole.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;
use common::data::slice;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use stele::export::{ExportOptions, export_jsonl};
use stele::import::{ImportOptions, import_reader};
use stele::{Database, Filter, Query};

fn export(db: &Database, coll: &str) -> Vec<String> {
    let mut out = Vec::new();
    export_jsonl(&db.snapshot(), coll, &mut out, &ExportOptions::new()).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn minified(line: &str) -> String {
    stele_doc::Document::new(stele_doc::from_json(line.as_bytes()).unwrap())
        .unwrap()
        .to_json()
}

/// `doc` (an object) with `field: id` as its member number `at` (modulo its length + 1).
fn with_field(doc: &Map<String, Value>, field: &str, id: Value, at: usize) -> Value {
    let at = at % (doc.len() + 1);
    let mut out = Map::new();
    for (i, (k, v)) in doc.iter().enumerate() {
        if i == at {
            out.insert(field.to_owned(), id.clone());
        }
        out.insert(k.clone(), v.clone());
    }
    if at == doc.len() {
        out.insert(field.to_owned(), id);
    }
    Value::Object(out)
}

fn import(db: &Database, coll: &str, lines: &[String], field: &str) -> u64 {
    let text = lines.join("\n") + "\n";
    let opts = ImportOptions::new().id_field(field);
    import_reader(db, coll, coll, text.as_bytes(), None, &opts, |_| {})
        .unwrap()
        .documents
}

fn query_ids(db: &Database, coll: &str, filter: &str) -> Vec<String> {
    let q = Query::new(coll).filter(Filter::parse(filter).unwrap());
    let out = db.snapshot().query(&q).unwrap();
    out.rows.iter().map(|r| r.id.clone()).collect()
}

/// Real collections with a string id field added first, in the middle or last (in turn):
/// every record is stored without it, and every read gives back the input document.
#[test]
fn real_collections_keep_the_id_once_and_read_back_as_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for (file, n) in [
        ("geonames-cities.jsonl.zst", 3000),
        ("mdn-compat-features.jsonl.zst", 600),
        ("emojibase.jsonl.zst", 1500),
        ("debian-packages.jsonl.zst", 800),
        ("vega-flights-200k.jsonl.zst", 3000),
    ] {
        let coll = file.split('.').next().unwrap();
        let lines: Vec<String> = slice(file, n)
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let Value::Object(doc) = serde_json::from_str(l).unwrap() else {
                    panic!("{file}: not an object");
                };
                with_field(&doc, "key", json!(format!("{coll}/{i:06}")), i).to_string()
            })
            .collect();
        assert_eq!(import(&db, coll, &lines, "key"), n as u64, "{file}");
        let forms = db.snapshot().packed_forms(coll).unwrap();
        assert_eq!(forms.elided + forms.text + forms.other, n as u64, "{file}");
        assert_eq!(forms.text, 0, "{file}: {forms:?}");
        assert!(forms.elided * 10 >= n as u64 * 9, "{file}: {forms:?}");
        // Ids sort as the input's order: the export is the input, minified.
        let want: Vec<String> = lines.iter().map(|l| minified(l)).collect();
        assert_eq!(export(&db, coll), want, "{file}");
        let snap = db.snapshot();
        for i in [0, 1, n / 2, n - 1] {
            let id = format!("{coll}/{i:06}");
            let doc = snap.get(coll, &id).unwrap().unwrap();
            assert_eq!(doc.to_json().unwrap(), want[i], "{file} {id}");
        }
        // A filter on the field sees it, with and without an index on it.
        let id = format!("{coll}/{:06}", n / 3);
        let filter = format!(r#"{{"key": "{id}"}}"#);
        let range = format!(r#"{{"key": {{"$gte": "{coll}/{:06}"}}}}"#, n - 10);
        assert_eq!(
            query_ids(&db, coll, &filter),
            std::slice::from_ref(&id),
            "{file}"
        );
        assert_eq!(query_ids(&db, coll, &range).len(), 10, "{file}");
        db.create_index(coll, "by_key", &["key"]).unwrap();
        assert_eq!(query_ids(&db, coll, &filter), [id], "{file} indexed");
        assert_eq!(query_ids(&db, coll, &range).len(), 10, "{file} indexed");
        db.drop_index(coll, "by_key").unwrap();
    }
}

/// Integer ids (every sign and length) keep their type when put back, and queries on the
/// field compare them as numbers; a string that looks like an integer stays a string.
#[test]
fn integer_ids_from_a_field_come_back_as_integers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let ints = [i64::MIN, -1000, -7, -1, 0, 1, 9, 10, 99, 12345, i64::MAX];
    let lines: Vec<String> = (0..4000)
        .map(|i: i64| {
            let id = ints
                .get(i as usize)
                .copied()
                .unwrap_or(i * 7919 - 3_000_000);
            let doc = json!({"a": i % 13, "s": format!("text {}", i % 17), "t": [i, "x"]});
            let Value::Object(doc) = doc else { panic!() };
            with_field(&doc, "id", json!(id), i as usize).to_string()
        })
        .collect();
    assert_eq!(import(&db, "n", &lines, "id"), 4000);
    let forms = db.snapshot().packed_forms("n").unwrap();
    assert_eq!(forms.elided, 4000, "{forms:?}");
    let mut want: Vec<(i64, String)> = lines
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_i64().unwrap(), minified(l))
        })
        .collect();
    want.sort();
    let want: Vec<String> = want.into_iter().map(|(_, l)| l).collect();
    assert_eq!(export(&db, "n"), want);
    let snap = db.snapshot();
    let min = snap.get("n", &i64::MIN.to_string()).unwrap().unwrap();
    assert!(
        min.to_json()
            .unwrap()
            .contains(&format!("\"id\":{}", i64::MIN))
    );
    let small = query_ids(&db, "n", r#"{"id": {"$gte": -7, "$lt": 10}}"#);
    assert_eq!(small, ["-7", "-1", "0", "1", "9"]);

    let strings = [r#"{"id":"007","v":1}"#, r#"{"v":2,"id":"42"}"#].map(str::to_owned);
    assert_eq!(import(&db, "s", &strings, "id"), 2);
    assert_eq!(export(&db, "s"), strings);
    assert_eq!(query_ids(&db, "s", r#"{"id": "42"}"#), ["42"]);
}

/// Documents put later through a batch are stored whole beside the elided ones; a
/// snapshot keeps reading what it saw while the collection compacts; a compaction and a
/// reopen read the same.
#[test]
fn later_puts_snapshots_and_compaction_read_as_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let lines: Vec<String> = (0..5000)
        .map(|i| {
            let doc = json!({"repository": format!("https://github.com/p{i}.git"), "n": i});
            let Value::Object(doc) = doc else { panic!() };
            let line = with_field(&doc, "name", json!(format!("p{i:05}")), i).to_string();
            model.insert(format!("p{i:05}"), minified(&line));
            line
        })
        .collect();
    import(&db, "c", &lines, "name");
    let forms = db.snapshot().packed_forms("c").unwrap();
    assert_eq!(forms.elided, 5000, "{forms:?}");
    let snap = db.snapshot();
    let before = model.clone();
    let mut batch = db.batch();
    // The field equal to the id, a field that differs from the id, no field at all.
    for (id, json) in [
        ("p00003", r#"{"n":-3,"name":"p00003"}"#),
        ("p00004", r#"{"name":"another","n":-4}"#),
        ("p00005", r#"{"n":-5}"#),
        ("zz", r#"{"name":"zz","n":"new"}"#),
    ] {
        batch.put_json("c", id, json.as_bytes()).unwrap();
        model.insert(id.to_owned(), json.to_owned());
    }
    batch.delete("c", "p00006").unwrap();
    model.remove("p00006");
    db.commit(batch).unwrap();
    let want: Vec<String> = model.values().cloned().collect();
    assert_eq!(export(&db, "c"), want);
    // A full compaction repacks every block in the smaller form: elided texts as they
    // are, or documents (with the field) where those pack smaller.
    db.compact().unwrap();
    assert_eq!(export(&db, "c"), want, "compacted");
    let forms = db.snapshot().packed_forms("c").unwrap();
    assert_eq!(forms.elided + forms.text + forms.other, 5000, "{forms:?}");
    let seen: Vec<String> = snap
        .iter("c")
        .map(|e| e.unwrap().1.to_json().unwrap())
        .collect();
    assert_eq!(
        seen,
        before.values().cloned().collect::<Vec<_>>(),
        "snapshot"
    );
    assert_eq!(query_ids(&db, "c", r#"{"name": "another"}"#), ["p00004"]);
    assert_eq!(
        query_ids(&db, "c", r#"{"name": "p00005"}"#),
        Vec::<String>::new()
    );
    drop(snap);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(export(&db, "c"), want, "reopened");
}

/// Object keys and string ids with escapes, quotes, non-ASCII text and blanks.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "b",
            "\"",
            "\\",
            "\n",
            "é",
            "{",
            "}",
            ",",
            ":",
            " ",
            "\u{1F600}",
            "\u{0}",
        ]),
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(64), ..ProptestConfig::default() })]

    /// Whatever the documents, the id field's place and the ids' spelling, the export of a
    /// collection imported with ids from a field is the input (a serde_json model), sorted
    /// by id, before and after a compaction.
    #[test]
    fn exports_equal_the_input_whatever_the_field_place(
        docs in prop::collection::vec(
            (prop::collection::vec((text(), json_value()), 0..5), text(), 0usize..6, any::<bool>()),
            1..40,
        ),
    ) {
        let mut model = std::collections::BTreeMap::new();
        let mut lines = Vec::new();
        for (i, (members, id, at, spaced)) in docs.into_iter().enumerate() {
            let doc: Map<String, Value> =
                members.into_iter().filter(|(k, _)| k != "the id").collect();
            let id = format!("{id}#{i}");
            let line = with_field(&doc, "the id", json!(id.clone()), at);
            let line = if spaced {
                serde_json::to_string_pretty(&line).unwrap().replace('\n', " ")
            } else {
                line.to_string()
            };
            model.insert(id, minified(&line));
            lines.push(line);
        }
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        import(&db, "c", &lines, "the id");
        let want: Vec<String> = model.values().cloned().collect();
        prop_assert_eq!(export(&db, "c"), want.clone());
        db.compact().unwrap();
        prop_assert_eq!(export(&db, "c"), want);
    }
}

/// A file sorted by its id field, packed while read (with a dictionary trained on the
/// sample's texts without their id field), stores the records without the field too.
#[test]
fn a_file_sorted_by_its_id_field_is_packed_while_read_without_the_field() {
    let work = tempfile::tempdir().unwrap();
    let opts = stele::DatabaseOptions::default().pack_block_bytes(1024);
    let db = Database::open_with(work.path().join("db"), opts).unwrap();
    let mut text = String::new();
    let mut want = Vec::new();
    for i in 0..8_000 {
        let line =
            format!(r#"{{"name":"pkg-{i:06}","repository":"https://github.com/pkg-{i}.git"}}"#);
        text.push_str(&line);
        text.push('\n');
        want.push(line);
    }
    let path = work.path().join("sorted.jsonl");
    std::fs::write(&path, &text).unwrap();
    let opts = ImportOptions::new().id_field("name");
    let r = stele::import::import_path(&db, "c", &path, &opts, |_| {}).unwrap();
    assert!(r.packed_while_reading, "{r:?}");
    let forms = db.snapshot().packed_forms("c").unwrap();
    assert_eq!(forms.elided, 8_000, "{forms:?}");
    assert_eq!(export(&db, "c"), want);
}

/// Arrow reads (on every core, a stretch of packed blocks each) see every document with its
/// id field back in place, as the input had it, and filters on that field select by it.
#[cfg(feature = "arrow")]
#[test]
fn arrow_reads_put_the_id_field_back() {
    use common::arrow::{read_all, rows, same};
    use stele::arrow::ArrowOptions;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                r#"{{"n":{i},"name":"pkg-{i:05}","repository":"https://github.com/pkg-{i:05}.git"}}"#
            )
        })
        .collect();
    assert_eq!(import(&db, "npm", &lines, "name"), 20_000);
    let got = rows(&read_all(&db, "npm", ArrowOptions::new()));
    assert_eq!(got.len(), lines.len());
    for ((id, row), line) in got.iter().zip(&lines) {
        let want: Value = serde_json::from_str(line).unwrap();
        assert_eq!(id.as_deref(), want["name"].as_str());
        assert!(same(row, &want), "got {row}\nwant {want}");
    }
    let filter = Filter::parse(r#"{"name": {"$gte": "pkg-19990"}, "n": {"$lt": 19995}}"#).unwrap();
    let some = rows(&read_all(
        &db,
        "npm",
        ArrowOptions::new().fields(&["name", "n"]).filter(filter),
    ));
    let names: Vec<&str> = some
        .iter()
        .filter_map(|(_, r)| r["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "pkg-19990",
            "pkg-19991",
            "pkg-19992",
            "pkg-19993",
            "pkg-19994"
        ]
    );
}
