//! A child process commits batches across collections and is killed with SIGKILL at
//! random moments; after each kill the database opens, every acknowledged batch is there
//! and no batch is there in part. `STELE_CRASH_ROUNDS` sets the rounds (default 50).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use stele::{Database, DatabaseOptions};
use stele_testkit::crash::{self, Crash};

const CHILD_ENV: &str = "STELE_DB_CRASH_CHILD_DIR";
const IDS: u64 = 50;
/// Documents each batch adds to the `bulk` collection: enough for the compressor's ratio
/// windows (512 documents) to fill between kills, so that retraining happens.
const BULK: u64 = 20;

fn options() -> DatabaseOptions {
    // Small checkpoints so that kills also land in checkpoints and compactions.
    DatabaseOptions::default()
        .checkpoint_bytes(16 << 10)
        .compact_layers(3)
}

/// Batch `n` writes `n` into document `n % IDS` of both collections, `BULK` new documents
/// into `bulk` and a counter. The padding changes kind every 400 batches, so that the
/// compression ratio drifts and dictionaries are retrained (on a background thread) while
/// the writer is being killed.
fn batch_of(db: &Database, n: u64) -> stele::Batch {
    let mut b = db.batch();
    let id = format!("d{:03}", n % IDS);
    let len = (n % 7) as usize * 40;
    let pad = if (n / 400).is_multiple_of(2) {
        "x".repeat(len)
    } else {
        let mut words = format!("tango {n} foxtrot ").repeat(len / 10 + 1);
        words.truncate(len);
        words
    };
    let json = format!(r#"{{"n":{n},"pad":"{pad}"}}"#);
    b.put_json("left", &id, json.as_bytes()).unwrap();
    b.put_json("right", &id, json.as_bytes()).unwrap();
    for j in 0..BULK {
        let bulk = format!(r#"{{"n":{n},"j":{j},"pad":"{pad}"}}"#);
        b.put_json("bulk", &format!("{n:08}-{j:02}"), bulk.as_bytes())
            .unwrap();
    }
    b.put_json("meta", "last", format!(r#"{{"n":{n}}}"#).as_bytes())
        .unwrap();
    if n.is_multiple_of(5) {
        b.delete("left", &format!("d{:03}", (n + 1) % IDS)).unwrap();
    }
    b
}

fn n_of(json: &str) -> u64 {
    let digits: String = json
        .trim_start_matches("{\"n\":")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

#[test]
fn crash_child() {
    // Only runs when started by the parent below.
    crash::run_child_if_asked(CHILD_ENV, |dir| {
        let db = Database::open_with(dir, options()).unwrap();
        let start = match db.snapshot().get("meta", "last").unwrap() {
            Some(d) => n_of(&d.to_json().unwrap()) + 1,
            None => 1,
        };
        for n in start.. {
            db.commit(batch_of(&db, n)).unwrap();
            crash::ack(n);
            // Full compactions too, so that kills also land in packing every collection and
            // in the removal of dictionaries nothing uses any more that ends each one.
            if n.is_multiple_of(300) {
                db.compact().unwrap();
            }
        }
    });
}

/// What the database must hold after batches 1..=last, computed by replaying them.
fn expected(last: u64) -> std::collections::BTreeMap<(String, String), u64> {
    let mut m = std::collections::BTreeMap::new();
    for n in 1..=last {
        let id = format!("d{:03}", n % IDS);
        m.insert(("left".to_string(), id.clone()), n);
        m.insert(("right".to_string(), id), n);
        m.insert(("meta".to_string(), "last".to_string()), n);
        for j in 0..BULK {
            m.insert(("bulk".to_string(), format!("{n:08}-{j:02}")), n);
        }
        if n % 5 == 0 {
            m.remove(&("left".to_string(), format!("d{:03}", (n + 1) % IDS)));
        }
    }
    m
}

#[test]
fn killed_writers_lose_nothing_acknowledged_and_leave_no_partial_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut crash = Crash::new(
        &stele_testkit::test_path!("crash_child"),
        CHILD_ENV,
        dir.path(),
    )
    .kill_after_ms(30, 150);
    let rounds = crash.rounds();
    let mut acked_total = 0u64;
    for round in 0..rounds {
        acked_total = acked_total.max(crash.kill_one().acked);

        let db = Database::open_with(dir.path(), options()).unwrap();
        let snap = db.snapshot();
        let last = snap
            .get("meta", "last")
            .unwrap()
            .map_or(0, |d| n_of(&d.to_json().unwrap()));
        assert!(
            last >= acked_total,
            "round {round}: at {last}, {acked_total} acknowledged"
        );
        let want = expected(last);
        let mut got = std::collections::BTreeMap::new();
        for coll in ["left", "right", "meta", "bulk"] {
            for e in snap.iter(coll) {
                let (id, doc) = e.unwrap();
                got.insert((coll.to_string(), id), n_of(&doc.to_json().unwrap()));
            }
        }
        assert_eq!(
            got, want,
            "round {round}: the state is not batches 1..={last}"
        );
        acked_total = last;
    }
    assert!(acked_total > 0, "nothing was ever committed");
    let db = Database::open_with(dir.path(), options()).unwrap();
    let dictionaries = db.snapshot().dictionaries("bulk");
    eprintln!("{rounds} rounds, {acked_total} batches, {dictionaries} dictionaries in `bulk`");
    // Retrainings depend on how many batches the kills allow, and the full compactions
    // remove the dictionaries nothing uses any more (1-2 left after 50 rounds here); at
    // least one must have been trained and kept.
    assert!(dictionaries >= 1, "no dictionary was trained in `bulk`");
}
