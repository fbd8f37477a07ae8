//! Mapping table files into memory. The only `unsafe` of the crate lives here.

use super::Table;
use crate::error::{Error, Result};
use crate::footer::FOOTER_BYTES;
use memmap2::Mmap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// How a mapped table will be read: passed to the kernel as `madvise` advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Access {
    /// Point reads (`MADV_RANDOM`): no read-ahead, so a cold get reads about one page.
    /// Forward iterators then ask for the bytes ahead of them themselves (`MADV_WILLNEED`,
    /// from their third block on), so long scans still read the disk in large pieces.
    #[default]
    Random,
    /// Scans (`MADV_SEQUENTIAL`): aggressive read-ahead.
    Sequential,
}

/// A read-only memory map of a table file, or the bytes of a table that has no file
/// ([`MmapBytes::from_static`]).
#[derive(Debug)]
pub struct MmapBytes {
    backing: Backing,
    path: PathBuf,
}

#[derive(Debug)]
enum Backing {
    Map {
        map: Mmap,
        /// Kept open so that advisory locks taken on it (durable collections hold a shared
        /// lock on every table they read) last as long as the map.
        _file: File,
    },
    Static(&'static [u8]),
}

impl MmapBytes {
    /// Maps `path` read-only with the given access advice.
    pub fn map(path: &Path, access: Access) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io("opening table", path, e))?;
        Self::map_file(file, path, access)
    }

    /// Maps an open file read-only; `path` is only used in messages. The file stays open
    /// (with any lock taken on it) as long as the map.
    pub fn map_file(file: File, path: &Path, access: Access) -> Result<Self> {
        let len = file
            .metadata()
            .map_err(|e| Error::io("reading metadata of table", path, e))?
            .len();
        if len < FOOTER_BYTES as u64 {
            // Also avoids mapping an empty file, which fails on some systems.
            return Err(Error::NotATable {
                reason: "shorter than a footer",
                file_bytes: len,
            });
        }
        // SAFETY: the map is read-only and tables are immutable: they are written once under
        // a temp name and renamed into place, and nothing in Stele writes to them afterwards.
        // If another program truncates or rewrites the file while it is mapped, reads may
        // fault (SIGBUS) or see changed bytes; that is outside this crate's contract, as for
        // every mmap-based reader.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io("mapping table", path, e))?;
        #[cfg(unix)]
        {
            let advice = match access {
                Access::Random => memmap2::Advice::Random,
                Access::Sequential => memmap2::Advice::Sequential,
            };
            map.advise(advice)
                .map_err(|e| Error::io("advising the kernel about table", path, e))?;
        }
        #[cfg(not(unix))]
        let _ = access;
        Ok(MmapBytes {
            backing: Backing::Map { map, _file: file },
            path: path.to_path_buf(),
        })
    }

    /// Bytes that stand for a table without a file (such as [`crate::empty_map_bytes`],
    /// which durable stores keep in memory); `path` is only used in messages.
    pub fn from_static(bytes: &'static [u8], path: PathBuf) -> Self {
        MmapBytes {
            backing: Backing::Static(bytes),
            path,
        }
    }

    /// The mapped file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AsRef<[u8]> for MmapBytes {
    fn as_ref(&self) -> &[u8] {
        match &self.backing {
            Backing::Map { map, .. } => map,
            Backing::Static(bytes) => bytes,
        }
    }
}

impl Table<MmapBytes> {
    /// Opens a table file for random reads ([`Access::Random`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, Access::Random)
    }

    /// Opens a table file with an access hint.
    pub fn open_with(path: impl AsRef<Path>, access: Access) -> Result<Self> {
        Table::from_bytes(MmapBytes::map(path.as_ref(), access)?)
    }

    /// The table file's path.
    pub fn path(&self) -> &Path {
        self.bytes().path()
    }
}
