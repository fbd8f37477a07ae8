//! Table sets: many tables with disjoint, ordered key ranges read as one table.
//!
//! A set is what a build spread over many workers produces (Dask, Spark, or `stele table
//! build --shards N` on one machine): split points from a sample of the keys partition the
//! key space, each worker sorts its partition into one content-named table (a *shard*), and
//! a *manifest* naming the shards with their key ranges is written last, atomically. A
//! reader opens the manifest; shards are opened (mmap) the first time a read needs them,
//! so a set of 10,000 shards opens in the time it takes to read its manifest, and a get
//! touches one shard.
//!
//! ```no_run
//! use stele_table::{Sorter, SorterOptions, TableSet};
//! # fn main() -> stele_table::Result<()> {
//! let dir = std::path::Path::new("/tmp/set");
//! let keys: Vec<&[u8]> = vec![b"kiwi", b"apple", b"pear", b"fig"];
//! let splits = TableSet::plan(keys.clone(), 2);          // from a sample of the keys
//! let mut shards = Vec::new();
//! for part in 0..=splits.len() {                            // one worker per partition
//!     let mut sorter = Sorter::new(SorterOptions::default())?;
//!     for k in keys.iter().filter(|k| TableSet::partition(&splits, k) == part) {
//!         sorter.add(k, b"1")?;
//!     }
//!     shards.push(sorter.finish(dir)?.path);
//! }
//! let set = TableSet::commit(dir.join("fruit.sts"), &shards, &splits)?;
//! assert_eq!(set.get(b"fig")?, Some(&b"1"[..]));
//! assert_eq!(set.len(), 4);
//! # Ok(()) }
//! ```

mod build;
mod iter;
mod manifest;

use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{Entry, Error, Result, Table};

pub use iter::SetIter;
pub use manifest::{SET_MAGIC, SET_VERSION, ShardInfo};

/// The file extension of set manifests.
pub const SET_EXTENSION: &str = "sts";

/// A set of tables read as one: see the [module documentation](self).
///
/// `Send + Sync`: share it between threads behind an `Arc`.
#[derive(Debug)]
pub struct TableSet {
    manifest: PathBuf,
    dir: PathBuf,
    shards: Vec<ShardInfo>,
    /// Entries before each shard, and the total at the end (`shards.len() + 1` values).
    starts: Vec<u64>,
    tables: Vec<OnceLock<Table>>,
}

impl TableSet {
    /// Opens the set whose manifest is at `path`; its shards are expected in the same
    /// folder and are opened when first read. Fails if the manifest is damaged, of another
    /// version, or its ranges are not sorted and disjoint.
    pub fn open(path: impl AsRef<Path>) -> Result<TableSet> {
        let path = path.as_ref();
        let bytes =
            std::fs::read(path).map_err(|e| Error::io("reading table set manifest", path, e))?;
        let shards = manifest::decode(&bytes).map_err(|r| manifest::corrupt(path, r))?;
        Ok(Self::from_shards(path, shards))
    }

    fn from_shards(path: &Path, shards: Vec<ShardInfo>) -> TableSet {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut starts = Vec::with_capacity(shards.len() + 1);
        let mut total = 0u64;
        for s in &shards {
            starts.push(total);
            total += s.entries;
        }
        starts.push(total);
        let tables = shards.iter().map(|_| OnceLock::new()).collect();
        TableSet {
            manifest: path.to_path_buf(),
            dir,
            shards,
            starts,
            tables,
        }
    }

    /// The manifest's path.
    pub fn path(&self) -> &Path {
        &self.manifest
    }

    /// The shards, in key order.
    pub fn shards(&self) -> &[ShardInfo] {
        &self.shards
    }

    /// The path of shard `i`.
    pub fn shard_path(&self, i: usize) -> Option<PathBuf> {
        self.shards.get(i).map(|s| self.dir.join(s.id.file_name()))
    }

