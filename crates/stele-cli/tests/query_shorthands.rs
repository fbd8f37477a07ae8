//! The one-field query flags of earlier versions (`--eq`, `--range`, `--order-by`, `--desc`)
//! through `stele query`, with and without an index, and the index commands with `stats`.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use predicates::prelude::*;

#[allow(dead_code, reason = "each test file uses some of the helpers")]
use crate::common;
use common::{index_list, on, shop_with_orders, stdout_of, stele};

#[test]
fn query_and_index_commands() {
    let (_dir, db) = shop_with_orders();
    // Without an index: a full scan, said by --explain and on stderr.
    on("query", &db)
        .args(["orders", "--eq", "status=\"shipped\"", "--explain"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("plan: full scan\n"));
    let scanned = stdout_of(
        &[
            "query",
            "orders",
            "--eq",
            "status=\"shipped\"",
            "--select",
            "status",
        ],
        &db,
    );
    assert!(scanned.lines().count() > 10, "{scanned}");
    assert!(
        scanned
            .lines()
            .all(|l| l.contains(r#""document":{"status":"shipped"}"#)),
        "{scanned}"
    );
    // With an index: the same rows, through the index.
    stele()
        .args(["index", "create"])
        .arg(&db)
        .args(["orders", "by_status", "status"])
        .assert()
        .success();
    assert_eq!(
        index_list(&db),
        "{\"name\":\"by_status\",\"fields\":[\"status\"]}\n"
    );
    // Stats count the index's bytes, per index and in all.
    let stats: serde_json::Value =
        serde_json::from_str(&stdout_of(&["stats", "--json"], &db)).unwrap();
    let orders = &stats["collections"][0];
    assert_eq!(orders["name"], "orders", "{stats}");
    let ix = &orders["indexes"][0];
    assert_eq!(
        (&ix["name"], &ix["entries"]),
        (&"by_status".into(), &1000.into())
    );
    let ix_bytes = ix["table_bytes"].as_u64().unwrap();
    assert!(
        ix_bytes > 0 && ix["key_bytes"].as_u64().unwrap() > 0,
        "{stats}"
    );
    assert_eq!(orders["index_bytes"].as_u64(), Some(ix_bytes), "{stats}");
    assert_eq!(stats["index_bytes"].as_u64(), Some(ix_bytes), "{stats}");
    on("stats", &db)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("{ix_bytes} in indexes")));
    on("query", &db)
        .args(["orders", "--eq", "status=\"shipped\"", "--explain"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "plan: index scan of \"by_status\" (1 key range(s))",
        ));
    let indexed = stdout_of(
        &[
            "query",
            "orders",
            "--eq",
            "status=\"shipped\"",
            "--select",
            "status",
        ],
        &db,
    );
    let mut a: Vec<&str> = scanned.lines().collect();
    let mut b: Vec<&str> = indexed.lines().collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    // Ranges, order and limit.
    let top = stdout_of(
        &[
            "query",
            "orders",
            "--range",
            "total>=0",
            "--order-by",
            "total",
            "--desc",
            "--limit",
            "3",
            "--select",
            "total",
        ],
        &db,
    );
    assert_eq!(top.lines().count(), 3, "{top}");
    // Errors: a string without quotes, a bad range, a missing index.
    on("query", &db)
        .args(["orders", "--eq", "status=shipped"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("a string needs quotes"));
    on("query", &db)
        .args(["orders", "--range", "total~3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--range takes"));
    stele()
        .args(["index", "drop"])
        .arg(&db)
        .args(["orders", "nope"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("no index of this name"));
    stele()
        .args(["index", "drop"])
        .arg(&db)
        .args(["orders", "by_status"])
        .assert()
        .success();
}
