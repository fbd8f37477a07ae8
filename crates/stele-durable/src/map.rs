//! Durable maps: a stack of sorted tables (a base and diffs) plus an in-memory diff.

use crate::error::{Error, Result, check_item};
use crate::memdiff::MemDiff;
use crate::merge::{MapIter, Merger, Op, Source, decode_op};
use crate::root::Kind;
use crate::store::Store;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use stele_table::{DiffInfo, Key, Table, TableId, prefix_successor};

mod open;
mod restack;
mod save;

/// Where [`DurableMap::get_and_origin`] found its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// The in-memory diff: put through [`DurableMap::put`] or [`DurableMap::remove`] since
    /// the last save.
    Memory,
    /// A table file (or no source had the key).
    Table,
}

/// One table of a stack.
#[derive(Debug)]
pub(crate) struct Layer {
    pub(crate) id: TableId,
    pub(crate) table: Table,
    /// Set for diffs: their values carry operation bytes.
    pub(crate) diff: Option<DiffInfo>,
}

impl Layer {
    /// Entries of the map this layer tops: a diff records it, a base table holds them.
    pub(crate) fn logical_len(&self) -> u64 {
        self.diff
            .map_or_else(|| self.table.len(), |d| d.logical_len)
    }
}

/// The root a collection was opened from, for [`DurableMap::commit`].
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    pub(crate) name: String,
    pub(crate) expected: Option<TableId>,
}

impl Binding {
    pub(crate) fn new(name: &str, expected: Option<TableId>) -> Self {
        Binding {
            name: name.to_owned(),
            expected,
        }
    }

    pub(crate) fn current(store: &Store, name: &str) -> Result<Self> {
        Ok(Binding::new(name, store.root(name)?.map(|r| r.id)))
    }

    /// Switches the bound root to `id` (compare and swap) and expects `id` from now on.
    pub(crate) fn advance(
        binding: &mut Option<Binding>,
        store: &Store,
        id: TableId,
        kind: Kind,
    ) -> Result<()> {
        let Some(b) = binding.as_mut() else {
            return Err(Error::NotBoundToRoot);
        };
        if b.expected != Some(id) {
            store.switch_root(&b.name, b.expected, id, kind)?;
            b.expected = Some(id);
        }
        Ok(())
    }
}

/// A sorted map of byte strings stored as a stack of immutable tables: a base, diffs saved
/// on top of it, and an in-memory diff of unsaved changes.
///
/// - Reads (`get`, `range`, `prefix`, iteration both ways, `len`, `nth`, `rank`) see all
///   layers merged, newest first; values are borrowed from the mapped files or the diff.
/// - [`put`](Self::put) and [`remove`](Self::remove) change the in-memory diff only.
/// - [`save`](Self::save) writes the diff as a small table naming the table below it;
///   [`compact`](Self::compact) merges every layer into a new base.
/// - `clone()` is a snapshot in O(1): the clone keeps reading the same layers (which stay
///   on disk while it is open) whatever happens to the original or to roots.
///
/// Open one with [`Store::build_map`], [`Store::new_map`], [`Store::open_map`] or
/// [`Store::map_at_root`].
#[derive(Debug, Clone)]
pub struct DurableMap {
    pub(crate) store: Store,
    /// Base first, newest diff last. Shared by snapshots; never changed in place.
    pub(crate) layers: Vec<Arc<Layer>>,
    /// Unsaved changes: `None` is a removal. A persistent map, so a clone (a snapshot)
    /// costs O(1) and later changes copy only the nodes they touch.
    pub(crate) diff: MemDiff,
    pub(crate) len: u64,
    pub(crate) binding: Option<Binding>,
    /// Table block size of the tables this map writes (`save`, `compact`, `rebase`), if
    /// not the store's ([`DurableMap::set_table_block_size`]).
    pub(crate) table_block_bytes: Option<u32>,
}

fn bounds_are_empty(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    }
}

impl DurableMap {
    /// The store this map lives in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The top table (what [`Store::open_map`] reopens), or `None` before the first save.
    /// Unsaved changes are not part of it.
    pub fn id(&self) -> Option<TableId> {
        self.layers.last().map(|l| l.id)
    }

    /// The tables of the stack, base first.
    pub fn layer_ids(&self) -> Vec<TableId> {
        self.layers.iter().map(|l| l.id).collect()
    }

    /// Number of unsaved changes (keys in the in-memory diff).
    pub fn unsaved_changes(&self) -> usize {
        self.diff.len()
    }

    /// Facts about each table of the stack, base first. The empty base that has no file
    /// ([`stele_table::empty_map_id`]) counts no file bytes.
    pub fn table_stats(&self) -> Vec<(TableId, stele_table::TableStats)> {
        self.layers
            .iter()
            .map(|l| {
                let mut stats = l.table.stats();
                if l.id == stele_table::empty_map_id() {
                    stats.file_bytes = 0;
                }
                (l.id, stats)
            })
            .collect()
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `key`, borrowed from the file or the diff.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        if let Some(v) = self.diff.get(key) {
            return Ok(v);
        }
        self.get_below(key, self.layers.len())
    }

