//! An import killed with SIGKILL at random moments leaves the target collection with all of
//! the import or none of it, never part; the next open removes the staging collection.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};
use stele::Database;
use stele::import::{ImportOptions, import_path};

const CHILD_ENV: &str = "STELE_IMPORT_CRASH_CHILD";
const DOCS: usize = 20_000;

#[test]
fn import_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return; // only runs when started by the parent below
    };
    let dir = std::path::PathBuf::from(dir);
    let db = Database::open(dir.join("db")).unwrap();
    let opts = ImportOptions::new().id_field("id").batch_docs(500);
    import_path(&db, "items", dir.join("input.jsonl"), &opts, |_| {}).unwrap();
    println!("imported");
}

#[test]
fn killed_imports_land_whole_or_not_at_all() {
    let rounds: u32 = std::env::var("STELE_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(10, |r: u32| r.div_ceil(5));
    let work = tempfile::tempdir().unwrap();
    let mut input = String::new();
    for i in 0..DOCS {
        input.push_str(&format!(
            "{{\"id\":\"i{i:06}\",\"n\":{i},\"pad\":\"{}\"}}\n",
            "x".repeat(i % 50)
        ));
    }
    std::fs::write(work.path().join("input.jsonl"), input).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let (mut whole, mut none) = (0, 0);
    for round in 0..rounds {
        let _ = std::fs::remove_dir_all(work.path().join("db"));
        let mut child = Command::new(&exe)
            .args(["import_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, work.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(20 + seed % 400));
        child.kill().unwrap();
        child.wait().unwrap();
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
    }
    eprintln!("{rounds} rounds: {whole} whole imports, {none} with nothing imported");
}
