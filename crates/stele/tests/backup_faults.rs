//! Backups and replicas under faults: a destination whose storage fails at each step of a
//! shipment in turn (and one whose disk fills up), power cuts on the destination
//! (`SimDisk`, every crash state explored), a replicator killed mid-shipment with its
//! writer (SIGKILL), and a writer killed while another process backs it up. Every restore
//! is whole at one commit point, and at or after the last shipment acknowledged.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use common::backups::{commit_upto, whole_version};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use stele::backup::{self, At, BackupOptions, Replicator};
use stele::{Database, DatabaseOptions};
use stele_testkit::crash::{self, Crash};
use stele_testkit::faults::{Faults, FaultyStorage};
use stele_testkit::{ExploreOptions, SimDisk, explore};

fn options() -> DatabaseOptions {
    DatabaseOptions::default().checkpoint_bytes(8 << 10)
}

/// The last batch number (of `commit_upto`) of the latest version a restore of `bk` gives,
/// after checking that version is whole; the restore's error otherwise.
fn restored(bk: &Path, scratch: &Path) -> Result<u64, String> {
    let out = scratch.join(format!(
        "restore-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    backup::restore(bk, &out, At::Latest).map_err(|e| e.to_string())?;
    let n = whole_version(&out);
    std::fs::remove_dir_all(&out).unwrap();
    Ok(n)
}

/// A database with tables and log, a backup of it at batch 60, then more batches, a
/// compaction and more: the next shipment writes tables, a manifest and log records.
fn prepared(root: &Path) -> (PathBuf, PathBuf, Database) {
    let (src, base) = (root.join("db"), root.join("base"));
    let db = Database::open_with(&src, options()).unwrap();
    commit_upto(&db, 0, 40);
    db.compact().unwrap();
    commit_upto(&db, 40, 60);
    backup::backup_with(&src, &base, &BackupOptions::default().link(false)).unwrap();
    commit_upto(&db, 60, 90);
    db.compact().unwrap();
    commit_upto(&db, 90, 100);
    (src, base, db)
}

#[test]
fn every_failing_step_of_a_shipment_leaves_the_destination_whole() {
    let root = tempfile::tempdir().unwrap();
    let (src, base, _db) = prepared(root.path());
    let counting = Faults::new().shared();
    let probe = root.path().join("probe");
    stele_testkit::copy_dir(&base, &probe);
    let opts = |faults: &Arc<Faults>| {
        BackupOptions::default()
            .link(false)
            .storage(FaultyStorage::with_faults(faults))
    };
    backup::backup_with(&src, &probe, &opts(&counting)).unwrap();
    let steps = counting.ops();
    assert!(steps > 10, "{steps} operations");
    for n in 0..steps {
        let dest = root.path().join(format!("d{n}"));
        stele_testkit::copy_dir(&base, &dest);
        let faults = Faults::new().fail_at(n).shared();
        let failed = backup::backup_with(&src, &dest, &opts(&faults));
        assert_eq!(faults.fired(), 1, "step {n}");
        assert!(failed.is_err(), "step {n}: the failure is reported");
        // Whole at the old shipment or the new one (or between: a commit point).
        let got = restored(&dest, root.path()).unwrap_or_else(|e| panic!("step {n}: {e}"));
        assert!((60..=100).contains(&got), "step {n}: {got}");
        // The next shipment repairs what the failed one left.
        backup::backup_with(&src, &dest, &BackupOptions::default().link(false)).unwrap();
        assert_eq!(restored(&dest, root.path()).unwrap(), 100, "step {n}");
        assert!(backup::verify(&dest).unwrap().is_ok(), "step {n}");
        std::fs::remove_dir_all(&dest).unwrap();
    }
}

#[test]
fn a_full_destination_disk_fails_the_shipment_and_the_next_one_completes_it() {
    let root = tempfile::tempdir().unwrap();
    let (src, base, _db) = prepared(root.path());
    // Bytes each file may take: none, a few, most of a table.
    for limit in [0, 64, 700] {
        let dest = root.path().join(format!("full{limit}"));
        stele_testkit::copy_dir(&base, &dest);
        let faults = Faults::new()
            .error(std::io::ErrorKind::StorageFull)
            .fail_writes_past(limit)
            .disarmed()
            .shared();
        let opts = BackupOptions::default()
            .link(false)
            .storage(FaultyStorage::with_faults(&faults));
        let err = backup::backup_with(&src, &dest, &opts).unwrap_err();
        assert!(err.to_string().contains("full disk"), "{limit}: {err}");
        let got = restored(&dest, root.path()).unwrap();
        assert!((60..=100).contains(&got), "{limit}: {got}");
        backup::backup_with(&src, &dest, &BackupOptions::default().link(false)).unwrap();
        assert_eq!(restored(&dest, root.path()).unwrap(), 100);
    }
}

/// Power cuts on the destination at every moment of three shipments (a new backup, then
/// two incremental ones with new tables and log appends): every crash state restores whole,
/// at or after the last shipment acknowledged before the cut.
#[test]
fn power_cuts_on_the_destination_leave_a_whole_backup() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("db");
    let db = Database::open_with(&src, options()).unwrap();
    let dest_root = root.path().join("dest");
    let disk = SimDisk::new(&dest_root).unwrap();
    let opts = BackupOptions::default().link(false).storage(disk.clone());
    let mut rep = Replicator::new(&src, dest_root.join("bk"), opts).unwrap();
    let mut acks = Vec::new();
    let mut n = 0;
    for step in 0..3 {
        commit_upto(&db, n, n + 25);
        n += 25;
        if step == 1 {
            db.compact().unwrap();
        }
        rep.ship().unwrap();
        acks.push((disk.moment(), n));
    }
    let scratch = tempfile::tempdir().unwrap();
    let explored = explore(&disk.recording(), &ExploreOptions::from_env(150), |state| {
        let acked = acks
            .iter()
            .filter(|(m, _)| *m <= state.moment)
            .map(|(_, n)| *n)
            .max();
        match (restored(&state.dir.join("bk"), scratch.path()), acked) {
            (Ok(got), Some(a)) if got < a => Err(format!("restored {got}, shipped {a}")),
            (Ok(_), _) | (Err(_), None) => Ok(()),
            (Err(e), Some(a)) => Err(format!("shipped {a}, restore failed: {e}")),
        }
    });
    assert!(explored.states > 20, "{explored:?}");
}

const REPLICATOR_ENV: &str = "STELE_BACKUP_REPLICATOR_DIR";

/// The child of `a_killed_replicator_and_writer_leave_a_whole_replica`: a writer and a
/// replicator in one process, shipping after every few commits.
#[test]
fn replicator_child() {
    crash::run_child_if_asked(REPLICATOR_ENV, |dir| {
        let db = Database::open_with(dir.join("db"), options()).unwrap();
        let mut n = db.snapshot().get("meta", "last").unwrap().map_or(0, |d| {
            d.document().unwrap().get("n").unwrap().as_u64().unwrap()
        });
        let opts = BackupOptions::default().link(false);
        let mut rep = Replicator::new(dir.join("db"), dir.join("bk"), opts).unwrap();
        loop {
            commit_upto(&db, n, n + 3);
            n += 3;
            rep.ship().unwrap();
            crash::ack(n);
        }
    });
}

#[test]
fn a_killed_replicator_and_writer_leave_a_whole_replica() {
    let dir = tempfile::tempdir().unwrap();
    let mut crash = Crash::new(
        &stele_testkit::test_path!("replicator_child"),
        REPLICATOR_ENV,
        dir.path(),
    )
    .kill_after_ms(120, 150)
    .rounds_of(crash::rounds_from_env(8, 6));
    let mut acked = 0;
    for round in 0..crash.rounds() {
        acked = acked.max(crash.kill_one().acked);
        let got = match restored(&dir.path().join("bk"), dir.path()) {
            Ok(got) => got,
            // Killed before its first shipment was durable.
            Err(_) if acked == 0 => continue,
            Err(e) => panic!("round {round}: {e}"),
        };
        assert!(got >= acked, "round {round}: restored {got}, acked {acked}");
        let report = backup::verify(&dir.path().join("bk")).unwrap();
        // A killed append leaves at most a torn tail in the last segment.
        let damaged: Vec<_> = report.findings.iter().filter(|f| f.damage).collect();
        assert!(damaged.len() <= 1, "round {round}: {damaged:?}");
    }
    assert!(acked > 0, "the child shipped nothing");
}

const WRITER_ENV: &str = "STELE_BACKUP_WRITER_DIR";

/// The child of `backups_beside_a_killed_writer_are_whole`: a writer committing batches.
#[test]
fn writer_child() {
    crash::run_child_if_asked(WRITER_ENV, |dir| {
        let db = Database::open_with(dir, options()).unwrap();
        let mut n = db.snapshot().get("meta", "last").unwrap().map_or(0, |d| {
            d.document().unwrap().get("n").unwrap().as_u64().unwrap()
        });
        loop {
            commit_upto(&db, n, n + 1);
            n += 1;
            crash::ack(n);
        }
    });
}

/// Another process backs a database up (new backups and one replica shipped to again and
/// again) while its writer is killed and restarted: every backup is whole.
#[test]
fn backups_beside_a_killed_writer_are_whole() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("db");
    drop(Database::open_with(&src, options()).unwrap());
    let mut crash = Crash::new(&stele_testkit::test_path!("writer_child"), WRITER_ENV, &src)
        .kill_after_ms(60, 100)
        .rounds_of(crash::rounds_from_env(6, 8));
    let replica = root.path().join("replica");
    let mut rep = Replicator::new(&src, &replica, BackupOptions::default()).unwrap();
    let mut acked = 0;
    let mut backups = 0;
    for round in 0..crash.rounds() {
        let stop = Arc::new(AtomicBool::new(false));
        let backer = {
            let (src, root, stop) = (src.clone(), root.path().to_path_buf(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut made = 0;
                while !stop.load(Ordering::Relaxed) {
                    let dest = root.join(format!("bk{round}-{made}"));
                    backup::backup(&src, &dest).unwrap();
                    whole_version(&dest);
                    std::fs::remove_dir_all(&dest).unwrap();
                    made += 1;
                }
                made
            })
        };
        acked = acked.max(crash.kill_one().acked);
        stop.store(true, Ordering::Relaxed);
        backups += backer.join().unwrap();
        rep.ship().unwrap();
        let got = restored(&replica, root.path()).unwrap();
        assert!(
            got >= acked,
            "round {round}: replica at {got}, acked {acked}"
        );
    }
    assert!(backups > 0 && acked > 0, "{backups} backups, {acked} acked");
}
