//! `stele export --format parquet|csv` (and `--fields` / `--filter`): the collection read
//! as Arrow record batches (`Snapshot::scan_arrow`), written a batch at a time, so memory
//! stays bounded by the batch whatever the collection's size.

use std::io::Write;

use anyhow::{Result, bail};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::DataType;
use stele::arrow::ArrowOptions;
use stele::{Filter, Snapshot};

/// Rows per batch of a CSV export: as many as a Parquet export's row group (the reasons are
/// there).
const BATCH_ROWS: usize = stele::arrow::PARQUET_ROW_GROUP_ROWS;

/// What to read: the fields (all when `None`) of the documents `filter` keeps.
pub(super) struct Selection<'a> {
    pub fields: Option<&'a [String]>,
    pub filter: Filter,
}

fn reader(
    snap: &Snapshot,
    collection: &str,
    sel: &Selection<'_>,
    flat: bool,
) -> Result<stele::arrow::ArrowReader> {
    let mut opts = ArrowOptions::new()
        .filter(sel.filter.clone())
        .batch_rows(BATCH_ROWS)
        .nested_as_json(flat);
    if let Some(f) = sel.fields {
        opts = opts.fields(f);
    }
    Ok(snap.scan_arrow(collection, opts)?)
}

/// Writes the selection as Parquet (zstd, `Snapshot::export_parquet`); returns the rows
/// written.
pub(super) fn parquet(
    snap: &Snapshot,
    collection: &str,
    sel: &Selection<'_>,
    out: impl Write + Send,
) -> Result<u64> {
    Ok(snap.export_parquet(collection, parquet_options(sel), out)?)
}

fn parquet_options(sel: &Selection<'_>) -> ArrowOptions {
    let opts = ArrowOptions::new().filter(sel.filter.clone());
    match sel.fields {
        Some(f) => opts.fields(f),
        None => opts,
    }
}

/// Writes the selection as CSV (RFC 4180: a header line, fields quoted when they hold a
/// comma, quote or line break; objects and arrays as their JSON text; null as an empty
/// field); returns the rows written.
pub(super) fn csv(
    snap: &Snapshot,
    collection: &str,
    sel: &Selection<'_>,
    mut out: impl Write,
) -> Result<u64> {
    let reader = reader(snap, collection, sel, true)?;
    let schema = reader.schema();
    let names: Vec<String> = schema.fields().iter().map(|f| quoted(f.name())).collect();
    writeln!(out, "{}", names.join(","))?;
    let mut rows = 0;
    let mut line = String::new();
    for batch in reader {
        let batch = batch?;
        for i in 0..batch.num_rows() {
            line.clear();
            row(&batch, i, &mut line)?;
            out.write_all(line.as_bytes())?;
        }
        rows += batch.num_rows() as u64;
    }
    out.flush()?;
    Ok(rows)
}

/// Row `i` of a batch of flat columns, as a CSV line.
fn row(batch: &RecordBatch, i: usize, line: &mut String) -> Result<()> {
    for (c, col) in batch.columns().iter().enumerate() {
        if c > 0 {
            line.push(',');
        }
        if col.is_null(i) {
            continue;
        }
        match col.data_type() {
            DataType::Boolean => line.push_str(if col.as_boolean().value(i) {
                "true"
            } else {
                "false"
            }),
            DataType::Int64 => line.push_str(&col.as_primitive::<Int64Type>().value(i).to_string()),
            DataType::Float64 => {
                line.push_str(&col.as_primitive::<Float64Type>().value(i).to_string());
            }
            DataType::Utf8 => line.push_str(&quoted(col.as_string::<i32>().value(i))),
            other => bail!("column {c} has type {other}, which CSV export does not write"),
        }
    }
    line.push('\n');
    Ok(())
}

/// A CSV field: quoted (quotes doubled) when it holds a comma, quote or line break.
fn quoted(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}
