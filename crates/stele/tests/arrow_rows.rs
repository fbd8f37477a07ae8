//! `Snapshot::query_arrow` and `Snapshot::aggregate_arrow`: a sorted or projected query's
//! rows and an aggregation's output as Arrow, checked against the same query's rows
//! (`Snapshot::query`) and the same pipeline's output (`Snapshot::aggregate`) as JSON.
#![cfg(feature = "arrow")]

use crate::common;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema};
use common::arrow::*;
use serde_json::{Map, Value as Json};
use std::sync::Arc;
use stele::arrow::ArrowOptions;
use stele::{Database, Error, Filter, Pipeline, Query};

/// Every row of the batches as one JSON object (the `_id` column among the properties,
/// as text or as a number), nulls left out.
fn objects(batches: &[RecordBatch]) -> Vec<Json> {
    let mut out = Vec::new();
    for b in batches {
        let schema = b.schema();
        for i in 0..b.num_rows() {
            let mut obj = Map::new();
            for (f, c) in schema.fields().iter().zip(b.columns()) {
                let v = cell(c.as_ref(), f, i);
                if !v.is_null() {
                    obj.insert(f.name().clone(), v);
                }
            }
            out.push(Json::Object(obj));
        }
    }
    out
}

/// The rows of `q` as `query` returns them, each with its id as `_id` (a number for
/// integer ids when `int`).
fn expected(db: &Database, q: &Query, int: bool) -> Vec<Json> {
    let out = db.snapshot().query(q).unwrap();
    out.rows
        .into_iter()
        .map(|r| {
            let mut doc: Json = serde_json::from_str(&r.json).unwrap();
            let id = if int {
                Json::from(r.id.parse::<i64>().unwrap())
            } else {
                Json::from(r.id)
            };
            doc.as_object_mut().unwrap().insert("_id".to_owned(), id);
            doc
        })
        .collect()
}

fn assert_same_rows(got: &[Json], want: &[Json]) {
    assert_eq!(got.len(), want.len(), "rows: {got:?} against {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(same(g, w), "{g} against {w}");
    }
}

fn collect(r: stele::arrow::ArrowReader) -> Vec<RecordBatch> {
    r.collect::<Result<Vec<_>, _>>().unwrap()
}

fn sample_db(dir: &std::path::Path) -> Database {
    let db = Database::open(dir).unwrap();
    let lines: Vec<String> = (0..500)
        .map(|i| {
            let extra = if i % 7 == 0 {
                String::new()
            } else {
                format!(
                    r#","tags":["t{}","u"],"deep":{{"a":{},"b":"x{i}"}}"#,
                    i % 3,
                    i % 11
                )
            };
            format!(
                r#"{{"i":{i},"m":{},"s":"s{}"{extra}}}"#,
                i % 5,
                (i * 37) % 101
            )
        })
        .collect();
    import(&db, "t", &lines);
    db
}

