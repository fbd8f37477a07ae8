//! Backups, replicas and restores by files: online, incremental, to a point in time.
//!
//! A database's tables are immutable and named by the hash of their bytes, and its log is
//! segmented and only ever appended to, so a consistent copy is a matter of copying the
//! right files in the right order, beside a writer that keeps committing:
//!
//! - [`backup`]: one manifest (a commit point), the tables it names and the log records
//!   after it up to the last whole one ([`cut`]), written into a destination folder so that
//!   it is a whole database at one commit point after every step ([`ship`]); tables the
//!   destination holds already are not written again (incremental), others are
//!   hard-linked on the same file system or copied and checked against their names.
//! - [`Replicator`]: the same, again and again, shipping only what is new (new tables, new
//!   records appended to the segments shipped before), keeping points by a [`Retention`].
//! - [`restore`]: a database at any version a backup holds ([`At`]), all or nothing.
//! - [`verify`]: every file of a database or backup checked, each problem reported with its
//!   file and offset.
//!
//! A backup folder is a database folder (open it read-only: `Database::open_read_only`,
//! which also follows a replica as shipments arrive) with a `points/` folder: the manifest
//! of each point kept, and `shipped.log` (what version was shipped when). Layout, order
//! of writes and guarantees: `docs/BACKUPS.md`.

mod copy;
mod cut;
pub(crate) mod error;
mod pace;
mod points;
mod restore;
mod ship;
mod verify;

pub use error::BackupError;
pub use pace::parse_rate;
pub use points::{Point, Retention, is_backup, points};
pub use restore::{At, Held, Restored, held};
pub use ship::Shipment;
pub use verify::{Finding, VerifyReport, verify};

pub(crate) use crate::wal::tail::Position;

use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stele_table::Storage;

/// The folder of a backup's points.
pub(crate) const POINTS_DIR: &str = "points";
/// The shipping log in the points folder.
pub(crate) const SHIPPED_LOG: &str = "shipped.log";

/// How backups, shipments and restores write.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BackupOptions {
    storage: Arc<dyn Storage>,
    link: bool,
    keep: Option<Retention>,
    max_rate: Option<u64>,
}

impl Default for BackupOptions {
    fn default() -> Self {
        BackupOptions {
            storage: Arc::new(stele_table::FsStorage),
            link: true,
            keep: None,
            max_rate: None,
        }
    }
}

impl BackupOptions {
    /// Hard-links tables where the destination is on the same file system (default: yes).
    /// A link costs nothing and the table is immutable; but the destination then shares the
    /// source's disk, so a backup meant to survive that disk's loss wants copies (`false`).
    pub fn link(mut self, link: bool) -> Self {
        self.link = link;
        self
    }

    /// Points kept after each shipment (default: all). The newest is always kept.
    pub fn keep(mut self, keep: Option<Retention>) -> Self {
        self.keep = keep;
        self
    }

    /// Copies tables at most `bytes_per_second` (all copying threads together; default:
    /// none, the disk's rate). The database's writer makes every commit durable, so each
    /// waits for the disk; a copy at the disk's rate keeps it busy and the writer's commits
    /// queue behind the copy's writes (0.24-0.53 of its commit rate beside an unlimited copy
    /// on this project's VM, its p99 commit time 19-117 ms against 7-21 ms alone). A limit
    /// leaves the disk idle part of the time for the writer, at the price of a longer
    /// backup: at 50 MB/s (about a tenth of that disk's write rate) the writer's p99 was
    /// 4-18 ms (0.6-1.4x its own alone), its rate 0.64-1.29 of alone (noisy), and the 1 GB
    /// backup took 23 s instead of 3.5-5 (`docs/BACKUPS.md`, "Beside a writer"). The log
    /// records shipped (the
    /// writer's since its last checkpoint, up to `checkpoint_bytes`) are paced too; hard
    /// links and manifests are not (nothing, or little, is written), nor are restores (no
    /// writer uses the folder they write). A rate under 16 KiB/s
    /// is refused when the backup starts ([`BackupError::BadArgument`]); parse a user's
    /// text with [`parse_rate`].
    pub fn max_rate(mut self, bytes_per_second: Option<u64>) -> Self {
        self.max_rate = bytes_per_second;
        self
    }

    /// The pace of the copies, checked.
    fn pace(&self) -> Result<Option<pace::Pace>> {
        match self.max_rate {
            None => Ok(None),
            Some(r) if r < pace::MIN_RATE => Err(BackupError::BadArgument {
                what: "backup rate limit",
                text: format!("{r} bytes/s"),
                expected: "at least 16384 bytes/s (16 KiB/s), or no limit",
            }
            .into()),
            Some(r) => Ok(Some(pace::Pace::new(r))),
        }
    }

    /// Writes through `storage` (tests inject faults here).
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = storage;
        self
    }
}

