//! Databases written by earlier versions open and read the same, and rewriting them keeps
//! every document.
//!
//! `tests/golden/db-codec3` was written by the `stele` CLI at commit `db9cca3`, the last
//! version that packed documents into plain blocks (codec 3, ids stored whole) rather than
//! keyed blocks (codec 5, ids front-coded):
//!
//! ```text
//! stele import db items docs.jsonl --id-field id   # the 1,500 documents of `doc(i)` below
//! stele compact db                                  # packs them: 4 blocks, 1 dictionary
//! stele delete db items d00007                      # both left in the log, unapplied
//! stele put db items d00008 '{"id":"d00008","n":-8,"replaced":true}'
//! ```
//!
//! `tests/golden/db-codec6` was written the same way by the CLI at commit `afab1b8` (the
//! first version with stream blocks), from the 1,500 documents of `streamed_doc(i)` below
//! (ids `s00000`...; `s00007` deleted and `s00008` replaced, both in the log): its packed
//! documents are stream forms, 6 stream blocks (codec 6) and 1 dictionary.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::Path;

use stele::{Database, Snapshot};
use stele_testkit::copy_dir;

/// Document `i` as the golden database's input file held it.
fn doc(i: u32) -> String {
    format!(
        r#"{{"id":"d{i:05}","n":{i},"name":"item {i}","even":{},"tags":["t{}","u{}"]}}"#,
        i.is_multiple_of(2),
        i % 7,
        i % 3
    )
}

/// What a golden database holds: the 1,500 documents `doc(i)` under `<prefix><i:05>`, the
/// 7th deleted and the 8th replaced (the two unapplied writes both were made with).
fn expected(prefix: char, doc: fn(u32) -> String) -> BTreeMap<String, String> {
    let mut model: BTreeMap<String, String> = (0..1500)
        .map(|i| (format!("{prefix}{i:05}"), doc(i)))
        .collect();
    model.remove(&format!("{prefix}00007"));
    model.insert(
        format!("{prefix}00008"),
        format!(r#"{{"id":"{prefix}00008","n":-8,"replaced":true}}"#),
    );
    model
}

/// A copy of golden database `name` in a temporary folder (opening one writes to it).
fn golden_copy(name: &str) -> tempfile::TempDir {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&golden, dir.path());
    dir
}

fn assert_holds(snap: &Snapshot, model: &BTreeMap<String, String>) {
    assert_eq!(snap.count("items"), model.len() as u64);
    let got: BTreeMap<String, String> = snap
        .iter("items")
        .map(|e| {
            let (id, doc) = e.unwrap();
            (id, doc.to_json().unwrap())
        })
        .collect();
    assert_eq!(&got, model);
    for (id, json) in model.iter().step_by(13) {
        let doc = snap.get("items", id).unwrap().unwrap();
        assert_eq!(doc.to_json().unwrap(), *json);
    }
    // The deleted documents of both golden databases.
    for removed in ["d00007", "s00007"] {
        assert!(snap.get("items", removed).unwrap().is_none());
    }
}

/// Document `i` of the input of `db-codec6`.
fn streamed_doc(i: u32) -> String {
    const WORDS: [&str; 8] = [
        "amber", "basalt", "cedar", "dune", "ember", "fjord", "glade", "heath",
    ];
    let w = |k: u32| WORDS[((i * k + k) % 8) as usize];
    format!(
        r#"{{"id":"s{i:05}","name":"item {i}","spec":{{"color":"{}","size":{},"notes":["{}","{} {}"]}},"price":{i}.{:02}}}"#,
        w(3),
        i % 9,
        w(5),
        w(7),
        w(1),
        i % 100
    )
}

#[test]
fn a_database_with_plain_blocks_reads_and_rewrites_into_keyed_blocks() {
    let dir = golden_copy("db-codec3");
    let mut model = expected('d', doc);

    let db = Database::open(dir.path()).unwrap();
    let snap = db.snapshot();
    let old = snap.stats("items");
    assert_eq!(
        old.packed_blocks, 4,
        "the golden database holds 4 plain blocks"
    );
    assert_holds(&snap, &model);

    // New writes over the old blocks, then a compaction that rewrites every block.
    let mut batch = db.batch();
    for i in 1500..1600 {
        let id = format!("d{i:05}");
        batch.put_json("items", &id, doc(i).as_bytes()).unwrap();
        model.insert(id, doc(i));
    }
    batch.delete("items", "d00100").unwrap();
    model.remove("d00100");
    db.commit(batch).unwrap();
    assert_holds(&db.snapshot(), &model);
    db.compact().unwrap();
    let snap = db.snapshot();
    assert_holds(&snap, &model);
    let new = snap.stats("items");
    // Front-coded ids: the same documents (and 100 more) in fewer bytes.
    assert!(
        new.pack_bytes < old.pack_bytes,
        "keyed blocks {} bytes, plain blocks {} bytes",
        new.pack_bytes,
        old.pack_bytes
    );
    drop(snap);
    drop(db);

    let db = Database::open(dir.path()).unwrap();
    assert_holds(&db.snapshot(), &model);
}

#[test]
fn a_database_with_stream_blocks_reads_back_and_repacks() {
    let dir = golden_copy("db-codec6");
    let model = expected('s', streamed_doc);
    let db = Database::open(dir.path()).unwrap();
    let snap = db.snapshot();
    let old = snap.stats("items");
    assert_eq!(
        old.packed_blocks, 6,
        "the golden database holds 6 stream blocks"
    );
    assert_holds(&snap, &model);
    // Documents rebuilt from streams are the documents the input converts to.
    let mut w = stele_doc::DocumentWriter::with_options(stele::write_options());
    for i in (0..1500).filter(|i| ![7, 8].contains(i)).step_by(11) {
        let doc = snap.get("items", &format!("s{i:05}")).unwrap().unwrap();
        assert_eq!(
            doc.bytes(),
            &w.from_json(streamed_doc(i).as_bytes()).unwrap()[..]
        );
    }
    // Repacked without streams and with them: the same documents, smaller as streams.
    drop(snap);
    drop(db);
    let mut sizes = Vec::new();
    for streams in [false, true] {
        let opts = stele::DatabaseOptions::default().pack_streams(streams);
        let db = Database::open_with(dir.path(), opts).unwrap();
        db.compact().unwrap();
        let snap = db.snapshot();
        assert_holds(&snap, &model);
        sizes.push(snap.stats("items").pack_bytes);
    }
    assert!(
        sizes[1] < sizes[0],
        "streams {} bytes, documents {}",
        sizes[1],
        sizes[0]
    );
    let db = Database::open(dir.path()).unwrap();
    assert_holds(&db.snapshot(), &model);
}
