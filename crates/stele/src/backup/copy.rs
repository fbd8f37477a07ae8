//! Putting tables into a destination: hard links where the file system allows, else
//! checked copies.
//!
//! A copy reads each source table once: the file is mapped (the page cache's own pages, no
//! copy into a buffer), and each megabyte is hashed (XXH3-128, what names a table) and
//! then written from the mapping through the storage, which starts the disk writing it
//! back at once (`sync_file_range`, see `stele_table::Storage`). Two tables are copied at
//! a time, on two threads, largest first; then every copy of the group is synced (the
//! disk has written most of each back by then, so the syncs wait for the tails only) and
//! only then named. A copy whose bytes do not hash to its name is refused and removed.
//! With a rate limit (`BackupOptions::max_rate`) each megabyte waits for its slot on a
//! clock shared by the threads before it is written.
//! The caller syncs the folder, then writes the manifest that names the tables.

use super::error::BackupError;
use super::pace::Pace;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use stele_table::{Storage, StorageFile, TableId};

/// Bytes hashed and written at a time: large enough for the storage to start the disk
/// writing them back at once (it does for writes of 1 MiB or more), small enough to be
/// written from the processor's cache right after they are hashed.
pub(crate) const COPY_CHUNK_BYTES: usize = 1 << 20;

/// Tables copied at once. Two: one thread's copy (page-cache pages hashed and written into
/// new ones) runs while the other waits for the disk to take its writes.
const COPY_THREADS: usize = 2;

/// Copies written before their syncs, at most: bounds the files open at once.
const SYNC_GROUP: usize = 64;

/// A table to put into the destination.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub id: TableId,
    pub from: PathBuf,
    pub to: PathBuf,
}

/// What [`put_tables`] did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Put {
    pub linked: usize,
    pub copied: usize,
    /// Bytes of the copies.
    pub copied_bytes: u64,
}

/// Puts every table of `jobs` at its destination: a hard link when `link` and the file
/// system allow (the table is checked to open: footer and index), else a copy checked
/// against its id, synced and named. All or an error (copies not named yet removed); the
/// caller syncs the folders.
pub(crate) fn put_tables(
    storage: &dyn Storage,
    jobs: Vec<Job>,
    link: bool,
    pace: Option<&Pace>,
) -> Result<Put> {
    let mut put = Put::default();
    let mut to_copy = Vec::new();
    for job in jobs {
        if link && try_link(storage, &job)? {
            put.linked += 1;
        } else {
            to_copy.push(job);
        }
    }
    // Largest first, so that the threads end together.
    let mut sized: Vec<(u64, Job)> = to_copy
        .into_iter()
        .map(|j| (std::fs::metadata(&j.from).map_or(0, |m| m.len()), j))
        .collect();
    sized.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
    let sorted: Vec<Job> = sized.into_iter().map(|(_, j)| j).collect();
    for group in sorted.chunks(SYNC_GROUP) {
        let copies = copy_group(storage, group, pace)?;
        put.copied += copies.len();
        let mut left = copies.into_iter();
        while let Some(c) = left.next() {
            match c.finish(storage) {
                Ok(n) => put.copied_bytes += n,
                Err(e) => return Err(abandon(storage, left.collect(), e)),
            }
        }
    }
    Ok(put)
}

