//! The storage seam and atomic, content-named file creation.
//!
//! All writes of finished tables go through [`Storage`], so tests (and later crash tests)
//! can inject failures at any step. A table appears under its final name only after its
//! bytes are durable: temp file, write, fsync, rename, fsync of the folder. A crash at any
//! point leaves either no table or a whole one (plus, at worst, a `.partial` temp file that
//! [`remove_partials`] clears).

use crate::error::{Error, Result};
use crate::id::TableId;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use xxhash_rust::xxh3::Xxh3;

/// Extension of table files.
pub const TABLE_EXTENSION: &str = "stt";
/// Extension of temp files being written.
pub const PARTIAL_EXTENSION: &str = "partial";

/// A file being written through a [`Storage`].
pub trait StorageFile: Write + Send + Debug {
    /// Makes the written bytes durable (fsync).
    fn sync(&mut self) -> io::Result<()>;

    /// Makes the written bytes durable without the file's timestamps (fdatasync): where the
    /// file's size does not change either, the disk writes the data blocks and no metadata.
    /// Defaults to [`StorageFile::sync`].
    fn sync_data(&mut self) -> io::Result<()> {
        self.sync()
    }

    /// Writes all of `buf` at `offset`, whatever was written before (files opened by
    /// [`Storage::open_log`] for write-ahead logs written into space zeroed in advance).
    /// Files that cannot report `Unsupported`, and their users fall back to appending.
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let _ = (offset, buf);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this storage cannot write at an offset",
        ))
    }

    /// Cuts the file to `len` bytes (used to drop a torn log tail). Files that cannot be
    /// cut report `Unsupported`.
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let _ = len;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this storage cannot cut files",
        ))
    }
}

/// File operations used to create tables; implement it to inject faults. Every operation
/// but `create` defaults to the real file system, so a seam overrides only what it
/// intercepts.
pub trait Storage: Send + Sync + Debug {
    /// Creates a new file (fails if it exists).
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    /// Gives the finished file `from` the name `to` unless a file of that name exists, and
    /// returns whether it did; `from` is gone either way (at worst left as a `.partial` for
    /// [`remove_partials`]). For content-named tables: an existing file holds the same bytes,
    /// and other handles hold *that* file locked, so it must not be replaced (a replaced
    /// file would leave their locks on an unlinked one, and garbage collection free to
    /// remove the new one under a name they still need). The default makes a hard link,
    /// which never replaces, then removes `from`; on a file system without hard links it
    /// falls back to checking for `to` and renaming.
    fn rename_new(&self, from: &Path, to: &Path) -> io::Result<bool> {
        let created = match fs::hard_link(from, to) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Unsupported | io::ErrorKind::PermissionDenied
                ) =>
            {
                if fs::symlink_metadata(to).is_ok() {
                    false
                } else {
                    self.rename(from, to)?;
                    return Ok(true);
                }
            }
            Err(e) => return Err(e),
        };
        // Best effort: the table is in place (or was already); a leftover temp file is
        // cleared with the other partials.
        let _ = self.remove(from);
        Ok(created)
    }
    /// Makes a folder's entries durable (fsync of the folder).
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    /// Creates one folder (its parent exists). [`create_dir_all`] calls it for each missing
    /// folder and syncs the parent after each, so a seam sees folders appear.
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir(dir)
    }

    /// Opens an existing file, or creates it, for appending (write-ahead logs). The default
    /// uses the real file system; seams that inject faults wrap it.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new().append(true).create(true).open(path)?;
        // Appends start at the end: offsets for early writeback count from there.
        let written_bytes = file.metadata()?.len();
        Ok(Box::new(FsFile {
            file,
            written_bytes,
            positioned: false,
        }))
    }

    /// Opens an existing file, or creates it, for a write-ahead log written with
    /// [`StorageFile::write_at`]. The default is [`Storage::open_append`] (whose files may not
    /// write at offsets: the log then appends), so a seam that wraps only `open_append`
    /// still sees every log write; [`FsStorage`] opens the file for positioned writes. Seams
    /// that wrap this wrap `write_at` and `sync_data` too.
    fn open_log(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.open_append(path)
    }
}

/// Opens an existing file, or creates it, for writing at offsets (not appending).
fn open_positioned(path: &Path) -> io::Result<Box<dyn StorageFile>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let written_bytes = file.metadata()?.len();
    Ok(Box::new(FsFile {
        file,
        written_bytes,
        positioned: true,
    }))
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsStorage;

