//! Imports packed while they are read (`ImportReport::packed_while_reading`): a JSON Lines
//! file of numbered records, big enough for a dictionary. They must land what the sorted
//! import of the same input lands, within no more memory than the blocks in flight, all or
//! nothing when a record is bad or the disk fails at any step, and merge into a collection
//! that holds documents.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use stele::import::{ImportError, ImportOptions, import_path, import_reader};
use stele::{Database, DatabaseOptions};
use stele_testkit::faults::{Faults, FaultyStorage};
use stele_testkit::{copy_dir, table_files};

type Model = BTreeMap<String, String>;

/// A record of JSON Lines, number `n` (the same JSON as the store writes it back).
fn record(n: u64) -> String {
    let city = ["Lima", "Oslo", "Pune", "Kyiv", "Bonn"][(n % 5) as usize];
    let pad = "x".repeat((n % 37) as usize);
    format!(r#"{{"city":"{city}","n":{n},"pad":"{pad}"}}"#)
}

/// A file of `records` records and the model of their numbered import.
fn file_of(dir: &Path, records: u64) -> (std::path::PathBuf, String, Model) {
    let mut text = String::new();
    let mut model = Model::new();
    for n in 1..=records {
        let r = record(n);
        text.push_str(&r);
        text.push('\n');
        model.insert(format!("{n:010}"), r);
    }
    let path = dir.join("in.jsonl");
    std::fs::write(&path, &text).unwrap();
    (path, text, model)
}

fn check(db: &Database, coll: &str, model: &Model, context: &str) {
    let got = common::content(&db.snapshot(), coll);
    assert_eq!(got.len(), model.len(), "{context}");
    assert!(
        got == *model,
        "{context}: the documents differ from the model"
    );
    assert_eq!(db.snapshot().count(coll), model.len() as u64, "{context}");
}

/// Blocks of 1 KiB: a streamed import needs 4 * 32 blocks of documents, 128 KiB.
fn small_blocks() -> DatabaseOptions {
    DatabaseOptions::default().pack_block_bytes(1024)
}

/// A file bigger than the import's memory budget: packed while read, nothing spilled, the
/// same documents as the sorted import of the same text (which spills), and within a few
/// percent of its bytes (its dictionary trained on a sample taken before reading, not a
/// reservoir of the documents read).
#[test]
fn a_numbered_file_is_packed_while_read_and_lands_what_a_sorted_import_lands() {
    let work = tempfile::tempdir().unwrap();
    // About 6 MB of JSON for a budget of 4 MiB.
    let (path, text, model) = file_of(work.path(), 120_000);
    assert!(text.len() > 5 << 20);
    let opts = ImportOptions::new().memory_budget_bytes(4 << 20);

    let streamed_dir = work.path().join("streamed");
    let db = Database::open(&streamed_dir).unwrap();
    db.create_index("c", "by_city", &["city"]).unwrap();
    let streamed = import_path(&db, "c", &path, &opts, |_| {}).unwrap();
    assert!(streamed.packed_while_reading, "{streamed:?}");
    assert_eq!(streamed.spilled_bytes, 0);
    assert_eq!(streamed.documents, 120_000);
    assert_eq!(streamed.bytes_read, text.len() as u64);
    check(&db, "c", &model, "streamed");
    let lima = db
        .snapshot()
        .query(&stele::Query::new("c").eq("city", "\"Lima\""))
        .unwrap();
    assert_eq!(lima.rows.len(), 24_000, "the index, built at the switch");

    let sorted_dir = work.path().join("sorted");
    let sorted_db = Database::open(&sorted_dir).unwrap();
    let sorted =
        import_reader(&sorted_db, "c", "in", text.as_bytes(), None, &opts, |_| {}).unwrap();
    assert!(!sorted.packed_while_reading);
    assert!(sorted.spilled_bytes > 0, "{sorted:?}");
    check(&sorted_db, "c", &model, "sorted");
    let ratio = streamed.packed_bytes as f64 / sorted.packed_bytes as f64;
    assert!(
        (0.9..1.1).contains(&ratio),
        "{streamed:?} against {sorted:?}"
    );

    drop(db);
    let db = Database::open(&streamed_dir).unwrap();
    check(&db, "c", &model, "streamed, reopened");
}

/// Too small a file, or ids from a field that do not ascend: sorted as before. Integer ids
/// from a field ascend as numbers.
#[test]
fn only_big_files_of_ascending_ids_are_packed_while_read() {
    let work = tempfile::tempdir().unwrap();
    let (path, _, model) = file_of(work.path(), 5_000);
    let db = Database::open_with(work.path().join("db"), small_blocks()).unwrap();
    let r = import_path(&db, "a", &path, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.packed_while_reading, "{r:?}");
    check(&db, "a", &model, "numbered");
    // Integer ids are stored as keys that sort as the numbers: 1, 2, .., 10 ascend.
    let r = import_path(&db, "b", &path, &ImportOptions::new().id_field("n"), |_| {}).unwrap();
    assert!(r.packed_while_reading, "{r:?}");
    assert_eq!(r.documents, 5_000);
    let ids: Vec<String> = db
        .snapshot()
        .ids("b")
        .take(11)
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        ids,
        ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]
    );
    let r = import_path(
        &db,
        "d",
        &path,
        &ImportOptions::new().id_field("city"),
        |_| {},
    )
    .unwrap();
    assert!(
        !r.packed_while_reading,
        "city names repeat: they do not ascend"
    );
    assert_eq!((r.documents, db.snapshot().count("d")), (5, 5));
    let (small, _, _) = file_of(work.path(), 100);
    let r = import_path(&db, "c", &small, &ImportOptions::new(), |_| {}).unwrap();
    assert!(!r.packed_while_reading, "too small for a dictionary");
}

