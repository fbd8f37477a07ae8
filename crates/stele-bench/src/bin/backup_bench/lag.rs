//! Replica lag: commits every 10 ms while a replicator process ships every interval.

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use stele::Database;

pub(crate) struct Lag {
    pub shipments: usize,
    pub commits: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Commits for `run`, each one small batch 10 ms after the last, while a replicator
/// process ships `src` to `dest` every `interval`; for each commit, the time from its
/// acknowledgement to the end of the first shipment that holds it.
pub(crate) fn measure(
    db: &Database,
    src: &Path,
    dest: &Path,
    interval: Duration,
    run: Duration,
) -> Result<Lag> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("child-replicate")
        .arg(src)
        .arg(dest)
        .arg(interval.as_millis().to_string())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the replicator")?;
    let stdout = child.stdout.take().context("the replicator's output")?;
    let reader = std::thread::spawn(move || {
        let mut shipped = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let mut parts = line.split(' ').skip(1);
            if let (Some(Ok(seq)), Some(Ok(ns))) = (
                parts.next().map(str::parse::<u64>),
                parts.next().map(str::parse::<u128>),
            ) {
                shipped.push((seq, ns));
            }
        }
        shipped
    });
    let mut commits = Vec::new();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < run {
        let mut b = db.batch();
        n += 1;
        b.put_json(
            "bench-lag",
            &format!("l{}", n % 1000),
            format!(r#"{{"n":{n}}}"#).as_bytes(),
        )?;
        db.commit(b)?;
        commits.push((db.snapshot().seq(), super::child::unix_ns()));
        std::thread::sleep(Duration::from_millis(10));
    }
    // The last commits' shipments.
    std::thread::sleep(interval * 3);
    child.kill()?;
    child.wait()?;
    let shipped = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader thread panicked"))?;
    Ok(summarize(&commits, &shipped))
}

/// For each commit `(version, unix ns)`, the time to the first shipment `(last version
/// held, unix ns)` that holds it (one may end between the commit's write and the reading
/// of the clock after it: lag 0); p50, p99 and max of those.
pub(crate) fn summarize(commits: &[(u64, u128)], shipped: &[(u64, u128)]) -> Lag {
    let mut lags: Vec<f64> = commits
        .iter()
        .filter_map(|&(seq, at)| {
            let (_, t) = shipped.iter().find(|(s, _)| *s >= seq)?;
            Some(t.saturating_sub(at) as f64 / 1e6)
        })
        .collect();
    lags.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        lags.get(((lags.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    Lag {
        shipments: shipped.len(),
        commits: lags.len(),
        p50_ms: pick(0.5),
        p99_ms: pick(0.99),
        max_ms: lags.last().copied().unwrap_or(f64::NAN),
    }
}
