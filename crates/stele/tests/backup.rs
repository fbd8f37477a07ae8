//! Backups, replicas and restores (`stele::backup`): consistent copies beside a writer that
//! keeps committing, incremental shipments, restores to any version held, read replicas
//! that follow shipments, and damage that `verify` reports and restores refuse.
//! Failing storage, power cuts and killed processes: `tests/backup_faults.rs`.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use common::backups::{commit_upto, opened_seq, whole_version};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use stele::backup::{self, At, BackupError, BackupOptions, Replicator, Retention};
use stele::{Database, DatabaseOptions};

fn small_log() -> DatabaseOptions {
    // Checkpoints often: the log rotates and tables come and go while backups run.
    DatabaseOptions::default().checkpoint_bytes(8 << 10)
}

#[test]
fn a_backup_opens_as_the_database_and_an_incremental_one_writes_only_what_is_new() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("bk"));
    let db = Database::open_with(&src, small_log()).unwrap();
    commit_upto(&db, 0, 200);
    db.compact().unwrap();
    commit_upto(&db, 200, 230);
    let opts = BackupOptions::default().link(false);
    let first = backup::backup_with(&src, &dest, &opts).unwrap();
    assert_eq!(first.seq, db.snapshot().seq());
    assert!(
        first.tables_copied > 0 && first.tables_kept == 0,
        "{first:?}"
    );
    let report = backup::verify(&dest).unwrap();
    assert!(report.is_ok(), "{:?}", report.findings);
    assert_eq!(whole_version(&dest), 230);
    // Nothing new: nothing written but the shipping line.
    let again = backup::backup_with(&src, &dest, &opts).unwrap();
    assert_eq!((again.tables_copied, again.log_bytes), (0, 0), "{again:?}");
    // More commits: only new records and tables.
    commit_upto(&db, 230, 260);
    let third = backup::backup_with(&src, &dest, &opts).unwrap();
    assert_eq!(third.seq, db.snapshot().seq());
    assert!(third.tables_kept > 0, "{third:?}");
    assert!(
        third.bytes_written < first.bytes_written,
        "{third:?} vs {first:?}"
    );
    assert_eq!(whole_version(&dest), 260);
    // The backup opens as a database (a writer, even: it is one).
    drop(db);
    let out = root.path().join("restored");
    let restored = backup::restore(&dest, &out, At::Latest).unwrap();
    assert_eq!(restored.seq, third.seq);
    let reopened = Database::open(&out).unwrap();
    assert_eq!(reopened.snapshot().count("d"), 260);
}

#[test]
fn hard_links_on_the_same_file_system_and_the_folder_must_be_a_backup() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("bk"));
    let db = Database::open_with(&src, small_log()).unwrap();
    commit_upto(&db, 0, 50);
    db.compact().unwrap();
    let shipped = db.backup(&dest).unwrap();
    assert!(
        shipped.tables_linked > 0 && shipped.tables_copied == 0,
        "{shipped:?}"
    );
    assert_eq!(whole_version(&dest), 50);
    // A folder holding something else is refused, and left alone.
    let other = root.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let err = db.backup(&other).unwrap_err();
    assert!(
        matches!(err, stele::Error::Backup(BackupError::NotABackup { .. })),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
    // The source cannot be behind its own backup: a backup of another database is refused.
    let fresh = root.path().join("fresh");
    let small = Database::open(&fresh).unwrap();
    commit_upto(&small, 0, 3);
    let err = small.backup(&dest).unwrap_err();
    assert!(
        matches!(
            err,
            stele::Error::Backup(BackupError::DestinationAhead { .. })
        ),
        "{err}"
    );
}

/// Backups taken while a writer commits batches (with checkpoints every few KiB): each is
/// whole at one commit point, at or after the last commit acknowledged before it started.
#[test]
fn backups_beside_a_busy_writer_are_whole_at_a_commit_point() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("db");
    let db = Database::open_with(&src, small_log()).unwrap();
    commit_upto(&db, 0, 20);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 20;
            while !stop.load(Ordering::Relaxed) {
                commit_upto(&db, n, n + 1);
                n += 1;
            }
            n
        })
    };
    let mut seen = Vec::new();
    for round in 0..8 {
        let before = db.snapshot().seq();
        let dest = root.path().join(format!("bk{round}"));
        let shipped = backup::backup(&src, &dest).unwrap();
        assert!(shipped.seq >= before, "{} < {before}", shipped.seq);
        assert_eq!(opened_seq(&dest), shipped.seq);
        whole_version(&dest);
        assert!(backup::verify(&dest).unwrap().is_ok());
        seen.push(shipped.seq);
    }
    stop.store(true, Ordering::Relaxed);
    let last = writer.join().unwrap();
    assert!(last > 20);
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
}

