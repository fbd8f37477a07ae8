//! What a new user meets in the first hour (issue "The first hour, second pass"): folders
//! that are not databases, sizes, collection names, empty and non-object imports, the
//! tour's figures, salvaging a damaged collection.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::Path;

fn stele() -> Command {
    Command::cargo_bin("stele").unwrap()
}

/// Runs `stele ARGS` expecting exit code `code`; returns stderr.
fn fails(args: &[&str], code: i32) -> String {
    let out = stele().args(args).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    stderr
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_folder_of_other_files_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let notdb = dir.path().join("notdb");
    std::fs::create_dir(&notdb).unwrap();
    std::fs::write(notdb.join("data.jsonl"), "{\"a\":1}\n").unwrap();
    std::fs::write(notdb.join("readme.txt"), "mine").unwrap();
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(&notdb)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let input = notdb.join("data.jsonl");
    for args in [
        vec!["put", path(&notdb), "x", "k1", "{\"a\":1}"],
        vec!["import", path(&notdb), "x", path(&input)],
    ] {
        let err = fails(&args, 1);
        assert!(
            err.contains("is not a database and not empty")
                && err.contains("data.jsonl, readme.txt")
                && err.contains("--create-here"),
            "{err}"
        );
        assert_eq!(listing(), ["data.jsonl", "readme.txt"], "nothing written");
    }
    // A file is named as one, by the writing commands as by the reading ones.
    let err = fails(&["put", path(&input), "x", "k1", "{}"], 1);
    assert!(err.contains("is a file, not a database folder"), "{err}");
    // Asked for: created beside the files; then it is a database and opens as usual.
    stele()
        .args(["put", path(&notdb), "x", "k1", "{\"a\":1}", "--create-here"])
        .assert()
        .success();
    stele()
        .args(["put", path(&notdb), "x", "k2", "{\"a\":2}"])
        .assert()
        .success();
    assert!(listing().contains(&"wal".to_owned()));
    // An empty folder is taken as a new one.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    stele()
        .args(["import", path(&empty), "x", path(&input)])
        .assert()
        .success();
}

#[test]
fn every_size_flag_takes_every_size_form() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, "{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"v\":2}\n").unwrap();
    for (i, memory) in ["256MiB", "1GiB", "268435456", "0.5GiB", "64M"]
        .into_iter()
        .enumerate()
    {
        let db = dir.path().join(format!("db{i}"));
        stele()
            .args(["import", path(&db), "c", path(&input), "--memory", memory])
            .assert()
            .success();
        let out = dir.path().join(format!("t{i}"));
        stele()
            .args(["table", "build", path(&input), "--key-field", "id"])
            .args(["--memory", memory, "-o", path(&out)])
            .assert()
            .success();
    }
    // Too small, or not a size: said with the flag's name and the smallest size allowed.
    let err = fails(
        &[
            "import",
            path(&dir.path().join("small")),
            "c",
            path(&input),
            "--memory",
            "256",
        ],
        2,
    );
    assert!(
        err.contains("'--memory <SIZE>'") && err.contains("at least 4MiB"),
        "{err}"
    );
    let err = fails(
        &["table", "build", path(&input), "--memory", "256", "-o", "x"],
        2,
    );
    assert!(
        err.contains("'--memory <SIZE>'")
            && err.contains("at least 64KiB")
            && !err.contains("memory_budget_bytes"),
        "{err}"
    );
    let err = fails(&["convert", path(&input), "--compress-min", "lots"], 2);
    assert!(err.contains("'--compress-min <SIZE>'"), "{err}");
    for cmd in [vec!["import", "--help"], vec!["table", "build", "--help"]] {
        stele()
            .args(&cmd)
            .assert()
            .success()
            .stdout(predicate::str::contains("--memory <SIZE>"))
            .stdout(predicate::str::contains(
                "65536 (bytes), 64KiB, 256MiB, 1.5GiB",
            ));
    }
}

#[test]
fn a_bad_collection_name_is_said_to_be_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("odd.db");
    for (name, why) in [
        ("my coll", "character 3 (' ') is not allowed"),
        ("ünïcødé", "character 1 ('ü') is not allowed"),
        ("_mine", "names starting with '_' are Stele's own"),
    ] {
        let err = fails(&["put", path(&db), name, "k1", "{\"a\":1}"], 1);
        assert!(
            err.contains("invalid collection name")
                && err.contains(why)
                && err.contains("ASCII letters")
                && !err.contains("JSON argument"),
            "{err}"
        );
    }
    assert!(!db.exists(), "a refused name creates no database");
}

