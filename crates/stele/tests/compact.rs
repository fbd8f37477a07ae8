//! `Database::compact` merges on the side: writers are not held up while it packs.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use stele::{Database, DatabaseOptions};
use stele_testkit::faults::{Faults, FaultyStorage, Op};

/// The thread that runs `compact` in the test below.
const COMPACTING_THREAD: &str = "compacting";

/// Pauses the compacting thread at its first creation of a table file (the output of the
/// merge) until the test opens the gate.
#[derive(Debug, Default)]
struct Gate {
    armed: AtomicBool,
    paused: Mutex<bool>,
    open: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    fn maybe_pause(&self, path: &Path) {
        let in_tables = path.parent().and_then(Path::file_name) == Some("tables".as_ref());
        if !in_tables
            || std::thread::current().name() != Some(COMPACTING_THREAD)
            || !self.armed.swap(false, Ordering::SeqCst)
        {
            return;
        }
        *self.paused.lock().unwrap() = true;
        self.changed.notify_all();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
    }

    fn wait_paused(&self) {
        let mut paused = self.paused.lock().unwrap();
        while !*paused {
            paused = self.changed.wait(paused).unwrap();
        }
    }

    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

/// A storage that fails nothing and pauses at the gate before creating files; its log
/// appends (opened with `open_append`).
fn gated(gate: &Arc<Gate>) -> Arc<dyn stele_table::Storage> {
    let gate = Arc::clone(gate);
    let faults = Faults::new().on_op(move |op, path| {
        if op == Op::Create {
            gate.maybe_pause(path);
        }
    });
    FaultyStorage::appending_log(&faults.shared())
}

#[test]
fn writers_commit_while_compact_merges() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    // In-line trainings, and a first compaction before the gated one (which trains the
    // collection's dictionary for its blocks; the second, on the same documents, trains
    // the same dictionary and keeps the current one): no dictionary is pending or
    // persisted when the gated `compact` starts, so its first checkpoint has nothing to
    // save and the first table it creates is its merge's.
    let opts = DatabaseOptions::default()
        .background_training(false)
        .storage(gated(&gate));
    let db = Database::open_with(dir.path(), opts).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut b = db.batch();
    for i in 0..3000u32 {
        let (id, json) = (format!("s{i:05}"), common::sensor_json(i));
        b.put_json("c", &id, json.as_bytes()).unwrap();
        model.insert(id, json);
    }
    db.commit(b).unwrap();
    db.compact().unwrap();
    // Everything in tables first, so that the first table `compact` creates is its merge's.
    db.checkpoint().unwrap();
    gate.armed.store(true, Ordering::SeqCst);
    let compacting = {
        let db = db.clone();
        std::thread::Builder::new()
            .name(COMPACTING_THREAD.into())
            .spawn(move || db.compact())
            .unwrap()
    };
    gate.wait_paused();
    // The merge is paused half way: a commit must still go through.
    let (tx, rx) = mpsc::channel();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut b = db.batch();
            b.put_json("c", "during", br#"{"during":true}"#).unwrap();
            b.delete("c", "s00007").unwrap();
            let _ = tx.send(db.commit(b));
        })
    };
    let committed = rx.recv_timeout(Duration::from_secs(30));
    gate.release();
    assert!(
        matches!(committed, Ok(Ok(()))),
        "a commit waited for the whole compaction: {committed:?}"
    );
    writer.join().unwrap();
    compacting.join().unwrap().unwrap();
    model.insert("during".into(), r#"{"during":true}"#.into());
    model.remove("s00007");
    assert_eq!(common::content(&db.snapshot(), "c"), model);
    // The merge landed (documents packed) and the write made during it is on top.
    assert!(db.snapshot().stats("c").packed_blocks > 0);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(common::content(&db.snapshot(), "c"), model);
}
