//! Timing: warm up, then several runs of a calibrated number of calls; the median run counts.
//!
//! Time is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so that other processes
//! on a shared machine do not count; wall time is recorded too, and the header of the report says
//! how far apart they were. Peers measured together run interleaved (run 1 of each, run 2 of
//! each, ...) so that a change in machine load falls on all of them alike.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long and how often each measurement runs.
#[derive(Debug)]
pub struct Timer {
    /// Total time of the measured runs of one function (after warm-up).
    pub target: Duration,
    /// Number of runs; the median per-call time of the runs is reported.
    pub runs: usize,
    /// Warm-up time (at least one call).
    pub warmup: Duration,
    wall: Cell<f64>,
    cpu: Cell<f64>,
}

/// CPU time of the calling thread, in seconds.
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl Timer {
    /// Full runs: 0.1 s warm-up, then 5 runs totalling `min_secs` or more per function.
    pub fn full(min_secs: f64) -> Timer {
        Timer {
            target: Duration::from_secs_f64(min_secs),
            runs: 5,
            warmup: Duration::from_millis(100),
            wall: Cell::new(0.0),
            cpu: Cell::new(0.0),
        }
    }

    /// Smoke runs: a few milliseconds each.
    pub fn quick() -> Timer {
        Timer {
            target: Duration::from_millis(6),
            runs: 3,
            warmup: Duration::from_millis(1),
            ..Timer::full(0.0)
        }
    }

    /// Wall time over CPU time of all measured runs so far (1.0 = the thread never waited).
    pub fn contention(&self) -> f64 {
        self.wall.get() / self.cpu.get()
    }

    /// Median CPU seconds per call of each function, measured interleaved.
    pub fn group(&self, fs: &mut [&mut dyn FnMut()]) -> Vec<f64> {
        // Warm up each and calibrate the calls per run.
        let per_run = self.target.as_secs_f64() / self.runs.max(1) as f64;
        let iters: Vec<u64> = fs
            .iter_mut()
            .map(|f| {
                let start = Instant::now();
                let mut calls = 0u64;
                loop {
                    f();
                    calls += 1;
                    if start.elapsed() >= self.warmup {
                        break;
                    }
                }
                let per_call = start.elapsed().as_secs_f64() / calls as f64;
                ((per_run / per_call.max(1e-9)).ceil() as u64).max(1)
            })
            .collect();
        let mut samples = vec![Vec::with_capacity(self.runs); fs.len()];
        for _ in 0..self.runs.max(1) {
            for ((f, &n), s) in fs.iter_mut().zip(&iters).zip(samples.iter_mut()) {
                let wall = Instant::now();
                let cpu = thread_cpu_secs();
                for _ in 0..n {
                    f();
                }
                let cpu = thread_cpu_secs() - cpu;
                self.wall
                    .set(self.wall.get() + wall.elapsed().as_secs_f64());
                self.cpu.set(self.cpu.get() + cpu);
                s.push(cpu / n as f64);
            }
        }
        samples
            .into_iter()
            .map(|mut s| {
                s.sort_by(f64::total_cmp);
                s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
            })
            .collect()
    }
}
