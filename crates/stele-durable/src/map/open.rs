//! Making, opening and finding maps in a store.

use super::{Binding, DurableMap, Layer};
use crate::error::{Error, Result, check_item};
use crate::memdiff::MemDiff;
use crate::root::Kind;
use crate::store::{MAX_LAYERS, Store};
use std::sync::Arc;
use stele_table::{DuplicatePolicy, Sorter, SorterOptions, TableId};

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
