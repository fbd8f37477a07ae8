//! A store: one folder of content-named tables plus named roots, shared by processes.
//!
//! Folder layout:
//!
//! ```text
//! <dir>/<32 hex>.stt     tables: bases and diffs, named by the hash of their bytes
//! <dir>/roots/<name>     root files (see root.rs), replaced atomically
//! <dir>/roots/.lock      held exclusively while a root is switched (compare and swap)
//! <dir>/.gc.lock         shared by writers while they create a table, exclusive for
//!                        garbage collection
//! ```
//!
//! Every table a collection reads is held open with a shared advisory lock (`flock`);
//! garbage collection removes a table only if it can take an exclusive lock on it, so no
//! table that any process still reads is removed.

use crate::error::{Error, Result};
use crate::root::{Kind, ROOT_BYTES, RootInfo, check_name};
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use stele_table::{Access, FsStorage, MmapBytes, Storage, Table, TableId, TableList, TableOptions};

/// Longest stack of layers (base plus diffs) a collection may have.
pub const MAX_LAYERS: usize = 4096;

/// The folder of a store's named roots, inside the store's folder; [`Store::open`] makes it
/// if it is missing (and syncs the store's folder for it).
pub const ROOTS_DIR: &str = "roots";
const ROOTS: &str = ROOTS_DIR;
const ROOTS_LOCK: &str = ".lock";
const GC_LOCK: &str = ".gc.lock";

/// Options of a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub(crate) table: TableOptions,
    pub(crate) memory_budget_bytes: usize,
    pub(crate) storage: Arc<dyn Storage>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            table: TableOptions::default(),
            memory_budget_bytes: 256 << 20,
            storage: Arc::new(FsStorage),
        }
    }
}

impl StoreOptions {
    /// Layout of the tables written (block size, restart interval; default 4 KiB blocks).
    #[must_use]
    pub fn table_options(mut self, table: TableOptions) -> Self {
        self.table = table;
        self
    }

    /// Memory used to sort the input of [`Store::build_map`] (default 256 MiB). Input that
    /// fits is sorted in memory and written once; larger input is spilled in sorted runs
    /// and merged, which writes every byte twice.
    #[must_use]
    pub fn memory_budget_bytes(mut self, bytes: usize) -> Self {
        self.memory_budget_bytes = bytes;
        self
    }

    /// File operations used for every write (default: the real file system). For fault
    /// injection in tests.
    #[must_use]
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = storage;
        self
    }
}

/// A folder of durable collections. Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) inner: Arc<StoreInner>,
}

#[derive(Debug)]
pub(crate) struct StoreInner {
    pub(crate) dir: PathBuf,
    pub(crate) opts: StoreOptions,
    /// Opened with [`Store::open_read_only`]: nothing is created or written.
    pub(crate) read_only: bool,
}

/// Held while a writer creates a table, until the table is open (and so locked).
#[derive(Debug)]
pub(crate) struct WriteGuard {
    _lock: File,
}

/// What [`Store::collect_garbage`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GcReport {
    /// Tables removed: no root reaches them and nothing had them open.
    pub removed: Vec<TableId>,
    /// Tables no root reaches but still open somewhere (kept; collected by a later run).
    pub in_use: Vec<TableId>,
    /// Leftover temp files of interrupted writes that were removed.
    pub partials_removed: usize,
}

