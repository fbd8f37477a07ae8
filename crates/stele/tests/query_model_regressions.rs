//! Regressions the query model's property test found (`query_model.rs`), each as the
//! smallest case it shrank to, answered alike with and without an index.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use stele::{Database, Filter, Query};

/// A database whose collection `c` holds `docs` (id, JSON), committed.
fn db_with(docs: &[(&str, &str)]) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    for (id, json) in docs {
        batch.put_json("c", id, json.as_bytes()).unwrap();
    }
    db.commit(batch).unwrap();
    (dir, db)
}

/// The ids `q` answers with, in order, and its plan.
fn answer(db: &Database, q: &Query) -> (Vec<String>, String) {
    let out = db.snapshot().query(q).unwrap();
    let ids = out.rows.iter().map(|r| r.id.clone()).collect();
    (ids, out.plan.to_string())
}

/// Regression (found by the property test): a condition on the sorted path that narrows no
/// key range (`null` matches a missing field too) still passes over an array's entries
/// that fail it, so the index cannot serve that sort: `[false, null]` sorts by `false`
/// descending, before `null`, though only its `null` entry meets the filter.
#[test]
fn a_condition_on_the_sorted_path_keeps_the_sort_off_the_index() {
    let (_dir, db) = db_with(&[("d1", r#"{"a": null}"#), ("d2", r#"{"a": [false, null]}"#)]);
    for with_index in [false, true] {
        if with_index {
            db.create_index("c", "ix", &["a:desc", "tags:desc"])
                .unwrap();
        }
        for (filter, want) in [
            (r#"{"a": null}"#, ["d2", "d1"]),
            (r#"{"a": {"$ne": true}}"#, ["d2", "d1"]),
        ] {
            let q = Query::new("c")
                .filter(Filter::parse(filter).unwrap())
                .sort("a", true);
            let (ids, plan) = answer(&db, &q);
            assert_eq!(ids, want, "{filter}, index {with_index}: {plan}");
        }
    }
}

/// Regression (found by the property test): `$all` whose first value is `null` narrows the
/// index as `null` does, to the missing marker and null together, which is no single key:
/// on a descending field it was taken for one and found nothing.
#[test]
fn all_of_null_finds_null_through_a_descending_index() {
    let (_dir, db) = db_with(&[
        ("d1", r#"{"a": null}"#),
        ("d2", r#"{"b": 1}"#),
        ("d3", r#"{"a": [null, 2]}"#),
    ]);
    for index in [None, Some(["a:desc", "tags:desc"]), Some(["a", "tags"])] {
        if let Some(fields) = index {
            let _ = db.drop_index("c", "ix");
            db.create_index("c", "ix", &fields).unwrap();
        }
        let q = Query::new("c").filter(Filter::parse(r#"{"a": {"$all": [null]}}"#).unwrap());
        let (ids, plan) = answer(&db, &q);
        assert_eq!(ids, ["d1", "d2", "d3"], "index {index:?}: {plan}");
    }
}

/// Regression (found by the property test): a sort on a path that an equality fixes is not
/// served by the index, since an array holding the value sorts by its smallest element.
#[test]
fn a_sort_on_a_field_fixed_by_an_equality_still_sorts_arrays_by_their_smallest_element() {
    let (_dir, db) = db_with(&[
        ("d1", r#"{"tags": ["x"], "a": 3}"#),
        ("d2", r#"{"tags": ["ab", "x"], "a": 1}"#),
        ("d3", r#"{"tags": ["x", "z"], "a": 2}"#),
    ]);
    db.create_index("c", "ix", &["tags", "a"]).unwrap();
    let q = Query::new("c")
        .filter(Filter::parse(r#"{"tags": "x"}"#).unwrap())
        .sort("tags", false)
        .sort("a", true);
    let (ids, plan) = answer(&db, &q);
    // d2 sorts by "ab"; d1 and d3 by "x", then by a descending.
    assert_eq!(ids, ["d2", "d1", "d3"], "{plan}");
}
