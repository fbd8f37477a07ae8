//! Durable lists: values by position, a base list table plus positional diffs.

use crate::error::{Error, Result, check_item};
use crate::map::Binding;
use crate::merge::{Op, decode_op};
use crate::root::Kind;
use crate::store::{MAX_LAYERS, Store};
use std::ops::Range;
use std::sync::Arc;
use stele_table::{DiffInfo, ListBuilder, Table, TableBuilder, TableId, TableList};

#[derive(Debug)]
enum ListLayer {
    Base { id: TableId, list: TableList },
    Diff { id: TableId, table: Table },
}

impl ListLayer {
    fn id(&self) -> TableId {
        match self {
            ListLayer::Base { id, .. } | ListLayer::Diff { id, .. } => *id,
        }
    }
}

/// A list of byte strings stored as a base list table plus positional diffs plus an
/// in-memory diff: [`push`](Self::push), [`set`](Self::set), [`pop`](Self::pop) and
/// [`truncate`](Self::truncate) in memory; [`save`](Self::save), [`compact`](Self::compact)
/// and [`commit`](Self::commit) as for [`DurableMap`](crate::DurableMap). Reading position
/// `i` looks in the in-memory diff, then each diff table (newest first, O(log n) each),
/// then the base (O(1) index lookups). `clone()` is an O(1) snapshot.
#[derive(Debug, Clone)]
pub struct DurableList {
    store: Store,
    /// Base first, newest diff last.
    layers: Vec<Arc<ListLayer>>,
    /// Unsaved values by position; every key is below `len`.
    diff: imbl::OrdMap<u64, Arc<[u8]>>,
    len: u64,
    binding: Option<Binding>,
}

impl Store {
    /// Builds a list from values in order, of any number (streamed to disk).
    pub fn build_list<V, I>(&self, values: I) -> Result<DurableList>
    where
        V: AsRef<[u8]>,
        I: IntoIterator<Item = V>,
    {
        let guard = self.write_guard()?;
        let mut b = ListBuilder::new(self.dir(), self.options().table.clone())?;
        for v in values {
            check_item("value", v.as_ref())?;
            b.push(v.as_ref())?;
        }
        let info = b.finish()?;
        let list = self.open_list(info.id);
        drop(guard);
        list
    }

    /// A new, empty list with no file yet; [`DurableList::save`] writes its first table.
    pub fn new_list(&self) -> DurableList {
        DurableList {
            store: self.clone(),
            layers: Vec::new(),
            diff: imbl::OrdMap::default(),
            len: 0,
            binding: None,
        }
    }

    /// Opens the list whose top table is `id`, with every layer below it.
    pub fn open_list(&self, id: TableId) -> Result<DurableList> {
        let mut layers = Vec::new();
        let mut next = Some((id, None));
        let mut len = None;
        while let Some((id, needed_by)) = next {
            if layers.len() >= MAX_LAYERS {
                return Err(Error::BadStack {
                    top: id,
                    reason: "has more layers than allowed",
                });
            }
            let layer = match self.open_table(id, needed_by) {
                Ok(table) => {
                    let Some(d) = table.diff_info().filter(|d| d.positional) else {
                        return Err(Error::WrongKind {
                            id,
                            expected: "a list",
                            found: if table.diff_info().is_some() {
                                "the diff of a map"
                            } else {
                                "a map"
                            },
                        });
                    };
                    if layers.iter().any(|l: &Arc<ListLayer>| l.id() == d.parent) || d.parent == id
                    {
                        return Err(Error::BadStack {
                            top: id,
                            reason: "loops",
                        });
                    }
                    len.get_or_insert(d.logical_len);
                    next = Some((d.parent, Some(id)));
                    ListLayer::Diff { id, table }
                }
                Err(Error::Table(stele_table::Error::WrongKind { .. })) => {
                    let list = self.open_list_table(id, needed_by)?;
                    len.get_or_insert(list.len());
                    next = None;
                    ListLayer::Base { id, list }
                }
                Err(e) => return Err(e),
            };
            layers.push(Arc::new(layer));
        }
        layers.reverse();
        Ok(DurableList {
            store: self.clone(),
            layers,
            diff: imbl::OrdMap::default(),
            len: len.unwrap_or(0),
            binding: None,
        })
    }

