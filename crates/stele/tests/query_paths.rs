//! The read paths chosen by size and by collector: collections under the serial-scan size
//! read on the caller's thread in one stretch, larger ones in parallel stretches; top-k
//! heaps that render only the rows they keep; index hits read in id order (a batch at a
//! time, the block of the previous lookup reused) when the collector orders rows itself.
//! Each must answer as the plain model does, with documents written and removed since the
//! collection was packed (the map's entries hide the blocks' ones).

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use serde_json::Value;
use std::collections::BTreeMap;
use stele::{Database, DatabaseOptions, Filter, Pipeline, Query};

fn json(i: u32) -> String {
    format!(
        r#"{{"k":{},"n":{},"r":{},"s":"x{}","pad":"{}"}}"#,
        i % 37,
        (i * 7919) % 1000,
        (i * 7919) % 6007,
        i % 13,
        "p".repeat((i % 40) as usize)
    )
}

/// A packed collection `c` of `n` documents in small blocks (many of them), then some
/// documents replaced and some removed after packing (`repacked`: and packed again, so
/// that the collection's map is empty and scans read the blocks alone); and the model of
/// what it holds.
fn collection(n: u32, repacked: bool) -> (tempfile::TempDir, Database, BTreeMap<String, Value>) {
    let dir = tempfile::tempdir().unwrap();
    let opts = DatabaseOptions::default()
        .pack_block_bytes(2048)
        .background_training(false);
    let db = Database::open_with(dir.path(), opts).unwrap();
    let mut model = BTreeMap::new();
    let mut b = db.batch();
    for i in 0..n {
        let id = format!("d{i:05}");
        b.put_json("c", &id, json(i).as_bytes()).unwrap();
        model.insert(id, serde_json::from_str(&json(i)).unwrap());
    }
    db.commit(b).unwrap();
    db.compact().unwrap();
    let mut b = db.batch();
    for i in (0..n).step_by(17) {
        let id = format!("d{i:05}");
        b.delete("c", &id).unwrap();
        model.remove(&id);
    }
    for i in (5..n).step_by(23) {
        let id = format!("d{i:05}");
        let doc = json(i + 1);
        b.put_json("c", &id, doc.as_bytes()).unwrap();
        model.insert(id, serde_json::from_str(&doc).unwrap());
    }
    db.commit(b).unwrap();
    if repacked {
        db.compact().unwrap();
    }
    (dir, db, model)
}

fn num(doc: &Value, field: &str) -> i64 {
    doc.get(field).and_then(Value::as_i64).unwrap()
}

fn parsed(rows: &[stele::Row]) -> Vec<(String, Value)> {
    rows.iter()
        .map(|r| (r.id.clone(), serde_json::from_str(&r.json).unwrap()))
        .collect()
}

