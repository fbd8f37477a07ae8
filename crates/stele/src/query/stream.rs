//! Streaming queries: rows handed to the reader as the access path finds them.
//!
//! [`Snapshot::query_iter`] runs the query on a thread of its own, which sends rows through
//! a bounded channel ([`CHANNEL_ROWS`]); the reader pulls them from a [`RowStream`]. What a
//! stream holds at once is bounded: the rows in the channel, plus the stretches of a full
//! scan's current wave (their rows are buffered until the stretch before them is sent,
//! since rows go out in id order). When the reader drops the stream, the next row sent
//! fails, the run is marked cancelled, and every scan stops at its next check.
//!
//! Queries whose order the access path gives (no sort, a sort on `_id`, or a sort an index
//! serves) stream; a sort done in memory needs every row first, so those rows are sent once
//! the sort is done. Without a limit, such a sort holds at most [`Query::memory_budget`]
//! bytes of rows and spills the rest through the table sorter (`spill.rs`).

use super::collect::{Collector, Rows};
use super::plan::Chosen;
use super::run::Run;
use super::spill::SortSpill;
use super::{Plan, Query, QueryStats, Row};
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;
use stele_doc::Document;

/// Rows waiting between the query's thread and the reader, at most.
pub const CHANNEL_ROWS: usize = 256;

/// A query by ids, or through an index with skip + limit at most this, runs in the
/// caller's thread (its rows are few, and starting a thread costs tens of microseconds).
const INLINE_ROWS: usize = 1000;

/// The rows of a query as they are found: an iterator of `Result<Row>` (an error, such as
/// [`Error::QueryTimeout`], ends it). Dropping it stops the query.
#[must_use = "a stream does nothing until its rows are read"]
pub struct RowStream {
    /// The rows of a small query, run in the caller's thread.
    ready: Option<std::vec::IntoIter<Row>>,
    rx: Option<Receiver<Result<Row>>>,
    worker: Option<JoinHandle<()>>,
    run: Arc<Run>,
    plan: Plan,
    rows: u64,
    /// The collection's kind of ids: rows of integer ids carry stored keys until handed out.
    kind: crate::ids::IdKind,
}

impl Snapshot {
    /// Runs `query` and returns its rows as they are found, in the order asked: the first
    /// rows of a full scan arrive while it still reads the rest, and a reader that stops
    /// early (drops the stream) stops the scan. The rows are those of
    /// [`query`](Snapshot::query). A time budget counts the query's own work, not the time
    /// the reader takes between rows. A small query (by ids, or through an index with a
    /// limit of at most 1,000 rows) runs at once, in this thread: its errors are returned
    /// here rather than by the stream.
    pub fn query_iter(&self, query: &Query) -> Result<RowStream> {
        query.check()?;
        let kind = self.state.marked_kind(&query.collection);
        // The query on stored keys for a collection of integer ids (`int_ids`); `query`
        // (below, for a small query) does that itself.
        let keyed = super::int_ids::for_state(&self.state, query);
        let (chosen, plan) = self.plan(&keyed);
        let small = match &chosen {
            Chosen::Ids(_) => true,
            Chosen::Index(_) => query
                .limit
                .is_some_and(|l| l.saturating_add(query.skip) <= INLINE_ROWS),
            _ => false,
        };
        if small {
            // A few rows: a thread would cost more than the query.
            let out = self.query(query)?;
            let run = Arc::new(Run::new(None));
            run.keys.store(out.stats.keys_examined, Ordering::Relaxed);
            run.docs.store(out.stats.docs_examined, Ordering::Relaxed);
            return Ok(RowStream {
                ready: Some(out.rows.into_iter()),
                rx: None,
                worker: None,
                run,
                plan: out.plan,
                rows: 0,
                // `query` gave the rows their ids already.
                kind: crate::ids::IdKind::Text,
            });
        }
        let plan = Plan {
            sorted_in_memory: !chosen.sorted(&query.sort),
            ..plan
        };
        drop(chosen);
        let run = Arc::new(Run::new(query.time_budget));
        let (tx, rx) = sync_channel(CHANNEL_ROWS);
        let (snap, q, r) = (self.clone(), keyed.into_owned(), Arc::clone(&run));
        let worker = std::thread::Builder::new()
            .name("stele-query".to_owned())
            .spawn(move || {
                if let Err(e) = produce(&snap, &q, &r, &tx) {
                    // The reader may be gone already: then nobody wants the error.
                    let _ = tx.send(Err(e));
                }
            })
            .map_err(|source| Error::Io {
                op: "starting the thread of a query",
                path: Default::default(),
                source,
            })?;
        Ok(RowStream {
            ready: None,
            rx: Some(rx),
            worker: Some(worker),
            run,
            plan,
            rows: 0,
            kind,
        })
    }
}