/// Hard-links `job`'s table into place; `false` if the file systems differ (or have no
/// links). A link to a table that does not open is removed and reported.
fn try_link(storage: &dyn Storage, job: &Job) -> Result<bool> {
    match std::fs::hard_link(&job.from, &job.to) {
        Ok(()) => {
            if let Err(e) = stele_table::Table::open(&job.to) {
                let _ = storage.remove(&job.to);
                return Err(e.into());
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(true),
        // Another file system, or none that links: copy.
        Err(_) => Ok(false),
    }
}

/// Copies every table of `group` under a temp name, [`COPY_THREADS`] at a time; returns
/// the copies, written and checked, not synced. On an error every temp file is removed.
fn copy_group(storage: &dyn Storage, group: &[Job], pace: Option<&Pace>) -> Result<Vec<Copying>> {
    let failed = AtomicBool::new(false);
    let done = par_map(group, |job| {
        // After a failure, the copies not started are not made.
        if failed.load(Ordering::Relaxed) {
            return None;
        }
        let copied = start_copy(storage, job, pace);
        if copied.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        Some(copied)
    });
    let mut copies = Vec::with_capacity(done.len());
    let mut first_error = None;
    for d in done.into_iter().flatten() {
        match d {
            Ok(c) => copies.push(c),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(abandon(storage, copies, e)),
        None => Ok(copies),
    }
}

/// `f` of every item, [`COPY_THREADS`] items at a time, in the items' order.
pub(crate) fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = COPY_THREADS.min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = f(item);
            done.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// A table copied under a temp name and checked against its id, not synced or named yet.
pub(crate) struct Copying {
    temp: PathBuf,
    to: PathBuf,
    file: Box<dyn StorageFile>,
    bytes: u64,
}

impl Copying {
    /// Syncs the copy and gives it its name; returns its bytes. On an error the temp file
    /// is removed.
    fn finish(mut self, storage: &dyn Storage) -> Result<u64> {
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

/// Copies `job`'s table under a temp name beside its destination (the extension that
/// garbage collection removes after a crash), checked against its id.
fn start_copy(storage: &dyn Storage, job: &Job, pace: Option<&Pace>) -> Result<Copying> {
    let temp = job
        .to
        .with_file_name(format!(".backup-{}-{}.partial", std::process::id(), job.id));
    let _ = std::fs::remove_file(&temp);
    match copy_checked(storage, &job.from, &temp, job.id, pace) {
        Ok((file, bytes)) => Ok(Copying {
            temp,
            to: job.to.clone(),
            file,
            bytes,
        }),
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
    pace: Option<&Pace>,
) -> Result<(Box<dyn StorageFile>, u64)> {
    let src = Source::open(from)?;
    let bytes = src.bytes();
    let mut out = storage
        .create(to)
        .map_err(|e| Error::io("creating table copy", to, e))?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for chunk in bytes.chunks(COPY_CHUNK_BYTES) {
        hasher.update(chunk);
        if let Some(pace) = pace {
            pace.take(chunk.len());
        }
        out.write_all(chunk)
            .map_err(|e| Error::io("writing table copy", to, e))?;
    }
    let found = TableId::from_u128(hasher.digest128());
    if found != id {
        return Err(BackupError::TableMismatch {
            path: from.to_path_buf(),
            expected: id,
            found,
        }
        .into());
    }
    Ok((out, bytes.len() as u64))
}

/// A table file's bytes: mapped, or (a file too short to map as a table, which cannot
/// match its name, but is reported as a mismatch like any other) read.
pub(crate) enum Source {
    Mapped(stele_table::MmapBytes),
    Read(Vec<u8>),
}

impl Source {
    pub(crate) fn open(path: &Path) -> Result<Source> {
        match stele_table::MmapBytes::map(path, stele_table::Access::Sequential) {
            Ok(m) => Ok(Source::Mapped(m)),
            Err(stele_table::Error::NotATable { .. }) => std::fs::read(path)
                .map(Source::Read)
                .map_err(|e| Error::io("reading table", path, e)),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Source::Mapped(m) => m.as_ref(),
            Source::Read(v) => v,
        }
    }
}

/// XXH3-128 of a file's bytes (as a table id), and its length.
pub(crate) fn hash_file(path: &Path) -> Result<(TableId, u64)> {
    let src = Source::open(path)?;
    let bytes = src.bytes();
    Ok((
        TableId::from_u128(xxhash_rust::xxh3::xxh3_128(bytes)),
        bytes.len() as u64,
    ))
}
