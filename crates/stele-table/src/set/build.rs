//! Building a table set: split points from a sample, the partition of a key, the commit
//! that checks the shards and writes the manifest, and the merge of sets.

use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use super::manifest::{self, ShardInfo};
use super::{SetIter, TableSet};
use crate::storage::replace_file;
use crate::{
    DuplicatePolicy, Error, FsStorage, Result, Storage, Table, TableBuilder, TableId, TableOptions,
};

impl TableSet {
    /// Split points for `shards` partitions of the keys `sample` was drawn from: the
    /// sample's quantiles, strictly increasing. At most `shards - 1` of them (fewer when the
    /// sample has few distinct keys); partition `i` holds the keys in
    /// `[splits[i-1], splits[i])` (see [`TableSet::partition`]). A sample of a few thousand
    /// keys per shard gives partitions within a few percent of each other.
    pub fn plan<K: AsRef<[u8]>>(
        sample: impl IntoIterator<Item = K>,
        shards: usize,
    ) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = sample.into_iter().map(|k| k.as_ref().to_vec()).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut splits: Vec<Vec<u8>> = Vec::with_capacity(shards.saturating_sub(1));
        for i in 1..shards {
            let Some(k) = keys.get(keys.len() * i / shards) else {
                break;
            };
            // The first key can never split (partition 0 would be empty).
            if keys.first() != Some(k) && splits.last() != Some(k) {
                splits.push(k.clone());
            }
        }
        splits
    }

    /// The partition of `key` under `splits` (from [`TableSet::plan`]): the number of split
    /// points `<= key`, from 0 to `splits.len()`.
    pub fn partition<S: AsRef<[u8]>>(splits: &[S], key: &[u8]) -> usize {
        splits.partition_point(|s| s.as_ref() <= key)
    }

    /// Checks the shards and writes the set's manifest at `manifest_path` (atomically: a
    /// temporary file, fsync, rename, fsync of the folder), then opens the set.
    ///
    /// Every shard must be a content-named table (`<id>.stt`, as [`crate::Sorter::finish`]
    /// and [`TableBuilder::finish`] name them) in the manifest's folder, open with a valid
    /// footer, hold at least one entry (empty tables are skipped: an empty partition has
    /// none), fall within one partition of `splits` (give `&[]` for no such check), at most
    /// one shard per partition, and no two shards' key ranges may overlap. Committing the
    /// same shards again writes the same manifest: a re-run is idempotent.
    pub fn commit<P: AsRef<Path>, S: AsRef<[u8]>>(
        manifest_path: impl AsRef<Path>,
        shards: &[P],
        splits: &[S],
    ) -> Result<TableSet> {
        Self::commit_with(&FsStorage, manifest_path, shards, splits)
    }

    /// [`TableSet::commit`] writing the manifest through `storage` (the seam the crash tests
    /// record and fault).
    pub fn commit_with<P: AsRef<Path>, S: AsRef<[u8]>>(
        storage: &dyn Storage,
        manifest_path: impl AsRef<Path>,
        shards: &[P],
        splits: &[S],
    ) -> Result<TableSet> {
        let manifest_path = manifest_path.as_ref();
        let invalid = |reason: String| Error::InvalidSet { reason };
        let dir = match manifest_path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if splits.windows(2).any(|w| w[0].as_ref() >= w[1].as_ref()) {
            return Err(invalid(
                "the split points are not strictly increasing".into(),
            ));
        }
        let mut infos: Vec<(usize, ShardInfo)> = Vec::with_capacity(shards.len());
        for path in shards {
            let path = path.as_ref();
            let id = TableId::from_path(path).ok_or_else(|| {
                invalid(format!(
                    "{} is not a content-named table (<32 hex digits>.stt): build shards with \
                     Sorter::finish or TableBuilder::finish",
                    path.display()
                ))
            })?;
            let beside = dir.join(id.file_name());
            if !same_file(path, &beside) {
                return Err(invalid(format!(
                    "shard {} is not in the manifest's folder {}: readers look for it there",
                    path.display(),
                    dir.display()
                )));
            }
            let table = Table::open(path)?;
            let (Some((first, _)), Some((last, _))) = (table.first()?, table.last()?) else {
                continue;
            };
            let (first, last) = (first.to_vec(), last.to_vec());
            let part = Self::partition(splits, &first);
            if Self::partition(splits, &last) != part {
                return Err(invalid(format!(
                    "shard {} spans more than one partition ({:?} to {:?}): each worker must \
                     write the keys of one partition",
                    path.display(),
                    first.escape_ascii().to_string(),
                    last.escape_ascii().to_string()
                )));
            }
            infos.push((
                part,
                ShardInfo {
                    id,
                    entries: table.len(),
                    file_bytes: table.bytes().as_ref().len() as u64,
                    first_key: first,
                    last_key: last,
                },
            ));
        }
        infos.sort_by(|a, b| a.1.first_key.cmp(&b.1.first_key));
        infos.dedup_by(|a, b| a.1.id == b.1.id);
        if let Some(w) = infos
            .windows(2)
            .find(|w| !splits.is_empty() && w[0].0 == w[1].0)
        {
            return Err(invalid(format!(
                "shards {} and {} both hold keys of partition {}: commit one table per partition",
                w[0].1.id, w[1].1.id, w[0].0
            )));
        }
        let infos: Vec<ShardInfo> = infos.into_iter().map(|(_, s)| s).collect();
        manifest::check_order(&infos).map_err(invalid)?;
        let bytes = manifest::encode(&infos);
        // Assert what is written right before writing it.
        debug_assert_eq!(manifest::decode(&bytes).as_ref(), Ok(&infos));
        let name = manifest_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        replace_file(storage, &temp, manifest_path, &bytes)?;
        Ok(TableSet::from_shards(manifest_path, infos))
    }

    /// Merges `sets` into one new set of about `shards` equal shards in `dir`, manifest at
    /// `manifest_path` (k-way: each input is read once, in order). A key in several sets
    /// follows `policy`: [`DuplicatePolicy::KeepLast`] keeps the value of the last set that
    /// has it, [`DuplicatePolicy::KeepFirst`] the first, [`DuplicatePolicy::Reject`] fails.
    pub fn merge(
        sets: &[&TableSet],
        manifest_path: impl AsRef<Path>,
        shards: usize,
        policy: DuplicatePolicy,
    ) -> Result<TableSet> {
        let manifest_path = manifest_path.as_ref();
        let dir = match manifest_path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Upper bound of the merged size: shards are cut by it.
        let total: u64 = sets.iter().map(|s| s.len()).sum();
        let per_shard = total.div_ceil(shards.max(1) as u64).max(1);
        let mut merged = KWay::new(sets.iter().map(|s| s.iter()).collect())?;
        let mut paths = Vec::new();
        let mut splits: Vec<Vec<u8>> = Vec::new();
        let mut builder: Option<(TableBuilder, u64)> = None;
        while let Some((key, value)) = merged.next_entry(policy)? {
            if builder.as_ref().is_some_and(|(_, n)| *n >= per_shard) {
                if let Some((b, _)) = builder.take() {
                    paths.push(b.finish()?.path);
                }
                splits.push(key.clone());
            }
            let (b, n) = match &mut builder {
                Some(b) => b,
                None => builder.insert((TableBuilder::new(&dir, TableOptions::default())?, 0)),
            };
            b.add(&key, &value)?;
            *n += 1;
        }
        if let Some((b, _)) = builder {
            paths.push(b.finish()?.path);
        }
        TableSet::commit(manifest_path, &paths, &splits)
    }
}

