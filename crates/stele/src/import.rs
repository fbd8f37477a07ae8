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
//! 1. **Read and check.** The input is read once, record by record; each record is converted
//!    to a document and its id is found and checked. Good records go to a spool file, an
//!    anonymous temporary file in the database folder (it has no name, so it disappears
//!    when the import ends or the process dies). A bad record stops the import here
//!    ([`ImportOptions::skip_bad`] off, the default) before anything has been written, or is
//!    counted and skipped.
//! 2. **Write.** The spool is committed in batches of [`ImportOptions::batch_docs`]
//!    documents or [`ImportOptions::batch_bytes`] bytes into a hidden staging collection,
//!    then one logged operation merges the staging collection into the target (replacing
//!    documents with the same ids, updating the target's indexes) and drops it. If a commit
//!    fails (disk full, I/O error), the staging collection is dropped; if the process dies,
//!    the next open of the database drops it. Either way the target never holds part of an
//!    import.
//!
//! Memory stays bounded by one record plus one batch. The merge holds the writer lock
//! while it moves the documents (about a microsecond each); readers are not blocked.
//!
//! # Ids
//!
//! [`IdSource::Field`] takes the id from a field of each document (a path such as `id` or
//! `meta.id`; the value must be a string or an integer). [`IdSource::Counter`] numbers the
//! records of the input from 1, zero-padded to 10 digits with an optional prefix
//! (`"0000000001"`, ...), so ids sort in input order and the same input gets the same ids;
//! bad records use up their number too. [`IdSource::FileStem`] (folders only, their
//! default) uses the file name without `.json`. An id replaces a document with the same id.

use crate::batch::{check_collection_name, check_id};
use crate::db::Database;
use crate::error::Error;
use crate::wal::LoggedOp;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use stele_doc::{CachedPath, Document, DocumentWriter, Value, WriteOptions};

/// How the input is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImportFormat {
    /// One top-level JSON array; each element is a document (read incrementally, the array
    /// is never held whole).
    Json,
    /// JSON Lines: one document per line; blank lines are ignored.
    JsonLines,
    /// A folder of `.json` files (not recursive, in name order), one document per file.
    Dir,
}

/// Where each document's id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdSource {
    /// A field of the document: a path such as `id`, `meta.id` or `keys[0]`, holding a
    /// string or an integer.
    Field(String),
    /// The record's number in the input (from 1), zero-padded to 10 digits, after a prefix.
    Counter {
        /// Put before the number (e.g. `"2024-06-"`); empty by default.
        prefix: String,
    },
    /// The file name without the `.json` extension (folders only).
    FileStem,
}

/// Options of an import. The defaults: format detected from the input, ids from a counter
/// (from the file stem for folders), stop at the first bad record, batches of 10,000
/// documents or 8 MiB.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    format: Option<ImportFormat>,
    id: Option<IdSource>,
    skip_bad: bool,
    batch_docs: usize,
    batch_bytes: usize,
    write: WriteOptions,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            format: None,
            id: None,
            skip_bad: false,
            batch_docs: 10_000,
            batch_bytes: 8 << 20,
            write: crate::write_options(),
        }
    }
}

impl ImportOptions {
    /// The default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// The input's format. Default: detected: a folder is [`ImportFormat::Dir`]; otherwise
    /// input whose first non-blank byte is `[` is [`ImportFormat::Json`], any other is
    /// [`ImportFormat::JsonLines`].
    #[must_use]
    pub fn format(mut self, format: ImportFormat) -> Self {
        self.format = Some(format);
        self
    }

    /// Where ids come from (see the module documentation).
    #[must_use]
    pub fn id(mut self, id: IdSource) -> Self {
        self.id = Some(id);
        self
    }

    /// Ids from a field (shorthand for `id(IdSource::Field(path))`).
    #[must_use]
    pub fn id_field(self, path: impl Into<String>) -> Self {
        self.id(IdSource::Field(path.into()))
    }

    /// Skip bad records (counted, and the first 100 listed in the report) instead of
    /// stopping at the first one. Malformed structure of a JSON array (an unterminated
    /// string or array, data after the closing `]`) always stops: element boundaries
    /// cannot be found after it.
    #[must_use]
    pub fn skip_bad(mut self, skip: bool) -> Self {
        self.skip_bad = skip;
        self
    }

