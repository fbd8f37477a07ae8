//! The one error type of this crate.

use std::path::PathBuf;

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
    /// zstd failed outside decoding (creating a context, compressing, loading a dictionary).
    #[error("zstd could not {op}: {message}")]
    Zstd {
        /// What was being done.
        op: &'static str,
        /// zstd's message.
        message: String,
    },
}
