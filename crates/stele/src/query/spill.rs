//! Spilling past a memory budget through the table sorter (`stele_table::Sorter`, as bulk
//! import does): a sort without a limit ([`SortSpill`], for streamed queries) and `$group`
//! (`aggregate/group.rs`) keep their rows or groups in memory until they pass the budget,
//! then hand them to a sorter, which keeps its own batch within the same budget and writes
//! sorted runs to temporary files (in the system's temp folder, removed when it finishes
//! or is dropped) beyond it. The sorter gives them back merged, in key order.

use super::Query;
use super::Row;
use super::collect::{Collector, Rows};
use super::run::Run;
use crate::error::{Error, Result};
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use stele_doc::Document;
use stele_table::{MIN_MEMORY_BUDGET_BYTES, Sorter, SorterOptions};

/// What the rows or groups held in memory may take of a `budget`, as counted (their bytes
/// and a fixed overhead each): a quarter. The sorter gets three eighths ([`sorter`]). The
/// rest is slack for what the counts miss: the scan itself (the blocks it decodes, the
/// block cache filling, each thread's allocator arena: 7-10 MiB over 1M documents), the
/// allocator's rounding and vectors' spare capacity, and the memory freed when the held
/// rows move to the sorter, which stays in the process while the sorter allocates its
/// batch. Measured on 1M rows with 64 MiB (the anonymous memory the process gained):
/// a half and a half peaked at 104 MiB; a quarter and a half at 56-71 MiB, over the
/// budget in most runs; a quarter and three eighths at 46-50 MiB.
pub(crate) fn held_limit(budget: usize) -> usize {
    budget / 4
}

/// A sorter within three eighths of `budget` (at least the sorter's floor, 64 KiB): see
/// [`held_limit`]. A smaller batch means more runs to merge; over 1M rows the query took
/// the same time within the noise.
pub(crate) fn sorter(budget: usize) -> Result<Sorter> {
    let floor = usize::try_from(MIN_MEMORY_BUDGET_BYTES).unwrap_or(usize::MAX);
    Ok(Sorter::new(
        SorterOptions::default().memory_budget_bytes((budget / 8 * 3).max(floor)),
    )?)
}

/// What a sink returns to stop the merge early: not an error, mapped back to `Ok` below.
const STOP: &str = "the reader of sorted pairs wants no more";

