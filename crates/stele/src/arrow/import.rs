//! Import from Arrow: record batches (pyarrow, pandas, Polars, DuckDB, Parquet files) into a
//! collection. Each row is written straight into a stored document from the Arrow arrays
//! (`super::docs`: the inference rule in reverse, no JSON text in between), on every core,
//! while the next batch is read; the documents go to the JSON import's own bulk write
//! ([`BulkImport`]: sorted by id, packed once on every core, switched in by one checkpoint),
//! so the import is all or nothing, with the same ids and reports. Memory: three slices of at
//! most [`SLICE_ROWS`] rows (one being read, one written, one handed to the bulk write)
//! plus the bulk write's budget.
//!
//! A collection not written in bulk (compression off, or `ImportOptions::bulk` off) is
//! imported through the JSON import's staged write instead (`super::import_text`).

use super::docs::Cells;
pub(super) use super::row_writer::{Built, build};
use crate::import::{
    BadRecord, BulkImport, IdSource, ImportError, ImportOptions, ImportPhase, ImportProgress,
    ImportReport,
};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema};
use stele_doc::CachedPath;

/// Most rows written into documents at once: a batch of more (a whole pyarrow table in one
/// chunk) is taken a slice at a time, so memory stays a slice's documents.
pub const SLICE_ROWS: usize = 16_384;

/// Slices of fewer rows are built and handed on in turn on the calling thread, not built on a
/// thread of their own meanwhile: starting a thread (tens of microseconds) would cost a stream
/// of one-row batches more than the whole import of its rows.
const OVERLAP_MIN_ROWS: usize = 1_024;

/// The name the errors give the input.
const SOURCE: &str = "(arrow)";

/// Imports every row of `batches` into `collection` as one document: the columns its
/// properties (nulls left out, as a missing field reads back null; see `crate::arrow`'s
/// documentation for each type). Ids as `opts` say; without an id option, from the column
/// `_id` when there is one, else numbered. The column `_id`, when it gives the ids, is the
/// document id and not a property (the scan's `_id`), and the column `doc._id` is then the
/// root property `_id`: a collection read with `scan_arrow` and imported again has the same
/// ids and documents (equal under the inference rule). Another id column (`id_field("sku")`)
/// stays in the documents, as in the JSON import. Columns of types JSON has no value for
/// (binary, dates and times, dictionaries, maps...) are refused by name before anything is
/// written: cast them to strings first. All or nothing: a bad row (an id missing or of the
/// wrong type, JSON text that does not parse) stops the import before anything lands, or is
/// skipped and reported with [`ImportOptions::skip_bad`]; so does a stream that fails.
pub fn import_arrow(
    db: &crate::Database,
    collection: &str,
    batches: impl RecordBatchReader + Send,
    opts: &ImportOptions,
    progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    match prepare(db, collection, &batches.schema(), opts)? {
        Prepared::Text(opts) => {
            super::import_text::import_as_text(db, collection, batches, &opts, progress)
        }
        Prepared::Bulk(bulk) => {
            let (bulk, plan) = *bulk;
            Import::new(Late::Ready(Box::new(bulk)), opts, plan, progress).run(batches)
        }
    }
}

/// How an import of rows of a schema goes.
pub(super) enum Prepared {
    /// In bulk, with what each row becomes (boxed: a bulk write holds its sorter).
    Bulk(Box<(BulkImport, Plan)>),
    /// Through the JSON import's staged write, with these options (the collection is not
    /// written in bulk).
    Text(ImportOptions),
}

