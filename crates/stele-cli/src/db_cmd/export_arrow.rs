//! `stele export --format parquet|csv` (and `--fields` / `--filter`): the collection read
//! as Arrow record batches (`Snapshot::scan_arrow`), written a batch at a time, so memory
//! stays bounded by the batch whatever the collection's size.

use std::io::Write;

use anyhow::{Context, Result, bail};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::DataType;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, compute_leaves};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use stele::arrow::ArrowOptions;
use stele::{Filter, Snapshot};

/// Rows per batch: 8,192 rows kept the peak of a debian-packages export (53 MB of JSON) at
/// 113 MB, against 170 MB with batches and row groups of 65,536 and 500 MB with the default
/// row group of a million (the Arrow arrays of a row group held until it was written).
const BATCH_ROWS: usize = 8192;

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

/// Writes the selection as Parquet (zstd); returns the rows written.
pub(super) fn parquet(
    snap: &Snapshot,
    collection: &str,
    sel: &Selection<'_>,
    out: impl Write + Send,
) -> Result<u64> {
    let reader = reader(snap, collection, sel, false)?;
    let schema = reader.schema();
    // Row groups are cut below, at ROW_GROUP_ROWS (the writer's own default, a million
    // rows, would hold the whole of most collections in memory until written).
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    // The file through `ArrowWriter` (which records the Arrow schema in the file's metadata),
    // its row groups by hand: each batch's columns encoded and compressed on every core.
    let (mut file, groups) =
        ArrowWriter::try_new(out, schema.clone(), Some(props))?.into_serialized_writer()?;
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut rows = 0;
    let mut group: Option<(Vec<Mutex<ArrowColumnWriter>>, usize)> = None;
    let mut groups_written = 0;
    // The batches are read (on every core: `scan_arrow`) on a thread of their own while
    // this one encodes the ones before, two batches ahead at most.
    let (batches, read) = std::sync::mpsc::sync_channel(2);
    std::thread::scope(|s| -> Result<()> {
        s.spawn(move || {
            for batch in reader {
                // The receiver is gone only once the writing failed.
                if batches.send(batch).is_err() {
                    break;
                }
            }
        });
        for batch in read {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            let (writers, group_rows) = match &mut group {
                Some(g) => g,
                None => {
                    let writers = groups.create_column_writers(groups_written)?;
                    group.insert((writers.into_iter().map(Mutex::new).collect(), 0))
                }
            };
            let mut leaves = Vec::new();
            for (field, column) in schema.fields().iter().zip(batch.columns()) {
                leaves.extend(
                    compute_leaves(field, column)?
                        .into_iter()
                        .map(Some)
                        .map(Mutex::new),
                );
            }
            anyhow::ensure!(
                writers.len() == leaves.len(),
                "{} Parquet column writers for {} leaf columns (a bug: please report it)",
                writers.len(),
                leaves.len()
            );
            on_every_core(writers.len(), threads, |i| {
                let leaf = locked(&leaves[i])?.take();
                match leaf {
                    Some(leaf) => Ok(locked(&writers[i])?.write(&leaf)?),
                    None => Ok(()),
                }
            })?;
            *group_rows += batch.num_rows();
            if *group_rows >= ROW_GROUP_ROWS
                && let Some((writers, _)) = group.take()
            {
                write_group(&mut file, writers, threads)?;
                groups_written += 1;
            }
        }
        Ok(())
    })?;
    if let Some((writers, _)) = group.take() {
        write_group(&mut file, writers, threads)?;
    }
    file.close().context("finishing the Parquet file")?;
    Ok(rows)
}

/// Rows per Parquet row group: each group's columns are encoded into pages held in memory
/// (compressed) until the group is written. One batch: groups of 8 batches took 1.17x the
/// CPU on geonames-cities (larger dictionaries per column chunk) and saved 4 % on
/// debian-packages x4, where creating each chunk's zstd contexts is 8 % of the export.
const ROW_GROUP_ROWS: usize = BATCH_ROWS;

/// Closes the column writers of a row group (their last pages encoded on every core) and
/// writes the group: its column chunks in the file's column order.
fn write_group<W: Write + Send>(
    file: &mut SerializedFileWriter<W>,
    writers: Vec<Mutex<ArrowColumnWriter>>,
    threads: usize,
) -> Result<()> {
    let writers: Vec<Mutex<Option<ArrowColumnWriter>>> = writers
        .into_iter()
        .map(|w| Mutex::new(w.into_inner().ok()))
        .collect();
    let chunks = on_every_core(writers.len(), threads, |i| {
        let writer = locked(&writers[i])?.take();
        let writer =
            writer.context("a Parquet column writer was lost (a bug: please report it)")?;
        Ok(writer.close()?)
    })?;
    let mut row_group = file.next_row_group()?;
    for chunk in chunks {
        chunk.append_to_row_group(&mut row_group)?;
    }
    row_group.close()?;
    Ok(())
}

/// `f(0..jobs)` on `threads` threads, each taking the next index as it is free (columns
/// differ in cost); the results in index order, or the first error.
fn on_every_core<T: Send>(
    jobs: usize,
    threads: usize,
    f: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let work = || -> Result<Vec<(usize, T)>> {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= jobs {
                return Ok(done);
            }
            done.push((i, f(i)?));
        }
    };
    let mut all = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(jobs)).map(|_| s.spawn(work)).collect();
        let mut all = work()?;
        for h in helpers {
            let theirs = h
                .join()
                .map_err(|_| anyhow::anyhow!("a Parquet column encoder panicked"))??;
            all.extend(theirs);
        }
        Ok::<_, anyhow::Error>(all)
    })?;
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

/// The value in `m`; each index is taken by one thread at a time, so the lock is never
/// contended, and a poisoned one means an encoder panicked.
fn locked<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| anyhow::anyhow!("a Parquet column encoder panicked"))
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