/// A replica shipped to again and again holds every version from its oldest point on: a
/// restore at any of them is whole there; by time too. Retention removes old points and
/// the files only they needed.
#[test]
fn restores_at_every_version_shipped_and_retention_prunes_old_points() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("replica"));
    let db = Database::open_with(&src, small_log()).unwrap();
    let mut rep = Replicator::new(&src, &dest, BackupOptions::default().link(false)).unwrap();
    let mut n = 0;
    for step in 0..6 {
        commit_upto(&db, n, n + 15);
        n += 15;
        if step % 2 == 1 {
            db.compact().unwrap();
        }
        assert_eq!(rep.ship().unwrap().seq, db.snapshot().seq());
        assert_eq!(whole_version(&dest), n);
    }
    let held = backup::held(&dest).unwrap();
    assert_eq!(held.last_seq, db.snapshot().seq());
    let last = held.last_seq;
    assert!(held.points.len() >= 3, "{held:?}");
    let first = held.first_seq();
    let mut restored = Vec::new();
    for v in [first, first + 1, (first + last) / 2, last - 1, last] {
        let out = root.path().join(format!("at{v}"));
        let r = backup::restore(&dest, &out, At::Version(v)).unwrap();
        assert_eq!((r.seq, opened_seq(&out)), (v, v));
        restored.push(whole_version(&out));
    }
    assert!(restored.windows(2).all(|w| w[0] <= w[1]), "{restored:?}");
    assert_eq!(restored.last(), Some(&n));
    // A version before the oldest point, or after the last, is not held: nothing written.
    let out = root.path().join("nope");
    let err = backup::restore(&dest, &out, At::Version(last + 1)).unwrap_err();
    assert!(
        matches!(err, stele::Error::Backup(BackupError::NoSuchPoint { .. })),
        "{err}"
    );
    assert!(!out.exists());
    // By time: the last shipment's time gives the last version.
    let (v, t) = *held.shipped.last().unwrap();
    let r = backup::restore(&dest, root.path().join("bytime"), At::Time(t)).unwrap();
    assert_eq!(r.seq, v);
    // Keep the newest point only: the older ones go, and so do files only they needed.
    let files_before = count_files(&dest);
    let mut rep = Replicator::new(
        &src,
        &dest,
        BackupOptions::default().keep(Some(Retention::Count(1))),
    )
    .unwrap();
    commit_upto(&db, n, n + 5);
    db.compact().unwrap();
    let progress = rep.step().unwrap();
    assert!(progress.points_pruned >= 2, "{progress:?}");
    let held = backup::held(&dest).unwrap();
    assert_eq!(held.points.len(), 1);
    assert!(count_files(&dest) < files_before);
    assert!(backup::verify(&dest).unwrap().is_ok());
    let out = root.path().join("after_prune");
    assert_eq!(
        backup::restore(&dest, &out, At::Latest).unwrap().seq,
        db.snapshot().seq()
    );
    assert_eq!(whole_version(&out), n + 5);
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.file_type().unwrap().is_dir() {
                count_files(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// A replica folder opened read-only serves reads and follows new shipments on refresh,
/// across the writer's checkpoints.
#[test]
fn a_read_replica_follows_shipments() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("replica"));
    let db = Database::open_with(&src, small_log()).unwrap();
    commit_upto(&db, 0, 10);
    let mut rep = Replicator::new(&src, &dest, BackupOptions::default()).unwrap();
    rep.ship().unwrap();
    let replica = Database::open_read_only(&dest).unwrap();
    assert_eq!(replica.snapshot().count("d"), 10);
    let mut n = 10;
    for step in 0..5 {
        commit_upto(&db, n, n + 7);
        n += 7;
        if step == 2 {
            db.compact().unwrap();
        }
        rep.ship().unwrap();
        assert_eq!(replica.refresh().unwrap(), db.snapshot().seq());
        let snap = replica.snapshot();
        assert_eq!(snap.count("d"), n);
        assert!(snap.get("d", &format!("d{n}")).unwrap().is_some());
    }
}