/// Hands the sorter's pairs to `each` in key order until it returns false; counts what the
/// sorter spilled in `run`.
pub(crate) fn drain_sorted(
    sorter: Sorter,
    run: &Run,
    mut each: impl FnMut(&[u8], &[u8]) -> Result<bool> + Send,
) -> Result<()> {
    let spilled = sorter.spilled_bytes();
    let mut failed: Option<Error> = None;
    let result = sorter.finish_each(&mut |k, v| match each(k, v) {
        Ok(true) => Ok(()),
        Ok(false) => Err(stele_table::Error::Internal(STOP)),
        Err(e) => {
            failed = Some(e);
            Err(stele_table::Error::Internal(STOP))
        }
    });
    // Not counted: the batch still in memory, which `finish_each` writes as one more run.
    run.spilled.fetch_add(spilled, Ordering::Relaxed);
    if let Some(e) = failed {
        return Err(e);
    }
    match result {
        Ok(_) | Err(stele_table::Error::Internal(STOP)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Keeps the first error of a collector's `absorb` (which cannot return one) for its end.
pub(crate) fn keep_error(failed: &mut Option<Error>, result: Result<()>) {
    if let Err(e) = result {
        failed.get_or_insert(e);
    }
}

/// A row as a sorter's value: the id's length (4 bytes, little-endian), the id, the JSON.
fn encode_row(row: &Row, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(row.id.len() as u32).to_le_bytes());
    out.extend_from_slice(row.id.as_bytes());
    out.extend_from_slice(row.json.as_bytes());
}

fn decode_row(bytes: &[u8]) -> Result<Row> {
    let bad = || {
        Error::InvalidQuery {
        reason: "a row spilled to a temporary file came back damaged (is the temp folder's disk failing?)"
            .to_owned(),
    }
    };
    let (len, rest) = bytes.split_first_chunk::<4>().ok_or_else(bad)?;
    let len = u32::from_le_bytes(*len) as usize;
    let (id, json) = rest.split_at_checked(len).ok_or_else(bad)?;
    Ok(Row {
        id: String::from_utf8(id.to_vec()).map_err(|_| bad())?,
        json: String::from_utf8(json.to_vec()).map_err(|_| bad())?,
    })
}

/// The sorter a sort and the forks of its parallel scan share: pairs may be added in any
/// order (every key ends with the row's id, so keys are unique), so each fork moves its
/// rows there itself once it holds its share, instead of holding a whole stretch.
struct Shared {
    sorter: Mutex<Option<Sorter>>,
    /// Whether the sorter exists (read without the lock on every row).
    started: AtomicBool,
    budget: usize,
}

/// Rows moved to a started sorter at once, at least: fewer takes of its lock.
const BATCH_BYTES: usize = 256 << 10;

/// The rows of a query sorted without a limit, within a memory budget: in memory (`Rows`)
/// until they pass it, then through a sorter.
pub(crate) struct SortSpill {
    inner: Rows,
    /// What this collector may hold before it moves its rows to the sorter.
    limit: usize,
    shared: Arc<Shared>,
    /// An error while absorbing a fork (which cannot return one), reported at the end.
    failed: Option<Error>,
    scratch: Vec<u8>,
}

impl SortSpill {
    /// For a query without a limit.
    pub(crate) fn new(query: &Query) -> SortSpill {
        SortSpill {
            inner: Rows::new(query, false),
            limit: held_limit(query.memory_budget),
            shared: Arc::new(Shared {
                sorter: Mutex::new(None),
                started: AtomicBool::new(false),
                budget: query.memory_budget,
            }),
            failed: None,
            scratch: Vec::new(),
        }
    }

    /// Moves the rows held to the sorter once they pass the limit (or, once the sorter is
    /// started, a batch of them).
    fn settle(&mut self, force: bool) -> Result<()> {
        let held = self.inner.keyed_bytes();
        let started = self.shared.started.load(Ordering::Acquire);
        let due = if started {
            held >= BATCH_BYTES.min(self.limit)
        } else {
            held > self.limit
        };
        if !(due || force && started) || held == 0 {
            return Ok(());
        }
        // A poisoned lock means another thread panicked while adding: its error ends the
        // query anyway, and the sorter's state is only read by `finish`.
        let mut guard = self.shared.sorter.lock().unwrap_or_else(|p| p.into_inner());
        let sorter = match &mut *guard {
            Some(s) => s,
            None => guard.insert(sorter(self.shared.budget)?),
        };
        self.shared.started.store(true, Ordering::Release);
        for (key, row) in self.inner.take_keyed() {
            encode_row(&row, &mut self.scratch);
            sorter.add(&key, &self.scratch)?;
        }
        Ok(())
    }

    /// Hands the rows, sorted and skipped, to `each` until it returns false.
    pub(crate) fn finish(
        mut self,
        query: &Query,
        run: &Run,
        mut each: impl FnMut(Row) -> bool + Send,
    ) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !self.shared.started.load(Ordering::Acquire) {
            for row in self.inner.finish(query, run)? {
                if !each(row) {
                    break;
                }
            }
            return Ok(());
        }
        self.settle(true)?;
        let taken = self
            .shared
            .sorter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(sorter) = taken else {
            return Ok(());
        };
        let mut skip = query.skip;
        drain_sorted(sorter, run, |_, value| {
            let row = decode_row(value)?;
            if skip > 0 {
                skip -= 1;
                return Ok(true);
            }
            Ok(each(row))
        })?;
        run.check()
    }
}

impl Collector for SortSpill {
    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool> {
        self.inner.take(id, doc)?;
        self.settle(false)?;
        Ok(true)
    }

    fn fork(&self) -> Box<dyn Collector> {
        // A wave runs about 2 stretches per core: each fork holds a share of the limit.
        let share = crate::cores::cores().max(1) * 2;
        Box::new(SortSpill {
            inner: self.inner.fork_rows(),
            limit: self.limit / share,
            shared: Arc::clone(&self.shared),
            failed: None,
            scratch: Vec::new(),
        })
    }

    fn absorb(&mut self, other: Box<dyn Collector>) {
        let Ok(o) = other.into_any().downcast::<SortSpill>() else {
            return;
        };
        let o = *o;
        if let Some(e) = o.failed {
            self.failed.get_or_insert(e);
        }
        self.inner.absorb(Box::new(o.inner));
        let settled = self.settle(false);
        keep_error(&mut self.failed, settled);
    }

    fn full(&self) -> bool {
        self.failed.is_some()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_damage_is_an_error() {
        let row = Row {
            id: "é1".to_owned(),
            json: r#"{"a":1}"#.to_owned(),
        };
        let mut bytes = Vec::new();
        encode_row(&row, &mut bytes);
        assert_eq!(decode_row(&bytes).unwrap(), row);
        for cut in [0, 3, 5] {
            assert!(decode_row(bytes.get(..cut).unwrap()).is_err());
        }
    }
}