    /// Like [`get`](Self::get), also saying where the answer came from: the in-memory diff
    /// (a value put in this process, or in the map this one was cloned from, since the last
    /// save) or a table file. A caller that checked every value before putting it can trust
    /// those from memory without checking them again; bytes from a file it cannot.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().expect("a temporary folder");
    /// use stele_durable::Origin;
    /// let store = stele_durable::Store::open(dir.path())?;
    /// let mut m = store.build_map([(b"a".to_vec(), b"1".to_vec())])?;
    /// m.put(b"b", b"2")?;
    /// assert_eq!(m.get_and_origin(b"a")?, (Some(&b"1"[..]), Origin::Table));
    /// assert_eq!(m.get_and_origin(b"b")?, (Some(&b"2"[..]), Origin::Memory));
    /// # Ok::<(), stele_durable::Error>(())
    /// ```
    pub fn get_and_origin(&self, key: &[u8]) -> Result<(Option<&[u8]>, Origin)> {
        if let Some(v) = self.diff.get(key) {
            return Ok((v, Origin::Memory));
        }
        Ok((self.get_below(key, self.layers.len())?, Origin::Table))
    }

    /// The value of `key` in the layers below `top` (exclusive), ignoring the memory diff.
    fn get_below(&self, key: &[u8], top: usize) -> Result<Option<&[u8]>> {
        for layer in self.layers.iter().take(top).rev() {
            if let Some(v) = layer.table.get(key)? {
                return match layer.diff {
                    None => Ok(Some(v)),
                    Some(_) => match decode_op(layer.id, key, v)? {
                        Op::Put(v) => Ok(Some(v)),
                        Op::Remove => Ok(None),
                    },
                };
            }
        }
        Ok(None)
    }

    /// The entry with the smallest key `>= key`: `self.range(key..).next()`, without the
    /// merge iterator's set-up. Each source (the memory diff, then the layers newest first)
    /// is asked for its first key at or after `key`; the smallest wins, the newest source
    /// on ties. Only when the winner is a removal does it fall back to the merge (which
    /// skips the removed key and looks further).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().expect("a temporary folder");
    /// let store = stele_durable::Store::open(dir.path())?;
    /// let mut m = store.build_map([(b"b".to_vec(), b"2".to_vec()), (b"c".to_vec(), b"3".to_vec())])?;
    /// m.remove(b"c")?;
    /// m.put(b"d", b"4")?;
    /// let (k, v) = m.ceiling(b"c")?.unwrap(); // "c" is removed: the next key
    /// assert_eq!((&*k, v), (&b"d"[..], &b"4"[..]));
    /// assert!(m.ceiling(b"e")?.is_none());
    /// # Ok::<(), stele_durable::Error>(())
    /// ```
    pub fn ceiling(&self, key: &[u8]) -> Result<Option<(Key<'_>, &[u8])>> {
        let from = (Bound::Included(key), Bound::Unbounded);
        let mut best: Option<(Key<'_>, Option<&[u8]>)> = self
            .diff
            .range(from)
            .next()
            .map(|e| (Key::from(e.key()), e.value()));
        for layer in self.layers.iter().rev() {
            let Some(entry) = layer.table.range(from).next() else {
                continue;
            };
            let (k, v) = entry?;
            // Strictly smaller only: on a tie the newer source (seen first) wins.
            if best.as_ref().is_some_and(|(b, _)| *b <= k) {
                continue;
            }
            let v = match layer.diff {
                None => Some(v),
                Some(_) => match decode_op(layer.id, &k, v)? {
                    Op::Put(v) => Some(v),
                    Op::Remove => None,
                },
            };
            best = Some((k, v));
        }
        match best {
            None => Ok(None),
            Some((k, Some(v))) => Ok(Some((k, v))),
            Some((_, None)) => self.range(key..).next().transpose(),
        }
    }

    /// True if `key` is in the map.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Sets `key` to `value` (in memory until [`save`](Self::save)).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_item("key", key)?;
        check_item("value", value)?;
        // One search of the diff for both the put and the count; the tables are read only
        // for a key the diff did not have.
        let existed = match self.diff.insert(key, Some(value)) {
            Some(was_put) => was_put,
            None => match self.get_below(key, self.layers.len()) {
                Ok(below) => below.is_some(),
                Err(e) => {
                    // Leave the map as it was: the diff had no entry of `key`.
                    self.diff.remove(key);
                    return Err(e);
                }
            },
        };
        if !existed {
            self.len += 1;
        }
        Ok(())
    }

    /// Removes `key`; returns whether it was there.
    pub fn remove(&mut self, key: &[u8]) -> Result<bool> {
        if !self.contains(key)? {
            return Ok(false);
        }
        let below = self.get_below(key, self.layers.len())?.is_some();
        if below {
            self.diff.insert(key, None);
        } else {
            // Only the memory diff had it: nothing to hide below.
            self.diff.remove(key);
        }
        self.len -= 1;
        Ok(true)
    }