/// A flipped byte, a truncated file and a missing file in a backup: `verify` names each
/// with its file (and offset where known), and a restore that needs the file refuses,
/// writing nothing; one that does not need it still works.
#[test]
fn verify_reports_damage_and_restore_refuses_what_it_needs() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("bk"));
    let db = Database::open_with(&src, small_log()).unwrap();
    commit_upto(&db, 0, 100);
    db.compact().unwrap();
    commit_upto(&db, 100, 120);
    let opts = BackupOptions::default().link(false);
    backup::backup_with(&src, &dest, &opts).unwrap();
    let pristine = root.path().join("pristine");
    stele_testkit::copy_dir(&dest, &pristine);
    let table = largest_table(&dest);
    let segment = last_segment(&dest);
    let restore_fails = |dir: &Path, what: &str| {
        let out = root.path().join(format!("out-{what}"));
        let err = backup::restore(dir, &out, At::Latest).unwrap_err();
        assert!(
            matches!(err, stele::Error::Backup(BackupError::Damaged { .. })),
            "{what}: {err}"
        );
        assert!(!out.exists(), "{what}: nothing written");
    };
    // A flipped byte in a table's data.
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(&table, &bytes).unwrap();
    let report = backup::verify(&dest).unwrap();
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.path == table && f.damage && f.offset == Some(0)),
        "{:?}",
        report.findings
    );
    restore_fails(&dest, "flipped-table");
    // A flipped byte in a log record.
    reset(&pristine, &dest);
    let mut bytes = std::fs::read(&segment).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 1;
    std::fs::write(&segment, &bytes).unwrap();
    let report = backup::verify(&dest).unwrap();
    let f = report.findings.iter().find(|f| f.path == segment).unwrap();
    assert!(f.damage && f.offset.is_some_and(|o| o < at as u64), "{f}");
    restore_fails(&dest, "flipped-log");
    // The version before the damaged record is still whole.
    let held = backup::held(&dest).unwrap();
    let out = root.path().join("before-damage");
    let r = backup::restore(&dest, &out, At::Version(held.last_seq)).unwrap();
    assert_eq!(opened_seq(&out), r.seq);
    assert!(whole_version(&out) < 120);
    // A segment cut short at a record boundary: the shipping log says more was shipped.
    reset(&pristine, &dest);
    let bytes = std::fs::read(&segment).unwrap();
    std::fs::write(&segment, &bytes[..bytes.len() / 2]).unwrap();
    let report = backup::verify(&dest).unwrap();
    assert!(!report.is_ok(), "{:?}", report.findings);
    restore_fails(&dest, "truncated-log");
    // A truncated table.
    reset(&pristine, &dest);
    let bytes = std::fs::read(&table).unwrap();
    std::fs::write(&table, &bytes[..bytes.len() - 100]).unwrap();
    assert!(!backup::verify(&dest).unwrap().is_ok());
    restore_fails(&dest, "truncated-table");
    // A missing table.
    reset(&pristine, &dest);
    std::fs::remove_file(&table).unwrap();
    let report = backup::verify(&dest).unwrap();
    let f = report.findings.iter().find(|f| f.path == table).unwrap();
    assert!(f.problem.contains("missing"), "{f}");
    restore_fails(&dest, "missing-table");
    // A missing segment.
    reset(&pristine, &dest);
    std::fs::remove_file(&segment).unwrap();
    assert!(!backup::verify(&dest).unwrap().is_ok());
    restore_fails(&dest, "missing-log");
    // Whole again: verify is clean and the restore works.
    reset(&pristine, &dest);
    assert!(backup::verify(&dest).unwrap().is_ok());
    let out = root.path().join("whole");
    backup::restore(&dest, &out, At::Latest).unwrap();
    assert_eq!(whole_version(&out), 120);
}