#[test]
fn an_import_of_nothing_says_no_collection_was_made() {
    let dir = tempfile::tempdir().unwrap();
    let (db, input) = (dir.path().join("e.db"), dir.path().join("empty.jsonl"));
    std::fs::write(&input, "").unwrap();
    stele()
        .args(["import", path(&db), "x", path(&input)])
        .assert()
        .success()
        .stdout(predicate::str::contains("no collection \"x\" was made"))
        .stdout(predicate::str::contains("at rest").not());
    stele()
        .args(["import", path(&db), "x", path(&input), "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"collection_exists\":false"));
    let err = fails(&["export", path(&db), "x"], 1);
    assert!(err.contains("no collection \"x\""), "{err}");
}

#[test]
fn a_record_that_is_not_an_object_is_refused_unless_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    // A binary file whose one readable line is a bare number.
    let binary = dir.path().join("blob.bin");
    std::fs::write(&binary, b"\x00\x9f\x01garbage\xff\n2\n").unwrap();
    let db = dir.path().join("b.db");
    let out = stele()
        .args(["import", path(&db), "c", path(&binary), "--skip-bad"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("imported 0 documents"), "{stdout}");
    assert!(
        stderr.contains(":2: record 2: the record is a number, not a JSON object"),
        "{stderr}"
    );
    // Without --skip-bad: its line, its type and the way to keep it.
    let mixed = dir.path().join("mixed.jsonl");
    std::fs::write(&mixed, "{\"a\":1}\n[1,2]\n\"s\"\n").unwrap();
    let err = fails(
        &["import", path(&dir.path().join("m.db")), "c", path(&mixed)],
        1,
    );
    assert!(
        err.contains("mixed.jsonl:2")
            && err.contains("is an array, not a JSON object")
            && err.contains("--wrap-non-objects FIELD"),
        "{err}"
    );
    let db = dir.path().join("w.db");
    stele()
        .args([
            "import",
            path(&db),
            "c",
            path(&mixed),
            "--wrap-non-objects",
            "value",
        ])
        .assert()
        .success();
    stele()
        .args(["export", path(&db), "c"])
        .assert()
        .success()
        .stdout("{\"a\":1}\n{\"value\":[1,2]}\n{\"value\":\"s\"}\n");
}

#[test]
fn the_tour_says_one_size_of_its_input_and_no_empty_dictionary() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/orders.jsonl");
    let size = std::fs::metadata(sample).unwrap().len();
    let out = stele().arg("tour").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Every figure of the input's size is the file's.
    for said in [
        format!("{size} bytes of JSON, from"),
        format!("JSON {size} bytes, documents"),
        format!("of the {size} bytes of JSON"),
    ] {
        assert!(text.contains(&said), "no {said:?} in:\n{text}");
    }
    assert!(!text.contains("the 0-byte dictionary"), "{text}");
}

#[test]
fn table_range_reverse_is_said_in_key_order() {
    let out = stele().args(["table", "range", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        !help.to_lowercase().contains("newest"),
        "keys have no age:\n{help}"
    );
    assert!(help.contains("descending key order"), "{help}");
}

#[test]
fn a_damaged_collection_is_salvaged_with_each_lost_block_named() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let lines: String = (0..3000)
        .map(|i| {
            format!(
                "{{\"id\":\"k{i:05}\",\"text\":\"{}\",\"n\":{i}}}\n",
                "word ".repeat(i % 50)
            )
        })
        .collect();
    std::fs::write(&input, lines).unwrap();
    let db = dir.path().join("d.db");
    stele()
        .args(["import", path(&db), "c", path(&input), "--id-field", "id"])
        .assert()
        .success();
    // One byte flipped in the middle of the packed blocks' table.
    let tables: Vec<_> = std::fs::read_dir(db.join("tables"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "stt"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    let mut bytes = std::fs::read(&tables[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&tables[0], bytes).unwrap();

    let err = fails(&["export", path(&db), "c"], 1);
    assert!(err.contains("--salvage"), "{err}");
    let out = stele()
        .args(["export", path(&db), "c", "--salvage"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let file = tables[0].file_name().unwrap().to_str().unwrap();
    let lost: Vec<&str> = stderr.lines().filter(|l| l.starts_with("lost ")).collect();
    assert!(!lost.is_empty(), "{stderr}");
    for line in &lost {
        assert!(
            line.contains("packed block")
                && line.contains(file)
                && line.contains("at byte ")
                && line.contains("ids after"),
            "{line}"
        );
    }
    // Every line out is a whole document of the input, in id order, and only the lost
    // blocks' documents are missing.
    let ids: Vec<String> = stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(
        ids.len() >= 2000 && ids.len() < 3000,
        "{} exported",
        ids.len()
    );
    assert!(
        stderr.contains(&format!("exported {} documents", ids.len())),
        "{stderr}"
    );
}
