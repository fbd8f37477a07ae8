//! Spilling a full batch as sorted runs: on a pool of the sorter's own while the next batch
//! fills ([`Spilling`]), or in line (the last batch, or without that pool).
//!
//! Why in the background: a spill sorts the batch and writes it, and in line the caller
//! adding pairs waits all that time (0.21-0.26 s for each 100 MB batch of small pairs
//! here). In the background the caller fills the next batch meanwhile; two batches are then
//! alive, so each gets half of what one got ([`super::Sorter::new`]). A table built from 14M
//! shuffled keys in 256 MiB took 0.83-0.87x the time and 0.86x the peak memory; an import,
//! whose conversion already kept both cores busy, took the same time
//! (`docs/notes/2026-12-04-spill-in-background.md` in the `stele` crate's repository).

use super::batch::Batch;
use super::run::{Run, RunWriter};
use crate::builder::DuplicatePolicy;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::path::PathBuf;

/// Where and how a batch's runs are written.
#[derive(Debug, Clone)]
pub(super) struct RunPlan {
    pub(super) dir: PathBuf,
    /// Number of the batch's first run file (runs are numbered in the order they sort in).
    pub(super) first_run: usize,
    pub(super) policy: DuplicatePolicy,
    /// Write buffer of each run writer.
    pub(super) buffer_bytes: usize,
}

/// Sorts `batch` and writes it as one run per thread of the pool, each a key range of it
/// (cut between different keys), in parallel: the runs in key order. Duplicates within the
/// batch are resolved here (so [`DuplicatePolicy::Reject`] fails here on one).
pub(super) fn write_runs(batch: &mut Batch, plan: &RunPlan) -> Result<Vec<Run>> {
    batch.sort();
    let batch = &*batch;
    let cuts = batch.cuts(rayon::current_num_threads().max(1));
    let written: Vec<Result<Run>> = cuts
        .par_windows(2)
        .enumerate()
        .map(|(i, w)| {
            let path = plan.dir.join(format!("run-{:06}", plan.first_run + i));
            let mut writer = RunWriter::create(path, plan.buffer_bytes)?;
            batch.for_each_unique_in(w[0], w[1], plan.policy, |k, v| writer.add(k, v))?;
            writer.finish()
        })
        .collect();
    written.into_iter().collect()
}

/// What a spill gives back: the batch, emptied (its arena chunks kept for the next batch),
/// and the runs written or the error that stopped them.
type Spilled = (Batch, Result<Vec<Run>>);

/// The threads that spill a sorter's batches in the background: a rayon pool of their
/// own, as many threads as the global pool, made at the sorter's first such spill.
///
/// Why not the global pool: a query's parallel scan adds to its sorter from the global
/// pool's threads, under a lock. Had the spill's sort queued its work there, the thread
/// holding the lock and waiting for the spill, and the others waiting for the lock, would
/// leave no thread to do it: a deadlock (`tests/sorter.rs` has the case). Nor can the
/// waiting thread run the pool's work meanwhile: that work may be another part of the same
/// scan, which would wait for the lock that thread holds.
pub(super) fn spill_pool() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads().max(1))
        .thread_name(|i| format!("stele-sort-spill-{i}"))
        .build()
        .ok()
}

/// A batch being sorted and written on a spill pool ([`spill_pool`]). At most one at a
/// time: the next spill waits for it, so runs stay in the order their batches were added
/// (ties between batches resolve by that order).
#[derive(Debug)]
pub(super) struct Spilling {
    /// `None` once waited for.
    done: Option<std::sync::mpsc::Receiver<Spilled>>,
}

impl Spilling {
    /// Starts spilling `batch` on `pool` as `plan` says.
    pub(super) fn start(mut batch: Batch, plan: RunPlan, pool: &rayon::ThreadPool) -> Self {
        let (sender, done) = std::sync::mpsc::channel();
        pool.spawn(move || {
            let runs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                write_runs(&mut batch, &plan)
            }))
            .unwrap_or(Err(Error::Internal("sorting a batch to spill panicked")));
            batch.clear();
            // The sort's copies were freed on this pool's threads, into heaps of their own
            // that the allocator would otherwise keep resident.
            crate::memory::release_free_memory();
            // The receiver is gone only if the sorter is, after waiting for this.
            let _ = sender.send((batch, runs));
        });
        Spilling { done: Some(done) }
    }

    /// Waits for the spill to end: the emptied batch and the runs written.
    pub(super) fn wait(mut self) -> Result<(Batch, Vec<Run>)> {
        let done = self
            .done
            .take()
            .ok_or(Error::Internal("a spill waited for twice"))?;
        let (batch, runs) = done
            .recv()
            .map_err(|_| Error::Internal("the thread spilling sorted runs stopped"))?;
        Ok((batch, runs?))
    }
}

impl Drop for Spilling {
    /// A sorter dropped (or failed) while a spill runs waits for it: the runs' folder is
    /// removed after this (`super::Sorter`'s fields drop in order), and a thread still
    /// writing into it would leave files behind, or the folder itself.
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            // Its runs and its error are of no use any more: the sorter is gone.
            let _ = done.recv();
        }
    }
}
