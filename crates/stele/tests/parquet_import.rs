//! `stele::arrow::import_parquet_file`: a Parquet file whose ids ascend is packed while it
//! is read (`ImportReport::packed_while_reading`) and lands what the JSON Lines import of
//! the same rows lands; ids out of order after the sample start it again sorted, nothing
//! lost or doubled; a small file is sorted; a bad row names its record either way; a
//! cancelled import lands nothing.
#![cfg(feature = "parquet")]
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common::arrow::documents;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use stele::arrow::{ArrowOptions, import_parquet_file};
use stele::import::{ImportError, ImportOptions, import_path};
use stele::{Database, DatabaseOptions};
use stele_testkit::table_files;

/// Blocks of 1 KiB: an import streams from 4 * 32 blocks of documents, 128 KiB.
fn small_blocks() -> DatabaseOptions {
    DatabaseOptions::default().pack_block_bytes(1024)
}

/// The id of row key `k`: text that sorts as `k` does.
fn id(k: u64) -> String {
    format!("k{k:07}")
}

/// Row `i` of the files here, the `_id` aside: `(city, n, pad)`.
fn fields(i: usize) -> (String, i64, String) {
    let city = ["Lima", "Oslo", "Pune", "Kyiv", "Bonn"][i % 5];
    (city.to_owned(), i as i64, "x".repeat(i % 37))
}

/// A Parquet file of rows with ids `ids` (`None`: a null id) in that order, in row groups
/// of 4,096 rows: columns `_id`, `city`, `n`, `pad`.
fn parquet_of(dir: &Path, name: &str, ids: &[Option<u64>]) -> PathBuf {
    parquet_in_groups(dir, name, ids, 4096)
}

/// [`parquet_of`] in row groups of `group_rows` rows.
fn parquet_in_groups(dir: &Path, name: &str, ids: &[Option<u64>], group_rows: usize) -> PathBuf {
    let schema = Arc::new(Schema::new(vec![
        Field::new("_id", DataType::Utf8, true),
        Field::new("city", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
        Field::new("pad", DataType::Utf8, true),
    ]));
    let rows: Vec<(String, i64, String)> = (0..ids.len()).map(fields).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter(ids.iter().map(|k| k.map(id)))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.2))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    let path = dir.join(name);
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path
}

/// What an import of `ids` lands: each id's last row, as JSON.
fn model(ids: &[Option<u64>]) -> Vec<(String, serde_json::Value)> {
    let mut by_id = std::collections::BTreeMap::new();
    for (i, k) in ids.iter().enumerate() {
        if let Some(k) = k {
            let (city, n, pad) = fields(i);
            by_id.insert(
                id(*k),
                serde_json::json!({"city": city, "n": n, "pad": pad}),
            );
        }
    }
    by_id.into_iter().collect()
}

fn ascending(rows: u64) -> Vec<Option<u64>> {
    (0..rows).map(|i| Some(i * 3)).collect()
}

