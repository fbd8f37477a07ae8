//! Commits: a batch is applied to a copy of the working state, its records join the
//! pending log bytes, and one leader writes every pending record with one fsync (group
//! commit), then publishes the state to snapshots.

use super::apply::{Ops, apply};
use super::{Database, WAL_DIR, lock_poisoned};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::state::State;
use crate::wal::{self, LoggedOp};
use std::sync::{Arc, MutexGuard};

/// Largest log buffer a commit keeps for the next one (see `Database::lead`).
pub(super) const RETAINED_LOG_BUFFER_BYTES: usize = 16 << 20;

#[derive(Debug)]
pub(super) struct Writer {
    /// Every applied batch, durable or not yet.
    pub(super) state: State,
    /// Log records not yet handed to a leader.
    pub(super) pending: Vec<u8>,
    /// Tickets order commits for waiting; unlike sequence numbers they are never reused.
    pub(super) next_ticket: u64,
    pub(super) durable_ticket: u64,
    /// Tickets up to this one failed with `failure`.
    pub(super) failed_ticket: u64,
    pub(super) failure: String,
    pub(super) leader_active: bool,
    /// Log bytes since the last checkpoint.
    pub(super) logged_bytes: u64,
    /// Set when the log cannot be written any more (until reopened).
    pub(super) poisoned: Option<String>,
}

impl Writer {
    /// The writer of a database just opened: `state` is the recovered one (durable, as
    /// it was read from disk), `logged_bytes` the log's valid bytes since the checkpoint.
    pub(super) fn recovered(state: State, logged_bytes: u64) -> Writer {
        Writer {
            state,
            pending: Vec::new(),
            next_ticket: 1,
            durable_ticket: 0,
            failed_ticket: 0,
            failure: String::new(),
            leader_active: false,
            logged_bytes,
            poisoned: None,
        }
    }
}

impl Database {
    /// Applies `batch` atomically and durably: when this returns `Ok`, every operation is
    /// on disk and visible to new snapshots; on error none is applied. Commits from many
    /// threads share one log write and one fsync (group commit).
    pub fn commit(&self, batch: Batch) -> Result<()> {
        let (mut ops, kinds) = batch.into_parts();
        // `_pins` holds the dictionaries these documents were compressed with until the
        // batch is applied (see `crate::dicts`).
        let (proposals, _pins) = self.compress_ops(&mut ops)?;
        self.commit_ops_kinds(ops, &kinds)?;
        // The dictionaries are durable now: later documents may use them.
        for (compressor, dict) in proposals {
            if let Ok(mut c) = compressor.lock() {
                // Refused only if an even newer one was adopted meanwhile: drop this one.
                let _ = c.adopt(dict);
            }
        }
        Ok(())
    }

    pub(crate) fn commit_ops(&self, ops: Vec<LoggedOp>) -> Result<()> {
        self.commit_ops_kinds(ops, &[])
    }

    /// Commits `ops`, the last `kinds.len()` of them writes given with ids of those kinds
    /// (see `super::id_kinds`).
    fn commit_ops_kinds(&self, mut ops: Vec<LoggedOp>, kinds: &[IdKind]) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        let mut w = inner.writer.lock().map_err(lock_poisoned)?;
        if let Some(reason) = &w.poisoned {
            return Err(Error::LogPoisoned {
                path: inner.dir.join(WAL_DIR),
                reason: reason.clone(),
            });
        }
        super::id_kinds::settle(&w.state, &mut ops, kinds)?;
        let seq = w.state.seq + 1;
        // Apply on a copy (O(collections)) so that a failure leaves the state untouched.
        let mut next = w.state.clone();
        apply(&inner.store, &mut next, &ops, Ops::Batch)?;
        let before = w.pending.len();
        wal::encode_batch(&mut w.pending, seq, &ops)?;
        w.logged_bytes += (w.pending.len() - before) as u64;
        next.seq = seq;
        w.state = next;
        let ticket = w.next_ticket;
        w.next_ticket += 1;
        loop {
            if w.durable_ticket >= ticket {
                return Ok(());
            }
            if w.failed_ticket >= ticket {
                return Err(Error::CommitFailed {
                    reason: w.failure.clone(),
                });
            }
            if w.leader_active {
                w = inner.group_done.wait(w).map_err(lock_poisoned)?;
            } else {
                w = self.lead(w)?;
            }
        }
    }

    /// Writes every pending record with one fsync, then publishes the state. Called with
    /// the writer lock held and no other leader; returns with the lock held again.
    pub(super) fn lead<'a>(
        &'a self,
        mut w: MutexGuard<'a, Writer>,
    ) -> Result<MutexGuard<'a, Writer>> {
        let inner = &*self.inner;
        w.leader_active = true;
        let records = std::mem::take(&mut w.pending);
        let upto = w.next_ticket - 1;
        let published = w.state.clone();
        drop(w);
        // A new database's folders are synced before its first records are written: a
        // failure then leaves nothing in the log that the caller was told failed.
        let result = match inner.wal.lock() {
            Ok(mut wal) => inner
                .unsynced
                .sync(&*inner.opts.storage, None)
                .and_then(|()| wal.append(&records)),
            Err(_) => Err(Error::CommitFailed {
                reason: "a thread panicked while writing the log".into(),
            }),
        };
        let mut w = inner.writer.lock().map_err(lock_poisoned)?;
        w.leader_active = false;
        // The next records go into this buffer again, unless others came meanwhile: its
        // pages are mapped already (a new one faults its pages in as it grows). Kept up to
        // RETAINED_LOG_BUFFER_BYTES.
        if w.pending.is_empty() && records.capacity() <= RETAINED_LOG_BUFFER_BYTES {
            let mut records = records;
            records.clear();
            w.pending = records;
        }
        match result {
            Ok(()) => {
                w.durable_ticket = upto;
                self.publish(Arc::new(published));
                if w.pending.is_empty() && w.logged_bytes >= inner.opts.checkpoint_bytes {
                    // The commits are durable whatever happens here; a failed checkpoint
                    // is retried at the next one and the log still holds everything.
                    let _ = self.checkpoint_locked(&mut w, true);
                }
            }
            Err(e) => {
                // Nothing after the last durable group was applied: go back to it.
                let durable = self.snapshot_state();
                w.state = (*durable).clone();
                w.pending.clear();
                w.failed_ticket = w.next_ticket - 1;
                w.failure = e.to_string();
                if let Error::LogPoisoned { reason, .. } = &e {
                    w.poisoned = Some(reason.clone());
                }
            }
        }
        inner.group_done.notify_all();
        Ok(w)
    }

    pub(super) fn snapshot_state(&self) -> Arc<State> {
        match self.inner.visible.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    pub(super) fn publish(&self, state: Arc<State>) {
        match self.inner.visible.write() {
            Ok(mut g) => *g = state,
            Err(p) => *p.into_inner() = state,
        }
    }

    /// The writer lock, once no commit is in flight or pending: the working state is
    /// then exactly the durable one.
    pub(super) fn quiet_writer(&self) -> Result<MutexGuard<'_, Writer>> {
        let mut w = self.inner.writer.lock().map_err(lock_poisoned)?;
        while w.leader_active || !w.pending.is_empty() {
            if w.leader_active {
                w = self.inner.group_done.wait(w).map_err(lock_poisoned)?;
            } else {
                w = self.lead(w)?;
            }
        }
        Ok(w)
    }
}