    /// Documents per committed batch (default 10,000; at least 1). Each commit is one
    /// fsync: larger batches import faster, smaller ones hold less memory.
    #[must_use]
    pub fn batch_docs(mut self, docs: usize) -> Self {
        self.batch_docs = docs.max(1);
        self
    }

    /// How JSON becomes documents: duplicate keys, key order, depth limit, string
    /// compression (default: [`crate::write_options`], e.g. the last of duplicate keys wins,
    /// long strings stored plain for the collection's zstd).
    #[must_use]
    pub fn write_options(mut self, write: WriteOptions) -> Self {
        self.write = write;
        self
    }

    /// Document bytes per committed batch (default 8 MiB): a batch is committed when it
    /// reaches either limit.
    #[must_use]
    pub fn batch_bytes(mut self, bytes: usize) -> Self {
        self.batch_bytes = bytes.max(1);
        self
    }
}

/// What an import is doing (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImportPhase {
    /// Reading, converting and checking the input.
    Reading,
    /// Committing the checked documents.
    Writing,
    /// Restoring the collection after a failed commit.
    RollingBack,
}

/// Progress of an import, given to the callback every few thousand records and after each
/// batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportProgress {
    /// What the import is doing.
    pub phase: ImportPhase,
    /// Input bytes read so far.
    pub bytes_read: u64,
    /// Input size if known (files and folders; not pipes).
    pub bytes_total: Option<u64>,
    /// Good records read so far.
    pub documents: u64,
    /// Bad records skipped so far.
    pub skipped: u64,
    /// Documents committed so far.
    pub written: u64,
}

/// A record that could not be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// The file (or the name given for a reader, e.g. `<stdin>`).
    pub source: String,
    /// 1-based line where the problem is (where the record starts if not more precise).
    pub line: u64,
    /// 1-based column, when known.
    pub column: Option<u64>,
    /// The record's number in the input, from 1.
    pub record: u64,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for BadRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.source, self.line)?;
        if let Some(c) = self.column {
            write!(f, ":{c}")?;
        }
        write!(f, ": record {}: {}", self.record, self.reason)
    }
}

/// The outcome of an import that succeeded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportReport {
    /// Documents written.
    pub documents: u64,
    /// Bad records skipped ([`ImportOptions::skip_bad`]).
    pub skipped: u64,
    /// The first 100 of them.
    pub bad: Vec<BadRecord>,
    /// Input bytes read.
    pub bytes_read: u64,
    /// Batches committed.
    pub batches: u64,
}

/// Why an import failed. In every case but [`ImportError::RollbackFailed`] the collection
/// is as it was before the import.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A record is not a valid document or has no usable id (and bad records are not skipped).
    #[error("{0} (nothing was imported; fix the record, or skip bad records)")]
    BadRecord(BadRecord),
    /// The input is not laid out as its format requires.
    #[error("{file}:{line}: {reason} (nothing was imported)")]
    Malformed {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// The input could not be read.
    #[error("reading {file}: {error} (nothing was imported)")]
    Read {
        /// The file or folder.
        file: String,
        /// The failure.
        #[source]
        error: std::io::Error,
    },
    /// The spool or undo file in the database folder failed (e.g. the disk is full).
    #[error("writing the import's temporary file in {}: {error} (nothing was imported)", dir.display())]
    Spool {
        /// The database folder.
        dir: PathBuf,
        /// The failure.
        #[source]
        error: std::io::Error,
    },
    /// Invalid collection name, invalid id field path, or a commit failed and the
    /// documents written before it were removed again.
    #[error(transparent)]
    Database(#[from] Error),
    /// A commit failed and restoring the collection failed too.
    #[error(
        "import failed ({cause}) and restoring the collection failed ({rollback}): up to {written} \
         documents of this import may remain in collection {collection:?}; re-run the import \
         once the problem is fixed (it replaces them) or delete them"
    )]
    RollbackFailed {
        /// The collection.
        collection: String,
        /// Why the import failed.
        cause: String,
        /// Why the rollback failed.
        rollback: String,
        /// Documents committed before the failure.
        written: u64,
    },
}

