//! The database commands end to end: import, get, put, delete, export, compact, stats,
//! with their errors and exit codes.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use predicates::prelude::*;
use std::path::Path;

#[allow(dead_code, reason = "each test file uses some of the helpers")]
use crate::common;
use common::{SAMPLE, on, shop_with_orders, stdout_of, stele};

#[test]
fn import_get_export_round_trip_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    on("import", &db)
        .args(["orders", SAMPLE, "--id-field", "id", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"documents\":1000"));
    let got = stdout_of(&["get", "orders", "order-00000", "order-00001"], &db);
    let sample = std::fs::read_to_string(SAMPLE).unwrap();
    let first_two: Vec<&str> = sample.lines().take(2).collect();
    assert_eq!(got.lines().collect::<Vec<_>>(), first_two);
    // Export to a file, then import it elsewhere: same data, byte for byte.
    let out = dir.path().join("orders.jsonl");
    on("export", &db)
        .args(["orders", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("exported 1000 documents"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), sample);
    on("import", &db)
        .args(["copy", "-", "--id-field", "id"])
        .write_stdin(sample.clone())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "imported 1000 documents into \"copy\"",
        ));
    assert_eq!(stdout_of(&["export", "copy"], &db), sample);
    // Stats as text and JSON.
    on("stats", &db)
        .assert()
        .success()
        .stdout(predicate::str::contains("orders"))
        .stdout(predicate::str::contains("compression"));
    let stats: serde_json::Value =
        serde_json::from_str(&stdout_of(&["stats", "--json"], &db)).unwrap();
    let colls = stats["collections"].as_array().unwrap();
    assert_eq!(colls.len(), 2);
    assert_eq!(colls[1]["name"], "orders");
    assert_eq!(colls[1]["documents"], 1000);
    assert!(colls[1]["table_bytes"].as_u64().unwrap() > 0);
    assert_eq!(colls[1]["compression"]["enabled"], true);
    // 416 KB of JSON, under 1 MiB of documents: the import trains no dictionary
    // (`stele::import`'s bulk write); the compaction below trains one.
    assert_eq!(colls[1]["compression"]["dictionaries"], 0, "{stats}");
    // The compression ratio: the documents as written, each compressed alone.
    let ratio = |stats: &serde_json::Value| {
        let c = &stats["collections"][1]["compression"];
        let (raw, stored) = (
            c["raw_bytes"].as_u64().unwrap(),
            c["stored_bytes"].as_u64().unwrap(),
        );
        assert!(stored > 0 && raw > 0, "{stats}");
        assert!((c["ratio"].as_f64().unwrap() - raw as f64 / stored as f64).abs() < 1e-9);
        c["ratio"].as_f64().unwrap()
    };
    // The import closed the database: the collection is packed into blocks already.
    let at_rest = ratio(&stats);
    assert!(at_rest > 1.0, "{stats}");
    assert!(colls[1]["packed_blocks"].as_u64().unwrap() > 0, "{stats}");
    assert!(stats["log_bytes"].as_u64().unwrap() == 0, "{stats}");
    assert_eq!(stats["index_bytes"], 0, "{stats}");
    // Compact merges tables.
    let compacted: serde_json::Value =
        serde_json::from_str(&stdout_of(&["compact", "--json"], &db)).unwrap();
    assert_eq!(compacted["layers"], 2);
    // Each collection packed with the dictionary the compaction trained for it, at most one.
    let dicts = compacted["dictionaries"].as_u64().unwrap();
    assert_eq!(compacted["dictionaries_before"], 0, "{compacted}");
    assert!((1..=2).contains(&dicts), "{compacted}");
    // Packed into blocks, the same documents compress better, and the text names the ratio.
    let stats: serde_json::Value =
        serde_json::from_str(&stdout_of(&["stats", "--json"], &db)).unwrap();
    let packed = ratio(&stats);
    assert!(packed > 0.95 * at_rest, "{packed} vs {at_rest}");
    on("stats", &db)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "{packed:.2}x, on, 1 dictionary"
        )));
}

