//! The database against a model: batches, snapshots, reopen, checkpoints, compaction, the
//! folder lock and group commit.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use proptest::prelude::*;
use std::collections::BTreeMap;
use stele::{Database, DatabaseOptions, Error};

type Model = BTreeMap<(String, String), String>;

/// JSON text of customer `i` (minified, as the stored document prints it).
fn customer_json(i: u32) -> String {
    format!(
        r#"{{"id":{i},"name":"customer number {i}","email":"user{i}@example.com","status":"{}","address":{{"city":"Lyon","country":"FR"}}}}"#,
        ["paid", "shipped", "pending"][(i % 3) as usize]
    )
}

fn json_of(db: &stele::Snapshot, coll: &str, id: &str) -> Option<String> {
    db.get(coll, id).unwrap().map(|d| d.to_json().unwrap())
}

fn check(db: &Database, model: &Model) {
    let snap = db.snapshot();
    for coll in ["a", "b"] {
        let want: Vec<(String, String)> = model
            .iter()
            .filter(|((c, _), _)| c == coll)
            .map(|((_, id), v)| (id.clone(), v.clone()))
            .collect();
        assert_eq!(snap.count(coll), want.len() as u64, "count of {coll}");
        let got: Vec<(String, String)> = snap
            .iter(coll)
            .map(|e| {
                let (id, doc) = e.unwrap();
                (id, doc.to_json().unwrap())
            })
            .collect();
        assert_eq!(got, want);
        let ids: Vec<String> = snap.ids(coll).map(|e| e.unwrap()).collect();
        let want_ids: Vec<&String> = want.iter().map(|(id, _)| id).collect();
        assert_eq!(ids.iter().collect::<Vec<_>>(), want_ids, "ids of {coll}");
        // Ids are "id0".."id19": a range with an excluded end, one with an included end.
        let in_range = |id: &str, lo: &str, hi: &str, hi_in: bool| {
            id >= lo && (id < hi || (hi_in && id == hi))
        };
        for (lo, hi) in [("id1", "id15"), ("id12", "id5"), ("id3", "id3")] {
            let got: Vec<(String, String)> = snap
                .range(coll, lo..hi)
                .map(|e| {
                    let (id, doc) = e.unwrap();
                    (id, doc.to_json().unwrap())
                })
                .collect();
            let expect: Vec<(String, String)> = want
                .iter()
                .filter(|(id, _)| in_range(id, lo, hi, false))
                .cloned()
                .collect();
            assert_eq!(got, expect, "range {lo}..{hi} of {coll}");
            let got_ids: Vec<String> = snap.ids_in(coll, lo..=hi).map(|e| e.unwrap()).collect();
            let expect_ids: Vec<String> = want
                .iter()
                .filter(|(id, _)| in_range(id, lo, hi, true))
                .map(|(id, _)| id.clone())
                .collect();
            assert_eq!(got_ids, expect_ids, "ids {lo}..={hi} of {coll}");
        }
        for (id, v) in &want {
            assert_eq!(json_of(&snap, coll, id).as_ref(), Some(v));
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(bool, u8, u32),
    Delete(bool, u8),
    Commit,
    Reopen,
    Checkpoint,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<bool>(), 0u8..20, any::<u32>()).prop_map(|(c, i, v)| Op::Put(c, i, v)),
        3 => (any::<bool>(), 0u8..20).prop_map(|(c, i)| Op::Delete(c, i)),
        4 => Just(Op::Commit),
        1 => Just(Op::Reopen),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Compact),
    ]
}

fn small() -> DatabaseOptions {
    // Tiny checkpoints and layer limits so that every path runs.
    // Blocks of a few documents and a cache of a few blocks: packing, packed reads and
    // eviction run too.
    DatabaseOptions::default()
        .checkpoint_bytes(300)
        .compact_layers(2)
        .pack_block_bytes(100)
        .block_cache_bytes(400)
}

