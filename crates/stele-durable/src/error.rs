//! The one error type of this crate.

use std::path::PathBuf;
use stele_table::TableId;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a table failed (including corruption found in a table).
    #[error(transparent)]
    Table(#[from] stele_table::Error),
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
    /// A table of the stack is not in the store's folder.
    #[error(
        "table {id} is missing from {}{}: a diff can only be opened with every layer below it (copy the missing file into the folder)",
        dir.display(),
        needed_by.map(|n| format!(" (it is the layer below diff {n})")).unwrap_or_default()
    )]
    MissingTable {
        /// The missing table.
        id: TableId,
        /// The diff that applies on top of it, if the table was reached through a diff.
        needed_by: Option<TableId>,
        /// The store's folder.
        dir: PathBuf,
    },
    /// A table is of another kind than the collection being opened.
    #[error("table {id} is {found}, but {expected} was expected")]
    WrongKind {
        /// The table.
        id: TableId,
        /// What the caller asked for, e.g. "a map".
        expected: &'static str,
        /// What the table is.
        found: &'static str,
    },
    /// A stored diff entry does not decode (the table's checksums held, so the file was
    /// written this way by something other than this crate).
    #[error("diff table {id} has an invalid entry for key {:?}: {reason}", key.escape_ascii().to_string())]
    CorruptDiff {
        /// The diff table.
        id: TableId,
        /// The entry's key.
        key: Vec<u8>,
        /// What is wrong.
        reason: &'static str,
    },
    /// A chain of diffs is longer than [`MAX_LAYERS`](crate::MAX_LAYERS) or loops.
    #[error("the stack under table {top} {reason}; compact it or check the files")]
    BadStack {
        /// The table the stack was opened from.
        top: TableId,
        /// What is wrong.
        reason: &'static str,
    },
    /// A root was switched by someone else since this handle read it.
    #[error(
        "root {name:?} changed under this writer: expected {}, found {} (reopen it and redo the change)",
        show(expected),
        show(found)
    )]
    RootConflict {
        /// The root.
        name: String,
        /// The table the writer expected the root to point at (`None`: absent).
        expected: Option<TableId>,
        /// The table it points at now (`None`: absent).
        found: Option<TableId>,
    },
    /// A root file does not decode.
    #[error("root file {} is corrupt: {reason}", path.display())]
    CorruptRoot {
        /// The root file.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// Root names are file names: 1 to 100 of `A-Z a-z 0-9 . _ -`, not starting with a dot.
    #[error(
        "invalid root name {name:?}: use 1 to 100 letters, digits, '.', '_' or '-', not starting with '.'"
    )]
    InvalidRootName {
        /// The name given.
        name: String,
    },
    /// No root of that name exists.
    #[error("no root named {name:?} in {}", dir.display())]
    NoSuchRoot {
        /// The name asked for.
        name: String,
        /// The store's folder.
        dir: PathBuf,
    },
    /// A path that is not a table file name.
    #[error(
        "{} is not a table path: table files are named <32 hex digits>.stt (their content hash)",
        path.display()
    )]
    NotATablePath {
        /// The path given.
        path: PathBuf,
    },
    /// A list position past the end.
    #[error("position {index} is out of range for a list of {len} values")]
    OutOfRange {
        /// The position given.
        index: u64,
        /// The list's length.
        len: u64,
    },
    /// `commit` on a collection that was not opened from a root.
    #[error(
        "this collection was not opened from a root: open it with Store::map_at_root / list_at_root, or switch a root with Store::switch_root"
    )]
    NotBoundToRoot,
    /// A write to a store opened with [`Store::open_read_only`](crate::Store::open_read_only).
    #[error(
        "the store in {} was opened read-only: open it with Store::open to write tables",
        dir.display()
    )]
    ReadOnly {
        /// The store's folder.
        dir: PathBuf,
    },
    /// A key or value larger than tables allow.
    #[error("{what} of {len} bytes is larger than the limit of {max_bytes} bytes")]
    TooLarge {
        /// "key" or "value".
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max_bytes: usize,
    },
}

fn show(id: &Option<TableId>) -> String {
    id.map_or_else(|| "no root".to_owned(), |id| format!("table {id}"))
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

pub(crate) fn check_item(what: &'static str, bytes: &[u8]) -> Result<()> {
    // Diff values carry one operation byte on top of the value.
    let max_bytes = stele_table::MAX_ITEM_BYTES - 1;
    if bytes.len() > max_bytes {
        return Err(Error::TooLarge {
            what,
            len: bytes.len(),
            max_bytes,
        });
    }
    Ok(())
}
