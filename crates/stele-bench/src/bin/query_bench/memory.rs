//! Peak memory of a group-by and of a sort without a limit over a collection, each in a
//! child process of its own (this binary again, `--memory-child`), which opens the database
//! read-only beside the benchmark.
//!
//! The figure is the peak of the child's anonymous memory (`RssAnon` in `/proc/self/status`,
//! sampled every 2 ms) less its value before the query: the heap the query used. Pages of
//! the mapped tables are the kernel's page cache and are not counted.

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use stele::{Database, DatabaseOptions, Pipeline, Query};

/// The child's block cache: small, so that the figure is the query's memory rather than
/// the cache of decoded blocks a scan fills (64 MiB by default).
pub const BLOCK_CACHE_BYTES: usize = 4 << 20;

/// What one child measured.
pub struct Measured {
    pub what: &'static str,
    pub peak_mib: f64,
    pub rows: u64,
    pub spilled_mib: f64,
    pub ms: f64,
}

/// The child's anonymous memory now, in KiB (`None` off Linux).
fn rss_anon_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The modes a child runs.
const MODES: [&str; 4] = ["group", "group-ids", "sort-streamed", "sort-collected"];

/// Runs each mode in a child process over collection `c` of the database in `db`, grouping
/// and sorting by `field`, within `budget` bytes.
pub fn measure(db: &Path, field: &str, budget: usize) -> Result<Vec<Measured>> {
    let exe = std::env::current_exe()?;
    let mut out = Vec::new();
    for (mode, what) in MODES.into_iter().zip([
        "group-by on the number field (Pipeline)",
        "group-by on _id, then $count (a group per document)",
        "sort without a limit, streamed (query_iter)",
        "sort without a limit, collected (query)",
    ]) {
        let o = std::process::Command::new(&exe)
            .arg("--memory-child")
            .arg(db)
            .args([mode, field, &budget.to_string()])
            .output()?;
        if !o.status.success() {
            bail!(
                "memory child {mode} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let text = String::from_utf8_lossy(&o.stdout);
        let nums: Vec<f64> = text
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("memory child {mode} printed {text:?}"))?;
        let [peak_mib, rows, spilled_mib, ms] = nums[..] else {
            bail!("memory child {mode} printed {text:?}");
        };
        out.push(Measured {
            what,
            peak_mib,
            rows: rows as u64,
            spilled_mib,
            ms,
        });
    }
    Ok(out)
}

/// The child: `DB MODE FIELD BUDGET`; prints `peak_mib rows spilled_mib ms`.
pub fn child(args: &[String]) -> Result<()> {
    let [db, mode, field, budget] = args else {
        bail!("--memory-child takes DB MODE FIELD BUDGET");
    };
    let budget: usize = budget.parse()?;
    let opts = DatabaseOptions::default().block_cache_bytes(BLOCK_CACHE_BYTES);
    let db = Database::open_read_only_with(db, opts)?;
    let snap = db.snapshot();
    let base = rss_anon_kib().context("no RssAnon in /proc/self/status")?;
    let peak = Arc::new(AtomicU64::new(base));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(kib) = rss_anon_kib() {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let t = Instant::now();
    let (rows, spilled) = match mode.as_str() {
        "group" => {
            let p = Pipeline::parse(&format!(
                r#"[{{"$group": {{"_id": "${field}", "n": {{"$sum": 1}}, "first": {{"$first": "$_id"}}}}}}]"#
            ))?
            .memory_budget(budget);
            let out = snap.aggregate("c", &p)?;
            (out.rows.len() as u64, out.stats.spilled_bytes)
        }
        "group-ids" => {
            let p = Pipeline::parse(
                r#"[{"$group": {"_id": "$_id", "n": {"$sum": 1}}}, {"$count": "groups"}]"#,
            )?
            .memory_budget(budget);
            let out = snap.aggregate("c", &p)?;
            (out.rows.len() as u64, out.stats.spilled_bytes)
        }
        "sort-streamed" => {
            let q = Query::new("c").sort(field, true).memory_budget(budget);
            let mut stream = snap.query_iter(&q)?;
            let mut n = 0u64;
            for row in stream.by_ref() {
                row?;
                n += 1;
            }
            (n, stream.stats().spilled_bytes)
        }
        "sort-collected" => {
            let out = snap.query(&Query::new("c").sort(field, true))?;
            (out.rows.len() as u64, 0)
        }
        other => bail!("unknown mode {other}"),
    };
    let ms = t.elapsed().as_secs_f64() * 1e3;
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    if let Some(kib) = rss_anon_kib() {
        peak.fetch_max(kib, Ordering::Relaxed);
    }
    let peak_mib = peak.load(Ordering::Relaxed).saturating_sub(base) as f64 / 1024.0;
    println!(
        "{peak_mib:.1} {rows} {:.1} {ms:.0}",
        spilled as f64 / (1 << 20) as f64
    );
    Ok(())
}
