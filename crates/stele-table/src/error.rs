//! The one error type of this crate.

use std::fmt;
use std::path::PathBuf;

/// The fix that [`Error::DuplicateKey`]'s message suggests, in this crate's API terms.
/// Front ends whose users choose the policy elsewhere (a command-line flag, a keyword
/// argument) replace this exact text in the message with their own option's name.
pub const DUPLICATE_KEY_FIX: &str =
    "choose DuplicatePolicy::KeepFirst or KeepLast to allow duplicates";

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which part of a table file an integrity error is about.
///
/// Every corruption report names the part, so a user knows whether a whole file is
/// unusable (footer, index) or only one block of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Part {
    /// The fixed-size footer at the end of the file.
    Footer,
    /// The block index between the data blocks and the footer.
    Index,
    /// A data block, by its number (0-based) and its byte range in the file.
    Block {
        /// Block number, 0-based.
        number: u64,
        /// Offset of the block's first byte in the file.
        offset: u64,
        /// Length of the block in bytes.
        len: u64,
    },
    /// The file as a whole (its length does not match what the footer says).
    File,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Footer => f.write_str("footer"),
            Part::Index => f.write_str("index"),
            Part::Block {
                number,
                offset,
                len,
            } => write!(
                f,
                "data block {number} (bytes {offset}..{})",
                offset.saturating_add(*len)
            ),
            Part::File => f.write_str("file"),
        }
    }
}

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating system call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "creating temporary table file".
        op: &'static str,
        /// The file or folder involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Keys given to a [`TableBuilder`](crate::TableBuilder) must be strictly ascending.
    #[error(
        "keys must be added in ascending byte order: {:?} came after {:?} (use a Sorter for input in any order)",
        got.escape_ascii().to_string(),
        previous.escape_ascii().to_string()
    )]
    OutOfOrder {
        /// The key added before.
        previous: Vec<u8>,
        /// The key that was out of order.
        got: Vec<u8>,
    },
    /// A key was added twice and the policy is [`DuplicatePolicy::Reject`](crate::DuplicatePolicy::Reject).
    #[error("duplicate key {:?} ({DUPLICATE_KEY_FIX})", key.escape_ascii().to_string())]
    DuplicateKey {
        /// The duplicated key.
        key: Vec<u8>,
    },
    /// An entry added to a diff table is not a diff operation.
    #[error("invalid diff entry for key {:?}: {reason}", key.escape_ascii().to_string())]
    InvalidDiffEntry {
        /// The entry's key.
        key: Vec<u8>,
        /// What is wrong.
        reason: &'static str,
    },
    /// A key or value is larger than the format allows.
    #[error("{what} of {len} bytes is larger than the limit of {max_bytes} bytes")]
    TooLarge {
        /// "key" or "value".
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The largest length allowed.
        max_bytes: u64,
    },
    /// An option has a value that cannot work.
    #[error("invalid option {name} = {value}: {reason}")]
    InvalidOption {
        /// Option name.
        name: &'static str,
        /// The value given.
        value: u64,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The file does not end with the table magic: it is not a Stele table (or is cut short).
    #[error("not a Stele table: {reason} (file of {file_bytes} bytes)")]
    NotATable {
        /// What was found instead.
        reason: &'static str,
        /// Length of the file or buffer.
        file_bytes: u64,
    },
    /// The table was written by a newer (or unknown) version of the format.
    #[error(
        "table format version {found} is not supported (this build reads versions 2 to {supported}); upgrade stele"
    )]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Newest version this build reads (it reads versions 2 up to this one).
        supported: u32,
    },
    /// A stored checksum does not match the bytes: the file is damaged.
    #[error(
        "checksum mismatch in {part}: stored {stored:#018x}, computed {computed:#018x}; the file is damaged, rebuild or restore it"
    )]
    ChecksumMismatch {
        /// The damaged part.
        part: Part,
        /// Checksum in the file.
        stored: u64,
        /// Checksum of the bytes as read.
        computed: u64,
    },
    /// The bytes of a part are inconsistent although its checksum matched (or before it is checked).
    #[error("corrupt {part}: {reason}; the file is damaged, rebuild or restore it")]
    Corrupt {
        /// The damaged part.
        part: Part,
        /// What is inconsistent.
        reason: &'static str,
    },
    /// A bug in this crate: an internal invariant failed. Nothing was written.
    /// A table set's manifest does not decode or does not match its shards.
    #[error(
        "table set manifest {} is damaged: {reason}; rebuild it with TableSet::commit (`stele table \
         commit`) from its shards",
        path.display()
    )]
    CorruptSet {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The shards given to `TableSet::commit` do not make a set.
    #[error("cannot commit the table set: {reason}")]
    InvalidSet {
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// A shard named by a set's manifest is not beside it.
    #[error(
        "shard {} of table set {} is missing: copy the shards with their manifest (they are          looked up in its folder)",
        shard.display(),
        manifest.display()
    )]
    MissingShard {
        /// Where the shard was looked for.
        shard: PathBuf,
        /// The manifest naming it.
        manifest: PathBuf,
    },
    #[error("internal error: {0}; please report this bug")]
    Internal(&'static str),
    /// A table was opened as a list or a list as a table.
    #[error("wrong kind of file: expected a {expected}, found a {found}")]
    WrongKind {
        /// What the caller asked for.
        expected: &'static str,
        /// What the file is.
        found: &'static str,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(part: Part, reason: &'static str) -> Self {
        Error::Corrupt { part, reason }
    }
}
