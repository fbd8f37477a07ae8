//! Import of JSON arrays, JSON Lines and folders of `.json` files into a collection.
//!
//! An import streams its input with constant memory and is **all or nothing**: when it
//! fails, the collection is as it was before.
//!
//! ```no_run
//! use stele::import::{ImportOptions, import_path};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let db = stele::Database::open("/tmp/shop")?;
//! let opts = ImportOptions::new().id_field("order.id").skip_bad(true);
//! let report = import_path(&db, "orders", "orders.jsonl", &opts, |p| {
//!     eprint!("\r{} documents, {} bytes", p.documents, p.bytes_read);
//! })?;
//! println!("{} imported, {} bad records skipped", report.documents, report.skipped);
//! # Ok(()) }
//! ```
//!
//! # How an import stays all or nothing
//!
//! 1. **Read and check.** The input is read once, record by record; records are converted
//!    to documents on every core, a share of the memory budget at a time
//!    ([`ImportOptions::memory_budget_bytes`]), and each one's id is found and checked, in
//!    input order. A bad record stops the import here ([`ImportOptions::skip_bad`] off, the
//!    default) before anything has been written, or is counted and skipped.
//! 2. **Write**, into a packed collection (compression on, the default): in bulk ([`bulk`]).
//!    Each document is written once, in its final form: the documents are sorted by id
//!    with the table sorter (spilling sorted runs to the database folder beyond the
//!    budget), packed into compressed blocks with a dictionary trained on a sample of the
//!    input, and the blocks switched in by one checkpoint: the manifest naming them
//!    replaces the old one in one rename. Into a collection that holds documents, the
//!    import is merged with them at once (imported documents replace those of the same
//!    id), its indexes rebuilt. A failure before the rename, or a killed process, leaves
//!    tables no manifest names: the next checkpoint or open removes them.
//!    A JSON Lines file of some MB whose ids ascend in input order is not sorted: numbered
//!    records ([`IdSource::Counter`], the default without an id field), or ids from a
//!    field that ascend in a sample of the file (a file sorted by id). Once a dictionary
//!    has trained on lines read from 64 places spread over the file (`presample`), each
//!    block is packed as soon as it is full, on the pool, while the next records are read
//!    and converted ([`ImportReport::packed_while_reading`]). Memory is then the blocks in
//!    flight, whatever the file's size; the switch is the same. An id from a field that
//!    does not sort after the one before stops that and starts the import again, sorted
//!    ([`ImportReport::restarted_sorted`]).
//! 3. **Write**, into a collection without compression (or with [`ImportOptions::bulk`]
//!    off): staged. Good records go to a spool file, an anonymous temporary file in the
//!    database folder, then are committed in batches of [`ImportOptions::batch_docs`]
//!    documents or [`ImportOptions::batch_bytes`] bytes into a hidden staging collection;
//!    one logged operation merges it into the target (replacing documents with the same
//!    ids, updating the target's indexes) and drops it. If a commit fails, the staging
//!    collection is dropped; if the process dies, the next open of the database drops it.
//!
//! Either way the target never holds part of an import. Memory stays within the budget
//! (bulk) or one record plus one batch (staged).
//!
//! # Ids
//!
//! [`IdSource::Field`] takes the id from a field of each document (a path such as `id` or
//! `meta.id`; the value must be a string or an integer). [`IdSource::Counter`] numbers the
//! records of the input from 1, zero-padded to 10 digits with an optional prefix
//! (`"0000000001"`, ...), so ids sort in input order and the same input gets the same ids;
//! bad records use up their number too. [`IdSource::FileStem`] (folders only, their
//! default) uses the file name without `.json`. An id replaces a document with the same id.

mod budget;
mod bulk;
mod convert;
mod documents;
mod kinds;
mod options;
mod pending;
mod presample;
mod read;
mod sample;
mod split;
mod spool;
mod write;
mod zstd_file;

pub use documents::BulkImport;
pub use options::{
    BadRecord, DEFAULT_IMPORT_BUDGET_BYTES, DEFAULT_IMPORT_PACK_LEVEL, IdSource, ImportError,
    ImportFormat, ImportOptions, ImportPhase, ImportProgress, ImportReport, NON_OBJECT_FIX,
    SMALL_IMPORT_PACK_LEVEL, numbered_id, numbered_id_for,
};
#[cfg(feature = "parquet")]
pub(crate) use presample::Presample;

