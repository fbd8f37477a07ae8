//! The crash model: what a power cut keeps of the recorded operations (see
//! `docs/POWER-LOSS.md`). A file's bytes and size as of its last fsync / fdatasync stay;
//! writes and cuts after it may each be lost, kept, or kept in part, per 4 KiB page and in
//! any version the page had since; a folder's entries as of its last fsync stay, and the
//! changes after it (creations, links, renames, removals) survive as a prefix in their
//! order (a journaling file system commits metadata in order; each folder is cut on its
//! own, which allows more states than one journal would).

use crate::rng::Rng;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Page of the file system's writeback: a page is written whole or not at all.
pub(crate) const PAGE: usize = 4096;

/// One recorded operation; paths are relative to the recorded root.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A new, empty file `ino` under `path` (replacing any entry of that name).
    Create { path: PathBuf, ino: usize },
    /// A new folder.
    Mkdir { path: PathBuf },
    /// Bytes written at an offset.
    Write {
        ino: usize,
        offset: u64,
        data: Arc<[u8]>,
    },
    /// The file cut or extended (with zeroes) to `len`.
    SetLen { ino: usize, len: u64 },
    /// fsync (`data_only`: fdatasync): the file's bytes and size are durable.
    Sync { ino: usize, data_only: bool },
    /// A hard link `to` of the file `from` names.
    Link { from: PathBuf, to: PathBuf },
    /// `from` renamed to `to`, replacing it.
    Rename { from: PathBuf, to: PathBuf },
    /// The name removed.
    Remove { path: PathBuf },
    /// fsync of a folder: its entries are durable.
    SyncDir { path: PathBuf },
}

impl Op {
    pub(crate) fn is_sync(&self) -> bool {
        matches!(self, Op::Sync { .. } | Op::SyncDir { .. })
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Op::Create { path, ino } => format!("create {} (file {ino})", path.display()),
            Op::Mkdir { path } => format!("mkdir {}", path.display()),
            Op::Write { ino, offset, data } => {
                format!("write file {ino} at {offset}, {} bytes", data.len())
            }
            Op::SetLen { ino, len } => format!("set_len file {ino} to {len}"),
            Op::Sync { ino, data_only } => {
                format!(
                    "{} file {ino}",
                    if *data_only { "fdatasync" } else { "fsync" }
                )
            }
            Op::Link { from, to } => format!("link {} -> {}", from.display(), to.display()),
            Op::Rename { from, to } => format!("rename {} -> {}", from.display(), to.display()),
            Op::Remove { path } => format!("remove {}", path.display()),
            Op::SyncDir { path } => format!("fsync folder {}", path.display()),
        }
    }
}

/// What a cut keeps of what was not durable yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// Nothing: every file and folder as of its last sync.
    AllLost,
    /// Everything, as if the cut came right after the last operation.
    AllKept,
    /// Everything but the last operation (everything kept, one operation earlier).
    LastOpLost,
    /// A random subset (seeded): per folder a prefix of its changes, per file any version of
    /// each page written since its last sync and any size it had since.
    Random(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File(usize),
    Dir,
}

#[derive(Debug, Clone)]
enum Pending {
    Write { offset: u64, data: Arc<[u8]> },
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<Pending>,
}

type Change = Vec<(OsString, Option<Entry>)>;

#[derive(Debug, Clone, Default)]
struct Dir {
    durable: BTreeMap<OsString, Entry>,
    current: BTreeMap<OsString, Entry>,
    /// Changes since the last sync, each applied atomically (a rename is one).
    pending: Vec<Change>,
}

/// Files and folders that existed when recording started: all durable.
#[derive(Debug, Clone, Default)]
pub(crate) struct Base {
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) files: Vec<(PathBuf, usize, Arc<[u8]>)>,
}

/// The file system as the operations so far left it: what is durable and what is not.
#[derive(Debug, Clone, Default)]
pub(crate) struct Model {
    inodes: HashMap<usize, Inode>,
    dirs: BTreeMap<PathBuf, Dir>,
}