/// Backs up the database in `db` (open by a writer in any process, or at rest) into `dest`:
/// a new folder, or a backup made before, which gets only what it lacks. Returns what was
/// written. The backup is at the version the database was at when the backup started (its
/// last whole log record then).
///
/// ```no_run
/// # fn main() -> stele::Result<()> {
/// let shipped = stele::backup::backup("/srv/shop", "/mnt/backups/shop")?;
/// println!("backed up version {}", shipped.seq);
/// let report = stele::backup::verify("/mnt/backups/shop".as_ref())?;
/// assert!(report.is_ok());
/// # Ok(()) }
/// ```
pub fn backup(db: impl AsRef<Path>, dest: impl AsRef<Path>) -> Result<Shipment> {
    backup_with(db, dest, &BackupOptions::default())
}

/// [`backup`] with options.
pub fn backup_with(
    db: impl AsRef<Path>,
    dest: impl AsRef<Path>,
    opts: &BackupOptions,
) -> Result<Shipment> {
    Replicator::new(db, dest, opts.clone())?.ship()
}

/// Restores the backup in `dir` at `at` into the new folder `out`: see [`restore_with`].
pub fn restore(dir: impl AsRef<Path>, out: impl AsRef<Path>, at: At) -> Result<Restored> {
    restore_with(dir, out, at, &BackupOptions::default())
}

/// Restores the backup in `dir` at `at` into the new folder `out`, all or nothing: the
/// files it needs are verified first, and the database is built beside `out`, checked to
/// open at the version asked for, then renamed to `out`. Fails with
/// [`BackupError::Damaged`] (writing nothing) if a file it needs is damaged or missing.
pub fn restore_with(
    dir: impl AsRef<Path>,
    out: impl AsRef<Path>,
    at: At,
    opts: &BackupOptions,
) -> Result<Restored> {
    restore::restore(dir.as_ref(), out.as_ref(), at, &opts.storage, opts.link)
}

/// Ships a database to a destination folder again and again: each [`ship`](Self::ship)
/// writes what is new since the last (new tables, the records appended to the log, the
/// manifest when the writer checkpointed), then applies the retention. A reader of the
/// database (it never writes there and takes no lock the writer waits for), so a slow or
/// stalled destination slows this process only: the writer's commits go on, and the
/// replica falls behind by the time a shipment takes.
#[derive(Debug)]
pub struct Replicator {
    source: PathBuf,
    dest: ship::Dest,
    keep: Option<Retention>,
    /// The source segment shipped last, share-locked until the next shipment: the writer
    /// keeps it (as for any reader) so its rest reaches the destination even if the
    /// writer checkpoints and moves on meanwhile.
    tailed: Option<crate::wal::tail::SegmentReader>,
}

/// One step of a [`Replicator`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// What was shipped.
    pub shipment: Shipment,
    /// From the start of the cut to the shipment being durable: a commit made just after
    /// the previous cut reaches the replica at most one interval plus this later.
    pub took: Duration,
    /// Points removed by the retention.
    pub points_pruned: usize,
}

impl Replicator {
    /// A replicator from the database in `source` to the folder `dest` (new, or a backup
    /// shipped to before: what it holds is not shipped again).
    pub fn new(
        source: impl AsRef<Path>,
        dest: impl AsRef<Path>,
        opts: BackupOptions,
    ) -> Result<Replicator> {
        let pace = opts.pace()?;
        let dest = ship::Dest::open(dest.as_ref(), opts.storage, opts.link, pace)?;
        Ok(Replicator {
            source: source.as_ref().to_path_buf(),
            dest,
            keep: opts.keep,
            tailed: None,
        })
    }

    /// Ships what is new; see [`Replicator::step`] for the timing too.
    pub fn ship(&mut self) -> Result<Shipment> {
        Ok(self.step()?.shipment)
    }

    /// Ships what is new and applies the retention.
    pub fn step(&mut self) -> Result<Progress> {
        let start = Instant::now();
        let cut = cut::take(&self.source, &self.dest.shipped)?;
        let shipment = self.dest.ship(&cut)?;
        self.tailed = cut.segments.into_iter().next_back().map(|s| s.reader);
        let took = start.elapsed();
        let points_pruned = match self.keep {
            Some(keep) => points::prune(&self.dest.storage, &self.dest.dir, keep)?,
            None => 0,
        };
        Ok(Progress {
            shipment,
            took,
            points_pruned,
        })
    }

    /// The destination folder.
    pub fn dest(&self) -> &Path {
        &self.dest.dir
    }
}

impl crate::Database {
    /// Backs this database up into `dest` while it keeps taking commits: see
    /// [`backup`](crate::backup::backup).
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<Shipment> {
        backup(self.dir(), dest)
    }
}

#[cfg(test)]
mod tests;
