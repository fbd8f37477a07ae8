//! Checkpoints of an idle writer: when no commit came for
//! [`DatabaseOptions::idle_checkpoint`](crate::DatabaseOptions::idle_checkpoint) and the log
//! holds records, a thread checkpoints, so that a process that wrote and then left the
//! database open (or was killed later) does not keep its data in the log.
//!
//! The thread holds the database weakly and looks at it a few times per idle period; the
//! sender its channel waits on lives in `Inner`, so it ends as soon as the database goes.

use super::{Database, Inner, lock_poisoned};
use crate::error::{Error, Result};
use std::sync::{Weak, mpsc};
use std::time::{Duration, Instant};

/// Looks per idle period: a checkpoint comes between 1 and 1.25 idle periods after the last
/// commit.
const LOOKS_PER_PERIOD: u32 = 4;

/// Starts the idle-checkpoint thread of the database `weak` points to.
pub(super) fn start(weak: Weak<Inner>, stop: mpsc::Receiver<()>, idle: Duration) -> Result<()> {
    std::thread::Builder::new()
        .name("stele-idle".into())
        .spawn(move || watch(&weak, &stop, idle))
        .map(drop)
        .map_err(|e| Error::io("starting the idle-checkpoint thread", "", e))
}

/// The thread's loop: remembers the sequence number it last saw and since when; the same
/// one for `idle` with log bytes not in tables yet means idle.
fn watch(weak: &Weak<Inner>, stop: &mpsc::Receiver<()>, idle: Duration) {
    let look = (idle / LOOKS_PER_PERIOD).max(Duration::from_millis(5));
    let mut seen: Option<(u64, Instant)> = None;
    loop {
        match stop.recv_timeout(look) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The database is gone (its sender with it).
            _ => return,
        }
        let Some(inner) = weak.upgrade() else { return };
        let db = Database::internal(inner);
        let Ok(Some(seq)) = db.unsaved_seq() else {
            seen = None;
            continue;
        };
        match seen {
            Some((s, since)) if s == seq => {
                if since.elapsed() >= idle {
                    // A failure is retried after the next idle period; the log holds it all.
                    let _ = db.idle_checkpoint(seq);
                    seen = None;
                }
            }
            _ => seen = Some((seq, Instant::now())),
        }
    }
}

impl Database {
    /// The sequence number of the last commit if the log holds records not in tables yet
    /// and no commit is in flight.
    fn unsaved_seq(&self) -> Result<Option<u64>> {
        let w = self.inner.writer.lock().map_err(lock_poisoned)?;
        let busy = w.leader_active || !w.pending.is_empty() || w.poisoned.is_some();
        Ok((!busy && w.logged_bytes > 0).then_some(w.state.seq))
    }

    /// Checkpoints if nothing was committed since batch `seq` and the database is not
    /// closed (a close checkpoints itself, and gives back the log's zeroes after).
    fn idle_checkpoint(&self, seq: u64) -> Result<()> {
        let mut w = self.quiet_writer()?;
        if self.is_closed() || w.state.seq != seq || w.logged_bytes == 0 {
            return Ok(());
        }
        self.checkpoint_locked(&mut w, true)
    }
}