    /// Opens the list whose top table is the file at `path` (`<dir>/<id>.stt`), in the
    /// store of its folder.
    pub fn open_list_path(path: impl AsRef<std::path::Path>) -> Result<DurableList> {
        let (store, id) = Store::for_table_path(path.as_ref())?;
        store.open_list(id)
    }

    fn open_list_bound(&self, id: TableId, name: &str) -> Result<DurableList> {
        let mut l = self.open_list(id)?;
        l.binding = Some(Binding::new(name, Some(id)));
        Ok(l)
    }

    /// A snapshot of the list root `name` points at, bound to the root for
    /// [`DurableList::commit`].
    pub fn list_at_root(&self, name: &str) -> Result<DurableList> {
        self.at_root(name, Kind::List, |id| self.open_list_bound(id, name))?
            .ok_or_else(|| Error::NoSuchRoot {
                name: name.to_owned(),
                dir: self.dir().to_path_buf(),
            })
    }

    /// Like [`list_at_root`](Self::list_at_root), but a missing root gives a new empty
    /// list bound to it.
    pub fn list_at_root_or_new(&self, name: &str) -> Result<DurableList> {
        match self.at_root(name, Kind::List, |id| self.open_list_bound(id, name))? {
            Some(l) => Ok(l),
            None => {
                let mut l = self.new_list();
                l.binding = Some(Binding::new(name, None));
                Ok(l)
            }
        }
    }
}

impl DurableList {
    /// The store this list lives in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The top table, or `None` before the first save.
    pub fn id(&self) -> Option<TableId> {
        self.layers.last().map(|l| l.id())
    }

    /// The tables of the stack, base first.
    pub fn layer_ids(&self) -> Vec<TableId> {
        self.layers.iter().map(|l| l.id()).collect()
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of unsaved positions.
    pub fn unsaved_changes(&self) -> usize {
        self.diff.len()
    }

    /// The value at position `i`, `None` past the end.
    pub fn get(&self, i: u64) -> Result<Option<&[u8]>> {
        if i >= self.len {
            return Ok(None);
        }
        if let Some(v) = self.diff.get(&i) {
            return Ok(Some(v));
        }
        let key = i.to_be_bytes();
        for layer in self.layers.iter().rev() {
            match &**layer {
                ListLayer::Diff { id, table } => {
                    if let Some(v) = table.get(&key)? {
                        return match decode_op(*id, &key, v)? {
                            Op::Put(v) => Ok(Some(v)),
                            Op::Remove => Err(Error::CorruptDiff {
                                id: *id,
                                key: key.to_vec(),
                                reason: "a list diff holds a removal",
                            }),
                        };
                    }
                }
                ListLayer::Base { list, .. } => {
                    if let Some(v) = list.get(i)? {
                        return Ok(Some(v));
                    }
                }
            }
        }
        Err(Error::BadStack {
            top: self.id().unwrap_or(TableId::from_u128(0)),
            reason: "has a position below its length that no layer holds (a diff's logical length is wrong)",
        })
    }

    /// Appends a value.
    pub fn push(&mut self, value: &[u8]) -> Result<()> {
        check_item("value", value)?;
        self.diff.insert(self.len, Arc::from(value));
        self.len += 1;
        Ok(())
    }

    /// Replaces the value at position `i` (which must be below the length).
    pub fn set(&mut self, i: u64, value: &[u8]) -> Result<()> {
        check_item("value", value)?;
        if i >= self.len {
            return Err(Error::OutOfRange {
                index: i,
                len: self.len,
            });
        }
        self.diff.insert(i, Arc::from(value));
        Ok(())
    }

    /// Removes and returns the last value.
    pub fn pop(&mut self) -> Result<Option<Vec<u8>>> {
        let Some(last) = self.len.checked_sub(1) else {
            return Ok(None);
        };
        let value = self.get(last)?.map(<[u8]>::to_vec);
        self.diff.remove(&last);
        self.len = last;
        Ok(value)
    }

    /// Shortens the list to `len` values (no effect if it is not longer).
    pub fn truncate(&mut self, len: u64) {
        if len < self.len {
            // `split` drops the key `len` itself and returns the keys above it apart.
            let (below, _above) = self.diff.split(&len);
            self.diff = below;
            self.len = len;
        }
    }

    /// Values at positions `range`, in order (double-ended), clamped to the length.
    pub fn range(&self, range: Range<u64>) -> ListIter<'_> {
        let end = range.end.min(self.len);
        ListIter {
            list: self,
            pos: range.start.min(end)..end,
        }
    }