#[test]
fn put_get_delete_with_json_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    on("put", &db)
        .args(["c", "a", r#"{"z":1,"a":[true,null]}"#, "--json"])
        .assert()
        .success()
        .stdout("{\"collection\":\"c\",\"id\":\"a\",\"replaced\":false}\n");
    on("put", &db)
        .args(["c", "b\"q", "-"])
        .write_stdin("{\"n\": 2.50}")
        .assert()
        .success()
        .stderr(predicate::str::contains("created"));
    on("get", &db)
        .args(["c", "a", "b\"q", "--json"])
        .assert()
        .success()
        .stdout(
            "{\"id\":\"a\",\"document\":{\"z\":1,\"a\":[true,null]}}\n{\"id\":\"b\\\"q\",\"document\":{\"n\":2.50}}\n",
        );
    on("get", &db)
        .args(["c", "a", "--pretty"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("{\n  \"z\": 1,"));
    // A missing id: the others print, exit code 1.
    on("get", &db)
        .args(["c", "a", "nope"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("\"z\":1"))
        .stderr(predicate::str::contains(
            "not found in collection \"c\": nope",
        ));
    on("delete", &db)
        .args(["c", "a", "nope", "--json"])
        .assert()
        .success()
        .stdout("{\"collection\":\"c\",\"deleted\":1,\"not_found\":[\"nope\"]}\n");
    on("get", &db).args(["c", "a"]).assert().code(1);
    // Bad JSON names the line and column.
    on("put", &db)
        .args(["c", "x", "{\n\"a\": tru}"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the JSON argument"))
        .stderr(predicate::str::contains("line 2, column"));
}

#[test]
fn missing_database_and_collection_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for cmd in [
        vec!["get", "c", "a"],
        vec!["delete", "c", "a"],
        vec!["export", "c"],
        vec!["stats"],
        vec!["compact"],
    ] {
        on(cmd[0], &db)
            .args(&cmd[1..])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("no database at"));
    }
    assert!(!db.exists(), "reading commands create nothing");
    on("put", &db).args(["c", "a", "{}"]).assert().success();
    for cmd in [
        vec!["get", "d", "a"],
        vec!["delete", "d", "a"],
        vec!["export", "d"],
    ] {
        on(cmd[0], &db)
            .args(&cmd[1..])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("no collection \"d\" in database"))
            .stderr(predicate::str::contains("it has: c"));
    }
    on("put", &db)
        .args(["_bad", "a", "{}"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("invalid collection name"));
    stele().args(["get"]).arg(&db).assert().code(2);
}

#[test]
fn import_errors_name_file_and_line_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let bad = dir.path().join("bad.jsonl");
    let mut text: String = (0..30).map(|i| format!("{{\"id\":{i}}}\n")).collect();
    text.push_str("{\"id\":30,}\n{\"id\":31}\n");
    std::fs::write(&bad, &text).unwrap();
    on("import", &db)
        .args(["c"])
        .arg(&bad)
        .args(["--id-field", "id", "--batch", "7"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.jsonl:31:10: record 31"))
        .stderr(predicate::str::contains("--skip-bad"));
    assert!(!db.exists(), "a failed first import creates no database");
    on("import", &db)
        .args(["c"])
        .arg(&bad)
        .args(["--id-field", "id", "--skip-bad"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "imported 31 documents into \"c\" (1 skipped)",
        ))
        .stderr(predicate::str::contains("skipped "))
        .stderr(predicate::str::contains("bad.jsonl:31:10"));
    // A JSON array, a missing id field.
    let arr = dir.path().join("a.json");
    std::fs::write(&arr, "[\n {\"id\": \"x\"},\n {\"name\": \"y\"}\n]").unwrap();
    on("import", &db)
        .args(["arr"])
        .arg(&arr)
        .args(["--id-field", "id"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "a.json:3: record 2: no id field \"id\"",
        ));
    // Duplicate keys: last wins by default, or a bad record.
    let dup = dir.path().join("dup.jsonl");
    std::fs::write(&dup, "{\"a\":1}\n{\"a\":1,\"a\":2}\n").unwrap();
    on("import", &db)
        .args(["dup"])
        .arg(&dup)
        .args(["--duplicates", "reject"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "dup.jsonl:2: record 2: duplicate key \"a\"",
        ));
    on("import", &db).args(["dup"]).arg(&dup).assert().success();
    on("get", &db)
        .args(["dup", "0000000002"])
        .assert()
        .success()
        .stdout("{\"a\":2}\n");
    // A folder of files.
    let folder = dir.path().join("docs");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("one.json"), "{\"a\":1}").unwrap();
    std::fs::write(folder.join("two.json"), "{\"b\":[2]}").unwrap();
    on("import", &db)
        .args(["files"])
        .arg(&folder)
        .assert()
        .success();
    on("get", &db)
        .args(["files", "two"])
        .assert()
        .success()
        .stdout("{\"b\":[2]}\n");
    on("import", &db)
        .args(["x", "/nonexistent/file.jsonl"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/nonexistent/file.jsonl"));
}

#[test]
fn a_database_in_use_by_another_process_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // An import reading a pipe that stays open holds the database.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("stele"))
        .arg("import")
        .arg(&db)
        .args(["c", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = db.join("LOCK");
    let pid = child.id().to_string();
    for _ in 0..500 {
        if std::fs::read_to_string(&lock).is_ok_and(|t| t.trim() == pid) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A second writer is refused, naming the first; the read commands read beside it.
    on("put", &db)
        .args(["c", "x", "{}"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!("in use by pid {pid}")));
    on("stats", &db)
        .arg("--json")
        .assert()
        .success()
        .stdout(predicate::str::contains("\"collections\":[]"));
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"{\"a\":1}\n").unwrap();
    }
    assert!(child.wait().unwrap().success());
    on("get", &db)
        .args(["c", "0000000001"])
        .assert()
        .success()
        .stdout("{\"a\":1}\n");
}

#[test]
fn database_commands_have_examples() {
    for cmd in [
        "import", "get", "put", "delete", "export", "compact", "stats",
    ] {
        stele()
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
    }
}

/// A damaged table makes its collection's compression ratio unknown (with the reason), not
/// `stats` fail: it is the command one runs on a database in doubt.
#[test]
fn stats_names_a_damaged_collection_and_goes_on() {
    let (_dir, db) = shop_with_orders();
    on("compact", &db).assert().success();
    // The biggest table is the orders' packed blocks; damage a byte of its first data block.
    let biggest = std::fs::read_dir(db.join("tables"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "stt"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&biggest).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&biggest, bytes).unwrap();
    on("stats", &db)
        .assert()
        .success()
        .stdout(predicate::str::contains("orders"))
        .stdout(predicate::str::contains("ratio unknown"));
    let stats: serde_json::Value =
        serde_json::from_str(&stdout_of(&["stats", "--json"], &db)).unwrap();
    let c = &stats["collections"][0]["compression"];
    assert!(c["ratio"].is_null(), "{stats}");
    assert!(c["error"].as_str().unwrap().contains("checksum"), "{stats}");
}

/// `stele import` writes documents as the database does: long strings plain, for the
/// collection's zstd (the documents' bytes before compression hold the whole string).
#[test]
fn imports_store_long_strings_plain() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let long = "the same words again and again. ".repeat(100);
    on("import", &db)
        .args(["notes", "-", "--format", "jsonl"])
        .write_stdin(format!("{{\"text\":\"{long}\"}}\n"))
        .assert()
        .success();
    let stats: serde_json::Value =
        serde_json::from_str(&stdout_of(&["stats", "--json"], &db)).unwrap();
    let raw = stats["collections"][0]["compression"]["raw_bytes"]
        .as_u64()
        .unwrap();
    assert!(raw > long.len() as u64, "{stats}");
}

/// Runs `stele ARGS` expecting failure with exit code `code`, returns stderr.
fn fails(args: &[&str], db: &Path, code: i32) -> String {
    let out = on(args[0], db).args(&args[1..]).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    stderr
}

#[test]
fn arguments_that_cannot_mean_anything_are_errors() {
    let (dir, db) = shop_with_orders();
    // A misspelt operator would filter on a field named `total=` and find nothing.
    let err = fails(&["query", "orders", "--range", "total=>10"], &db, 1);
    assert!(err.contains("did you mean total>=10"), "{err}");
    for (range, says) in [
        (vec!["--range", "total"], "--range takes FIELD>VALUE"),
        (vec!["--range", ">3"], "names no field"),
        (vec!["--range", "total>"], "no value"),
        (
            vec!["--range", "total>1", "--range", "total>=2"],
            "second lower bound",
        ),
        (
            vec!["--range", "total>20", "--range", "total<10"],
            "swap the bounds",
        ),
        (vec!["--eq", "=1"], "--eq takes FIELD=VALUE"),
        (vec!["--eq", "status=shipped"], "a string needs quotes"),
        (vec!["--select", "status,"], "the field path \"\" is empty"),
        (vec!["--order-by", "a..b"], "empty name between dots"),
    ] {
        let mut args = vec!["query", "orders"];
        args.extend(range);
        let err = fails(&args, &db, 1);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let err = fails(&["query", "orders", "--limit", "0"], &db, 2);
    assert!(err.contains("0 is not in 1.."), "{err}");
    // Unknown collections: the index commands too (an index on a collection that does not
    // exist used to be created and listed while `stats` showed no such collection).
    for (cmd, rest) in [
        (vec!["query"], vec![]),
        (vec!["index", "create"], vec!["ix", "f"]),
        (vec!["index", "list"], vec![]),
        (vec!["index", "drop"], vec!["ix"]),
    ] {
        stele()
            .args(&cmd)
            .arg(&db)
            .arg("nocoll")
            .args(&rest)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("no collection \"nocoll\""))
            .stderr(predicate::str::contains("it has: orders"));
    }
    // Counts read as words: one row, one document.
    on("query", &db)
        .args(["orders", "--limit", "1"])
        .assert()
        .success()
        .stderr(predicate::str::starts_with("1 row;"));
    on("delete", &db)
        .args(["orders", "order-00001"])
        .assert()
        .success()
        .stderr(predicate::str::contains("deleted 1 document from"));
    // Failed writes into a new database leave nothing; into an existing folder, only what
    // was there.
    let fresh = dir.path().join("new").join("parent").join("fresh.db");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"a\":1}\n{\"a\":\n").unwrap();
    for args in [
        vec!["import", "c", "/nonexistent/in.jsonl"],
        vec!["import", "c", bad.to_str().unwrap()],
        vec!["put", "c", "a", "{\"a\":"],
    ] {
        let err = fails(&args, &fresh, 1);
        assert!(
            !dir.path().join("new").exists(),
            "{args:?} left a folder: {err}"
        );
    }
    let folder = dir.path().join("mine");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "kept").unwrap();
    fails(&["import", "c", bad.to_str().unwrap()], &folder, 1);
    let left: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"]);
    // An OS error is said once, and a file is not taken for a database folder.
    let err = fails(&["import", "c", "/nonexistent/in.jsonl"], &db, 1);
    assert_eq!(err.matches("/nonexistent/in.jsonl").count(), 1, "{err}");
    let err = fails(&["put", "c", "a", "{}"], &bad, 1);
    assert!(err.contains("is a file, not a database folder"), "{err}");
    // Fixes are said in flags, not in Rust types.
    let dup = dir.path().join("dup.jsonl");
    std::fs::write(&dup, "{\"a\":1,\"a\":2}\n").unwrap();
    let err = fails(
        &[
            "import",
            "c",
            dup.to_str().unwrap(),
            "--duplicates",
            "reject",
        ],
        &db,
        1,
    );
    assert!(
        err.contains("--duplicates last") && !err.contains("::"),
        "{err}"
    );
    let deep = dir.path().join("deep.jsonl");
    std::fs::write(&deep, "[[[[[1]]]]]\n").unwrap();
    let err = fails(
        &["import", "c", deep.to_str().unwrap(), "--max-depth", "2"],
        &db,
        1,
    );
    assert!(
        err.contains("raise --max-depth") && !err.contains("::"),
        "{err}"
    );
}

/// `stele import` says what landed: the documents, their bytes at rest and the ratio to the
/// JSON read (the sample orders pack to well under a fifth of their JSON).
#[test]
fn import_prints_what_landed_and_its_size_at_rest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    let text = stdout_of(&["import", "orders", SAMPLE, "--id-field", "id"], &db);
    let at_rest = text
        .lines()
        .find(|l| l.starts_with("at rest: 1000 documents in \"orders\", "))
        .unwrap_or_else(|| panic!("{text}"));
    let ratio: f64 = at_rest
        .split(" bytes (")
        .nth(1)
        .and_then(|r| r.split('x').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(ratio > 0.01 && ratio < 0.2, "{at_rest}");
    let json: serde_json::Value = serde_json::from_str(&stdout_of(
        &[
            "import",
            "more",
            SAMPLE,
            "--id-field",
            "id",
            "--json",
            "--memory",
            "4MiB",
        ],
        &db,
    ))
    .unwrap();
    let (at_rest, read) = (
        json["bytes_at_rest"].as_u64().unwrap(),
        json["bytes_read"].as_u64().unwrap(),
    );
    assert_eq!(json["collection_documents"], 1000);
    // Ids from a field: sorted first (in memory), not packed while read.
    assert_eq!(json["packed_while_reading"], false, "{json}");
    assert_eq!(json["spilled_bytes"], 0, "{json}");
    assert!(at_rest > 0 && at_rest * 5 < read, "{json}");
    assert!(json["folder_bytes"].as_u64().unwrap() > at_rest, "{json}");
    // The folder as the close left it (not counting the log's zeroes it gave back).
    fn bytes_under(dir: &std::path::Path) -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    bytes_under(&e.path())
                } else {
                    e.metadata().unwrap().len()
                }
            })
            .sum()
    }
    assert_eq!(
        json["folder_bytes"].as_u64().unwrap(),
        bytes_under(&db),
        "{json}"
    );
    // Below the smallest budget: a clear error, nothing imported.
    on("import", &db)
        .args(["other", SAMPLE, "--memory", "3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--memory"));
}

/// Numbered records (imported without an id field) are found by their number as people
/// write it: `42` is `0000000042`; `--json` names the id found; an id that is not a number
/// of a record is still not found.
#[test]
fn numbered_records_are_found_by_their_number() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    on("import", &db)
        .args(["orders", SAMPLE])
        .assert()
        .success();
    let sample = std::fs::read_to_string(SAMPLE).unwrap();
    let line = |n: usize| sample.lines().nth(n - 1).unwrap().to_owned();
    let got = stdout_of(&["get", "orders", "42", "0000000043", "1000"], &db);
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        [line(42), line(43), line(1000)]
    );
    let json = stdout_of(&["get", "orders", "7", "--json"], &db);
    assert!(
        json.starts_with("{\"id\":\"0000000007\",\"document\":"),
        "{json}"
    );
    on("get", &db)
        .args(["orders", "1001"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "not found in collection \"orders\": 1001",
        ));
}
