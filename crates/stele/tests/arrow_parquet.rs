//! `Snapshot::export_parquet`: a Parquet file of the batches `scan_arrow` reads (its row
//! groups cut at `PARQUET_ROW_GROUP_ROWS`), the same file whatever the output; a value that
//! does not fit a given schema is the scan's misfit, and a failing output a Parquet error.
#![cfg(feature = "parquet")]
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use crate::common;
use arrow_schema::{DataType, Field, Schema};
use common::arrow::*;
use std::sync::Arc;
use stele::arrow::{ArrowOptions, PARQUET_ROW_GROUP_ROWS};
use stele::{Database, Error};

fn numbered(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                r#"{{"n":{i},"o":{{"x":"ü{i}"}},"pad":"{}"}}"#,
                "p".repeat(40)
            )
        })
        .collect()
}

/// `export_parquet` of `coll` into memory: the rows and the file's bytes (its magic bytes
/// checked; pyarrow reads such files back in the Python tests, `test_parquet.py`).
fn parquet(db: &Database, coll: &str, opts: ArrowOptions) -> (u64, Vec<u8>) {
    let mut out = Vec::new();
    let rows = db.snapshot().export_parquet(coll, opts, &mut out).unwrap();
    assert!(
        out.starts_with(b"PAR1") && out.ends_with(b"PAR1"),
        "a Parquet file"
    );
    (rows, out)
}

#[test]
fn the_file_holds_every_row_and_is_the_same_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let opts = stele::DatabaseOptions::default().pack_block_bytes(4096);
    let db = Database::open_with(dir.path(), opts).unwrap();
    let n = PARQUET_ROW_GROUP_ROWS * 2 + 100;
    import(&db, "c", &numbered(n));
    let (rows, a) = parquet(&db, "c", ArrowOptions::new());
    assert_eq!(rows, n as u64);
    let (_, b) = parquet(&db, "c", ArrowOptions::new());
    assert!(a == b, "two exports of one snapshot write the same bytes");
    // Named fields and a filter: fewer rows, a smaller file.
    let kept = stele::Filter::parse(r#"{"n": {"$lt": 1000}}"#).unwrap();
    let some = ArrowOptions::new().fields(&["_id", "o.x"]).filter(kept);
    let (rows, small) = parquet(&db, "c", some);
    assert_eq!(rows, 1000);
    assert!(
        small.len() < a.len() / 4,
        "{} against {}",
        small.len(),
        a.len()
    );
    // Nothing kept: an empty file, still a Parquet file.
    let none = stele::Filter::parse(r#"{"n": -1}"#).unwrap();
    assert_eq!(parquet(&db, "c", ArrowOptions::new().filter(none)).0, 0);
}

#[test]
fn a_misfit_or_a_failing_output_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    import(&db, "c", &numbered(50));
    let given = Arc::new(Schema::new(vec![
        Field::new("_id", DataType::Utf8, false),
        Field::new("o", DataType::Int64, true),
    ]));
    let mut out = Vec::new();
    let err = db
        .snapshot()
        .export_parquet("c", ArrowOptions::new().schema(given), &mut out)
        .unwrap_err();
    assert!(
        matches!(err, Error::ArrowMisfit { ref field, .. } if field == "o"),
        "{err}"
    );
    /// An output that fails after its first bytes.
    struct Full(usize);
    impl std::io::Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 < buf.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let err = db
        .snapshot()
        .export_parquet("c", ArrowOptions::new(), Full(10))
        .unwrap_err();
    assert!(matches!(err, Error::Parquet { .. }), "{err:?}");
    assert!(err.to_string().contains("disk full"), "{err}");
}

#[test]
fn a_file_export_is_whole_or_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    import(&db, "c", &numbered(300));
    let path = dir.path().join("out.parquet");
    let snap = db.snapshot();
    let rows = snap
        .export_parquet_file("c", ArrowOptions::new(), &path)
        .unwrap();
    assert_eq!(rows, 300);
    let (_, in_memory) = parquet(&db, "c", ArrowOptions::new());
    let on_disk = std::fs::read(&path).unwrap();
    assert!(on_disk == in_memory, "the file holds the export's bytes");

    // A failing export (a field path that does not parse) leaves the file as it was and
    // no temporary file beside it.
    let bad = ArrowOptions::new().fields(&["a..b"]);
    assert!(snap.export_parquet_file("c", bad, &path).is_err());
    assert!(
        std::fs::read(&path).unwrap() == on_disk,
        "the old file is kept"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "only the database and the file: {names:?}");

    // A folder that does not exist: the error names the temporary file's path.
    let missing = dir.path().join("no/such/folder/x.parquet");
    let err = snap
        .export_parquet_file("c", ArrowOptions::new(), &missing)
        .unwrap_err();
    assert!(matches!(&err, Error::Io { op: "creating", .. }), "{err:?}");
}
