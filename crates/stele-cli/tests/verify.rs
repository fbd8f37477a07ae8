//! `stele table stats --verify` and `stele verify` on damaged tables: one flipped byte in a
//! data block, in the index or in the footer is reported as a problem (a failure naming the
//! file and what failed), never as sound. A verify that skipped block checksums, or the
//! index's, would pass a test on a sound table and a garbage file alone.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn stele() -> Command {
    Command::cargo_bin("stele").unwrap()
}

/// Footer bytes at the end of a table (`docs/FORMAT.md`, sorted table format).
const FOOTER: usize = 120;
/// Where the footer holds the index's offset and length (u64 each, little-endian).
const INDEX_OFFSET_AT: usize = 32;

/// Builds a table of 5,000 keys (several blocks) in `dir` with the CLI; returns its path.
fn build_table(dir: &Path) -> PathBuf {
    let keys = dir.join("keys.txt");
    let text: String = (0..5000).map(|i| format!("key-{i:05}\n")).collect();
    std::fs::write(&keys, text).unwrap();
    let out = stele()
        .args(["table", "build"])
        .arg(&keys)
        .arg("-o")
        .arg(dir.join("t"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn u64_at(bytes: &[u8], at: usize) -> usize {
    usize::try_from(u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())).unwrap()
}

/// Copies `table` to `name` in `dir` with the byte at `at` flipped; returns the copy.
fn flipped(table: &Path, dir: &Path, name: &str, at: usize) -> PathBuf {
    let mut bytes = std::fs::read(table).unwrap();
    bytes[at] ^= 0x10;
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `stele table stats --verify` on `path`; returns its stderr, asserting it failed.
fn verify_fails(path: &Path) -> String {
    let out = stele()
        .args(["table", "stats", "--verify"])
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{} verified as sound: {}",
        path.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains(&path.display().to_string()),
        "the error names the file: {stderr}"
    );
    stderr
}

#[test]
fn verify_reports_a_flipped_byte_in_a_block_the_index_or_the_footer() {
    let dir = tempfile::tempdir().unwrap();
    let table = build_table(dir.path());
    let bytes = std::fs::read(&table).unwrap();
    let footer = bytes.len() - FOOTER;
    let index = u64_at(&bytes, footer + INDEX_OFFSET_AT);
    let index_len = u64_at(&bytes, footer + INDEX_OFFSET_AT + 8);
    assert_eq!(index + index_len, footer, "the layout of docs/FORMAT.md");
    assert!(index > 4096, "several blocks");
    // The sound table verifies.
    stele()
        .args(["table", "stats", "--verify"])
        .arg(&table)
        .assert()
        .success();
    // A data block, in the middle of the blocks: opening does not read it, the verify must.
    let block = flipped(&table, dir.path(), "block.stt", index / 2);
    stele()
        .args(["table", "stats"])
        .arg(&block)
        .assert()
        .success();
    let err = verify_fails(&block);
    // "checksum mismatch in data block 2 (bytes 8192..12288)": which block, where.
    let at = index / 2 / 4096 * 4096;
    assert!(
        err.contains("checksum mismatch in data block") && err.contains(&format!("bytes {at}..")),
        "the block and its offset: {err}"
    );
    // The index and the footer: the table does not open.
    let err = verify_fails(&flipped(
        &table,
        dir.path(),
        "index.stt",
        index + index_len / 2,
    ));
    assert!(
        err.contains("checksum mismatch in index"),
        "the index: {err}"
    );
    let err = verify_fails(&flipped(&table, dir.path(), "footer.stt", footer + 40));
    assert!(
        err.contains("checksum mismatch in footer"),
        "the footer: {err}"
    );
}

/// Imports 3,000 documents of random text (a table of several compressed blocks) into a
/// database in `dir`; returns the database and its one table.
fn build_database(dir: &Path) -> (PathBuf, PathBuf) {
    let input = dir.join("docs.jsonl");
    // A simple generator (xorshift) so the blocks do not compress to one.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut text = String::new();
    for i in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!(
            "{{\"n\":{i},\"h\":\"{x:016x}{:016x}\"}}\n",
            x.rotate_left(29)
        ));
    }
    std::fs::write(&input, text).unwrap();
    let db = dir.join("db");
    stele()
        .arg("import")
        .arg(&db)
        .arg("c")
        .arg(&input)
        .assert()
        .success();
    let table = std::fs::read_dir(db.join("tables"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "stt"))
        .unwrap();
    (db, table)
}

/// Runs `stele verify` on a copy of `db` whose table has the byte at `at` flipped; returns
/// what it printed, asserting it failed and named the table.
fn database_verify_fails(db: &Path, table: &Path, at: usize, scratch: &Path) -> String {
    let copy = scratch.join(format!("copy-{at}"));
    let copied_tables = copy.join("tables");
    std::fs::create_dir_all(&copied_tables).unwrap();
    for entry in std::fs::read_dir(db).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
    }
    let wal = copy.join("wal");
    std::fs::create_dir_all(&wal).unwrap();
    for entry in std::fs::read_dir(db.join("wal")).unwrap().flatten() {
        std::fs::copy(entry.path(), wal.join(entry.file_name())).unwrap();
    }
    flipped(
        table,
        &copied_tables,
        table.file_name().unwrap().to_str().unwrap(),
        at,
    );
    let out = stele().arg("verify").arg(&copy).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let name = table.file_name().unwrap().to_str().unwrap();
    assert!(stdout.contains(name), "the table is named: {stdout}");
    assert!(
        stderr.contains("is damaged") && stderr.contains("restore it from a backup"),
        "a database (not a backup) is sent to its backup: {stderr}"
    );
    stdout
}

/// `stele verify` on a database: a flipped byte in one of its table's data blocks, in the
/// index and in the footer is each reported with what failed, beside the content hash that
/// names the table (a verify that only hashed would not say where).
#[test]
fn database_verify_reports_a_flipped_byte_in_a_block_the_index_or_the_footer() {
    let dir = tempfile::tempdir().unwrap();
    let (db, table) = build_database(dir.path());
    stele().arg("verify").arg(&db).assert().success();
    let bytes = std::fs::read(&table).unwrap();
    let footer = bytes.len() - FOOTER;
    let index = u64_at(&bytes, footer + INDEX_OFFSET_AT);
    let index_len = u64_at(&bytes, footer + INDEX_OFFSET_AT + 8);
    assert_eq!(index + index_len, footer, "the layout of docs/FORMAT.md");
    let out = database_verify_fails(&db, &table, index / 2, dir.path());
    assert!(
        out.contains("checksum mismatch in data block") && out.contains(" at byte "),
        "the block and its offset: {out}"
    );
    let out = database_verify_fails(&db, &table, index + index_len / 2, dir.path());
    assert!(
        out.contains("checksum mismatch in index"),
        "the index: {out}"
    );
    let out = database_verify_fails(&db, &table, footer + 40, dir.path());
    assert!(
        out.contains("checksum mismatch in footer"),
        "the footer: {out}"
    );
}
