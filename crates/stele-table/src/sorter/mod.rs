//! Building a table from pairs in any order, within a memory budget.

mod arena;
mod batch;
mod encode;
mod merge;
mod pipeline;
mod radix;
mod run;

use crate::builder::{
    DuplicatePolicy, TableBuilder, TableInfo, TableOptions, TableWriter, check_sizes,
};
use crate::error::{Error, Result};
use crate::storage::unique_name;
use batch::Batch;
use rayon::prelude::*;
use run::{MAX_WRITE_BUFFER_BYTES, MIN_IO_BUFFER_BYTES, Run, RunWriter};
use std::path::{Path, PathBuf};

/// Options for a [`Sorter`].
#[derive(Debug, Clone)]
pub struct SorterOptions {
    memory_budget_bytes: usize,
    temp_dir: Option<PathBuf>,
    table: TableOptions,
}

impl Default for SorterOptions {
    fn default() -> Self {
        SorterOptions {
            memory_budget_bytes: 256 << 20,
            temp_dir: None,
            table: TableOptions::default(),
        }
    }
}

impl SorterOptions {
    /// Memory the sorter may use (default 256 MiB). While pairs come in, each costs its key
    /// and value bytes plus 52 bytes of bookkeeping (a 24-byte record, room for the sort's
    /// scatter copy, a 4-byte common prefix length); the buffers of the runs being spilled
    /// are set aside from the budget. While runs are merged, the budget holds the run
    /// readers' buffers, the merged key ranges waiting for the table writer, and the
    /// writer's buffer and index. Not counted: 8 bytes per pair while an in-memory batch is
    /// written and one sample key per 64 KiB of runs; I/O buffers keep a floor of 16 KiB
    /// and merged ranges of 1 MiB, so budgets of a few MiB are exceeded by those.
    /// Input that fits is sorted in memory and written once. Larger input is cut into
    /// sorted runs spilled to disk, then merged: every byte is then written twice (runs and
    /// table) and read back once. A bigger budget means fewer, larger runs; the merge cost
    /// hardly depends on the count.
    #[must_use]
    pub fn memory_budget_bytes(mut self, bytes: usize) -> Self {
        self.memory_budget_bytes = bytes;
        self
    }

    /// Folder in which a temp folder for runs is created (default: the system temp folder).
    /// Prefer the table's output folder: same file system, and the space is accounted where
    /// the table goes. The temp folder is removed when the sorter finishes, fails or is dropped.
    #[must_use]
    pub fn temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Layout options of the table written.
    #[must_use]
    pub fn table_options(mut self, table: TableOptions) -> Self {
        self.table = table;
        self
    }

    /// Duplicate key policy (default [`DuplicatePolicy::Reject`]); `KeepLast` keeps the
    /// value added last, `KeepFirst` the one added first.
    #[must_use]
    pub fn duplicates(mut self, policy: DuplicatePolicy) -> Self {
        self.table = self.table.duplicates(policy);
        self
    }
}

/// Removes the run folder when dropped (success, error or panic).
#[derive(Debug)]
struct SpillDir {
    path: PathBuf,
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // Best effort: nothing useful can be done with a failure here.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A receiver of sorted pairs ([`Sorter::finish_each`]).
pub type SortedSink<'s> = dyn FnMut(&[u8], &[u8]) -> Result<()> + Send + 's;

/// Sorts pairs given in any order into a table, within a memory budget.
///
/// Uses the rayon global thread pool (size it with `RAYON_NUM_THREADS` or run `finish`
/// inside `ThreadPool::install`).
#[derive(Debug)]
pub struct Sorter {
    opts: SorterOptions,
    policy: DuplicatePolicy,
    batch: Batch,
    runs: Vec<Run>,
    spill: Option<SpillDir>,
    added: u64,
    /// The budget less what a spill needs besides the batch (the run writers' buffers).
    batch_limit_bytes: usize,
    /// Write buffer of each run writer.
    run_buffer_bytes: usize,
}

/// The smallest memory budget a [`Sorter`] takes (64 KiB).
pub const MIN_MEMORY_BUDGET_BYTES: u64 = 64 << 10;

impl Sorter {
    /// A new, empty sorter.
    pub fn new(opts: SorterOptions) -> Result<Self> {
        opts.table.validate()?;
        if (opts.memory_budget_bytes as u64) < MIN_MEMORY_BUDGET_BYTES {
            return Err(Error::InvalidOption {
                name: "memory_budget_bytes",
                value: opts.memory_budget_bytes as u64,
                reason: "must be at least 65536 (MIN_MEMORY_BUDGET_BYTES)",
            });
        }
        let policy = opts.table.duplicates;
        let budget = opts.memory_budget_bytes;
        // A spill writes one run per thread, each through its own buffer.
        let writers = rayon::current_num_threads().max(1);
        let run_buffer_bytes =
            (budget / 16 / writers).clamp(MIN_IO_BUFFER_BYTES, MAX_WRITE_BUFFER_BYTES);
        let batch_limit_bytes = budget
            .saturating_sub(writers * run_buffer_bytes)
            .max(budget / 2);
        Ok(Sorter {
            batch: Batch::new(batch_limit_bytes),
            policy,
            opts,
            runs: Vec::new(),
            spill: None,
            added: 0,
            batch_limit_bytes,
            run_buffer_bytes,
        })
    }

