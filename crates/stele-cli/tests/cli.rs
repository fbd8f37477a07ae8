//! The `stele` binary end to end: every command, its output and its errors.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use assert_cmd::Command;
use predicates::prelude::*;

fn stele() -> Command {
    Command::cargo_bin("stele").unwrap()
}

#[test]
fn convert_round_trips_through_files_and_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("in.json");
    let doc = dir.path().join("out.stele");
    std::fs::write(
        &json,
        r#"{"b":[1,2.50,"é"],"a":{"x":null},"big":123456789012345678901234}"#,
    )
    .unwrap();
    stele()
        .arg("convert")
        .arg(&json)
        .arg("-o")
        .arg(&doc)
        .assert()
        .success();
    let bytes = std::fs::read(&doc).unwrap();
    assert_eq!(bytes[0], 0xB1);
    stele().arg("convert").arg(&doc).assert().success().stdout(
        r#"{"b":[1,2.50,"é"],"a":{"x":null},"big":123456789012345678901234}"#.to_owned() + "\n",
    );
    stele()
        .args(["convert", "-", "--to", "json", "--sort-keys"])
        .write_stdin(bytes.clone())
        .assert()
        .success()
        .stdout(
            r#"{"a":{"x":null},"b":[1,2.50,"é"],"big":123456789012345678901234}"#.to_owned() + "\n",
        );
    stele()
        .args(["convert", "-", "--pretty"])
        .write_stdin(bytes)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("{\n  \"b\": [\n    1,"));
    // JSON to document on stdout works when stdout is not a terminal.
    stele()
        .args(["convert", "-"])
        .write_stdin("[1]")
        .assert()
        .success()
        .stdout(predicate::function(|out: &[u8]| out.first() == Some(&0xB1)));
}

