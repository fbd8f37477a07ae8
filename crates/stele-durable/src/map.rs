//! Durable maps: a stack of sorted tables (a base and diffs) plus an in-memory diff.

use crate::error::{Error, Result, check_item};
use crate::memdiff::MemDiff;
use crate::merge::{MapIter, Merger, Op, Source, decode_op};
use crate::root::Kind;
use crate::store::{MAX_LAYERS, Store};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use stele_table::{
    DiffInfo, DuplicatePolicy, Key, Sorter, SorterOptions, Table, TableBuilder, TableId,
    prefix_successor,
};

mod restack;

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

impl Store {
    /// Builds a map from pairs in any order, of any number (sorted within the store's
    /// memory budget, spilling to disk beyond it). A key given twice keeps its last value.
    pub fn build_map<K, V, I>(&self, pairs: I) -> Result<DurableMap>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        I: IntoIterator<Item = (K, V)>,
    {
        // Before the sorter, which may spill into the folder.
        self.check_writable()?;
        let opts = self.options();
        let mut sorter = Sorter::new(
            SorterOptions::default()
                .memory_budget_bytes(opts.memory_budget_bytes)
                .table_options(opts.table.clone())
                .temp_dir(self.dir())
                .duplicates(DuplicatePolicy::KeepLast),
        )?;
        for (k, v) in pairs {
            let (k, v) = (k.as_ref(), v.as_ref());
            check_item("key", k)?;
            check_item("value", v)?;
            sorter.add(k, v)?;
        }
        let guard = self.write_guard()?;
        let info = sorter.finish(self.dir())?;
        let map = self.open_map(info.id);
        drop(guard);
        map
    }

    /// A new, empty map with no file yet; [`DurableMap::save`] writes its first table.
    pub fn new_map(&self) -> DurableMap {
        DurableMap {
            store: self.clone(),
            layers: Vec::new(),
            diff: MemDiff::new(self.is_read_only()),
            len: 0,
            binding: None,
            table_block_bytes: None,
        }
    }

    /// Opens the map whose top table is `id`, with every layer below it.
    pub fn open_map(&self, id: TableId) -> Result<DurableMap> {
        let mut layers = Vec::new();
        let mut next = Some((id, None));
        while let Some((id, needed_by)) = next {
            if layers.len() >= MAX_LAYERS {
                return Err(Error::BadStack {
                    top: id,
                    reason: "has more layers than allowed",
                });
            }
            let table = self.open_table(id, needed_by).map_err(|e| match e {
                Error::Table(stele_table::Error::WrongKind { .. }) => Error::WrongKind {
                    id,
                    expected: "a map",
                    found: "a list",
                },
                e => e,
            })?;
            let diff = table.diff_info();
            if diff.is_some_and(|d| d.positional) {
                return Err(Error::WrongKind {
                    id,
                    expected: "a map",
                    found: "the diff of a list",
                });
            }
            if let Some(d) = diff
                && (d.parent == id || layers.iter().any(|l: &Arc<Layer>| l.id == d.parent))
            {
                return Err(Error::BadStack {
                    top: id,
                    reason: "loops",
                });
            }
            next = diff.map(|d| (d.parent, Some(id)));
            layers.push(Arc::new(Layer { id, table, diff }));
        }
        layers.reverse();
        let len = layers.last().map_or(0, |l| l.logical_len());
        Ok(DurableMap {
            store: self.clone(),
            layers,
            diff: MemDiff::new(self.is_read_only()),
            len,
            binding: None,
            table_block_bytes: None,
        })
    }

    fn open_map_bound(&self, id: TableId, name: &str) -> Result<DurableMap> {
        let mut m = self.open_map(id)?;
        m.binding = Some(Binding::new(name, Some(id)));
        Ok(m)
    }

    /// Opens the map whose top table is the file at `path` (`<dir>/<id>.stt`), in the store
    /// of its folder.
    pub fn open_map_path(path: impl AsRef<std::path::Path>) -> Result<DurableMap> {
        let (store, id) = Store::for_table_path(path.as_ref())?;
        store.open_map(id)
    }

    /// A snapshot of the map that root `name` points at, bound to the root so that
    /// [`DurableMap::commit`] can move it forward.
    pub fn map_at_root(&self, name: &str) -> Result<DurableMap> {
        self.at_root(name, Kind::Map, |id| self.open_map_bound(id, name))?
            .ok_or_else(|| Error::NoSuchRoot {
                name: name.to_owned(),
                dir: self.dir().to_path_buf(),
            })
    }

