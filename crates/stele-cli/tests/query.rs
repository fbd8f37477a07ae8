//! `stele query`, `index`, `aggregate` and `distinct` end to end, each answer checked
//! against the sample orders read with serde_json.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

#[allow(dead_code, reason = "each test file uses some of the helpers")]
use crate::common;
use common::{SAMPLE, index_list, on, shop_with_orders as shop, stdout_of, stele};

/// The sample's documents.
fn orders() -> Vec<Value> {
    std::fs::read_to_string(SAMPLE)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// stdout of `stele query DB orders ARGS..` (which must succeed).
fn query(db: &Path, args: &[&str]) -> String {
    stdout_of(&[&["query", "orders"], args].concat(), db)
}

/// The ids of query output lines, in order.
fn ids(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// `--explain --json` of a query (with `--count` if the args have it).
fn explain(db: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--explain", "--json"]);
    serde_json::from_str(&query(db, &all)).unwrap()
}

fn create_index(db: &Path, name: &str, fields: &str) {
    stele()
        .args(["index", "create"])
        .arg(db)
        .args(["orders", name, fields])
        .assert()
        .success();
}

fn total(o: &Value) -> f64 {
    o["total"].as_f64().unwrap()
}

#[test]
fn filters_on_several_fields_and_the_old_shorthands_agree_with_the_data() {
    let (_dir, db) = shop();
    let all = orders();
    let mut want: Vec<&Value> = all
        .iter()
        .filter(|o| o["status"] == "paid" && total(o) >= 100.0)
        .collect();
    assert!(want.len() > 10, "the sample has paid orders over 100");
    let want_ids: Vec<String> = want
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect();
    let by_filter = query(
        &db,
        &["--filter", r#"{"status": "paid", "total": {"$gte": 100}}"#],
    );
    assert_eq!(ids(&by_filter), want_ids);
    // The one-field flags of earlier versions say the same, and combine by AND with
    // --filter and with each other.
    let by_flags = query(&db, &["--eq", "status=\"paid\"", "--range", "total>=100"]);
    assert_eq!(by_flags, by_filter);
    // Ranges on two fields: each field takes its own bounds.
    let two = query(
        &db,
        &[
            "--range",
            "total>=100",
            "--range",
            "created<\"2026-06\"",
            "--eq",
            "status=\"paid\"",
        ],
    );
    let want_two: Vec<&str> = all
        .iter()
        .filter(|o| {
            o["status"] == "paid" && total(o) >= 100.0 && o["created"].as_str().unwrap() < "2026-06"
        })
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert!(!want_two.is_empty());
    assert_eq!(ids(&two), want_two);
    let mixed = query(
        &db,
        &["--filter", r#"{"status": "paid"}"#, "--range", "total>=100"],
    );
    assert_eq!(mixed, by_filter);
    // Sort on two keys, skip, limit and a nested projection.
    want.sort_by(|a, b| {
        let city = |o: &Value| {
            o["customer"]["address"]["city"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        city(a)
            .cmp(&city(b))
            .then(total(b).total_cmp(&total(a)))
            .then(a["id"].as_str().cmp(&b["id"].as_str()))
    });
    let page = query(
        &db,
        &[
            "--filter",
            r#"{"status": "paid", "total": {"$gte": 100}}"#,
            "--sort",
            "customer.address.city,total:desc",
            "--skip",
            "2",
            "--limit",
            "4",
            "--select",
            "customer.address.city,total",
        ],
    );
    let got: Vec<Value> = page
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), 4, "{page}");
    for (g, w) in got.iter().zip(&want[2..6]) {
        assert_eq!(g["id"], w["id"], "{page}");
        let city = &w["customer"]["address"]["city"];
        assert_eq!(
            g["document"],
            serde_json::json!({"customer": {"address": {"city": city}}, "total": w["total"]})
        );
    }
    // $or, $in, $exists and array elements.
    let or = query(
        &db,
        &[
            "--filter",
            r#"{"$or": [{"tags": "gift"}, {"items.sku": {"$in": ["kb-101"]}}], "note": {"$exists": true, "$ne": null}}"#,
        ],
    );
    let want_or: Vec<String> = orders()
        .iter()
        .filter(|o| {
            let tagged = o["tags"].as_array().unwrap().iter().any(|t| t == "gift");
            let sku = o["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["sku"] == "kb-101");
            (tagged || sku) && !o["note"].is_null()
        })
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!want_or.is_empty());
    assert_eq!(ids(&or), want_or);
}

#[test]
fn an_index_changes_the_plan_not_the_answer() {
    let (_dir, db) = shop();
    let args = [
        "--filter",
        r#"{"status": "shipped", "total": {"$lt": 60}}"#,
        "--sort",
        "total:desc",
    ];
    let scanned = query(&db, &args);
    let plan = explain(&db, &args);
    assert_eq!(plan["full_scan"], true, "{plan}");
    assert_eq!(plan["docs_examined"], 1000, "{plan}");
    create_index(&db, "by_status_total", "status,total:desc");
    let plan = explain(&db, &args);
    assert_eq!(plan["index"], "by_status_total", "{plan}");
    // The index serves the sort though the filter tests the sorted path: no order holds an
    // array at `total` (one that did would sort by its largest element while its entry that
    // meets `$lt` may be another; then the sort is done in memory, `stele::index::arrays`).
    assert_eq!(plan["sorted_in_memory"], false, "{plan}");
    let rows = plan["rows"].as_u64().unwrap();
    assert!(
        rows > 0 && plan["docs_examined"].as_u64() == Some(rows),
        "{plan}"
    );
    let indexed = query(&db, &args);
    // Ties (equal totals) may come in another order through the index: compare the rows
    // as sets and the totals in order.
    let totals = |out: &str| -> Vec<f64> {
        out.lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["document"]["total"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(totals(&indexed), totals(&scanned));
    let (mut a, mut b) = (ids(&scanned), ids(&indexed));
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // The text form names the candidates and what was read.
    let text = query(&db, &[&args[..], &["--explain"]].concat());
    assert!(
        text.starts_with("plan: index scan of \"by_status_total\""),
        "{text}"
    );
    assert!(text.contains("by_status_total  chosen"), "{text}");
    assert!(
        text.contains(&format!("documents examined: {rows}\n")),
        "{text}"
    );
    assert!(text.contains("\ntime: "), "{text}");
}

#[test]
fn sort_and_limit_served_by_a_compound_index_stop_early() {
    let (_dir, db) = shop();
    create_index(&db, "by_status_created", "status,created:desc");
    create_index(&db, "by_total", "total");
    let args = [
        "--filter",
        r#"{"status": "paid"}"#,
        "--sort",
        "created:desc",
        "--limit",
        "5",
    ];
    let plan = explain(&db, &args);
    assert_eq!(plan["index"], "by_status_created", "{plan}");
    assert_eq!(plan["sorted_in_memory"], false, "{plan}");
    assert_eq!(plan["rows"], 5, "{plan}");
    let examined = plan["docs_examined"].as_u64().unwrap();
    assert!(examined < 20, "read {examined} documents for 5: {plan}");
    let candidates = plan["candidates"].as_array().unwrap();
    let verdict = |name: &str| {
        candidates
            .iter()
            .find(|c| c["index"] == name)
            .map(|c| c["chosen"].clone())
    };
    assert_eq!(
        verdict("by_status_created"),
        Some(Value::Bool(true)),
        "{plan}"
    );
    assert_eq!(verdict("by_total"), Some(Value::Bool(false)), "{plan}");
    let mut paid: Vec<Value> = orders()
        .into_iter()
        .filter(|o| o["status"] == "paid")
        .collect();
    paid.sort_by(|a, b| b["created"].as_str().cmp(&a["created"].as_str()));
    let want: Vec<String> = paid[..5]
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids(&query(&db, &args)), want);
    // Reversed: ascending over the descending index.
    let plan = explain(
        &db,
        &[
            "--filter",
            r#"{"status": "paid"}"#,
            "--sort",
            "created",
            "--limit",
            "3",
        ],
    );
    assert_eq!(plan["index"], "by_status_created", "{plan}");
    assert_eq!(plan["sorted_in_memory"], false, "{plan}");
    assert!(
        plan["plan"].as_str().unwrap().contains("reversed"),
        "{plan}"
    );
}

#[test]
fn counts_come_from_index_keys_when_covered() {
    let (_dir, db) = shop();
    let want = orders()
        .iter()
        .filter(|o| o["status"] == "paid" || o["status"] == "shipped")
        .count();
    let filter = r#"{"status": {"$in": ["paid", "shipped"]}}"#;
    let count = |extra: &[&str]| query(&db, &[&["--filter", filter, "--count"], extra].concat());
    assert_eq!(count(&[]), format!("{want}\n"));
    assert_eq!(count(&["--limit", "7"]), "7\n");
    assert_eq!(count(&["--skip", &(want - 2).to_string()]), "2\n");
    let plan = explain(&db, &["--filter", filter, "--count"]);
    assert_eq!(
        (plan["covered"].clone(), plan["count"].clone()),
        (false.into(), want.into())
    );
    create_index(&db, "by_status", "status");
    assert_eq!(count(&[]), format!("{want}\n"));
    let plan = explain(&db, &["--filter", filter, "--count"]);
    assert_eq!(plan["covered"], true, "{plan}");
    assert_eq!(plan["docs_examined"], 0, "{plan}");
    assert_eq!(plan["count"], want, "{plan}");
    let text = count(&["--explain"]);
    assert!(
        text.contains(&format!("count: {want}\ncovered: no document read\n")),
        "{text}"
    );
    // A condition the keys cannot decide: documents are read, the count is the same.
    let both = r#"{"status": "paid", "total": {"$gt": 100}}"#;
    let want_both = orders()
        .iter()
        .filter(|o| o["status"] == "paid" && total(o) > 100.0)
        .count();
    let plan = explain(&db, &["--filter", both, "--count"]);
    assert_eq!(
        (plan["covered"].clone(), plan["count"].clone()),
        (false.into(), want_both.into())
    );
}

#[test]
fn index_create_takes_directions_and_lists_them() {
    let (_dir, db) = shop();
    create_index(&db, "by_city_total", "customer.address.city,total:desc");
    stele()
        .args(["index", "create"])
        .arg(&db)
        .args(["orders", "by_created", "created:desc"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "index \"by_created\" on orders: created:desc",
        ));
    let listed = index_list(&db);
    assert!(
        listed.contains(
            r#"{"name":"by_city_total","fields":["customer.address.city","total:desc"]}"#
        ),
        "{listed}"
    );
    assert!(
        listed.contains(r#"{"name":"by_created","fields":["created:desc"]}"#),
        "{listed}"
    );
}

/// stderr of a failing `stele query DB orders ARGS..` with exit code `code`.
fn query_fails(db: &Path, args: &[&str], code: i32) -> String {
    let out = on("query", db).arg("orders").args(args).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    stderr
}

#[test]
fn bad_filters_name_the_operator_and_its_place() {
    let (_dir, db) = shop();
    for (args, says) in [
        (
            vec!["--filter", r#"{"total": {"$gtx": 1}}"#],
            vec!["$.total.$gtx", "not a supported operator", "--filter"],
        ),
        (
            vec!["--filter", r#"{"$or": [{"a": 1}, {"b": {"$regex": "x"}}]}"#],
            vec!["$.$or[1].b.$regex"],
        ),
        (vec!["--filter", r#"{"a": {"$in": 3}}"#], vec!["$.a.$in"]),
        (vec!["--filter", "[1]"], vec!["a filter is a JSON object"]),
        (vec!["--filter", "{\"a\":"], vec!["--filter"]),
        (
            vec!["--projection", r#"{"a": 1, "b": 0}"#],
            vec!["--projection"],
        ),
        (vec!["--sort", ":desc"], vec!["names no field"]),
        (vec!["--sort", "a..b"], vec!["invalid"]),
        (vec!["--eq", "status=paid"], vec!["a string needs quotes"]),
        (
            vec!["--range", "total>1", "--range", "total>=2"],
            vec!["second lower bound on total"],
        ),
        (vec!["--range", "total=>10"], vec!["did you mean total>=10"]),
    ] {
        let err = query_fails(&db, &args, 1);
        for s in says {
            assert!(err.contains(s), "{args:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    for args in [
        vec!["--time-budget", "fast"],
        vec!["--count", "--sort", "total"],
        vec!["--select", "a", "--projection", r#"{"a": 1}"#],
        vec!["--json"],
        vec!["--sort", "a", "--order-by", "b"],
    ] {
        query_fails(&db, &args, 2);
    }
    // A budget that cannot be met stops the query and says so (a budget of one
    // microsecond is spent before the first document is read).
    let err = query_fails(
        &db,
        &[
            "--filter",
            r#"{"note": {"$exists": true}}"#,
            "--time-budget",
            "0.000001",
        ],
        1,
    );
    assert!(err.contains("past its time budget"), "{err}");
}

#[test]
fn query_commands_have_examples() {
    for cmd in [
        vec!["query"],
        vec!["aggregate"],
        vec!["distinct"],
        vec!["index", "create"],
    ] {
        stele()
            .args(&cmd)
            .arg("--help")
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
    }
}

/// stdout of `stele CMD DB orders ARGS..` (which must succeed), as JSON values.
fn json_lines(db: &Path, cmd: &str, args: &[&str]) -> Vec<Value> {
    stdout_of(&[&[cmd, "orders"], args].concat(), db)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn aggregate_groups_counts_and_unwinds_as_the_data_says() {
    let (_dir, db) = shop();
    let all = orders();
    let by_status = json_lines(
        &db,
        "aggregate",
        &[
            r#"[{"$group": {"_id": "$status", "n": {"$sum": 1}, "top": {"$max": "$total"}}}, {"$sort": {"_id": 1}}]"#,
        ],
    );
    let mut want = std::collections::BTreeMap::<String, (u64, f64)>::new();
    for o in &all {
        let e = want
            .entry(o["status"].as_str().unwrap().to_owned())
            .or_insert((0, f64::MIN));
        e.0 += 1;
        e.1 = e.1.max(total(o));
    }
    let got: Vec<(String, u64, f64)> = by_status
        .iter()
        .map(|g| {
            (
                g["_id"].as_str().unwrap().to_owned(),
                g["n"].as_u64().unwrap(),
                g["top"].as_f64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64, f64)> = want.into_iter().map(|(k, (n, t))| (k, n, t)).collect();
    assert_eq!(got, want);
    // $count after a $match (null matches a missing field too).
    let no_note = all.iter().filter(|o| o["note"].is_null()).count();
    assert_eq!(
        json_lines(
            &db,
            "aggregate",
            &[r#"[{"$match": {"note": null}}, {"$count": "n"}]"#]
        ),
        [serde_json::json!({ "n": no_note })]
    );
    // $unwind then $group over array elements.
    let sold = json_lines(
        &db,
        "aggregate",
        &[
            r#"[{"$match": {"status": "paid"}}, {"$unwind": "$items"}, {"$group": {"_id": "$items.sku", "qty": {"$sum": "$items.qty"}}}, {"$sort": {"_id": 1}}]"#,
        ],
    );
    let mut want_sold = std::collections::BTreeMap::<String, u64>::new();
    for o in all.iter().filter(|o| o["status"] == "paid") {
        for i in o["items"].as_array().unwrap() {
            *want_sold
                .entry(i["sku"].as_str().unwrap().to_owned())
                .or_default() += i["qty"].as_u64().unwrap();
        }
    }
    let got_sold: Vec<(String, u64)> = sold
        .iter()
        .map(|g| {
            (
                g["_id"].as_str().unwrap().to_owned(),
                g["qty"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got_sold, want_sold.into_iter().collect::<Vec<_>>());
    // Unsupported stages and accumulators are named with their place.
    for (pipeline, says) in [
        (
            r#"[{"$group": {"_id": "$status", "n": {"$median": 1}}}]"#,
            "$[0].$group.n.$median",
        ),
        (r#"[{"$match": {}}, {"$bogus": 1}]"#, "$[1].$bogus"),
        (r#"{"$match": {}}"#, "a pipeline is a JSON array"),
    ] {
        on("aggregate", &db)
            .args(["orders", pipeline])
            .assert()
            .code(1)
            .stderr(predicate::str::contains(says));
    }
}

#[test]
fn distinct_lists_values_in_order_with_a_filter() {
    let (_dir, db) = shop();
    let all = orders();
    let statuses: std::collections::BTreeSet<&str> =
        all.iter().map(|o| o["status"].as_str().unwrap()).collect();
    let got = json_lines(&db, "distinct", &["status"]);
    assert_eq!(
        got,
        statuses.iter().map(|s| Value::from(*s)).collect::<Vec<_>>()
    );
    // Array elements, of the documents the filter keeps.
    let tags: std::collections::BTreeSet<&str> = all
        .iter()
        .filter(|o| o["status"] == "paid")
        .flat_map(|o| {
            o["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
        })
        .collect();
    let got = json_lines(
        &db,
        "distinct",
        &["tags", "--filter", r#"{"status": "paid"}"#],
    );
    assert_eq!(
        got,
        tags.iter().map(|s| Value::from(*s)).collect::<Vec<_>>()
    );
    on("distinct", &db)
        .args(["orders", "tags", "--filter", r#"{"status": {"$eqq": 1}}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("$.status.$eqq"));
}
