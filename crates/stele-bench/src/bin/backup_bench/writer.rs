//! The writer of part 2: one thread committing batches of 100 small documents (each commit
//! durable: the log record written, then `fdatasync`) for the whole part, logging each
//! commit's end, latency and CPU time, so that any window of time (alone, beside a copy)
//! can be measured afterwards from the same writer.

use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;
use stele::Database;

use crate::timing::thread_cpu_secs;

/// One commit: when it returned (seconds from the writer's start), how long it took and
/// the thread's CPU time in it (both ms).
#[derive(Debug, Clone, Copy)]
struct Commit {
    end: f64,
    latency_ms: f64,
    cpu_ms: f64,
}

/// What the writer did in a window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub commits: usize,
    pub secs: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The commits' CPU time over their latency.
    pub cpu_share: f64,
}

impl Window {
    pub(crate) fn rate(&self) -> f64 {
        self.commits as f64 / self.secs.max(1e-9)
    }
}

/// The running writer.
pub(crate) struct Writer {
    start: Instant,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Commit>>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Writer {
    pub(crate) fn start(db: &Database) -> Writer {
        let start = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (db, stop, log) = (db.clone(), Arc::clone(&stop), Arc::clone(&log));
            std::thread::spawn(move || -> Result<()> {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let cpu = thread_cpu_secs();
                    let mut b = db.batch();
                    for _ in 0..100 {
                        n += 1;
                        b.put_json(
                            "bench-writer",
                            &format!("w{}", n % 100_000),
                            format!(
                                r#"{{"n":{n},"text":"a small document written while the backup runs"}}"#
                            )
                            .as_bytes(),
                        )?;
                    }
                    db.commit(b)?;
                    let c = Commit {
                        end: start.elapsed().as_secs_f64(),
                        latency_ms: t.elapsed().as_secs_f64() * 1e3,
                        cpu_ms: (thread_cpu_secs() - cpu) * 1e3,
                    };
                    log.lock().unwrap_or_else(|p| p.into_inner()).push(c);
                }
                Ok(())
            })
        };
        Writer {
            start,
            stop,
            log,
            thread: Some(thread),
        }
    }

    /// Seconds since the writer started: a window's bounds.
    pub(crate) fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The commits that returned in `[from, to)`.
    pub(crate) fn window(&self, from: f64, to: f64) -> Window {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        let mut lat: Vec<f64> = Vec::new();
        let (mut cpu, mut wall) = (0.0, 0.0);
        for c in log.iter().filter(|c| c.end >= from && c.end < to) {
            lat.push(c.latency_ms);
            cpu += c.cpu_ms;
            wall += c.latency_ms;
        }
        lat.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
                .copied()
                .unwrap_or(f64::NAN)
        };
        Window {
            commits: lat.len(),
            secs: to - from,
            p50_ms: pct(0.5),
            p99_ms: pct(0.99),
            cpu_share: cpu / wall.max(1e-9),
        }
    }

    pub(crate) fn finish(mut self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => anyhow::bail!("the writer panicked"),
            None => Ok(()),
        }
    }
}