    /// All values in order.
    pub fn iter(&self) -> ListIter<'_> {
        self.range(0..self.len)
    }

    fn write_guarded(&self) -> Result<TableId> {
        let opts = self.store.options().table.clone();
        let info = match self.id() {
            Some(parent) => {
                let diff = DiffInfo::new(parent, self.len, true);
                let mut b = TableBuilder::new(self.store.dir(), opts.diff(diff))?;
                let mut buf = Vec::new();
                for (i, v) in self.diff.iter() {
                    debug_assert!(*i < self.len);
                    buf.clear();
                    buf.push(stele_table::DIFF_PUT);
                    buf.extend_from_slice(v);
                    b.add(&i.to_be_bytes(), &buf)?;
                }
                b.finish()?
            }
            None => self.write_base()?,
        };
        Ok(info.id)
    }

    fn write_base(&self) -> Result<stele_table::TableInfo> {
        let mut b = ListBuilder::new(self.store.dir(), self.store.options().table.clone())?;
        for v in self.iter() {
            b.push(v?)?;
        }
        Ok(b.finish()?)
    }

    /// Writes the unsaved changes as a diff table (or, for a list never saved, its first
    /// table) and returns the new top id.
    pub fn save(&mut self) -> Result<TableId> {
        if let (Some(id), true) = (self.id(), self.diff.is_empty())
            && self.stored_len() == Some(self.len)
        {
            return Ok(id);
        }
        let guard = self.store.write_guard()?;
        let id = self.write_guarded()?;
        let reopened = self.store.open_list(id)?;
        drop(guard);
        debug_assert_eq!(reopened.len, self.len);
        self.layers = reopened.layers;
        self.diff = imbl::OrdMap::default();
        Ok(id)
    }

    /// The length recorded by the top table.
    fn stored_len(&self) -> Option<u64> {
        Some(match &**self.layers.last()? {
            ListLayer::Base { list, .. } => list.len(),
            ListLayer::Diff { table, .. } => table.diff_info()?.logical_len,
        })
    }

    /// Writes every value into one new base list and returns its id.
    pub fn compact(&mut self) -> Result<TableId> {
        if let [single] = self.layers.as_slice()
            && matches!(**single, ListLayer::Base { .. })
            && self.diff.is_empty()
            && self.stored_len() == Some(self.len)
        {
            return Ok(single.id());
        }
        let guard = self.store.write_guard()?;
        let info = self.write_base()?;
        let reopened = self.store.open_list(info.id)?;
        drop(guard);
        self.layers = reopened.layers;
        self.diff = imbl::OrdMap::default();
        Ok(info.id)
    }

    /// Saves, then points the root this list was opened from at the new top table if the
    /// root has not moved since (else [`Error::RootConflict`]).
    pub fn commit(&mut self) -> Result<TableId> {
        if self.binding.is_none() {
            return Err(Error::NotBoundToRoot);
        }
        let id = self.save()?;
        Binding::advance(&mut self.binding, &self.store, id, Kind::List)?;
        Ok(id)
    }

    /// Binds the list to root `name` as it is now, for [`commit`](Self::commit).
    pub fn bind_root(&mut self, name: &str) -> Result<()> {
        self.binding = Some(Binding::current(&self.store, name)?);
        Ok(())
    }
}

/// Values of a [`DurableList`] by position, double-ended.
#[derive(Debug)]
pub struct ListIter<'a> {
    list: &'a DurableList,
    pos: Range<u64>,
}

impl<'a> ListIter<'a> {
    fn at(&self, i: u64) -> Result<&'a [u8]> {
        self.list.get(i)?.ok_or(Error::OutOfRange {
            index: i,
            len: self.list.len,
        })
    }
}

impl<'a> Iterator for ListIter<'a> {
    type Item = Result<&'a [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        let i = self.pos.next()?;
        Some(self.at(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.pos.size_hint()
    }
}

impl DoubleEndedIterator for ListIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let i = self.pos.next_back()?;
        Some(self.at(i))
    }
}

impl std::iter::FusedIterator for ListIter<'_> {}
