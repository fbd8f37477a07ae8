//! Bulk imports (the default into packed collections) against a model: into empty and
//! non-empty collections (ids replaced, deletions kept, the last of equal ids in the input
//! winning), indexes right after the switch, a budget smaller than the input, and a disk
//! failing at every step leaving the database as it was, with no table of the import left
//! after reopening.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use stele::import::{ImportError, ImportOptions, import_reader};
use stele::{Database, DatabaseOptions, Query};
use stele_testkit::faults::{Faults, FaultyStorage};
use stele_testkit::{copy_dir, table_files};

type Model = BTreeMap<String, String>;

const CITIES: [&str; 5] = ["Lima", "Oslo", "Pune", "Kyiv", "Bonn"];

/// A document of id `id`, its fields from `seed`; its JSON as the store writes it back.
fn doc(id: &str, seed: u64) -> String {
    let city = CITIES[(seed % 5) as usize];
    let pad = "x".repeat((seed % 37) as usize);
    format!(r#"{{"id":"{id}","city":"{city}","n":{seed},"pad":"{pad}"}}"#)
}

/// A SplitMix64 stream: deterministic inputs without a dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Checks `coll` against `model`: documents, count, one get per document, and the index
/// on `city` (an index scan giving the model's ids for each city).
fn check(db: &Database, coll: &str, model: &Model, context: &str) {
    let got = common::content(&db.snapshot(), coll);
    if got != *model {
        let differ: Vec<_> = got
            .keys()
            .chain(model.keys())
            .filter(|k| got.get(*k) != model.get(*k))
            .take(3)
            .map(|k| (k, got.get(k), model.get(k)))
            .collect();
        panic!(
            "{context}: {} documents, the model {}; first differences (id, got, want): {differ:?}",
            got.len(),
            model.len()
        );
    }
    let snap = db.snapshot();
    assert_eq!(snap.count(coll), model.len() as u64, "{context}");
    for (id, json) in model {
        let got = snap.get(coll, id).unwrap().unwrap().to_json().unwrap();
        assert_eq!(&got, json, "{context}: {id}");
    }
    for city in CITIES {
        let out = snap
            .query(&Query::new(coll).eq("city", &format!("\"{city}\"")))
            .unwrap();
        assert!(out.plan.index().is_some(), "{}", out.plan);
        let mut got: Vec<String> = out.rows.into_iter().map(|r| r.id).collect();
        got.sort();
        let want: Vec<String> = model
            .iter()
            .filter(|(_, j)| j.contains(&format!("\"city\":\"{city}\"")))
            .map(|(id, _)| id.clone())
            .collect();
        assert_eq!(got, want, "{context}: index on city, {city}");
    }
}

/// JSON Lines of `n` records with ids drawn from `ids` distinct ones (so some repeat),
/// applied to `model` as the import must apply them (the last of equal ids wins).
fn input(rng: &mut u64, n: usize, ids: u64, model: &mut Model) -> String {
    let mut text = String::new();
    for _ in 0..n {
        let id = format!("k{:05}", next(rng) % ids);
        let d = doc(&id, next(rng) % 1000);
        text.push_str(&d);
        text.push('\n');
        model.insert(id, d);
    }
    text
}

fn small_blocks() -> DatabaseOptions {
    // Blocks of 1 KiB: an import of a few hundred documents makes dozens of them.
    DatabaseOptions::default().pack_block_bytes(1024)
}

#[test]
fn bulk_imports_match_the_model_into_empty_and_non_empty_collections() {
    for (round, settle) in ["log", "checkpoint", "compact"].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open_with(dir.path(), small_blocks()).unwrap();
        db.create_index("c", "by_city", &["city"]).unwrap();
        let mut rng = round as u64;
        let mut model = Model::new();
        // Into an empty collection (with duplicates in the input).
        let text = input(&mut rng, 800, 600, &mut model);
        let opts = ImportOptions::new().id_field("id");
        let report = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).unwrap();
        assert_eq!(report.documents, model.len() as u64);
        assert!(!report.merged && report.packed_bytes > 0);
        check(&db, "c", &model, &format!("{settle}: first import"));
        // Writes and deletions after it, left in the log, checkpointed or compacted.
        let mut batch = db.batch();
        for i in 0..200u64 {
            let id = format!("k{:05}", next(&mut rng) % 900);
            if i % 3 == 0 {
                batch.delete("c", &id).unwrap();
                model.remove(&id);
            } else {
                let d = doc(&id, 5000 + i);
                batch.put_json("c", &id, d.as_bytes()).unwrap();
                model.insert(id, d);
            }
        }
        db.commit(batch).unwrap();
        match settle {
            "checkpoint" => db.checkpoint().unwrap(),
            "compact" => db.compact().unwrap(),
            _ => {}
        }
        // Into the non-empty collection: replaces the ids it brings, keeps the rest (and
        // the deletions of ids it does not bring).
        let text = input(&mut rng, 500, 1200, &mut model);
        let report = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).unwrap();
        assert!(report.merged, "{settle}");
        assert_eq!(report.collection_documents, model.len() as u64);
        check(&db, "c", &model, &format!("{settle}: second import"));
        // And writes after it, then a reopen.
        let mut batch = db.batch();
        let d = doc("k00001", 77);
        batch.put_json("c", "k00001", d.as_bytes()).unwrap();
        model.insert("k00001".into(), d);
        batch.delete("c", "k00002").unwrap();
        model.remove("k00002");
        db.commit(batch).unwrap();
        check(&db, "c", &model, &format!("{settle}: after writes"));
        drop(db);
        let db = Database::open_with(dir.path(), small_blocks()).unwrap();
        check(&db, "c", &model, &format!("{settle}: reopened"));
        db.compact().unwrap();
        check(&db, "c", &model, &format!("{settle}: compacted"));
    }
}

