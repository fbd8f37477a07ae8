//! How many bytes a database folder takes on disk.

use std::path::Path;

use crate::Database;

/// Bytes a database's folder takes on disk, from [`Database::disk_usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DiskUsage {
    /// Every file under the folder: tables, log, manifest, lock file.
    pub total_bytes: u64,
    /// The write-ahead log's records (part of `total_bytes`). They go at the next
    /// checkpoint, which [`Database::compact`] forces.
    pub log_bytes: u64,
    /// Zeroes the log keeps written ahead of its records for the next commits to write
    /// into: as many as its records, from 16 KiB up to 1 MiB, given back at a clean close
    /// (part of `total_bytes`; see `docs/FORMAT.md`, "Write-ahead log record").
    pub log_zeroes_bytes: u64,
    /// The tables of every index (part of `total_bytes`; per collection:
    /// [`CollectionStats::index_bytes`](crate::CollectionStats::index_bytes)).
    pub index_bytes: u64,
}

impl Database {
    /// Bytes the database's folder takes on disk now (file lengths, not allocated blocks).
    ///
    /// Best effort: a background compaction may add or remove table files while the folder
    /// is walked; a file that vanishes or cannot be read counts as zero rather than failing.
    ///
    /// ```no_run
    /// # fn main() -> stele::Result<()> {
    /// let db = stele::Database::open("/tmp/shop")?;
    /// let usage = db.disk_usage();
    /// println!("{} bytes, {} in the log", usage.total_bytes, usage.log_bytes);
    /// # Ok(()) }
    /// ```
    pub fn disk_usage(&self) -> DiskUsage {
        let index_bytes = crate::index::stats::index_bytes(&self.snapshot().state, None);
        usage(
            self.dir(),
            &self.wal_dir(),
            self.log_zeroes_bytes(),
            index_bytes,
        )
    }
}

/// The usage of database folder `dir` whose log (in `wal_dir`) holds `log_zeroes_bytes` of
/// zeroes ahead, and whose indexes' tables take `index_bytes`.
pub(crate) fn usage(
    dir: &Path,
    wal_dir: &Path,
    log_zeroes_bytes: u64,
    index_bytes: u64,
) -> DiskUsage {
    DiskUsage {
        total_bytes: folder_bytes(dir),
        log_bytes: folder_bytes(wal_dir).saturating_sub(log_zeroes_bytes),
        log_zeroes_bytes,
        index_bytes,
    }
}

/// Bytes of every file under `dir`, recursively; unreadable entries count as zero.
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_the_log_and_grows_with_data() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", "/tmp", e))?;
        let db = Database::open(dir.path())?;
        let empty = db.disk_usage();
        let mut batch = db.batch();
        for i in 0..100 {
            batch.put_json(
                "c",
                &format!("{i}"),
                br#"{"name": "a document of some length"}"#,
            )?;
        }
        db.commit(batch)?;
        let written = db.disk_usage();
        assert!(
            written.log_bytes > empty.log_bytes,
            "{written:?} vs {empty:?}"
        );
        // The log writes into zeroes it wrote ahead when it opened.
        assert!(
            empty.log_zeroes_bytes > written.log_zeroes_bytes,
            "{written:?}"
        );
        assert!(written.log_zeroes_bytes > 0);
        // Everything besides the log stays (tables, manifest, lock file).
        let rest = |u: &DiskUsage| u.total_bytes - u.log_bytes - u.log_zeroes_bytes;
        assert!(rest(&written) >= rest(&empty), "{written:?} vs {empty:?}");
        db.compact()?;
        let compacted = db.disk_usage();
        assert!(
            compacted.log_bytes < written.log_bytes,
            "{compacted:?} vs {written:?}"
        );
        assert!(
            compacted.total_bytes > compacted.log_bytes,
            "tables are counted"
        );
        Ok(())
    }
}