/// A copying backup hashes every table it copies (two at a time) against its name: a
/// damaged table in the source is refused, no copy of it is named and no temp file is
/// left, and the destination stays as it was (whole at the backup before).
#[test]
fn a_damaged_source_table_is_refused_and_leaves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("bk"));
    let db = Database::open_with(&src, small_log()).unwrap();
    commit_upto(&db, 0, 100);
    db.compact().unwrap();
    let opts = BackupOptions::default().link(false);
    backup::backup_with(&src, &dest, &opts).unwrap();
    // New tables, several: collections of their own, and a compaction.
    for c in ["a", "b", "c", "d2"] {
        let mut batch = db.batch();
        for i in 0..50 {
            batch
                .put_json(c, &format!("k{i}"), format!(r#"{{"i":{i}}}"#).as_bytes())
                .unwrap();
        }
        db.commit(batch).unwrap();
    }
    db.compact().unwrap();
    drop(db);
    // The largest table the backup lacks.
    let table = std::fs::read_dir(src.join("tables"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "stt"))
        .filter(|p| !dest.join("tables").join(p.file_name().unwrap()).exists())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let name = table.file_name().unwrap().to_owned();
    let pristine = std::fs::read(&table).unwrap();
    let mut bytes = pristine.clone();
    // In the first block's data: the table still opens (footer and index whole).
    bytes[10] ^= 0x10;
    std::fs::write(&table, &bytes).unwrap();
    let err = backup::backup_with(&src, &dest, &opts).unwrap_err();
    assert!(
        matches!(err, stele::Error::Backup(BackupError::TableMismatch { .. })),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dest.join("tables"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(!left.contains(&name), "the damaged table was named");
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().ends_with(".partial")),
        "{left:?}"
    );
    assert!(backup::verify(&dest).unwrap().is_ok());
    assert_eq!(whole_version(&dest), 100);
    // The table whole again: the next backup completes.
    std::fs::write(&table, &pristine).unwrap();
    let done = backup::backup_with(&src, &dest, &opts).unwrap();
    assert!(done.tables_copied >= 2, "{done:?}");
    assert!(backup::verify(&dest).unwrap().is_ok());
}

fn reset(pristine: &Path, dest: &Path) {
    std::fs::remove_dir_all(dest).unwrap();
    stele_testkit::copy_dir(pristine, dest);
}

fn largest_table(dir: &Path) -> std::path::PathBuf {
    std::fs::read_dir(dir.join("tables"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "stt"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

fn last_segment(dir: &Path) -> std::path::PathBuf {
    let mut segs: Vec<_> = std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segs.sort();
    segs.pop().unwrap()
}

/// A shipment that took a record whose sync then failed (the writer cut it off and
/// reported the commit failed): the next shipment replaces the destination's copy of the
/// segment, even while the source is behind it, and a reader of the replica loads again and
/// drops the commit that failed.
#[test]
fn a_record_the_writer_cut_back_is_replaced_in_the_replica() {
    use stele_testkit::faults::{Faults, FaultyStorage, Op};
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("replica"));
    let rep = Arc::new(std::sync::Mutex::new(None::<Replicator>));
    let arm = Arc::new(AtomicBool::new(false));
    let faults = {
        let (rep, arm) = (Arc::clone(&rep), Arc::clone(&arm));
        Faults::new()
            .kinds(&[Op::SyncData])
            .fail_at(0)
            .only(|p| p.extension().is_some_and(|e| e == "log"))
            .on_op(move |op, _| {
                // Ships the record written, before its sync fails.
                if op == Op::SyncData
                    && arm.load(Ordering::SeqCst)
                    && let Some(r) = rep.lock().unwrap().as_mut()
                {
                    r.ship().unwrap();
                }
            })
            .disarmed()
            .shared()
    };
    let opts = small_log()
        .idle_checkpoint(None)
        .storage(FaultyStorage::with_faults(&faults));
    let db = Database::open_with(&src, opts).unwrap();
    commit_upto(&db, 0, 5);
    let mut first = Replicator::new(&src, &dest, BackupOptions::default()).unwrap();
    first.ship().unwrap();
    *rep.lock().unwrap() = Some(first);
    let reader = Database::open_read_only(&dest).unwrap();
    let good = db.snapshot().seq();
    faults.arm();
    arm.store(true, Ordering::SeqCst);
    let mut b = db.batch();
    b.put_json("meta", "last", br#"{"n":999}"#).unwrap();
    assert!(db.commit(b).is_err());
    arm.store(false, Ordering::SeqCst);
    faults.disarm();
    // The replica took the failed commit; the source is behind it now.
    assert_eq!(reader.refresh().unwrap(), good + 1);
    assert_eq!(db.snapshot().seq(), good);
    let mut rep = rep.lock().unwrap().take().unwrap();
    assert_eq!(rep.ship().unwrap().seq, good);
    assert_eq!(reader.refresh().unwrap(), good);
    commit_upto(&db, 5, 6);
    rep.ship().unwrap();
    assert_eq!(reader.refresh().unwrap(), good + 1);
    let snap = reader.snapshot();
    let last = snap.get("meta", "last").unwrap().unwrap();
    assert_eq!(last.to_json().unwrap(), r#"{"n":6}"#);
    assert_eq!(whole_version(&dest), 6);
    assert!(backup::verify(&dest).unwrap().is_ok());
}
