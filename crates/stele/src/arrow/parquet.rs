//! Parquet files (feature `parquet`): [`Snapshot::export_parquet`] writes a collection, or
//! the fields and documents chosen, as one Parquet file (zstd), in row groups of about
//! [`PARQUET_ROW_GROUP_ROWS`] rows whose columns are encoded on every core while the next
//! batches are read. Memory stays bounded by a few batches, whatever the collection's size.

use super::ArrowOptions;
use super::state::ArrowReader;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use arrow_array::{RecordBatch, RecordBatchReader};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, compute_leaves};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Rows per row group (and per batch read, at most): 8,192 rows kept the peak of a
/// debian-packages export (53 MB of JSON) at 113 MB, against 170 MB with batches and row
/// groups of 65,536 and 500 MB with the writer's default row group of a million (the Arrow
/// arrays of a row group held until it was written). Groups of 8 batches took 1.17x the
/// CPU on geonames-cities (larger dictionaries per column chunk) and saved 4 % on
/// debian-packages x4, where creating each chunk's zstd contexts is 8 % of the export.
pub const PARQUET_ROW_GROUP_ROWS: usize = 8192;

impl Snapshot {
    /// Writes `collection` (the fields and documents `options` choose, typed as
    /// [`Snapshot::scan_arrow`] types them) to `out` as a Parquet file, zstd-compressed;
    /// returns the rows written. Batches are read of at most [`PARQUET_ROW_GROUP_ROWS`] rows
    /// (or [`ArrowOptions::batch_rows`] when smaller), and a row group closes once its
    /// batches hold that many (under twice as many: a batch may end early, at the end of a
    /// stretch of blocks read on one core). The Arrow schema
    /// is recorded in the file, so pyarrow, DuckDB and Polars read back the same types.
    /// `out` is written as it goes: after an error it holds part of a file.
    pub fn export_parquet(
        &self,
        collection: &str,
        options: ArrowOptions,
        out: impl Write + Send,
    ) -> Result<u64> {
        let rows = options.batch_rows.min(PARQUET_ROW_GROUP_ROWS);
        let reader = self.scan_arrow(collection, options.batch_rows(rows))?;
        write(reader, out, rows)
    }
}

/// A Parquet error (the output failing, or a bug in how columns were handed over).
fn failed(e: parquet::errors::ParquetError) -> Error {
    Error::Parquet {
        reason: e.to_string(),
    }
}

/// Writes the batches of `reader` as a Parquet file; row groups end at `group_rows`.
/// Returns the rows written.
fn write(reader: ArrowReader, out: impl Write + Send, group_rows: usize) -> Result<u64> {
    let schema = reader.schema();
    // Row groups are cut below (the writer's own buffering, which its row-group setting
    // bounds, is bypassed: each batch's columns are encoded by hand, on every core).
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    // The file through `ArrowWriter`, which records the Arrow schema in its metadata.
    let (mut file, groups) = ArrowWriter::try_new(out, schema.clone(), Some(props))
        .and_then(ArrowWriter::into_serialized_writer)
        .map_err(failed)?;
    let threads = crate::cores::cores().max(1);
    let mut rows = 0;
    let mut group: Option<(Vec<Mutex<ArrowColumnWriter>>, usize)> = None;
    let mut groups_written = 0;
    // The batches are read (on every core: `scan_arrow`) on a thread of their own while
    // this one encodes the ones before, two batches ahead at most.
    let (batches, read) = std::sync::mpsc::sync_channel::<Result<RecordBatch>>(2);
    std::thread::scope(|s| -> Result<()> {
        let reading = s.spawn(move || {
            let mut reader = reader;
            while let Some(batch) = reader.next_batch().transpose() {
                // The receiver is gone only once the writing failed.
                if batches.send(batch).is_err() {
                    break;
                }
            }
        });
        for batch in read {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            let (writers, in_group) = match &mut group {
                Some(g) => g,
                None => {
                    let writers = groups
                        .create_column_writers(groups_written)
                        .map_err(failed)?;
                    group.insert((writers.into_iter().map(Mutex::new).collect(), 0))
                }
            };
            let mut leaves = Vec::new();
            for (field, column) in schema.fields().iter().zip(batch.columns()) {
                let these = compute_leaves(field, column).map_err(failed)?;
                leaves.extend(these.into_iter().map(Some).map(Mutex::new));
            }
            if writers.len() != leaves.len() {
                return Err(Error::Parquet {
                    reason: format!(
                        "{} column writers for {} leaf columns (a bug: please report it)",
                        writers.len(),
                        leaves.len()
                    ),
                });
            }
            on_every_core(writers.len(), threads, |i| {
                let leaf = locked(leaves.get(i))?.take();
                match leaf {
                    Some(leaf) => locked(writers.get(i))?.write(&leaf).map_err(failed),
                    None => Ok(()),
                }
            })?;
            *in_group += batch.num_rows();
            if *in_group >= group_rows
                && let Some((writers, _)) = group.take()
            {
                write_group(&mut file, writers, threads)?;
                groups_written += 1;
            }
        }
        reading.join().map_err(|_| Error::Parquet {
            reason: "the reading thread panicked (a bug: please report it)".to_owned(),
        })
    })?;
    if let Some((writers, _)) = group.take() {
        write_group(&mut file, writers, threads)?;
    }
    file.close().map_err(failed)?;
    Ok(rows)
}

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
        let writer = locked(writers.get(i))?
            .take()
            .ok_or_else(|| Error::Parquet {
                reason: "a column writer was lost (a bug: please report it)".to_owned(),
            })?;
        writer.close().map_err(failed)
    })?;
    let mut row_group = file.next_row_group().map_err(failed)?;
    for chunk in chunks {
        chunk.append_to_row_group(&mut row_group).map_err(failed)?;
    }
    row_group.close().map_err(failed)?;
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
            let theirs = h.join().map_err(|_| encoder_panicked())??;
            all.extend(theirs);
        }
        Ok::<_, Error>(all)
    })?;
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

fn encoder_panicked() -> Error {
    Error::Parquet {
        reason: "a column encoder panicked (a bug: please report it)".to_owned(),
    }
}

/// The value in `m`; each index is taken by one thread at a time, so the lock is never
/// contended, and a poisoned one means an encoder panicked.
fn locked<T>(m: Option<&Mutex<T>>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.ok_or_else(encoder_panicked)?
        .lock()
        .map_err(|_| encoder_panicked())
}
