//! What an import takes and gives back: [`ImportOptions`], progress, the report, errors.

use crate::error::Error;
use std::path::PathBuf;
use stele_doc::WriteOptions;

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

/// The id [`IdSource::Counter`] gives record `number` (from 1) after `prefix`: the number
/// zero-padded to 10 digits, so that ids sort in input order (`"0000000042"`).
pub fn numbered_id(prefix: &str, number: u64) -> String {
    // Written digit by digit rather than by `format!` (its padding machinery was 2.5 % of
    // the CPU of an import of 4.5 million small records).
    let mut digits = [b'0'; 20]; // u64::MAX has 20 digits
    let mut n = number;
    let mut start = digits.len();
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
        start -= 1;
        if n == 0 {
            break;
        }
    }
    let from = start.min(digits.len() - 10);
    let text = digits
        .get(from..)
        .and_then(|d| std::str::from_utf8(d).ok())
        .unwrap_or_default();
    let mut out = String::with_capacity(prefix.len() + text.len());
    out.push_str(prefix);
    out.push_str(text);
    out
}

/// The id of numbered record `id` when `id` is its number as people write it (1 to 9
/// digits, `"123456"` -> `"0000123456"`): what a lookup that finds no document `id` tries
/// next, or names in its error. `None` for anything else (10 digits or more are an id as
/// it is).
pub fn numbered_id_for(id: &str) -> Option<String> {
    let digits = (1..10).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| id.parse().ok().map(|n| numbered_id("", n)))?
}

/// Options of an import. The defaults: format detected from the input, ids from a counter
/// (from the file stem for folders), stop at the first bad record, batches of 10,000
/// documents or 8 MiB.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub(super) format: Option<ImportFormat>,
    pub(super) id: Option<IdSource>,
    pub(super) skip_bad: bool,
    pub(super) batch_docs: usize,
    pub(super) batch_bytes: usize,
    pub(super) write: WriteOptions,
    pub(super) cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    pub(super) memory_budget_bytes: usize,
    pub(super) bulk: bool,
    /// `None`: [`DEFAULT_IMPORT_PACK_LEVEL`], or [`SMALL_IMPORT_PACK_LEVEL`] for a small
    /// import.
    pub(super) pack_level: Option<i32>,
    /// The field a record that is not a JSON object is stored under; `None`: refused.
    pub(super) wrap_non_objects: Option<String>,
}

/// The fix a refused non-object record names, in Rust API terms; the command line and the
/// Python package replace it with their own flag and keyword argument.
pub const NON_OBJECT_FIX: &str =
    "set ImportOptions::wrap_non_objects(field) to store such records as {field: value}";

/// Default zstd level of the blocks a bulk import packs ([`ImportOptions::pack_level`]).
pub const DEFAULT_IMPORT_PACK_LEVEL: i32 = 6;

/// Default zstd level of the blocks of a bulk import too small to train a dictionary
/// (under 1 MiB of documents: 32 blocks, `bulk::DICTIONARY_MIN_BLOCKS`) but of more than
/// one block (one block or less packs at [`DEFAULT_IMPORT_PACK_LEVEL`]: microseconds). Such a collection
/// has no size target but "smaller than its JSON", which it meets by far (0.05-0.5x at
/// either level), and compressing at level 6 was a third to a half of the CPU of an import
/// of half a MB (palbum albums, books). On the import benchmark's 18 files under 1 MB
/// level 3 stores 0-14 % more than 6 (books 163,338 bytes against 156,266, accounts
/// 29,974 against 26,294); a full compaction packs them at `DatabaseOptions::pack_level`
/// (`docs/notes/store.md`, "Import time: small imports at level 3").
pub const SMALL_IMPORT_PACK_LEVEL: i32 = 3;

/// Default memory budget of an import ([`ImportOptions::memory_budget_bytes`]).
pub const DEFAULT_IMPORT_BUDGET_BYTES: usize = 256 << 20;

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            format: None,
            id: None,
            skip_bad: false,
            batch_docs: 10_000,
            batch_bytes: 8 << 20,
            write: crate::write_options(),
            cancel: None,
            memory_budget_bytes: DEFAULT_IMPORT_BUDGET_BYTES,
            bulk: true,
            pack_level: None,
            wrap_non_objects: None,
        }
    }
}

impl ImportOptions {
    /// The zstd level of an import's blocks (see [`ImportOptions::pack_level`]), and of a
    /// small one's.
    pub(super) fn pack_levels(&self) -> (i32, i32) {
        (
            self.pack_level.unwrap_or(DEFAULT_IMPORT_PACK_LEVEL),
            self.pack_level.unwrap_or(SMALL_IMPORT_PACK_LEVEL),
        )
    }

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