/// A file `stele export` wrote (ids ascending) is packed while read, and its documents
/// are those of the JSON Lines import of the same records, id by id; so are those of a
/// sorted import of the same file.
#[test]
fn an_exported_file_is_packed_while_read_and_lands_the_json_lines_documents() {
    let work = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..20_000u64 {
        let (city, n, pad) = fields(i as usize);
        let k = id(i * 3);
        text.push_str(&format!(
            r#"{{"sku":"{k}","city":"{city}","n":{n},"pad":"{pad}","o":{{"x":[1,"a",null]}}}}"#
        ));
        text.push('\n');
    }
    let jsonl = work.path().join("in.jsonl");
    std::fs::write(&jsonl, &text).unwrap();
    let json_db = Database::open_with(work.path().join("json"), small_blocks()).unwrap();
    let opts = ImportOptions::new().id_field("sku");
    import_path(&json_db, "c", &jsonl, &opts, |_| {}).unwrap();
    let pq = work.path().join("c.parquet");
    json_db
        .snapshot()
        .export_parquet_file("c", ArrowOptions::new(), &pq)
        .unwrap();
    let want = documents(&json_db, "c");
    assert_eq!(want.len(), 20_000);

    let db = Database::open_with(work.path().join("pq"), small_blocks()).unwrap();
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.packed_while_reading && !r.restarted_sorted, "{r:?}");
    assert_eq!((r.documents, r.spilled_bytes), (20_000, 0));
    // Read whole: the bytes read are the file's (the CLI's ratio at rest is of them).
    let file_bytes = std::fs::metadata(&pq).unwrap().len();
    assert_eq!(r.bytes_read, file_bytes);
    assert!(documents(&db, "c") == want, "streamed: documents differ");

    // The same file sorted (blocks of 32 KiB: too small a file to stream).
    let sorted = Database::open(work.path().join("sorted")).unwrap();
    let r = import_parquet_file(&sorted, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(!r.packed_while_reading, "{r:?}");
    assert!(documents(&sorted, "c") == want, "sorted: documents differ");
    drop(db);
    let db = Database::open_with(work.path().join("pq"), small_blocks()).unwrap();
    assert!(documents(&db, "c") == want, "streamed, reopened");
}

/// Ids that ascend in the sample but not in the file (two swapped, one repeated, between
/// the sample's places) start the import again, sorted: every row once, the last of a
/// repeated id winning, nothing of the first attempt left after a checkpoint.
#[test]
fn ids_out_of_order_after_the_sample_import_sorted() {
    let work = tempfile::tempdir().unwrap();
    let mut ids = ascending(20_000);
    // The places start every 312 rows and take 128 rows each (8,192 documents of the
    // sample over 64 places): rows 200-300 of each stretch are not read.
    ids.swap(9_600, 9_601);
    ids[18_950] = ids[18_949];
    let pq = parquet_of(work.path(), "nearly.parquet", &ids);
    let dir = work.path().join("db");
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    db.checkpoint().unwrap();
    let before = table_files(&dir);
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.restarted_sorted && !r.packed_while_reading, "{r:?}");
    assert_eq!(r.documents, 19_999);
    assert_eq!(r.bytes_read, std::fs::metadata(&pq).unwrap().len());
    let want = model(&ids);
    assert_eq!(want.len(), 19_999);
    assert!(documents(&db, "c") == want, "documents differ");
    assert_eq!(db.snapshot().count("c"), 19_999);
    drop(db);
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    db.checkpoint().unwrap();
    assert!(documents(&db, "c") == want, "reopened");
    // The landed import's tables only: those the sorted import of the same rows lands
    // (`import_arrow`, which never streams).
    let other = work.path().join("other");
    let sorted = Database::open_with(&other, small_blocks()).unwrap();
    sorted.checkpoint().unwrap();
    let rows = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&pq).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let r = stele::arrow::import_arrow(&sorted, "c", rows, &ImportOptions::new(), |_| {}).unwrap();
    assert!(!r.restarted_sorted && !r.packed_while_reading, "{r:?}");
    drop(sorted);
    let sorted = Database::open_with(&other, small_blocks()).unwrap();
    sorted.checkpoint().unwrap();
    assert!(documents(&sorted, "c") == want);
    // Not the same names: the first attempt handed out a dictionary id, so the landed
    // blocks name the next one. As many tables, none of the first attempt left.
    assert_eq!(table_files(&dir).len(), table_files(&other).len());
    assert_ne!(table_files(&dir), before);
}

/// A file too small for a dictionary is imported sorted, as before.
#[test]
fn a_small_file_is_imported_sorted() {
    let work = tempfile::tempdir().unwrap();
    for rows in [0, 1, 63, 64, 500] {
        let ids = ascending(rows);
        let pq = parquet_of(work.path(), "small.parquet", &ids);
        let db =
            Database::open_with(work.path().join(format!("db{rows}")), small_blocks()).unwrap();
        let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
        assert!(
            !r.packed_while_reading && !r.restarted_sorted,
            "{rows}: {r:?}"
        );
        assert_eq!(r.documents, rows);
        assert_eq!(
            r.bytes_read,
            std::fs::metadata(&pq).unwrap().len(),
            "{rows} rows"
        );
        assert!(documents(&db, "c") == model(&ids), "{rows} rows");
    }
}