/// Sequences the model test runs: 48, or `STELE_MODEL_CASES` (`scripts/soak.sh`).
fn model_cases() -> u32 {
    std::env::var("STELE_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| stele_testkit::proptest_cases(48))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: model_cases(), ..ProptestConfig::default() })]

    #[test]
    fn database_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Database::open_with(dir.path(), small()).unwrap();
        let mut model = Model::new();
        let mut staged = model.clone();
        let mut batch = db.batch();
        for op in ops {
            match op {
                Op::Put(c, i, v) => {
                    let (coll, id) = (if c { "a" } else { "b" }, format!("id{i}"));
                    let json = format!(r#"{{"v":{v},"id":"{id}"}}"#);
                    batch.put_json(coll, &id, json.as_bytes()).unwrap();
                    staged.insert((coll.into(), id), json);
                }
                Op::Delete(c, i) => {
                    let (coll, id) = (if c { "a" } else { "b" }, format!("id{i}"));
                    batch.delete(coll, &id).unwrap();
                    staged.remove(&(coll.to_string(), id));
                }
                Op::Commit => {
                    db.commit(std::mem::replace(&mut batch, db.batch())).unwrap();
                    model = staged.clone();
                }
                Op::Reopen => {
                    // An uncommitted batch is dropped with the handle.
                    batch = db.batch();
                    staged = model.clone();
                    drop(db);
                    db = Database::open_with(dir.path(), small()).unwrap();
                }
                Op::Checkpoint => db.checkpoint().unwrap(),
                Op::Compact => {
                    db.compact().unwrap();
                    for coll in ["a", "b"] {
                        prop_assert!(db.snapshot().layers(coll).len() <= 1);
                    }
                }
            }
            check(&db, &model);
        }
    }
}

#[test]
fn snapshots_are_isolated_and_batches_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let mut b = db.batch();
    b.put_json("books", "b1", br#"{"title":"Dune"}"#).unwrap();
    b.put_json("authors", "a1", br#"{"name":"Herbert"}"#)
        .unwrap();
    db.commit(b).unwrap();
    let before = db.snapshot();
    let mut b = db.batch();
    b.delete("books", "b1").unwrap();
    b.put_json("books", "b2", br#"{"title":"Emma"}"#).unwrap();
    db.commit(b).unwrap();
    assert!(before.get("books", "b1").unwrap().is_some());
    assert!(before.get("books", "b2").unwrap().is_none());
    let after = db.snapshot();
    assert!(after.get("books", "b1").unwrap().is_none());
    assert_eq!(
        after
            .get("books", "b2")
            .unwrap()
            .unwrap()
            .to_json()
            .unwrap(),
        r#"{"title":"Emma"}"#
    );
    assert_eq!(after.collections(), vec!["authors", "books"]);
    // A bad document fails when added, before anything is written.
    let mut b = db.batch();
    let err = b.put_json("books", "b3", b"{\"title\": ").unwrap_err();
    assert!(matches!(err, Error::Document(_)), "{err}");
    assert!(matches!(
        b.put_json("_system", "x", b"1").unwrap_err(),
        Error::InvalidCollectionName { .. }
    ));
    assert!(matches!(
        b.delete("books", "").unwrap_err(),
        Error::InvalidId { .. }
    ));
}

#[test]
fn a_second_open_names_the_process_holding_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    // flock is per open file: a second open in this process conflicts like another process.
    let err = Database::open(dir.path()).unwrap_err();
    match &err {
        Error::InUse { pid, .. } => assert_eq!(*pid, std::process::id()),
        e => panic!("{e}"),
    }
    assert!(err.to_string().contains("in use by pid"), "{err}");
    drop(db);
    Database::open(dir.path()).unwrap();
}

#[test]
fn concurrent_commits_share_fsyncs_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(
        dir.path(),
        DatabaseOptions::default().checkpoint_bytes(64 << 10),
    )
    .unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = db.clone();
            s.spawn(move || {
                for i in 0..200 {
                    let mut b = db.batch();
                    let json = format!(r#"{{"t":{t},"i":{i}}}"#);
                    b.put_json("c", &format!("{t}-{i:03}"), json.as_bytes())
                        .unwrap();
                    db.commit(b).unwrap();
                }
            });
        }
    });
    assert_eq!(db.snapshot().count("c"), 800);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    let snap = db.snapshot();
    assert_eq!(snap.count("c"), 800);
    assert_eq!(
        snap.get("c", "3-199").unwrap().unwrap().to_json().unwrap(),
        r#"{"t":3,"i":199}"#
    );
}

