//! The query language against a plain model over `serde_json` values: generated documents
//! (mixed types, missing fields, arrays of scalars and of objects, nested paths, unicode,
//! big numbers) and generated queries (every operator, `$and/$or/$nor`, sorts, skip, limit),
//! answered by the model and by the database under every combination of indexes, before and
//! after compaction, and through a snapshot taken before later writes; in a collection of
//! text ids and in one of integer ids (where `_id` is a number).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use serde_json::{Value, json};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use stele::{Database, DatabaseOptions, Filter, Query};

mod generate;
use generate::{document, query};

// ---------- the model's order and paths ----------

fn class(v: &Value) -> u8 {
    match v {
        Value::Null => 1,
        Value::Bool(_) => 2,
        Value::Number(_) => 3,
        Value::String(_) => 4,
        Value::Object(_) => 5,
        Value::Array(_) => 6,
    }
}

fn cmp_num(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    let int = |n: &serde_json::Number| n.to_string().parse::<i128>().ok();
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a
            .as_f64()
            .unwrap()
            .partial_cmp(&b.as_f64().unwrap())
            .unwrap(),
    }
}

fn cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => cmp_num(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = cmp(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.as_bytes().cmp(q.0.as_bytes()));
            ys.sort_by(|p, q| p.0.as_bytes().cmp(q.0.as_bytes()));
            for ((k1, v1), (k2, v2)) in xs.iter().zip(&ys) {
                let o = k1.as_bytes().cmp(k2.as_bytes()).then_with(|| cmp(v1, v2));
                if o != Ordering::Equal {
                    return o;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => class(a).cmp(&class(b)),
    }
}

thread_local! {
    /// Whether the model's ids (their text) are integers, as in a collection of integer ids:
    /// set by the property that runs on one.
    static INT_IDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The value `_id` holds for the model: the id, a number when ids are integers.
fn id_value(id: &str) -> Value {
    match INT_IDS.get() {
        true => json!(id.parse::<i64>().unwrap()),
        false => json!(id),
    }
}

fn reach(doc: &Value, id: &str, path: &str) -> Vec<Value> {
    if path == "_id" {
        return vec![id_value(id)];
    }
    let mut cur = vec![doc.clone()];
    for step in path.split('.') {
        let mut next = Vec::new();
        for v in cur {
            match v {
                Value::Object(m) => next.extend(m.get(step).cloned()),
                Value::Array(a) => match step.parse::<usize>() {
                    Ok(i) => next.extend(a.get(i).cloned()),
                    Err(_) => {
                        for e in a {
                            if let Value::Object(m) = e {
                                next.extend(m.get(step).cloned());
                            }
                        }
                    }
                },
                _ => {}
            }
        }
        cur = next;
    }
    cur
}

fn expand(reached: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for v in reached {
        out.push(v.clone());
        if let Value::Array(a) = v {
            out.extend(a.iter().cloned());
        }
    }
    out
}

// ---------- filters: generated as JSON, evaluated by the model ----------

fn eq_any(reached: &[Value], op: &Value) -> bool {
    (op.is_null() && reached.is_empty())
        || expand(reached)
            .iter()
            .any(|c| cmp(c, op) == Ordering::Equal)
}

fn in_range(c: &Value, lo: Option<(&Value, bool)>, hi: Option<(&Value, bool)>) -> bool {
    let spans = matches!((lo, hi), (Some((a, _)), Some((b, _))) if class(a) != class(b));
    let ok = |op: &Value| spans || class(op) == class(c);
    lo.is_none_or(|(op, incl)| ok(op) && (cmp(c, op).is_gt() || (incl && cmp(c, op).is_eq())))
        && hi
            .is_none_or(|(op, incl)| ok(op) && (cmp(c, op).is_lt() || (incl && cmp(c, op).is_eq())))
}

fn type_ok(c: &Value, t: &str) -> bool {
    match (t, c) {
        ("null", Value::Null) | ("bool", Value::Bool(_)) | ("string", Value::String(_)) => true,
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => !n.to_string().contains(['.', 'e', 'E']),
        _ => false,
    }
}

/// The operator object (or plain value) `cond` on the values `reached`.
fn holds(cond: &Value, reached: &[Value]) -> bool {
    let Value::Object(ops) = cond else {
        return eq_any(reached, cond);
    };
    if !ops.keys().next().is_some_and(|k| k.starts_with('$')) {
        return eq_any(reached, cond);
    }
    let bound = |k: &str| ops.get(k);
    let lo = bound("$gt")
        .map(|v| (v, false))
        .or(bound("$gte").map(|v| (v, true)));
    let hi = bound("$lt")
        .map(|v| (v, false))
        .or(bound("$lte").map(|v| (v, true)));
    if (lo.is_some() || hi.is_some()) && !expand(reached).iter().any(|c| in_range(c, lo, hi)) {
        return false;
    }
    ops.iter().all(|(op, arg)| match op.as_str() {
        "$gt" | "$gte" | "$lt" | "$lte" => true,
        "$eq" => eq_any(reached, arg),
        "$ne" => !eq_any(reached, arg),
        "$in" => arg.as_array().unwrap().iter().any(|o| eq_any(reached, o)),
        "$nin" => !arg.as_array().unwrap().iter().any(|o| eq_any(reached, o)),
        "$all" => arg.as_array().unwrap().iter().all(|o| eq_any(reached, o)),
        "$exists" => reached.is_empty() != arg.as_bool().unwrap(),
        "$type" => expand(reached)
            .iter()
            .any(|c| type_ok(c, arg.as_str().unwrap())),
        "$size" => reached.iter().any(|v| {
            v.as_array()
                .is_some_and(|a| a.len() as u64 == arg.as_u64().unwrap())
        }),
        "$prefix" => expand(reached).iter().any(|c| {
            c.as_str()
                .is_some_and(|s| s.starts_with(arg.as_str().unwrap()))
        }),
        "$not" => !holds(arg, reached),
        "$elemMatch" => reached.iter().any(|v| {
            v.as_array().is_some_and(|a| {
                a.iter().any(|e| {
                    let is_ops = arg.as_object().unwrap().keys().all(|k| k.starts_with('$'));
                    if is_ops {
                        holds(arg, std::slice::from_ref(e))
                    } else {
                        e.is_object() && matches(arg, e, None)
                    }
                })
            })
        }),
        other => panic!("model: {other}"),
    })
}

fn matches(filter: &Value, doc: &Value, id: Option<&str>) -> bool {
    filter
        .as_object()
        .unwrap()
        .iter()
        .all(|(k, v)| match k.as_str() {
            "$and" => v.as_array().unwrap().iter().all(|f| matches(f, doc, id)),
            "$or" => v.as_array().unwrap().iter().any(|f| matches(f, doc, id)),
            "$nor" => !v.as_array().unwrap().iter().any(|f| matches(f, doc, id)),
            path => {
                let reached = match (path, id) {
                    ("_id", Some(id)) => vec![id_value(id)],
                    ("_id", None) => Vec::new(),
                    _ => reach(doc, "", path),
                };
                holds(v, &reached)
            }
        })
}

/// The model's sort key for one path: the smallest (largest) entry; missing lowest.
fn sort_value(doc: &Value, id: &str, path: &str, desc: bool) -> Option<Value> {
    let mut entries = Vec::new();
    for v in reach(doc, id, path) {
        match v {
            Value::Array(a) if !a.is_empty() => entries.extend(a),
            other => entries.push(other),
        }
    }
    if desc {
        entries.into_iter().max_by(cmp)
    } else {
        entries.into_iter().min_by(cmp)
    }
}

fn cmp_opt(a: &Option<Value>, b: &Option<Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => cmp(x, y),
    }
}

#[derive(Debug, Clone)]
struct Q {
    filter: Value,
    sort: Vec<(&'static str, bool)>,
    skip: usize,
    limit: Option<usize>,
}

fn model(docs: &BTreeMap<String, Value>, q: &Q) -> Vec<String> {
    let mut hits: Vec<(&String, &Value)> = docs
        .iter()
        .filter(|(id, d)| matches(&q.filter, d, Some(id)))
        .collect();
    hits.sort_by(|(ia, a), (ib, b)| {
        for (path, desc) in &q.sort {
            let o = cmp_opt(
                &sort_value(a, ia, path, *desc),
                &sort_value(b, ib, path, *desc),
            );
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        cmp(&id_value(ia), &id_value(ib))
    });
    let ids = hits.into_iter().map(|(id, _)| id.clone()).skip(q.skip);
    match q.limit {
        Some(n) => ids.take(n).collect(),
        None => ids.collect(),
    }
}

fn stele_query(coll: &str, q: &Q) -> Query {
    let mut query = Query::new(coll).filter(Filter::parse(&q.filter.to_string()).unwrap());
    for (p, d) in &q.sort {
        query = query.sort(p, *d);
    }
    query = query.skip(q.skip);
    if let Some(n) = q.limit {
        query = query.limit(n);
    }
    query
}

const INDEXES: [&[&str]; 5] = [
    &["a"],
    &["b.c", "a:desc"],
    &["tags", "a"],
    &["items.sku"],
    &["a:desc", "tags:desc"],
];

fn check(
    db: &Database,
    snap: &stele::Snapshot,
    docs: &BTreeMap<String, Value>,
    queries: &[Q],
    what: &str,
) {
    let _ = db;
    for q in queries {
        let want = model(docs, q);
        let out = snap.query(&stele_query("c", q)).unwrap();
        let got: Vec<String> = out.rows.iter().map(|r| r.id.clone()).collect();
        assert_eq!(got, want, "{what}: {q:?}\nplan: {}", out.plan);
        // The stream gives the same rows, and so does a sort through the table sorter.
        for budget in [stele::query::DEFAULT_MEMORY_BUDGET_BYTES, 1] {
            let streamed: Vec<stele::Row> = snap
                .query_iter(&stele_query("c", q).memory_budget(budget))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert!(
                streamed == out.rows,
                "{what}: streamed within {budget} bytes {q:?}\nplan: {}",
                out.plan
            );
        }
        for r in &out.rows {
            let stored: Value = serde_json::from_str(&r.json).unwrap();
            assert_eq!(&stored, docs.get(&r.id).unwrap(), "{what}: row {}", r.id);
        }
        let count_q = Q {
            sort: Vec::new(),
            ..q.clone()
        };
        let count = snap.count_matching(&stele_query("c", &count_q)).unwrap();
        assert_eq!(
            count.count as usize,
            model(docs, &count_q).len(),
            "{what}: count {q:?}\nplan: {}",
            count.plan
        );
    }
}

/// The id of the `i`-th document: `d00`, `d01`, ..; with integer ids, numbers of every
/// sign and length (where text order is not numeric order), then spread out.
fn doc_id(i: usize, int_ids: bool) -> String {
    const INTS: [i64; 16] = [
        i64::MIN,
        -1000,
        -37,
        -5,
        -1,
        0,
        1,
        2,
        9,
        10,
        11,
        99,
        100,
        1000,
        12345,
        i64::MAX,
    ];
    match (int_ids, INTS.get(i)) {
        (false, _) => format!("d{i:02}"),
        (true, Some(n)) => n.to_string(),
        (true, None) => (i as i64 * 1001 - 20_000).to_string(),
    }
}

/// Puts document `d` as `id` (an integer id when `int_ids`).
fn put(batch: &mut stele::Batch, id: &str, d: &Value, int_ids: bool) {
    let json = d.to_string();
    match int_ids {
        true => batch.put_json_int("c", id.parse().unwrap(), json.as_bytes()),
        false => batch.put_json("c", id, json.as_bytes()),
    }
    .unwrap();
}

/// Documents, queries and indexes as generated, answered by the model and the database,
/// in a collection of text ids or of integer ids.
fn run_case(docs: &[Value], later: &[Value], queries: &[Q], index_mask: u8, int_ids: bool) {
    INT_IDS.set(int_ids);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), DatabaseOptions::default().compact_layers(2)).unwrap();
    let mut model_docs = BTreeMap::new();
    let mut batch = db.batch();
    for (i, d) in docs.iter().enumerate() {
        let id = doc_id(i, int_ids);
        put(&mut batch, &id, d, int_ids);
        model_docs.insert(id, d.clone());
    }
    db.commit(batch).unwrap();
    for (i, fields) in INDEXES.iter().enumerate() {
        if index_mask & (1 << i) != 0 {
            db.create_index("c", &format!("ix{i}"), fields).unwrap();
        }
    }
    check(&db, &db.snapshot(), &model_docs, queries, "indexed");
    // A snapshot keeps its answers while later writes land and the collection compacts.
    let snap = db.snapshot();
    let before = model_docs.clone();
    let mut batch = db.batch();
    for (i, d) in later.iter().enumerate() {
        let id = doc_id(i * 3, int_ids);
        put(&mut batch, &id, d, int_ids);
        model_docs.insert(id, d.clone());
    }
    let gone = doc_id(1, int_ids);
    batch.delete("c", &gone).unwrap();
    model_docs.remove(&gone);
    db.commit(batch).unwrap();
    db.compact().unwrap();
    check(&db, &snap, &before, queries, "snapshot");
    check(
        &db,
        &db.snapshot(),
        &model_docs,
        queries,
        "after compaction",
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: stele_testkit::proptest_cases(128), ..ProptestConfig::default() })]

    #[test]
    fn every_query_answers_as_the_model_under_every_index_set(
        docs in prop::collection::vec(document(), 1..30),
        later in prop::collection::vec(document(), 0..6),
        queries in prop::collection::vec(query(), 12),
        index_mask in 0u8..32,
    ) {
        run_case(&docs, &later, &queries, index_mask, false);
    }

    /// The same with integer ids: `_id` compares as a number (issue 34).
    #[test]
    fn with_integer_ids_every_query_answers_as_the_model(
        docs in prop::collection::vec(document(), 1..30),
        later in prop::collection::vec(document(), 0..6),
        queries in prop::collection::vec(query(), 12),
        index_mask in 0u8..32,
    ) {
        run_case(&docs, &later, &queries, index_mask, true);
    }
}
