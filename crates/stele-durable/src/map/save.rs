//! Saving a map: its unsaved changes written as a table on top of its stack.

use super::{Binding, DurableMap, Layer};
use crate::error::{Error, Result};
use crate::memdiff::MemDiff;
use crate::root::Kind;
use std::sync::Arc;
use stele_table::{DiffInfo, TableBuilder, TableId};

impl DurableMap {
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
    pub(super) fn table_options(&self) -> stele_table::TableOptions {
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
