//! `Snapshot::scan_arrow`: documents -> Arrow -> JSON values equal to the documents under
//! the inference rule (nulls and missing fields alike, integers in float columns as
//! floats), on slices of the shared collections and on crafted documents; named fields,
//! filters, given schemas, misfits, batches.
#![cfg(feature = "arrow")]
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema};
use common::arrow::*;
use serde_json::Value as Json;
use std::sync::Arc;
use stele::arrow::ArrowOptions;
use stele::{Database, Error, Filter};

#[test]
fn every_shared_collection_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for coll in shared_collections(&db) {
        // Inferred from every document, in several batches.
        let opts = ArrowOptions::new().sample_rows(usize::MAX).batch_rows(37);
        assert_round_trip(&db, &coll, opts);
    }
}

#[test]
fn unicode_big_numbers_nulls_and_nesting() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let docs = [
        r#"{"s":"héllo ✓ 𝄞 \u0000 \"q\"","n":1,"f":1.5,"big":18446744073709551615,"huge":123456789012345678901234567890,"mix":1,"nest":{"a":{"b":[1,2,{"c":null}]}},"e":{},"arr":[[1],[2,3]],"nul":null,"_id":"own"}"#,
        r#"{"s":null,"n":-9223372036854775808,"f":2,"big":1,"huge":1,"mix":"one","nest":{"a":{"b":[]},"x":true},"e":{},"arr":[],"nul":null,"exp":1E5,"dec":12.50}"#,
        r#"{"n":9223372036854775807,"f":-0.0,"mix":[1],"nest":null,"arr":[null,[null]],"exp":2.5e-3,"dec":0.10}"#,
    ];
    let lines: Vec<String> = docs.iter().map(|d| (*d).to_owned()).collect();
    import(&db, "c", &lines);
    assert_round_trip(&db, "c", ArrowOptions::new());
    let schema = db
        .snapshot()
        .scan_arrow("c", ArrowOptions::new())
        .unwrap()
        .schema();
    let ty = |name: &str| schema.field_with_name(name).unwrap().clone();
    let is_json = |f: &Field| {
        f.metadata().get("ARROW:extension:name").map(String::as_str) == Some("arrow.json")
    };
    assert_eq!(schema.field(0).name(), "_id");
    assert!(!schema.field(0).is_nullable());
    assert_eq!(ty("n").data_type(), &DataType::Int64);
    assert_eq!(ty("f").data_type(), &DataType::Float64);
    assert_eq!(ty("s").data_type(), &DataType::Utf8);
    assert!(!is_json(&ty("s")));
    for json in ["big", "huge", "mix", "nul", "e"] {
        assert!(is_json(&ty(json)), "{json}");
    }
    assert_eq!(ty("exp").data_type(), &DataType::Float64);
    assert!(matches!(ty("nest").data_type(), DataType::Struct(_)));
    assert!(matches!(ty("arr").data_type(), DataType::List(_)));
    assert!(schema.field_with_name("doc._id").is_ok());
    // Flat columns for flat formats: the same values, nested ones as JSON text.
    assert_round_trip(&db, "c", ArrowOptions::new().nested_as_json(true));
    let flat = db
        .snapshot()
        .scan_arrow("c", ArrowOptions::new().nested_as_json(true))
        .unwrap()
        .schema();
    assert!(is_json(flat.field_with_name("nest").unwrap()));
    assert!(is_json(flat.field_with_name("arr").unwrap()));
    assert_eq!(
        flat.field_with_name("n").unwrap().data_type(),
        &DataType::Int64
    );
}

