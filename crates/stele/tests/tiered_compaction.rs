//! Size-tiered compaction (`DatabaseOptions::compact_base_ratio`): the compactions that
//! checkpoints start merge the small layers above a large collection's base and leave the
//! base (or the packed blocks) as it is, so an incremental backup after them copies the
//! changes only; past the ratio, or with ratio 0, the base is rewritten as before. Every
//! document reads as the model says throughout, and after a reopen.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::path::Path;
use stele::backup::{self, BackupOptions};
use stele::{Database, DatabaseOptions};

const DOCS: u32 = 20_000;

/// A document of about 120 bytes that does not compress to nothing.
fn doc(i: u32, version: u32) -> String {
    let mut x = u64::from(i) * 0x9e37_79b9 + u64::from(version) * 0x85eb_ca6b + 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    format!(
        r#"{{"i":{i},"v":{version},"h":"{x:016x}{:016x}{:016x}"}}"#,
        x.rotate_left(21),
        x.rotate_left(42)
    )
}

/// In-line compactions (no background thread: what a checkpoint does is done when it
/// returns), two layers allowed before a compaction.
fn options(ratio: u64) -> DatabaseOptions {
    DatabaseOptions::default()
        .compact_layers(2)
        .background_compaction(false)
        .pack_on_close(false)
        .compact_base_ratio(ratio)
}

/// A database of `DOCS` documents in collection "c" (compression `compressed`), fully
/// compacted, with its model; a full backup of it in `bk`.
fn prepared(root: &Path, ratio: u64, compressed: bool) -> (Database, BTreeMap<String, String>) {
    let db = Database::open_with(root.join("db"), options(ratio)).unwrap();
    db.set_compression("c", compressed).unwrap();
    let mut model = BTreeMap::new();
    for chunk in (0..DOCS).collect::<Vec<_>>().chunks(500) {
        let mut b = db.batch();
        for &i in chunk {
            let (id, json) = (format!("d{i:05}"), doc(i, 0));
            b.put_json("c", &id, json.as_bytes()).unwrap();
            model.insert(id, json);
        }
        db.commit(b).unwrap();
    }
    db.compact().unwrap();
    backup::backup_with(
        root.join("db"),
        root.join("bk"),
        &BackupOptions::default().link(false),
    )
    .unwrap();
    (db, model)
}

/// Rounds of `per_round` changed documents (and one removal), each followed by a
/// checkpoint, until a compaction has run (the collection was deeper than 2 layers).
fn change(db: &Database, model: &mut BTreeMap<String, String>, rounds: u32, per_round: u32) {
    for round in 1..=rounds {
        let mut b = db.batch();
        for k in 0..per_round {
            let i = (round * 7919 + k * 104_729) % DOCS;
            let (id, json) = (format!("d{i:05}"), doc(i, round));
            b.put_json("c", &id, json.as_bytes()).unwrap();
            model.insert(id, json);
        }
        let gone = format!("d{:05}", (round * 31) % DOCS);
        b.delete("c", &gone).unwrap();
        model.remove(&gone);
        db.commit(b).unwrap();
        db.checkpoint().unwrap();
    }
}

fn check(db: &Database, model: &BTreeMap<String, String>) {
    let snap = db.snapshot();
    assert_eq!(snap.count("c"), model.len() as u64);
    for i in 0..DOCS {
        let id = format!("d{i:05}");
        let got = snap.get("c", &id).unwrap().map(|d| d.to_json().unwrap());
        assert_eq!(got.as_ref(), model.get(&id), "{id}");
    }
}

/// Bytes an incremental backup into `root/bk` writes now, against the database's table bytes.
fn incremental_share(root: &Path, db: &Database) -> f64 {
    let shipped = backup::backup_with(
        root.join("db"),
        root.join("bk"),
        &BackupOptions::default().link(false),
    )
    .unwrap();
    let stats = db.snapshot().stats("c");
    shipped.bytes_written as f64 / stats.table_bytes as f64
}

#[test]
fn small_changes_to_a_plain_collection_leave_its_base() {
    let root = tempfile::tempdir().unwrap();
    let (db, mut model) = prepared(root.path(), 8, false);
    let before = db.snapshot().stats("c");
    assert_eq!(before.layers, 1);
    change(&db, &mut model, 6, 20);
    let after = db.snapshot().stats("c");
    // Compactions ran (never more than the allowed layers plus the merged diff)...
    assert!(after.layers <= 3, "{after:?}");
    check(&db, &model);
    // ...and the base was not rewritten: the backup copies the changes only.
    let share = incremental_share(root.path(), &db);
    assert!(
        share < 0.10,
        "an incremental backup wrote {share:.3} of the tables"
    );
    // Reopened, the same documents.
    drop(db);
    let db = Database::open_with(root.path().join("db"), options(8)).unwrap();
    check(&db, &model);
    // Changes past 1/8 of the base: the base is rewritten with them, one layer again.
    change(&db, &mut model, 3, 1500);
    check(&db, &model);
    assert!(db.snapshot().stats("c").layers <= 2);
    let share = incremental_share(root.path(), &db);
    assert!(share > 0.5, "a rewritten base is copied: {share:.3}");
}

#[test]
fn small_changes_to_a_packed_collection_leave_its_blocks() {
    let root = tempfile::tempdir().unwrap();
    let (db, mut model) = prepared(root.path(), 8, true);
    let before = db.snapshot().stats("c");
    assert!(before.packed_blocks > 4, "{before:?}");
    change(&db, &mut model, 6, 20);
    let after = db.snapshot().stats("c");
    assert_eq!(
        (after.packed_blocks, after.pack_bytes),
        (before.packed_blocks, before.pack_bytes),
        "the blocks are as they were"
    );
    assert!(after.layers <= 2, "{after:?}");
    check(&db, &model);
    let share = incremental_share(root.path(), &db);
    assert!(
        share < 0.10,
        "an incremental backup wrote {share:.3} of the tables"
    );
}

#[test]
fn ratio_zero_rewrites_the_base_at_every_compaction() {
    for compressed in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let (db, mut model) = prepared(root.path(), 0, compressed);
        change(&db, &mut model, 6, 20);
        check(&db, &model);
        let share = incremental_share(root.path(), &db);
        assert!(share > 0.5, "compressed {compressed}: {share:.3}");
    }
}
