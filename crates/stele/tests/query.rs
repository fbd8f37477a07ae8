//! Indexes and queries: an indexed collection and an identical collection without indexes
//! must answer every query alike, across writes, reopen, checkpoints and compaction.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use std::ops::Bound;
use stele::{Database, DatabaseOptions, Query};

const CITIES: [&str; 5] = ["Oslo", "Lima", "Lyon", "Linz", "Rome"];

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u8, i16, u8, bool),
    Delete(u8),
    Commit,
    Reopen,
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..30, 0u8..6, -50i16..50, 0u8..8, any::<bool>())
            .prop_map(|(i, c, n, t, f)| Op::Put(i, c, n, t, f)),
        2 => (0u8..30).prop_map(Op::Delete),
        3 => Just(Op::Commit),
        1 => Just(Op::Reopen),
        1 => Just(Op::Checkpoint),
    ]
}

/// A document; numbers sometimes spelled as fractions, the city sometimes missing.
fn doc(c: u8, n: i16, t: u8, fraction: bool) -> String {
    let city = CITIES
        .get(usize::from(c))
        .map_or(String::new(), |c| format!(r#""city":"{c}","#));
    let n = if fraction {
        format!("{n}.50")
    } else {
        n.to_string()
    };
    let tags: Vec<String> = (0..t % 4)
        .map(|k| format!(r#""t{}""#, (t + k) % 5))
        .collect();
    format!(
        r#"{{{city}"n":{n},"tags":[{}],"meta":{{"k":{t}}}}}"#,
        tags.join(",")
    )
}

fn queries() -> Vec<Query> {
    let mut q = Vec::new();
    for city in CITIES {
        q.push(Query::new("C").eq("city", &format!(r#""{city}""#)));
    }
    q.push(Query::new("C").prefix("city", "L"));
    q.push(Query::new("C").prefix("city", "L").order_by("city", true));
    q.push(Query::new("C").eq("n", "7.5"));
    q.push(Query::new("C").range("n", Bound::Included("-10"), Bound::Excluded("20.5")));
    q.push(
        Query::new("C")
            .range("n", Bound::Excluded("0"), Bound::Unbounded)
            .order_by("n", false)
            .limit(5),
    );
    q.push(
        Query::new("C")
            .range("n", Bound::Unbounded, Bound::Included("3"))
            .order_by("n", true)
            .limit(3)
            .select(&["n", "meta.k"]),
    );
    q.push(Query::new("C").eq("tags[]", r#""t2""#));
    q.push(Query::new("C").range(
        "tags[]",
        Bound::Included(r#""t1""#),
        Bound::Included(r#""t3""#),
    ));
    q.push(Query::new("C").eq("meta.k", "3").select(&["city"]));
    q.push(Query::new("C").order_by("n", false));
    q
}

fn on(q: &Query, coll: &str) -> Query {
    q.clone().on(coll)
}

fn compare(db: &Database) {
    let snap = db.snapshot();
    for q in queries() {
        let a = snap.query(&on(&q, "ix")).unwrap();
        let b = snap.query(&on(&q, "plain")).unwrap();
        assert!(b.plan.is_full_scan(), "{}", b.plan);
        let (mut ra, mut rb) = (a.rows.clone(), b.rows.clone());
        // Without an order the order is the plan's own: compare as sets.
        if format!("{q:?}").contains("order_by: None") {
            ra.sort_by(|x, y| x.id.cmp(&y.id));
            rb.sort_by(|x, y| x.id.cmp(&y.id));
        }
        assert_eq!(ra, rb, "{q:?}\nindexed plan: {}", a.plan);
    }
}

fn small() -> DatabaseOptions {
    DatabaseOptions::default()
        .checkpoint_bytes(2000)
        .compact_layers(2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(16), ..ProptestConfig::default() })]

    #[test]
    fn indexed_and_plain_collections_answer_alike(ops in prop::collection::vec(op(), 1..50)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Database::open_with(dir.path(), small()).unwrap();
        db.create_index("ix", "by_city", &["city"]).unwrap();
        let mut batch = db.batch();
        let mut indexed_n = false;
        for op in ops {
            match op {
                Op::Put(i, c, n, t, f) => {
                    let json = doc(c, n, t, f);
                    for coll in ["ix", "plain"] {
                        batch.put_json(coll, &format!("d{i:02}"), json.as_bytes()).unwrap();
                    }
                }
                Op::Delete(i) => {
                    for coll in ["ix", "plain"] {
                        batch.delete(coll, &format!("d{i:02}")).unwrap();
                    }
                }
                Op::Commit => {
                    db.commit(std::mem::replace(&mut batch, db.batch())).unwrap();
                    if !indexed_n {
                        // Indexes created over existing documents too.
                        db.create_index("ix", "by_n", &["n"]).unwrap();
                        db.create_index("ix", "by_tag", &["tags[]", "n"]).unwrap();
                        db.create_index("ix", "by_k", &["meta.k"]).unwrap();
                        indexed_n = true;
                    }
                }
                Op::Reopen => {
                    batch = db.batch();
                    drop(db);
                    db = Database::open_with(dir.path(), small()).unwrap();
                }
                Op::Checkpoint => db.checkpoint().unwrap(),
            }
            compare(&db);
        }
        db.compact().unwrap();
        compare(&db);
        prop_assert_eq!(db.snapshot().indexes("ix").len(), if indexed_n { 4 } else { 1 });
    }
}

#[test]
fn plans_projections_and_index_management() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut b = db.batch();
    for (id, name, city) in [
        ("c1", "Alfreds", "Berlin"),
        ("c2", "Ana", "México D.F."),
        ("c3", "Around", "London"),
    ] {
        let json = format!(
            r#"{{"Name":"{name}","Overview":"about {name}","Address":{{"City":"{city}"}},"Phone":"1"}}"#
        );
        b.put_json("Companies", id, json.as_bytes()).unwrap();
    }
    db.commit(b).unwrap();
    // The RavenDB example: from c in docs.Companies select new { c.Name, c.Overview }.
    let out = db
        .snapshot()
        .query(&Query::new("Companies").select(&["Name", "Overview"]))
        .unwrap();
    assert_eq!(out.rows.len(), 3);
    assert_eq!(
        out.rows[0].json,
        r#"{"Name":"Alfreds","Overview":"about Alfreds"}"#
    );
    assert_eq!(out.plan.to_string(), "full scan");

    let q = Query::new("Companies").eq("Address.City", r#""London""#);
    let out = db.snapshot().query(&q).unwrap();
    assert_eq!(out.plan.to_string(), "full scan");
    assert_eq!(out.rows.len(), 1);
    db.create_index("Companies", "by_city", &["Address.City"])
        .unwrap();
    let out = db.snapshot().query(&q).unwrap();
    assert_eq!(
        out.plan.to_string(),
        r#"index scan of "by_city" (1 key range(s)), then sorted"#
    );
    assert_eq!(out.rows[0].id, "c3");
    // Errors: duplicate index, unknown index, bad values.
    assert!(db.create_index("Companies", "by_city", &["Name"]).is_err());
    assert!(db.drop_index("Companies", "nope").is_err());
    assert!(
        db.snapshot()
            .query(&Query::new("Companies").eq("Name", "London"))
            .is_err()
    );
    assert!(
        db.snapshot()
            .query(&Query::new("Companies").eq("Name", "[1"))
            .is_err()
    );
    // Queries that can only be mistakes: a limit of 0, a range ending before it starts
    // (with or without the index). An empty range of one value is not one.
    let snap = db.snapshot();
    let err = snap.query(&Query::new("Companies").limit(0)).unwrap_err();
    assert!(err.to_string().contains("limit of 0"), "{err}");
    for field in ["Address.City", "Name"] {
        let q = Query::new("Companies").range(
            field,
            Bound::Included(r#""z""#),
            Bound::Excluded(r#""a""#),
        );
        let err = snap.query(&q).unwrap_err();
        assert!(err.to_string().contains("swap the bounds"), "{err}");
        let q = Query::new("Companies").range(
            field,
            Bound::Excluded(r#""a""#),
            Bound::Excluded(r#""a""#),
        );
        assert!(snap.query(&q).unwrap().rows.is_empty());
    }
    assert!(snap.has_collection("Companies") && !snap.has_collection("companies"));
    drop(snap);
    db.drop_index("Companies", "by_city").unwrap();
    assert!(db.snapshot().indexes("Companies").is_empty());
    // An index created and never checkpointed comes back from the log.
    db.create_index("Companies", "by_name", &["Name"]).unwrap();
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    let out = db
        .snapshot()
        .query(
            &Query::new("Companies")
                .prefix("Name", "A")
                .order_by("Name", true),
        )
        .unwrap();
    assert!(out.plan.index().is_some(), "{}", out.plan);
    let ids: Vec<&str> = out.rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["c3", "c2", "c1"]);
}

/// The candidates' reasons, written only when asked (`Plan::candidates`), say what each
/// index offered or why it could not serve, for every kind of reason.
#[test]
fn candidates_say_why_each_index_was_or_was_not_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut b = db.batch();
    for i in 0..20u8 {
        let json = doc(i % 5, i16::from(i) - 5, i, false);
        b.put_json("C", &format!("d{i:02}"), json.as_bytes())
            .unwrap();
    }
    db.commit(b).unwrap();
    db.create_index("C", "city_n", &["city", "n"]).unwrap();
    db.create_index("C", "n", &["n"]).unwrap();
    db.create_index("C", "k", &["meta.k"]).unwrap();
    let snap = db.snapshot();
    let reasons = |q: &Query| -> Vec<(String, bool, String)> {
        let out = snap.query(q).unwrap();
        // Counts and explain see the same candidates.
        assert_eq!(
            snap.explain(q).unwrap().plan.candidates(),
            out.plan.candidates()
        );
        out.plan
            .candidates()
            .into_iter()
            .map(|c| (c.index, c.chosen, c.reason))
            .collect()
    };
    let filtered = |f: &str| Query::new("C").filter(stele::Filter::parse(f).unwrap());
    let owned = |v: &[(&str, bool, &str)]| -> Vec<(String, bool, String)> {
        v.iter()
            .map(|(i, c, r)| ((*i).to_owned(), *c, (*r).to_owned()))
            .collect()
    };
    assert_eq!(
        reasons(&filtered(r#"{"city": "Oslo", "n": {"$gt": 0}}"#)),
        owned(&[
            (
                "city_n",
                true,
                "2 field(s) narrowing the scan (1 to one value, then a range), 1 key range(s)"
            ),
            ("k", false, "no condition on its first field (meta.k)"),
            (
                "n",
                false,
                "1 field(s) narrowing the scan (0 to one value, then a range), 1 key range(s); another offered more"
            ),
        ])
    );
    assert_eq!(
        reasons(&filtered(r#"{"_id": "d01", "n": 3}"#)),
        owned(&[
            ("city_n", false, "the filter names documents by _id"),
            ("k", false, "the filter names documents by _id"),
            ("n", false, "the filter names documents by _id"),
        ])
    );
    assert_eq!(
        reasons(&filtered(r#"{"meta.k": {"$in": [1, 2]}}"#).order_by("n", true)),
        owned(&[
            (
                "city_n",
                false,
                "no condition on its first field (city) and it does not serve the sort"
            ),
            (
                "k",
                false,
                "1 field(s) narrowing the scan (0 to one value), 2 key range(s); another offered more"
            ),
            (
                "n",
                true,
                "0 field(s) narrowing the scan (0 to one value), serves the sort, 1 key range(s)"
            ),
        ])
    );
    assert_eq!(
        reasons(&filtered(r#"{"$or": [{"city": "Lima"}, {"n": 3}]}"#)),
        owned(&[
            (
                "city_n",
                false,
                "no condition on its first field (city); the $or branches are read through indexes"
            ),
            (
                "k",
                false,
                "no condition on its first field (meta.k); the $or branches are read through indexes"
            ),
            (
                "n",
                false,
                "no condition on its first field (n); the $or branches are read through indexes"
            ),
        ])
    );
}