/// A sorted query streams its rows in the query's order, after its skip and limit, in
/// batches, each column as the query's own rows hold it; a restarted stream reads the same.
#[test]
fn a_sorted_query_streams_its_rows_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = sample_db(dir.path());
    let q = Query::new("t")
        .filter(Filter::parse(r#"{"m": {"$in": [1, 3]}}"#).unwrap())
        .sort("s", false)
        .sort("i", true)
        .skip(7)
        .limit(90);
    let want = expected(&db, &q, false);
    assert_eq!(want.len(), 90);
    let reader = db
        .snapshot()
        .query_arrow(&q, ArrowOptions::new().batch_rows(16))
        .unwrap();
    assert_eq!(reader.schema().field(0).name(), "_id");
    let again = reader.restart();
    for r in [reader, again] {
        let batches = collect(r);
        assert!(batches.iter().all(|b| b.num_rows() <= 16));
        assert_same_rows(&objects(&batches), &want);
    }
    // Without a limit: every matching row, sorted (the engine's streamed sort).
    let all = Query::new("t").sort("deep.a", false).sort("i", false);
    let got = objects(&collect(
        db.snapshot()
            .query_arrow(&all, ArrowOptions::new())
            .unwrap(),
    ));
    assert_same_rows(&got, &expected(&db, &all, false));
    assert_eq!(got.len(), 500);
}

/// A projection gives the projected documents' shape (a nested path kept is a struct
/// column), an exclusion drops its columns, and `fields` names paths into the rows.
#[test]
fn a_projection_shapes_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = sample_db(dir.path());
    let q = Query::new("t").select(&["deep.b", "i"]).sort("i", true);
    let batches = collect(db.snapshot().query_arrow(&q, ArrowOptions::new()).unwrap());
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["_id", "i", "deep"]);
    match schema.field_with_name("deep").unwrap().data_type() {
        DataType::Struct(children) => {
            assert_eq!(children.len(), 1);
            assert_eq!(children[0].name(), "b");
        }
        other => panic!("deep is {other}"),
    }
    assert_same_rows(&objects(&batches), &expected(&db, &q, false));

    let dropped = Query::new("t")
        .filter(Filter::parse(r#"{"m": 2}"#).unwrap())
        .projection_json(r#"{"tags": 0, "deep": 0}"#)
        .unwrap();
    let batches = collect(
        db.snapshot()
            .query_arrow(&dropped, ArrowOptions::new())
            .unwrap(),
    );
    let schema = batches[0].schema();
    assert!(schema.field_with_name("tags").is_err());
    assert!(schema.field_with_name("deep").is_err());
    assert_same_rows(&objects(&batches), &expected(&db, &dropped, false));

    let named = db
        .snapshot()
        .query_arrow(&q, ArrowOptions::new().fields(&["deep.b", "_id"]))
        .unwrap();
    let batches = collect(named);
    let schema = batches[0].schema();
    assert_eq!(schema.field(0).name(), "deep.b");
    assert_eq!(schema.field(1).name(), "_id");
    let col = batches[0].column(0).as_string::<i32>();
    // Sorted by i descending: 499 first (i % 7 != 0, so it has deep.b).
    assert_eq!(col.value(0), "x499");
}

/// Without a sort or a projection, `query_arrow` is the collection's own read with the
/// query's filter, skip and limit.
#[test]
fn an_unsorted_query_reads_as_scan_arrow() {
    let dir = tempfile::tempdir().unwrap();
    let db = sample_db(dir.path());
    let q = Query::new("t")
        .filter(Filter::parse(r#"{"tags": "t1"}"#).unwrap())
        .skip(3)
        .limit(40);
    let got = objects(&collect(
        db.snapshot().query_arrow(&q, ArrowOptions::new()).unwrap(),
    ));
    assert_same_rows(&got, &expected(&db, &q, false));
}

/// Integer ids stay an Int64 `_id` column in the sort's order.
#[test]
fn sorted_rows_of_integer_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    for i in [3i64, -7, 10, 1, 200, 42] {
        batch
            .put_json_int("t", i, format!(r#"{{"v":{}}}"#, (i * 13) % 17).as_bytes())
            .unwrap();
    }
    db.commit(batch).unwrap();
    let q = Query::new("t").sort("v", true);
    let batches = collect(db.snapshot().query_arrow(&q, ArrowOptions::new()).unwrap());
    let col = batches[0].column_by_name("_id").unwrap();
    assert_eq!(col.data_type(), &DataType::Int64);
    let want: Vec<i64> = expected(&db, &q, true)
        .iter()
        .map(|d| d["_id"].as_i64().unwrap())
        .collect();
    assert_eq!(col.as_primitive::<Int64Type>().values().to_vec(), want);
    assert_same_rows(&objects(&batches), &expected(&db, &q, true));
}

/// An aggregation's output: its documents' properties as columns (`_id` the group key, not
/// a document id), equal to what `aggregate` returns, read any number of times.
#[test]
fn an_aggregation_streams_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = sample_db(dir.path());
    let pipeline = Pipeline::parse(
        r#"[{"$match": {"i": {"$gte": 10}}},
            {"$group": {"_id": "$m", "n": {"$count": {}}, "top": {"$max": "$i"}, "all": {"$push": "$s"}}},
            {"$sort": {"_id": 1}}]"#,
    )
    .unwrap();
    let want: Vec<Json> = db
        .snapshot()
        .aggregate("t", &pipeline)
        .unwrap()
        .rows
        .iter()
        .map(|j| serde_json::from_str(j).unwrap())
        .collect();
    assert_eq!(want.len(), 5);
    let reader = db
        .snapshot()
        .aggregate_arrow("t", &pipeline, ArrowOptions::new().batch_rows(2))
        .unwrap();
    let schema = reader.schema();
    assert_eq!(schema.field(0).name(), "_id");
    assert_eq!(schema.field(0).data_type(), &DataType::Int64);
    assert!(matches!(
        schema.field_with_name("all").unwrap().data_type(),
        DataType::List(_)
    ));
    let again = reader.restart();
    for r in [reader, again] {
        let batches = collect(r);
        assert_eq!(batches.len(), 3);
        assert_same_rows(&objects(&batches), &want);
    }
    // A count alone: one row, one column.
    let count = Pipeline::parse(r#"[{"$match": {"m": 4}}, {"$count": "n"}]"#).unwrap();
    let batches = collect(
        db.snapshot()
            .aggregate_arrow("t", &count, ArrowOptions::new())
            .unwrap(),
    );
    assert_eq!(objects(&batches), [serde_json::json!({"n": 100})]);
}

/// A value of the output that does not fit a given schema names the output row and the
/// field, or reads as null when asked.
#[test]
fn an_aggregation_misfit_names_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = sample_db(dir.path());
    let pipeline =
        Pipeline::parse(r#"[{"$group": {"_id": "$m"}}, {"$sort": {"_id": 1}}]"#).unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("_id", DataType::Utf8, true)]));
    let reader = db
        .snapshot()
        .aggregate_arrow("t", &pipeline, ArrowOptions::new().schema(schema.clone()))
        .unwrap();
    let err = reader.collect::<Result<Vec<_>, _>>().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("output row 1") && text.contains("_id"),
        "{text}"
    );
    let nulls = db
        .snapshot()
        .aggregate_arrow(
            "t",
            &pipeline,
            ArrowOptions::new().schema(schema).misfits_as_null(true),
        )
        .unwrap();
    let batches = collect(nulls);
    assert_eq!(batches[0].num_rows(), 5);
    assert_eq!(batches[0].column(0).null_count(), 5);
    // A bad stage is the pipeline's error, before any stream.
    let bad = Pipeline::parse(r#"[{"$group": {"_id": "$m", "x": {"$median": "$i"}}}]"#);
    assert!(matches!(bad, Err(Error::InvalidFilter { .. })));
}