    /// Number of entries in all shards.
    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// True if the set has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shard `i`, opened (and checked against the manifest) on first use.
    pub fn shard(&self, i: usize) -> Result<&Table> {
        let cell = self
            .tables
            .get(i)
            .ok_or(Error::Internal("shard index out of range"))?;
        if let Some(t) = cell.get() {
            return Ok(t);
        }
        let info = &self.shards[i];
        let path = self.dir.join(info.id.file_name());
        let table = Table::open(&path).map_err(|e| match e {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::MissingShard {
                    shard: path.clone(),
                    manifest: self.manifest.clone(),
                }
            }
            e => e,
        })?;
        if table.len() != info.entries || table.bytes().as_ref().len() as u64 != info.file_bytes {
            return Err(manifest::corrupt(
                &self.manifest,
                format!(
                    "shard {} holds {} entries in {} bytes, the manifest says {} in {}: it names \
                     another file",
                    path.display(),
                    table.len(),
                    table.bytes().as_ref().len(),
                    info.entries,
                    info.file_bytes
                ),
            ));
        }
        // Another thread may have opened it meanwhile: either copy is the same file.
        let _ = cell.set(table);
        cell.get().ok_or(Error::Internal("shard not kept"))
    }

    /// The first shard whose last key is >= `key` (`shards.len()` if none).
    fn shard_at_or_after(&self, key: &[u8]) -> usize {
        self.shards.partition_point(|s| s.last_key.as_slice() < key)
    }

    /// The value of `key`, borrowed from its shard's file.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        let i = self.shard_at_or_after(key);
        match self.shards.get(i) {
            Some(s) if s.first_key.as_slice() <= key => self.shard(i)?.get(key),
            _ => Ok(None),
        }
    }

    /// The values of many keys (`None` where absent), in the order given.
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<&[u8]>>> {
        keys.iter().map(|k| self.get(k.as_ref())).collect()
    }

    /// Number of entries whose key is smaller than `key`.
    pub fn rank(&self, key: &[u8]) -> Result<u64> {
        let i = self.shard_at_or_after(key);
        let before = self.starts[i];
        match self.shards.get(i) {
            Some(s) if s.first_key.as_slice() < key => Ok(before + self.shard(i)?.rank(key)?),
            _ => Ok(before),
        }
    }

    /// The entry at position `i` in key order; `None` past the end.
    pub fn nth(&self, i: u64) -> Result<Option<Entry<'_>>> {
        if i >= self.len() {
            return Ok(None);
        }
        // The shard whose range of positions holds i: the last start <= i.
        let s = self.starts.partition_point(|&start| start <= i) - 1;
        self.shard(s)?.nth(i - self.starts[s])
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<Entry<'_>>> {
        self.nth(0)
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<Entry<'_>>> {
        match self.len().checked_sub(1) {
            Some(i) => self.nth(i),
            None => Ok(None),
        }
    }

    /// All entries in key order; double-ended.
    pub fn iter(&self) -> SetIter<'_> {
        self.range::<&[u8], _>(..)
    }

    /// Entries whose keys fall in `range` (e.g. `set.range(&b"a"[..]..&b"c"[..])`), in key
    /// order; double-ended (`.rev()` walks backwards). Only the shards the range reaches are
    /// opened.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> SetIter<'_> {
        let owned = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let (lo, hi) = (owned(range.start_bound()), owned(range.end_bound()));
        let first = match &lo {
            Bound::Included(k) => self.shards.partition_point(|s| s.last_key < *k),
            Bound::Excluded(k) => self.shards.partition_point(|s| s.last_key <= *k),
            Bound::Unbounded => 0,
        };
        let end = match &hi {
            Bound::Included(k) => self.shards.partition_point(|s| s.first_key <= *k),
            Bound::Excluded(k) => self.shards.partition_point(|s| s.first_key < *k),
            Bound::Unbounded => self.shards.len(),
        };
        SetIter::new(self, lo, hi, first, end.max(first))
    }

    /// Entries whose keys start with `prefix`, in key order; double-ended.
    pub fn prefix(&self, prefix: &[u8]) -> SetIter<'_> {
        let lo = Bound::Included(prefix.to_vec());
        let hi = match crate::prefix_successor(prefix) {
            Some(end) => Bound::Excluded(end),
            None => Bound::Unbounded,
        };
        self.range((lo, hi))
    }

    /// Checks every block checksum of every shard (reads them all).
    pub fn verify_all(&self) -> Result<()> {
        for i in 0..self.shards.len() {
            self.shard(i)?.verify_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
