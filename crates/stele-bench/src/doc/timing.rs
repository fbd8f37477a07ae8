//! Timing: warm up, then several runs of a calibrated number of calls; the median run counts.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long and how often each measurement runs.
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    /// Total time of the measured runs (after warm-up).
    pub target: Duration,
    /// Number of runs; the median per-call time of the runs is reported.
    pub runs: usize,
    /// Warm-up time (at least one call).
    pub warmup: Duration,
}

impl Timer {
    /// Full runs: 0.1 s warm-up, then 5 runs of 0.1 s or more each (at least one call per run).
    pub fn full(min_secs: f64) -> Timer {
        Timer {
            target: Duration::from_secs_f64(min_secs),
            runs: 5,
            warmup: Duration::from_millis(100),
        }
    }

    /// Smoke runs: a few milliseconds each.
    pub fn quick() -> Timer {
        Timer {
            target: Duration::from_millis(6),
            runs: 3,
            warmup: Duration::from_millis(1),
        }
    }

    /// Median seconds per call of `f`.
    pub fn time<R>(&self, mut f: impl FnMut() -> R) -> f64 {
        let start = Instant::now();
        let mut calls = 0u64;
        loop {
            black_box(f());
            calls += 1;
            if start.elapsed() >= self.warmup {
                break;
            }
        }
        let per_call = start.elapsed().as_secs_f64() / calls as f64;
        let per_run = self.target.as_secs_f64() / self.runs as f64;
        let iters = ((per_run / per_call.max(1e-9)).ceil() as u64).max(1);
        let mut samples: Vec<f64> = (0..self.runs.max(1))
            .map(|_| {
                let t = Instant::now();
                for _ in 0..iters {
                    black_box(f());
                }
                t.elapsed().as_secs_f64() / iters as f64
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
    }
}