/// Checks the columns of `schema` and finds where the ids come from; then the bulk write
/// of `collection`, if it is written in bulk (sorted: see [`BulkImport::streaming`]).
pub(super) fn prepare(
    db: &crate::Database,
    collection: &str,
    schema: &Schema,
    opts: &ImportOptions,
) -> Result<Prepared, ImportError> {
    for (field, col) in schema.fields().iter().zip(empty_columns(schema)) {
        Cells::of(col.as_ref(), field, field.name()).map_err(|reason| malformed(0, reason))?;
    }
    let has_id_column = schema.field_with_name(ID).is_ok();
    let ids = match opts.id_source() {
        None if has_id_column => Ids::Column,
        None => Ids::Counter(String::new()),
        Some(IdSource::Field(f)) if f == ID && has_id_column => Ids::Column,
        Some(IdSource::Field(f)) => {
            Ids::Field(CachedPath::new(f).map_err(crate::Error::from)?, f.clone())
        }
        Some(IdSource::Counter { prefix }) => Ids::Counter(prefix.clone()),
        Some(IdSource::FileStem) => {
            return Err(malformed(
                0,
                "ids from file names need the folder format; use an id column or the counter"
                    .to_owned(),
            ));
        }
    };
    let Some(bulk) = BulkImport::new(db, collection, opts)? else {
        return Ok(Prepared::Text(match ids {
            Ids::Column => opts.clone().id_field(ID),
            _ => opts.clone(),
        }));
    };
    // SAFETY: `Import::hand_on` adds only documents `RowWriter::row` just finished with a
    // `DocumentWriter`.
    let bulk = unsafe { bulk.for_written_documents(opts) };
    Ok(Prepared::Bulk(Box::new((bulk, Plan::new(schema, ids)))))
}

/// The column the ids come from by default (the scan's id column).
pub(super) const ID: &str = "_id";
/// The scan's column for a root property named `_id`.
const DOC_ID: &str = "doc._id";

pub(super) fn malformed(line: u64, reason: String) -> ImportError {
    ImportError::Malformed {
        file: SOURCE.to_owned(),
        line,
        reason,
    }
}

/// An empty array of each column's type, to check the types before the first batch.
fn empty_columns(schema: &Schema) -> Vec<arrow_array::ArrayRef> {
    schema
        .fields()
        .iter()
        .map(|f| arrow_array::new_empty_array(f.data_type()))
        .collect()
}

/// Where ids come from.
#[derive(Clone)]
pub(super) enum Ids {
    /// The column `_id`, not stored in the documents.
    Column,
    /// A field of the written document (a path), which stays in it.
    Field(CachedPath, String),
    /// Numbered rows, with a prefix.
    Counter(String),
}

/// What each row becomes: the columns written as properties (their index and key), and the ids.
#[derive(Clone)]
pub(super) struct Plan {
    pub(super) props: Vec<(usize, String)>,
    pub(super) id_column: Option<usize>,
    pub(super) ids: Ids,
}

impl Plan {
    pub(super) fn new(schema: &Schema, ids: Ids) -> Plan {
        let id_column = schema
            .index_of(ID)
            .ok()
            .filter(|_| matches!(ids, Ids::Column));
        // `doc._id` is the property `_id` unless the column `_id` is one too.
        let rename = id_column.is_some() || schema.index_of(ID).is_err();
        let props = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != id_column)
            .map(|(i, f)| {
                let key = match f.name().as_str() {
                    DOC_ID if rename => ID.to_owned(),
                    name => name.to_owned(),
                };
                (i, key)
            })
            .collect();
        Plan {
            props,
            id_column,
            ids,
        }
    }
}

/// Most bytes of documents written and held while the bulk write is still being made
/// ([`Late::Coming`]: a Parquet import's sample read and dictionary trained on a thread of
/// its own); past them the import waits for it.
const WAITING_MAX_BYTES: usize = 8 << 20;

/// The bulk write of an import: ready, or being made on a thread of a scope (rows are
/// written into documents meanwhile, and handed to it once it is there).
pub(super) enum Late<'scope> {
    Ready(Box<BulkImport>),
    Coming(std::thread::ScopedJoinHandle<'scope, Result<BulkImport, ImportError>>),
    /// Its thread failed (the error was returned).
    Failed,
}