#[test]
fn an_input_bigger_than_the_budget_spills_and_lands_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.create_index("c", "by_city", &["city"]).unwrap();
    let mut rng = 7;
    let mut model = Model::new();
    // About 9 MB of documents for a 4 MiB budget.
    let text = input(&mut rng, 60_000, 1 << 40, &mut model);
    let opts = ImportOptions::new()
        .id_field("id")
        .memory_budget_bytes(4 << 20);
    let report = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).unwrap();
    assert!(report.spilled_bytes > 0, "{report:?}");
    assert_eq!(report.documents, model.len() as u64);
    check(&db, "c", &model, "spilled");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".stele-sort-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_disk_failing_at_any_step_of_a_bulk_import_lands_all_or_nothing() {
    let base = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let mut rng = 11;
    {
        let db = Database::open_with(base.path(), small_blocks()).unwrap();
        db.create_index("c", "by_city", &["city"]).unwrap();
        let text = input(&mut rng, 300, 400, &mut model);
        let opts = ImportOptions::new().id_field("id");
        import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).unwrap();
        db.checkpoint().unwrap();
    }
    let before = table_files(base.path());
    let mut next_model = model.clone();
    let text = input(&mut rng, 300, 800, &mut next_model);
    let opts = ImportOptions::new().id_field("id");
    let (mut failed, mut landed) = (0, 0);
    for n in 0.. {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("db");
        copy_dir(base.path(), &dir);
        let faults = Faults::new().fail_at(n).disarmed().shared();
        let db = Database::open_with(
            &dir,
            small_blocks().storage(FaultyStorage::with_faults(&faults)),
        )
        .unwrap();
        faults.arm();
        let result = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {});
        faults.disarm();
        let fired = faults.fired() > 0;
        let want = match result {
            Ok(_) => {
                // Past the manifest's rename (a failure while removing the old log or
                // unused tables), or past the import's last storage operation.
                landed += 1;
                &next_model
            }
            Err(err) => {
                assert!(matches!(err, ImportError::Database(_)), "step {n}: {err}");
                failed += 1;
                &model
            }
        };
        check(&db, "c", want, &format!("step {n}, same process"));
        drop(db);
        let db = Database::open_with(&dir, small_blocks()).unwrap();
        check(&db, "c", want, &format!("step {n}, reopened"));
        if std::ptr::eq(want, &model) {
            assert_eq!(
                table_files(&dir),
                before,
                "step {n}: tables of the failed import left after reopening"
            );
        }
        if !fired {
            break;
        }
    }
    assert!(failed > 10, "only {failed} storage steps failed the import");
    eprintln!("{failed} steps failed the import, {landed} landed it");
}

