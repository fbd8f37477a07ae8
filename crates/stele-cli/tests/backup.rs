//! `stele backup`, `verify`, `replicate` and `restore` end to end.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use assert_cmd::Command;
use predicates::prelude::*;

fn stele() -> Command {
    Command::cargo_bin("stele").unwrap()
}

#[test]
fn backup_verify_replicate_and_restore_at_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let (db, bk) = (dir.path().join("db"), dir.path().join("bk"));
    stele()
        .arg("put")
        .arg(&db)
        .args(["c", "k1", r#"{"v":1}"#])
        .assert()
        .success();
    stele()
        .arg("backup")
        .arg(&db)
        .arg(&bk)
        .assert()
        .success()
        .stdout(predicate::str::contains("backed up").and(predicate::str::contains("version 1")));
    stele()
        .arg("put")
        .arg(&db)
        .args(["c", "k1", r#"{"v":2}"#])
        .assert()
        .success();
    stele()
        .arg("replicate")
        .arg(&db)
        .arg(&bk)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("shipped version 2")
                .and(predicate::str::contains("lag at most")),
        );
    stele()
        .arg("verify")
        .arg(&bk)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok"));
    stele()
        .arg("restore")
        .arg(&bk)
        .arg("--at")
        .assert()
        .success()
        .stdout(predicate::str::contains("versions 1 to 2"));
    let out = dir.path().join("out");
    stele()
        .arg("restore")
        .arg(&bk)
        .arg(&out)
        .args(["--at", "1"])
        .assert()
        .success();
    stele()
        .arg("get")
        .arg(&out)
        .args(["c", "k1"])
        .assert()
        .success()
        .stdout("{\"v\":1}\n");
    // The replica serves the read commands as it is.
    stele()
        .arg("get")
        .arg(&bk)
        .args(["c", "k1"])
        .assert()
        .success()
        .stdout("{\"v\":2}\n");
    // A restore never writes over a folder, and a version not held is named.
    stele()
        .arg("restore")
        .arg(&bk)
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("exists"));
    stele()
        .arg("restore")
        .arg(&bk)
        .arg(dir.path().join("o2"))
        .args(["--at", "9"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("holds no version 9"));
    // A damaged table: verify names the file and fails.
    let table = std::fs::read_dir(bk.join("tables"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "stt"))
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[0] ^= 0xff;
    // Hard-linked from the database: replace the backup's name only.
    std::fs::remove_file(&table).unwrap();
    std::fs::write(&table, &bytes).unwrap();
    stele()
        .arg("verify")
        .arg(&bk)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            table.file_name().unwrap().to_str().unwrap(),
        ))
        .stderr(
            predicate::str::contains("damaged").and(predicate::str::contains(
                "restore an earlier version of this backup with `stele restore --at`",
            )),
        );
}

#[test]
fn backup_with_a_rate_limit_and_a_bad_rate_refused_with_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let (db, bk) = (dir.path().join("db"), dir.path().join("bk"));
    stele()
        .arg("put")
        .arg(&db)
        .args(["c", "k1", r#"{"v":1}"#])
        .assert()
        .success();
    stele()
        .arg("backup")
        .arg(&db)
        .arg(&bk)
        .args(["--max-rate", "fast"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("--max-rate")
                .and(predicate::str::contains("\"fast\""))
                .and(predicate::str::contains("100MB/s")),
        );
    assert!(!bk.exists());
    stele()
        .arg("backup")
        .arg(&db)
        .arg(&bk)
        .args(["--copy", "--max-rate", "20"])
        .assert()
        .success()
        .stdout(predicate::str::contains("version 1"));
    stele().arg("verify").arg(&bk).assert().success();
    stele()
        .arg("replicate")
        .arg(&db)
        .arg(dir.path().join("replica"))
        .args(["--max-rate", "512KB/s"])
        .assert()
        .success()
        .stdout(predicate::str::contains("shipped version 1"));
}