use crate::db::Database;
use crate::error::Error;
use crate::internal::check_collection_name;
use crate::pack::PackSettings;
use bulk::BulkWriter;
use convert::{Conversion, Converted};
#[cfg(feature = "arrow")]
pub(crate) use convert::{parses_as_streams, strict_options};
use options::IResult;
use pending::{Pending, RawRecord, Sink};
use split::{Packed, head, packed, refusal, sniff};
use spool::{Origin, Spool};
use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use stele_doc::CachedPath;

/// Imports the file or folder at `path` into `collection` of `db`, calling `progress` along
/// the way. All or nothing: see the module documentation.
pub fn import_path(
    db: &Database,
    collection: &str,
    path: impl AsRef<Path>,
    opts: &ImportOptions,
    progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let read_err = |error| ImportError::Read {
        file: name.clone(),
        error,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    let format = match opts.format {
        None if meta.is_dir() => Some(ImportFormat::Dir),
        other => other,
    };
    if format == Some(ImportFormat::Dir) {
        if !meta.is_dir() {
            return Err(ImportError::Malformed {
                file: name,
                line: 1,
                reason: "the folder format needs a folder of .json files: pass a folder, or \
                         choose the JSON or JSON Lines format"
                    .into(),
            });
        }
        return Importer::new(db, collection, opts, ImportFormat::Dir, progress)?.run_dir(path);
    }
    let mut file = File::open(path).map_err(read_err)?;
    let magic = head(&mut file, MAGIC_BYTES).map_err(read_err)?;
    let kind = packed(&magic);
    if kind == Some(Packed::Zstd) && meta.is_file() {
        file.rewind().map_err(read_err)?;
        if let Some(text_bytes) = zstd_file::content_size(&mut file).map_err(read_err)? {
            // Sampled through a decoder first, then read as a text file is.
            return zstd_file::import(db, collection, (path, &name), text_bytes, opts, progress);
        }
        file.seek(std::io::SeekFrom::Start(magic.len() as u64))
            .map_err(read_err)?;
    }
    if kind.is_some() {
        // Compressed (or not JSON at all): read through a decoder from the start, as a
        // stream, or refused with what it is. Not sampled ahead: a zstd file whose frames
        // do not give their sizes (the sample's windows are offsets into the text).
        let input = std::io::Cursor::new(magic).chain(file);
        return import_reader(db, collection, &name, input, None, opts, progress);
    }
    // Every byte read from `file` so far is in `prefix`, read again before the rest.
    let (format, prefix) = match format {
        Some(f) => (f, magic),
        None => sniff(&mut std::io::Cursor::new(magic).chain(&mut file)).map_err(read_err)?,
    };
    let mut progress = progress;
    let mut imp = Importer::new(db, collection, opts, format, &mut progress)?;
    imp.progress.bytes_total = Some(meta.len());
    let out_of_order = Arc::new(AtomicBool::new(false));
    // Only a regular file is sampled before it is read, and so read again if it has to be
    // (not a pipe or a FIFO, which cannot seek).
    let mut start = None;
    if meta.is_file() {
        start = Some(file.stream_position().map_err(read_err)?);
        imp.stream_file(&mut file, meta.len(), &out_of_order)
            .map_err(|e| of_file(e, &name))?;
    }
    let chained = std::io::Cursor::new(prefix.as_slice()).chain(&mut file);
    match (imp.run_reader(&name, chained), start) {
        (Err(_), Some(start)) if out_of_order.load(Ordering::Relaxed) => {
            file.seek(std::io::SeekFrom::Start(start))
                .map_err(read_err)?;
            let again = Again {
                db,
                collection,
                opts,
                format,
                bytes_total: meta.len(),
            };
            again.sorted(
                &name,
                std::io::Cursor::new(prefix).chain(file),
                &mut progress,
            )
        }
        (other, _) => other,
    }
}

/// `e` with the file it is about named where it is a read error (the sample's errors
/// come without one).
fn of_file(e: ImportError, name: &str) -> ImportError {
    match e {
        ImportError::Read { error, .. } => ImportError::Read {
            file: name.to_owned(),
            error,
        },
        other => other,
    }
}

/// An import packed while read that is to start again, sorted: ids from a field ascended
/// in the sample but not in the file (the tables packed so far go with the next
/// checkpoint).
struct Again<'a> {
    db: &'a Database,
    collection: &'a str,
    opts: &'a ImportOptions,
    format: ImportFormat,
    /// Bytes of the input's text, for progress.
    bytes_total: u64,
}