    fn sources<'a>(&'a self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Source<'a>> {
        let mut sources = Vec::with_capacity(self.layers.len() + 1);
        if bounds_are_empty(lo, hi) {
            return sources;
        }
        sources.push(Source::Memory(self.diff.range((lo, hi))));
        for layer in self.layers.iter().rev() {
            sources.push(Source::Table {
                iter: Box::new(layer.table.range((lo, hi))),
                diff: layer.diff.map(|_| layer.id),
            });
        }
        sources
    }

    /// Entries whose keys fall in `range`, in key order (double-ended), e.g.
    /// `m.range(&b"a"[..]..&b"c"[..])`.
    pub fn range<'k, R: RangeBounds<&'k [u8]>>(&self, range: R) -> MapIter<'_> {
        let lo = range.start_bound().map(|k| *k);
        let hi = range.end_bound().map(|k| *k);
        MapIter::new(self.sources(lo, hi), self.diff.is_empty())
    }

    /// All entries in key order; `.rev()` walks backwards.
    pub fn iter(&self) -> MapIter<'_> {
        MapIter::new(
            self.sources(Bound::Unbounded, Bound::Unbounded),
            self.diff.is_empty(),
        )
    }

    /// Entries whose keys start with `prefix`.
    pub fn prefix(&self, prefix: &[u8]) -> MapIter<'_> {
        let end = prefix_successor(prefix);
        let hi = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        MapIter::new(
            self.sources(Bound::Included(prefix), hi),
            self.diff.is_empty(),
        )
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<(Key<'_>, &[u8])>> {
        self.iter().next().transpose()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<(Key<'_>, &[u8])>> {
        self.iter().next_back().transpose()
    }

    /// Only the base: reads can use the table's own rank and nth.
    fn single_table(&self) -> Option<&Table> {
        match self.layers.as_slice() {
            [base] if self.diff.is_empty() => Some(&base.table),
            _ => None,
        }
    }

    /// Every key that some diff (saved or not) mentions, with the newest operation, below
    /// `end` (exclusive) if given, in order.
    fn diff_ops<'a>(&'a self, end: Option<&[u8]>) -> Merger<'a> {
        let hi = end.map_or(Bound::Unbounded, Bound::Excluded);
        let mut sources = self.sources(Bound::Unbounded, hi);
        if self.layers.first().is_some_and(|l| l.diff.is_none()) {
            sources.pop(); // the base: not a diff
        }
        Merger::new(sources)
    }

    fn base(&self) -> Option<&Layer> {
        self.layers
            .first()
            .map(|l| &**l)
            .filter(|l| l.diff.is_none())
    }

    fn base_contains(&self, key: &[u8]) -> Result<bool> {
        Ok(match self.base() {
            Some(b) => b.table.get(key)?.is_some(),
            None => false,
        })
    }

    /// Number of entries with a key smaller than `key`. O(log n) for a map of one table;
    /// with diffs, O(d log n) where d is the number of keys the diffs mention below `key`.
    pub fn rank(&self, key: &[u8]) -> Result<u64> {
        if let Some(t) = self.single_table() {
            return Ok(t.rank(key)?);
        }
        let mut rank = match self.base() {
            Some(b) => b.table.rank(key)?,
            None => 0,
        };
        let mut ops = self.diff_ops(Some(key));
        while let Some(item) = ops.next_op() {
            let (k, op) = item?;
            let now = matches!(op, Op::Put(_));
            let before = self.base_contains(&k)?;
            rank = rank + u64::from(now) - u64::from(before);
        }
        Ok(rank)
    }

    /// The entry at position `i` in key order, `None` past the end. O(log n) for a map of
    /// one table; with diffs, O(d log n) where d is the number of keys the diffs mention.
    pub fn nth(&self, i: u64) -> Result<Option<(Key<'_>, &[u8])>> {
        if i >= self.len {
            return Ok(None);
        }
        if let Some(t) = self.single_table() {
            return Ok(t.nth(i)?);
        }
        // Walk the keys the diffs mention in order. Between two of them the merged view is
        // exactly the base, shifted by `added - removed` so far.
        let (mut added, mut removed) = (0u64, 0u64);
        let mut ops = self.diff_ops(None);
        while let Some(item) = ops.next_op() {
            let (k, op) = item?;
            let base_rank = match self.base() {
                Some(b) => b.table.rank(&k)?,
                None => 0,
            };
            // Merged entries before `k`: base entries before it, adjusted.
            let before = base_rank + added - removed;
            if i < before {
                break;
            }
            let in_base = self.base_contains(&k)?;
            if let Op::Put(v) = op {
                if i == before {
                    return Ok(Some((k, v)));
                }
                if !in_base {
                    added += 1;
                }
            } else if in_base {
                removed += 1;
            }
        }
        let pos = i + removed - added;
        match self.base() {
            Some(b) => Ok(b.table.nth(pos)?),
            None => Ok(None),
        }
    }
}
