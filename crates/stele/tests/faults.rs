//! An I/O failure (a full disk) at every step of commits and checkpoints: the failing call
//! reports a clear error, the database stays readable and consistent, and nothing that was
//! acknowledged is lost, before or after reopening.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use std::collections::BTreeMap;
use stele::{Database, DatabaseOptions, Error};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

type Model = BTreeMap<String, String>;

fn content(db: &Database) -> Model {
    common::content(&db.snapshot(), "c")
}

#[test]
fn a_full_disk_at_any_step_loses_nothing_acknowledged() {
    a_full_disk_at_any_step(true);
}

#[test]
fn a_full_disk_at_any_step_of_an_appended_log_loses_nothing_acknowledged() {
    a_full_disk_at_any_step(false);
}

fn a_full_disk_at_any_step(positioned: bool) {
    let mut steps_seen = 0;
    for fail_at in 0.. {
        let dir = tempfile::tempdir().unwrap();
        // Every step but the creation of folders (done at opening, before arming); the
        // log either written at offsets (`open_log`) into zeroes written ahead, as on the
        // real file system, or opened with `open_append` only.
        let faults = Faults::new()
            .except(&[Op::CreateDir])
            .fail_at(fail_at)
            .error(std::io::ErrorKind::StorageFull)
            .disarmed()
            .shared();
        let storage = if positioned {
            FaultyStorage::with_faults(&faults)
        } else {
            FaultyStorage::appending_log(&faults)
        };
        let opts = DatabaseOptions::default()
            .checkpoint_bytes(200)
            .compact_layers(2)
            .storage(storage);
        let db = Database::open_with(dir.path(), opts).unwrap();
        faults.arm();
        let mut acked = Model::new();
        let mut failed = None;
        for n in 0..12 {
            let id = format!("d{}", n % 4);
            let json = format!(r#"{{"n":{n}}}"#);
            let mut b = db.batch();
            b.put_json("c", &id, json.as_bytes()).unwrap();
            match db.commit(b) {
                Ok(()) => {
                    acked.insert(id, json);
                }
                Err(e) => {
                    failed = Some((id, json, e));
                    break;
                }
            }
        }
        let explicit = if failed.is_none() {
            db.checkpoint().err()
        } else {
            None
        };
        faults.disarm();
        let fired = faults.fired() > 0;
        if !fired {
            steps_seen = fail_at;
            break;
        }
        // Readable and consistent right away: exactly the acknowledged batches.
        assert_eq!(content(&db), acked, "step {fail_at}: live view");
        if let Some((_, _, e)) = &failed {
            let msg = e.to_string();
            assert!(msg.contains("injected full disk"), "step {fail_at}: {msg}");
            assert!(
                matches!(
                    e,
                    Error::CommitFailed { .. } | Error::Io { .. } | Error::LogPoisoned { .. }
                ),
                "{e:?}"
            );
        }
        if let Some(e) = &explicit {
            assert!(e.to_string().contains("injected full disk"), "{e}");
        }
        // Writes work again once the disk has room (unless the log must be reopened).
        let mut b = db.batch();
        b.put_json("c", "after", b"1").unwrap();
        let poisoned = match db.commit(b) {
            Ok(()) => {
                acked.insert("after".into(), "1".into());
                false
            }
            Err(Error::LogPoisoned { .. }) => true,
            Err(e) => panic!("step {fail_at}: commit after the fault: {e}"),
        };
        drop(db);
        let db = Database::open(dir.path()).unwrap();
        let mut got = content(&db);
        // A batch whose commit failed may be on disk only if the log could not be cut
        // back (fsync failures leave the file's state unknown): then it must be whole.
        if let (true, Some((id, json, _))) = (poisoned, &failed)
            && got.get(id) == Some(json)
            && acked.get(id) != Some(json)
        {
            match acked.get(id) {
                Some(old) => got.insert(id.clone(), old.clone()),
                None => got.remove(id),
            };
        }
        assert_eq!(got, acked, "step {fail_at}: after reopening");
    }
    assert!(
        steps_seen > 30,
        "only {steps_seen} storage steps were exercised"
    );
    eprintln!("{steps_seen} storage steps, each failed once");
}