#[derive(Debug)]
struct FsFile {
    file: File,
    /// Bytes written so far (the file is written in order from its start).
    written_bytes: u64,
    /// Opened without `O_APPEND`, for [`StorageFile::write_at`] (on Linux, a positioned write
    /// to a file opened for appending appends, whatever the offset).
    positioned: bool,
}

impl FsFile {
    /// Asks the kernel to start writing `len` bytes at `offset` to the disk now, without
    /// waiting (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`): the disk then works while
    /// the builder encodes the rest, and the final fsync waits only for the tail (it took
    /// about 0.27 s for a 214 MB table on this project's VMs). Durability still comes from
    /// `sync`; this call only moves work earlier, so its failure is ignored.
    fn start_writeback(&self, offset: u64, len: usize) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            const SYNC_FILE_RANGE_WRITE: std::ffi::c_uint = 2;
            unsafe extern "C" {
                /// Linux: starts, or waits for, writeback of a byte range of a file.
                fn sync_file_range(
                    fd: std::ffi::c_int,
                    offset: i64,
                    nbytes: i64,
                    flags: std::ffi::c_uint,
                ) -> std::ffi::c_int;
            }
            let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
                return;
            };
            // SAFETY: the call takes a file descriptor that `self.file` keeps open for its
            // duration and plain integers; it reads and writes no memory of this process.
            unsafe {
                sync_file_range(self.file.as_raw_fd(), offset, len, SYNC_FILE_RANGE_WRITE);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
    }
}

/// Writes at least this large start their writeback at once (see `start_writeback`);
/// smaller ones are left to the kernel.
const EARLY_WRITEBACK_BYTES: usize = 1 << 20;

impl Write for FsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written_bytes += n as u64;
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)?;
        if buf.len() >= EARLY_WRITEBACK_BYTES {
            self.start_writeback(self.written_bytes, buf.len());
        }
        self.written_bytes += buf.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl StorageFile for FsFile {
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        if !self.positioned {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a file opened for appending cannot write at an offset",
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(buf, offset)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom};
            self.file.seek(SeekFrom::Start(offset))?;
            self.file.write_all(buf)
        }
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.written_bytes = len;
        Ok(())
    }
}

impl Storage for FsStorage {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(FsFile {
            file: f,
            written_bytes: 0,
            positioned: false,
        }))
    }

    fn open_log(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        open_positioned(path)
    }
}

/// Creates `dir` and its missing parents through `storage`, syncing each new folder's parent
/// after creating it: a new folder's entry in its parent is durable only once the parent is
/// synced (as for a file), and a database's first commit is durable only if its `wal` folder
/// survives a power cut too. Folders that exist cost one `stat` and no sync.
pub fn create_dir_all(storage: &dyn Storage, dir: &Path) -> io::Result<()> {
    for parent in create_dir_all_unsynced(storage, dir)? {
        storage.sync_dir(&parent)?;
    }
    Ok(())
}

/// [`create_dir_all`] without the syncs: creates `dir` and its missing parents and returns
/// the folders whose new entries are not durable yet, the deepest first (each new folder's
/// parent). The caller syncs them before anything written in `dir` has to survive a power
/// cut; until then a cut may lose any of the new folders, which held nothing durable.
pub fn create_dir_all_unsynced(storage: &dyn Storage, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut to_sync = Vec::new();
    if dir.is_dir() {
        return Ok(to_sync);
    }
    let mut missing = Vec::new();
    let mut at = dir;
    while !at.as_os_str().is_empty() && !at.is_dir() {
        missing.push(at);
        match at.parent() {
            Some(parent) => at = parent,
            None => break,
        }
    }
    for d in missing.into_iter().rev() {
        match storage.create_dir(d) {
            Ok(()) => {}
            // Created meanwhile by someone else, who syncs it.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => continue,
            Err(e) => return Err(e),
        }
        let parent = match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        to_sync.push(parent.to_path_buf());
    }
    to_sync.reverse();
    Ok(to_sync)
}

