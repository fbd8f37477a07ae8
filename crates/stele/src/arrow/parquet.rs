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

/// Rows under which a whole selection (read in at most two batches) is encoded on the
/// calling thread: a few rows encode in microseconds, and handing them to threads costs
/// more, each hand-off a wait for a core on a loaded machine (a file of 20 documents took
/// 10 ms of wall time for 1 ms of CPU). Larger exports encode every batch on every core,
/// however small the batch (a stretch of debian-packages' blocks holds about 600 rows).
const ROWS_FOR_THREADS: usize = 1024;

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
    let (file, factory) = ArrowWriter::try_new(out, schema.clone(), Some(props))
        .and_then(ArrowWriter::into_serialized_writer)
        .map_err(failed)?;
    let mut groups = Groups {
        file,
        factory,
        schema,
        group_rows,
        threads: crate::cores::cores().max(1),
        group: None,
        written: 0,
        rows: 0,
    };
    // The first two batches are read here: a selection of one batch (a small collection)
    // is then written without a thread.
    let mut reader = reader;
    let first = reader.next_batch()?;
    let second = match first {
        Some(_) => reader.next_batch()?,
        None => None,
    };
    let rows_read: usize = [&first, &second]
        .into_iter()
        .flatten()
        .map(RecordBatch::num_rows)
        .sum();
    if reader.done && rows_read < ROWS_FOR_THREADS {
        // The whole selection, and a small one: encoded on this thread.
        groups.threads = 1;
    }
    for batch in [first, second].into_iter().flatten() {
        groups.add(&batch)?;
    }
    if !reader.done {
        // The batches are read (on every core: `scan_arrow`) on a thread of their own
        // while this one encodes the ones before, two batches ahead at most.
        let (batches, read) = std::sync::mpsc::sync_channel::<Result<RecordBatch>>(2);
        std::thread::scope(|s| -> Result<()> {
            let reading = s.spawn(move || {
                while let Some(batch) = reader.next_batch().transpose() {
                    // The receiver is gone only once the writing failed.
                    if batches.send(batch).is_err() {
                        break;
                    }
                }
            });
            for batch in read {
                groups.add(&batch?)?;
            }
            reading.join().map_err(|_| Error::Parquet {
                reason: "the reading thread panicked (a bug: please report it)".to_owned(),
            })
        })?;
    }
    groups.finish()
}

/// The file being written, and the row group being encoded.
struct Groups<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: parquet::arrow::arrow_writer::ArrowRowGroupWriterFactory,
    schema: arrow_schema::SchemaRef,
    group_rows: usize,
    threads: usize,
    /// The column writers of the group being encoded, and its rows so far.
    group: Option<(Vec<Mutex<ArrowColumnWriter>>, usize)>,
    /// Row groups written, rows added.
    written: usize,
    rows: u64,
}

impl<W: Write + Send> Groups<W> {
    /// Encodes one batch into the row group (on every core, when it has rows enough), and
    /// writes the group once it holds `group_rows` rows.
    fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        let (writers, in_group) = match &mut self.group {
            Some(g) => g,
            None => {
                let writers = self
                    .factory
                    .create_column_writers(self.written)
                    .map_err(failed)?;
                self.group
                    .insert((writers.into_iter().map(Mutex::new).collect(), 0))
            }
        };
        let mut leaves = Vec::new();
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
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
        on_every_core(writers.len(), self.threads, |i| {
            let leaf = locked(leaves.get(i))?.take();
            match leaf {
                Some(leaf) => locked(writers.get(i))?.write(&leaf).map_err(failed),
                None => Ok(()),
            }
        })?;
        *in_group += batch.num_rows();
        if *in_group >= self.group_rows {
            self.close_group()?;
        }
        Ok(())
    }

    fn close_group(&mut self) -> Result<()> {
        if let Some((writers, _)) = self.group.take() {
            write_group(&mut self.file, writers, self.threads)?;
            self.written += 1;
        }
        Ok(())
    }

    /// Writes the last group and the file's footer; returns the rows written.
    fn finish(mut self) -> Result<u64> {
        self.close_group()?;
        self.file.close().map_err(failed)?;
        Ok(self.rows)
    }
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
