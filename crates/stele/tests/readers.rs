//! Read-only handles beside a writer: in one process (refresh, snapshots kept across
//! checkpoints and compactions, files kept while needed, nothing written, a commit whose
//! fsync failed dropped again) and across processes (reader processes checking a
//! constant sum while the writer process is killed with SIGKILL and restarted).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use stele::{Database, DatabaseOptions, ReadOnlyDatabase, Snapshot};
use stele_testkit::crash::{self, Crash};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

const ACCOUNTS: u64 = 20;
const START_AMOUNT: i64 = 100;

fn amount(snap: &Snapshot, id: &str) -> i64 {
    let doc = snap.get("acct", id).unwrap().unwrap();
    let doc = doc.document().unwrap();
    doc.get("amount").and_then(|v| v.as_i64()).unwrap()
}

/// The sum of every account of `snap`, after checking there are `ACCOUNTS` of them.
fn total(snap: &Snapshot) -> i64 {
    assert_eq!(snap.count("acct"), ACCOUNTS, "at seq {}", snap.seq());
    let mut sum = 0;
    for entry in snap.iter("acct") {
        let (_, doc) = entry.unwrap();
        let doc = doc.document().unwrap();
        sum += doc.get("amount").and_then(|v| v.as_i64()).unwrap();
    }
    sum
}

fn account(i: u64) -> String {
    format!("a{i:02}")
}

fn put_account(b: &mut stele::Batch, i: u64, amount: i64, n: u64) {
    let json = format!(
        r#"{{"amount":{amount},"n":{n},"pad":"{}"}}"#,
        "p".repeat(40)
    );
    b.put_json("acct", &account(i), json.as_bytes()).unwrap();
}

/// Creates the accounts (batch 1) with `opts`.
fn create(dir: &Path, opts: DatabaseOptions) -> Database {
    let db = Database::open_with(dir, opts).unwrap();
    if db.snapshot().count("acct") == 0 {
        let mut b = db.batch();
        for i in 0..ACCOUNTS {
            put_account(&mut b, i, START_AMOUNT, 0);
        }
        db.commit(b).unwrap();
    }
    db
}

/// Batch `n`: moves an amount between two accounts (the sum stays) and records `n`.
fn transfer(db: &Database, n: u64) {
    let snap = db.snapshot();
    let (from, to) = (n % ACCOUNTS, (n * 7 + 3) % ACCOUNTS);
    let to = if to == from { (to + 1) % ACCOUNTS } else { to };
    let moved = (n % 13) as i64 + 1;
    let mut b = db.batch();
    put_account(&mut b, from, amount(&snap, &account(from)) - moved, n);
    put_account(&mut b, to, amount(&snap, &account(to)) + moved, n);
    b.put_json("meta", "last", format!(r#"{{"n":{n}}}"#).as_bytes())
        .unwrap();
    db.commit(b).unwrap();
}

fn last_n(snap: &Snapshot) -> u64 {
    snap.get("meta", "last").unwrap().map_or(0, |d| {
        d.document().unwrap().get("n").unwrap().as_u64().unwrap()
    })
}

/// Every file and folder under `dir` with its length and modification time.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                todo.push(e.path());
            }
            out.insert(e.path(), (meta.len(), meta.modified().unwrap()));
        }
        let meta = std::fs::metadata(&d).unwrap();
        out.insert(d, (0, meta.modified().unwrap()));
    }
    out
}

#[test]
fn a_reader_sees_commits_when_it_refreshes() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path(), DatabaseOptions::default());
    let reader = Database::open_read_only(dir.path()).unwrap();
    assert_eq!(total(&reader.snapshot()), START_AMOUNT * ACCOUNTS as i64);
    let before = reader.snapshot();
    for n in 1..=10 {
        transfer(&db, n);
    }
    db.create_index("acct", "by_amount", &["amount"]).unwrap();
    // Nothing moves until the refresh; then everything acknowledged is there.
    assert_eq!(reader.snapshot().seq(), before.seq());
    assert_eq!(reader.refresh().unwrap(), db.snapshot().seq());
    let after = reader.snapshot();
    assert_eq!(last_n(&after), 10);
    assert_eq!(total(&after), START_AMOUNT * ACCOUNTS as i64);
    assert_eq!(
        common_content(&after, "acct"),
        common_content(&db.snapshot(), "acct")
    );
    // The index the log created is there too (built in memory by the reader).
    assert_eq!(after.indexes("acct").len(), 1);
    let q = stele::Query::new("acct").eq("amount", "100");
    assert_eq!(
        after.query(&q).unwrap().rows.len(),
        db.snapshot().query(&q).unwrap().rows.len()
    );
    // The old snapshot still reads its commit.
    assert_eq!(last_n(&before), 0);
    // Still one writer.
    let again = Database::open(dir.path()).unwrap_err();
    assert!(matches!(again, stele::Error::InUse { .. }), "{again}");
    // A folder without a database.
    let empty = tempfile::tempdir().unwrap();
    let err = Database::open_read_only(empty.path()).unwrap_err();
    assert!(matches!(err, stele::Error::NoDatabase { .. }), "{err}");
    assert!(std::fs::read_dir(empty.path()).unwrap().next().is_none());
}