fn split(path: &Path) -> (PathBuf, OsString) {
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path.file_name().map(OsString::from).unwrap_or_default();
    (parent, name)
}

impl Model {
    pub(crate) fn new(base: &Base) -> Self {
        let mut m = Model::default();
        m.dirs.insert(PathBuf::new(), Dir::default());
        for d in &base.dirs {
            m.dirs.entry(d.clone()).or_default();
            m.base_entry(d, Entry::Dir);
        }
        for (path, ino, bytes) in &base.files {
            m.inodes.insert(
                *ino,
                Inode {
                    durable: bytes.to_vec(),
                    current: bytes.to_vec(),
                    pending: Vec::new(),
                },
            );
            m.base_entry(path, Entry::File(*ino));
        }
        m
    }

    fn base_entry(&mut self, path: &Path, e: Entry) {
        let (parent, name) = split(path);
        let dir = self.dirs.entry(parent).or_default();
        dir.durable.insert(name.clone(), e);
        dir.current.insert(name, e);
    }

    fn change(&mut self, dir: PathBuf, change: Change) {
        let d = self.dirs.entry(dir).or_default();
        for (name, e) in &change {
            match e {
                Some(e) => d.current.insert(name.clone(), *e),
                None => d.current.remove(name),
            };
        }
        d.pending.push(change);
    }

    fn lookup(&self, path: &Path) -> Option<Entry> {
        let (parent, name) = split(path);
        self.dirs.get(&parent)?.current.get(&name).copied()
    }

    pub(crate) fn apply(&mut self, op: &Op) {
        match op {
            Op::Create { path, ino } => {
                self.inodes.insert(*ino, Inode::default());
                let (parent, name) = split(path);
                self.change(parent, vec![(name, Some(Entry::File(*ino)))]);
            }
            Op::Mkdir { path } => {
                self.dirs.entry(path.clone()).or_default();
                let (parent, name) = split(path);
                self.change(parent, vec![(name, Some(Entry::Dir))]);
            }
            Op::Write { ino, offset, data } => {
                let Some(f) = self.inodes.get_mut(ino) else {
                    return;
                };
                write_into(&mut f.current, *offset, data);
                f.pending.push(Pending::Write {
                    offset: *offset,
                    data: Arc::clone(data),
                });
            }
            Op::SetLen { ino, len } => {
                let Some(f) = self.inodes.get_mut(ino) else {
                    return;
                };
                f.current.resize(*len as usize, 0);
                f.pending.push(Pending::SetLen(*len));
            }
            Op::Sync { ino, .. } => {
                // fsync and fdatasync alike make the bytes and the size durable (fdatasync
                // skips timestamps only, which nothing here reads).
                if let Some(f) = self.inodes.get_mut(ino) {
                    f.durable.clone_from(&f.current);
                    f.pending.clear();
                }
            }
            Op::Link { from, to } => {
                if let Some(e) = self.lookup(from) {
                    let (parent, name) = split(to);
                    self.change(parent, vec![(name, Some(e))]);
                }
            }
            Op::Rename { from, to } => {
                let Some(e) = self.lookup(from) else {
                    return;
                };
                let (from_dir, from_name) = split(from);
                let (to_dir, to_name) = split(to);
                if from_dir == to_dir {
                    self.change(from_dir, vec![(from_name, None), (to_name, Some(e))]);
                } else {
                    // Not atomic across folders in this model (the engine renames within
                    // one folder only).
                    self.change(to_dir, vec![(to_name, Some(e))]);
                    self.change(from_dir, vec![(from_name, None)]);
                }
            }
            Op::Remove { path } => {
                let (parent, name) = split(path);
                self.change(parent, vec![(name, None)]);
            }
            Op::SyncDir { path } => {
                if let Some(d) = self.dirs.get_mut(path) {
                    d.durable.clone_from(&d.current);
                    d.pending.clear();
                }
            }
        }
    }

