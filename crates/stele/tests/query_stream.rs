//! Streamed queries (`Snapshot::query_iter`): the same rows as `query`, the first ones
//! before the scan has read everything, and a dropped stream stops the scan.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::Duration;

use stele::{Database, DatabaseOptions, Error, Query, Row};

const DOCS: u32 = 6000;

fn fill(db: &Database) {
    let mut b = db.batch();
    for i in 0..DOCS {
        let json = format!(
            r#"{{"n":{i},"cat":"c{}","score":{},"note":"some text to make blocks fill"}}"#,
            i % 7,
            i % 50
        );
        b.put_json("c", &format!("d{i:05}"), json.as_bytes())
            .unwrap();
    }
    db.commit(b).unwrap();
}

/// A database with the collection packed into many small blocks (so a full scan runs in
/// several waves of stretches), or left unpacked (one stretch read in order).
fn database(packed: bool) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let opts = DatabaseOptions::default()
        .pack_block_bytes(4096)
        .background_training(false);
    let db = Database::open_with(dir.path(), opts).unwrap();
    fill(&db);
    if packed {
        db.compact().unwrap();
        assert!(db.snapshot().stats("c").packed_blocks > 50);
    }
    (dir, db)
}

fn queries() -> Vec<Query> {
    let q = || Query::new("c");
    vec![
        q(),
        q().filter(stele::Filter::parse(r#"{"cat": "c3"}"#).unwrap()),
        q().skip(10).limit(25),
        q().skip(5000).limit(3000),
        q().filter(stele::Filter::parse(r#"{"score": {"$gte": 40}}"#).unwrap())
            .select(&["n"])
            .limit(700),
        // Served by the index (ties on score held back and put in id order), and not.
        q().sort("score", true).limit(130),
        q().filter(stele::Filter::parse(r#"{"cat": "c1"}"#).unwrap())
            .sort("score", false)
            .skip(3),
        q().sort("n", true).limit(10),
        // Served by the index and streamed by the query's thread (no limit, or one above
        // what runs at once): ties grouped by the index entries (`take_sorted`).
        q().sort("score", true).skip(7),
        q().sort("score", false).limit(1500),
    ]
}

#[test]
fn streamed_rows_are_the_rows_of_query() {
    for packed in [false, true] {
        let (_dir, db) = database(packed);
        db.create_index("c", "by_score", &["score"]).unwrap();
        let snap = db.snapshot();
        for q in queries() {
            let want = snap.query(&q).unwrap();
            let stream = snap.query_iter(&q).unwrap();
            assert_eq!(stream.plan(), &want.plan, "{q:?}");
            let got: Vec<Row> = stream.map(Result::unwrap).collect();
            assert_eq!(got.len(), want.rows.len(), "packed {packed}: {q:?}");
            assert!(got == want.rows, "packed {packed}: {q:?}");
        }
    }
}

#[test]
fn the_first_row_comes_before_the_scan_ends_and_dropping_stops_it() {
    for packed in [false, true] {
        let (_dir, db) = database(packed);
        let snap = db.snapshot();
        let q = Query::new("c");
        let mut stream = snap.query_iter(&q).unwrap();
        let first = stream.next().unwrap().unwrap();
        assert_eq!(first.id, "d00000");
        // Give the scan time to run as far as it can: the channel's bound stops it.
        std::thread::sleep(Duration::from_millis(100));
        let seen = stream.stats().docs_examined;
        assert!(
            seen < u64::from(DOCS) / 2,
            "packed {packed}: {seen} documents read before the second row was taken"
        );
        let stats = stream.cancel();
        assert!(
            stats.docs_examined < u64::from(DOCS) / 2,
            "packed {packed}: the scan went on to {} documents after the stream was dropped",
            stats.docs_examined
        );
        assert_eq!(stats.rows, 1);
        // Reading everything reads every document.
        let mut stream = snap.query_iter(&q).unwrap();
        assert_eq!(stream.by_ref().count(), DOCS as usize);
        assert_eq!(stream.stats().docs_examined, u64::from(DOCS));
    }
}

#[test]
fn a_time_budget_ends_the_stream_with_an_error_but_not_the_readers_pauses() {
    let (_dir, db) = database(true);
    let snap = db.snapshot();
    let q = Query::new("c").time_budget(Duration::from_nanos(1));
    let items: Vec<stele::Result<Row>> = snap.query_iter(&q).unwrap().collect();
    assert!(
        matches!(items.last(), Some(Err(Error::QueryTimeout { .. }))),
        "{:?}",
        items.last()
    );
    assert!(items.len() < DOCS as usize);
    // A reader that stops for longer than the budget between rows does not spend it.
    let q = Query::new("c").time_budget(Duration::from_millis(800));
    let mut stream = snap.query_iter(&q).unwrap();
    stream.next().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(stream.map(Result::unwrap).count(), DOCS as usize - 1);
}

#[test]
fn a_stream_checks_the_query_first() {
    let (_dir, db) = database(false);
    let err = db
        .snapshot()
        .query_iter(&Query::new("c").limit(0))
        .unwrap_err();
    assert!(err.to_string().contains("limit of 0"), "{err}");
}

#[test]
fn a_sort_past_its_memory_budget_spills_and_answers_alike() {
    for packed in [false, true] {
        let (_dir, db) = database(packed);
        let snap = db.snapshot();
        for q in [
            Query::new("c").sort("score", true),
            Query::new("c")
                .sort("cat", false)
                .sort("n", true)
                .skip(1234),
            Query::new("c")
                .filter(stele::Filter::parse(r#"{"score": {"$lt": 25}}"#).unwrap())
                .sort("note", false)
                .select(&["n", "score"]),
        ] {
            let want = snap.query(&q).unwrap().rows;
            let mut stream = snap.query_iter(&q).unwrap();
            let got: Vec<Row> = stream.by_ref().map(Result::unwrap).collect();
            assert!(got == want, "packed {packed}: {q:?}");
            assert_eq!(stream.stats().spilled_bytes, 0, "{q:?}");
            // A tiny budget: the rows go through the sorter, whose runs spill to disk.
            let mut stream = snap.query_iter(&q.clone().memory_budget(1)).unwrap();
            let got: Vec<Row> = stream.by_ref().map(Result::unwrap).collect();
            assert_eq!(got.len(), want.len(), "packed {packed}: {q:?}");
            assert!(got == want, "packed {packed}: {q:?}");
            assert!(stream.stats().spilled_bytes > 0, "packed {packed}: {q:?}");
        }
    }
}

/// An index query without a sort: its rows are kept without sort keys (id order is the
/// order asked) and ordered by id at the end; past a tiny budget they go through the
/// sorter, which needs the keys made from the ids. Both give the rows of a full scan.
#[test]
fn unsorted_index_rows_come_in_id_order_kept_or_spilled() {
    for packed in [false, true] {
        let (_dir, db) = database(packed);
        let q = Query::new("c").filter(
            stele::Filter::parse(r#"{"score": {"$gte": 10, "$lt": 30}, "cat": {"$ne": "c2"}}"#)
                .unwrap(),
        );
        let scanned = db.snapshot().query(&q).unwrap();
        assert!(scanned.plan.is_full_scan(), "{}", scanned.plan);
        let want = scanned.rows;
        assert!(want.len() > 1000 && want.windows(2).all(|w| w[0].id < w[1].id));
        db.create_index("c", "by_score", &["score"]).unwrap();
        let snap = db.snapshot();
        let out = snap.query(&q).unwrap();
        assert_eq!(out.plan.index(), Some("by_score"), "{}", out.plan);
        assert!(out.rows == want, "packed {packed}");
        let mut stream = snap.query_iter(&q.clone().memory_budget(1)).unwrap();
        let got: Vec<Row> = stream.by_ref().map(Result::unwrap).collect();
        assert!(got == want, "packed {packed}: {} rows", got.len());
        assert!(stream.stats().spilled_bytes > 0, "packed {packed}");
        let skipped = q.clone().skip(100);
        let got: Vec<Row> = snap.query(&skipped).unwrap().rows;
        assert!(
            got.as_slice() == want.get(100..).unwrap(),
            "packed {packed}"
        );
    }
}