/// A row without an id stops the import with its record number, streamed or sorted,
/// before anything landed; skipped, the rest lands.
#[test]
fn a_bad_row_is_reported_with_its_record_in_both_modes() {
    let work = tempfile::tempdir().unwrap();
    let mut ids = ascending(20_000);
    ids[12_345] = None;
    let pq = parquet_of(work.path(), "bad.parquet", &ids);
    for (name, options) in [
        ("streamed", small_blocks()),
        ("sorted", DatabaseOptions::default()),
    ] {
        let dir = work.path().join(name);
        let db = Database::open_with(&dir, options.clone()).unwrap();
        db.checkpoint().unwrap();
        let before = table_files(&dir);
        let err = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap_err();
        match &err {
            ImportError::BadRecord(bad) => {
                assert_eq!(bad.record, 12_346, "{name}: {err}");
                assert!(bad.reason.contains("no id"), "{name}: {err}");
            }
            other => panic!("{name}: {other}"),
        }
        assert_eq!(db.snapshot().count("c"), 0, "{name}");
        drop(db);
        let db = Database::open_with(&dir, options).unwrap();
        assert_eq!(
            table_files(&dir),
            before,
            "{name}: tables of the failed import left"
        );
        let opts = ImportOptions::new().skip_bad(true);
        let r = import_parquet_file(&db, "c", &pq, &opts, |_| {}).unwrap();
        assert_eq!(r.packed_while_reading, name == "streamed", "{name}: {r:?}");
        assert_eq!((r.documents, r.skipped), (19_999, 1), "{name}");
        assert_eq!(r.bad.first().map(|b| b.record), Some(12_346), "{name}");
        assert!(documents(&db, "c") == model(&ids), "{name}");
    }
}

/// Cancelled while a streamed import reads: nothing lands, and no table of it survives
/// a reopen.
#[test]
fn a_cancelled_streamed_import_lands_nothing() {
    let work = tempfile::tempdir().unwrap();
    let pq = parquet_of(work.path(), "c.parquet", &ascending(60_000));
    let dir = work.path().join("db");
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    db.checkpoint().unwrap();
    let before = table_files(&dir);
    let cancel = Arc::new(AtomicBool::new(false));
    let opts = ImportOptions::new().cancel_flag(Arc::clone(&cancel));
    let mut calls = 0;
    let err = import_parquet_file(&db, "c", &pq, &opts, |p| {
        calls += 1;
        // After a few slices: blocks were packed already.
        if p.documents >= 30_000 {
            cancel.store(true, Ordering::Relaxed);
        }
    })
    .unwrap_err();
    assert!(matches!(err, ImportError::Cancelled), "{err}");
    assert!(calls > 1);
    assert_eq!(db.snapshot().count("c"), 0);
    let db = reopened_as_before(db, &dir, &before);
    // Not cancelled, the same file streams.
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.packed_while_reading, "{r:?}");
    assert_eq!(r.documents, 60_000);
}

/// A file that is not Parquet is a clear error naming it.
#[test]
fn a_file_that_is_not_parquet_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("x.parquet");
    std::fs::write(&path, "{\"a\":1}\n").unwrap();
    let db = Database::open(work.path().join("db")).unwrap();
    let err = import_parquet_file(&db, "c", &path, &ImportOptions::new(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("not a Parquet file"), "{err}");
    assert!(err.to_string().contains("x.parquet"), "{err}");
}