impl Again<'_> {
    /// The import of `input` (the whole input, from its start), sorted.
    fn sorted(
        self,
        name: &str,
        input: impl Read,
        progress: impl FnMut(ImportProgress),
    ) -> Result<ImportReport, ImportError> {
        let mut imp = Importer::new(self.db, self.collection, self.opts, self.format, progress)?;
        imp.progress.bytes_total = Some(self.bytes_total);
        imp.run_reader(name, input).map(|report| ImportReport {
            restarted_sorted: true,
            ..report
        })
    }
}

/// Bytes looked at for the magic of a compressed input ([`packed`]).
const MAGIC_BYTES: usize = 10;

/// Imports JSON (an array) or JSON Lines from any reader, e.g. standard input. `name` is
/// used in error messages (e.g. `"<stdin>"`); `len` is the input size if known, for
/// progress. [`ImportFormat::Dir`] is not possible here.
pub fn import_reader(
    db: &Database,
    collection: &str,
    name: &str,
    reader: impl Read,
    len: Option<u64>,
    opts: &ImportOptions,
    progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    if opts.format == Some(ImportFormat::Dir) {
        return Err(ImportError::Malformed {
            file: name.to_owned(),
            line: 1,
            reason: "the folder format needs a folder path, not a stream".into(),
        });
    }
    let read_err = |error| ImportError::Read {
        file: name.to_owned(),
        error,
    };
    let mut reader = reader;
    let magic = head(&mut reader, MAGIC_BYTES).map_err(read_err)?;
    let kind = packed(&magic);
    let input = std::io::Cursor::new(magic).chain(reader);
    // Read in chunks of up to 1 MiB (`Importer::run_reader`): one dynamic call a chunk.
    let (mut reader, len): (Box<dyn Read + '_>, _) = match kind {
        None => (Box::new(input), len),
        // The decompressed size is not known ahead: progress without a total.
        Some(Packed::Zstd) => (
            Box::new(zstd::stream::read::Decoder::new(input).map_err(read_err)?),
            None,
        ),
        Some(Packed::Refused { what, unpack }) => {
            return Err(ImportError::Malformed {
                file: name.to_owned(),
                line: 1,
                reason: refusal(what, unpack),
            });
        }
    };
    let (format, prefix) = match opts.format {
        Some(f) => (f, Vec::new()),
        None => sniff(&mut reader).map_err(read_err)?,
    };
    let mut imp = Importer::new(db, collection, opts, format, progress)?;
    imp.progress.bytes_total = len;
    imp.run_reader(name, std::io::Cursor::new(prefix).chain(reader))
}

/// Whether every one of `docs` (in input order) has an id at `path` and each id sorts
/// after the one before: a sample of a file sorted by id.
fn ids_ascend(path: &mut CachedPath, docs: &[Vec<u8>]) -> bool {
    let mut last: Option<String> = None;
    for doc in docs {
        let Ok(view) = stele_doc::Document::new(doc.as_slice()) else {
            return false;
        };
        // Stored keys: integer ids ascend as numbers.
        let Ok((id, _)) = convert::field_id(path, &view, "") else {
            return false;
        };
        if last.as_ref().is_some_and(|l| id.as_bytes() <= l.as_bytes()) {
            return false;
        }
        last = Some(id);
    }
    true
}

/// Where ids come from, prepared.
#[derive(Clone)]
enum Ids {
    Field(CachedPath, String),
    Counter(String),
    FileStem,
}

struct Importer<'a, P> {
    db: &'a Database,
    collection: &'a str,
    opts: &'a ImportOptions,
    format: ImportFormat,
    ids: Ids,
    /// The kind of the ids, from the collection or the first record.
    id_kind: kinds::ImportKind,
    /// Taken when the write starts.
    sink: Option<Sink>,
    pending: Pending,
    /// Records being converted on the pool while the next ones are read.
    converting: Option<Conversion>,
    report: ImportReport,
    progress: ImportProgress,
    callback: P,
}