type IResult<T> = std::result::Result<T, ImportError>;

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
    let (format, prefix) = match format {
        Some(f) => (f, Vec::new()),
        None => sniff(&mut file).map_err(read_err)?,
    };
    let mut imp = Importer::new(db, collection, opts, format, progress)?;
    imp.progress.bytes_total = Some(meta.len());
    imp.run_reader(&name, std::io::Cursor::new(prefix).chain(file))
}

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
    let mut reader = reader;
    let (format, prefix) = match opts.format {
        Some(ImportFormat::Dir) => {
            return Err(ImportError::Malformed {
                file: name.to_owned(),
                line: 1,
                reason: "the folder format needs a folder path, not a stream".into(),
            });
        }
        Some(f) => (f, Vec::new()),
        None => sniff(&mut reader).map_err(|error| ImportError::Read {
            file: name.to_owned(),
            error,
        })?,
    };
    let mut imp = Importer::new(db, collection, opts, format, progress)?;
    imp.progress.bytes_total = len;
    imp.run_reader(name, std::io::Cursor::new(prefix).chain(reader))
}

/// Detects JSON versus JSON Lines from the first non-blank byte: `[` is JSON. Returns the
/// bytes read to find it, to be read again before the rest (after 1 MiB of blanks it stops
/// looking: JSON Lines).
fn sniff(reader: &mut impl Read) -> std::io::Result<(ImportFormat, Vec<u8>)> {
    let mut prefix = Vec::new();
    let mut chunk = [0u8; 4096];
    while prefix.len() < 1 << 20 {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let new = chunk.get(..n).unwrap_or_default();
        prefix.extend_from_slice(new);
        if let Some(&b) = new.iter().find(|b| !is_blank(**b)) {
            let format = if b == b'[' {
                ImportFormat::Json
            } else {
                ImportFormat::JsonLines
            };
            return Ok((format, prefix));
        }
    }
    Ok((ImportFormat::JsonLines, prefix))
}

/// Whitespace around JSON values, plus the bytes of a UTF-8 byte order mark.
fn is_blank(b: u8) -> bool {
    is_ws(b) || is_bom(b)
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_bom(b: u8) -> bool {
    matches!(b, 0xEF | 0xBB | 0xBF)
}

/// Counts bytes read for progress.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Where a record starts in its source.
#[derive(Debug, Clone, Copy)]
struct Origin {
    line: u64,
    column: u64,
    record: u64,
}

/// Length-prefixed records in an anonymous temporary file.
struct Spool {
    file: BufWriter<File>,
    dir: PathBuf,
    len: u64,
}

impl Spool {
    fn new(dir: &Path) -> IResult<Spool> {
        let file = tempfile::tempfile_in(dir).map_err(|error| ImportError::Spool {
            dir: dir.to_owned(),
            error,
        })?;
        Ok(Spool {
            file: BufWriter::with_capacity(1 << 20, file),
            dir: dir.to_owned(),
            len: 0,
        })
    }

    fn err(&self, error: std::io::Error) -> ImportError {
        ImportError::Spool {
            dir: self.dir.clone(),
            error,
        }
    }

    /// Appends `id`, a presence byte and (if present) the document.
    fn push(&mut self, id: &[u8], doc: Option<&[u8]>) -> IResult<()> {
        let mut head = Vec::with_capacity(13);
        head.extend_from_slice(&(id.len() as u32).to_le_bytes());
        head.push(u8::from(doc.is_some()));
        head.extend_from_slice(&(doc.map_or(0, <[u8]>::len) as u64).to_le_bytes());
        let written = self
            .file
            .write_all(&head)
            .and_then(|()| self.file.write_all(id))
            .and_then(|()| self.file.write_all(doc.unwrap_or_default()));
        written.map_err(|e| self.err(e))?;
        self.len += (head.len() + id.len() + doc.map_or(0, <[u8]>::len)) as u64;
        Ok(())
    }

    /// A reader over the records from byte `from` to byte `to`.
    fn reader(&mut self, from: u64, to: u64) -> IResult<SpoolReader> {
        self.file.flush().map_err(|e| self.err(e))?;
        let mut file = self.file.get_ref().try_clone().map_err(|e| self.err(e))?;
        file.seek(SeekFrom::Start(from)).map_err(|e| self.err(e))?;
        Ok(SpoolReader {
            inner: BufReader::with_capacity(1 << 20, file.take(to - from)),
            dir: self.dir.clone(),
        })
    }
}

struct SpoolReader {
    inner: BufReader<std::io::Take<File>>,
    dir: PathBuf,
}

impl SpoolReader {
    /// The next record: (id, document or none), or `None` at the end.
    fn next(&mut self) -> IResult<Option<(String, Option<Vec<u8>>)>> {
        let err = |error| ImportError::Spool {
            dir: self.dir.clone(),
            error,
        };
        if self.inner.fill_buf().map_err(err)?.is_empty() {
            return Ok(None);
        }
        let mut head = [0u8; 13];
        self.inner.read_exact(&mut head).map_err(err)?;
        let [a, b, c, d, present, rest @ ..] = head;
        let id_len = u32::from_le_bytes([a, b, c, d]) as usize;
        let doc_len = usize::try_from(u64::from_le_bytes(rest)).unwrap_or(usize::MAX);
        let mut id = vec![0; id_len];
        self.inner.read_exact(&mut id).map_err(err)?;
        let id = String::from_utf8(id).map_err(|e| {
            err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                e.utf8_error(),
            ))
        })?;
        if present == 0 {
            return Ok(Some((id, None)));
        }
        let mut doc = vec![0; doc_len];
        self.inner.read_exact(&mut doc).map_err(err)?;
        Ok(Some((id, Some(doc))))
    }
}

