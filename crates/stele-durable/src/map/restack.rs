//! Rewriting a map's stack of tables: a full compaction into one base, a merge of the
//! diffs above the base into one, and swapping a stack built on the side in under the
//! layers saved since.

use super::{DurableMap, Layer};
use crate::error::{Error, Result};
use crate::memdiff::MemDiff;
use crate::merge::{Merger, Op, Source};
use std::sync::Arc;
use stele_table::{DiffInfo, Table, TableBuilder, TableId};

impl DurableMap {
    /// Merges every layer and the unsaved changes into one new base table and returns its
    /// id. The old tables stay on disk until [`Store::collect_garbage`] finds them unused.
    pub fn compact(&mut self) -> Result<TableId> {
        if let (Some(id), true) = (self.id(), self.single_table().is_some()) {
            return Ok(id);
        }
        let guard = self.store.write_guard()?;
        let mut b = TableBuilder::new(self.store.dir(), self.table_options())?;
        // The merge reads every layer once, in order: through maps of their own advised for
        // sequential reads (read-ahead), leaving the shared maps' random-read advice alone.
        let sequential = self.with_sequential_layers()?;
        for entry in sequential.iter() {
            let (k, v) = entry?;
            b.add(&k, v)?;
        }
        drop(sequential);
        let id = self.store.finish_base(b)?;
        let table = self.store.open_table(id, None)?;
        drop(guard);
        if table.len() != self.len {
            return Err(Error::BadStack {
                top: id,
                reason: "merged to a different number of entries than the diffs recorded (a diff's logical length is wrong)",
            });
        }
        self.layers = vec![Arc::new(Layer {
            id,
            table,
            diff: None,
        })];
        self.diff = MemDiff::new(self.store.is_read_only());
        Ok(id)
    }

    /// A copy of this map (same tables, same unsaved changes) that reads its tables through
    /// maps of its own advised for sequential access. Maps are advised for random reads by
    /// default (a cold get reads one page and no more); their forward scans ask for the bytes
    /// ahead of them (up to 8 MiB), which covers most scans. A sequential copy also lets the
    /// kernel read ahead for backward scans and for several layers at once; compaction reads
    /// this way (see `examples/compact_cold.rs`).
    pub fn sequential(&self) -> Result<DurableMap> {
        self.with_sequential_layers()
    }