impl<'a, P: FnMut(ImportProgress)> Importer<'a, P> {
    fn new(
        db: &'a Database,
        collection: &'a str,
        opts: &'a ImportOptions,
        format: ImportFormat,
        callback: P,
    ) -> IResult<Self> {
        check_collection_name(collection)?;
        let ids = match &opts.id {
            Some(IdSource::Field(f)) => {
                Ids::Field(CachedPath::new(f).map_err(Error::from)?, f.clone())
            }
            Some(IdSource::Counter { prefix }) => Ids::Counter(prefix.clone()),
            Some(IdSource::FileStem) if format == ImportFormat::Dir => Ids::FileStem,
            Some(IdSource::FileStem) => {
                return Err(ImportError::Malformed {
                    file: "(options)".into(),
                    line: 0,
                    reason: "ids from file names need the folder format; use an id field \
                             or the counter"
                        .into(),
                });
            }
            None if format == ImportFormat::Dir => Ids::FileStem,
            None => Ids::Counter(String::new()),
        };
        let (level, small_level) = opts.pack_levels();
        let sink = match db.bulk_settings(collection)? {
            Some(settings) if opts.bulk => {
                let writer = BulkWriter::new(
                    db,
                    collection,
                    PackSettings { level, ..settings },
                    small_level,
                    opts.memory_budget_bytes,
                )?;
                let writer = match opts.pack_level {
                    None => writer.level_from_sample(small_level),
                    Some(_) => writer,
                };
                // SAFETY: the importer pushes only documents `convert` just wrote with
                // `DocumentWriter::from_json` (`Importer::hand_on`), as written, or text
                // forms (`convert::convert_all`), which the packer never takes for documents.
                Sink::Bulk(Box::new(unsafe { writer.converted() }))
            }
            _ => Sink::Staged(Spool::new(db.dir())?),
        };
        Ok(Importer {
            db,
            collection,
            opts,
            format,
            ids,
            id_kind: kinds::ImportKind::of(&db.snapshot(), collection),
            sink: Some(sink),
            pending: Pending::new(opts.memory_budget_bytes),
            converting: None,
            report: ImportReport::default(),
            progress: ImportProgress::start(),
            callback,
        })
    }

    /// Makes a bulk import whose ids ascend in input order, from a JSON Lines `file` of
    /// `file_bytes` bytes, pack each block as soon as it is full, while the rest is read,
    /// rather than sort everything first: its dictionary trains now, on lines sampled from
    /// the whole file ([`presample`]). Ids ascend for numbered records; ids from a field
    /// are taken to ascend when they do in the sample (a file sorted by id), and an id
    /// that does not sets `out_of_order` and fails the import, for [`import_path`] to
    /// start it again sorted. Only for an import surely big enough for a dictionary;
    /// others stay as they are. Leaves `file`'s position as it was.
    fn stream_file(
        &mut self,
        file: &mut File,
        file_bytes: u64,
        out_of_order: &Arc<AtomicBool>,
    ) -> IResult<()> {
        self.stream_input(file_bytes, out_of_order, |max_docs, max_bytes, write| {
            let position = file.stream_position()?;
            let sample = presample::presample(file, file_bytes, max_docs, max_bytes, write)?;
            file.seek(std::io::SeekFrom::Start(position))?;
            Ok(sample)
        })
    }

