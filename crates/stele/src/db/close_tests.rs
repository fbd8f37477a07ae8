//! A clean close leaves the database compact at rest (tables only, an empty log, no
//! zeroes), an idle writer checkpoints, and the log's zeroes grow with use and are given
//! back.

use super::*;
use crate::DatabaseOptions;
use crate::index::build_tests::{
    Op, Tag, apply, index_keys, options, range_by_model, range_by_query,
};
use crate::wal::{self, LoggedOp, WalWriter};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use stele_table::Storage;

/// JSON text of order `i` (customers `c-0` to `c-96`).
fn order_json(i: u32) -> String {
    format!(
        r#"{{"order":"o-{i}","customer":"c-{}","total":{}.{},"status":"shipped"}}"#,
        i % 97,
        i % 500,
        i % 100
    )
}

/// Bytes of every log segment in `dir`'s log folder, by first sequence number.
fn log_files(dir: &Path) -> Vec<(u64, u64)> {
    wal::list_segments(&dir.join(super::super::WAL_DIR))
        .unwrap()
        .into_iter()
        .map(|(first, path)| (first, std::fs::metadata(&path).unwrap().len()))
        .collect()
}

fn write_orders(db: &Database, range: std::ops::Range<u32>) {
    let mut b = db.batch();
    for i in range {
        b.put_json("orders", &format!("o{i:06}"), order_json(i).as_bytes())
            .unwrap();
    }
    db.commit(b).unwrap();
}

fn assert_orders(db: &Database, range: std::ops::Range<u32>) {
    let snap = db.snapshot();
    for i in range {
        let got = snap.get("orders", &format!("o{i:06}")).unwrap().unwrap();
        assert_eq!(got.to_json().unwrap(), order_json(i));
    }
}

/// Log bytes the writer counts since the last checkpoint (what a reopen replays).
fn logged_bytes(db: &Database) -> u64 {
    db.inner.writer.lock().unwrap().logged_bytes
}

fn no_idle() -> DatabaseOptions {
    DatabaseOptions::default().idle_checkpoint(None)
}

#[test]
fn close_checkpoints_packs_and_gives_back_the_zeroes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    write_orders(&db, 0..600);
    db.create_index("orders", "by_customer", &["customer"])
        .unwrap();
    assert!(logged_bytes(&db) > 0);
    assert!(log_files(dir.path()).iter().map(|(_, b)| b).sum::<u64>() > 0);
    db.close().unwrap();
    // One segment, empty: no records, no zeroes.
    let files = log_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].1, 0, "{files:?}");
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    assert_eq!(logged_bytes(&db), 0, "nothing to replay");
    let state = db.snapshot_state();
    // Every document went into packed blocks: the collection's own map is empty.
    assert_eq!(state.collections["orders"].len(), 0);
    assert!(
        state
            .collections
            .contains_key(&crate::internal::packs_name("orders"))
    );
    assert_orders(&db, 0..600);
    let found = db
        .snapshot()
        .query(&crate::Query::new("orders").eq("customer", r#""c-7""#))
        .unwrap();
    assert!(found.plan.index().is_some());
    assert_eq!(found.rows.len(), 7, "orders 7, 104, ... 589");
    drop(db);
    // A close that found nothing to do writes nothing.
    assert_eq!(log_files(dir.path()), files);
    // Tables on disk: only those of the maps the manifest names (the diff the packing
    // replaced went).
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    let named: std::collections::BTreeSet<String> = db
        .snapshot()
        .state
        .map_refs()
        .flat_map(|(_, map)| map.layer_ids())
        .map(|id| format!("{id}.stt"))
        .collect();
    drop(db);
    let on_disk: std::collections::BTreeSet<String> =
        std::fs::read_dir(dir.path().join(super::super::TABLES_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".stt"))
            .collect();
    assert!(on_disk.is_subset(&named), "{on_disk:?} vs {named:?}");
}

#[test]
fn the_last_handle_closes_whichever_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    write_orders(&db, 0..50);
    let other = db.clone();
    let internal = Database::internal(Arc::clone(&db.inner));
    db.close().unwrap();
    // Another handle lives: nothing was checkpointed yet.
    assert!(logged_bytes(&other) > 0);
    write_orders(&other, 50..60);
    drop(other);
    // The last user handle closed it, though the database's own handle is still alive.
    assert!(internal.is_closed());
    assert_eq!(logged_bytes(&internal), 0);
    drop(internal);
    let files = log_files(dir.path());
    assert_eq!(files.iter().map(|(_, b)| b).sum::<u64>(), 0, "{files:?}");
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    assert_orders(&db, 0..60);
}

