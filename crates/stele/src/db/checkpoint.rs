//! Checkpoints (diff tables, the manifest, log rotation, garbage collection) and the
//! full compaction `Database::compact` runs through them.

use super::commit::Writer;
use super::compaction::{compact_in_line, compact_on_the_side, swap_in};
use super::{Database, WAL_DIR, lock_poisoned};
use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::state::{MapRef, State};
use crate::wal;
use std::sync::Arc;
use stele_table::TableId;

impl Database {
    /// Writes every collection's unsaved changes as diff tables, compacts collections
    /// with too many layers, records the tables in the manifest, starts a new log segment
    /// and removes files nothing needs any more. Waits for commits in flight.
    ///
    /// With nothing to write since the last checkpoint (no commit since, nothing compacted
    /// on the side, no collection over the layer limit) it only removes files nothing needs
    /// any more: the manifest on disk says everything already, and rewriting it would cost
    /// two syncs for nothing (an import lands through a checkpoint of its own). A database
    /// that has none yet (new, nothing written) gets its first manifest.
    pub fn checkpoint(&self) -> Result<()> {
        let mut w = self.quiet_writer()?;
        let has_manifest = self.inner.dir.join(crate::manifest::FILE_NAME).is_file();
        if has_manifest && !self.checkpoint_needed(&w, true)? {
            return self.collect_garbage(&manifest_of(&w.state));
        }
        self.checkpoint_locked(&mut w, true)
    }

    /// Whether a checkpoint would change what is on disk: records in the log, compactions
    /// finished on the side to swap in, log segments whose records the tables hold already
    /// (a checkpoint whose segment removal failed), or with `deep` a map with more layers
    /// than allowed. The writer's state changes only through the log and checkpoints, so
    /// without any of these it is the state of the manifest on disk.
    pub(super) fn checkpoint_needed(&self, w: &Writer, deep: bool) -> Result<bool> {
        let ready = !self.inner.ready.lock().map_err(lock_poisoned)?.is_empty();
        let too_deep = deep
            && w.state
                .map_refs()
                .any(|(_, m)| m.layer_ids().len() > self.inner.opts.compact_layers);
        Ok(w.logged_bytes > 0
            || ready
            || too_deep
            || self.log_holds_segments_before(w.state.seq)?)
    }

    /// Merges every collection into a single table each (packing every document of a
    /// collection with compression on into new blocks), then checkpoints. Waits first for
    /// dictionary trainings in flight and persists the dictionaries they produce, so that the
    /// blocks are compressed with them. The merges run on the side, without the writer
    /// lock: readers and writers go on meanwhile, and what is written during them lands
    /// as one diff on top of the merged table (writers wait only while that diff is
    /// written and the result swapped in). Ends by removing the compression dictionaries that
    /// no stored document, batch in flight or later write can need any more (once every
    /// document of a collection is packed with its newest dictionary, the older ones are
    /// usually unused); open snapshots keep reading with the dictionaries they had.
    pub fn compact(&self) -> Result<()> {
        self.compact_where(&|_| true)
    }

    /// [`compact`](Self::compact) of the maps `select` picks (the others are checkpointed
    /// only): dictionaries are settled and trained for the collections it picks.
    pub(super) fn compact_where(&self, select: &dyn Fn(&MapRef) -> bool) -> Result<()> {
        let picks = |c: &str| select(&MapRef::Collection(c.to_owned()));
        self.settle_dictionaries_where(&picks)?;
        self.train_for_packing_where(&picks)?;
        // Everything written so far into tables, so that the merges see all of it (without
        // queueing background compactions: the merges below cover every map).
        {
            let mut w = self.quiet_writer()?;
            self.checkpoint_locked(&mut w, false)?;
        }
        let refs: Vec<MapRef> = {
            let w = self.inner.writer.lock().map_err(lock_poisoned)?;
            w.state.map_refs().map(|(r, _)| r).filter(select).collect()
        };
        let weak = Arc::downgrade(&self.inner);
        let mut sides = Vec::new();
        for r in &refs {
            if let Some(side) = compact_on_the_side(&weak, r, true)? {
                sides.push(side);
            }
        }
        {
            let mut w = self.quiet_writer()?;
            let mut state = w.state.clone();
            for side in sides {
                let r = side.map.clone();
                if !swap_in(&mut state, side)? {
                    // Another compaction of this map landed meanwhile (a background one,
                    // swapped in by a checkpoint a commit triggered): merge what the map
                    // holds now, in line.
                    compact_in_line(&self.inner.store, &self.inner.opts, &mut state, &r, true)?;
                }
            }
            w.state = state;
            self.checkpoint_locked(&mut w, false)?;
        }
        self.remove_unused_dictionaries()?;
        Ok(())
    }

