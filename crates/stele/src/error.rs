//! The one error type of this crate.

use std::path::PathBuf;

/// The fix [`Error::NotADatabase`] names, in Rust API terms; the command line and the
/// Python package replace it with their own flag and keyword argument.
pub const CREATE_HERE_FIX: &str =
    "set DatabaseOptions::create_here(true) to create the database beside what it holds";

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A durable collection failed (including corruption found in a table).
    #[error(transparent)]
    Durable(#[from] stele_durable::Error),
    /// A table failed.
    #[error(transparent)]
    Table(#[from] stele_table::Error),
    /// A document failed to convert or validate.
    #[error(transparent)]
    Document(#[from] stele_doc::Error),
    /// Another process has the database open.
    #[error(
        "database {} is in use by pid {pid} (close it there first: one process at a time writes a database; to read beside it, open it read-only)",
        path.display()
    )]
    InUse {
        /// The database folder.
        path: PathBuf,
        /// The process holding it, as it wrote in the lock file (0 if unreadable).
        pid: u32,
    },
    /// A handle used in a process forked from the one that opened the database.
    #[error(
        "database {} was opened by process {opened_pid} and is used in process {pid} (a fork): nothing was written; open the database in each process after the fork",
        path.display()
    )]
    OpenedInAnotherProcess {
        /// The database folder.
        path: PathBuf,
        /// The process that opened it.
        opened_pid: u32,
        /// The process that used the handle.
        pid: u32,
    },
    /// A read-only open of a folder that holds no database.
    #[error(
        "no database at {}: check the path (a read-only open needs a folder a writer created)",
        path.display()
    )]
    NoDatabase {
        /// The folder given.
        path: PathBuf,
    },
    /// A write open of a path that is a file, not a folder.
    #[error(
        "{} is a file, not a database folder: give the database's folder (created if missing)",
        path.display()
    )]
    NotAFolder {
        /// The path given.
        path: PathBuf,
    },
    /// A write open of a folder that holds entries of its own and no database: a database
    /// is only created in a new or empty folder, unless asked to (see
    /// [`DatabaseOptions::create_here`](crate::DatabaseOptions::create_here)).
    #[error(
        "{} is not a database and not empty (it holds {}{}): nothing was written; give a new or empty folder, or {CREATE_HERE_FIX}",
        path.display(),
        first.join(", "),
        if *entries > first.len() { format!(" and {} more", entries - first.len()) } else { String::new() }
    )]
    NotADatabase {
        /// The folder given.
        path: PathBuf,
        /// How many entries it holds that are not a database's.
        entries: usize,
        /// The first of them by name (at most 5).
        first: Vec<String>,
    },
    /// Collection names are 1 to 100 of `A-Z a-z 0-9 _ - .`, not starting with `.` or `_`.
    #[error(
        "invalid collection name {name:?}: {reason}; a name is 1 to 100 of the ASCII letters A-Z and a-z, the digits 0-9, '_', '-' and '.', not starting with '.' or '_'"
    )]
    InvalidCollectionName {
        /// The name given.
        name: String,
        /// What is wrong with it: the first rule it breaks.
        reason: String,
    },
    /// Document ids are 1 to 1024 bytes of UTF-8.
    #[error("invalid document id {id:?}: {reason}")]
    InvalidId {
        /// The id given (shortened).
        id: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An id of one kind for a collection that holds the other (see [`IdKind`](crate::IdKind)): a text id
    /// for a collection of integer ids, or an integer for one of text ids.
    #[error(
        "collection {collection:?} holds {} ids, and {id:?} is not one: {}",
        holds.name(),
        match holds {
            crate::id_kind::IdKind::Int => "give an integer such as 42 or -7 (no leading zeros, no sign +)",
            _ => "give a text id, or put integer ids in a collection of their own (a collection's first documents decide its kind)",
        }
    )]
    IdKindMismatch {
        /// The collection.
        collection: String,
        /// The kind of ids it holds.
        holds: crate::id_kind::IdKind,
        /// The id given (shortened), as text.
        id: String,
    },
    /// One of the documents given to [`Batch::put_json_many`](crate::Batch::put_json_many)
    /// is bad (its id or its JSON text); none of them was added.
    #[error("document {position} (id {id:?}) of the batch for {collection:?}: {source}")]
    InvalidDocument {
        /// The collection they were for.
        collection: String,
        /// Its position in the slice given, from 0.
        position: usize,
        /// Its id (shortened).
        id: String,
        /// What is wrong with it.
        #[source]
        source: Box<Error>,
    },
    /// A batch's log record would exceed the limit.
    #[error(
        "batch of {bytes} bytes exceeds the limit of {max_bytes} bytes: split it into smaller batches"
    )]
    BatchTooLarge {
        /// Size of the batch's log record.
        bytes: usize,
        /// The limit.
        max_bytes: usize,
    },
    /// Writing the log failed and the partial write could not be removed: no more writes
    /// until the database is reopened (which cuts the torn tail). Reads keep working.
    #[error(
        "the write-ahead log {} could not be repaired after a failed write ({reason}); reopen the database to recover",
        path.display()
    )]
    LogPoisoned {
        /// The log segment.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The commit was in a group whose log write failed; nothing of it was applied.
    #[error("commit failed: writing the log failed ({reason}); nothing of this batch was applied")]
    CommitFailed {
        /// The failure of the group's write.
        reason: String,
    },
    /// A log segment other than the last has a bad record: acknowledged data would be
    /// lost if it were skipped.
    #[error(
        "log segment {} is corrupt at byte {offset}: {reason} (restore it from a backup; records after it cannot be replayed)",
        path.display()
    )]
    CorruptLog {
        /// The segment.
        path: PathBuf,
        /// Offset of the bad record.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The manifest does not decode.
    #[error("manifest {} is corrupt: {reason}", path.display())]
    CorruptManifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// A key of the database's meta collection (dictionaries and settings) does not parse.
    #[error("meta collection key {key:?} is corrupt: {reason}")]
    CorruptMetaKey {
        /// The key, as text (bytes that are not UTF-8 replaced).
        key: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A stored document does not decode.
    #[error("stored document {id:?} in collection {collection:?} is corrupt: {reason}")]
    CorruptDocument {
        /// The collection.
        collection: String,
        /// The document id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A field path does not parse.
    #[error(
        "invalid field path {path:?}: {reason} (write names separated by dots, `[]` for every element of an array: `address.city`, `tags[]`)"
    )]
    InvalidFieldPath {
        /// The path given.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An index definition or name is not acceptable, or the index does not exist / exists.
    #[error("index {index:?}: {reason}")]
    InvalidIndex {
        /// The index name.
        index: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A filter, sort, projection or pipeline is not acceptable: `at` says where in it (a
    /// path such as `$or[1].price.$gte`), `reason` what is wrong and how to say it instead.
    #[error("invalid query at {at}: {reason}")]
    InvalidFilter {
        /// Where in the query (`$` alone is the whole of it).
        at: String,
        /// What is wrong.
        reason: String,
    },
    /// A query ran past its time budget and was stopped; nothing it found is returned.
    #[error(
        "the query was stopped after {elapsed_ms} ms, past its time budget of {budget_ms} ms (add an index on the filtered or sorted fields, narrow the filter, or give a larger budget)"
    )]
    QueryTimeout {
        /// How long it ran.
        elapsed_ms: u64,
        /// The budget it had.
        budget_ms: u64,
    },
    /// A value does not fit the Arrow column it is read into (`stele::arrow`, with a given
    /// schema or one inferred from a sample of the documents).
    #[error(
        "document {id:?} of {collection}: {field} holds {found}, which does not fit the Arrow column type {expected} (give a schema that fits, infer the schema from more documents, or read misfits as nulls)"
    )]
    ArrowMisfit {
        /// The collection read.
        collection: String,
        /// The document's id.
        id: String,
        /// The column, and the path inside it (`a.b[]` for elements of a list).
        field: String,
        /// The column's type, as Arrow writes it.
        expected: String,
        /// The value's JSON type (`string`, `object`...).
        found: String,
    },
    /// An Arrow schema given to read a collection with cannot be used.
    #[error("Arrow schema, field {field}: {reason}")]
    ArrowSchema {
        /// The field (`a.b` for a struct's child).
        field: String,
        /// What is wrong, and what to give instead.
        reason: String,
    },
    /// A Parquet file could not be written (`Snapshot::export_parquet`): the output failed
    /// (a full disk, a closed pipe), or the encoder refused the columns.
    #[error("writing Parquet: {reason}")]
    Parquet {
        /// The writer's message.
        reason: String,
    },
    /// A query cannot run as asked.
    #[error("invalid query: {reason}")]
    InvalidQuery {
        /// What is wrong.
        reason: String,
    },
    /// An operating system call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or folder involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A stored value (codec header and compressed payload) is damaged.
    #[error(
        "stored document value is corrupt at byte {offset}: {problem}; the value cannot be \
         decoded (restore it from a backup or delete the document)"
    )]
    CorruptValue {
        /// Byte offset in the stored value where the problem was found.
        offset: usize,
        /// What is wrong there.
        problem: String,
    },
    /// A stored value needs a compression dictionary that is not loaded.
    #[error(
        "stored document needs compression dictionary {id}, which is not loaded; load every \
         dictionary of the collection before reading its documents"
    )]
    MissingDictionary {
        /// The dictionary's id within its collection.
        id: u32,
    },
    /// A backup, shipment or restore failed (see [`crate::backup`]).
    #[error(transparent)]
    Backup(#[from] crate::backup::error::BackupError),
    /// zstd failed outside decoding (creating a context, compressing, loading a dictionary).
    #[error("zstd could not {op}: {message}")]
    Zstd {
        /// What was being done.
        op: &'static str,
        /// zstd's message.
        message: String,
    },
}

/// More variants of [`Error`] live here to keep the enum readable.
impl Error {
    /// A stored document (or block) of `collection` under `id` that does not decode.
    pub(crate) fn corrupt_document(collection: &str, id: &[u8], reason: impl Into<String>) -> Self {
        Error::CorruptDocument {
            collection: collection.to_owned(),
            id: String::from_utf8_lossy(id).into_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
