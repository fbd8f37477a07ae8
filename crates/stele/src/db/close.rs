//! Closing: the last handle of a database (dropped, or given to [`Database::close`]) leaves
//! it compact at rest. What the log holds goes into tables (collections most of whose
//! documents are not in packed blocks yet are packed, as `compact` packs them, and so are
//! indexes with many keys outside their compressed blocks), the log
//! restarts empty, and the zeroes it wrote ahead are given back: a database closed cleanly
//! opens without replaying anything and takes no more room than its tables.
//!
//! Handles are counted in `Inner::handles` (not by the `Arc`'s count, which the database's
//! own threads raise for an instant while they work): the handle that takes the count to 0
//! closes, whichever thread drops it.

use super::compaction::packs_collection;
use super::{Database, Inner};
use crate::error::{Error, Result};
use crate::internal::is_internal;
use crate::state::{MapRef, State};
use crate::wal;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A collection is packed at close when at least 1 in this many of its documents are not in
/// packed blocks (written since its last packing, one by one in diff tables or the log).
/// A collection mostly packed keeps its few new documents in diffs, as between compactions:
/// packing rewrites the blocks those documents fall into, and a close must stay short.
pub(super) const CLOSE_PACK_FRACTION: u64 = 8;

impl Clone for Database {
    /// Another handle to the same database; the database closes when the last one goes.
    fn clone(&self) -> Self {
        if !self.released {
            self.inner.handles.fetch_add(1, Ordering::AcqRel);
        }
        Database {
            inner: Arc::clone(&self.inner),
            released: self.released,
        }
    }
}

impl Drop for Database {
    /// The last handle closes the database (errors are lost here: [`Database::close`]
    /// reports them). Not while the thread panics: the log already holds every commit.
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.released = true;
            self.inner.handles.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let _ = self.release();
    }
}

impl Database {
    /// A handle for the database's own threads: not counted, so it never closes it.
    pub(super) fn internal(inner: Arc<Inner>) -> Database {
        Database {
            inner,
            released: true,
        }
    }

    /// Whether the last user handle is gone (the database closed or is closing).
    pub(super) fn is_closed(&self) -> bool {
        self.inner.handles.load(Ordering::Acquire) == 0
    }

    /// Closes this handle and reports what closing did. If it is the last handle (clones
    /// share one database): packs the collections most of whose documents are not in packed
    /// blocks (see [`DatabaseOptions::pack_on_close`](crate::DatabaseOptions::pack_on_close)),
    /// checkpoints so that the log holds nothing, and gives back the zeroes the log wrote
    /// ahead. Dropping the last handle does the same, without reporting errors; if another
    /// handle lives, this only releases this one. On an error the database is still
    /// consistent: every commit is in the log or the tables, and the next open recovers.
    ///
    /// ```no_run
    /// # fn main() -> stele::Result<()> {
    /// let db = stele::Database::open("/tmp/shop")?;
    /// // ... writes ...
    /// db.close()?; // at rest: tables only, an empty log
    /// # Ok(()) }
    /// ```
    pub fn close(mut self) -> Result<()> {
        self.release()
    }

    /// Releases this handle's count; the last one closes.
    fn release(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.released, true) {
            return Ok(());
        }
        if self.inner.handles.fetch_sub(1, Ordering::AcqRel) != 1 {
            return Ok(());
        }
        let pid = std::process::id();
        if pid != self.inner.opened_pid {
            // A forked child's copy: closing would checkpoint and cut the log under the
            // process that really writes it. Nothing is written.
            return Err(Error::OpenedInAnotherProcess {
                path: self.inner.dir.clone(),
                opened_pid: self.inner.opened_pid,
                pid,
            });
        }
        self.close_now()
    }

    /// The clean close: packing, then a checkpoint if the log holds anything, then the
    /// log's zeroes given back.
    fn close_now(&self) -> Result<()> {
        let written = self.snapshot_state().seq > self.inner.opened_seq;
        if self.inner.opts.pack_on_close && written {
            // The state is let go before packing: the tables it holds would outlive the
            // compaction's garbage collection (and stay on disk after the close).
            let picks = maps_to_pack(&self.inner.opts, &self.snapshot_state())?;
            if !picks.is_empty() {
                self.compact_where(&|r| picks.contains(r))?;
            }
        }
        let mut w = self.quiet_writer()?;
        if let Some(reason) = &w.poisoned {
            return Err(Error::LogPoisoned {
                path: self.wal_dir(),
                reason: reason.clone(),
            });
        }
        if self.checkpoint_needed(&w, false)? {
            self.checkpoint_locked(&mut w, false)?;
        }
        self.give_back_log_zeroes()
    }

    /// Whether the log folder holds a segment that starts at or before `seq` (records the
    /// tables hold already, say after a checkpoint whose segment removal failed).
    pub(super) fn log_holds_segments_before(&self, seq: u64) -> Result<bool> {
        let segments = wal::list_segments(&self.wal_dir())?;
        Ok(segments.iter().any(|(first, _)| *first <= seq))
    }

    /// Cuts the log's open segment to its records (see `WalWriter::give_back_zeroes`).
    pub(super) fn give_back_log_zeroes(&self) -> Result<()> {
        let mut wal = self.inner.wal.lock().map_err(|_| Error::CommitFailed {
            reason: "a thread panicked while writing the log".into(),
        })?;
        wal.give_back_zeroes()
    }
}

/// Entries of `map`'s layers and unsaved changes: for a packed collection, documents
/// written since the last packing and removal marks (a document rewritten in two layers
/// counts twice); for a packed index, its blocks and the keys written since. Not
/// `map.len()`: a packing swapped in on the side leaves it counting what it packed.
fn layer_entries(map: &stele_durable::DurableMap) -> u64 {
    map.table_stats()
        .iter()
        .map(|(_, stats)| stats.entries)
        .sum::<u64>()
        .saturating_add(map.unsaved_changes() as u64)
}

/// The maps a close packs: the user collections packing compresses whose documents outside
/// packed blocks are at least 1 in [`CLOSE_PACK_FRACTION`] of the collection, and the
/// indexes whose keys outside blocks are as many as 1 in [`CLOSE_PACK_FRACTION`] of their
/// collection's documents (any, if their collection is picked).
fn maps_to_pack(opts: &super::DatabaseOptions, state: &State) -> Result<BTreeSet<MapRef>> {
    let mut picks = BTreeSet::new();
    for (name, map) in &state.collections {
        if is_internal(name) || !packs_collection(opts, state, name)? {
            continue;
        }
        // A collection never packed holds all its documents in its map.
        let unpacked = layer_entries(map);
        let count = crate::collection::count(state, name);
        if unpacked > 0 && unpacked.saturating_mul(CLOSE_PACK_FRACTION) >= count {
            picks.insert(MapRef::Collection(name.clone()));
        }
    }
    for ((collection, name), ix) in &state.indexes {
        if !crate::index::packed::has_loose(&ix.map) {
            continue;
        }
        let docs = crate::collection::count(state, collection);
        let loose = layer_entries(&ix.map);
        if picks.contains(&MapRef::Collection(collection.clone()))
            || loose.saturating_mul(CLOSE_PACK_FRACTION) >= docs
        {
            picks.insert(MapRef::Index(collection.clone(), name.clone()));
        }
    }
    Ok(picks)
}

#[cfg(test)]
#[path = "close_tests.rs"]
mod tests;
