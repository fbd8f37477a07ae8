//! Writing a cut into a destination folder, in an order that leaves it a whole database
//! at one commit point after every step:
//!
//! 1. the tables the destination lacks (each written under a temp name, checked against
//!    its content hash, synced, then given its name; or hard-linked: see [`super::copy`]),
//!    then their folder synced: files no manifest names yet change nothing;
//! 2. the manifest, as a point (`points/<seq>.manifest`) and as `MANIFEST`, each replaced
//!    atomically: the destination is now at the manifest's commit point, whatever log it
//!    held (its old segments hold only records the manifest's tables hold, or records that
//!    follow on from them: the log is one sequence);
//! 3. the log records after it, segment by segment in order: a new segment is written
//!    whole under a temp name and renamed in, a segment shipped before gets its new records
//!    appended and synced. A crash in an append leaves a torn tail in the last segment,
//!    which opening cuts (and the next shipment cuts first);
//! 4. a line `<last version> <unix ms>` appended to `points/shipped.log`: what was
//!    shipped when, for `restore --at TIME` and for `verify` to notice a log cut short.

use super::copy::{COPY_CHUNK_BYTES, Job, put_tables};
use super::cut::Cut;
use super::error::BackupError;
use super::{POINTS_DIR, Position};
use crate::db::{TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::manifest;
use crate::wal;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use stele_table::Storage;

/// What one shipment did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shipment {
    /// The version (last batch's sequence number) the destination is at now.
    pub seq: u64,
    /// The version of the manifest shipped (the tables hold everything up to it).
    pub manifest_seq: u64,
    /// Tables copied (their bytes written and checked against their names).
    pub tables_copied: usize,
    /// Tables hard-linked (same file system; nothing written).
    pub tables_linked: usize,
    /// Tables the destination held already.
    pub tables_kept: usize,
    /// Bytes written: copied tables, log records, manifests.
    pub bytes_written: u64,
    /// Log bytes shipped.
    pub log_bytes: u64,
}

/// A destination folder and what it holds of each log segment.
#[derive(Debug)]
pub(crate) struct Dest {
    pub dir: PathBuf,
    pub storage: Arc<dyn Storage>,
    /// Hard links for tables where the file system allows.
    link: bool,
    /// The copies' rate limit.
    pace: Option<super::pace::Pace>,
    /// Per segment (by first sequence number): the whole records the destination holds.
    pub shipped: BTreeMap<u64, Position>,
    /// The last version shipped (from `points/shipped.log`), 0 if none.
    pub last_seq: u64,
}

