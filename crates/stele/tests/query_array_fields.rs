//! Sorts an index serves while no document has held an array at the sorted path
//! (`stele::index::arrays`, MongoDB's multikey paths): what the index records, when it
//! serves, when it stops, and that the record outlives a reopen and a log replay.
use stele::{Database, DatabaseOptions, Filter, Query};

/// Orders of two statuses with a total each (one without a total), committed.
fn orders(db: &Database) {
    let mut batch = db.batch();
    for i in 0..40u32 {
        let status = if i % 3 == 0 { "shipped" } else { "paid" };
        let doc = if i == 7 {
            format!(r#"{{"status": "{status}"}}"#)
        } else {
            format!(r#"{{"status": "{status}", "total": {}}}"#, (i * 37) % 101)
        };
        batch
            .put_json("orders", &format!("o{i:02}"), doc.as_bytes())
            .unwrap();
    }
    db.commit(batch).unwrap();
}

/// "Paid orders under 60, largest first, 5 of them", and "paid orders with a total, by
/// total" (a condition that narrows no range).
fn questions() -> [Query; 2] {
    let under = Filter::parse(r#"{"status": "paid", "total": {"$lt": 60}}"#).unwrap();
    let with = Filter::parse(r#"{"status": "paid", "total": {"$ne": null}}"#).unwrap();
    [
        Query::new("orders")
            .filter(under)
            .sort("total", true)
            .limit(5),
        Query::new("orders").filter(with).sort("total", false),
    ]
}

/// The ids a query answers with, in order, with its plan and whether the sort ran in memory.
fn answer(db: &Database, q: &Query) -> (Vec<String>, String, bool) {
    let out = db.snapshot().query(q).unwrap();
    let ids = out.rows.iter().map(|r| r.id.clone()).collect();
    (ids, out.plan.to_string(), out.plan.sorted_in_memory)
}

fn array_fields(db: &Database) -> Vec<String> {
    let stats = db.snapshot().index_stats("orders");
    stats.first().unwrap().array_fields.clone()
}

#[test]
fn a_sort_over_a_tested_path_is_served_until_a_document_holds_an_array_there() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    orders(&db);
    let without: Vec<_> = questions().iter().map(|q| answer(&db, q).0).collect();
    db.create_index("orders", "by_status_total", &["status", "total:desc"])
        .unwrap();
    assert_eq!(array_fields(&db), Vec::<String>::new());
    for (q, want) in questions().iter().zip(&without) {
        let (ids, plan, in_memory) = answer(&db, q);
        assert_eq!(&ids, want, "{plan}");
        assert!(!in_memory, "served by the index: {plan}");
        assert!(plan.contains("by_status_total"), "{plan}");
    }

    // One paid order whose total is an array: 70 is its largest element (its sort key,
    // descending), 10 the one under 60. The sort is now done in memory, and explain says why.
    let mut batch = db.batch();
    batch
        .put_json("orders", "o99", br#"{"status": "paid", "total": [10, 70]}"#)
        .unwrap();
    db.commit(batch).unwrap();
    assert_eq!(array_fields(&db), ["total"]);
    let (ids, plan, in_memory) = answer(&db, &questions()[0]);
    assert!(in_memory, "{plan}");
    assert_eq!(ids.first().map(String::as_str), Some("o99"), "{ids:?}");
    let candidates = db
        .snapshot()
        .explain(&questions()[0])
        .unwrap()
        .plan
        .candidates();
    let reason = &candidates.first().unwrap().reason;
    assert!(
        reason.contains("has held an array at \"total\""),
        "explain says why: {reason}"
    );

    // Removing it does not clear the record (another document might hold one); building
    // the index again does.
    let mut batch = db.batch();
    batch.delete("orders", "o99").unwrap();
    db.commit(batch).unwrap();
    assert_eq!(array_fields(&db), ["total"]);
    assert!(answer(&db, &questions()[0]).2);
    db.drop_index("orders", "by_status_total").unwrap();
    db.create_index("orders", "by_status_total", &["status", "total:desc"])
        .unwrap();
    assert_eq!(array_fields(&db), Vec::<String>::new());
    let (ids, plan, in_memory) = answer(&db, &questions()[0]);
    assert!(!in_memory, "{plan}");
    assert_eq!(ids, without[0]);
}

/// An array reached through an array of objects counts, and so does an empty array; an
/// array elsewhere in the document does not.
#[test]
fn arrays_are_recorded_per_field_of_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_index("orders", "ix", &["status", "lines.sku", "total"])
        .unwrap();
    let put = |id: &str, json: &str| {
        let mut batch = db.batch();
        batch.put_json("orders", id, json.as_bytes()).unwrap();
        db.commit(batch).unwrap();
    };
    put(
        "a",
        r#"{"status": "paid", "lines": {"sku": "x"}, "notes": [1, 2]}"#,
    );
    assert_eq!(array_fields(&db), Vec::<String>::new());
    put(
        "b",
        r#"{"status": "paid", "lines": [{"sku": "x"}, {"sku": "y"}]}"#,
    );
    assert_eq!(array_fields(&db), ["lines.sku"]);
    put("c", r#"{"status": [], "total": 3}"#);
    assert_eq!(array_fields(&db), ["status", "lines.sku"]);
}

/// What the index records is kept by the checkpoint (the manifest) and found again by a
/// replay of the log (a reader opening beside the writer, before any checkpoint).
#[test]
fn the_record_outlives_a_reopen_and_a_replay_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        orders(&db);
        db.create_index("orders", "by_status_total", &["status", "total:desc"])
            .unwrap();
        db.close().unwrap();
    }
    // Checkpoints only when asked: the array below stays in the log.
    let opts = DatabaseOptions::default().checkpoint_bytes(u64::MAX);
    let db = Database::open_with(dir.path(), opts).unwrap();
    assert_eq!(array_fields(&db), Vec::<String>::new(), "from the manifest");
    assert!(!answer(&db, &questions()[0]).2);
    let mut batch = db.batch();
    batch
        .put_json("orders", "o99", br#"{"status": "paid", "total": [10, 70]}"#)
        .unwrap();
    db.commit(batch).unwrap();
    let reader = Database::open_read_only(dir.path()).unwrap();
    let snap = reader.snapshot();
    let stats = snap.index_stats("orders");
    assert_eq!(stats.first().unwrap().array_fields, ["total"], "replayed");
    let out = snap.query(&questions()[0]).unwrap();
    assert!(out.plan.sorted_in_memory, "{}", out.plan);
    assert_eq!(out.rows.first().map(|r| r.id.as_str()), Some("o99"));
    drop(snap);
    drop(reader);
    db.close().unwrap();
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(
        array_fields(&db),
        ["total"],
        "from the manifest of the close"
    );
}

/// `$in` on the index's first field and a sort on the next: each value's key range is in
/// the sort's order, and the scan merges them (ascending, reversed, with ties across the
/// ranges in id order and a limit), answering as the scan without the index does.
#[test]
fn a_sort_after_an_in_list_merges_the_lists_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    orders(&db);
    let mut batch = db.batch();
    // Ties on the total across statuses, and a status no query asks for.
    for (id, doc) in [
        ("t1", r#"{"status": "paid", "total": 50}"#),
        ("t2", r#"{"status": "shipped", "total": 50}"#),
        ("t0", r#"{"status": "lost", "total": 50}"#),
    ] {
        batch.put_json("orders", id, doc.as_bytes()).unwrap();
    }
    db.commit(batch).unwrap();
    let queries: Vec<Query> = [
        (r#"{"status": {"$in": ["shipped", "paid"]}}"#, true, Some(7)),
        (r#"{"status": {"$in": ["shipped", "paid"]}}"#, false, None),
        (
            r#"{"status": {"$in": ["paid", "shipped", "nope"]}, "total": {"$lt": 60}}"#,
            true,
            Some(9),
        ),
    ]
    .into_iter()
    .map(|(filter, desc, limit)| {
        let q = Query::new("orders")
            .filter(Filter::parse(filter).unwrap())
            .sort("total", desc);
        match limit {
            Some(n) => q.limit(n),
            None => q,
        }
    })
    .collect();
    let without: Vec<_> = queries.iter().map(|q| answer(&db, q).0).collect();
    for fields in [["status", "total:desc"], ["status", "total"]] {
        let _ = db.drop_index("orders", "ix");
        db.create_index("orders", "ix", &fields).unwrap();
        for (q, want) in queries.iter().zip(&without) {
            let (ids, plan, in_memory) = answer(&db, q);
            assert_eq!(&ids, want, "{fields:?}: {plan}");
            assert!(
                !in_memory,
                "merged, not sorted in memory: {fields:?}: {plan}"
            );
            assert!(
                plan.contains("key range(s)") && !plan.contains("(1 key range"),
                "{plan}"
            );
        }
    }
    // The ties at 50 across the two statuses come in id order.
    let all = &without[1];
    let at = |id: &str| all.iter().position(|x| x == id).unwrap();
    assert!(at("t1") < at("t2"), "{all:?}");
    assert!(!all.iter().any(|x| x == "t0"));
}