#[test]
fn scans_answer_as_the_model_below_and_above_the_serial_scan_size() {
    // 300 documents: one stretch on this thread; 6,000: parallel stretches.
    for (n, repacked) in [(300u32, false), (300, true), (6_000, false), (6_000, true)] {
        let (_dir, db, model) = collection(n, repacked);
        let snap = db.snapshot();
        let filter = r#"{"k": {"$lt": 10}, "n": {"$gt": 500}}"#;
        let q = Query::new("c").filter(Filter::parse(filter).unwrap());
        let want = model
            .values()
            .filter(|d| num(d, "k") < 10 && num(d, "n") > 500)
            .count() as u64;
        let counted = snap.count_matching(&q).unwrap();
        assert_eq!(counted.count, want, "{n} documents, repacked {repacked}");
        assert_eq!(counted.stats.docs_examined, model.len() as u64, "{n}");

        // The top 20 by a number, descending, ties in id order: the heap renders only
        // its rows, which must be the documents themselves.
        let mut by_n: Vec<(&String, &Value)> = model.iter().collect();
        by_n.sort_by(|a, b| num(b.1, "n").cmp(&num(a.1, "n")).then(a.0.cmp(b.0)));
        for (skip, limit) in [(0, 20), (7, 20), (0, 1)] {
            let q = Query::new("c").sort("n", true).skip(skip).limit(limit);
            let got = parsed(&snap.query(&q).unwrap().rows);
            let want: Vec<(String, Value)> = by_n
                .iter()
                .skip(skip)
                .take(limit)
                .map(|(id, d)| ((*id).clone(), (*d).clone()))
                .collect();
            assert_eq!(got, want, "{n} documents, skip {skip} limit {limit}");
        }
        // With a projection, the rows kept are projected when rendered.
        let q = Query::new("c").sort("n", true).limit(5).select(&["s"]);
        let got = parsed(&snap.query(&q).unwrap().rows);
        for ((id, row), (want_id, doc)) in got.iter().zip(&by_n) {
            assert_eq!(id, *want_id);
            assert_eq!(row.get("s"), doc.get("s"));
            assert!(row.get("n").is_none(), "{row}");
        }

        // A group-by count and sum, groups in key order.
        let p = Pipeline::parse(
            r#"[{"$group": {"_id": "$k", "c": {"$sum": 1}, "t": {"$sum": "$n"}}}]"#,
        )
        .unwrap();
        let got: Vec<Value> = snap
            .aggregate("c", &p)
            .unwrap()
            .rows
            .iter()
            .map(|r| serde_json::from_str(r).unwrap())
            .collect();
        let mut groups: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
        for d in model.values() {
            let g = groups.entry(num(d, "k")).or_default();
            g.0 += 1;
            g.1 += num(d, "n");
        }
        let want: Vec<Value> = groups
            .iter()
            .map(|(k, (c, t))| serde_json::json!({"_id": k, "c": c, "t": t}))
            .collect();
        assert_eq!(got, want, "{n} documents");
    }
}

/// What the model tests a document with.
type Holds = Box<dyn Fn(&Value) -> bool>;

#[test]
fn index_hits_read_in_id_order_answer_as_a_scan() {
    // 6,000 documents: a broad range of the index yields more ids than one batch.
    let (_dir, db, model) = collection(6_000, false);
    db.create_index("c", "r", &["r"]).unwrap();
    db.create_index("c", "k_r", &["k", "r"]).unwrap();
    let snap = db.snapshot();
    let cases: Vec<(&str, Holds)> = vec![
        (r#"{"r": {"$gte": 100}}"#, Box::new(|d| num(d, "r") >= 100)),
        (
            r#"{"r": {"$lt": 3000}, "s": "x3"}"#,
            Box::new(|d| num(d, "r") < 3000 && d["s"] == "x3"),
        ),
        (
            r#"{"k": 5, "r": {"$gt": 1000}}"#,
            Box::new(|d| num(d, "k") == 5 && num(d, "r") > 1000),
        ),
        (
            r#"{"k": {"$in": [1, 30, 2]}}"#,
            Box::new(|d| [1, 30, 2].contains(&num(d, "k"))),
        ),
    ];
    for (filter, holds) in &cases {
        let q = Query::new("c").filter(Filter::parse(filter).unwrap());
        let out = snap.query(&q).unwrap();
        assert!(!out.plan.is_full_scan(), "{filter}: {}", out.plan);
        // Without a sort, rows come in id order, whatever order the index gave them in.
        let want: Vec<(String, Value)> = model
            .iter()
            .filter(|(_, d)| holds(d))
            .map(|(id, d)| (id.clone(), d.clone()))
            .collect();
        assert!(want.len() > 20, "{filter}: {}", want.len());
        assert_eq!(parsed(&out.rows), want, "{filter}");
        // A limit keeps the first ids; a count counts them all.
        let limited = snap.query(&q.clone().limit(20)).unwrap();
        assert_eq!(parsed(&limited.rows), want[..20].to_vec(), "{filter}");
        assert_eq!(snap.count_matching(&q).unwrap().count, want.len() as u64);
        // Sorted by the index's field: in index order (descending, ties by id).
        let sorted = snap.query(&q.clone().sort("r", true).limit(30)).unwrap();
        let mut by_r = want.clone();
        by_r.sort_by(|a, b| num(&b.1, "r").cmp(&num(&a.1, "r")).then(a.0.cmp(&b.0)));
        by_r.truncate(30);
        assert_eq!(parsed(&sorted.rows), by_r, "{filter}");
    }
}
