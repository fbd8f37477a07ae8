//! An import killed with SIGKILL at random moments leaves the target collection with all of
//! the import or none of it, never part; the next open removes what it left behind (the
//! tables a bulk import wrote and no manifest names, its sort folder; the staging
//! collection of a staged import).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use stele::import::{ImportOptions, import_path};
use stele::{Database, DatabaseOptions};
use stele_testkit::crash::{self, Crash};

const CHILD_ENV: &str = "STELE_IMPORT_CRASH_CHILD";
const DOCS: usize = 20_000;

#[test]
fn import_child() {
    // Only runs when started by the parent below.
    crash::run_child_if_asked(CHILD_ENV, |dir| {
        // A file `numbered` in the folder: records numbered (no id field) into blocks of
        // 1 KiB, so that the import is packed while it is read.
        let numbered = dir.join(NUMBERED).exists();
        let (db, opts) = if numbered {
            let small = DatabaseOptions::default().pack_block_bytes(1024);
            (
                Database::open_with(dir.join("db"), small).unwrap(),
                ImportOptions::new(),
            )
        } else {
            (
                Database::open(dir.join("db")).unwrap(),
                ImportOptions::new().id_field("id").batch_docs(500),
            )
        };
        let report = import_path(&db, "items", dir.join("input.jsonl"), &opts, |_| {}).unwrap();
        assert_eq!(report.packed_while_reading, numbered, "{report:?}");
        println!("imported");
    });
}

/// The marker file of a numbered import (see `import_child`).
const NUMBERED: &str = "numbered";

#[test]
fn killed_imports_land_whole_or_not_at_all() {
    kill_imports(false);
}

/// As above, for an import packed while it is read: the tables it wrote before the kill
/// are removed by the next open as well.
#[test]
fn killed_imports_packed_while_read_land_whole_or_not_at_all() {
    kill_imports(true);
}

fn kill_imports(numbered: bool) {
    let work = tempfile::tempdir().unwrap();
    if numbered {
        std::fs::write(work.path().join(NUMBERED), b"").unwrap();
    }
    let mut input = String::new();
    for i in 0..DOCS {
        input.push_str(&format!(
            "{{\"id\":\"i{i:06}\",\"n\":{i},\"pad\":\"{}\"}}\n",
            "x".repeat(i % 50)
        ));
    }
    std::fs::write(work.path().join("input.jsonl"), input).unwrap();
    // A fifth of the rounds of the other crash tests: each one imports from the start.
    let mut crash = Crash::new(
        &stele_testkit::test_path!("import_child"),
        CHILD_ENV,
        work.path(),
    )
    .rounds_of(crash::rounds_from_env(10, 5))
    .kill_after_ms(5, 250);
    let rounds = crash.rounds();
    let (mut whole, mut none) = (0, 0);
    for round in 0..rounds {
        let _ = std::fs::remove_dir_all(work.path().join("db"));
        let killed = crash.kill_one();
        // A child that ended before the kill must have succeeded (its checks passed).
        if let Some(code) = killed.status.code() {
            assert_eq!(code, 0, "round {round}: the child failed on its own");
        }
        let db = Database::open(work.path().join("db")).unwrap();
        let snap = db.snapshot();
        match snap.count("items") {
            0 => none += 1,
            n if n == DOCS as u64 => whole += 1,
            n => panic!("round {round}: {n} of {DOCS} documents landed"),
        }
        let staged: Vec<&str> = snap
            .all_collections()
            .into_iter()
            .filter(|c| c.starts_with("_import-"))
            .collect();
        assert!(
            staged.is_empty(),
            "round {round}: staging left behind: {staged:?}"
        );
        let db_dir = work.path().join("db");
        let sorting: Vec<String> = names(&db_dir)
            .into_iter()
            .filter(|n| n.starts_with(".stele-sort-"))
            .collect();
        assert!(sorting.is_empty(), "round {round}: {sorting:?} left");
        // Nothing the open kept is garbage: a checkpoint (which removes every table its
        // manifest does not name) removes none of the tables there after the open.
        let opened = names(&db_dir.join("tables"));
        drop(snap);
        db.checkpoint().unwrap();
        let kept = names(&db_dir.join("tables"));
        let removed: Vec<&String> = opened.iter().filter(|t| !kept.contains(t)).collect();
        assert!(
            removed.is_empty(),
            "round {round}: left after open: {removed:?}"
        );
    }
    eprintln!("{rounds} rounds: {whole} whole imports, {none} with nothing imported");
}

/// The names of the entries of folder `dir`.
fn names(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}
