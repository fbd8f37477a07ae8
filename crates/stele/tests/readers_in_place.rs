//! A reader's refresh applied in place (no snapshot outstanding) against snapshots: a
//! snapshot taken before a refresh, or a clone of one, reads exactly what it read when it
//! was taken, whichever way the reader refreshes.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use stele::{Database, Snapshot};

/// Every document of "c" as JSON, by id, and the count.
type Contents = (BTreeMap<String, String>, u64);

/// What `snap` holds of "c".
fn contents(snap: &Snapshot) -> Contents {
    let docs = snap
        .iter("c")
        .map(|r| {
            let (id, doc) = r.unwrap();
            (id, doc.to_json().unwrap())
        })
        .collect();
    (docs, snap.count("c"))
}

/// A few commits of puts and removals over 40 ids.
fn commit_round(db: &Database, round: u64) {
    for c in 0..3 {
        let mut b = db.batch();
        for k in 0..8 {
            let i = (round * 7 + c * 13 + k * 5) % 40;
            let id = format!("d{i:02}");
            if (round + k).is_multiple_of(5) {
                b.delete("c", &id).unwrap();
            } else {
                let json = format!(r#"{{"round":{round},"c":{c},"k":{k}}}"#);
                b.put_json("c", &id, json.as_bytes()).unwrap();
            }
        }
        db.commit(b).unwrap();
    }
}

/// Rounds of commits, each followed by a refresh of one of three kinds: `refresh()` with
/// the last snapshot still held (a copy of the state), `refresh_snapshot` with nothing
/// else held (in place), `refresh_snapshot` while a clone of the snapshot is held (must
/// not be in place). Every snapshot kept along the way, and every clone, reads exactly
/// what it read when it was taken; the refreshed snapshot reads what the writer's does.
#[test]
fn snapshots_keep_their_view_across_refreshes_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    commit_round(&db, 0);
    let reader = Database::open_read_only(dir.path()).unwrap();
    let mut snap = reader.snapshot();
    let mut kept: Vec<(Snapshot, Contents)> = Vec::new();
    for round in 1..40u64 {
        commit_round(&db, round);
        match round % 3 {
            0 => {
                let held = snap.clone();
                let was = contents(&held);
                reader.refresh().unwrap();
                snap = reader.snapshot();
                assert_eq!(contents(&held), was, "round {round}: a held snapshot");
                kept.push((held, was));
            }
            1 => {
                let seq = reader.refresh_snapshot(&mut snap).unwrap();
                assert_eq!(seq, snap.seq());
            }
            _ => {
                let clone = snap.clone();
                let was = contents(&clone);
                reader.refresh_snapshot(&mut snap).unwrap();
                assert_eq!(contents(&clone), was, "round {round}: a clone kept");
                kept.push((clone, was));
            }
        }
        assert_eq!(snap.seq(), db.snapshot().seq(), "round {round}");
        assert_eq!(contents(&snap), contents(&db.snapshot()), "round {round}");
        // Snapshots taken from the same state as `snap` share it: they must not see the
        // next refresh either.
        if round.is_multiple_of(4) {
            let taken = reader.snapshot();
            let was = contents(&taken);
            kept.push((taken, was));
        }
        for (i, (s, was)) in kept.iter().enumerate() {
            assert_eq!(&contents(s), was, "round {round}: kept snapshot {i}");
        }
    }
    // A refresh with nothing new changes nothing.
    let seq = snap.seq();
    assert_eq!(reader.refresh_snapshot(&mut snap).unwrap(), seq);
    assert_eq!(contents(&snap), contents(&db.snapshot()));
}

/// Snapshots taken by other threads while one thread refreshes in place see a whole
/// commit: each commit moves an amount between two documents, so the sum never changes.
#[test]
fn snapshots_taken_during_refreshes_in_place_see_whole_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut b = db.batch();
    for i in 0..20 {
        b.put_json("c", &format!("a{i:02}"), br#"{"amount":100}"#)
            .unwrap();
    }
    db.commit(b).unwrap();
    let reader = Database::open_read_only(dir.path()).unwrap();
    let sum = |s: &Snapshot| -> i64 {
        s.iter("c")
            .map(|r| {
                let (_, doc) = r.unwrap();
                let doc = doc.document().unwrap();
                doc.get("amount").and_then(|v| v.as_i64()).unwrap()
            })
            .sum()
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let snap = reader.snapshot();
                    assert_eq!(sum(&snap), 2000, "at seq {}", snap.seq());
                }
            });
        }
        let mut snap = reader.snapshot();
        for n in 0..300u64 {
            let (from, to) = (n % 20, (n * 7 + 3) % 20);
            if from != to {
                let amount = |s: &Snapshot, i: u64| -> i64 {
                    let doc = s.get("c", &format!("a{i:02}")).unwrap().unwrap();
                    let doc = doc.document().unwrap();
                    doc.get("amount").and_then(|v| v.as_i64()).unwrap()
                };
                let now = db.snapshot();
                let mut b = db.batch();
                let put = |b: &mut stele::Batch, i: u64, v: i64| {
                    let json = format!(r#"{{"amount":{v}}}"#);
                    b.put_json("c", &format!("a{i:02}"), json.as_bytes())
                        .unwrap();
                };
                put(&mut b, from, amount(&now, from) - 1);
                put(&mut b, to, amount(&now, to) + 1);
                db.commit(b).unwrap();
            }
            reader.refresh_snapshot(&mut snap).unwrap();
            assert_eq!(sum(&snap), 2000);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