#[test]
fn background_compaction_bounds_the_layers_while_writes_continue() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), DatabaseOptions::default().compact_layers(3)).unwrap();
    let mut most_layers = 0;
    for round in 0..40u32 {
        let mut b = db.batch();
        for i in 0..20u32 {
            let json = format!(r#"{{"round":{round},"i":{i}}}"#);
            b.put_json(
                "c",
                &format!("k{:03}", (round * 7 + i) % 100),
                json.as_bytes(),
            )
            .unwrap();
        }
        db.commit(b).unwrap();
        db.checkpoint().unwrap();
        most_layers = most_layers.max(db.snapshot().layers("c").len());
    }
    // Give the compactor a moment for its last merge, then let a checkpoint swap it in.
    let mut layers = usize::MAX;
    for _ in 0..200 {
        db.checkpoint().unwrap();
        layers = db.snapshot().layers("c").len();
        if layers <= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(layers <= 3, "still {layers} layers");
    assert!(most_layers < 40, "layers grew without bound: {most_layers}");
    // Content is what was written last for every key.
    let snap = db.snapshot();
    assert_eq!(snap.count("c"), 100);
    let last = snap.get("c", "k006").unwrap().unwrap().to_json().unwrap();
    drop(snap);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(
        db.snapshot()
            .get("c", "k006")
            .unwrap()
            .unwrap()
            .to_json()
            .unwrap(),
        last
    );
    assert_eq!(db.snapshot().count("c"), 100);
}

/// JSON text becomes documents with long strings stored plain (`stele::write_options`), so
/// that the collection's zstd, not LZ4, compresses them; documents given as bytes are kept.
#[test]
fn long_strings_of_json_are_stored_plain_and_documents_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let long = "a description that repeats itself. ".repeat(40);
    let json = format!(r#"{{"text":"{long}"}}"#);
    let lz4 = stele_doc::DocumentWriter::new()
        .from_json(json.as_bytes())
        .unwrap();
    assert!(
        lz4.len() < long.len() / 2,
        "the default writer compresses it"
    );
    let mut b = db.batch();
    b.put_json("c", "json", json.as_bytes()).unwrap();
    b.put_document("c", "doc", &lz4).unwrap();
    db.commit(b).unwrap();
    let check = |snap: &stele::Snapshot| {
        let plain = snap.get("c", "json").unwrap().unwrap();
        assert!(plain.bytes().len() > long.len(), "{}", plain.bytes().len());
        assert_eq!(plain.to_json().unwrap(), json);
        let given = snap.get("c", "doc").unwrap().unwrap();
        assert_eq!(given.bytes(), &lz4[..]);
        assert_eq!(given.to_json().unwrap(), json);
    };
    check(&db.snapshot());
    drop(db);
    // Reopened, then packed into a block and read back from it.
    let db = Database::open(dir.path()).unwrap();
    check(&db.snapshot());
    db.compact().unwrap();
    assert_eq!(db.snapshot().stats("c").packed_blocks, 1);
    check(&db.snapshot());
}

#[test]
fn compression_trains_dictionaries_that_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let json = customer_json;
    let db = Database::open(dir.path()).unwrap();
    db.set_compression("raw", false).unwrap();
    assert!(db.compression("c").unwrap());
    assert!(!db.compression("raw").unwrap());
    for chunk in 0..20u32 {
        let mut b = db.batch();
        for i in chunk * 50..chunk * 50 + 50 {
            b.put_json("c", &format!("{i:05}"), json(i).as_bytes())
                .unwrap();
            b.put_json("raw", &format!("{i:05}"), json(i).as_bytes())
                .unwrap();
        }
        db.commit(b).unwrap();
    }
    db.compact().unwrap();
    let snap = db.snapshot();
    assert!(snap.dictionaries("c") > 0, "no dictionary was trained");
    assert_eq!(snap.dictionaries("raw"), 0);
    let (c, raw) = (snap.stats("c"), snap.stats("raw"));
    assert!(
        c.stored_bytes * 2 < raw.stored_bytes,
        "compressed {} vs raw {}",
        c.stored_bytes,
        raw.stored_bytes
    );
    assert_eq!(
        snap.collections(),
        vec!["c", "raw"],
        "the meta collection stays hidden"
    );
    drop(snap);
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    let snap = db.snapshot();
    for i in [0u32, 63, 64, 500, 999] {
        let doc = snap.get("c", &format!("{i:05}")).unwrap().unwrap();
        assert_eq!(doc.to_json().unwrap(), json(i));
    }
    assert_eq!(snap.iter("c").count(), 1000);
    // Writes after reopening go on with the persisted dictionary.
    let mut b = db.batch();
    b.put_json("c", "new", json(5000).as_bytes()).unwrap();
    db.commit(b).unwrap();
    assert_eq!(
        db.snapshot()
            .get("c", "new")
            .unwrap()
            .unwrap()
            .to_json()
            .unwrap(),
        json(5000)
    );
}

