//! `stele::arrow::import_arrow`: documents -> Arrow -> documents, written straight from the
//! arrays into the bulk import, on slices of every shared collection and on crafted
//! documents (same ids, documents equal under the inference rule); all or nothing on a bad
//! row or a failing stream; bad rows skipped when asked.
#![cfg(feature = "arrow")]
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;
use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use common::arrow::*;
use common::data::slice;
use std::collections::HashMap;
use std::sync::Arc;
use stele::arrow::{ArrowOptions, import_arrow};
use stele::import::{ImportError, ImportOptions};
use stele::{Database, IdKind};

/// Reads `coll` as Arrow in batches of `rows`, imports it into `copy` and checks that both
/// hold the same ids and documents.
fn assert_imports_back(db: &Database, coll: &str, copy: &str, rows: usize) {
    let batches = read_all(db, coll, ArrowOptions::new().batch_rows(rows));
    let schema = batches[0].schema();
    let given = Given(batches, schema, false);
    let report = import_arrow(db, copy, given, &ImportOptions::new(), |_| {}).unwrap();
    let want = documents(db, coll);
    assert_eq!(report.documents, want.len() as u64, "{coll}");
    let got = documents(db, copy);
    assert_eq!(got.len(), want.len(), "{coll}");
    for ((gid, g), (wid, w)) in got.iter().zip(&want) {
        assert_eq!(gid, wid, "{coll}");
        assert!(same(g, w), "{coll} {wid}:\n got {g}\nwant {w}");
    }
}

#[test]
fn every_shared_collection_imports_back_from_its_arrow_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for coll in shared_collections(&db) {
        assert_imports_back(&db, &coll, &format!("{coll}-copy"), 64);
    }
}

#[test]
fn unicode_big_numbers_nulls_nesting_and_own_ids_import_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let docs = [
        r#"{"s":"héllo ✓ 𝄞 \u0000 \"q\"","n":1,"f":1.5,"big":18446744073709551615,"huge":123456789012345678901234567890,"mix":1,"nest":{"a":{"b":[1,2,{"c":null}]}},"e":{},"arr":[[1],[2,3]],"nul":null,"_id":"own"}"#,
        r#"{"s":null,"n":-9223372036854775808,"f":2,"big":1,"huge":1,"mix":"one","nest":{"a":{"b":[]},"x":true},"e":{},"arr":[],"nul":null,"exp":1E5,"dec":12.50}"#,
        r#"{"n":9223372036854775807,"f":-0.0,"mix":[1],"nest":null,"arr":[null,[null]],"exp":2.5e-3,"dec":0.10,"tiny":1e-7}"#,
    ];
    let lines: Vec<String> = docs.iter().map(|d| (*d).to_owned()).collect();
    import(&db, "c", &lines);
    assert_imports_back(&db, "c", "copy", 2);
    // The root property `_id` (the column `doc._id`) is a property again, not the id.
    let snap = db.snapshot();
    let own = snap.get("copy", "0000000001").unwrap().unwrap();
    let own: serde_json::Value = serde_json::from_str(&own.to_json().unwrap()).unwrap();
    assert_eq!(own["_id"], "own");
    assert_eq!(own["huge"].to_string(), "123456789012345678901234567890");
    assert_eq!(own["big"].to_string(), "18446744073709551615");
}

#[test]
fn integer_ids_import_back_as_integer_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    for i in [3_i64, -7, 40, 1_000_000] {
        batch
            .put_json_int("ints", i, format!(r#"{{"v":{i}}}"#).as_bytes())
            .unwrap();
    }
    db.commit(batch).unwrap();
    assert_eq!(db.snapshot().id_kind("ints"), Some(IdKind::Int));
    assert_imports_back(&db, "ints", "copy", 3);
    assert_eq!(db.snapshot().id_kind("copy"), Some(IdKind::Int));
}

/// 100 rows in two batches: ids `r1`..`r100`, a JSON-text column whose row `bad` (if any)
/// does not parse.
fn rows_with_bad_json(bad: Option<usize>) -> Given {
    let json = HashMap::from([("ARROW:extension:name".to_owned(), "arrow.json".to_owned())]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("_id", DataType::Utf8, false),
        Field::new("n", DataType::Int64, true),
        Field::new("j", DataType::Utf8, true).with_metadata(json),
    ]));
    let mut batches = Vec::new();
    for start in [1, 51] {
        let mut ids = StringBuilder::new();
        let mut js = StringBuilder::new();
        let mut ns = Vec::new();
        for r in start..start + 50 {
            ids.append_value(format!("r{r:03}"));
            ns.push(Some(r as i64));
            js.append_value(if Some(r) == bad {
                "{oops".to_owned()
            } else {
                format!(r#"{{"k":[{r},"x"]}}"#)
            });
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(ids.finish()),
            Arc::new(Int64Array::from(ns)),
            Arc::new(js.finish()),
        ];
        batches.push(RecordBatch::try_new(schema.clone(), cols).unwrap());
    }
    Given(batches, schema, false)
}

