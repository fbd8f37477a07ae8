//! What can go wrong in a backup, a shipment or a restore (beside I/O and the database's
//! own errors, which keep their variants of [`crate::Error`]).

use std::path::PathBuf;
use stele_table::TableId;

/// Errors of [`crate::backup`], wrapped in [`crate::Error::Backup`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// The destination folder holds something other than a Stele backup.
    #[error(
        "{} is not a Stele backup (it is not empty and has no points/ folder): give an empty or new folder, or a backup made before",
        path.display()
    )]
    NotABackup {
        /// The destination folder.
        path: PathBuf,
    },
    /// The destination holds a later commit than the source: a backup of another database,
    /// or of this one before it was restored to an earlier point.
    #[error(
        "backup {} holds version {dest_seq} but the database is at version {source_seq}: it is a backup of another database (use a new folder)",
        path.display()
    )]
    DestinationAhead {
        /// The destination folder.
        path: PathBuf,
        /// The last version the destination holds.
        dest_seq: u64,
        /// The version the source is at.
        source_seq: u64,
    },
    /// A table's bytes as read do not hash to its name: the source file is damaged.
    #[error(
        "table {} does not match its name (its bytes hash to {found}): the source is damaged; run `stele verify` on it",
        path.display()
    )]
    TableMismatch {
        /// The file read.
        path: PathBuf,
        /// The id its name gives.
        expected: TableId,
        /// The id its bytes give.
        found: TableId,
    },
    /// The version asked for is not held by the backup.
    #[error(
        "backup {} holds no version {asked}: it holds {held} (list them with `stele restore {} --at`)",
        path.display(), path.display()
    )]
    NoSuchPoint {
        /// The backup folder.
        path: PathBuf,
        /// What was asked, as given.
        asked: String,
        /// The versions held, as text.
        held: String,
    },
    /// The restore's output exists.
    #[error(
        "{} exists: a restore writes a new folder (remove it or give another path)",
        path.display()
    )]
    OutputExists {
        /// The output folder.
        path: PathBuf,
    },
    /// Files a restore needs are damaged or missing; nothing was written.
    #[error(
        "backup {} cannot give version {seq}: {count} problem(s) in the files it needs, first: {first} (run `stele verify {}`; an earlier version may still be whole)",
        path.display(), path.display()
    )]
    Damaged {
        /// The backup folder.
        path: PathBuf,
        /// The version asked for.
        seq: u64,
        /// How many problems touch the files needed.
        count: usize,
        /// The first of them, as text.
        first: String,
    },
    /// A restored database did not open at the version asked for.
    #[error(
        "the restored database opened at version {found}, not {expected}: the backup's log does not hold what its records say (nothing was written to the output)"
    )]
    RestoredWrong {
        /// The version asked for.
        expected: u64,
        /// The version it opened at.
        found: u64,
    },
    /// A retention rule or a point in time does not parse.
    #[error("{what} {text:?} does not parse: {expected}")]
    BadArgument {
        /// Which argument.
        what: &'static str,
        /// The text given.
        text: String,
        /// What is expected.
        expected: &'static str,
    },
}