#[test]
fn background_trained_dictionary_is_adopted_and_earlier_documents_stay_readable() {
    // Without packing, the first trainings run in line (below); with packing (the
    // default), every training runs in the background, and the drift makes at least two.
    background_dictionaries(DatabaseOptions::default().pack_block_bytes(0), 3);
    background_dictionaries(DatabaseOptions::default(), 2);
}

fn background_dictionaries(opts: DatabaseOptions, want: usize) {
    let dir = tempfile::tempdir().unwrap();
    // Two kinds of documents: the first trains the collection's first dictionary (in line),
    // the switch to the second drifts the ratio and retrains in the background while
    // commits go on.
    let json = |i: u32| {
        if i < 1500 {
            customer_json(i)
        } else {
            common::sensor_json(i)
        }
    };
    let db = Database::open_with(dir.path(), opts.clone()).unwrap();
    let mut written = 0u32;
    let mut batches = 0;
    // Commit batches of 100 until the third dictionary is durable: the first is trained in
    // line on the first batch, the second in line once the sample ring is full (it replaces
    // one trained on 100 documents), from then on in the background (the drift at document
    // 1,500), logged with whichever batch follows the training. Within a generous bound.
    while db.snapshot().dictionaries("c") < want || written < 5000 {
        assert!(
            batches < 2000,
            "no background dictionary after {written} documents"
        );
        let mut b = db.batch();
        for i in written..written + 100 {
            b.put_json("c", &format!("{i:06}"), json(i).as_bytes())
                .unwrap();
        }
        db.commit(b).unwrap();
        written += 100;
        batches += 1;
        if written >= 5000 {
            // Give a slow machine's training thread time to finish.
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let snap = db.snapshot();
    assert!(snap.dictionaries("c") >= want);
    assert!(snap.dictionary_bytes("c").unwrap() > 0);
    let check = |db: &Database| {
        let snap = db.snapshot();
        assert_eq!(snap.count("c"), u64::from(written));
        for i in 0..written {
            let doc = snap.get("c", &format!("{i:06}")).unwrap().unwrap();
            assert_eq!(doc.to_json().unwrap(), json(i), "document {i}");
        }
    };
    check(&db);
    drop(snap);
    drop(db);
    // Every document names a dictionary that was durable before it: all read back after
    // reopening (from the log, then from tables after compaction).
    let db = Database::open_with(dir.path(), opts.clone()).unwrap();
    check(&db);
    db.compact().unwrap();
    check(&db);
    drop(db);
    let db = Database::open_with(dir.path(), opts).unwrap();
    check(&db);
}

#[test]
fn put_json_many_stores_what_put_json_stores_and_names_the_first_bad_document() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for coll in ["one", "many"] {
        db.set_compression(coll, false).unwrap();
    }
    // About 400 KB of text, documents of 100 B to 9 KB: more than PARALLEL_JSON_BYTES, so
    // converted on several threads where the machine has them.
    let docs: Vec<(String, String)> = (0..2000u32)
        .map(|i| {
            let pad = "x".repeat(if i % 97 == 0 {
                9000
            } else {
                (i % 13) as usize * 10
            });
            (
                format!("{i:05}"),
                format!(r#"{{"n":{i},"pad":"{pad}","esc":"tab\there","u":"\u00e9"}}"#),
            )
        })
        .collect();
    assert!(docs.iter().map(|(_, j)| j.len()).sum::<usize>() > stele::PARALLEL_JSON_BYTES);
    let mut one = db.batch();
    for (id, json) in &docs {
        one.put_json("one", id, json.as_bytes()).unwrap();
    }
    db.commit(one).unwrap();
    let mut many = db.batch();
    many.put_json_many("many", &docs).unwrap();
    assert_eq!(many.len(), docs.len());
    db.commit(many).unwrap();
    let snap = db.snapshot();
    assert_eq!(snap.count("many"), 2000);
    for (id, _) in &docs {
        let (a, b) = (snap.get("one", id).unwrap(), snap.get("many", id).unwrap());
        assert_eq!(a.unwrap().bytes(), b.unwrap().bytes(), "document {id}");
    }

    // A bad text late in the slice (converted by another thread than the first), then a
    // bad id: the first one is named, and the batch keeps only what it had.
    let mut bad = docs.clone();
    bad[1700].1 = r#"{"n": 1700,}"#.to_owned();
    bad[1900].0 = String::new();
    let mut batch = db.batch();
    batch.delete("many", "00001").unwrap();
    let err = batch.put_json_many("many", &bad).unwrap_err();
    let Error::InvalidDocument {
        position,
        id,
        source,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*position, id.as_str()), (1700, "01700"));
    assert!(matches!(**source, Error::Document(_)), "{source:?}");
    assert!(
        err.to_string().contains("document 1700 (id \"01700\")"),
        "{err}"
    );
    assert_eq!(batch.len(), 1);
    bad[1700] = docs[1700].clone();
    let err = batch.put_json_many("many", &bad).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidDocument { position: 1900, source, .. }
            if matches!(**source, Error::InvalidId { .. })),
        "{err:?}"
    );
    assert!(matches!(
        batch.put_json_many("no/slash", &docs[..1]),
        Err(Error::InvalidCollectionName { .. })
    ));
    assert_eq!(batch.len(), 1);
}