/// Bytes of every file under `dir`, as the import benchmark counts a database at rest.
fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                folder_bytes(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

/// A small import lands smaller than its JSON once closed: the fixed bytes of a database
/// (lock file, manifest, a table's footer and index, the dictionary) stay below what
/// compression saves, from one ordinary document of about 1 KB to a few hundred. (One
/// document that barely compresses, such as a 560-byte token, does not: those fixed bytes
/// are about 260.)
#[test]
fn a_small_import_at_rest_is_smaller_than_its_json() {
    for n in [1u64, 10, 300] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let text: String = (0..n)
            .map(|i| {
                format!(
                    r#"{{"id":"user-{i:05}","name":"User number {i}","email":"user{i}@example.org","address":{{"street":"{} Main Street","city":"{}","zip":"{:05}"}},"roles":["reader","writer"],"created":"2026-11-{:02}T10:{:02}:00Z","active":{},"score":{}.5,"bio":"{}"}}"#,
                    i * 7 + 1,
                    CITIES[(i % 5) as usize],
                    10_000 + i * 13,
                    i % 28 + 1,
                    i % 60,
                    i % 2 == 0,
                    i * 3,
                    "Writes about storage engines, compression and the cost of bytes at rest. "
                        .repeat(8)
                ) + "\n"
            })
            .collect();
        let opts = ImportOptions::new().id_field("id");
        let report = import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).unwrap();
        assert_eq!(report.documents, n);
        db.close().unwrap();
        let at_rest = folder_bytes(dir.path());
        assert!(
            at_rest < text.len() as u64,
            "{n} documents: {at_rest} bytes at rest for {} of JSON",
            text.len()
        );
        let db = Database::open(dir.path()).unwrap();
        assert_eq!(db.snapshot().count("c"), n);
    }
}

/// An import of fewer bytes than 8 blocks is packed without a dictionary (none trained)
/// and reads back whole, after a close and a reopen too; one of more blocks trains one.
#[test]
fn a_small_import_lands_without_a_dictionary_and_a_bigger_one_with_one() {
    for (docs, block_bytes, dictionary) in [
        (100, 1024, false),
        (120, 32 << 10, false),
        (800, 1024, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let opts = DatabaseOptions::default().pack_block_bytes(block_bytes);
        let db = Database::open_with(dir.path(), opts.clone()).unwrap();
        db.create_index("c", "by_city", &["city"]).unwrap();
        let mut rng = docs as u64;
        let mut model = Model::new();
        let text = input(&mut rng, docs, 100_000, &mut model);
        let context = format!("{docs} documents in blocks of {block_bytes} bytes");
        assert!(
            (text.len() < 8 * block_bytes) != dictionary,
            "{context}: {} bytes of JSON",
            text.len()
        );
        let imp = ImportOptions::new().id_field("id");
        import_reader(&db, "c", "in", text.as_bytes(), None, &imp, |_| {}).unwrap();
        assert_eq!(db.snapshot().dictionaries("c") > 0, dictionary, "{context}");
        check(&db, "c", &model, &context);
        db.close().unwrap();
        let db = Database::open_with(dir.path(), opts).unwrap();
        assert_eq!(db.snapshot().dictionaries("c") > 0, dictionary, "{context}");
        check(&db, "c", &model, &format!("{context}, reopened"));
    }
}
