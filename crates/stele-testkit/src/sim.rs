//! The recording storage and its recordings.

use crate::model::{Base, Model, Op, Pick};
use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use stele_table::{FsStorage, Storage, StorageFile};

#[derive(Debug, Default)]
struct Log {
    ops: Vec<Op>,
    /// The file each name under the root holds now (as the recorded operations left it).
    names: HashMap<PathBuf, usize>,
    next_ino: usize,
}

/// A [`Storage`] for tests that passes every operation through to the real files under
/// `root` and records it, so that [`SimDisk::recording`] can produce the states a power cut
/// could leave (see [`crate::explore`]). Syncs are recorded, not performed: the real files
/// only serve the running workload. Paths outside `root` pass through unrecorded.
#[derive(Debug, Clone)]
pub struct SimDisk {
    root: PathBuf,
    base: Arc<Base>,
    log: Arc<Mutex<Log>>,
}

impl SimDisk {
    /// Starts recording under `root` (created if needed); what it holds now is the durable
    /// base state.
    pub fn new(root: &Path) -> io::Result<Arc<SimDisk>> {
        fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let mut base = Base::default();
        let mut log = Log::default();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            for entry in fs::read_dir(root.join(&rel))? {
                let entry = entry?;
                let path = rel.join(entry.file_name());
                if entry.file_type()?.is_dir() {
                    base.dirs.push(path.clone());
                    stack.push(path);
                } else {
                    let ino = log.next_ino;
                    log.next_ino += 1;
                    let bytes: Arc<[u8]> = fs::read(entry.path())?.into();
                    log.names.insert(path.clone(), ino);
                    base.files.push((path, ino, bytes));
                }
            }
        }
        Ok(Arc::new(SimDisk {
            root,
            base: Arc::new(base),
            log: Arc::new(Mutex::new(log)),
        }))
    }

    /// Operations recorded so far: a commit acknowledged before this call is in every crash
    /// state cut at this moment or later.
    pub fn moment(&self) -> usize {
        self.lock().ops.len()
    }

    /// The operations recorded so far, to explore.
    pub fn recording(&self) -> Recording {
        Recording {
            base: Arc::clone(&self.base),
            ops: self.lock().ops.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // A panicking workload thread must not hide the recording from the test.
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `path` relative to the root, or `None` outside it.
    fn rel(&self, path: &Path) -> Option<PathBuf> {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(path)
        };
        // The folder may be named through a link (`/tmp` and the like): compare the
        // canonical parent, since the file itself may not exist yet.
        let parent = abs.parent()?.canonicalize().ok()?;
        let rel = parent.strip_prefix(&self.root).ok()?;
        Some(match abs.file_name() {
            Some(name) => rel.join(name),
            None => rel.to_path_buf(),
        })
    }

    fn rel_dir(&self, dir: &Path) -> Option<PathBuf> {
        let canon = dir.canonicalize().ok()?;
        canon.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// Opens `path` with `open` and records the file (a creation if the name is new).
    fn open_with(
        &self,
        path: &Path,
        open: impl FnOnce(&Path) -> io::Result<Box<dyn StorageFile>>,
    ) -> io::Result<Box<dyn StorageFile>> {
        let Some(rel) = self.rel(path) else {
            return open(path);
        };
        let mut log = self.lock();
        let inner = open(path)?;
        let len = fs::metadata(path)?.len();
        let ino = match log.names.get(&rel) {
            Some(ino) => *ino,
            None => {
                let ino = log.next_ino;
                log.next_ino += 1;
                log.names.insert(rel.clone(), ino);
                log.ops.push(Op::Create { path: rel, ino });
                // A file the seam did not create (written around it): its bytes so far.
                if len > 0 {
                    let data: Arc<[u8]> = fs::read(path)?.into();
                    log.ops.push(Op::Write {
                        ino,
                        offset: 0,
                        data,
                    });
                }
                ino
            }
        };
        Ok(Box::new(SimFile {
            inner,
            ino,
            pos: len,
            log: Arc::clone(&self.log),
        }))
    }
}

impl Storage for SimDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let Some(rel) = self.rel(path) else {
            return FsStorage.create(path);
        };
        let mut log = self.lock();
        let inner = FsStorage.create(path)?;
        let ino = log.next_ino;
        log.next_ino += 1;
        log.names.insert(rel.clone(), ino);
        log.ops.push(Op::Create { path: rel, ino });
        Ok(Box::new(SimFile {
            inner,
            ino,
            pos: 0,
            log: Arc::clone(&self.log),
        }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.open_with(path, |p| FsStorage.open_append(p))
    }

    fn open_log(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.open_with(path, |p| FsStorage.open_log(p))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (Some(f), Some(t)) = (self.rel(from), self.rel(to)) else {
            return FsStorage.rename(from, to);
        };
        let mut log = self.lock();
        fs::rename(from, to)?;
        if let Some(ino) = log.names.remove(&f) {
            log.names.insert(t.clone(), ino);
        }
        log.ops.push(Op::Rename { from: f, to: t });
        Ok(())
    }

    fn rename_new(&self, from: &Path, to: &Path) -> io::Result<bool> {
        let (Some(f), Some(t)) = (self.rel(from), self.rel(to)) else {
            return FsStorage.rename_new(from, to);
        };
        let created = {
            let mut log = self.lock();
            match fs::hard_link(from, to) {
                Ok(()) => {
                    if let Some(ino) = log.names.get(&f).copied() {
                        log.names.insert(t.clone(), ino);
                    }
                    log.ops.push(Op::Link { from: f, to: t });
                    true
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
                Err(e) => return Err(e),
            }
        };
        let _ = self.remove(from);
        Ok(created)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let Some(rel) = self.rel_dir(dir) else {
            return FsStorage.sync_dir(dir);
        };
        self.lock().ops.push(Op::SyncDir { path: rel });
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let Some(rel) = self.rel(path) else {
            return FsStorage.remove(path);
        };
        let mut log = self.lock();
        fs::remove_file(path)?;
        log.names.remove(&rel);
        log.ops.push(Op::Remove { path: rel });
        Ok(())
    }

    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        let Some(rel) = self.rel(dir) else {
            return FsStorage.create_dir(dir);
        };
        let mut log = self.lock();
        fs::create_dir(dir)?;
        log.ops.push(Op::Mkdir { path: rel });
        Ok(())
    }
}

/// A file opened through a [`SimDisk`].
#[derive(Debug)]
struct SimFile {
    inner: Box<dyn StorageFile>,
    ino: usize,
    /// Where `Write` writes go: files are written in order from their start, or from their
    /// end when opened for appending.
    pos: u64,
    log: Arc<Mutex<Log>>,
}

impl SimFile {
    fn record(&self, op: Op) {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .ops
            .push(op);
    }
}

impl Write for SimFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        if n > 0 {
            self.record(Op::Write {
                ino: self.ino,
                offset: self.pos,
                data: buf.get(..n).unwrap_or_default().into(),
            });
            self.pos += n as u64;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl StorageFile for SimFile {
    fn sync(&mut self) -> io::Result<()> {
        self.record(Op::Sync {
            ino: self.ino,
            data_only: false,
        });
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.record(Op::Sync {
            ino: self.ino,
            data_only: true,
        });
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.inner.write_at(offset, buf)?;
        if !buf.is_empty() {
            self.record(Op::Write {
                ino: self.ino,
                offset,
                data: buf.into(),
            });
        }
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)?;
        self.record(Op::SetLen { ino: self.ino, len });
        self.pos = len;
        Ok(())
    }
}

/// The operations a [`SimDisk`] recorded, and the base state before them.
#[derive(Debug, Clone)]
pub struct Recording {
    pub(crate) base: Arc<Base>,
    pub(crate) ops: Vec<Op>,
}

impl Recording {
    /// Operations recorded.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Moments right after each sync (of a file or a folder).
    pub(crate) fn sync_moments(&self) -> Vec<usize> {
        self.ops
            .iter()
            .enumerate()
            .filter(|(_, op)| op.is_sync())
            .map(|(i, _)| i + 1)
            .collect()
    }

    /// Lines describing the operations around moment `at` (the cut marked).
    pub(crate) fn describe_around(&self, at: usize, before: usize) -> Vec<String> {
        let from = at.saturating_sub(before);
        let to = (at + 3).min(self.ops.len());
        let mut lines = Vec::new();
        for (i, op) in self.ops.iter().enumerate().take(to).skip(from) {
            if i == at {
                lines.push("--- power cut ---".to_owned());
            }
            lines.push(format!("{i}: {}", op.describe()));
        }
        if at >= to {
            lines.push("--- power cut ---".to_owned());
        }
        lines
    }

    /// The file system state before any operation, to be moved forward.
    pub fn replay(&self) -> Replay<'_> {
        Replay {
            recording: self,
            model: Model::new(&self.base),
            at: 0,
        }
    }
}

/// A recording played up to some moment.
#[derive(Debug)]
pub struct Replay<'a> {
    recording: &'a Recording,
    model: Model,
    at: usize,
}

impl Replay<'_> {
    /// Applies the operations up to moment `at` (never backwards).
    pub fn advance_to(&mut self, at: usize) {
        let at = at.min(self.recording.ops.len());
        while self.at < at {
            if let Some(op) = self.recording.ops.get(self.at) {
                self.model.apply(op);
            }
            self.at += 1;
        }
    }

    /// Writes what a power cut now would leave, as `pick` chooses, into the new folder `out`.
    pub fn materialise(&self, out: &Path, pick: Pick) -> Result<(), String> {
        self.model.materialise(out, pick)
    }
}