/// JSON Lines of records with ids `ids` in that order (`{"id":"k..","n":i}`), and the
/// model of their import by id (the last of equal ids winning).
fn file_with_ids(dir: &Path, ids: &[u64]) -> (std::path::PathBuf, Model) {
    let mut text = String::new();
    let mut model = Model::new();
    for (i, id) in ids.iter().enumerate() {
        let json = format!(
            r#"{{"id":"k{id:07}","n":{i},"pad":"{}"}}"#,
            "z".repeat(i % 29)
        );
        text.push_str(&json);
        text.push('\n');
        model.insert(format!("k{id:07}"), json);
    }
    let path = dir.join("ids.jsonl");
    std::fs::write(&path, &text).unwrap();
    (path, model)
}

/// A file sorted by its id field is packed while read; one whose sample ascends but
/// whose ids do not (a record out of place, a repeated id) is started again and sorted,
/// landing the same as a sorted import; one in no order is sorted from the start.
#[test]
fn ids_from_a_field_are_packed_while_read_when_the_file_is_sorted_by_them() {
    let work = tempfile::tempdir().unwrap();
    let db = Database::open_with(work.path().join("db"), small_blocks()).unwrap();
    let opts = ImportOptions::new().id_field("id");
    let sorted: Vec<u64> = (0..6_000).map(|i| i * 3).collect();
    let (path, model) = file_with_ids(work.path(), &sorted);
    let r = import_path(&db, "sorted", &path, &opts, |_| {}).unwrap();
    assert!(r.packed_while_reading, "{r:?}");
    check(&db, "sorted", &model, "sorted by id");

    // Two ids swapped halfway, and an id repeated near the end (the last one wins): each
    // between two of the sample's windows (64 windows of 16 lines, one every ~94 lines).
    let mut nearly = sorted.clone();
    nearly.swap(3_050, 3_051);
    nearly[5_951] = nearly[5_950];
    let (path, model) = file_with_ids(work.path(), &nearly);
    let mut bytes_seen = Vec::new();
    let r = import_path(&db, "nearly", &path, &opts, |p| {
        bytes_seen.push(p.bytes_read)
    })
    .unwrap();
    assert!(!r.packed_while_reading && r.restarted_sorted, "{r:?}");
    assert_eq!(r.documents, 5_999);
    check(&db, "nearly", &model, "nearly sorted by id");
    assert_eq!(r.bytes_read, std::fs::metadata(&path).unwrap().len());
    let nothing_landed_twice = db.snapshot().count("nearly");
    assert_eq!(nothing_landed_twice, 5_999);

    let shuffled: Vec<u64> = (0..6_000).map(|i| (i * 7_919) % 6_000).collect();
    let (path, model) = file_with_ids(work.path(), &shuffled);
    let r = import_path(&db, "shuffled", &path, &opts, |_| {}).unwrap();
    assert!(!r.packed_while_reading && !r.restarted_sorted, "{r:?}");
    check(&db, "shuffled", &model, "in no order");
    // Reopened: the tables of the import started again went with a checkpoint.
    drop(db);
    let db = Database::open_with(work.path().join("db"), small_blocks()).unwrap();
    db.checkpoint().unwrap();
    check(
        &db,
        "nearly",
        &file_with_ids(work.path(), &nearly).1,
        "reopened",
    );
}