#[test]
fn convert_errors_name_file_line_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"a\": 1,\n  \"a\": tru\n}").unwrap();
    stele()
        .arg("convert")
        .arg(&bad)
        .arg("-o")
        .arg(dir.path().join("x.stele"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.json"))
        .stderr(predicate::str::contains("line 3, column 8"));
    assert!(!dir.path().join("x.stele").exists(), "nothing half-written");
    std::fs::write(&bad, r#"{"a":1,"a":2}"#).unwrap();
    stele()
        .arg("convert")
        .arg(&bad)
        .args(["--duplicates", "reject", "-o", "-"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("duplicate key \"a\""));
    stele()
        .args(["convert", "/definitely/not/here.json"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/definitely/not/here.json"));
    let corrupt = dir.path().join("corrupt.stele");
    let mut bytes = stele_doc::from_json(br#"{"a":[1,2,3]}"#).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x40;
    std::fs::write(&corrupt, bytes).unwrap();
    stele()
        .arg("convert")
        .arg(&corrupt)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a valid Stele document"));
    stele().args(["convert", "--bogus"]).assert().code(2);
}

#[test]
fn inspect_shows_layout_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("in.json");
    std::fs::write(&json, r#"{"items":[{"sku":"a-1"},{"sku":"b-2"}],"n":3}"#).unwrap();
    stele()
        .arg("inspect")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("names area"))
        .stdout(predicate::str::contains("3 distinct names"));
    stele()
        .arg("inspect")
        .arg(&json)
        .args(["--path", "items[1].sku"])
        .assert()
        .success()
        .stdout("\"b-2\"\n");
    stele()
        .arg("inspect")
        .arg(&json)
        .args(["--path", "items[7]"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no value at path"));
    let out = stele()
        .arg("inspect")
        .arg(&json)
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["names"], 3);
    assert_eq!(v["objects"], 3);
}

#[test]
fn tour_runs_on_the_bundled_sample() {
    stele()
        .arg("tour")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "1000 of 1000 documents equal as values",
        ))
        .stdout(predicate::str::contains(
            "first document: customer.address.city = \"Lima\"",
        ))
        .stdout(predicate::str::contains(
            "export: 1000 lines, equal to the input's documents",
        ));
}

#[test]
fn help_has_examples_and_completions_generate() {
    for cmd in ["convert", "inspect", "tour"] {
        stele()
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"));
    }
    for sub in ["build", "get", "range", "prefix", "stats"] {
        stele()
            .args(["table", sub, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"));
    }
    stele()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicate::str::contains("stele"));
}

#[test]
fn table_build_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.txt");
    let mut text = String::new();
    for i in (0..5000).rev() {
        text.push_str(&format!("key-{i:05}\n"));
    }
    std::fs::write(&keys, &text).unwrap();
    let out = stele()
        .args(["table", "build"])
        .arg(&keys)
        .arg("-o")
        .arg(dir.path().join("t"))
        .args(["--memory", "64KiB"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(table.ends_with(".stt"), "{table}");
    let files: Vec<_> = std::fs::read_dir(dir.path().join("t")).unwrap().collect();
    assert_eq!(files.len(), 1, "spill files cleaned up");
    stele()
        .args(["table", "get", &table, "key-00042"])
        .assert()
        .success()
        .stdout("key-00042\n");
    stele()
        .args(["table", "get", &table, "key-00042", "nope"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not found").and(predicate::str::contains("nope")));
    stele()
        .args([
            "table",
            "range",
            &table,
            "--from",
            "key-00010",
            "--to",
            "key-00013",
        ])
        .assert()
        .success()
        .stdout("key-00010\nkey-00011\nkey-00012\n");
    stele()
        .args(["table", "range", &table, "--reverse", "-n", "2"])
        .assert()
        .success()
        .stdout("key-04999\nkey-04998\n");
    stele()
        .args(["table", "prefix", &table, "key-0499"])
        .assert()
        .success()
        .stdout(
            predicate::str::starts_with("key-04990\n")
                .and(predicate::str::ends_with("key-04999\n")),
        );
    let out = stele()
        .args(["table", "stats", &table, "--verify", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["entries"], 5000);
    assert_eq!(v["verified"], true);
}

#[test]
fn table_build_tsv_jsonl_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("p.tsv");
    std::fs::write(&tsv, "b\t2\na\t1\n").unwrap();
    let out = stele()
        .args(["table", "build", "--format", "tsv", "-o"])
        .arg(dir.path())
        .arg(&tsv)
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    stele()
        .args(["table", "range", &table])
        .assert()
        .success()
        .stdout("a\t1\nb\t2\n");
    let jsonl = dir.path().join("d.jsonl");
    std::fs::write(&jsonl, "{\"id\":\"x\",\"n\":1.50}\n{\"id\":7,\"n\":2}\n").unwrap();
    let out = stele()
        .args([
            "table",
            "build",
            "--format",
            "jsonl",
            "--key-field",
            "id",
            "-o",
        ])
        .arg(dir.path().join("j"))
        .arg(&jsonl)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    stele()
        .args(["table", "get", &table, "x", "7"])
        .assert()
        .success()
        .stdout("x\t{\"id\":\"x\",\"n\":1.50}\n7\t{\"id\":7,\"n\":2}\n");
    // Errors: duplicates, a missing key field, a bad line, a missing table.
    std::fs::write(&tsv, "a\t1\na\t2\n").unwrap();
    stele()
        .args(["table", "build", "--format", "tsv", "-o"])
        .arg(dir.path().join("d"))
        .arg(&tsv)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--duplicates last"))
        .stderr(predicate::str::contains("DuplicatePolicy").not());
    std::fs::write(&tsv, "no tab here\n").unwrap();
    stele()
        .args(["table", "build", "--format", "tsv", "-o"])
        .arg(dir.path().join("d"))
        .arg(&tsv)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("line 1: no tab"));
    stele()
        .args(["table", "build", "--format", "jsonl", "-o"])
        .arg(dir.path().join("d"))
        .arg(&jsonl)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--key-field"));
    stele()
        .args(["table", "stats", "/no/such/table.stt"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/no/such/table.stt"));
    let corrupt = dir.path().join("bad.stt");
    std::fs::write(
        &corrupt,
        b"definitely not a table, but long enough to have a footer.......",
    )
    .unwrap();
    stele()
        .args(["table", "stats"])
        .arg(&corrupt)
        .assert()
        .code(1);
    stele()
        .args(["table", "build", "--memory", "lots", "x"])
        .assert()
        .code(2);
    // Ranges that cannot hold anything, limits of 0.
    stele()
        .args(["table", "range", &table, "--from", "b", "--to", "a"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("swap them"));
    for cmd in [["range", &table, "-n"], ["prefix", &table, "x"]] {
        let mut c = stele();
        c.arg("table").args(cmd);
        if cmd[0] == "prefix" {
            c.arg("-n");
        }
        c.arg("0").assert().code(2);
    }
}

#[test]
fn table_sets_build_in_one_pass_and_read_like_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pairs.tsv");
    let mut text: String = (0..3000).rev().map(|i| format!("k{i:05}\t{i}\n")).collect();
    text.push_str("k00007\tlater\n");
    std::fs::write(&input, &text).unwrap();
    let out = dir.path().join("set");
    let build = ["table", "build", "--format", "tsv", "--duplicates", "last"];
    let mut cmd = stele();
    cmd.args(build)
        .args(["--shards", "3", "--json", "-o"])
        .arg(&out)
        .arg(&input);
    let v: serde_json::Value = serde_json::from_str(&stdout_ok(cmd)).unwrap();
    assert_eq!(v["shards"], 3);
    assert_eq!(v["entries"], 3000);
    let manifest = v["path"].as_str().unwrap().to_owned();
    assert!(manifest.ends_with("set.sts"), "{manifest}");
    // The same reads as one table built from the same input.
    let mut cmd = stele();
    cmd.args(build)
        .arg("-o")
        .arg(dir.path().join("one"))
        .arg(&input);
    let one = stdout_ok(cmd).trim().to_owned();
    for args in [
        vec!["get", "k00007", "k02999", "k00000"],
        vec!["prefix", "k019", "-n", "5"],
        vec!["range", "--from", "k00990", "--to", "k01010"],
        vec!["range", "--reverse", "-n", "4"],
    ] {
        let run = |path: &str| {
            let mut cmd = stele();
            cmd.arg("table").arg(args[0]).arg(path).args(&args[1..]);
            stdout_ok(cmd)
        };
        let (a, b) = (run(&manifest), run(&one));
        assert!(!a.is_empty(), "{args:?}");
        assert_eq!(a, b, "{args:?}");
    }
    stele()
        .args(["table", "get", &manifest, "k00007"])
        .assert()
        .success()
        .stdout("k00007\tlater\n");
    // The sorted stream is cut every ceil(3001 lines / 3) keys; the repeated key is kept
    // once, so the last shard has one fewer.
    assert_eq!(shard_entries(&manifest), [1001, 1001, 998]);
    stele()
        .args(["table", "stats", &manifest, "--verify"])
        .assert()
        .success()
        .stdout(predicate::str::contains("3 shards"))
        .stdout(predicate::str::contains(
            "all blocks of all shards verified",
        ));
    // Committing the shards again (as a tool that built them elsewhere would) gives the
    // same manifest.
    let shards: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "stt"))
        .collect();
    assert_eq!(shards.len(), 3);
    let again = out.join("again.sts");
    stele()
        .args(["table", "commit"])
        .arg(&again)
        .args(&shards)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&manifest).unwrap()
    );
    // A bad line fails the build; no manifest or shard is written.
    std::fs::write(&input, "a\t1\nno tab\n").unwrap();
    let bad = dir.path().join("bad");
    set_build_fails(&bad, &input, "2", "line 2: no tab");
    assert!(!bad.join("set.sts").exists());
    // A repeated key in the last range fails it after the first ranges' shards were
    // written: they go too.
    let mut text: String = (0..3000).map(|i| format!("k{i:05}\t{i}\n")).collect();
    text.push_str("k02999\tagain\n");
    std::fs::write(&input, &text).unwrap();
    set_build_fails(&dir.path().join("dup"), &input, "3", "k02999");
    // Sorted input streams into the ranges' tables without a sorter: the same set.
    let sorted_input = dir.path().join("sorted.tsv");
    let text: String = (0..3000).map(|i| format!("k{i:05}\t{i}\n")).collect();
    std::fs::write(&sorted_input, &text).unwrap();
    let mut cmd = stele();
    cmd.args([
        "table", "build", "--format", "tsv", "--sorted", "--shards", "3", "--json",
    ])
    .arg("-o")
    .arg(dir.path().join("sorted"))
    .arg(&sorted_input);
    let v: serde_json::Value = serde_json::from_str(&stdout_ok(cmd)).unwrap();
    assert_eq!(v["shards"], 3);
    assert_eq!(v["entries"], 3000);
    // Cut by the input bytes read: lines of 9 to 12 bytes, the shards within a few percent.
    let counts = shard_entries(v["path"].as_str().unwrap());
    assert_eq!(counts.iter().sum::<u64>(), 3000);
    assert!(
        counts.iter().all(|&n| (900..=1100).contains(&n)),
        "{counts:?}"
    );
    // Sorted input from a pipe is spooled first (its length is what it is cut by): the same
    // shards as from the file.
    #[cfg(unix)]
    if std::process::Command::new("mkfifo")
        .arg(dir.path().join("fifo"))
        .status()
        .is_ok_and(|s| s.success())
    {
        let fifo = dir.path().join("fifo");
        let feeder = write_later(&fifo, std::fs::read(&sorted_input).unwrap());
        let mut cmd = stele();
        cmd.args([
            "table", "build", "--format", "tsv", "--sorted", "--shards", "3",
        ])
        .arg("-o")
        .arg(dir.path().join("piped-sorted"))
        .arg(&fifo);
        let piped = stdout_ok(cmd);
        feeder.join().unwrap();
        assert_eq!(shard_entries(piped.trim()), counts);
        // One table from a pipe: read once, nothing lost to an earlier open.
        let feeder = write_later(&fifo, std::fs::read(&input).unwrap());
        let mut cmd = stele();
        cmd.args([
            "table",
            "build",
            "--format",
            "tsv",
            "--duplicates",
            "last",
            "--json",
        ])
        .arg("-o")
        .arg(dir.path().join("piped-one"))
        .arg(&fifo);
        let v: serde_json::Value = serde_json::from_str(&stdout_ok(cmd)).unwrap();
        feeder.join().unwrap();
        assert_eq!(v["entries"], 3000);
    }
    // Many copies of one key where a cut falls (the first quarter of the input bytes ends
    // among them) stay in one shard, the last kept.
    let mut text: String = (0..10).map(|i| format!("k{i:02}\t{i}\n")).collect();
    text.push_str(&"k09\tagain\n".repeat(20));
    text.push_str("k09\tlast\n");
    text.extend((10..30).map(|i| format!("k{i:02}\t{i}\n")));
    let dups = dir.path().join("dups.tsv");
    std::fs::write(&dups, &text).unwrap();
    let mut cmd = stele();
    cmd.args([
        "table",
        "build",
        "--format",
        "tsv",
        "--sorted",
        "--duplicates",
        "last",
    ])
    .args(["--shards", "4", "--json", "-o"])
    .arg(dir.path().join("dups"))
    .arg(&dups);
    let v: serde_json::Value = serde_json::from_str(&stdout_ok(cmd)).unwrap();
    let set = v["path"].as_str().unwrap().to_owned();
    assert_eq!(v["entries"], 30);
    stele()
        .args(["table", "get", &set, "k09", "k10"])
        .assert()
        .success()
        .stdout("k09\tlast\nk10\t10\n");
    stele()
        .args(["table", "stats", &set, "--verify"])
        .assert()
        .success();
    // From standard input.
    stele()
        .args([
            "table",
            "build",
            "--shards",
            "2",
            "--set-name",
            "piped",
            "-o",
        ])
        .arg(&bad)
        .arg("-")
        .write_stdin("b\na\nc\n")
        .assert()
        .success()
        .stdout(predicate::str::ends_with("piped.sts\n"));
}

/// `stele table build --format tsv --shards N` of `input` into `out` fails with exit code
/// 1, saying `message` and that no manifest was written, and leaves `out` empty.
fn set_build_fails(out: &std::path::Path, input: &std::path::Path, shards: &str, message: &str) {
    stele()
        .args([
            "table", "build", "--format", "tsv", "--shards", shards, "-o",
        ])
        .arg(out)
        .arg(input)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(message))
        .stderr(predicate::str::contains("no manifest was written"));
    let left: Vec<_> = std::fs::read_dir(out).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Writes `bytes` to `path` (a pipe: blocks until a reader opens it) on a thread of its own.
fn write_later(path: &std::path::Path, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let path = path.to_path_buf();
    std::thread::spawn(move || std::fs::write(path, bytes).unwrap())
}

/// The entries of each shard of the set at `manifest`, from `stele table stats`.
fn shard_entries(manifest: &str) -> Vec<u64> {
    let mut cmd = stele();
    cmd.args(["table", "stats", manifest]);
    stdout_ok(cmd)
        .lines()
        .filter(|l| l.starts_with("shard "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "entries").unwrap();
            words[at - 1].parse().unwrap()
        })
        .collect()
}

/// The standard output of `cmd`, which must succeed.
fn stdout_ok(mut cmd: Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}