fn common_content(snap: &Snapshot, c: &str) -> BTreeMap<String, String> {
    snap.iter(c)
        .map(|e| {
            let (id, d) = e.unwrap();
            (id, d.to_json().unwrap())
        })
        .collect()
}

#[test]
fn a_snapshot_keeps_its_files_across_checkpoints_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DatabaseOptions::default()
        .checkpoint_bytes(4 << 10)
        .compact_layers(2);
    let db = create(dir.path(), opts);
    for n in 1..=30 {
        transfer(&db, n);
    }
    db.checkpoint().unwrap();
    for n in 31..=40 {
        transfer(&db, n);
    }
    let reader = Database::open_read_only(dir.path()).unwrap();
    let snap = reader.snapshot();
    let held = common_content(&snap, "acct");
    let tables = snap.layers("acct");
    assert!(!tables.is_empty());
    let table_path = |id: &stele_table::TableId| dir.path().join("tables").join(id.file_name());
    let segments = |d: &Path| {
        std::fs::read_dir(d.join("wal"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect::<Vec<_>>()
    };
    let held_segments = segments(dir.path());
    // The writer moves on: more commits, checkpoints (new segments), compactions.
    for n in 41..=400 {
        transfer(&db, n);
        if n % 100 == 0 {
            db.compact().unwrap();
        }
    }
    db.checkpoint().unwrap();
    assert_eq!(common_content(&snap, "acct"), held);
    assert_eq!(last_n(&snap), 40);
    for id in &tables {
        assert!(table_path(id).exists(), "table {id} of a live snapshot");
    }
    for s in &held_segments {
        assert!(s.exists(), "segment {} a reader tails", s.display());
    }
    // A refresh catches up; snapshots taken before still read their commit.
    reader.refresh().unwrap();
    assert_eq!(last_n(&reader.snapshot()), 400);
    assert_eq!(
        common_content(&reader.snapshot(), "acct"),
        common_content(&db.snapshot(), "acct")
    );
    assert_eq!(common_content(&snap, "acct"), held);
    // Once the reader and its snapshot are gone, the next checkpoint removes the files.
    drop(snap);
    drop(reader);
    // (A checkpoint skips garbage collection while a background compaction builds a
    // table: a few more.)
    let gone = |p: &Path| !p.exists();
    for n in 401..450 {
        transfer(&db, n);
        db.checkpoint().unwrap();
        if tables.iter().all(|id| gone(&table_path(id))) && held_segments.iter().all(|s| gone(s)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for id in &tables {
        assert!(!table_path(id).exists(), "table {id} nothing needs");
    }
    for s in &held_segments {
        assert!(!s.exists(), "segment {} nothing needs", s.display());
    }
    assert_eq!(segments(dir.path()).len(), 1);
}

/// Whether this process can be refused a write by file permissions (root is not).
fn permissions_bind() -> bool {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() != "0"
}

#[test]
fn a_reader_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(
        dir.path(),
        DatabaseOptions::default().checkpoint_bytes(2 << 10),
    );
    for n in 1..=20 {
        transfer(&db, n);
    }
    drop(db);
    // A database at rest, read: not a byte, file or folder changes (as root, which may
    // write anywhere, this is what shows it; as another user the folder is also made
    // read-only so that any write would fail).
    let before = listing(dir.path());
    let restrict = permissions_bind();
    let set_mode = |mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        for path in before.keys() {
            let m = if path.is_dir() { mode | 0o111 } else { mode };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).unwrap();
        }
    };
    if restrict {
        set_mode(0o444);
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let reader = Database::open_read_only(dir.path()).unwrap();
    assert_eq!(reader.refresh().unwrap(), 21);
    assert_eq!(total(&reader.snapshot()), START_AMOUNT * ACCOUNTS as i64);
    let usage = reader.disk_usage();
    assert!(usage.total_bytes > 0);
    drop(reader);
    if restrict {
        set_mode(0o644);
    }
    assert_eq!(listing(dir.path()), before);
}

#[test]
fn a_commit_whose_sync_failed_leaves_the_reader_at_its_next_refresh() {
    let dir = tempfile::tempdir().unwrap();
    // The reader refreshes in the middle of the writer's commit: after the record is
    // written, before its sync (which fails).
    let reader_slot: Arc<std::sync::Mutex<Option<ReadOnlyDatabase>>> = Arc::default();
    let seen_in_between = Arc::new(std::sync::Mutex::new(None));
    let arm = Arc::new(AtomicBool::new(false));
    let faults = {
        let (slot, seen, arm) = (
            Arc::clone(&reader_slot),
            Arc::clone(&seen_in_between),
            Arc::clone(&arm),
        );
        Faults::new()
            .kinds(&[Op::SyncData])
            .fail_at(0)
            .only(|p| p.extension().is_some_and(|e| e == "log"))
            .on_op(move |op, _| {
                if op == Op::SyncData
                    && arm.load(Ordering::SeqCst)
                    && let Some(r) = slot.lock().unwrap().as_ref()
                {
                    *seen.lock().unwrap() = Some(r.refresh().unwrap());
                }
            })
            .disarmed()
            .shared()
    };
    let opts = DatabaseOptions::default().storage(FaultyStorage::with_faults(&faults));
    let db = create(dir.path(), opts);
    transfer(&db, 1);
    *reader_slot.lock().unwrap() = Some(Database::open_read_only(dir.path()).unwrap());
    let reader = reader_slot.lock().unwrap().clone().unwrap();
    assert_eq!(reader.snapshot().seq(), 2);
    // Batch 3's sync fails: the writer cuts its record off and reports the failure.
    faults.arm();
    arm.store(true, Ordering::SeqCst);
    let mut b = db.batch();
    put_account(&mut b, 0, 1_000_000, 3);
    let failed = db.commit(b);
    arm.store(false, Ordering::SeqCst);
    faults.disarm();
    assert!(failed.is_err());
    // The reader saw it while it was written and not yet synced...
    assert_eq!(*seen_in_between.lock().unwrap(), Some(3));
    assert_eq!(amount(&reader.snapshot(), "a00"), 1_000_000);
    // ... and drops it at its next refresh; the next commit reuses the number.
    assert_eq!(reader.refresh().unwrap(), 2);
    assert_ne!(amount(&reader.snapshot(), "a00"), 1_000_000);
    transfer(&db, 3);
    assert_eq!(reader.refresh().unwrap(), 3);
    assert_eq!(last_n(&reader.snapshot()), 3);
    assert_eq!(total(&reader.snapshot()), START_AMOUNT * ACCOUNTS as i64);
}

// ---- several processes ----

const HOLDER_ENV: &str = "STELE_READERS_HOLDER_DIR";

#[test]
fn holder_child() {
    crash::run_child_if_asked(HOLDER_ENV, |dir| {
        let _reader = Database::open_read_only(dir).unwrap();
        println!("\nready");
        std::thread::sleep(std::time::Duration::from_secs(60));
    });
}

#[test]
fn a_killed_reader_leaves_nothing_to_clean_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path(), DatabaseOptions::default());
    transfer(&db, 1);
    let segments = || -> Vec<PathBuf> {
        std::fs::read_dir(dir.path().join("wal"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    let held = segments();
    let mut child = spawn_holder(dir.path());
    // The reader process holds its segment: a checkpoint leaves it.
    transfer(&db, 2);
    db.checkpoint().unwrap();
    assert!(held.iter().all(|s| s.exists()));
    assert_eq!(segments().len(), held.len() + 1);
    // Killed: its locks went with it; the next checkpoint removes the segment.
    child.kill().unwrap();
    child.wait().unwrap();
    transfer(&db, 3);
    db.checkpoint().unwrap();
    assert!(held.iter().all(|s| !s.exists()));
    assert_eq!(segments().len(), 1);
    // And a writer's open removes what a reader held at the last checkpoint.
    let mut child = spawn_holder(dir.path());
    transfer(&db, 4);
    db.checkpoint().unwrap();
    assert_eq!(segments().len(), 2);
    child.kill().unwrap();
    child.wait().unwrap();
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(segments().len(), 1);
    assert_eq!(last_n(&db.snapshot()), 4);
}

/// Starts `holder_child` (a reader process holding its log segment) on database `dir`,
/// returning once it says it is ready.
fn spawn_holder(dir: &Path) -> std::process::Child {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg(stele_testkit::test_path!("holder_child"))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(HOLDER_ENV, dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim() != "ready" {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0);
    }
    child
}

const WRITER_ENV: &str = "STELE_READERS_WRITER_DIR";
const READER_ENV: &str = "STELE_READERS_READER_DIR";
const STOP_FILE: &str = "stop-readers";

fn process_options() -> DatabaseOptions {
    // Small checkpoints: kills and refreshes land in checkpoints and compactions.
    DatabaseOptions::default()
        .checkpoint_bytes(8 << 10)
        .compact_layers(3)
}

#[test]
fn writer_child() {
    crash::run_child_if_asked(WRITER_ENV, |dir| {
        let db = create(&dir.join("db"), process_options());
        let start = last_n(&db.snapshot()) + 1;
        for n in start.. {
            transfer(&db, n);
            crash::ack(n);
            if n.is_multiple_of(250) {
                db.compact().unwrap();
            }
        }
    });
}

#[test]
fn reader_child() {
    crash::run_child_if_asked(READER_ENV, |dir| {
        let db_dir = dir.join("db");
        let mut checks = 0u64;
        let mut reader = Database::open_read_only(&db_dir).unwrap();
        let (mut last_seq, mut last) = (0, 0);
        let mut kept: Option<(Snapshot, BTreeMap<String, String>)> = None;
        while !dir.join(STOP_FILE).exists() {
            let seq = reader.refresh().unwrap();
            let snap = reader.snapshot();
            assert_eq!(seq, snap.seq());
            assert!(seq >= last_seq, "seq went from {last_seq} back to {seq}");
            let n = last_n(&snap);
            assert!(n >= last, "last transfer went from {last} back to {n}");
            assert_eq!(total(&snap), START_AMOUNT * ACCOUNTS as i64, "at seq {seq}");
            (last_seq, last) = (seq, n);
            checks += 1;
            // A snapshot kept across many refreshes reads the same all along.
            match &kept {
                Some((old, content)) => assert_eq!(&common_content(old, "acct"), content),
                None => kept = Some((snap.clone(), common_content(&snap, "acct"))),
            }
            if checks.is_multiple_of(40) {
                kept = None;
                // Opening again: a load racing the writer's checkpoints.
                reader = Database::open_read_only(&db_dir).unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        println!("\nchecks {checks}");
    });
}

#[test]
fn readers_beside_a_writer_killed_at_random_moments() {
    let dir = tempfile::tempdir().unwrap();
    drop(create(&dir.path().join("db"), process_options()));
    let exe = std::env::current_exe().unwrap();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .arg(stele_testkit::test_path!("reader_child"))
                .args(["--exact", "--nocapture", "--test-threads=1"])
                .env(READER_ENV, dir.path())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut crash = Crash::new(
        &stele_testkit::test_path!("writer_child"),
        WRITER_ENV,
        dir.path(),
    )
    .kill_after_ms(30, 200)
    .rounds_of(crash::rounds_from_env(30, 1));
    let check = Database::open_read_only(dir.path().join("db")).unwrap();
    let mut acked_rounds = 0;
    for round in 0..crash.rounds() {
        let killed = crash.kill_one();
        // Every acknowledged transfer is visible to a refresh, with the sum intact.
        check.refresh().unwrap();
        let snap = check.snapshot();
        assert!(
            last_n(&snap) >= killed.acked,
            "round {round} (seed {}): acked {} but a reader sees {}",
            crash.seed(),
            killed.acked,
            last_n(&snap)
        );
        assert_eq!(total(&snap), START_AMOUNT * ACCOUNTS as i64);
        acked_rounds += u32::from(killed.acked > 0);
    }
    std::fs::write(dir.path().join(STOP_FILE), b"").unwrap();
    for r in readers {
        let out = r.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "a reader failed: {text}");
        let checks: u64 = text
            .lines()
            .find_map(|l| {
                l.split("checks ")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no count from a reader: {text}"));
        assert!(checks > 10, "a reader checked only {checks} times");
    }
    assert!(acked_rounds > 0, "no round committed anything");
    // The writer's next open removes what the readers held, and reads everything.
    drop(check);
    let db = Database::open(dir.path().join("db")).unwrap();
    assert_eq!(total(&db.snapshot()), START_AMOUNT * ACCOUNTS as i64);
}