impl Dest {
    /// Opens (creating it if new) the destination folder `dir`. Refuses a folder that holds
    /// something else than a backup. Segments a killed shipment left with a torn tail are
    /// cut back to their whole records.
    pub(crate) fn open(
        dir: &Path,
        storage: Arc<dyn Storage>,
        link: bool,
        pace: Option<super::pace::Pace>,
    ) -> Result<Dest> {
        let points = dir.join(POINTS_DIR);
        let is_empty = match std::fs::read_dir(dir) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(Error::io("listing backup folder", dir, e)),
        };
        if !is_empty && !points.is_dir() {
            return Err(BackupError::NotABackup {
                path: dir.to_path_buf(),
            }
            .into());
        }
        let tables = dir.join(TABLES_DIR);
        for d in [
            tables.join(stele_durable::ROOTS_DIR),
            dir.join(WAL_DIR),
            points.clone(),
        ] {
            stele_table::create_dir_all(&*storage, &d)
                .map_err(|e| Error::io("creating backup folder", &d, e))?;
        }
        let mut shipped = BTreeMap::new();
        for (first, path) in wal::list_segments(&dir.join(WAL_DIR))? {
            let bytes = std::fs::read(&path).map_err(|e| Error::io("reading segment", &path, e))?;
            let mut at = Position::default();
            at.take(&bytes);
            if at.read_bytes < bytes.len() as u64 {
                let mut file = storage
                    .open_log(&path)
                    .map_err(|e| Error::io("opening log segment", &path, e))?;
                file.set_len(at.read_bytes)
                    .and_then(|()| file.sync())
                    .map_err(|e| Error::io("cutting the torn tail of log segment", &path, e))?;
            }
            shipped.insert(first, at);
        }
        let last_seq = super::points::shipped_log(dir)?
            .last()
            .map_or(0, |(seq, _)| *seq);
        Ok(Dest {
            dir: dir.to_path_buf(),
            storage,
            link,
            pace,
            shipped,
            last_seq,
        })
    }

    /// Writes `cut` into the destination (see the module's comment for the order).
    pub(crate) fn ship(&mut self, cut: &Cut) -> Result<Shipment> {
        // A segment shipped before whose records the source no longer holds as shipped:
        // the writer cut a record off after its sync failed (an unacknowledged commit this
        // destination took). The source's log replaces it, and may be behind it.
        let rewrites = cut
            .segments
            .iter()
            .any(|s| s.from == 0 && self.shipped.get(&s.first).is_some_and(|p| p.read_bytes > 0));
        if self.last_seq > cut.last_seq && !rewrites {
            return Err(BackupError::DestinationAhead {
                path: self.dir.clone(),
                dest_seq: self.last_seq,
                source_seq: cut.last_seq,
            }
            .into());
        }
        let mut report = Shipment {
            seq: cut.last_seq,
            manifest_seq: cut.manifest.seq,
            ..Shipment::default()
        };
        let tables = self.dir.join(TABLES_DIR);
        let mut jobs = Vec::new();
        for &id in &cut.tables {
            let to = tables.join(id.file_name());
            if to.exists() {
                report.tables_kept += 1;
                continue;
            }
            let from = cut.tables_dir.join(id.file_name());
            jobs.push(Job { id, from, to });
        }
        let put = put_tables(&*self.storage, jobs, self.link, self.pace.as_ref())?;
        report.tables_linked += put.linked;
        report.tables_copied += put.copied;
        report.bytes_written += put.copied_bytes;
        if put.linked + put.copied > 0 {
            self.storage
                .sync_dir(&tables)
                .map_err(|e| Error::io("syncing folder", &tables, e))?;
        }
        let point = super::points::point_path(&self.dir, cut.manifest.seq);
        let len = cut.manifest_bytes.len() as u64;
        if !point.exists() {
            self.replace(&point, &cut.manifest_bytes)?;
            report.bytes_written += len;
        }
        let current = self.dir.join(manifest::FILE_NAME);
        if std::fs::read(&current).ok().as_deref() != Some(cut.manifest_bytes.as_slice()) {
            self.replace(&current, &cut.manifest_bytes)?;
            report.bytes_written += len;
        }
        for seg in &cut.segments {
            if seg.bytes.is_empty()
                && seg.from == self.shipped.get(&seg.first).map_or(0, |p| p.read_bytes)
            {
                // Nothing new (an empty segment the writer just started is not copied).
                if seg.from > 0 {
                    self.shipped.insert(seg.first, seg.end.clone());
                }
                continue;
            }
            let path = wal::segment_path(&self.dir.join(WAL_DIR), seg.first);
            if seg.from == 0 {
                self.put_segment(&path, &seg.bytes)?;
            } else {
                self.append(&path, seg.from, &seg.bytes)?;
            }
            report.log_bytes += seg.bytes.len() as u64;
            report.bytes_written += seg.bytes.len() as u64;
            self.shipped.insert(seg.first, seg.end.clone());
        }
        if rewrites {
            // Readers of the destination hold the replaced segment's old file: a new
            // manifest file (the same bytes) makes them load again.
            self.replace(&current, &cut.manifest_bytes)?;
        }
        if cut.last_seq != self.last_seq || self.last_seq == 0 {
            super::points::note_shipped(&*self.storage, &self.dir, cut.last_seq)?;
            self.last_seq = cut.last_seq;
        }
        Ok(report)
    }

    fn replace(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        let temp = path.with_file_name(format!(".{name}.tmp"));
        Ok(stele_table::replace_file(
            &*self.storage,
            &temp,
            path,
            bytes,
        )?)
    }

    /// Writes a new log segment: at once, or (with a rate limit) a megabyte at a time at
    /// the pace, under a temp name, synced, renamed into place, the folder synced (as
    /// `replace_file` does).
    fn put_segment(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let Some(pace) = &self.pace else {
            return self.replace(path, bytes);
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("segment");
        let temp = path.with_file_name(format!(".{name}.tmp"));
        if std::fs::symlink_metadata(&temp).is_ok() {
            let _ = self.storage.remove(&temp);
        }
        let written = (|| {
            let mut file = self
                .storage
                .create(&temp)
                .map_err(|e| Error::io("creating log segment copy", &temp, e))?;
            for chunk in bytes.chunks(COPY_CHUNK_BYTES) {
                pace.take(chunk.len());
                file.write_all(chunk)
                    .map_err(|e| Error::io("writing log segment copy", &temp, e))?;
            }
            file.sync()
                .map_err(|e| Error::io("syncing log segment copy", &temp, e))?;
            drop(file);
            self.storage
                .rename(&temp, path)
                .map_err(|e| Error::io("naming log segment copy", path, e))
        })();
        if written.is_err() {
            let _ = self.storage.remove(&temp);
        }
        written?;
        let dir = path.parent().unwrap_or(Path::new("."));
        self.storage
            .sync_dir(dir)
            .map_err(|e| Error::io("syncing folder", dir, e))
    }

    /// Appends `bytes` at `at` of the segment `path` and syncs them; with a rate limit, a
    /// megabyte at a time at the pace.
    fn append(&self, path: &Path, at: u64, bytes: &[u8]) -> Result<()> {
        let mut file = self
            .storage
            .open_log(path)
            .map_err(|e| Error::io("opening log segment", path, e))?;
        let step = match self.pace {
            Some(_) => COPY_CHUNK_BYTES,
            None => bytes.len().max(1),
        };
        let mut written = Ok(());
        let mut offset = at;
        for chunk in bytes.chunks(step) {
            if let Some(pace) = &self.pace {
                pace.take(chunk.len());
            }
            written = match file.write_at(offset, chunk) {
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                    // A storage that only appends: the file holds exactly `offset` bytes
                    // (cut at open and after every shipment, then written in order).
                    file.write_all(chunk).and_then(|()| file.flush())
                }
                other => other,
            };
            if written.is_err() {
                break;
            }
            offset += chunk.len() as u64;
        }
        written
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::io("appending to log segment", path, e))
    }
}