/// Where ids come from, prepared.
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
    writer: DocumentWriter,
    spool: Spool,
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
        Ok(Importer {
            db,
            collection,
            opts,
            format,
            ids,
            writer: DocumentWriter::with_options(opts.write.clone()),
            spool: Spool::new(db.dir())?,
            report: ImportReport::default(),
            progress: ImportProgress {
                phase: ImportPhase::Reading,
                bytes_read: 0,
                bytes_total: None,
                documents: 0,
                skipped: 0,
                written: 0,
            },
            callback,
        })
    }

    /// Converts one record and spools it, or handles it as a bad record.
    fn record(&mut self, source: &str, text: &[u8], at: Origin, stem: Option<&str>) -> IResult<()> {
        match self.convert(text, at, stem) {
            Ok((id, doc)) => {
                self.spool.push(id.as_bytes(), Some(&doc))?;
                self.progress.documents += 1;
            }
            Err((line, column, reason)) => {
                let bad = BadRecord {
                    source: source.to_owned(),
                    line,
                    column,
                    record: at.record,
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
            (self.callback)(self.progress);
        }
        Ok(())
    }

    /// The id and the document of one record, or where and why it is bad.
    #[allow(
        clippy::type_complexity,
        reason = "private; the tuple is the bad record's fields"
    )]
    fn convert(
        &mut self,
        text: &[u8],
        at: Origin,
        stem: Option<&str>,
    ) -> Result<(String, Vec<u8>), (u64, Option<u64>, String)> {
        let doc = self.writer.from_json(text).map_err(|e| match e {
            stele_doc::Error::Json {
                line,
                column,
                reason,
                ..
            } => {
                let (line, column) = (line as u64, column as u64);
                let abs_col = if line == 1 {
                    at.column + column - 1
                } else {
                    column
                };
                (
                    at.line + line - 1,
                    Some(abs_col),
                    format!("invalid JSON: {reason}"),
                )
            }
            other => (at.line, None, other.to_string()),
        })?;
        let bad = |reason: String| (at.line, None, reason);
        let id = match &mut self.ids {
            Ids::Counter(prefix) => format!("{prefix}{:010}", at.record),
            Ids::FileStem => stem.unwrap_or_default().to_owned(),
            Ids::Field(path, name) => {
                let view = Document::new(doc.as_slice()).map_err(|e| bad(e.to_string()))?;
                match path.get(view.root()) {
                    Some(Value::String(s)) => s.to_cow().into_owned(),
                    Some(v @ (Value::Int(_) | Value::UInt(_))) => v.to_json(),
                    Some(other) => {
                        return Err(bad(format!(
                            "id field {name:?} is a {}; ids must be strings or integers",
                            other.type_name()
                        )));
                    }
                    None => {
                        return Err(bad(format!(
                            "no id field {name:?} (every document needs one)"
                        )));
                    }
                }
            }
        };
        check_id(&id).map_err(|e| bad(e.to_string()))?;
        Ok((id, doc))
    }

    fn run_reader(mut self, source: &str, reader: impl Read) -> IResult<ImportReport> {
        let mut input = BufReader::with_capacity(
            1 << 20,
            Counting {
                inner: reader,
                count: 0,
            },
        );
        let read_err = |error| ImportError::Read {
            file: source.to_owned(),
            error,
        };
        let mut record = 0u64;
        let mut buf = Vec::new();
        if self.format == ImportFormat::JsonLines {
            let mut line = 0u64;
            loop {
                buf.clear();
                let n = input.read_until(b'\n', &mut buf).map_err(read_err)?;
                if n == 0 {
                    break;
                }
                line += 1;
                let text = if line == 1 {
                    buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf)
                } else {
                    &buf
                };
                // Without its line break: an error at the end of a cut-off record is then
                // placed on the record's own line, not at the start of the next one.
                let text = text.strip_suffix(b"\n").unwrap_or(text);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                if text.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                record += 1;
                self.progress.bytes_read = input.get_ref().count;
                let at = Origin {
                    line,
                    column: 1,
                    record,
                };
                self.record(source, text, at, None)?;
            }
        } else {
            let mut splitter = ArraySplitter::new(&mut input);
            loop {
                let at = match splitter.next_element(&mut buf) {
                    Ok(Some((line, column))) => Origin {
                        line,
                        column,
                        record: record + 1,
                    },
                    Ok(None) => break,
                    Err(SplitError::Io(e)) => return Err(read_err(e)),
                    Err(SplitError::Malformed { line, reason }) => {
                        return Err(ImportError::Malformed {
                            file: source.to_owned(),
                            line,
                            reason: reason.into(),
                        });
                    }
                };
                record += 1;
                self.progress.bytes_read = splitter.input.get_ref().count;
                self.record(source, &buf, at, None)?;
            }
        }
        self.progress.bytes_read = input.get_ref().count;
        self.write()
    }

    fn run_dir(mut self, dir: &Path) -> IResult<ImportReport> {
        let source = dir.display().to_string();
        let read_err = |error| ImportError::Read {
            file: source.clone(),
            error,
        };
        let mut files = Vec::new();
        let mut total = 0;
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let entry = entry.map_err(read_err)?;
            let path = entry.path();
            // Follows symbolic links: a link to a .json file is imported.
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                total += std::fs::metadata(&path).map_err(read_err)?.len();
                files.push(path);
            }
        }
        files.sort();
        self.progress.bytes_total = Some(total);
        for (n, path) in files.iter().enumerate() {
            let name = path.display().to_string();
            let text = std::fs::read(path).map_err(|error| ImportError::Read {
                file: name.clone(),
                error,
            })?;
            self.progress.bytes_read += text.len() as u64;
            let stem = path.file_stem().map(|s| s.to_string_lossy());
            let at = Origin {
                line: 1,
                column: 1,
                record: n as u64 + 1,
            };
            self.record(&name, &text, at, stem.as_deref())?;
        }
        self.write()
    }

    /// Step 2: commits the spool in batches into a staging collection, then merges it into
    /// the target in one logged operation; drops the staging collection on failure.
    fn write(mut self) -> IResult<ImportReport> {
        (self.callback)(self.progress);
        self.progress.phase = ImportPhase::Writing;
        self.report.skipped = self.progress.skipped;
        self.report.bytes_read = self.progress.bytes_read;
        // `/` cannot appear in user collection names: the target is read back from here to
        // compress the staged documents as the target's documents.
        let staging = format!(
            "{STAGING_PREFIX}{}-{}/{}",
            std::process::id(),
            STAGING_COUNTER.fetch_add(1, Ordering::Relaxed),
            self.collection
        );
        let result = self.write_staged(&staging);
        if let Err(cause) = result {
            self.progress.phase = ImportPhase::RollingBack;
            (self.callback)(self.progress);
            let drop = self.db.commit_ops(vec![LoggedOp::DropCollection {
                collection: staging.clone(),
            }]);
            return Err(match drop {
                Ok(()) => cause,
                Err(e) => ImportError::RollbackFailed {
                    collection: self.collection.to_owned(),
                    cause: cause.to_string(),
                    rollback: e.to_string(),
                    written: self.progress.written,
                },
            });
        }
        self.report.documents = self.progress.written;
        // The staged documents went through the target's compressor, whose first training
        // may still be running in the background: wait for it and persist its dictionary, so
        // that an import into a new collection leaves it with one (for the writes and the
        // packing that follow). The import has landed by now and must not be reported as
        // failed: if persisting fails (a full disk), the dictionary is simply trained again
        // later, and the next write reports the disk's state.
        let _ = self.db.settle_dictionaries(Some(self.collection));
        Ok(self.report)
    }

    fn write_staged(&mut self, staging: &str) -> IResult<()> {
        let mut reader = self.spool.reader(0, self.spool.len)?;
        let mut pending: Vec<(String, Vec<u8>)> = Vec::new();
        let mut pending_bytes = 0;
        loop {
            let next = reader.next()?;
            let at_end = next.is_none();
            if let Some((id, Some(doc))) = next {
                pending_bytes += doc.len() + id.len();
                pending.push((id, doc));
            }
            let full =
                pending.len() >= self.opts.batch_docs || pending_bytes >= self.opts.batch_bytes;
            if !pending.is_empty() && (full || at_end) {
                let mut batch = self.db.batch();
                for (id, doc) in &pending {
                    batch.put_trusted(staging, id, doc);
                }
                self.db.commit(batch)?;
                self.progress.written += pending.len() as u64;
                self.report.batches += 1;
                pending.clear();
                pending_bytes = 0;
                (self.callback)(self.progress);
            }
            if at_end {
                break;
            }
        }
        // The whole import lands in one logged operation: all of it, or (after a crash
        // before this point) none, once the next open drops the staging collection.
        self.db.commit_ops(vec![LoggedOp::MergeCollection {
            collection: staging.to_owned(),
            into: self.collection.to_owned(),
        }])?;
        Ok(())
    }
}

