//! Building a map's base table from pairs already in key order, without sorting.

use crate::error::{Result, check_item};
use crate::map::{DurableMap, Layer};
use crate::memdiff::MemDiff;
use crate::store::{Store, WriteGuard};
use std::sync::Arc;
use stele_table::TableBuilder;

/// Writes a new single-table map from pairs given in strictly increasing key order: the
/// cheap way to rewrite a map whose entries are read in order and changed one by one (a
/// compaction that transforms values, say). Start one with [`Store::map_builder`], end it
/// with [`finish`](Self::finish); dropping it unfinished leaves only a temporary file that
/// garbage collection removes.
///
/// Holds the store's write guard until finished, like [`DurableMap::compact`]: garbage
/// collection waits meanwhile, so it cannot take the tables being read.
#[derive(Debug)]
pub struct MapBuilder {
    store: Store,
    builder: TableBuilder,
    guard: WriteGuard,
}

impl Store {
    /// A builder of a new map from pairs in key order (see [`MapBuilder`]).
    pub fn map_builder(&self) -> Result<MapBuilder> {
        self.map_builder_with_block_size(self.options().table.block_size())
    }

    /// Like [`map_builder`](Self::map_builder), with table blocks (and alignment) of
    /// `block_size_bytes` instead of the store's (a power of two, 16 B to 16 MiB). Small
    /// blocks suit maps of values bigger than a block: each value spans whole blocks, so
    /// the padding after it is at most one block.
    pub fn map_builder_with_block_size(&self, block_size_bytes: u32) -> Result<MapBuilder> {
        let guard = self.write_guard()?;
        let opts = self
            .options()
            .table
            .clone()
            .block_size_bytes(block_size_bytes);
        let builder = TableBuilder::new(self.dir(), opts)?;
        Ok(MapBuilder {
            store: self.clone(),
            builder,
            guard,
        })
    }
}

impl MapBuilder {
    /// Adds one pair. Keys must be strictly increasing (else
    /// [`stele_table::Error::OutOfOrder`] or `DuplicateKey`).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_item("key", key)?;
        check_item("value", value)?;
        Ok(self.builder.add(key, value)?)
    }

    /// Pairs added so far.
    pub fn len(&self) -> u64 {
        self.builder.len()
    }

    /// Whether nothing was added yet.
    pub fn is_empty(&self) -> bool {
        self.builder.is_empty()
    }

    /// Writes the table and opens it as a one-layer map.
    pub fn finish(self) -> Result<DurableMap> {
        let MapBuilder {
            store,
            builder,
            guard,
        } = self;
        let id = store.finish_base(builder)?;
        let table = store.open_table(id, None)?;
        drop(guard);
        let len = table.len();
        let indexed = store.is_read_only();
        Ok(DurableMap {
            store,
            layers: vec![Arc::new(Layer {
                id,
                table,
                diff: None,
            })],
            diff: MemDiff::new(indexed),
            len,
            binding: None,
            table_block_bytes: None,
        })
    }
}