/// A file of many row groups, of a size that is no multiple of a batch's (the import's
/// decoders each read every other group, handed on in the file's order): streamed and
/// sorted, every row lands as the model says, in order.
#[test]
fn a_file_of_many_row_groups_lands_every_row_in_order() {
    let work = tempfile::tempdir().unwrap();
    let ids = ascending(50_000);
    let pq = parquet_in_groups(work.path(), "many.parquet", &ids, 777);
    let groups = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&pq).unwrap(),
    )
    .unwrap()
    .metadata()
    .num_row_groups();
    assert_eq!(groups, 65);
    let want = model(&ids);
    let db = Database::open_with(work.path().join("streamed"), small_blocks()).unwrap();
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.packed_while_reading && !r.restarted_sorted, "{r:?}");
    assert_eq!(r.documents, 50_000);
    assert!(documents(&db, "c") == want, "streamed: documents differ");
    // Ids reversed: no streaming; the sorted import of the same rows.
    let reversed: Vec<Option<u64>> = ids.iter().rev().copied().collect();
    let pq = parquet_in_groups(work.path(), "reversed.parquet", &reversed, 777);
    let db = Database::open_with(work.path().join("sorted"), small_blocks()).unwrap();
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(!r.packed_while_reading && !r.restarted_sorted, "{r:?}");
    assert!(
        documents(&db, "c") == model(&reversed),
        "sorted: documents differ"
    );
}

/// An id out of order exactly where one row group ends and the next begins (rows 16,383
/// and 16,384 swapped, between two of the sample's places): found by the streamed import,
/// which starts again sorted; every row lands once.
#[test]
fn an_id_out_of_order_at_a_row_group_boundary_restarts_sorted() {
    let work = tempfile::tempdir().unwrap();
    let mut ids = ascending(20_000);
    // Places every 312 rows, 128 rows each: place 52 is rows 16,224-16,351, place 53
    // starts at 16,536.
    ids.swap(16_383, 16_384);
    let pq = parquet_of(work.path(), "boundary.parquet", &ids);
    let dir = work.path().join("db");
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.restarted_sorted && !r.packed_while_reading, "{r:?}");
    assert_eq!(r.documents, 20_000);
    assert!(documents(&db, "c") == model(&ids), "documents differ");
    drop(db);
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    assert!(documents(&db, "c") == model(&ids), "reopened");
}

/// The database in `dir` closed and opened again after a cancelled import: nothing of
/// collection `c` landed, and its tables are the files `before` named.
fn reopened_as_before(db: Database, dir: &Path, before: &[String]) -> Database {
    drop(db);
    let db = Database::open_with(dir, small_blocks()).unwrap();
    assert_eq!(db.snapshot().count("c"), 0);
    assert_eq!(
        table_files(dir),
        before,
        "tables of the cancelled import left"
    );
    db
}

/// Cancelled at the first progress report, while the decoders are ahead of the import
/// with their channels full: the import stops (no decoder left waiting), nothing lands,
/// and the file then imports whole.
#[test]
fn a_cancelled_import_of_many_row_groups_stops_its_decoders() {
    let work = tempfile::tempdir().unwrap();
    let ids = ascending(60_000);
    let pq = parquet_in_groups(work.path(), "c.parquet", &ids, 500);
    let dir = work.path().join("db");
    let db = Database::open_with(&dir, small_blocks()).unwrap();
    db.checkpoint().unwrap();
    let before = table_files(&dir);
    // 32 KiB blocks: a file this small is imported sorted.
    let sorted = Database::open(work.path().join("sorted")).unwrap();
    for target in [&db, &sorted] {
        let cancel = Arc::new(AtomicBool::new(false));
        let opts = ImportOptions::new().cancel_flag(Arc::clone(&cancel));
        let err = import_parquet_file(target, "c", &pq, &opts, |_| {
            cancel.store(true, Ordering::Relaxed);
        })
        .unwrap_err();
        assert!(matches!(err, ImportError::Cancelled), "{err}");
        assert_eq!(target.snapshot().count("c"), 0);
    }
    let db = reopened_as_before(db, &dir, &before);
    let r = import_parquet_file(&db, "c", &pq, &ImportOptions::new(), |_| {}).unwrap();
    assert!(r.packed_while_reading, "{r:?}");
    assert!(documents(&db, "c") == model(&ids));
}