    /// Writes the state `pick` keeps into the new folder `out`.
    pub(crate) fn materialise(&self, out: &Path, pick: Pick) -> Result<(), String> {
        let mut rng = match pick {
            Pick::Random(seed) => Some(Rng::new(seed)),
            _ => None,
        };
        // How often a page written since the last sync reaches the disk in this state.
        let per_mille = rng.as_mut().map_or(0, |r| [100, 500, 900][r.below(3)]);
        let mut contents: HashMap<usize, Vec<u8>> = HashMap::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let at = out.join(&rel);
            fs::create_dir_all(&at).map_err(|e| format!("materialising {}: {e}", at.display()))?;
            let Some(dir) = self.dirs.get(&rel) else {
                continue;
            };
            let entries = match (pick, rng.as_mut()) {
                (Pick::AllLost, _) => dir.durable.clone(),
                (Pick::Random(_), Some(r)) => {
                    let mut e = dir.durable.clone();
                    let keep = r.below(dir.pending.len() + 1);
                    for change in dir.pending.iter().take(keep) {
                        for (name, entry) in change {
                            match entry {
                                Some(x) => e.insert(name.clone(), *x),
                                None => e.remove(name),
                            };
                        }
                    }
                    e
                }
                _ => dir.current.clone(),
            };
            for (name, entry) in entries {
                let path = rel.join(&name);
                match entry {
                    Entry::Dir => stack.push(path),
                    Entry::File(ino) => {
                        let Some(f) = self.inodes.get(&ino) else {
                            continue;
                        };
                        let bytes = contents
                            .entry(ino)
                            .or_insert_with(|| match (pick, &mut rng) {
                                (Pick::AllLost, _) => f.durable.clone(),
                                (Pick::Random(_), Some(r)) => random_content(f, r, per_mille),
                                _ => f.current.clone(),
                            });
                        let file = out.join(&path);
                        fs::write(&file, &bytes)
                            .map_err(|e| format!("materialising {}: {e}", file.display()))?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn write_into(buf: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let at = offset as usize;
    if buf.len() < at + data.len() {
        buf.resize(at + data.len(), 0);
    }
    if let Some(dst) = buf.get_mut(at..at + data.len()) {
        dst.copy_from_slice(data);
    }
}

/// Copies page `page` of `from` (zeroes past its end) into `to`, growing `to` as needed.
fn copy_page(from: &[u8], to: &mut Vec<u8>, page: usize) {
    let start = page * PAGE;
    let end = start + PAGE;
    if to.len() < end {
        to.resize(end, 0);
    }
    for i in start..end {
        if let Some(b) = to.get_mut(i) {
            *b = from.get(i).copied().unwrap_or(0);
        }
    }
}

/// A file's bytes after a cut that kept a random part of what was written since its last
/// sync: each write or cut, page by page, reached the disk or not (a page reached twice
/// holds its later version), and the size is the durable one or any it had since. Pages
/// past the durable size that never reached the disk read as zeroes.
fn random_content(f: &Inode, rng: &mut Rng, per_mille: u64) -> Vec<u8> {
    if f.pending.is_empty() {
        return f.durable.clone();
    }
    let mut work = f.durable.clone();
    let mut out = f.durable.clone();
    let mut sizes = vec![work.len()];
    for p in &f.pending {
        let (from, to) = match p {
            Pending::Write { offset, data } => {
                write_into(&mut work, *offset, data);
                (*offset as usize, *offset as usize + data.len())
            }
            Pending::SetLen(len) => {
                let old = work.len();
                work.resize(*len as usize, 0);
                let len = *len as usize;
                (old.min(len), old.max(len))
            }
        };
        if to > from {
            for page in from / PAGE..=(to - 1) / PAGE {
                if rng.chance(per_mille) {
                    copy_page(&work, &mut out, page);
                }
            }
        }
        sizes.push(work.len());
    }
    let size = sizes.get(rng.below(sizes.len())).copied().unwrap_or(0);
    out.resize(size, 0);
    out
}
