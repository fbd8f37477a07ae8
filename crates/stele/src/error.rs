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
}
