//! One query's run: the counters its threads share, its clock and time budget.

use super::QueryStats;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counters shared by the threads of one run, and its clock.
pub(crate) struct Run {
    pub start: Instant,
    pub budget: Option<Duration>,
    pub keys: AtomicU64,
    pub docs: AtomicU64,
    pub stopped: AtomicBool,
    /// Set when the reader of a stream went away: the scans stop at their next check.
    pub cancelled: AtomicBool,
    /// Microseconds spent waiting for a stream's reader to take rows: not the query's own
    /// work, so not counted against its time budget.
    pub waited_us: AtomicU64,
    /// Bytes a sorter spilled to temporary files.
    pub spilled: AtomicU64,
}

impl Run {
    pub(crate) fn new(budget: Option<Duration>) -> Run {
        Run {
            start: Instant::now(),
            budget,
            keys: AtomicU64::new(0),
            docs: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            waited_us: AtomicU64::new(0),
            spilled: AtomicU64::new(0),
        }
    }

    /// Fails once the budget is spent, or the stream's reader is gone (checked every 256
    /// documents by the scans).
    pub(crate) fn check(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            // Nobody sees this error: the stream that would report it was dropped.
            return Err(Error::InvalidQuery {
                reason: "the rows' reader stopped reading".to_owned(),
            });
        }
        if let Some(budget) = self.budget
            && (self.stopped.load(Ordering::Relaxed) || self.worked() > budget)
        {
            self.stopped.store(true, Ordering::Relaxed);
            return Err(Error::QueryTimeout {
                elapsed_ms: self.start.elapsed().as_millis() as u64,
                budget_ms: budget.as_millis() as u64,
            });
        }
        Ok(())
    }

    /// Time since the start, less the time spent waiting for a stream's reader.
    fn worked(&self) -> Duration {
        self.start.elapsed().saturating_sub(Duration::from_micros(
            self.waited_us.load(Ordering::Relaxed),
        ))
    }

    pub(crate) fn stats(&self, rows: u64) -> QueryStats {
        QueryStats {
            keys_examined: self.keys.load(Ordering::Relaxed),
            docs_examined: self.docs.load(Ordering::Relaxed),
            rows,
            elapsed_us: self.start.elapsed().as_micros() as u64,
            spilled_bytes: self.spilled.load(Ordering::Relaxed),
        }
    }
}
