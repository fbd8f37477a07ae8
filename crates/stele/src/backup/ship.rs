//! Writing a cut into a destination folder, in an order that leaves it a whole database
//! at one commit point after every step:
//!
//! 1. the tables the destination lacks (each written under a temp name, checked against
//!    its content hash, synced, then given its name; or hard-linked), then their folder
//!    synced: files no manifest names yet change nothing;
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

use super::cut::Cut;
use super::error::BackupError;
use super::{POINTS_DIR, Position};
use crate::db::{TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::manifest;
use crate::wal;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use stele_table::{Storage, TableId};

/// Bytes read and written at a time when a table is copied.
const COPY_CHUNK_BYTES: usize = 1 << 20;

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
    /// Per segment (by first sequence number): the whole records the destination holds.
    pub shipped: BTreeMap<u64, Position>,
    /// The last version shipped (from `points/shipped.log`), 0 if none.
    pub last_seq: u64,
}

impl Dest {
    /// Opens (creating it if new) the destination folder `dir`. Refuses a folder that holds
    /// something else than a backup. Segments a killed shipment left with a torn tail are
    /// cut back to their whole records.
    pub(crate) fn open(dir: &Path, storage: Arc<dyn Storage>, link: bool) -> Result<Dest> {
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
        // Copies are synced after the others of their group are written: the disk writes
        // one table back while the next is copied, instead of each waiting for its sync.
        let mut copying = Vec::new();
        for &id in &cut.tables {
            let to = tables.join(id.file_name());
            if to.exists() {
                report.tables_kept += 1;
                continue;
            }
            let from = cut.tables_dir.join(id.file_name());
            match start_table(&*self.storage, &from, &to, id, self.link) {
                Ok(Started::Linked) => report.tables_linked += 1,
                Ok(Started::Copying(c)) => copying.push(c),
                Err(e) => return Err(abandon(&*self.storage, copying, e)),
            }
            if copying.len() >= SYNC_GROUP {
                self.finish_all(&mut copying, &mut report)?;
            }
        }
        self.finish_all(&mut copying, &mut report)?;
        if report.tables_copied + report.tables_linked > 0 {
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
                self.replace(&path, &seg.bytes)?;
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

    /// Syncs and names every copy of `copying` (on an error, removes those left).
    fn finish_all(&self, copying: &mut Vec<Copying>, report: &mut Shipment) -> Result<()> {
        let mut left = std::mem::take(copying).into_iter();
        while let Some(c) = left.next() {
            match c.finish(&*self.storage) {
                Ok(n) => {
                    report.tables_copied += 1;
                    report.bytes_written += n;
                }
                Err(e) => return Err(abandon(&*self.storage, left.collect(), e)),
            }
        }
        Ok(())
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

    /// Appends `bytes` at `at` of the segment `path` and syncs them.
    fn append(&self, path: &Path, at: u64, bytes: &[u8]) -> Result<()> {
        let mut file = self
            .storage
            .open_log(path)
            .map_err(|e| Error::io("opening log segment", path, e))?;
        let written = match file.write_at(at, bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                // A storage that only appends: the file holds exactly `at` bytes (cut at
                // open and after every shipment).
                file.write_all(bytes).and_then(|()| file.flush())
            }
            other => other,
        };
        written
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::io("appending to log segment", path, e))
    }
}

/// Copies written before their syncs, at most: bounds the files open at once.
const SYNC_GROUP: usize = 64;

/// How a table got into the destination.
pub(crate) enum Put {
    Linked,
    /// Copied: this many bytes.
    Copied(u64),
}

/// A table being put into the destination.
pub(crate) enum Started {
    Linked,
    Copying(Copying),
}

/// A table copied under a temp name and checked against its id, not synced or named yet.
pub(crate) struct Copying {
    temp: PathBuf,
    to: PathBuf,
    file: Box<dyn stele_table::StorageFile>,
    bytes: u64,
}

impl Copying {
    /// Syncs the copy and gives it its name; returns its bytes. On an error the temp file
    /// is removed.
    pub(crate) fn finish(mut self, storage: &dyn Storage) -> Result<u64> {
        let synced = self
            .file
            .flush()
            .and_then(|()| self.file.sync())
            .map_err(|e| Error::io("syncing table copy", &self.temp, e));
        drop(self.file);
        let named = synced.and_then(|()| {
            storage
                .rename_new(&self.temp, &self.to)
                .map_err(|e| Error::io("naming copied table", &self.to, e))
        });
        if named.is_err() {
            let _ = storage.remove(&self.temp);
        }
        named.map(|_| self.bytes)
    }
}

/// Removes the temp files of `copying` (best effort) and returns `e`.
fn abandon(storage: &dyn Storage, copying: Vec<Copying>, e: Error) -> Error {
    for c in copying {
        drop(c.file);
        let _ = storage.remove(&c.temp);
    }
    e
}

/// Puts table `id` from `from` at `to` (see [`start_table`]), synced and named. The
/// caller syncs the folder.
pub(crate) fn put_table(
    storage: &dyn Storage,
    from: &Path,
    to: &Path,
    id: TableId,
    link: bool,
) -> Result<Put> {
    Ok(match start_table(storage, from, to, id, link)? {
        Started::Linked => Put::Linked,
        Started::Copying(c) => Put::Copied(c.finish(storage)?),
    })
}

/// Starts putting table `id` from `from` at `to`: a hard link when `link` and the file
/// system allow (the table is checked to open: footer and index), else a copy under a temp
/// name whose bytes are checked against the id as they are written, to be synced and named
/// by [`Copying::finish`].
pub(crate) fn start_table(
    storage: &dyn Storage,
    from: &Path,
    to: &Path,
    id: TableId,
    link: bool,
) -> Result<Started> {
    if link {
        match std::fs::hard_link(from, to) {
            Ok(()) => {
                if let Err(e) = stele_table::Table::open(to) {
                    let _ = storage.remove(to);
                    return Err(e.into());
                }
                return Ok(Started::Linked);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(Started::Linked),
            // Another file system, or none that links: copy.
            Err(_) => {}
        }
    }
    // The extension of a table's temp file: garbage collection removes it after a crash.
    let temp = to.with_file_name(format!(".backup-{}-{id}.partial", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    match copy_checked(storage, from, &temp, id) {
        Ok((file, bytes)) => Ok(Started::Copying(Copying {
            temp,
            to: to.to_path_buf(),
            file,
            bytes,
        })),
        Err(e) => {
            let _ = storage.remove(&temp);
            Err(e)
        }
    }
}

/// Copies `from` to the new file `to` through `storage`, hashing what is written; fails
/// (leaving `to` for the caller to remove) if the hash is not `id`. Returns the file, not
/// synced, and the bytes written.
fn copy_checked(
    storage: &dyn Storage,
    from: &Path,
    to: &Path,
    id: TableId,
) -> Result<(Box<dyn stele_table::StorageFile>, u64)> {
    let mut src = File::open(from).map_err(|e| Error::io("opening table", from, e))?;
    let mut out = storage
        .create(to)
        .map_err(|e| Error::io("creating table copy", to, e))?;
    let (found, total) = hash_chunks(&mut src, |chunk| out.write_all(chunk))
        .map_err(|e| Error::io("copying table", from, e))?;
    if found != id {
        return Err(BackupError::TableMismatch {
            path: from.to_path_buf(),
            expected: id,
            found,
        }
        .into());
    }
    Ok((out, total))
}

/// Reads `src` to its end in chunks, handing each to `each`; returns the XXH3-128 of the
/// bytes (as a table id) and their count.
pub(crate) fn hash_chunks(
    src: &mut File,
    mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<(TableId, u64)> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; COPY_CHUNK_BYTES];
    let mut total = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        hasher.update(chunk);
        each(chunk)?;
        total += n as u64;
    }
    Ok((TableId::from_u128(hasher.digest128()), total))
}
