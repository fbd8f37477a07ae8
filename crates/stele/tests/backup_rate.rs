//! Rate-limited backups (`BackupOptions::max_rate`): whole, verified and restorable, paced
//! (they take at least their bytes over the rate), refused with a clear error for a rate
//! that is no rate, and whole beside a writer that checkpoints (tables come and go) for
//! as long as the slow copy runs.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use common::backups::{commit_upto, opened_seq, whole_version};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use stele::backup::{self, At, BackupOptions, Replicator};
use stele::{Database, DatabaseOptions};

/// The sizes of the table files in the backup `dir`.
fn table_sizes(dir: &Path) -> Vec<u64> {
    std::fs::read_dir(dir.join("tables"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.metadata().unwrap().len())
        .collect()
}

#[test]
fn a_rate_limited_backup_is_whole_verified_and_takes_at_least_its_bytes_over_the_rate() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("bk"));
    // Checkpoints every 8 KiB: several tables to copy.
    let db =
        Database::open_with(&src, DatabaseOptions::default().checkpoint_bytes(8 << 10)).unwrap();
    commit_upto(&db, 0, 300);
    let rate: u64 = 64 << 10;
    let opts = BackupOptions::default().link(false).max_rate(Some(rate));
    let start = Instant::now();
    let shipped = backup::backup_with(&src, &dest, &opts).unwrap();
    let took = start.elapsed().as_secs_f64();
    assert_eq!(shipped.seq, db.snapshot().seq());
    assert!(shipped.tables_copied >= 2, "{shipped:?}");
    // Every chunk but the first waits for its slot: the copies' bytes, less the largest
    // table's (at most one chunk of 1 MiB each, the first of which is free), over the rate,
    // less the 50 ms a late thread may catch up on.
    let sizes = table_sizes(&dest);
    let copied: u64 = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap();
    let floor = (copied - largest) as f64 / rate as f64 - 0.05;
    assert!(floor > 0.05, "too few bytes to see the pace: {sizes:?}");
    assert!(
        took >= floor,
        "{copied} bytes at {rate} B/s took {took} s < {floor} s"
    );
    let report = backup::verify(&dest).unwrap();
    assert!(report.is_ok(), "{:?}", report.findings);
    assert_eq!(whole_version(&dest), 300);
    assert_eq!(opened_seq(&dest), shipped.seq);
    drop(db);
    let out = root.path().join("restored");
    let restored = backup::restore(&dest, &out, At::Latest).unwrap();
    assert_eq!(restored.seq, shipped.seq);
    assert_eq!(whole_version(&out), 300);
}

#[test]
fn a_rate_that_is_no_rate_is_refused_before_anything_is_written() {
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("bk"));
    let db = Database::open(&src).unwrap();
    commit_upto(&db, 0, 5);
    for rate in [0, 1, 16_383] {
        let opts = BackupOptions::default().max_rate(Some(rate));
        let e = backup::backup_with(&src, &dest, &opts)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("backup rate limit") && e.contains("at least 16384 bytes/s"),
            "{e}"
        );
        assert!(
            !dest.exists(),
            "a refused backup created {}",
            dest.display()
        );
        let e = Replicator::new(&src, &dest, opts).unwrap_err().to_string();
        assert!(e.contains("backup rate limit"), "{e}");
    }
    // The text a user gives: what was wrong and what is expected.
    let e = backup::parse_rate("fast").unwrap_err().to_string();
    assert!(
        e.contains("\"fast\"") && e.contains("100MB/s") && e.contains("none"),
        "{e}"
    );
    assert_eq!(backup::parse_rate("none").unwrap(), None);
    // No limit at all is a backup as without the option.
    let opts = BackupOptions::default().max_rate(backup::parse_rate("none").unwrap());
    assert_eq!(backup::backup_with(&src, &dest, &opts).unwrap().seq, 5);
}

/// A slow backup (a few seconds at the rate) beside a writer that commits and
/// checkpoints, compacting: the tables the cut names are removed from the database
/// meanwhile, yet the backup is whole at its commit point (the cut holds them), and
/// shipments of a replicator at the rate are too.
#[test]
fn a_rate_limited_backup_beside_a_checkpointing_writer_is_whole_at_its_commit_point() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("db");
    let opts = DatabaseOptions::default()
        .checkpoint_bytes(8 << 10)
        .compact_layers(2);
    let db = Database::open_with(&src, opts).unwrap();
    commit_upto(&db, 0, 400);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 400;
            while !stop.load(Ordering::Relaxed) {
                commit_upto(&db, n, n + 1);
                n += 1;
            }
            n
        })
    };
    let limited = BackupOptions::default()
        .link(false)
        .max_rate(Some(16 << 10));
    let before = db.snapshot().seq();
    let manifest_before = manifest_bytes(&src);
    let dest = root.path().join("bk");
    let backup = {
        let (src, dest, limited) = (src.clone(), dest.clone(), limited.clone());
        std::thread::spawn(move || backup::backup_with(&src, &dest, &limited))
    };
    // Past the cut (taken at once), while the paced copies run: checkpoints that compact
    // (2 layers) and remove the tables the cut names from the database.
    std::thread::sleep(std::time::Duration::from_millis(300));
    for _ in 0..4 {
        db.checkpoint().unwrap();
    }
    assert!(
        !backup.is_finished(),
        "the backup ended before the checkpoints: too few bytes to pace"
    );
    assert!(manifest_bytes(&src) != manifest_before);
    let shipped = backup.join().unwrap().unwrap();
    assert!(shipped.seq >= before, "{} < {before}", shipped.seq);
    assert_eq!(opened_seq(&dest), shipped.seq);
    let n = whole_version(&dest);
    assert!(n >= 400);
    assert!(backup::verify(&dest).unwrap().is_ok());
    let replica = root.path().join("replica");
    let mut rep = Replicator::new(&src, &replica, limited.max_rate(Some(256 << 10))).unwrap();
    let mut last = 0;
    for _ in 0..3 {
        let s = rep.ship().unwrap();
        assert!(s.seq >= last);
        last = s.seq;
        assert_eq!(opened_seq(&replica), s.seq);
        whole_version(&replica);
    }
    stop.store(true, Ordering::Relaxed);
    assert!(writer.join().unwrap() > n);
    assert!(backup::verify(&replica).unwrap().is_ok());
}

/// The manifest's bytes: they change at each checkpoint.
fn manifest_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("MANIFEST")).unwrap_or_default()
}