    fn with_sequential_layers(&self) -> Result<DurableMap> {
        let mut layers = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            let map = self
                .store
                .open_locked_with(l.id, None, stele_table::Access::Sequential)?;
            layers.push(Arc::new(Layer {
                id: l.id,
                table: Table::from_bytes(map)?,
                diff: l.diff,
            }));
        }
        Ok(DurableMap {
            store: self.store.clone(),
            layers,
            diff: self.diff.clone(),
            len: self.len,
            binding: None,
            table_block_bytes: self.table_block_bytes,
        })
    }

    /// This map without its unsaved changes: the stack as saved (a snapshot, O(layers)).
    pub fn saved_only(&self) -> DurableMap {
        let len = self.layers.last().map_or(0, |l| l.logical_len());
        DurableMap {
            store: self.store.clone(),
            layers: self.layers.clone(),
            diff: MemDiff::new(self.store.is_read_only()),
            len,
            binding: None,
            table_block_bytes: self.table_block_bytes,
        }
    }

    /// Replaces the bottom layers `covered` (which must be this map's first layers, in
    /// order) by the stack whose top is `base`: one table holding exactly their merged
    /// content (built, for example, by [`compact`](Self::compact) on
    /// [`saved_only`](Self::saved_only) of an earlier snapshot), or a base with one diff on it
    /// (built by [`merge_diffs`](Self::merge_diffs)). The layers saved on top of `covered`
    /// since are merged into one new diff on `base`, so a compaction can run without stopping
    /// writers and be swapped in after. Returns `false`, changing nothing, if the map's
    /// bottom layers are no longer `covered` (another compaction won). Unsaved changes are
    /// kept.
    pub fn rebase(&mut self, covered: &[TableId], base: TableId) -> Result<bool> {
        let ids = self.layer_ids();
        if covered.is_empty() || !ids.starts_with(covered) {
            return Ok(false);
        }
        // The new stack holds what `covered` held, in the caller's terms (a collection
        // packed on the side leaves an empty base beside its blocks).
        let new = self.store.open_map(base)?;
        let mut layers = new.layers.clone();
        let above = &self.layers[covered.len()..];
        if !above.is_empty() {
            layers.push(self.merged_diff(&new, base, above)?);
        }
        self.layers = layers;
        Ok(true)
    }

    /// Merges the saved diffs above this map's base into one diff on the base, leaving the
    /// base table as it is (a size-tiered compaction: the small changes of a large map are
    /// rewritten, not the map), and returns the new top id. Unsaved changes stay unsaved.
    /// A map of a base and at most one diff is left as it is. Reads then look at two tables
    /// (one with [`compact`](Self::compact)); writes cost the diffs' bytes, not the base's.
    pub fn merge_diffs(&mut self) -> Result<Option<TableId>> {
        let Some(base) = self.layers.first() else {
            return Ok(None);
        };
        if self.layers.len() <= 2 {
            return Ok(self.id());
        }
        if base.diff.is_some() {
            return Err(Error::BadStack {
                top: base.id,
                reason: "its bottom table is a diff, not a base",
            });
        }
        let base_map = DurableMap {
            store: self.store.clone(),
            layers: vec![Arc::clone(base)],
            diff: MemDiff::new(self.store.is_read_only()),
            len: base.table.len(),
            binding: None,
            table_block_bytes: self.table_block_bytes,
        };
        let merged = self.merged_diff(&base_map, base.id, &self.layers[1..])?;
        let id = merged.id;
        self.layers = vec![Arc::clone(base), merged];
        Ok(Some(id))
    }

    /// Writes the newest operation of every key `above` mentions (a stack of diffs, oldest
    /// first, whose top's logical length is the result's) as one diff table on `parent`
    /// (the map `below`, whose top is `parent`). A removal is kept only if `below` holds the
    /// key: removing what is not there changes nothing.
    fn merged_diff(
        &self,
        below: &DurableMap,
        parent: TableId,
        above: &[Arc<Layer>],
    ) -> Result<Arc<Layer>> {
        let Some(top) = above.last() else {
            return Err(Error::BadStack {
                top: parent,
                reason: "has no diffs above it to merge",
            });
        };
        let len = top.logical_len();
        let guard = self.store.write_guard()?;
        let opts = self.table_options();
        let mut b = TableBuilder::new(
            self.store.dir(),
            opts.diff(DiffInfo::new(parent, len, false)),
        )?;
        let sources = above
            .iter()
            .rev()
            .map(|l| Source::Table {
                iter: Box::new(l.table.iter()),
                diff: l.diff.map(|_| l.id),
            })
            .collect();
        let mut ops = Merger::new(sources);
        let mut buf = Vec::new();
        while let Some(item) = ops.next_op() {
            let (k, op) = item?;
            buf.clear();
            match op {
                Op::Put(v) => {
                    buf.push(stele_table::DIFF_PUT);
                    buf.extend_from_slice(v);
                }
                Op::Remove if below.get(&k)?.is_some() => {
                    buf.push(stele_table::DIFF_REMOVE);
                }
                Op::Remove => continue,
            }
            b.add(&k, &buf)?;
        }
        let info = b.finish()?;
        let table = self.store.open_table(info.id, None)?;
        drop(guard);
        let diff = table.diff_info();
        debug_assert_eq!(diff.map(|d| d.logical_len), Some(len));
        Ok(Arc::new(Layer {
            id: info.id,
            table,
            diff,
        }))
    }
}