    /// Adds a pair (any order). When the budget is exceeded, this call sorts the pairs held
    /// and spills them as a run, so it can fail with I/O errors, and with
    /// [`Error::DuplicateKey`] under [`DuplicatePolicy::Reject`] if that batch repeats a key
    /// (duplicates across runs are reported by `finish`).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_sizes(key, value)?;
        self.batch.push(key, value)?;
        self.added += 1;
        if self.batch.memory_bytes() > self.batch_limit_bytes {
            self.spill()?;
        }
        Ok(())
    }

    /// Pairs added so far (duplicates included).
    pub fn len(&self) -> u64 {
        self.added
    }

    /// True if nothing was added.
    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// Sorted runs spilled to disk so far.
    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    /// Bytes written to runs so far (the table adds its own size: write amplification is
    /// `(spilled_bytes + file_bytes) / file_bytes`, about 2 when spilling).
    pub fn spilled_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.bytes).sum()
    }

    fn spill_dir(&mut self) -> Result<PathBuf> {
        if let Some(d) = &self.spill {
            return Ok(d.path.clone());
        }
        let parent = self
            .opts
            .temp_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let path = parent.join(unique_name(".stele-sort-", "tmp"));
        std::fs::create_dir(&path).map_err(|e| Error::io("creating sort folder", &path, e))?;
        self.spill = Some(SpillDir { path: path.clone() });
        Ok(path)
    }

    fn spill(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let dir = self.spill_dir()?;
        self.batch.sort();
        // The sorted batch is written as one run per thread, each a key range of it (cut
        // between different keys), in parallel. Runs keep their order in `runs`, so ties
        // between batches still resolve by batch order.
        let batch = &self.batch;
        let policy = self.policy;
        let first_run = self.runs.len();
        let cuts = batch.cuts(rayon::current_num_threads().max(1));
        let buffer_bytes = self.run_buffer_bytes;
        let written: Vec<Result<Run>> = cuts
            .par_windows(2)
            .enumerate()
            .map(|(i, w)| {
                let path = dir.join(format!("run-{:06}", first_run + i));
                let mut writer = RunWriter::create(path, buffer_bytes)?;
                batch.for_each_unique_in(w[0], w[1], policy, |k, v| writer.add(k, v))?;
                writer.finish()
            })
            .collect();
        for run in written {
            self.runs.push(run?);
        }
        self.batch.clear();
        Ok(())
    }

    /// Sorts everything and writes the table into folder `out_dir`.
    pub fn finish(mut self, out_dir: impl AsRef<Path>) -> Result<TableInfo> {
        // Duplicates are resolved here, so the builder sees strictly ascending keys.
        let table_opts = self.opts.table.clone().duplicates(DuplicatePolicy::Reject);
        if self.runs.is_empty() {
            self.batch.sort();
            let writer = TableWriter::new(out_dir.as_ref(), &table_opts, false)?;
            return encode::write_sorted(
                &self.batch,
                self.policy,
                table_opts.block_size_bytes as usize,
                table_opts.restart_interval,
                writer,
            );
        }
        self.spill()?;
        // The merge gets the whole budget: the emptied batch still holds its records'
        // capacity, kept for the next batch until now.
        self.batch = Batch::new(0);
        crate::memory::release_free_memory();
        let mut builder = TableBuilder::new(out_dir, table_opts)?;
        merge::merge_runs(
            &self.runs,
            self.policy,
            self.opts.memory_budget_bytes,
            &mut |k, v| builder.add(k, v),
        )?;
        builder.finish()
    }

    /// Sorts everything and hands the pairs to `sink` in key order (duplicates resolved by
    /// the policy), without writing a table: for callers that turn sorted pairs into
    /// something else (the document store packs them into compressed blocks). Within the
    /// same memory budget as [`finish`](Self::finish); `sink` runs on a thread of its own
    /// when runs were spilled. Returns the number of pairs handed over. An error `sink`
    /// returns stops the sort and is returned.
    pub fn finish_each(mut self, sink: &mut SortedSink<'_>) -> Result<u64> {
        let mut count = 0u64;
        let mut counted = |k: &[u8], v: &[u8]| {
            count += 1;
            sink(k, v)
        };
        if self.runs.is_empty() {
            self.batch.sort();
            let n = self.batch.len();
            self.batch
                .for_each_unique_in(0, n, self.policy, &mut counted)?;
            return Ok(count);
        }
        self.spill()?;
        self.batch = Batch::new(0);
        crate::memory::release_free_memory();
        merge::merge_runs(
            &self.runs,
            self.policy,
            self.opts.memory_budget_bytes,
            &mut counted,
        )?;
        Ok(count)
    }
}
