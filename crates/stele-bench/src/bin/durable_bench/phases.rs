//! The two phases every system runs in its own process (the Java and Python peers print the
//! same fields): `build` from the generated pairs, and `read` (cold random gets on evicted
//! files, a sequential scan, then random gets after a warm-up).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::data::{self, ENTRY_BYTES, Lookups};
use crate::sys;

/// What the read phase needs from a system.
pub trait Reader {
    /// The first 8 bytes of the value of `key` (the key itself), or `None` if absent.
    fn get(&self, key: &[u8]) -> Result<Option<u64>>;
    /// Visits entries in the system's order until `cap` entries or `deadline`; returns
    /// (entries, key + value bytes).
    fn scan(&self, cap: u64, deadline: Instant) -> Result<(u64, u64)>;
}

/// Walks `entries` in order until `cap` entries or `deadline` (checked every 1024 entries);
/// returns (entries, key + value bytes).
pub fn scan_until<K, V, E>(
    entries: impl Iterator<Item = Result<(K, V), E>>,
    cap: u64,
    deadline: Instant,
) -> Result<(u64, u64)>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    let (mut n, mut bytes) = (0u64, 0u64);
    for e in entries {
        let (k, v) = e?;
        n += 1;
        bytes += (k.as_ref().len() + v.as_ref().len()) as u64;
        black_box((k.as_ref(), v.as_ref()));
        if n >= cap || (n % 1024 == 0 && Instant::now() > deadline) {
            break;
        }
    }
    Ok((n, bytes))
}

/// Limits of one read phase.
#[derive(Debug, Clone, Copy)]
pub struct ReadPlan {
    pub entries: u64,
    pub cold: usize,
    pub warm: usize,
    pub scan_cap: u64,
    /// Each part stops early after this long.
    pub max_s: f64,
}

/// Build measurements around `build`, which returns (entries, note).
pub fn measure_build(dir: &Path, build: impl FnOnce() -> Result<(u64, String)>) -> Result<Value> {
    let (w0, c0, r0) = io_now()?;
    let t = Instant::now();
    let (entries, note) = build()?;
    sync_files(dir)?;
    let build_s = t.elapsed().as_secs_f64();
    let (w1, c1, r1) = io_now()?;
    Ok(json!({
        "build_s": build_s,
        "write_bytes": w1 - w0,
        "cancelled_write_bytes": c1 - c0,
        "read_bytes": r1 - r0,
        "file_bytes": sys::path_bytes(dir)?,
        "entries": entries,
        "peak_rss_bytes": sys::peak_rss_bytes()?,
        "note": note,
    }))
}

fn io_now() -> Result<(u64, u64, u64)> {
    Ok((
        sys::io_counter("write_bytes")?,
        sys::io_counter("cancelled_write_bytes")?,
        sys::io_counter("read_bytes")?,
    ))
}

/// fsync of every file under `dir`, part of every system's build time.
fn sync_files(dir: &Path) -> Result<()> {
    for f in sys::files_under(dir)? {
        std::fs::File::open(&f)?.sync_all()?;
    }
    Ok(())
}

fn timed_gets(r: &dyn Reader, n: u64, count: usize, seed: u64, max_s: f64) -> Result<Vec<u64>> {
    let deadline = Instant::now() + Duration::from_secs_f64(max_s);
    let mut lat = Vec::with_capacity(count);
    for i in Lookups::new(n, seed).take(count) {
        if Instant::now() > deadline {
            break;
        }
        let k = data::key(i);
        let kb = k.to_be_bytes();
        let t = Instant::now();
        let v = r.get(black_box(&kb))?;
        let d = t.elapsed();
        if v != Some(k) {
            bail!("wrong value for key number {i}: {v:?}");
        }
        lat.push(d.as_nanos() as u64);
    }
    Ok(lat)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0)
}

fn latency(mut lat: Vec<u64>) -> Value {
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
    json!({"median_ns": percentile(&lat, 0.5), "p99_ns": percentile(&lat, 0.99), "mean_ns": mean})
}

/// The read phase; the driver evicted the store's files before starting this process.
pub fn measure_reads(
    plan: ReadPlan,
    open: impl FnOnce() -> Result<Box<dyn Reader>>,
) -> Result<Value> {
    let n = plan.entries;
    let r0 = sys::storage_read_bytes()?;
    let t = Instant::now();
    let reader = open()?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let r1 = sys::storage_read_bytes()?;
    let cold = timed_gets(reader.as_ref(), n, plan.cold, 3, plan.max_s)?;
    let r2 = sys::storage_read_bytes()?;
    let t = Instant::now();
    let (seen, bytes) = reader.scan(plan.scan_cap, t + Duration::from_secs_f64(plan.max_s))?;
    let scan_s = t.elapsed().as_secs_f64();
    let r3 = sys::storage_read_bytes()?;
    timed_gets(reader.as_ref(), n, plan.warm.min(200_000), 1, plan.max_s)?;
    let r4 = sys::storage_read_bytes()?;
    let warm = timed_gets(reader.as_ref(), n, plan.warm, 2, plan.max_s)?;
    let r5 = sys::storage_read_bytes()?;
    Ok(json!({
        "open_ms": open_ms,
        "open_read_bytes": r1 - r0,
        "cold_gets": cold.len(),
        "cold_read_bytes": r2 - r1,
        "cold": latency(cold),
        "scan_entries": seen,
        "scan_bytes": bytes,
        "scan_s": scan_s,
        "scan_read_bytes": r3 - r2,
        "warm_gets": warm.len(),
        "warm_read_bytes": r5 - r4,
        "warm": latency(warm),
        "peak_rss_bytes": sys::peak_rss_bytes()?,
    }))
}

/// Logical bytes of `entries` entries.
pub fn logical(entries: u64) -> u64 {
    entries * ENTRY_BYTES
}