    /// [`Self::stream_file`] for an input of `file_bytes` bytes of JSON Lines that
    /// `sample` takes its [`Presample`] from (given the most documents and bytes it may
    /// hold, and the import's write options).
    fn stream_input(
        &mut self,
        file_bytes: u64,
        out_of_order: &Arc<AtomicBool>,
        sample: impl FnOnce(
            usize,
            usize,
            &stele_doc::WriteOptions,
        ) -> std::io::Result<presample::Presample>,
    ) -> IResult<()> {
        /// Estimated records above which an import is not streamed: numbered ids ascend
        /// up to 9,999,999,999 records (10 digits), far above this.
        const MAX_STREAMED_DOCS: u64 = 1_000_000_000;
        if self.format != ImportFormat::JsonLines || matches!(self.ids, Ids::FileStem) {
            return Ok(());
        }
        let Some(Sink::Bulk(writer)) = &self.sink else {
            return Ok(());
        };
        if self.progress.documents > 0 {
            return Ok(());
        }
        // The least a streamed import can hold: cheaper than sampling a small file.
        if !BulkWriter::streams(writer.settings(), file_bytes) {
            return Ok(());
        }
        let Some((max_docs, max_bytes)) = writer.sample_limits(file_bytes) else {
            return Ok(());
        };
        let read_err = |error| ImportError::Read {
            file: String::new(),
            error,
        };
        let mut sample = sample(max_docs, max_bytes, &self.opts.write).map_err(read_err)?;
        let est_doc_bytes = sample.estimated_doc_bytes(file_bytes);
        let est_docs = sample.estimated_docs(file_bytes);
        if !BulkWriter::streams(writer.settings(), est_doc_bytes) || est_docs > MAX_STREAMED_DOCS {
            return Ok(());
        }
        if let Ids::Field(path, _) = &self.ids
            && !ids_ascend(&mut path.clone(), &sample.docs)
        {
            return Ok(());
        }
        if let Ids::Field(_, name) = &self.ids {
            // The dictionary trains on what the blocks will hold: texts without their id
            // field where it can be cut (`convert::convert_all`).
            sample.elide_texts(name);
        }
        if let Some(Sink::Bulk(writer)) = self.sink.take() {
            let writer = writer.streaming(
                self.db,
                self.collection,
                &sample,
                est_docs,
                est_doc_bytes,
                Arc::clone(out_of_order),
            )?;
            self.sink = Some(Sink::Bulk(Box::new(writer)));
        }
        self.pending.batches_for_packing_while_read();
        Ok(())
    }

    /// Queues one record for conversion; converts the queue on every core once it holds
    /// its share of the memory budget.
    fn record(&mut self, source: &str, text: &[u8], at: Origin, stem: Option<&str>) -> IResult<()> {
        self.pending.push(source, text, at, stem);
        if self.pending.is_full() {
            self.convert_pending()?;
        }
        Ok(())
    }

    /// Sends the queued records to be converted on every core while the input is read on,
    /// then hands on the records sent before ([`Importer::hand_on`]), once converted. A
    /// caller on a thread of the pool converts them in place instead (waiting there for its
    /// own pool could leave no thread to do the work).
    fn convert_pending(&mut self) -> IResult<()> {
        if self.pending.records.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.pending.text);
        let records = std::mem::take(&mut self.pending.records);
        let texts = matches!(self.sink, Some(Sink::Bulk(_)));
        if rayon::current_thread_index().is_some() {
            let wrap = self.opts.wrap_non_objects.as_deref();
            let converted =
                convert::convert_all(&text, &records, &self.opts.write, &self.ids, wrap, texts);
            return self.hand_on(records, converted);
        }
        let next = Conversion::start(
            text,
            records,
            self.opts.write.clone(),
            self.ids.clone(),
            self.opts.wrap_non_objects.clone(),
            texts,
        );
        match self.converting.replace(next) {
            Some(before) => {
                let (records, converted) = before.wait()?;
                self.hand_on(records, converted)
            }
            None => Ok(()),
        }
    }

    /// Waits for the records being converted and hands them on.
    fn finish_converting(&mut self) -> IResult<()> {
        match self.converting.take() {
            Some(conversion) => {
                let (records, converted) = conversion.wait()?;
                self.hand_on(records, converted)
            }
            None => Ok(()),
        }
    }

    /// In input order, hands the good records of `converted` to the sink and handles the
    /// bad ones.
    fn hand_on(&mut self, records: Vec<RawRecord>, converted: Converted) -> IResult<()> {
        for (result, r) in converted.iter().zip(records) {
            let line = r.at.line;
            let result = result.and_then(|(id, kind, doc)| {
                self.id_kind
                    .check(id, kind, line)
                    .map_err(|reason| (line, None, reason))?;
                Ok((id, doc))
            });
            match result {
                Ok((id, doc)) => {
                    if let Some(sink) = self.sink.as_mut() {
                        sink.push(id.as_bytes(), doc)?;
                    }
                    self.progress.documents += 1;
                }
                Err((line, column, reason)) => {
                    let bad = BadRecord {
                        source: r.source.to_string(),
                        line,
                        column,
                        record: r.at.record,
                        reason,
                    };
                    if !self.opts.skip_bad {
                        return Err(ImportError::BadRecord(bad));
                    }
                    self.progress.skipped += 1;
                    if self.report.bad.len() < 100 {
                        self.report.bad.push(bad);
                    }
                }
            }
            if (self.progress.documents + self.progress.skipped).is_multiple_of(4096) {
                self.report_progress()?;
            }
        }
        Ok(())
    }
}