/// The query's thread: feeds the rows to the channel.
fn produce(
    snap: &Snapshot,
    query: &Query,
    run: &Arc<Run>,
    tx: &SyncSender<Result<Row>>,
) -> Result<()> {
    let (chosen, _) = snap.plan(query);
    let mut out = Sender {
        inner: Rows::new(query, true),
        tx: tx.clone(),
        run: Arc::clone(run),
        skip: query.skip,
        left: query.limit,
        done: false,
    };
    if chosen.sorted(&query.sort) {
        snap.feed(query, &chosen, run, &mut out)?;
        let rest = out.inner.take_rest();
        out.send_all(rest);
    } else if query.limit.is_none() {
        // Every row, sorted in memory up to the budget, then through the sorter.
        let mut rows = SortSpill::new(query);
        snap.feed(query, &chosen, run, &mut rows)?;
        // Skipped already.
        out.skip = 0;
        rows.finish(query, run, |row| {
            out.send_all(vec![row]);
            !out.done
        })?;
    } else {
        // The skip + limit first rows, in a heap.
        let mut rows = Rows::new(query, false);
        snap.feed(query, &chosen, run, &mut rows)?;
        // Skipped and limited already.
        (out.skip, out.left) = (0, None);
        out.send_all(rows.finish(query, run)?);
    }
    Ok(())
}

impl RowStream {
    /// The plan that runs.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// What the query has examined so far, and the rows read from the stream.
    pub fn stats(&self) -> QueryStats {
        self.run.stats(self.rows)
    }

    /// Stops the query (as dropping the stream does) and says what it had examined.
    pub fn cancel(mut self) -> QueryStats {
        self.stop();
        self.stats()
    }

    /// Drops the channel (the query's next send fails), marks the run cancelled (its scans
    /// stop at their next check) and waits for its thread.
    fn stop(&mut self) {
        self.run.cancelled.store(true, Ordering::Relaxed);
        self.rx = None;
        self.join();
    }

    /// Waits for the query's thread; an error if it panicked.
    fn join(&mut self) -> Option<Error> {
        let worker = self.worker.take()?;
        let panic = worker.join().err()?;
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Some(Error::InvalidQuery {
            reason: format!(
                "the query stopped on an internal error (a bug: please report it): {what}"
            ),
        })
    }
}

impl Iterator for RowStream {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        if let Some(ready) = &mut self.ready {
            let row = ready.next()?;
            self.rows += 1;
            return Some(Ok(row));
        }
        let rx = self.rx.as_ref()?;
        match rx.recv() {
            Ok(Ok(mut row)) => {
                self.rows += 1;
                super::int_ids::row_for(self.kind, &mut row);
                Some(Ok(row))
            }
            Ok(Err(e)) => {
                self.stop();
                Some(Err(e))
            }
            // The query's thread is done and every row was taken.
            Err(_) => {
                self.rx = None;
                self.join().map(Err)
            }
        }
    }
}

impl Drop for RowStream {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream")
            .field("plan", &self.plan.to_string())
            .field("rows", &self.rows)
            .finish()
    }
}

/// The collector of a streamed query: rows in order (a `Rows` keeps the order and holds
/// ties back), skipped, limited and sent as soon as they are complete.
struct Sender {
    inner: Rows,
    tx: SyncSender<Result<Row>>,
    run: Arc<Run>,
    skip: usize,
    left: Option<usize>,
    /// The limit is reached or the reader is gone.
    done: bool,
}

impl Sender {
    fn send_all(&mut self, rows: Vec<Row>) {
        for row in rows {
            if self.done {
                return;
            }
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            if !self.send(row) {
                self.done = true;
                self.run.cancelled.store(true, Ordering::Relaxed);
                return;
            }
            if let Some(left) = &mut self.left {
                *left -= 1;
                self.done = *left == 0;
            }
        }
    }

    /// Sends one row, waiting while the channel is full (that wait is not the query's
    /// work: it is left out of its time budget). False if the reader is gone.
    fn send(&self, row: Row) -> bool {
        match self.tx.try_send(Ok(row)) {
            Ok(()) => true,
            Err(TrySendError::Full(item)) => {
                let t = Instant::now();
                let sent = self.tx.send(item).is_ok();
                self.run
                    .waited_us
                    .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                sent
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// After the inner collector took a document (`more`: whether it wants others): sends
    /// the rows it has ready, and says whether the scan goes on.
    fn sent_ready(&mut self, more: bool) -> bool {
        let ready = self.inner.take_ready();
        self.send_all(ready);
        more && !self.done
    }
}

impl Collector for Sender {
    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool> {
        let more = self.inner.take(id, doc)?;
        Ok(self.sent_ready(more))
    }

    /// Forwarded, so that a streamed sort the index serves groups its ties by the index
    /// entries as `query` does, rather than computing each row's sort key.
    fn take_sorted(&mut self, id: &str, doc: &Document<&[u8]>, tie: &[u8]) -> Result<bool> {
        let more = self.inner.take_sorted(id, doc, tie)?;
        Ok(self.sent_ready(more))
    }

    fn fork(&self) -> Box<dyn Collector> {
        self.inner.fork()
    }

    fn absorb(&mut self, other: Box<dyn Collector>) {
        self.inner.absorb(other);
        let ready = self.inner.take_ready();
        self.send_all(ready);
    }

    fn full(&self) -> bool {
        self.done
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