/// Names of the staging collections imports write into before they land.
pub(crate) const STAGING_PREFIX: &str = "_import-";
static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);

enum SplitError {
    Io(std::io::Error),
    Malformed { line: u64, reason: &'static str },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `[`.
    Start,
    /// After `[` (`first`) or after a `,`.
    BeforeElement { first: bool },
    /// After the closing `]`.
    Done,
}

/// Finds the elements of one top-level JSON array incrementally: it tracks strings (with
/// escapes) and nesting only; each element's own syntax is checked when it is converted.
struct ArraySplitter<R> {
    input: R,
    state: State,
    line: u64,
    column: u64,
}

impl<R: BufRead> ArraySplitter<R> {
    fn new(input: R) -> Self {
        ArraySplitter {
            input,
            state: State::Start,
            line: 1,
            column: 1,
        }
    }

    fn malformed<T>(&self, reason: &'static str) -> Result<T, SplitError> {
        Err(SplitError::Malformed {
            line: self.line,
            reason,
        })
    }

    fn advance(&mut self, b: u8) {
        if b == b'\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
    }

    /// Puts the next element's bytes in `out` and returns its line and column, or `None`
    /// after the closing `]`.
    fn next_element(&mut self, out: &mut Vec<u8>) -> Result<Option<(u64, u64)>, SplitError> {
        out.clear();
        // Outside elements: blanks and punctuation, one byte at a time.
        loop {
            let buf = self.input.fill_buf().map_err(SplitError::Io)?;
            let Some(&b) = buf.first() else {
                return match self.state {
                    State::Done => Ok(None),
                    State::Start => self.malformed(
                        "empty input: expected a JSON array `[...]` (for one document per line, use JSON Lines)",
                    ),
                    _ => self.malformed("the input ends inside the array: expected `]`"),
                };
            };
            if is_ws(b) || (self.state == State::Start && is_bom(b)) {
                self.input.consume(1);
                self.advance(b);
                continue;
            }
            match (self.state, b) {
                (State::Start, b'[') => self.state = State::BeforeElement { first: true },
                (State::Start, _) => {
                    return self.malformed(
                        "expected a JSON array `[...]` of documents (for one document per line, use JSON Lines; for one per file, a folder)",
                    );
                }
                (State::BeforeElement { first: true }, b']') => self.state = State::Done,
                (State::BeforeElement { .. }, b']') => {
                    return self.malformed("a comma before `]`: remove the trailing comma");
                }
                (State::BeforeElement { .. }, b',') => {
                    return self.malformed("an empty element (two commas in a row)");
                }
                (State::BeforeElement { .. }, _) => break,
                (State::Done, _) => {
                    return self.malformed("data after the array's closing `]`");
                }
            }
            self.input.consume(1);
            self.advance(b);
        }
        let start = (self.line, self.column);
        let (mut depth, mut in_string, mut escaped) = (0u64, false, false);
        loop {
            let buf = self.input.fill_buf().map_err(SplitError::Io)?;
            if buf.is_empty() {
                return self.malformed(if in_string {
                    "the input ends inside a string: a closing quote is missing"
                } else {
                    "the input ends inside the array: expected `]`"
                });
            }
            let mut end = None;
            let mut used = buf.len();
            for (i, &b) in buf.iter().enumerate() {
                if b == b'\n' {
                    self.line += 1;
                    self.column = 1;
                } else {
                    self.column += 1;
                }
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth > 0 => depth -= 1,
                    b']' | b',' if depth == 0 => {
                        end = Some(b);
                        used = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            out.extend_from_slice(&buf[..used - usize::from(end.is_some())]);
            self.input.consume(used);
            match end {
                Some(b']') => {
                    self.state = State::Done;
                    return Ok(Some(start));
                }
                Some(_) => {
                    self.state = State::BeforeElement { first: false };
                    return Ok(Some(start));
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn split(text: &str) -> Result<Vec<(String, u64, u64)>, String> {
        let mut s = ArraySplitter::new(text.as_bytes());
        let mut out = Vec::new();
        let mut all = Vec::new();
        loop {
            match s.next_element(&mut out) {
                Ok(Some((l, c))) => all.push((String::from_utf8(out.clone()).unwrap(), l, c)),
                Ok(None) => return Ok(all),
                Err(SplitError::Malformed { line, reason }) => {
                    return Err(format!("{line}: {reason}"));
                }
                Err(SplitError::Io(e)) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn splits_elements_with_strings_escapes_and_nesting() {
        let got =
            split("\u{feff} [\n {\"a\":\"x,]\\\"}\"},\n  [1,[2]] , 3,\"s\\\\\",{}\n]\n").unwrap();
        let texts: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(
            texts,
            ["{\"a\":\"x,]\\\"}\"}", "[1,[2]] ", "3", "\"s\\\\\"", "{}\n"]
        );
        assert_eq!((got[0].1, got[0].2), (2, 2));
        assert_eq!((got[1].1, got[1].2), (3, 3));
        assert_eq!(split("[]").unwrap(), vec![]);
        assert_eq!(split(" [ ] \n").unwrap(), vec![]);
    }

    #[test]
    fn malformed_arrays_name_the_line() {
        assert!(split("").unwrap_err().contains("empty input"));
        assert!(
            split("{\"a\":1}")
                .unwrap_err()
                .contains("expected a JSON array")
        );
        assert!(
            split("[1,\n2,]")
                .unwrap_err()
                .starts_with("2: a comma before")
        );
        assert!(split("[1,,2]").unwrap_err().contains("empty element"));
        assert!(split("[1] x").unwrap_err().contains("after the array"));
        assert!(split("[1, \"abc").unwrap_err().contains("inside a string"));
        assert!(
            split("[1, {\"a\": [2]}")
                .unwrap_err()
                .contains("expected `]`")
        );
    }

    #[test]
    fn splits_across_small_reads() {
        let text = "[{\"k\":\"a\\\"b\"},\n{\"k\":[1,2,{}]},\n\"z\"]";
        let reader = BufReader::with_capacity(1, text.as_bytes());
        let mut s = ArraySplitter::new(reader);
        let mut out = Vec::new();
        let mut all = Vec::new();
        while let Ok(Some(_)) = s.next_element(&mut out) {
            all.push(String::from_utf8(out.clone()).unwrap());
        }
        assert_eq!(all, ["{\"k\":\"a\\\"b\"}", "{\"k\":[1,2,{}]}", "\"z\""]);
    }
}
