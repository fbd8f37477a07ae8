//! The index paths that keep work between queries or skip it: decoded index blocks cached
//! by their stored bytes (a write, a compaction or a new index must never let a query see
//! keys the state it reads does not hold), and a sort served by an index that groups ties
//! by the entries' values instead of each document's sort key (arrays, descending fields,
//! ties broken by id, as the same query without the index answers).

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use serde_json::Value;
use stele::{Database, DatabaseOptions, Filter, Query};

fn ids(rows: &[stele::Row]) -> Vec<String> {
    rows.iter().map(|r| r.id.clone()).collect()
}

fn open(dir: &std::path::Path) -> Database {
    Database::open_with(
        dir,
        DatabaseOptions::default()
            .pack_block_bytes(2048)
            .background_training(false),
    )
    .unwrap()
}

fn put(db: &Database, docs: &[(String, String)]) {
    let mut b = db.batch();
    for (id, json) in docs {
        b.put_json("c", id, json.as_bytes()).unwrap();
    }
    db.commit(b).unwrap();
}

/// A database of `docs` documents `d00000..` holding `{"k": i % kinds, "n": i}`, with the
/// index `k_n` on (k, n), compacted: every key in packed blocks.
fn packed_k_n(dir: &std::path::Path, docs: u32, kinds: u32) -> Database {
    let db = open(dir);
    let docs: Vec<(String, String)> = (0..docs)
        .map(|i| {
            (
                format!("d{i:05}"),
                format!(r#"{{"k":{},"n":{}}}"#, i % kinds, i),
            )
        })
        .collect();
    put(&db, &docs);
    db.create_index("c", "k_n", &["k", "n"]).unwrap();
    db.compact().unwrap();
    db
}

#[test]
fn cached_index_blocks_never_serve_keys_of_another_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = packed_k_n(dir.path(), 3_000, 50);
    let q = Query::new("c").filter(Filter::parse(r#"{"k": 7, "n": {"$gte": 2000}}"#).unwrap());
    let sorted = Query::new("c")
        .filter(Filter::parse(r#"{"k": 7}"#).unwrap())
        .sort("n", true)
        .limit(5);
    let before = db.snapshot();
    let first = before.query(&q).unwrap();
    assert!(!first.plan.is_full_scan(), "{}", first.plan);
    assert_eq!(first.rows.len(), 20);
    // Again: the blocks now come from the cache, and answer the same.
    assert_eq!(ids(&before.query(&q).unwrap().rows), ids(&first.rows));
    let top = ids(&before.query(&sorted).unwrap().rows);
    assert_eq!(top, ["d02957", "d02907", "d02857", "d02807", "d02757"]);

    // A write: documents moved out of and into k = 7, one removed.
    let mut b = db.batch();
    b.put_json("c", "d02957", br#"{"k":8,"n":2957}"#).unwrap();
    b.put_json("c", "d00001", br#"{"k":7,"n":9000}"#).unwrap();
    b.delete("c", "d02907").unwrap();
    db.commit(b).unwrap();
    let after = db.snapshot();
    let want_after = ["d00001", "d02857", "d02807", "d02757", "d02707"];
    assert_eq!(ids(&after.query(&sorted).unwrap().rows), want_after);
    assert_eq!(after.query(&q).unwrap().rows.len(), 19);
    assert_eq!(after.count_matching(&q).unwrap().count, 19);
    // The snapshot taken before still answers as its state does.
    assert_eq!(ids(&before.query(&sorted).unwrap().rows), top);
    assert_eq!(before.query(&q).unwrap().rows.len(), 20);
    // Compaction repacks the index into new blocks; both snapshots keep their answers.
    db.compact().unwrap();
    let compacted = db.snapshot();
    assert_eq!(ids(&compacted.query(&sorted).unwrap().rows), want_after);
    assert_eq!(compacted.count_matching(&q).unwrap().count, 19);
    assert_eq!(ids(&before.query(&sorted).unwrap().rows), top);
    assert_eq!(ids(&after.query(&sorted).unwrap().rows), want_after);
    // An index dropped and made again over other fields: no block of the old one is read
    // for it (a cache keyed by anything but the blocks' bytes could).
    drop((before, after, compacted));
    db.drop_index("c", "k_n").unwrap();
    db.create_index("c", "k_n", &["n", "k"]).unwrap();
    let again = db.snapshot();
    let by_n = Query::new("c").filter(Filter::parse(r#"{"n": {"$gte": 2990}}"#).unwrap());
    let out = again.query(&by_n).unwrap();
    assert!(!out.plan.is_full_scan(), "{}", out.plan);
    assert_eq!(out.rows.len(), 11); // 2990..=2999 and d00001 (n 9000); d02907 removed
    drop(again);
    // Reopened: a new cache, the same answers.
    drop(db);
    let db = open(dir.path());
    assert_eq!(db.snapshot().query(&by_n).unwrap().rows.len(), 11);
}

/// Documents whose sort field is sometimes an array, missing, of another type, or tied.
fn mixed(i: u32) -> String {
    let v = match i % 9 {
        0 => format!("[{}, {}]", i % 11, (i * 7) % 13),
        1 => String::new(),
        2 => format!("\"s{}\"", i % 4),
        3 => "[]".to_owned(),
        _ => format!("{}", i % 6),
    };
    let field = if v.is_empty() {
        String::new()
    } else {
        format!(r#","v":{v}"#)
    };
    format!(r#"{{"g":{}{field},"w":{}}}"#, i % 3, i % 5)
}

#[test]
fn a_served_sort_ties_as_the_same_query_without_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let plain_dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let plain = open(plain_dir.path());
    let docs: Vec<(String, String)> = (0..900).map(|i| (format!("d{i:04}"), mixed(i))).collect();
    put(&db, &docs);
    put(&plain, &docs);
    db.create_index("c", "g_v", &["g", "v"]).unwrap();
    db.create_index("c", "g_vd_w", &["g", "v:desc", "w"])
        .unwrap();
    db.compact().unwrap();
    // Loose entries over the packed blocks too.
    let later: Vec<(String, String)> = (0..900)
        .step_by(7)
        .map(|i| (format!("d{i:04}"), mixed(i + 4)))
        .collect();
    put(&db, &later);
    put(&plain, &later);
    let (snap, plain_snap) = (db.snapshot(), plain.snapshot());
    for (sort, skip, limit) in [
        (vec![("v", true)], 0, 40),
        (vec![("v", false)], 3, 25),
        (vec![("v", true), ("w", false)], 0, 60),
        (vec![("v", false), ("w", true)], 10, 100),
        (vec![("v", true)], 0, 1000),
    ] {
        for g in 0..3 {
            let mut q = Query::new("c")
                .filter(Filter::parse(&format!(r#"{{"g": {g}}}"#)).unwrap())
                .skip(skip)
                .limit(limit);
            for (p, d) in &sort {
                q = q.sort(p, *d);
            }
            let served = snap.query(&q).unwrap();
            assert!(
                !served.plan.is_full_scan() && !served.plan.sorted_in_memory,
                "{sort:?}: {}",
                served.plan
            );
            let want = plain_snap.query(&q).unwrap();
            assert!(want.plan.is_full_scan());
            let rows = |o: &stele::QueryOutput| -> Vec<(String, Value)> {
                o.rows
                    .iter()
                    .map(|r| (r.id.clone(), serde_json::from_str(&r.json).unwrap()))
                    .collect()
            };
            assert_eq!(rows(&served), rows(&want), "{sort:?} g {g} skip {skip}");
        }
    }
}

/// One parsed `Query` reused across calls, as `query_bench` now times the indexed count (the
/// analogue of a prepared statement): it holds no state of its own, so after writes (loose
/// index entries above the packed blocks, in memory and then saved), a compaction and the
/// index dropped, each snapshot answers as its own state does, counted from the keys while
/// the index is there and by a full scan after.
#[test]
fn a_reused_query_answers_each_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = packed_k_n(dir.path(), 2_000, 20);
    let q = Query::new("c").filter(Filter::parse(r#"{"k": 3, "n": {"$gt": 1500}}"#).unwrap());
    // k = 3 and n > 1500: 1503, 1523, ..., 1983.
    let packed = db.snapshot();
    let first = packed.count_matching(&q).unwrap();
    assert_eq!(first.count, 25);
    assert_eq!(first.stats.docs_examined, 0, "{}", first.plan);
    // Writes after the packing: keys in and out of the range, past its end (above the
    // last block's keys) and below its start, a removal.
    let mut b = db.batch();
    b.put_json("c", "d01503", br#"{"k":4,"n":1503}"#).unwrap(); // out
    b.put_json("c", "e00001", br#"{"k":3,"n":99999}"#).unwrap(); // in, above k = 3's packed keys
    b.put_json("c", "e00002", br#"{"k":19,"n":99999}"#).unwrap(); // past every key, other k
    b.put_json("c", "e00003", br#"{"k":3,"n":0}"#).unwrap(); // below the range
    b.delete("c", "d01983").unwrap(); // out
    db.commit(b).unwrap();
    let loose = db.snapshot();
    let want = 25 - 2 + 1;
    assert_eq!(loose.count_matching(&q).unwrap().count, want);
    assert_eq!(loose.query(&q).unwrap().rows.len(), want as usize);
    assert_eq!(packed.count_matching(&q).unwrap().count, 25);
    db.checkpoint().unwrap();
    let saved = db.snapshot();
    assert_eq!(saved.count_matching(&q).unwrap().count, want);
    db.compact().unwrap();
    assert_eq!(db.snapshot().count_matching(&q).unwrap().count, want);
    // The index dropped: the same query, a full scan, the same answers.
    db.drop_index("c", "k_n").unwrap();
    let unindexed = db.snapshot();
    let out = unindexed.count_matching(&q).unwrap();
    assert!(out.plan.is_full_scan(), "{}", out.plan);
    assert_eq!(out.count, want);
    assert_eq!(loose.count_matching(&q).unwrap().count, want);
    assert_eq!(packed.count_matching(&q).unwrap().count, 25);
}