/// The log is written into zeroes written ahead of its records. A crash between a
/// checkpoint's start of a new log segment and its removal of the old one leaves an old
/// segment that ends in zeroes: it opens as a clean end, not as damage.
#[test]
fn an_old_log_segment_ending_in_zeroes_opens() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let segments = || {
        let mut s: Vec<_> = std::fs::read_dir(&wal)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        s.sort();
        s
    };
    let db = Database::open(dir.path()).unwrap();
    for i in 0..3 {
        let mut b = db.batch();
        b.put_json("c", &format!("d{i}"), customer_json(i).as_bytes())
            .unwrap();
        db.commit(b).unwrap();
    }
    // Read while the database is open: a clean close checkpoints and gives the zeroes back.
    let old = segments();
    assert_eq!(old.len(), 1);
    let old_bytes = std::fs::read(&old[0]).unwrap();
    assert!(
        old_bytes.ends_with(&[0; 4096]),
        "the segment ends in zeroes written ahead ({} bytes)",
        old_bytes.len()
    );
    drop(db);
    let db = Database::open(dir.path()).unwrap();
    db.checkpoint().unwrap();
    let mut b = db.batch();
    b.put_json("c", "d3", customer_json(3).as_bytes()).unwrap();
    db.commit(b).unwrap();
    drop(db);
    assert!(!old[0].exists(), "the checkpoint removed the old segment");
    std::fs::write(&old[0], &old_bytes).unwrap();
    assert_eq!(segments().len(), 2);
    let db = Database::open(dir.path()).unwrap();
    let snap = db.snapshot();
    for i in 0..4 {
        assert_eq!(
            json_of(&snap, "c", &format!("d{i}")),
            Some(customer_json(i)),
            "d{i}"
        );
    }
}