#[test]
fn close_without_packing_checkpoints_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), no_idle().pack_on_close(false)).unwrap();
    write_orders(&db, 0..100);
    db.close().unwrap();
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    assert_eq!(logged_bytes(&db), 0);
    let state = db.snapshot_state();
    assert_eq!(state.collections["orders"].len(), 100, "in a diff table");
    assert!(
        !state
            .collections
            .contains_key(&crate::internal::packs_name("orders"))
    );
}

#[test]
fn a_mostly_packed_collection_is_not_repacked_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    write_orders(&db, 0..800);
    db.compact().unwrap();
    // 50 of 850 documents outside the blocks: under 1 in 8.
    write_orders(&db, 800..850);
    db.close().unwrap();
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    let state = db.snapshot_state();
    let entries: u64 = state.collections["orders"]
        .table_stats()
        .iter()
        .map(|(_, s)| s.entries)
        .sum();
    assert_eq!(entries, 50, "the new documents stay in a diff");
    assert_orders(&db, 0..850);
}

#[test]
fn an_idle_writer_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let idle = Duration::from_millis(100);
    let opts = DatabaseOptions::default().idle_checkpoint(Some(idle));
    let db = Database::open_with(dir.path(), opts).unwrap();
    write_orders(&db, 0..20);
    assert!(logged_bytes(&db) > 0);
    let start = Instant::now();
    while logged_bytes(&db) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no idle checkpoint"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(start.elapsed() >= idle);
    // The checkpoint wrote the documents into a table; the log restarted after them.
    assert_eq!(db.snapshot_state().collections["orders"].len(), 20);
    assert_eq!(log_files(dir.path()).len(), 1);
    assert_orders(&db, 0..20);
}

#[test]
fn a_busy_writer_does_not_checkpoint_for_being_idle() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DatabaseOptions::default().idle_checkpoint(Some(Duration::from_millis(300)));
    let db = Database::open_with(dir.path(), opts).unwrap();
    // A commit every 20 ms for 0.6 s: never idle for 300 ms.
    for i in 0..30 {
        write_orders(&db, i..i + 1);
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            logged_bytes(&db) > 0,
            "checkpointed while busy, at commit {i}"
        );
    }
}

/// Appends `n` small batches from sequence number `from`; returns their bytes.
fn append_small(w: &mut WalWriter, from: u64, n: u64) -> u64 {
    append_sized(w, from, n, 100)
}

/// Appends `n` batches of about `id_bytes` each from sequence number `from`; returns their
/// bytes.
fn append_sized(w: &mut WalWriter, from: u64, n: u64, id_bytes: usize) -> u64 {
    let mut bytes = 0;
    for seq in from..from + n {
        let mut one = Vec::new();
        let op = LoggedOp::Delete {
            collection: "c".into(),
            id: format!("{seq:0id_bytes$}").into_bytes(),
        };
        wal::encode_batch(&mut one, seq, &[op]).unwrap();
        w.append(&one).unwrap();
        bytes += one.len() as u64;
    }
    bytes
}

