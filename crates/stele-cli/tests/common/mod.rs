//! Helpers of the database command tests (`db.rs`, `query.rs`): the binary, a database
//! with the sample orders, and command outputs.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

pub const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/orders.jsonl");

pub fn stele() -> Command {
    Command::cargo_bin("stele").unwrap()
}

/// `stele CMD DB`, more arguments to follow.
pub fn on(cmd: &str, db: &Path) -> Command {
    let mut c = stele();
    c.arg(cmd).arg(db);
    c
}

/// A database in a temporary folder (removed when the first value drops) with the sample
/// orders imported.
pub fn shop_with_orders() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    on("import", &db)
        .args(["orders", SAMPLE, "--id-field", "id"])
        .assert()
        .success();
    (dir, db)
}

/// stdout of `cmd`, which must succeed.
fn stdout(mut cmd: Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// stdout of `stele ARGS[0] DB ARGS[1..]`, which must succeed.
pub fn stdout_of(args: &[&str], db: &Path) -> String {
    let mut cmd = on(args[0], db);
    cmd.args(&args[1..]);
    stdout(cmd)
}

/// `stele index list DB orders --json`.
pub fn index_list(db: &Path) -> String {
    let mut cmd = stele();
    cmd.args(["index", "list"])
        .arg(db)
        .args(["orders", "--json"]);
    stdout(cmd)
}