    /// Like [`map_at_root`](Self::map_at_root), but a missing root gives a new empty map
    /// bound to it (its first `commit` creates the root).
    pub fn map_at_root_or_new(&self, name: &str) -> Result<DurableMap> {
        match self.at_root(name, Kind::Map, |id| self.open_map_bound(id, name))? {
            Some(m) => Ok(m),
            None => {
                let mut m = self.new_map();
                m.binding = Some(Binding::new(name, None));
                Ok(m)
            }
        }
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

    /// Writes the unsaved changes as a diff table on top of the stack (or, for a map never
    /// saved, as its first table) and returns the new top id. Nothing to save returns the
    /// current id without writing.
    pub fn save(&mut self) -> Result<TableId> {
        if let (Some(id), true) = (self.id(), self.diff.is_empty()) {
            return Ok(id);
        }
        let opts = self.table_options();
        // A new map with nothing to write is the empty map, which has no file
        // (`Store::finish_base`): no table builder (a temporary file made, then removed)
        // and no lock taken for it. Every new database's checkpoint saved one (an import's
        // collection, whose documents are in its packs map).
        let empty_base = self.id().is_none() && self.diff.iter().all(|e| e.value().is_none());
        let guard = if empty_base {
            self.store.check_writable()?;
            None
        } else {
            Some(self.store.write_guard()?)
        };
        let id = match self.id() {
            None if empty_base => stele_table::empty_map_id(),
            Some(parent) => {
                let diff = DiffInfo::new(parent, self.len, false);
                let mut b = TableBuilder::new(self.store.dir(), opts.diff(diff))?;
                let mut buf = Vec::new();
                for e in self.diff.iter() {
                    buf.clear();
                    match e.value() {
                        Some(v) => {
                            buf.push(stele_table::DIFF_PUT);
                            buf.extend_from_slice(v);
                        }
                        None => buf.push(stele_table::DIFF_REMOVE),
                    }
                    b.add(e.key(), &buf)?;
                }
                b.finish()?.id
            }
            None => {
                let mut b = TableBuilder::new(self.store.dir(), opts)?;
                for e in self.diff.iter() {
                    if let Some(v) = e.value() {
                        b.add(e.key(), v)?;
                    }
                }
                self.store.finish_base(b)?
            }
        };
        let table = self.store.open_table(id, None)?;
        drop(guard);
        let diff = table.diff_info();
        debug_assert_eq!(diff.map_or(table.len(), |d| d.logical_len), self.len);
        // A new vector: snapshots taken before the save keep their own.
        let mut layers = self.layers.clone();
        layers.push(Arc::new(Layer { id, table, diff }));
        self.layers = layers;
        self.diff = MemDiff::new(self.store.is_read_only());
        Ok(id)
    }

    /// Has the tables this map writes from now on (saved diffs, compacted bases, rebased
    /// diffs; kept by its clones) use blocks of `block_size_bytes` instead of the store's (a
    /// power of two, 16 B to 16 MiB; checked when a table is written). Suits maps of a few
    /// values bigger than a block, such as compression dictionaries: each value spans whole
    /// blocks, so the padding after it is under one block. Tables already written keep theirs.
    pub fn set_table_block_size(&mut self, block_size_bytes: u32) {
        self.table_block_bytes = Some(block_size_bytes);
    }

    /// The options of the tables this map writes.
    fn table_options(&self) -> stele_table::TableOptions {
        let opts = self.store.options().table.clone();
        match self.table_block_bytes {
            Some(bytes) => opts.block_size_bytes(bytes),
            None => opts,
        }
    }

    /// Saves, then points the root this map was opened from at the new top table, if the
    /// root has not moved since (else [`Error::RootConflict`]). Returns the new top id.
    pub fn commit(&mut self) -> Result<TableId> {
        if self.binding.is_none() {
            return Err(Error::NotBoundToRoot);
        }
        let id = self.save()?;
        Binding::advance(&mut self.binding, &self.store, id, Kind::Map)?;
        Ok(id)
    }

    /// Binds the map to root `name` as it is now, for [`commit`](Self::commit): the next
    /// commit succeeds only if nobody switches the root before it.
    pub fn bind_root(&mut self, name: &str) -> Result<()> {
        self.binding = Some(Binding::current(&self.store, name)?);
        Ok(())
    }
}