impl Store {
    /// Opens the store in `dir`, creating the folder if needed.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        Self::open_with(dir, StoreOptions::default())
    }

    /// Opens the store in `dir` with options.
    pub fn open_with(dir: impl AsRef<Path>, mut opts: StoreOptions) -> Result<Store> {
        // Tables are written through the store's storage too.
        opts.table = opts.table.storage(Arc::clone(&opts.storage));
        let dir = dir.as_ref().to_path_buf();
        let roots = dir.join(ROOTS);
        // Through the seam, each new folder's parent synced: roots and tables written later
        // are durable only if their folders are.
        stele_table::create_dir_all(&*opts.storage, &roots)
            .map_err(|e| Error::io("creating store folder", &roots, e))?;
        for lock in [dir.join(GC_LOCK), roots.join(ROOTS_LOCK)] {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&lock)
                .map_err(|e| Error::io("creating lock file", &lock, e))?;
        }
        Ok(Store {
            inner: Arc::new(StoreInner {
                dir,
                opts,
                read_only: false,
            }),
        })
    }

    /// Opens the store in `dir` for reading only: creates no folder and no lock file and
    /// writes nothing, so it works on a folder this process may not write. Tables are
    /// opened with the same shared locks as [`open`](Self::open) takes (a shared `flock`
    /// needs only read access), so garbage collection by a writer in another process
    /// leaves them alone. Anything that would write a table fails with
    /// [`Error::ReadOnly`]; maps can still change in memory.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Store> {
        Self::open_read_only_with(dir, StoreOptions::default())
    }

    /// [`open_read_only`](Self::open_read_only) with options (the storage seam is not
    /// used: nothing is written).
    pub fn open_read_only_with(dir: impl AsRef<Path>, opts: StoreOptions) -> Result<Store> {
        let dir = dir.as_ref().to_path_buf();
        // A missing folder is an error here rather than an empty store: a reader given a
        // wrong path should hear so.
        fs::metadata(&dir).map_err(|e| Error::io("opening store folder", &dir, e))?;
        Ok(Store {
            inner: Arc::new(StoreInner {
                dir,
                opts,
                read_only: true,
            }),
        })
    }

    /// Whether this store was opened with [`open_read_only`](Self::open_read_only).
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// The store of a table file's folder and the table's id.
    pub(crate) fn for_table_path(path: &Path) -> Result<(Store, TableId)> {
        let id = TableId::from_path(path).ok_or_else(|| Error::NotATablePath {
            path: path.to_path_buf(),
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Ok((Store::open(dir)?, id))
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The path of table `id` in this store.
    pub fn table_path(&self, id: TableId) -> PathBuf {
        self.inner.dir.join(id.file_name())
    }

    pub(crate) fn options(&self) -> &StoreOptions {
        &self.inner.opts
    }

    fn lock_file(&self, path: &Path) -> Result<File> {
        File::open(path).map_err(|e| Error::io("opening lock file", path, e))
    }

    /// Fails with [`Error::ReadOnly`] on a store opened read-only.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly {
                dir: self.inner.dir.clone(),
            });
        }
        Ok(())
    }

    /// Taken before creating a table: garbage collection waits until the new table is open.
    pub(crate) fn write_guard(&self) -> Result<WriteGuard> {
        self.check_writable()?;
        let path = self.inner.dir.join(GC_LOCK);
        let lock = self.lock_file(&path)?;
        lock.lock_shared()
            .map_err(|e| Error::io("locking (shared)", &path, e))?;
        Ok(WriteGuard { _lock: lock })
    }

    /// Opens table `id` with a shared lock held as long as the returned map lives.
    /// `needed_by` names the diff that led here, for the error if the table is missing.
    pub(crate) fn open_locked(&self, id: TableId, needed_by: Option<TableId>) -> Result<MmapBytes> {
        self.open_locked_with(id, needed_by, Access::Random)
    }

    /// [`open_locked`](Self::open_locked) with an access hint for the kernel.
    pub(crate) fn open_locked_with(
        &self,
        id: TableId,
        needed_by: Option<TableId>,
        access: Access,
    ) -> Result<MmapBytes> {
        let path = self.table_path(id);
        if id == stele_table::empty_map_id() {
            // The empty map has no file (see `finish_base`); a file of that name left by an
            // older build holds the same bytes.
            return Ok(MmapBytes::from_static(stele_table::empty_map_bytes(), path));
        }
        let missing = || Error::MissingTable {
            id,
            needed_by,
            dir: self.inner.dir.clone(),
        };
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(missing()),
            Err(e) => return Err(Error::io("opening table", &path, e)),
        };
        file.lock_shared()
            .map_err(|e| Error::io("locking table (shared)", &path, e))?;
        // Garbage collection may have removed the file between the open and the lock.
        let links = file
            .metadata()
            .map_err(|e| Error::io("reading metadata of table", &path, e))?
            .nlink();
        if links == 0 {
            return Err(missing());
        }
        Ok(MmapBytes::map_file(file, &path, access)?)
    }

    /// Finishes `builder`, the base table (not a diff) of a map. An empty one is not
    /// written (dropping the builder removes its temporary file): it stands for
    /// [`stele_table::empty_map_id`], whose bytes every store serves from memory, so that
    /// empty collections and indexes cost no file (the file was 120 bytes, one per folder
    /// since tables are named by content, and an open and a lock per map).
    pub(crate) fn finish_base(&self, builder: stele_table::TableBuilder) -> Result<TableId> {
        if builder.is_empty() {
            drop(builder);
            return Ok(stele_table::empty_map_id());
        }
        Ok(builder.finish()?.id)
    }

    pub(crate) fn open_table(&self, id: TableId, needed_by: Option<TableId>) -> Result<Table> {
        Ok(Table::from_bytes(self.open_locked(id, needed_by)?)?)
    }

    pub(crate) fn open_list_table(
        &self,
        id: TableId,
        needed_by: Option<TableId>,
    ) -> Result<TableList> {
        Ok(TableList::from_bytes(self.open_locked(id, needed_by)?)?)
    }

    fn root_path(&self, name: &str) -> Result<PathBuf> {
        check_name(name)?;
        Ok(self.inner.dir.join(ROOTS).join(name))
    }

    /// The current state of root `name`, or `None` if there is no such root.
    pub fn root(&self, name: &str) -> Result<Option<RootInfo>> {
        let path = self.root_path(name)?;
        match fs::read(&path) {
            Ok(bytes) => RootInfo::decode(&bytes, &path).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("reading root", &path, e)),
        }
    }

    /// Every root, sorted by name.
    pub fn roots(&self) -> Result<Vec<(String, RootInfo)>> {
        let dir = self.inner.dir.join(ROOTS);
        let mut out = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| Error::io("listing roots", &dir, e))? {
            let entry = entry.map_err(|e| Error::io("listing roots", &dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if check_name(&name).is_err() {
                continue; // the lock file and temp files
            }
            if let Some(info) = self.root(&name)? {
                out.push((name, info));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Points root `name` at table `new` (a collection of `kind`), atomically, if the root
    /// still points at `expected` (`None`: the root must not exist yet). Returns the new
    /// state. Fails with [`Error::RootConflict`] if another writer switched it meanwhile.
    /// The table must exist in this store.
    pub fn switch_root(
        &self,
        name: &str,
        expected: Option<TableId>,
        new: TableId,
        kind: Kind,
    ) -> Result<RootInfo> {
        self.check_writable()?;
        let path = self.root_path(name)?;
        if new != stele_table::empty_map_id() && !self.table_path(new).exists() {
            return Err(Error::MissingTable {
                id: new,
                needed_by: None,
                dir: self.inner.dir.clone(),
            });
        }
        let lock_path = self.inner.dir.join(ROOTS).join(ROOTS_LOCK);
        let lock = self.lock_file(&lock_path)?;
        lock.lock()
            .map_err(|e| Error::io("locking roots", &lock_path, e))?;
        let current = self.root(name)?;
        if current.map(|r| r.id) != expected {
            return Err(Error::RootConflict {
                name: name.to_owned(),
                expected,
                found: current.map(|r| r.id),
            });
        }
        let info = RootInfo {
            kind,
            generation: current.map_or(1, |r| r.generation + 1),
            id: new,
        };
        self.write_root_file(&path, &info.encode())?;
        drop(lock);
        Ok(info)
    }

    /// Removes root `name` if it still points at `expected`. The tables it reached are
    /// removed by the next [`collect_garbage`](Self::collect_garbage) once unused.
    pub fn remove_root(&self, name: &str, expected: TableId) -> Result<()> {
        self.check_writable()?;
        let path = self.root_path(name)?;
        let lock_path = self.inner.dir.join(ROOTS).join(ROOTS_LOCK);
        let lock = self.lock_file(&lock_path)?;
        lock.lock()
            .map_err(|e| Error::io("locking roots", &lock_path, e))?;
        let current = self.root(name)?;
        if current.map(|r| r.id) != Some(expected) {
            return Err(Error::RootConflict {
                name: name.to_owned(),
                expected: Some(expected),
                found: current.map(|r| r.id),
            });
        }
        let storage = &self.inner.opts.storage;
        storage
            .remove(&path)
            .map_err(|e| Error::io("removing root", &path, e))?;
        let dir = self.inner.dir.join(ROOTS);
        storage
            .sync_dir(&dir)
            .map_err(|e| Error::io("syncing folder", &dir, e))?;
        Ok(())
    }

    /// Temp file, write, fsync, rename over `path`, fsync of the folder.
    fn write_root_file(&self, path: &Path, bytes: &[u8; ROOT_BYTES]) -> Result<()> {
        let storage = &self.inner.opts.storage;
        let dir = self.inner.dir.join(ROOTS);
        let temp = dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            path.file_name().and_then(|n| n.to_str()).unwrap_or("root")
        ));
        // A temp file left by a crashed switch of the same name is replaced: we hold the
        // roots lock.
        Ok(stele_table::replace_file(&**storage, &temp, path, bytes)?)
    }

    /// Opens the collection root `name` points at with `open` (`None` if there is no such
    /// root). If a table is missing because the root moved on and garbage collection
    /// removed the old stack between reading the root and opening it, reads the root again.
    pub(crate) fn at_root<T>(
        &self,
        name: &str,
        kind: Kind,
        open: impl Fn(TableId) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut attempts = 0;
        loop {
            let Some(info) = self.root(name)? else {
                return Ok(None);
            };
            if info.kind != kind {
                return Err(Error::WrongKind {
                    id: info.id,
                    expected: kind.article(),
                    found: info.kind.article(),
                });
            }
            match open(info.id) {
                Err(e @ Error::MissingTable { .. }) => {
                    attempts += 1;
                    let moved = self.root(name)?.map(|r| r.id) != Some(info.id);
                    if !moved || attempts >= 100 {
                        return Err(e);
                    }
                }
                other => return other.map(Some),
            }
        }
    }

    /// The ids of a stack, top first, read from the footers (no data blocks are read).
    fn stack_ids(&self, top: TableId) -> Result<Vec<TableId>> {
        let mut ids = vec![top];
        let mut needed_by = None;
        let mut id = top;
        loop {
            let opened = self.open_locked(id, needed_by)?;
            // A list base is not a `Table`; its footer says it is not a diff either way.
            let parent = match Table::from_bytes(opened) {
                Ok(t) => t.diff_info().map(|d| d.parent),
                Err(stele_table::Error::WrongKind { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            let Some(parent) = parent else {
                return Ok(ids);
            };
            if ids.len() >= MAX_LAYERS || ids.contains(&parent) {
                return Err(Error::BadStack {
                    top,
                    reason: "has more layers than allowed or loops",
                });
            }
            ids.push(parent);
            needed_by = Some(id);
            id = parent;
        }
    }

    /// Removes every table that no root reaches and no process has open, and leftover
    /// temp files. Waits for writers that are creating tables to finish. Tables still open
    /// somewhere are kept and listed in the report.
    pub fn collect_garbage(&self) -> Result<GcReport> {
        self.collect_garbage_keeping(&[])
    }

    /// Like [`collect_garbage`](Self::collect_garbage), and also keeps the stacks under
    /// the tables in `keep` (for callers that record collections elsewhere than in roots,
    /// such as a database manifest).
    pub fn collect_garbage_keeping(&self, keep: &[TableId]) -> Result<GcReport> {
        match self.collect_garbage_inner(keep, true)? {
            Some(report) => Ok(report),
            None => Ok(GcReport::default()),
        }
    }

    /// Like [`collect_garbage_keeping`](Self::collect_garbage_keeping), but returns `None`
    /// at once instead of waiting while a writer is creating a table (a long compaction,
    /// say): for callers that must not stall, such as a checkpoint holding a writer lock.
    pub fn try_collect_garbage_keeping(&self, keep: &[TableId]) -> Result<Option<GcReport>> {
        self.collect_garbage_inner(keep, false)
    }

    fn collect_garbage_inner(&self, keep: &[TableId], wait: bool) -> Result<Option<GcReport>> {
        self.check_writable()?;
        let dir = &self.inner.dir;
        let gc_path = dir.join(GC_LOCK);
        let gc_lock = self.lock_file(&gc_path)?;
        if wait {
            gc_lock
                .lock()
                .map_err(|e| Error::io("locking for garbage collection", &gc_path, e))?;
        } else {
            match gc_lock.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => return Ok(None),
                Err(fs::TryLockError::Error(e)) => {
                    return Err(Error::io("locking for garbage collection", &gc_path, e));
                }
            }
        }
        let mut report = GcReport {
            partials_removed: stele_table::remove_partials(dir)?,
            ..GcReport::default()
        };
        let mut live = HashSet::new();
        for (_, info) in self.roots()? {
            live.extend(self.stack_ids(info.id)?);
        }
        for id in keep {
            live.extend(self.stack_ids(*id)?);
        }
        let storage = &self.inner.opts.storage;
        for entry in fs::read_dir(dir).map_err(|e| Error::io("listing store", dir, e))? {
            let path = entry
                .map_err(|e| Error::io("listing store", dir, e))?
                .path();
            let Some(id) = TableId::from_path(&path) else {
                continue;
            };
            if live.contains(&id) {
                continue;
            }
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("opening table", &path, e)),
            };
            match file.try_lock() {
                Ok(()) => {
                    // Removed while locked: a reader that opened it just before waits for
                    // the lock, then sees zero links and treats it as missing.
                    storage
                        .remove(&path)
                        .map_err(|e| Error::io("removing unused table", &path, e))?;
                    report.removed.push(id);
                }
                Err(fs::TryLockError::WouldBlock) => report.in_use.push(id),
                Err(fs::TryLockError::Error(e)) => {
                    return Err(Error::io("locking table (exclusive)", &path, e));
                }
            }
        }
        if !report.removed.is_empty() {
            storage
                .sync_dir(dir)
                .map_err(|e| Error::io("syncing folder", dir, e))?;
        }
        report.removed.sort();
        report.in_use.sort();
        Ok(Some(report))
    }
}
