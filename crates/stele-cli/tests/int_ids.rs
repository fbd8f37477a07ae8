//! Integer ids from an id field keep their type on the command line: numeric order, found
//! by number, printed as numbers by `get`, `query` and `export`, and ids of the other kind
//! refused with an error that says which kind the collection holds.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use assert_cmd::Command;
use std::path::Path;

fn stele() -> Command {
    Command::cargo_bin("stele").unwrap()
}

/// Runs `stele ARGS`: its exit code, stdout and stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = stele().args(args).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, Some(0), "{args:?}: {err}");
    out
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn imported_integer_ids_sort_print_and_are_found_as_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    let db = path(&db);
    let file = dir.path().join("in.jsonl");
    let lines = [
        r#"{"newid":10122,"name":"c"}"#,
        r#"{"name":"a","newid":1}"#,
        r#"{"newid":10014,"name":"b"}"#,
        r#"{"newid":-7,"name":"m"}"#,
        r#"{"newid":2}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    ok(&["import", db, "c", path(&file), "--id-field", "newid"]);

    let export = ok(&["export", db, "c"]);
    let want = [lines[3], lines[1], lines[4], lines[2], lines[0]].join("\n") + "\n";
    assert_eq!(
        export, want,
        "numeric order (2 before 10014), each document as read"
    );

    let got = ok(&["get", db, "c", "1", "10014", "--json"]);
    assert_eq!(
        got,
        "{\"id\":1,\"document\":{\"name\":\"a\",\"newid\":1}}\n\
         {\"id\":10014,\"document\":{\"newid\":10014,\"name\":\"b\"}}\n"
    );
    let rows = ok(&[
        "query",
        db,
        "c",
        "--filter",
        r#"{"_id": {"$gte": 1, "$lt": 10122}}"#,
    ]);
    let ids: Vec<&str> = rows.lines().map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(ids, [r#"{"id":1"#, r#"{"id":2"#, r#"{"id":10014"#]);

    let (code, _, err) = run(&["get", db, "c", "abc"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("collection \"c\" holds integer ids, and \"abc\" is not one"),
        "{err}"
    );
    let (code, _, err) = run(&["put", db, "c", "k1", "{}"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("holds integer ids"), "{err}");
    // An integer given as text joins the integers.
    let (_, _, said) = run(&["put", db, "c", "5", r#"{"newid":5}"#]);
    assert!(said.contains("created 5 in collection"), "{said}");
    let export = ok(&["export", db, "c"]);
    assert_eq!(export.lines().nth(3), Some(r#"{"newid":5}"#), "{export}");
}

#[test]
fn mixed_float_and_huge_ids_are_refused_with_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = path(&db);
    for (text, said) in [
        (
            "{\"id\":1}\n{\"id\":\"x\"}\n",
            "id \"x\" is a string, but the import's ids are integer ids (line 1's was)",
        ),
        (
            "{\"id\":2.5}\n",
            "holds 2.5, a number that is not an integer",
        ),
        (
            "{\"id\":9223372036854775808}\n",
            "an integer beyond the range of integer ids",
        ),
    ] {
        let file = dir.path().join("in.jsonl");
        std::fs::write(&file, text).unwrap();
        let (code, _, err) = run(&["import", db, "m", path(&file), "--id-field", "id"]);
        assert_ne!(code, Some(0), "{text}");
        assert!(err.contains(said), "{text}: {err}");
    }
}