/// Removes leftover `.partial` files (from a crash mid-write) in `dir`. Returns how many.
pub fn remove_partials(dir: &Path) -> Result<usize> {
    let mut removed = 0;
    let entries = fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("listing", dir, e))?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == PARTIAL_EXTENSION) {
            fs::remove_file(&path).map_err(|e| Error::io("removing partial file", &path, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Replaces the small file `path` with `bytes` atomically through `storage`: writes `temp`
/// (in the same folder; a stale one left by a crash is removed first, so the caller must
/// keep other writers of `temp` out), fsyncs it, renames it over `path` and fsyncs the
/// folder. Readers see the old file or the new one, never a mix. On failure the temp file
/// is removed (best effort) and the error names the step and the file. Used for the small
/// pointer files of higher layers (roots, manifests); tables use content-named files.
pub fn replace_file(storage: &dyn Storage, temp: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    // A stale temp file exists only after a crash; removed through the seam, so that a
    // simulated disk knows the name is free again.
    if fs::symlink_metadata(temp).is_ok() {
        let _ = storage.remove(temp);
    }
    let result = (|| {
        let mut file = storage
            .create(temp)
            .map_err(|e| Error::io("creating temporary file", temp, e))?;
        file.write_all(bytes)
            .map_err(|e| Error::io("writing temporary file", temp, e))?;
        file.sync()
            .map_err(|e| Error::io("syncing temporary file", temp, e))?;
        drop(file);
        storage
            .rename(temp, path)
            .map_err(|e| Error::io("renaming file into place", path, e))
    })();
    if result.is_err() {
        // Best effort: the original error is what the caller needs to see.
        let _ = storage.remove(temp);
    }
    result?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    storage
        .sync_dir(dir)
        .map_err(|e| Error::io("syncing folder", dir, e))
}

/// Makes temp names unique within the process; the pid makes them unique across processes.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

pub(crate) fn unique_name(prefix: &str, ext: &str) -> String {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}{}-{n}-{nanos:08x}.{ext}", std::process::id())
}

/// Writes a file under a temp name, hashing its bytes; `commit` makes it durable under
/// `<xxh3-128 hex>.stt`. Dropped before commit (error or panic), it removes the temp file.
pub(crate) struct AtomicFile {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    temp_path: PathBuf,
    file: Option<Box<dyn StorageFile>>,
    hasher: Box<Xxh3>,
    written_bytes: u64,
}

impl std::fmt::Debug for AtomicFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicFile")
            .field("temp_path", &self.temp_path)
            .field("written_bytes", &self.written_bytes)
            .finish_non_exhaustive()
    }
}

impl AtomicFile {
    pub(crate) fn create(storage: Arc<dyn Storage>, dir: &Path) -> Result<Self> {
        let temp_path = dir.join(unique_name(".stele-", PARTIAL_EXTENSION));
        let file = storage
            .create(&temp_path)
            .map_err(|e| Error::io("creating temporary table file", &temp_path, e))?;
        Ok(AtomicFile {
            storage,
            dir: dir.to_path_buf(),
            temp_path,
            file: Some(file),
            hasher: Box::new(Xxh3::new()),
            written_bytes: 0,
        })
    }

    pub(crate) fn written_bytes(&self) -> u64 {
        self.written_bytes
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(Error::io(
                "writing",
                &self.temp_path,
                io::Error::other("file already closed"),
            ));
        };
        file.write_all(bytes)
            .map_err(|e| Error::io("writing table file", &self.temp_path, e))?;
        self.hasher.update(bytes);
        self.written_bytes += bytes.len() as u64;
        Ok(())
    }

    /// fsync, rename to the content name, fsync the folder. Returns the final path and id.
    pub(crate) fn commit(mut self) -> Result<(PathBuf, TableId)> {
        let mut file = self.file.take().ok_or_else(|| {
            Error::io(
                "committing",
                &self.temp_path,
                io::Error::other("file already closed"),
            )
        })?;
        file.flush()
            .map_err(|e| Error::io("flushing table file", &self.temp_path, e))?;
        file.sync()
            .map_err(|e| Error::io("syncing table file", &self.temp_path, e))?;
        drop(file);
        let id = TableId::from_u128(self.hasher.digest128());
        let final_path = self.dir.join(id.file_name());
        // Never over an existing table of the same name (same bytes): see
        // `Storage::rename_new`.
        let created = self
            .storage
            .rename_new(&self.temp_path, &final_path)
            .map_err(|e| Error::io("moving table file into place", &final_path, e))?;
        // In place: nothing left to clean up even if the folder sync fails.
        self.temp_path = PathBuf::new();
        if created {
            self.storage
                .sync_dir(&self.dir)
                .map_err(|e| Error::io("syncing folder", &self.dir, e))?;
        }
        Ok((final_path, id))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        self.file = None;
        if !self.temp_path.as_os_str().is_empty() {
            // Best effort: the error path already reports the original failure.
            let _ = self.storage.remove(&self.temp_path);
        }
    }
}
