//! Building a table from pairs in any order, within a memory budget.

mod arena;
mod batch;
mod encode;
mod merge;
mod pipeline;
mod radix;
mod run;
mod spill;

use crate::builder::{
    DuplicatePolicy, TableBuilder, TableInfo, TableOptions, TableWriter, check_sizes,
};
use crate::error::{Error, Result};
use crate::storage::unique_name;
use batch::Batch;
use run::{MAX_WRITE_BUFFER_BYTES, MIN_IO_BUFFER_BYTES, Run};
use spill::{RunPlan, Spilling, spill_pool, write_runs};
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
    /// are set aside from the budget. A full batch is spilled in the background while the
    /// next one fills: two batches, each of half the budget less those buffers. While runs
    /// are merged, the budget holds the run readers' buffers, the merged key ranges waiting
    /// for the table writer, and the writer's buffer and index. Not counted: 8 bytes per
    /// pair while an in-memory batch is written and one sample key per 64 KiB of runs; I/O
    /// buffers keep a floor of 16 KiB and merged ranges of 1 MiB, so budgets of a few MiB
    /// are exceeded by those.
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
/// inside `ThreadPool::install`). Full batches are spilled in the background, on a pool of
/// the sorter's own with as many threads: [`Sorter::add`] returns while a full batch is
/// sorted and written, and waits only if the next batch fills before that is done.
#[derive(Debug)]
pub struct Sorter {
    opts: SorterOptions,
    policy: DuplicatePolicy,
    batch: Batch,
    runs: Vec<Run>,
    /// The batch being spilled in the background, if any: its runs go after `runs`.
    /// Declared before `spill` so that it is dropped (which waits for the spill to end)
    /// before the runs' folder is removed.
    spilling: Option<Spilling>,
    /// The threads of background spills, made at the first ([`spill_pool`]).
    spill_pool: Option<rayon::ThreadPool>,
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
        // A full batch is spilled while the next fills: two batches alive, each of half.
        let batch_limit_bytes =
            (budget.saturating_sub(writers * run_buffer_bytes) / 2).max(budget / 4);
        Ok(Sorter {
            batch: Batch::new(batch_limit_bytes),
            policy,
            opts,
            runs: Vec::new(),
            spilling: None,
            spill_pool: None,
            spill: None,
            added: 0,
            batch_limit_bytes,
            run_buffer_bytes,
        })
    }

    /// Adds a pair (any order). When the budget is exceeded, this call sorts the pairs held
    /// and spills them as runs (in the background, see [`Sorter`]), so it can fail with
    /// I/O errors, and with [`Error::DuplicateKey`] under [`DuplicatePolicy::Reject`] if a
    /// batch repeats a key (duplicates across runs are reported by `finish`). An error of
    /// a background spill is returned by the next call that spills, or by `finish`.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_sizes(key, value)?;
        self.batch.push(key, value)?;
        self.added += 1;
        if self.batch.memory_bytes() > self.batch_limit_bytes {
            self.spill(true)?;
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

    /// Sorted runs spilled to disk so far (a spill still running in the background not
    /// counted; after `finish` every one is).
    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    /// Bytes written to runs so far, as [`Self::spilled_runs`] counts them (the table adds
    /// its own size: write amplification is `(spilled_bytes + file_bytes) / file_bytes`,
    /// about 2 when spilling).
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

    /// Spills the batch as sorted runs: in the background if `background` (on the spill
    /// pool, [`spill_pool`]), else before returning. Waits first for the spill running,
    /// whose emptied batch becomes the next one.
    fn spill(&mut self, background: bool) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let dir = self.spill_dir()?;
        let emptied = self.wait_for_spill()?;
        let plan = RunPlan {
            dir,
            first_run: self.runs.len(),
            policy: self.policy,
            buffer_bytes: self.run_buffer_bytes,
        };
        if background && self.spill_pool.is_none() {
            // Without a pool (its threads could not be started) spills stay in line.
            self.spill_pool = spill_pool();
        }
        if let (true, Some(pool)) = (background, &self.spill_pool) {
            let next = emptied.unwrap_or_else(|| Batch::new(self.batch_limit_bytes));
            let full = std::mem::replace(&mut self.batch, next);
            self.spilling = Some(Spilling::start(full, plan, pool));
        } else {
            // The other batch, if any, is freed here: one is enough from now on.
            drop(emptied);
            let runs = write_runs(&mut self.batch, &plan)?;
            self.runs.extend(runs);
            self.batch.clear();
        }
        Ok(())
    }

    /// Waits for the spill running in the background, if any: its runs join `runs`, its
    /// batch (emptied, its arena kept) is returned.
    fn wait_for_spill(&mut self) -> Result<Option<Batch>> {
        let Some(spilling) = self.spilling.take() else {
            return Ok(None);
        };
        let (batch, runs) = spilling.wait()?;
        self.runs.extend(runs);
        Ok(Some(batch))
    }

    /// Sorts everything and writes the table into folder `out_dir`.
    pub fn finish(mut self, out_dir: impl AsRef<Path>) -> Result<TableInfo> {
        // Duplicates are resolved here, so the builder sees strictly ascending keys.
        let table_opts = self.opts.table.clone().duplicates(DuplicatePolicy::Reject);
        // The other batch's arena is freed before the last one is sorted or merged.
        drop(self.wait_for_spill()?);
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
        self.spill(false)?;
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
        drop(self.wait_for_spill()?);
        if self.runs.is_empty() {
            self.batch.sort();
            let n = self.batch.len();
            self.batch
                .for_each_unique_in(0, n, self.policy, &mut counted)?;
            return Ok(count);
        }
        self.spill(false)?;
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