    /// Stores a record that is not a JSON object (a number, string, array, boolean or null)
    /// as the object `{field: record}` (default: such a record is bad, with its line and
    /// type: a collection holds objects, and a stray value is most often input that is not
    /// what it seems, such as a binary file).
    #[must_use]
    pub fn wrap_non_objects(mut self, field: impl Into<String>) -> Self {
        self.wrap_non_objects = Some(field.into());
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

    /// A flag another thread may set to stop the import: it is checked with each progress
    /// report (every 4,096 records while reading, after each batch while writing), and a
    /// set flag ends the import with [`ImportError::Cancelled`], all or nothing as for any
    /// other failure. The Python package sets it on Ctrl-C.
    #[must_use]
    pub fn cancel_flag(mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Whether [`ImportOptions::cancel_flag`] was set.
    pub(super) fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Memory the import may use (default 256 MiB, at least 4 MiB), whatever the input's
    /// size: the records being converted get two batches of a 64th of it each (their text,
    /// records and conversions: about three times that), the dictionary's sample at most 2
    /// MiB, 32 MiB are set aside for the rest of the import (the process, the packing of
    /// blocks, read buffers), and the sorter the remainder, at least a quarter (beyond that
    /// it spills sorted runs to the database folder and merges them). 4.5M small records
    /// with ids from a field peak at 241, 122 and 51 MiB for budgets of 256, 128 and 64
    /// MiB. Not counted: the memory the database holds anyway.
    #[must_use]
    pub fn memory_budget_bytes(mut self, bytes: usize) -> Self {
        self.memory_budget_bytes = bytes.max(4 << 20);
        self
    }

    /// Whether an import into a packed collection (compression on, the default) writes its
    /// documents once, packed, in one switch (default on; see `crate::import`'s module
    /// documentation). Off: the documents are committed in batches to a staging collection
    /// that is then merged, as imports into collections without compression always are.
    #[must_use]
    pub fn bulk(mut self, on: bool) -> Self {
        self.bulk = on;
        self
    }

    /// zstd level of the blocks a bulk import packs (1 to 22; default 6, and 3 for an import
    /// of one block to 1 MiB of documents: [`SMALL_IMPORT_PACK_LEVEL`]). Compactions pack
    /// at [`crate::DatabaseOptions::pack_level`] (9 by default): on the shared collections
    /// level 6 stores 0-2 % more than 9 (1-8 % on some) and packs 1.3-1.5x as fast; level 3
    /// stores 5-20 % more (`docs/notes/store.md`, "Import lands compact").
    #[must_use]
    pub fn pack_level(mut self, level: i32) -> Self {
        self.pack_level = Some(level.clamp(1, 22));
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

impl ImportProgress {
    /// Nothing read yet: the start of an import (its size, when known, is set once the
    /// input is opened).
    pub(crate) fn start() -> Self {
        ImportProgress {
            phase: ImportPhase::Reading,
            bytes_read: 0,
            bytes_total: None,
            documents: 0,
            skipped: 0,
            written: 0,
        }
    }
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
    /// Batches committed (1 for a bulk write: one switch).
    pub batches: u64,
    /// Compressed bytes of the blocks a bulk write packed the documents into (0 for a
    /// staged write).
    pub packed_bytes: u64,
    /// Bytes the sorter spilled to disk, beyond the memory budget (0: sorted in memory).
    pub spilled_bytes: u64,
    /// Documents in the collection after the import.
    pub collection_documents: u64,
    /// Whether a bulk write was merged with documents already in the collection.
    pub merged: bool,
    /// Whether a bulk write packed its blocks while the input was being read, its
    /// dictionary trained first on lines sampled from the whole file: the import of a JSON
    /// Lines file whose documents come to 4 MiB or more (at the default block size) and
    /// whose ids ascend in input order (numbered records, without an id field; or ids
    /// from a field that ascend in the sample, a file sorted by id). Otherwise the
    /// documents were sorted by id first.
    pub packed_while_reading: bool,
    /// Whether the import began packing while reading (ids from a field ascended in the
    /// sample), met an id that did not sort after the one before, and started again from
    /// the start of the file, sorted: the file was read twice (and progress went back to
    /// 0 bytes).
    pub restarted_sorted: bool,
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
    /// The import was cancelled through [`ImportOptions::cancel_flag`] before it landed;
    /// nothing of it was imported.
    #[error("the import was cancelled (nothing was imported)")]
    Cancelled,
    /// Invalid collection name, invalid id field path, or a commit failed and the
    /// documents written before it were removed again.
    #[error(transparent)]
    Database(#[from] Error),
    /// A batch given to a [`super::BulkImport`] deletes, or puts into another collection.
    #[error(
        "a bulk write into collection {collection:?} takes puts of its documents only (no \
         deletes, no other collection): commit the others in a batch (nothing was added)"
    )]
    NotPutsOf {
        /// The collection of the bulk write.
        collection: String,
    },
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

pub(super) type IResult<T> = std::result::Result<T, ImportError>;

#[cfg(test)]
mod tests {
    use super::numbered_id;

    #[test]
    fn numbered_ids_are_ten_digits_or_more_after_the_prefix() {
        let mut values = vec![0, 1, 9, 10, 42, 999_999_999, 1_000_000_000, 9_999_999_999];
        values.extend([10_000_000_000, 123_456_789_012_345, u64::MAX - 1, u64::MAX]);
        values.extend((0..2000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64)));
        for n in values {
            assert_eq!(numbered_id("", n), format!("{n:010}"), "{n}");
            assert_eq!(numbered_id("p-", n), format!("p-{n:010}"), "{n}");
        }
    }
}