#[test]
fn named_fields_and_filters_read_only_what_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..500)
        .map(|i| {
            format!(
                r#"{{"k":{i},"g":"g{}","a":{{"b":{}}},"skip":"x{i}"}}"#,
                i % 7,
                i * 2
            )
        })
        .collect();
    import(&db, "t", &lines);
    let filter = Filter::parse(r#"{"g": "g3"}"#).unwrap();
    let opts = ArrowOptions::new()
        .fields(&["a.b", "_id", "k", "absent"])
        .filter(filter)
        .batch_rows(10);
    let batches = read_all(&db, "t", opts);
    assert!(batches.iter().all(|b| b.num_rows() <= 10));
    let names: Vec<String> = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["a.b", "_id", "k", "absent"]);
    let got = rows(&batches);
    let want: Vec<i64> = (0..500).filter(|i| i % 7 == 3).collect();
    assert_eq!(got.len(), want.len());
    for ((_, row), k) in got.iter().zip(&want) {
        assert_eq!(row["k"], Json::from(*k));
        assert_eq!(row["a.b"], Json::from(k * 2));
        assert!(row.get("absent").is_none() && row.get("skip").is_none());
    }
}

#[test]
fn a_value_that_does_not_fit_names_the_document_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..50)
        .map(|i| match i {
            42 => r#"{"n":"forty-two","o":{"x":1}}"#.to_owned(),
            _ => format!(r#"{{"n":{i},"o":{{"x":{i}}}}}"#),
        })
        .collect();
    import(&db, "t", &lines);
    let schema = Arc::new(Schema::new(vec![
        Field::new("_id", DataType::Utf8, false),
        Field::new("n", DataType::Int64, true),
    ]));
    let id42 = db.snapshot().iter("t").nth(42).unwrap().unwrap().0;
    let mut reader = db
        .snapshot()
        .scan_arrow(
            "t",
            ArrowOptions::new().schema(schema.clone()).batch_rows(16),
        )
        .unwrap();
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 16);
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 16);
    let err = reader.next().unwrap().unwrap_err();
    let arrow_schema::ArrowError::ExternalError(e) = err else {
        panic!("{err}")
    };
    match e.downcast_ref::<Error>() {
        Some(Error::ArrowMisfit {
            id,
            field,
            expected,
            found,
            ..
        }) => {
            assert_eq!((id.as_str(), field.as_str()), (id42.as_str(), "n"));
            assert_eq!((expected.as_str(), found.as_str()), ("Int64", "string"));
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.next().is_none(), "the stream ends after an error");
    // Under the option, a null instead.
    let opts = ArrowOptions::new().schema(schema).misfits_as_null(true);
    let got = rows(&read_all(&db, "t", opts));
    assert_eq!(got.len(), 50);
    assert!(got[42].1.get("n").is_none());
    assert_eq!(got[41].1["n"], Json::from(41));
    // An inferred schema meets the same value after its sample.
    let reader = db
        .snapshot()
        .scan_arrow("t", ArrowOptions::new().sample_rows(10))
        .unwrap();
    let err = reader.collect::<Result<Vec<_>, _>>().unwrap_err();
    assert!(err.to_string().contains(&format!("{id42:?}")), "{err}");
    // A root property the sample did not show: named, or left out under the option.
    let mut late = lines.clone();
    late.push(r#"{"n":50,"o":{"x":50},"late":true}"#.to_owned());
    import(&db, "late", &late);
    let opts = ArrowOptions::new().sample_rows(50);
    let err = db.snapshot().scan_arrow("late", opts.clone()).unwrap();
    let err = err.collect::<Result<Vec<_>, _>>().unwrap_err();
    assert!(err.to_string().contains("\"late\""), "{err}");
    let got = rows(&read_all(&db, "late", opts.misfits_as_null(true)));
    assert_eq!(got.len(), 51);
    assert_eq!(got[50].1["n"], Json::from(50));
    // By default the schema is inferred from every document: nothing misfits.
    let got = rows(&read_all(&db, "late", ArrowOptions::new()));
    assert_eq!(got[50].1["late"], Json::Bool(true));
    // Types a document never holds are refused up front, by field.
    let bad = Arc::new(Schema::new(vec![Field::new(
        "o",
        DataType::Struct(vec![Field::new("x", DataType::Date32, true)].into()),
        true,
    )]));
    let err = db
        .snapshot()
        .scan_arrow("t", ArrowOptions::new().schema(bad))
        .unwrap_err();
    assert!(
        matches!(&err, Error::ArrowSchema { field, .. } if field == "o.x"),
        "{err}"
    );
}

#[test]
fn reading_twice_sees_the_snapshot_not_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..100).map(|i| format!(r#"{{"i":{i}}}"#)).collect();
    import(&db, "t", &lines);
    let snap = db.snapshot();
    import(&db, "t", &lines);
    for _ in 0..2 {
        let reader = snap
            .scan_arrow("t", ArrowOptions::new().batch_rows(30))
            .unwrap();
        let n: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(n, 100);
    }
    let missing = snap.scan_arrow("nothing", ArrowOptions::new()).unwrap();
    assert_eq!(missing.schema().fields().len(), 1);
    assert_eq!(missing.count(), 0);
}

#[test]
fn a_restarted_stream_reads_everything_again_with_the_same_schema() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..100)
        .map(|i| format!(r#"{{"i":{i},"a.b":"dotted","_id":{i}}}"#))
        .collect();
    import(&db, "t", &lines);
    let mut first = db
        .snapshot()
        .scan_arrow("t", ArrowOptions::new().batch_rows(40))
        .unwrap();
    assert_eq!(first.next().unwrap().unwrap().num_rows(), 40);
    let again = first.restart();
    assert_eq!(again.schema(), first.schema());
    let batches: Vec<RecordBatch> = again.map(Result::unwrap).collect();
    assert_eq!(
        batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
        100
    );
    assert_eq!(rows(&batches)[7].1["a.b"], Json::from("dotted"));
    assert_eq!(first.map(|b| b.unwrap().num_rows()).sum::<usize>(), 60);
}

#[test]
fn query_results_stream_with_their_filter_skip_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..300)
        .map(|i| format!(r#"{{"i":{i},"m":{}}}"#, i % 4))
        .collect();
    import(&db, "t", &lines);
    let q = stele::Query::new("t")
        .filter(Filter::parse(r#"{"m": 1}"#).unwrap())
        .skip(5)
        .limit(23);
    let want: Vec<String> = db
        .snapshot()
        .query(&q)
        .unwrap()
        .rows
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(want.len(), 23);
    let opts = stele::arrow::ArrowOptions::for_query(&q)
        .unwrap()
        .batch_rows(4);
    let reader = db.snapshot().scan_arrow(q.collection(), opts).unwrap();
    let again = reader.restart();
    for r in [reader, again] {
        let batches: Vec<RecordBatch> = r.map(Result::unwrap).collect();
        assert!(batches.iter().all(|b| b.num_rows() <= 4));
        let got: Vec<String> = rows(&batches)
            .into_iter()
            .map(|(id, _)| id.unwrap())
            .collect();
        assert_eq!(got, want);
    }
    let sorted = stele::Query::new("t").sort("i", true);
    let err = stele::arrow::ArrowOptions::for_query(&sorted).unwrap_err();
    assert!(err.to_string().contains("ORDER BY"), "{err}");
    let projected = stele::Query::new("t").select(&["i"]);
    assert!(stele::arrow::ArrowOptions::for_query(&projected).is_err());
}

/// A collection of integer ids: the `_id` column is Int64 holding the integers (in numeric
/// order), inferred or named, and a filter on `_id` compares them as numbers; a schema that
/// gives `_id` as Utf8 is refused with the type to give.
#[test]
fn integer_ids_are_an_int64_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    for i in [3i64, -7, 10, 1, 200] {
        batch
            .put_json_int("t", i, format!(r#"{{"v":{}}}"#, i * 2).as_bytes())
            .unwrap();
    }
    db.commit(batch).unwrap();
    let ids = |batches: &[RecordBatch]| -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let col = b.column_by_name("_id").unwrap();
                assert_eq!(col.data_type(), &DataType::Int64);
                col.as_primitive::<Int64Type>().values().to_vec()
            })
            .collect()
    };
    let all = read_all(&db, "t", ArrowOptions::new());
    assert_eq!(ids(&all), [-7, 1, 3, 10, 200]);
    assert_eq!(all[0].schema().field(0).name(), "_id");
    let filter = Filter::parse(r#"{"_id": {"$gte": 3, "$lt": 100}}"#).unwrap();
    let some = read_all(
        &db,
        "t",
        ArrowOptions::new().fields(&["_id", "v"]).filter(filter),
    );
    assert_eq!(ids(&some), [3, 10]);
    let text_id = Arc::new(Schema::new(vec![Field::new("_id", DataType::Utf8, false)]));
    let err = db
        .snapshot()
        .scan_arrow("t", ArrowOptions::new().schema(text_id))
        .unwrap_err();
    assert!(err.to_string().contains("Int64"), "{err}");
}

/// A collection of many packed blocks is read on every core, a stretch of blocks each: the
/// schema is the one a pass in order infers (keys in the order first seen), the rows come
/// in id order, equal to the documents, and a misfit in a later stretch ends the stream
/// after the batches before it.
#[test]
fn many_blocks_read_on_every_core_as_one_thread_would() {
    let dir = tempfile::tempdir().unwrap();
    let opts = stele::DatabaseOptions::default().pack_block_bytes(4096);
    let db = Database::open_with(dir.path(), opts).unwrap();
    let mut lines = common::data::slice("mdn-compat-features.jsonl.zst", 400);
    // A key first seen late, and a type that changes late: both must reach the schema.
    lines.push(r#"{"late":{"x":1},"__compat":"not an object"}"#.to_owned());
    import(&db, "m", &lines);
    let parallel = read_all(&db, "m", ArrowOptions::new().batch_rows(50));
    let in_order = read_all(&db, "m", ArrowOptions::new().sample_rows(usize::MAX - 1));
    assert_eq!(parallel[0].schema(), in_order[0].schema());
    let schema = parallel[0].schema();
    assert_eq!(schema.fields().last().unwrap().name(), "late");
    // One thread reads a query's results (a limit is counted in order).
    let query = stele::Query::new("m").limit(10_000);
    let opts = ArrowOptions::for_query(&query).unwrap().batch_rows(50);
    let one_thread = read_all(&db, "m", opts);
    assert_eq!(one_thread.len(), 9);
    assert_eq!(rows(&one_thread), rows(&parallel));
    // Batches end where stretches do: more of them than one thread's 9.
    let rows: usize = parallel.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, 401);
    assert!(parallel.len() > 9, "{} batches", parallel.len());
    assert!(parallel.iter().all(|b| b.num_rows() <= 50));
    assert_round_trip(&db, "m", ArrowOptions::new().batch_rows(50));
    // Row 351's `n` does not fit its column: the batches before it come first.
    let given = Arc::new(Schema::new(vec![
        Field::new("_id", DataType::Utf8, false),
        Field::new("n", DataType::Int64, true),
    ]));
    let nums: Vec<String> = (0..600)
        .map(|i| match i {
            351 => r#"{"n":"x"}"#.to_owned(),
            _ => format!(r#"{{"n":{i},"pad":"{}"}}"#, "p".repeat(60)),
        })
        .collect();
    import(&db, "n", &nums);
    let reader = db
        .snapshot()
        .scan_arrow("n", ArrowOptions::new().schema(given).batch_rows(40))
        .unwrap();
    let mut rows = 0;
    let mut err = None;
    for b in reader {
        match b {
            Ok(b) => rows += b.num_rows(),
            Err(e) => err = Some(e.to_string()),
        }
    }
    assert!((300..=351).contains(&rows), "{rows} rows before the misfit");
    assert!(err.unwrap().contains("0000000352"), "the document named");
}

/// Every-field reads guess each property's column from the document before: documents
/// whose properties come in other orders, with some missing or added, still put every
/// value in its own column.
#[test]
fn properties_in_changing_orders_reach_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines: Vec<String> = (0..400)
        .map(|i| match i % 4 {
            0 => format!(r#"{{"a":{i},"b":"b{i}","c":true}}"#),
            1 => format!(r#"{{"c":false,"a":{i},"b":"b{i}"}}"#),
            2 => format!(r#"{{"b":"b{i}","d":[{i}]}}"#),
            _ => format!(r#"{{"a":{i},"d":[],"b":"b{i}","c":null}}"#),
        })
        .collect();
    import(&db, "t", &lines);
    assert_round_trip(&db, "t", ArrowOptions::new().batch_rows(7));
}