#[test]
fn the_logs_zeroes_grow_with_use_and_go_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(stele_table::FsStorage);
    let path = wal::segment_path(dir.path(), 1);
    let file_len = || std::fs::metadata(&path).unwrap().len();
    let mut w = WalWriter::open(Arc::clone(&storage), dir.path(), 1, 0, 0, false).unwrap();
    let min = 16 << 10;
    assert_eq!(
        file_len(),
        min,
        "a new segment starts with a few KiB of zeroes"
    );
    let mut records = append_small(&mut w, 1, 10);
    assert_eq!(file_len(), min);
    // Past the zeroes: as many zeroes again as there are records (the file doubles).
    let mut seq = 11;
    let mut sizes = vec![file_len()];
    while records < 3 << 20 {
        records += append_sized(&mut w, seq, 4, 8000);
        seq += 4;
        let len = file_len();
        assert!(
            len >= records && len <= records + (1 << 20),
            "{len} for {records}"
        );
        if sizes.last() != Some(&len) {
            sizes.push(len);
        }
    }
    // Doubling at first, then 1 MiB at a time.
    assert!(
        sizes
            .windows(2)
            .take(4)
            .all(|p| p[1] <= 2 * p[0] + (16 << 10)),
        "{sizes:?}"
    );
    assert!(
        sizes.windows(2).any(|p| p[1] - p[0] >= 1 << 20),
        "{sizes:?}"
    );
    assert!(w.zeroes_ahead_bytes() > 0);
    // A clean close: cut to the records.
    w.give_back_zeroes().unwrap();
    assert_eq!(file_len(), records);
    assert_eq!(w.zeroes_ahead_bytes(), 0);
    drop(w);
    let bytes = std::fs::read(&path).unwrap();
    let (batches, valid, why) = wal::read_segment(&bytes);
    assert_eq!(
        (batches.len() as u64, valid as u64, why),
        (seq - 1, records, None)
    );
    // A crash in the middle of the cut leaves part of the zeroes: read as before, kept.
    let mut partial = bytes.clone();
    partial.resize(bytes.len() + 5000, 0);
    std::fs::write(&path, &partial).unwrap();
    let (batches, valid, why) = wal::read_segment(&partial);
    assert_eq!(
        (batches.len() as u64, valid as u64, why),
        (seq - 1, records, None)
    );
    let mut w =
        WalWriter::open(storage, dir.path(), 1, records, partial.len() as u64, true).unwrap();
    // Reopened on 3 MiB of records: zeroes ahead again, the most (1 MiB).
    assert_eq!(file_len(), records + (1 << 20));
    let more = append_small(&mut w, seq, 1);
    w.give_back_zeroes().unwrap();
    assert_eq!(file_len(), records + more);
}

#[test]
fn a_small_database_at_rest_is_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    write_orders(&db, 0..100);
    // While open, a small log keeps a few KiB of zeroes ahead, not 1 MiB.
    let usage = db.disk_usage();
    assert!(usage.log_zeroes_bytes <= 64 << 10, "{usage:?}");
    drop(db);
    let db = Database::open_with(dir.path(), no_idle()).unwrap();
    let usage = db.disk_usage();
    // Opening zeroes ahead again (for the first commit), a few KiB.
    assert_eq!(usage.log_bytes, 0, "{usage:?}");
    assert!(usage.log_zeroes_bytes <= 16 << 10, "{usage:?}");
}

/// An index as builds before manifest version 3 wrote it (every key a loose entry with an
/// empty value) reads the same, takes writes, and is packed by the next close that packs.
#[test]
fn an_index_of_loose_keys_reads_and_gets_packed() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    let ops: Vec<Op> = (0..40u8)
        .map(|i| Op::Put {
            id: i,
            tag: Some(if i % 3 == 0 {
                Tag::Number(i16::from(i) - 20)
            } else {
                Tag::Text(i % 12)
            }),
            tags: vec![i % 6],
        })
        .collect();
    apply(&db, &ops, &mut model);
    db.create_index("c", "by_tag", &["tag"]).unwrap();
    let key = ("c".to_owned(), "by_tag".to_owned());
    {
        // The index rewritten as the older builds stored it: a plain table of its keys.
        let mut w = db.inner.writer.lock().unwrap();
        let keys = index_keys(&db, "by_tag");
        let plain = db
            .inner
            .store
            .build_map(keys.into_iter().map(|k| (k, [0u8; 0])))
            .unwrap();
        assert!(!crate::index::packed::has_blocks(&plain));
        w.state.indexes.get_mut(&key).unwrap().map = plain;
        db.checkpoint_locked(&mut w, false).unwrap();
    }
    let want = range_by_model(&model);
    assert_eq!(range_by_query(&db, false), want);
    // Writes to it: removals leave marks, new keys go in as loose entries.
    apply(
        &db,
        &[
            Op::Delete(1),
            Op::Delete(3),
            Op::Put {
                id: 4,
                tag: Some(Tag::Number(-5)),
                tags: vec![],
            },
        ],
        &mut model,
    );
    let loose = &db.snapshot().state.indexes[&key].map;
    assert!(!crate::index::packed::has_blocks(loose));
    let want = range_by_model(&model);
    assert_eq!(range_by_query(&db, false), want);
    drop(db);
    // Closed after writes: packed; the same answers.
    let db = Database::open_with(dir.path(), options()).unwrap();
    let state = std::sync::Arc::clone(&db.snapshot().state);
    let map = &state.indexes[&key].map;
    assert!(crate::index::packed::has_blocks(map) && !crate::index::packed::has_loose(map));
    assert_eq!(range_by_query(&db, false), want);
    let stats = db.snapshot().index_stats("c");
    assert_eq!(
        stats[0].entries,
        model.values().filter(|(t, _)| t.is_some()).count() as u64
    );
}
