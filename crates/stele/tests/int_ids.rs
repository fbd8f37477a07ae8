//! Collections of integer ids: numeric order, lookups by the number's text, the kind kept
//! across a reopen (from the checkpoint and from the log), and ids of the other kind refused
//! with an error that says which kind the collection holds.

#![expect(clippy::unwrap_used, reason = "tests")]

use stele::export::{ExportOptions, export_jsonl};
use stele::import::{ImportOptions, import_reader};
use stele::{Database, DatabaseOptions, Error, Filter, IdKind, Query};

fn ids(db: &Database, c: &str) -> Vec<String> {
    db.snapshot().ids(c).collect::<stele::Result<_>>().unwrap()
}

#[test]
fn integer_ids_sort_as_numbers_and_are_found_by_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    for id in [10, 10122, 1, -3, i64::MAX, i64::MIN, 0, 10014] {
        batch
            .put_json_int("n", id, format!(r#"{{"v":{id}}}"#).as_bytes())
            .unwrap();
    }
    db.commit(batch).unwrap();
    let want = [
        i64::MIN.to_string().as_str(),
        "-3",
        "0",
        "1",
        "10",
        "10014",
        "10122",
        &i64::MAX.to_string(),
    ]
    .map(str::to_owned);
    assert_eq!(ids(&db, "n"), want);
    let snap = db.snapshot();
    assert_eq!(snap.id_kind("n"), Some(IdKind::Int));
    assert_eq!(snap.id_kind("nothing"), None);
    let doc = snap.get("n", "-3").unwrap().unwrap();
    assert_eq!(doc.to_json().unwrap(), r#"{"v":-3}"#);
    assert!(snap.contains("n", "10014").unwrap());
    assert!(!snap.contains("n", "2").unwrap());
    // A range by numbers, not by text ("10" < "2" < "9" as text).
    let in_range: Vec<String> = snap
        .range("n", "2".."10123")
        .map(|e| e.map(|(id, _)| id))
        .collect::<stele::Result<_>>()
        .unwrap();
    assert_eq!(in_range, ["10", "10014", "10122"]);
    // Text that is not an integer is an error naming the kind, in reads and writes.
    let err = snap.get("n", "abc").unwrap_err();
    assert!(
        matches!(
            err,
            Error::IdKindMismatch {
                holds: IdKind::Int,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("holds integer ids"), "{err}");
    assert!(snap.get("n", "007").is_err());
    let mut batch = db.batch();
    batch.put_json("n", "abc", b"{}").unwrap();
    let err = db.commit(batch).unwrap_err();
    assert!(err.to_string().contains("\"abc\""), "{err}");
    assert_eq!(db.snapshot().count("n"), 8);
    // An integer written as text joins the integers.
    let mut batch = db.batch();
    batch.put_json("n", "2", br#"{"v":2}"#).unwrap();
    batch.delete("n", "10").unwrap();
    db.commit(batch).unwrap();
    assert_eq!(ids(&db, "n")[3..6], ["1", "2", "10014"]);
}

#[test]
fn a_collection_of_text_ids_refuses_integers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    batch.put_json("t", "1", b"{}").unwrap();
    db.commit(batch).unwrap();
    assert_eq!(db.snapshot().id_kind("t"), Some(IdKind::Text));
    let mut batch = db.batch();
    batch.put_json_int("t", 5, b"{}").unwrap();
    let err = db.commit(batch).unwrap_err();
    assert!(
        matches!(
            err,
            Error::IdKindMismatch {
                holds: IdKind::Text,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("holds text ids"), "{err}");
    // Emptied, a collection takes either kind again.
    let mut batch = db.batch();
    batch.delete("t", "1").unwrap();
    db.commit(batch).unwrap();
    let mut batch = db.batch();
    batch.put_json_int("t", 5, b"{}").unwrap();
    db.commit(batch).unwrap();
    assert_eq!(db.snapshot().id_kind("t"), Some(IdKind::Int));
    let mut batch = db.batch();
    batch.delete_int("t", 5).unwrap();
    db.commit(batch).unwrap();
    let mut batch = db.batch();
    batch.put_json("t", "x", b"{}").unwrap();
    db.commit(batch).unwrap();
    assert_eq!(db.snapshot().id_kind("t"), Some(IdKind::Text));
    assert_eq!(ids(&db, "t"), ["x"]);
}

#[test]
fn the_kind_survives_a_reopen_from_the_log_and_from_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    for checkpoint in [false, true] {
        let c = if checkpoint { "after" } else { "before" };
        {
            let db = Database::open(dir.path()).unwrap();
            let mut batch = db.batch();
            for id in [100, 9, -1] {
                batch.put_json_int(c, id, b"{}").unwrap();
            }
            db.commit(batch).unwrap();
            if checkpoint {
                db.checkpoint().unwrap();
            }
        }
        let db = Database::open_with(dir.path(), DatabaseOptions::default()).unwrap();
        assert_eq!(ids(&db, c), ["-1", "9", "100"], "{c}");
        assert_eq!(db.snapshot().id_kind(c), Some(IdKind::Int));
        let ro = Database::open_read_only(dir.path()).unwrap();
        assert!(ro.snapshot().get(c, "9").unwrap().is_some());
    }
}

/// Packed at compaction, integer ids keep their order and are found (blocks are keyed
/// and searched by the stored keys).
#[test]
fn packed_integer_ids_keep_order_and_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    let mut all: Vec<i64> = (-2000..3000).map(|i| i * 7919 % 100_003).collect();
    for &id in &all {
        let json = format!(
            r#"{{"id":{id},"pad":"{}"}}"#,
            "x".repeat(id.rem_euclid(50) as usize)
        );
        batch.put_json_int("p", id, json.as_bytes()).unwrap();
    }
    db.commit(batch).unwrap();
    db.compact().unwrap();
    all.sort_unstable();
    all.dedup();
    let want: Vec<String> = all.iter().map(i64::to_string).collect();
    assert_eq!(ids(&db, "p"), want);
    let snap = db.snapshot();
    assert!(snap.stats("p").packed_blocks > 0);
    for id in [all[0], all[1234], *all.last().unwrap()] {
        let doc = snap.get("p", &id.to_string()).unwrap().unwrap();
        assert!(
            doc.to_json()
                .unwrap()
                .starts_with(&format!(r#"{{"id":{id},"#))
        );
    }
    assert!(snap.get("p", "100004").unwrap().is_none());
}

fn import(db: &Database, c: &str, text: &str, opts: &ImportOptions) -> Result<u64, String> {
    import_reader(db, c, "in", text.as_bytes(), None, opts, |_| {})
        .map(|r| r.documents)
        .map_err(|e| e.to_string())
}

fn export(db: &Database, c: &str, opts: &ExportOptions) -> String {
    let mut out = Vec::new();
    export_jsonl(&db.snapshot(), c, &mut out, opts).unwrap();
    String::from_utf8(out).unwrap()
}

/// An id field of integers makes a collection of integer ids, bulk or staged: numeric
/// order, found by number, exported as the input (key order included).
#[test]
fn imported_integer_ids_keep_their_type() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lines = [
        r#"{"name":"b","newid":10014}"#,
        r#"{"newid":1,"name":"a"}"#,
        r#"{"newid":-5,"x":[1,2]}"#,
        r#"{"name":"c","newid":10122}"#,
        r#"{"newid":9223372036854775807}"#,
    ];
    let text = lines.join("\n");
    for bulk in [true, false] {
        let c = if bulk { "bulk" } else { "staged" };
        let opts = ImportOptions::new().id_field("newid").bulk(bulk);
        assert_eq!(import(&db, c, &text, &opts), Ok(5), "{c}");
        let snap = db.snapshot();
        assert_eq!(snap.id_kind(c), Some(IdKind::Int), "{c}");
        assert_eq!(
            ids(&db, c),
            ["-5", "1", "10014", "10122", "9223372036854775807"]
        );
        assert!(snap.get(c, "10014").unwrap().is_some());
        let out = export(&db, c, &ExportOptions::new());
        let want = [lines[2], lines[1], lines[0], lines[3], lines[4]].join("\n") + "\n";
        assert_eq!(out, want, "{c}");
    }
    // Exported with ids added, integers stay numbers.
    let mut batch = db.batch();
    batch.put_json_int("plain", 3, br#"{"a":1}"#).unwrap();
    db.commit(batch).unwrap();
    let out = export(&db, "plain", &ExportOptions::new().id_field("_id"));
    assert_eq!(out, "{\"_id\":3,\"a\":1}\n");
}

/// Mixed kinds, floats and integers beyond `i64` are bad records naming the rule.
#[test]
fn ids_of_another_kind_floats_and_huge_integers_are_bad_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let opts = ImportOptions::new().id_field("id");
    let err = import(&db, "m", "{\"id\":1}\n{\"id\":\"x\"}\n", &opts).unwrap_err();
    assert!(err.contains("in:2: record 2"), "{err}");
    assert!(
        err.contains("id \"x\" is a string, but the import's ids are integer ids (line 1's was)"),
        "{err}"
    );
    let err = import(&db, "m", "{\"id\":\"x\"}\n{\"id\":2}\n", &opts).unwrap_err();
    assert!(err.contains("id 2 is an integer"), "{err}");
    let err = import(&db, "m", "{\"id\":1.5}\n", &opts).unwrap_err();
    assert!(
        err.contains("1.5, a number that is not an integer"),
        "{err}"
    );
    let err = import(&db, "m", "{\"id\":18446744073709551615}\n", &opts).unwrap_err();
    assert!(err.contains("beyond the range of integer ids"), "{err}");
    let err = import(&db, "m", "{\"id\":-99999999999999999999}\n", &opts).unwrap_err();
    assert!(err.contains("beyond the range of integer ids"), "{err}");
    assert_eq!(db.snapshot().count("m"), 0);
    // Skipped, the import keeps the first kind; into a collection, its kind decides.
    let skip = opts.clone().skip_bad(true);
    assert_eq!(
        import(&db, "m", "{\"id\":1}\n{\"id\":\"x\"}\n", &skip),
        Ok(1)
    );
    let err = import(&db, "m", "{\"id\":\"y\"}\n", &opts).unwrap_err();
    assert!(err.contains("collection \"m\" holds integer ids"), "{err}");
    // Numbered records are text ids: refused by a collection of integers.
    let err = import(&db, "m", "{\"a\":1}\n", &ImportOptions::new()).unwrap_err();
    assert!(err.contains("holds integer ids"), "{err}");
}

/// `_id` in queries of a collection of integer ids compares as numbers (filters, ranges,
/// sorts, counts), with or without an index on another field; rows give the integers.
#[test]
fn queries_compare_integer_ids_as_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    for id in [-20, 3, 9, 10, 25, 100, 1000] {
        let json = format!(r#"{{"even":{}}}"#, id % 2 == 0);
        batch.put_json_int("q", id, json.as_bytes()).unwrap();
    }
    db.commit(batch).unwrap();
    let run = |filter: &str, sort: Option<bool>| -> Vec<String> {
        let mut q = Query::new("q").filter(Filter::parse(filter).unwrap());
        if let Some(desc) = sort {
            q = q.sort("_id", desc);
        }
        let out = db.snapshot().query(&q).unwrap();
        out.rows.into_iter().map(|r| r.id).collect()
    };
    for indexed in [false, true] {
        if indexed {
            db.create_index("q", "by_even", &["even"]).unwrap();
        }
        assert_eq!(
            run(r#"{"_id": {"$gt": 5, "$lt": 100}}"#, None),
            ["9", "10", "25"]
        );
        assert_eq!(run(r#"{"_id": {"$lte": 3}}"#, Some(true)), ["3", "-20"]);
        assert_eq!(
            run(r#"{"_id": {"$in": [1000, -20, 7]}}"#, None),
            ["-20", "1000"]
        );
        assert_eq!(
            run(r#"{"even": true, "_id": {"$gte": 10}}"#, Some(false)),
            ["10", "100", "1000"]
        );
        assert_eq!(run(r#"{"_id": 25}"#, None), ["25"]);
        let all = run("{}", Some(true));
        assert_eq!(all, ["1000", "100", "25", "10", "9", "3", "-20"]);
        let q = Query::new("q").filter(Filter::parse(r#"{"_id": {"$gt": 9}}"#).unwrap());
        assert_eq!(db.snapshot().count_matching(&q).unwrap().count, 4);
    }
    // Aggregations and distinct values filter the same way.
    let snap = db.snapshot();
    for (pipeline, want) in [
        (
            r#"[{"$match": {"_id": {"$gt": 9}}}, {"$count": "n"}]"#,
            r#"{"n":4}"#,
        ),
        (
            r#"[{"$match": {"_id": {"$lt": 10}}}, {"$group": {"_id": "$even", "n": {"$sum": 1}}}]"#,
            r#"{"_id":false,"n":2}"#,
        ),
        // Grouped while the collection is read: `$_id` is the number too.
        (
            r#"[{"$group": {"_id": "$even", "ids": {"$sum": "$_id"}, "low": {"$min": "$_id"}}}]"#,
            r#"{"_id":false,"ids":37,"low":3}"#,
        ),
        (
            r#"[{"$match": {"_id": 25}}, {"$group": {"_id": "$_id", "n": {"$sum": 1}}}]"#,
            r#"{"_id":25,"n":1}"#,
        ),
        // `_id` as the number, whether the documents come in id order or sorted.
        (
            r#"[{"$match": {"_id": {"$gte": 1000}}}, {"$project": {"even": 0}}]"#,
            r#"{"_id":1000}"#,
        ),
        (
            r#"[{"$sort": {"_id": -1}}, {"$limit": 1}, {"$project": {"even": 0}}]"#,
            r#"{"_id":1000}"#,
        ),
    ] {
        let out = snap
            .aggregate("q", &stele::Pipeline::parse(pipeline).unwrap())
            .unwrap();
        assert_eq!(out.rows[0], want, "{pipeline}");
    }
    let q = Query::new("q").filter(Filter::parse(r#"{"_id": {"$gte": 100}}"#).unwrap());
    assert_eq!(snap.distinct(&q, "even").unwrap(), ["true"]);
    // As on a field holding the integer: no string equals it, fractions fall between.
    assert!(run(r#"{"_id": "abc"}"#, None).is_empty());
    assert_eq!(
        run(r#"{"_id": {"$gt": 9.5, "$lte": 25.0}}"#, None),
        ["10", "25"]
    );
    assert_eq!(run(r#"{"_id": {"$type": "number"}}"#, None).len(), 7);
    assert!(run(r#"{"_id": {"$prefix": "1"}}"#, None).is_empty());
    assert_eq!(run(r#"{"_id": {"$lt": 1e30}}"#, None).len(), 7);
}

/// A reader process catching up with `refresh` learns the kind with the documents.
#[test]
fn a_reader_refreshed_after_the_first_integer_ids_reads_them_as_integers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut batch = db.batch();
    batch.put_json("other", "x", b"{}").unwrap();
    db.commit(batch).unwrap();
    let reader = Database::open_read_only(dir.path()).unwrap();
    let mut batch = db.batch();
    for id in [10, 9, -1] {
        batch.put_json_int("r", id, b"{}").unwrap();
    }
    db.commit(batch).unwrap();
    reader.refresh().unwrap();
    let snap = reader.snapshot();
    assert_eq!(snap.id_kind("r"), Some(IdKind::Int));
    let ids: Vec<String> = snap.ids("r").collect::<stele::Result<_>>().unwrap();
    assert_eq!(ids, ["-1", "9", "10"]);
}
