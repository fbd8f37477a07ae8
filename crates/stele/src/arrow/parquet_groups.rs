//! A Parquet file's record batches decoded on threads of their own, ahead of the import
//! that reads them ([`GroupBatches`]).
//!
//! `ParquetRecordBatchReader` decodes on the thread that asks for the next batch: in an
//! import that was a task of the pool beside the writing of the slice before (`rayon::join`
//! in `super::import::Import::run`), so each slice waited for the slower of the two, and
//! the first batch was decoded before anything else could start. Here each of a few
//! decoders (a thread with a file handle of its own) reads every `n`-th row group of the
//! file (a reader per row group: `ParquetRecordBatchReaderBuilder::with_row_groups`) into a
//! bounded channel, and the batches are handed out in the file's order, row group after row
//! group. Memory: each decoder's row group being decoded and [`AHEAD`] batches in its
//! channel. Dropping the reader (the import failed, was cancelled, or restarts) closes the
//! channels and waits for the decoders, which stop at their next batch.

use crate::import::ImportError;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Batches each decoder may have decoded and not yet handed out.
pub(super) const AHEAD: usize = 4;

/// What a decoder sends: a batch, the end of a row group, or why it stopped.
enum Decoded {
    Batch(RecordBatch),
    GroupEnd,
    Failed(ArrowError),
}

/// One decoding thread and the channel its batches come through.
struct Decoder {
    rx: Option<Receiver<Decoded>>,
    thread: Option<JoinHandle<()>>,
}

/// The record batches of every row group of a Parquet file, in order, decoded ahead on
/// threads of their own.
pub(super) struct GroupBatches {
    schema: SchemaRef,
    decoders: Vec<Decoder>,
    groups: usize,
    /// The row group being handed out (from decoder `at % decoders.len()`).
    at: usize,
    done: bool,
}

impl GroupBatches {
    /// Starts decoding the file at `path` (its metadata `meta`) in batches of at most
    /// `batch_rows` rows, on `threads` decoders (at least one, at most one per row group).
    pub(super) fn start(
        path: &Path,
        meta: &ArrowReaderMetadata,
        batch_rows: usize,
        threads: usize,
    ) -> Result<GroupBatches, ImportError> {
        let groups = meta.metadata().num_row_groups();
        let threads = threads.clamp(1, groups.max(1));
        let mut decoders = Vec::with_capacity(threads);
        for t in 0..threads {
            let (tx, rx) = sync_channel(AHEAD);
            let job = Job {
                path: path.to_owned(),
                meta: meta.clone(),
                groups: (t..groups).step_by(threads).collect(),
                batch_rows,
            };
            let thread = std::thread::Builder::new()
                .name("stele-parquet".to_owned())
                .spawn(move || job.run(&tx))
                .map_err(|error| ImportError::Read {
                    file: path.display().to_string(),
                    error,
                })?;
            decoders.push(Decoder {
                rx: Some(rx),
                thread: Some(thread),
            });
        }
        Ok(GroupBatches {
            schema: meta.schema().clone(),
            decoders,
            groups,
            at: 0,
            done: false,
        })
    }
}

impl Iterator for GroupBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && self.at < self.groups {
            let n = self.decoders.len().max(1);
            let rx = self.decoders.get(self.at % n)?.rx.as_ref()?;
            match rx.recv() {
                Ok(Decoded::Batch(batch)) => return Some(Ok(batch)),
                Ok(Decoded::GroupEnd) => self.at += 1,
                Ok(Decoded::Failed(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Err(_) => {
                    // Gone without a word: it panicked.
                    self.done = true;
                    return Some(Err(ArrowError::ExternalError(
                        "a thread decoding the Parquet file stopped (a bug: please report it)"
                            .into(),
                    )));
                }
            }
        }
        None
    }
}

impl RecordBatchReader for GroupBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for GroupBatches {
    fn drop(&mut self) {
        // Closed channels first: a decoder waiting to send, or done with its batch, stops.
        for d in &mut self.decoders {
            d.rx = None;
        }
        for d in &mut self.decoders {
            if let Some(thread) = d.thread.take() {
                // A panic was reported to the reader already (the channel closed).
                let _ = thread.join();
            }
        }
    }
}

/// What one decoder reads: these row groups of the file, in order.
struct Job {
    path: PathBuf,
    meta: ArrowReaderMetadata,
    groups: Vec<usize>,
    batch_rows: usize,
}

impl Job {
    /// Sends each row group's batches, then its end; stops at the first error (sent) or
    /// when nobody reads any more.
    fn run(self, tx: &SyncSender<Decoded>) {
        let failed = |e: ArrowError| {
            let _ = tx.send(Decoded::Failed(e));
        };
        // A handle of its own: clones of one handle share its offset.
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) => return failed(ArrowError::IoError(self.path.display().to_string(), e)),
        };
        for group in self.groups {
            let reader = file
                .try_clone()
                .map_err(|e| ArrowError::IoError(self.path.display().to_string(), e))
                .and_then(|f| {
                    ParquetRecordBatchReaderBuilder::new_with_metadata(f, self.meta.clone())
                        .with_batch_size(self.batch_rows)
                        .with_row_groups(vec![group])
                        .build()
                        .map_err(ArrowError::from)
                });
            let reader = match reader {
                Ok(reader) => reader,
                Err(e) => return failed(e),
            };
            for batch in reader {
                let sent = match batch {
                    Ok(batch) => tx.send(Decoded::Batch(batch)),
                    Err(e) => return failed(e),
                };
                if sent.is_err() {
                    return;
                }
            }
            if tx.send(Decoded::GroupEnd).is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GroupBatches;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use std::sync::Arc;

    /// Row groups of 333 rows, batches of 100, on 1, 2, 3 and more decoders than groups:
    /// every row once, in the file's order; dropped half read, the decoders stop.
    #[test]
    fn row_groups_come_in_order_whatever_the_decoders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.parquet");
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let column: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10_000));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![column]).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(333))
            .build();
        let file = std::fs::File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).unwrap();
        assert_eq!(meta.metadata().num_row_groups(), 31);
        for threads in [1, 2, 3, 40] {
            let mut rows = Vec::new();
            for b in GroupBatches::start(&path, &meta, 100, threads).unwrap() {
                let b = b.unwrap();
                assert!(b.num_rows() <= 100);
                rows.extend(
                    b.column(0)
                        .as_primitive::<Int64Type>()
                        .values()
                        .iter()
                        .copied(),
                );
            }
            assert_eq!(
                rows,
                (0..10_000).collect::<Vec<i64>>(),
                "{threads} decoders"
            );
            let mut half = GroupBatches::start(&path, &meta, 100, threads).unwrap();
            assert!(half.next().unwrap().is_ok());
            drop(half);
        }
    }
}