impl Late<'_> {
    /// Whether [`Self::get`] would not wait.
    fn is_ready(&self) -> bool {
        match self {
            Late::Coming(thread) => thread.is_finished(),
            Late::Ready(_) | Late::Failed => true,
        }
    }

    /// The bulk write, waiting for it to be made.
    fn get(&mut self) -> Result<&mut BulkImport, ImportError> {
        if let Late::Coming(_) = self
            && let Late::Coming(thread) = std::mem::replace(self, Late::Failed)
        {
            match thread.join() {
                Ok(made) => *self = Late::Ready(Box::new(made?)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        match self {
            Late::Ready(bulk) => Ok(&mut **bulk),
            _ => Err(ImportError::Cancelled),
        }
    }
}

/// An import under way: rows to documents, handed to the bulk write in input order.
pub(super) struct Import<'a, 'scope, P> {
    bulk: Late<'scope>,
    opts: &'a ImportOptions,
    plan: Plan,
    report: ImportReport,
    progress: ImportProgress,
    callback: P,
}

impl<'a, 'scope, P: FnMut(ImportProgress)> Import<'a, 'scope, P> {
    pub(super) fn new(
        bulk: Late<'scope>,
        opts: &'a ImportOptions,
        plan: Plan,
        callback: P,
    ) -> Self {
        Import {
            bulk,
            opts,
            plan,
            report: ImportReport::default(),
            progress: ImportProgress::start(),
            callback,
        }
    }

    pub(super) fn run(
        mut self,
        mut batches: impl RecordBatchReader + Send,
    ) -> Result<ImportReport, ImportError> {
        let mut slices = Slices { batch: None, at: 0 };
        let mut next = slices.next(&mut batches);
        let write = self.opts.document_options().clone();
        // Rows of the slices taken so far: the next slice's first is record `rows + 1`.
        let mut rows = 0u64;
        // The slices written and not handed on yet, with their first records: the one
        // written last, or more while the bulk write is being made.
        let mut pending = Waiting::default();
        while let Some(slice) = next {
            let slice = match slice {
                Ok(slice) => slice,
                Err(e) => {
                    // The rows before the failure are handed on first: a bad row among
                    // them is reported before the stream's error, as read in order.
                    for (built, first) in pending.take_all() {
                        self.hand_on(built, first)?;
                    }
                    return Err(ImportError::Read {
                        file: SOURCE.to_owned(),
                        error: std::io::Error::other(e),
                    });
                }
            };
            let first = rows + 1;
            rows += slice.num_rows() as u64;
            let Import {
                bulk,
                opts,
                plan,
                report,
                progress,
                ..
            } = &mut self;
            let plan = &*plan;
            // This slice written on the pool while the next one is read (a Parquet file's
            // decoding, a stream's producer), from a thread of the scope, and the ones before
            // are handed to the bulk write on this thread meanwhile (its sorter's copy and
            // sample: a tenth of a geonames import's CPU). Not from a thread of the pool: a
            // streamed bulk write packs each block as it fills, and a packer called on the
            // pool packs in place, on that one thread (a debian-packages import took twice
            // the wall time of the sorted one); called from here it packs on the pool.
            // While the bulk write is still being made, the slices wait for it (up to
            // `WAITING_MAX_BYTES`), so the writing goes on meanwhile.
            let due = pending.take_due(bulk.is_ready());
            let hand_pending = |bulk: &mut Late<'scope>,
                                report: &mut ImportReport,
                                progress: &mut ImportProgress,
                                due: Vec<(Vec<Built>, u64)>| {
                for (built, first) in due {
                    hand_on(bulk.get()?, opts, report, progress, built, first)?;
                }
                Ok::<(), ImportError>(())
            };
            let (built, after, handed) = if slice.num_rows() < OVERLAP_MIN_ROWS {
                // A small slice (a stream of small batches): a thread started for it would
                // cost more than the overlap saves, so the rows before are handed on first.
                let handed = hand_pending(bulk, report, progress, due);
                let (built, after) = rayon::join(
                    || build(&slice, plan, first, &write, true),
                    || slices.next(&mut batches),
                );
                (built, after, handed)
            } else {
                std::thread::scope(|scope| {
                    let work = scope.spawn(|| {
                        rayon::join(
                            || build(&slice, plan, first, &write, true),
                            || slices.next(&mut batches),
                        )
                    });
                    let handed = hand_pending(bulk, report, progress, due);
                    match work.join() {
                        Ok((built, after)) => (built, after, handed),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                })
            };
            next = after;
            // The rows before this slice's first failed first, as in order.
            handed?;
            let built = match built {
                Ok(built) => built,
                Err(e) => {
                    for (built, first) in pending.take_all() {
                        self.hand_on(built, first)?;
                    }
                    return Err(e);
                }
            };
            pending.push(built, first);
            (self.callback)(self.progress);
            if self.opts.is_cancelled() {
                return Err(ImportError::Cancelled);
            }
        }
        for (built, first) in pending.take_all() {
            self.hand_on(built, first)?;
            (self.callback)(self.progress);
        }
        self.progress.phase = ImportPhase::Writing;
        (self.callback)(self.progress);
        self.bulk.get()?;
        let Late::Ready(bulk) = self.bulk else {
            return Err(ImportError::Cancelled);
        };
        let written = bulk.finish_unless_cancelled(self.opts)?;
        self.progress.written = written.documents;
        (self.callback)(self.progress);
        Ok(ImportReport {
            skipped: self.report.skipped,
            bad: self.report.bad,
            ..written
        })
    }

    fn hand_on(&mut self, built: Vec<Built>, first: u64) -> Result<(), ImportError> {
        hand_on(
            self.bulk.get()?,
            self.opts,
            &mut self.report,
            &mut self.progress,
            built,
            first,
        )
    }
}

/// Slices written, with their first records, not handed to the bulk write yet.
#[derive(Default)]
struct Waiting {
    slices: std::collections::VecDeque<(Vec<Built>, u64)>,
    bytes: usize,
}

impl Waiting {
    fn push(&mut self, built: Vec<Built>, first: u64) {
        self.bytes += built
            .iter()
            .map(|row| row.as_ref().map_or(0, |(id, _, doc)| id.len() + doc.len()))
            .sum::<usize>();
        self.slices.push_back((built, first));
    }

    fn take_all(&mut self) -> Vec<(Vec<Built>, u64)> {
        self.bytes = 0;
        self.slices.drain(..).collect()
    }

    /// The slices to hand on now: all of them once the bulk write is `ready` or they
    /// hold [`WAITING_MAX_BYTES`], else none.
    fn take_due(&mut self, ready: bool) -> Vec<(Vec<Built>, u64)> {
        if ready || self.bytes >= WAITING_MAX_BYTES {
            self.take_all()
        } else {
            Vec::new()
        }
    }
}

/// The rows of a slice (the first is record `first`), in order: good ones to the bulk
/// write, bad ones stop the import or are counted.
fn hand_on(
    bulk: &mut BulkImport,
    opts: &ImportOptions,
    report: &mut ImportReport,
    progress: &mut ImportProgress,
    built: Vec<Built>,
    first: u64,
) -> Result<(), ImportError> {
    for (record, row) in (first..).zip(built) {
        match row {
            Ok((id, kind, doc)) => {
                bulk.add_document(id.as_bytes(), kind, &doc)?;
                progress.documents += 1;
            }
            Err(reason) => {
                let bad = BadRecord {
                    source: SOURCE.to_owned(),
                    line: record,
                    column: None,
                    record,
                    reason,
                };
                if !opts.skips_bad() {
                    return Err(ImportError::BadRecord(bad));
                }
                progress.skipped += 1;
                report.skipped += 1;
                if report.bad.len() < 100 {
                    report.bad.push(bad);
                }
            }
        }
    }
    Ok(())
}

/// Batches cut into slices of at most [`SLICE_ROWS`] rows.
struct Slices {
    batch: Option<RecordBatch>,
    at: usize,
}

impl Slices {
    fn next(
        &mut self,
        batches: &mut impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    ) -> Option<Result<RecordBatch, ArrowError>> {
        loop {
            if let Some(b) = &self.batch
                && self.at < b.num_rows()
            {
                let len = SLICE_ROWS.min(b.num_rows() - self.at);
                let slice = b.slice(self.at, len);
                self.at += len;
                return Some(Ok(slice));
            }
            self.batch = None;
            self.at = 0;
            match batches.next()? {
                Ok(b) => self.batch = Some(b),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