#[test]
fn a_bad_row_or_a_failing_stream_lands_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let opts = ImportOptions::new();
    // A row of the second batch whose JSON text does not parse: nothing lands.
    let err = import_arrow(&db, "bad", rows_with_bad_json(Some(70)), &opts, |_| {}).unwrap_err();
    let ImportError::BadRecord(bad) = &err else {
        panic!("{err}");
    };
    assert_eq!(bad.record, 70, "{err}");
    assert!(bad.reason.contains("column j"), "{err}");
    assert!(!db.snapshot().has_collection("bad"));
    // Skipped when asked: the others land, the bad one is reported.
    let skip = opts.clone().skip_bad(true);
    let report = import_arrow(&db, "bad", rows_with_bad_json(Some(70)), &skip, |_| {}).unwrap();
    assert_eq!((report.documents, report.skipped), (99, 1));
    assert_eq!(report.bad[0].record, 70);
    let snap = db.snapshot();
    assert_eq!(snap.count("bad"), 99);
    assert!(snap.get("bad", "r070").unwrap().is_none());
    let doc = snap.get("bad", "r071").unwrap().unwrap().to_json().unwrap();
    assert_eq!(doc, r#"{"n":71,"j":{"k":[71,"x"]}}"#);
    // A stream failing after its batches lands nothing.
    let mut cut = rows_with_bad_json(None);
    cut.2 = true;
    let err = import_arrow(&db, "cut", cut, &opts, |_| {}).unwrap_err();
    assert!(err.to_string().contains("cut"), "{err}");
    assert!(!db.snapshot().has_collection("cut"));
    // A null id is a bad row too.
    let lines = slice("geonames-cities.jsonl.zst", 10);
    import(&db, "src", &lines);
    let batches = read_all(&db, "src", ArrowOptions::new().fields(&["name"]));
    let schema = batches[0].schema();
    let by_name = opts.clone().id_field("nope");
    let err = import_arrow(&db, "n", Given(batches, schema, false), &by_name, |_| {}).unwrap_err();
    assert!(err.to_string().contains("no id field \"nope\""), "{err}");
    assert!(!db.snapshot().has_collection("n"));
    // Types JSON has no value for are refused up front, by column.
    let dates = Arc::new(Schema::new(vec![Field::new("d", DataType::Date32, true)]));
    let err = import_arrow(&db, "d", Given(vec![], dates, false), &opts, |_| {}).unwrap_err();
    assert!(
        err.to_string().contains("column d has type Date32"),
        "{err}"
    );
}

/// A collection that is not written in bulk goes through the JSON import's staged write:
/// the same documents, the id column kept in them as `_id`.
#[test]
fn a_staged_import_keeps_the_id_column_as_a_property() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let opts = ImportOptions::new().bulk(false);
    let report = import_arrow(&db, "staged", rows_with_bad_json(None), &opts, |_| {}).unwrap();
    assert_eq!(report.documents, 100);
    let snap = db.snapshot();
    let doc = snap.get("staged", "r005").unwrap().unwrap();
    assert_eq!(
        doc.to_json().unwrap(),
        r#"{"_id":"r005","n":5,"j":{"k":[5,"x"]}}"#
    );
}

/// The staged write's JSON text of a struct column: its members in order, the null ones left
/// out, as the top-level columns of a row.
#[test]
fn a_staged_import_writes_struct_members_as_objects() {
    use arrow_array::{StringArray, StructArray};
    let members = vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ];
    let inner = StructArray::new(
        members.clone().into(),
        vec![
            Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("x\"y"), Some("z")])) as ArrayRef,
        ],
        None,
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("_id", DataType::Utf8, false),
        Field::new("s", DataType::Struct(members.into()), true),
        Field::new("n", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["k1", "k2"])) as ArrayRef,
            Arc::new(inner) as ArrayRef,
            Arc::new(Int64Array::from(vec![None, Some(7)])) as ArrayRef,
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let opts = ImportOptions::new().bulk(false);
    let given = Given(vec![batch], schema, false);
    let report = import_arrow(&db, "staged", given, &opts, |_| {}).unwrap();
    assert_eq!(report.documents, 2);
    let snap = db.snapshot();
    let json = |id: &str| snap.get("staged", id).unwrap().unwrap().to_json().unwrap();
    assert_eq!(json("k1"), r#"{"_id":"k1","s":{"a":1,"b":"x\"y"}}"#);
    assert_eq!(json("k2"), r#"{"_id":"k2","s":{"b":"z"},"n":7}"#);
}