/// A bad record stops a streamed import with its line, before anything landed, and no
/// table of it survives a reopen; skipped, it uses up its number.
#[test]
fn a_bad_record_in_a_streamed_import() {
    let work = tempfile::tempdir().unwrap();
    let (path, mut text, mut model) = file_of(work.path(), 5_000);
    // A record cut short before record 4,000, which becomes the 4,001st of 5,001.
    let at = text.match_indices('\n').nth(3_998).unwrap().0 + 1;
    text.insert_str(at, "{\"city\":\"Lima\",\n");
    std::fs::write(&path, &text).unwrap();
    let dir = work.path().join("db");
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    let before = table_files(&dir);
    let err = import_path(&db, "c", &path, &ImportOptions::new(), |_| {}).unwrap_err();
    match &err {
        ImportError::BadRecord(bad) => {
            assert_eq!((bad.line, bad.record), (4_000, 4_000), "{err}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(db.snapshot().count("c"), 0);
    drop(db);
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    assert_eq!(
        table_files(&dir),
        before,
        "tables of the failed import left"
    );
    let r = import_path(
        &db,
        "c",
        &path,
        &ImportOptions::new().skip_bad(true),
        |_| {},
    )
    .unwrap();
    assert!(r.packed_while_reading && r.skipped == 1, "{r:?}");
    // Records after the bad one are numbered one up.
    let tail: Vec<(String, String)> = model
        .split_off(&format!("{:010}", 4_000))
        .into_iter()
        .collect();
    for (id, json) in tail {
        let n: u64 = id.parse().unwrap();
        model.insert(format!("{:010}", n + 1), json);
    }
    check(&db, "c", &model, "bad record skipped");
}

/// Into a collection that holds documents: merged at once, the imported ids replacing
/// the ones there.
#[test]
fn a_streamed_import_merges_into_a_collection_with_documents() {
    let work = tempfile::tempdir().unwrap();
    let (path, _, mut model) = file_of(work.path(), 5_000);
    let db = Database::open_with(work.path().join("db"), small_blocks()).unwrap();
    let mut batch = db.batch();
    for (id, json) in [("0000000007", r#"{"old":1}"#), ("zzz", r#"{"old":2}"#)] {
        batch.put_json("c", id, json.as_bytes()).unwrap();
    }
    db.commit(batch).unwrap();
    model.insert("zzz".into(), r#"{"old":2}"#.into());
    let r = import_path(&db, "c", &path, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.packed_while_reading && r.merged, "{r:?}");
    check(&db, "c", &model, "merged");
}

/// The disk failing at any storage step of a streamed import: all of it or none, and no
/// table of it left after a reopen.
#[test]
fn a_disk_failing_at_any_step_of_a_streamed_import_lands_all_or_nothing() {
    let work = tempfile::tempdir().unwrap();
    let (path, _, model) = file_of(work.path(), 3_000);
    let base = work.path().join("base");
    Database::open_with(&base, small_blocks())
        .unwrap()
        .checkpoint()
        .unwrap();
    let before = table_files(&base);
    let (mut failed, mut landed) = (0, 0);
    for n in 0.. {
        let dir = work.path().join(format!("step{n}"));
        copy_dir(&base, &dir);
        let faults = Faults::new().fail_at(n).disarmed().shared();
        let db = Database::open_with(
            &dir,
            small_blocks().storage(FaultyStorage::with_faults(&faults)),
        )
        .unwrap();
        faults.arm();
        let result = import_path(&db, "c", &path, &ImportOptions::new(), |_| {});
        faults.disarm();
        let fired = faults.fired() > 0;
        let want = match result {
            Ok(r) => {
                assert!(r.packed_while_reading, "{r:?}");
                landed += 1;
                model.clone()
            }
            Err(err) => {
                assert!(matches!(err, ImportError::Database(_)), "step {n}: {err}");
                failed += 1;
                Model::new()
            }
        };
        check(&db, "c", &want, &format!("step {n}, same process"));
        drop(db);
        let db = Database::open_with(&dir, small_blocks()).unwrap();
        check(&db, "c", &want, &format!("step {n}, reopened"));
        if want.is_empty() {
            assert_eq!(table_files(&dir), before, "step {n}: tables left");
        }
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
        if !fired {
            break;
        }
    }
    assert!(failed > 10, "only {failed} storage steps failed the import");
    assert!(landed > 0);
}

/// A FIFO (no seeking, no size) is imported as it comes, sorted as before: neither sampled
/// before it is read nor read twice.
#[cfg(unix)]
#[test]
fn a_fifo_is_imported_without_seeking() {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let work = tempfile::tempdir().unwrap();
    let (_, text, model) = file_of(work.path(), 5_000);
    let fifo = work.path().join("lines.fifo");
    let c_path = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c_path` is a valid NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let db = Database::open_with(work.path().join("db"), small_blocks()).unwrap();
    let r = import_path(&db, "c", &fifo, &ImportOptions::new(), |_| {}).unwrap();
    writer.join().unwrap();
    assert!(!r.packed_while_reading && !r.restarted_sorted, "{r:?}");
    check(&db, "c", &model, "from a FIFO");
}
