//! The lifetime of compression dictionaries: a full compaction removes the dictionaries no
//! stored value needs any more, and never one that a document, a batch in flight or a later
//! write needs (every document reads back, before and after reopening).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use stele::{Database, DatabaseOptions};

type Model = BTreeMap<String, String>;

/// Document `i` of a collection whose kind changes every 1,500 documents (orders, sensor
/// readings, log lines, orders again with other fields), so that the compression ratio
/// drifts and the compressor trains several dictionaries. Minified JSON.
fn drifting_json(i: u32) -> String {
    match (i / 1500) % 4 {
        0 => common::order_json(i),
        1 => common::sensor_json(i),
        2 => common::log_json(i),
        _ => format!(
            r#"{{"invoice":{i},"lines":[{},{},{}],"currency":"EUR","paid":{},"note":"net 30 days"}}"#,
            i % 9,
            i % 11,
            i % 13,
            i.is_multiple_of(2)
        ),
    }
}

fn write_range(db: &Database, range: std::ops::Range<u32>, model: &mut Model) {
    let ids: Vec<u32> = range.collect();
    for chunk in ids.chunks(250) {
        let mut b = db.batch();
        for &i in chunk {
            let id = format!("{i:06}");
            let json = drifting_json(i);
            b.put_json("c", &id, json.as_bytes()).unwrap();
            model.insert(id, json);
        }
        db.commit(b).unwrap();
    }
}

fn content(db: &Database) -> Model {
    common::content(&db.snapshot(), "c")
}

/// In-line trainings, so that the dictionaries are the same in every run.
fn opts() -> DatabaseOptions {
    DatabaseOptions::default().background_training(false)
}

#[test]
fn a_full_compaction_removes_dictionaries_nothing_uses() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let db = Database::open_with(dir.path(), opts()).unwrap();
    write_range(&db, 0..6000, &mut model);
    let trained = db.snapshot().dictionaries("c");
    assert!(trained >= 3, "the drifting data trained only {trained}");
    let bytes_before = db.snapshot().dictionary_bytes("c").unwrap();
    db.compact().unwrap();
    // Every document is packed with the newest dictionary: the older ones go.
    let kept = db.snapshot().dictionaries("c");
    assert!(kept >= 1 && kept < trained, "{trained} -> {kept}");
    assert!(db.snapshot().dictionary_bytes("c").unwrap() < bytes_before);
    assert_eq!(content(&db), model);
    // Writes after the removal, then another compaction, then reopening.
    write_range(&db, 6000..7500, &mut model);
    assert_eq!(content(&db), model);
    db.compact().unwrap();
    assert_eq!(content(&db), model);
    drop(db);
    let db = Database::open_with(dir.path(), opts()).unwrap();
    assert_eq!(content(&db), model);
    let after_reopen = db.snapshot().dictionaries("c");
    assert!(after_reopen >= 1);
    // New dictionaries get new ids after the removals (ids are never reused): writing and
    // compacting again still reads everything back.
    write_range(&db, 7500..9000, &mut model);
    db.compact().unwrap();
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(content(&db), model);
}

#[test]
fn documents_stored_one_by_one_keep_their_dictionaries() {
    // Packing off: each document keeps the dictionary it was written with, so a compaction
    // must keep every dictionary some document still names.
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let db = Database::open_with(dir.path(), opts().pack_block_bytes(0)).unwrap();
    write_range(&db, 0..6000, &mut model);
    assert!(db.snapshot().dictionaries("c") >= 3);
    db.compact().unwrap();
    assert_eq!(content(&db), model);
    drop(db);
    let db = Database::open_with(dir.path(), opts().pack_block_bytes(0)).unwrap();
    assert_eq!(content(&db), model);
    // Overwrite half of them: their old dictionaries may go, the rest must stay.
    write_range(&db, 3000..6000, &mut model);
    db.compact().unwrap();
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(content(&db), model);
}

#[test]
fn snapshots_keep_reading_through_a_removal() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let db = Database::open_with(dir.path(), opts().pack_block_bytes(0)).unwrap();
    write_range(&db, 0..6000, &mut model);
    // Documents written one by one, then repacked by a database with packing on: the old
    // snapshot still reads its own (unpacked) documents with the dictionaries it had.
    let old = db.snapshot();
    drop(db);
    drop(old);
    let db = Database::open_with(dir.path(), opts()).unwrap();
    let old = db.snapshot();
    let before = old.dictionaries("c");
    db.compact().unwrap();
    assert!(db.snapshot().dictionaries("c") < before);
    assert_eq!(common::content(&old, "c"), model);
    assert_eq!(content(&db), model);
}

/// Writers commit drifting documents (so dictionaries keep changing) while another thread
/// runs full compactions, each ending with a removal pass: batches compressed with a
/// dictionary just before it stopped being current must still find it.
#[test]
fn removals_racing_with_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), opts().checkpoint_bytes(256 << 10)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = {
        let db = db.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            // Dictionary counts after each compaction (a drop is a removal).
            let mut counts = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                db.compact().unwrap();
                counts.push(db.snapshot().dictionaries("c"));
                // Let the writers in: each compaction holds the writer lock while it packs.
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            counts
        })
    };
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut model = Model::new();
                for chunk in 0..120u32 {
                    let mut b = db.batch();
                    for k in 0..150u32 {
                        // Each writer walks through every kind of document.
                        let i = chunk * 150 + k;
                        let id = format!("w{w}-{i:06}");
                        let json = drifting_json(i);
                        b.put_json("c", &id, json.as_bytes()).unwrap();
                        model.insert(id, json);
                    }
                    db.commit(b).unwrap();
                }
                model
            })
        })
        .collect();
    let mut model = Model::new();
    for w in writers {
        model.extend(w.join().unwrap());
    }
    stop.store(true, Ordering::SeqCst);
    let counts = compactor.join().unwrap();
    eprintln!("dictionaries after each compaction: {counts:?}");
    assert!(counts.len() >= 2, "only {} compactions ran", counts.len());
    assert_eq!(content(&db), model);
    db.compact().unwrap();
    assert_eq!(content(&db), model);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(content(&db), model);
}