    /// The checkpoint itself; the writer lock is held, nothing is pending or in flight,
    /// so the working state is exactly the durable one. `compact_deep`: compact the maps
    /// with more layers than allowed (in line, or queued for the background compactor).
    ///
    /// Crash safety rests on the order: every table is written before the manifest that
    /// names them, the manifest before the log is rotated, the old segments are removed
    /// only after the new one exists, and tables only once the manifest no longer names
    /// them. A crash at any point opens to the same data: the old manifest with the old
    /// log, or the new manifest (with log records it skips, up to its `seq`).
    pub(super) fn checkpoint_locked(&self, w: &mut Writer, compact_deep: bool) -> Result<()> {
        let mut state = w.state.clone();
        self.swap_in_ready(&mut state)?;
        save_maps(&mut state)?;
        self.compact_deep_maps(&mut state, compact_deep)?;
        let manifest = manifest_of(&state);
        manifest.write(&*self.inner.opts.storage, &self.inner.dir)?;
        // The manifest's write synced the database folder after its `wal` and `tables`
        // entries were made; a new database's new parents before anything reports this
        // checkpoint done (`folders.rs`).
        self.inner
            .unsynced
            .sync(&*self.inner.opts.storage, Some(&self.inner.dir))?;
        // From here the tables hold everything; the log restarts after `seq`.
        w.state = state.clone();
        w.logged_bytes = 0;
        self.publish(Arc::new(state));
        self.restart_log(w.state.seq)?;
        self.collect_garbage(&manifest)
    }

    /// Swaps the compactions finished on the side into `state`. An error (say, a full disk
    /// while rewriting the newer diffs) leaves that map as it was: the background
    /// compaction is dropped and tried again later.
    fn swap_in_ready(&self, state: &mut State) -> Result<()> {
        let ready = std::mem::take(&mut *self.inner.ready.lock().map_err(lock_poisoned)?);
        for side in ready {
            let _ = swap_in(state, side);
        }
        Ok(())
    }

    /// With `compact_deep`, compacts the maps with more layers than allowed: in line
    /// without a background compactor, else queued for it (a map already queued or running
    /// is not queued again). With a compactor, its queue's lock is taken either way (a
    /// poisoned one fails the checkpoint, as it always has).
    fn compact_deep_maps(&self, state: &mut State, compact_deep: bool) -> Result<()> {
        let inner = &*self.inner;
        let deep: Vec<MapRef> = if compact_deep {
            state
                .map_refs()
                .filter(|(_, m)| m.layer_ids().len() > inner.opts.compact_layers)
                .map(|(r, _)| r)
                .collect()
        } else {
            Vec::new()
        };
        let Some(queue) = &inner.compactor else {
            for r in &deep {
                compact_in_line(&inner.store, &inner.opts, state, r, false)?;
            }
            return Ok(());
        };
        let mut queued = inner.compacting.lock().map_err(lock_poisoned)?;
        for r in deep {
            if queued.insert(r.clone())
                && let Ok(tx) = queue.lock()
            {
                let _ = tx.send(r);
            }
        }
        Ok(())
    }

    /// Starts a new log segment after `seq` (the manifest holds everything up to it), then
    /// removes the segments it made obsolete that no reader holds.
    fn restart_log(&self, seq: u64) -> Result<()> {
        let inner = &*self.inner;
        let wal_dir = inner.dir.join(WAL_DIR);
        {
            let mut wal = inner.wal.lock().map_err(|_| Error::CommitFailed {
                reason: "a thread panicked while writing the log".into(),
            })?;
            wal.rotate(seq + 1)?;
        }
        // A segment a reader process holds stays for a later checkpoint or open.
        wal::tail::remove_obsolete(&*inner.opts.storage, &wal_dir, seq)?;
        Ok(())
    }

    /// Removes the tables neither `manifest` nor an open map, snapshot or compaction needs.
    /// Without waiting: a compaction building a table on the side holds the store's write
    /// guard for its whole run; the files it would free go at a later checkpoint.
    fn collect_garbage(&self, manifest: &Manifest) -> Result<()> {
        let keep: Vec<TableId> = manifest
            .collections
            .values()
            .copied()
            .chain(manifest.indexes.iter().map(|ix| ix.table))
            .flatten()
            .collect();
        self.inner.store.try_collect_garbage_keeping(&keep)?;
        Ok(())
    }
}

/// Saves every map with changes not in a table yet, and every map without a table (a new
/// one, so that the manifest can name it).
fn save_maps(state: &mut State) -> Result<()> {
    for map in state.maps_mut() {
        if map.unsaved_changes() > 0 || map.id().is_none() {
            map.save()?;
        }
    }
    Ok(())
}

/// The manifest of a saved `state`: its sequence number, the table of every map, the
/// counts and the next block number.
fn manifest_of(state: &State) -> Manifest {
    Manifest {
        seq: state.seq,
        collections: state
            .collections
            .iter()
            .map(|(name, map)| (name.clone(), map.id()))
            .collect(),
        indexes: state
            .indexes
            .values()
            .map(|ix| crate::manifest::IndexEntry {
                def: (*ix.def).clone(),
                table: ix.map.id(),
                arrays: ix.arrays,
            })
            .collect(),
        counts: Some(state.counts.clone()),
        next_block: state.packing.next_block(),
    }
}