/// Whether two paths name the same file (by canonical path; false if either is missing).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// An entry of one input of a merge: (key, input index, value). Ordered by key, then by
/// input, so equal keys come out in the order of the inputs.
type Head = (Vec<u8>, usize, Vec<u8>);

/// A k-way merge of set iterators by key; on equal keys the lowest input index comes first.
struct KWay<'s> {
    inputs: Vec<SetIter<'s>>,
    /// Min-heap (by reversed ordering) of (key, input index, value).
    heap: BinaryHeap<std::cmp::Reverse<Head>>,
}

impl<'s> KWay<'s> {
    fn new(mut inputs: Vec<SetIter<'s>>) -> Result<Self> {
        let mut heap = BinaryHeap::with_capacity(inputs.len());
        for (i, it) in inputs.iter_mut().enumerate() {
            if let Some(e) = it.next() {
                let (k, v) = e?;
                heap.push(std::cmp::Reverse((k.to_vec(), i, v.to_vec())));
            }
        }
        Ok(KWay { inputs, heap })
    }

    fn pop(&mut self) -> Result<Option<Head>> {
        let Some(std::cmp::Reverse((k, i, v))) = self.heap.pop() else {
            return Ok(None);
        };
        if let Some(e) = self.inputs[i].next() {
            let (nk, nv) = e?;
            self.heap
                .push(std::cmp::Reverse((nk.to_vec(), i, nv.to_vec())));
        }
        Ok(Some((k, i, v)))
    }

    /// The next distinct key and its value under `policy`.
    fn next_entry(&mut self, policy: DuplicatePolicy) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some((key, _, mut value)) = self.pop()? else {
            return Ok(None);
        };
        while self.heap.peek().is_some_and(|r| r.0.0 == key) {
            let Some((_, _, later)) = self.pop()? else {
                break;
            };
            match policy {
                DuplicatePolicy::Reject => return Err(Error::DuplicateKey { key }),
                DuplicatePolicy::KeepFirst => {}
                _ => value = later,
            }
        }
        Ok(Some((key, value)))
    }
}
