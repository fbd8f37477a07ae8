//! The read measurements shared by every store: warm point gets (1 and 2 threads), a full
//! scan, and cold point gets after the store's files are evicted from the page cache.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::data::Keys;
use crate::stores::{Getter, Reader};
use crate::sys;

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn check(v: Option<u64>, row: u64, key: &[u8]) -> Result<()> {
    if v != Some(row) {
        bail!(
            "wrong value for {:?}: {v:?}, expected {row}",
            String::from_utf8_lossy(key)
        );
    }
    Ok(())
}

/// Gets every row's key, checking the value; returns nanoseconds per get, one per lookup.
fn timed_gets(g: &mut dyn Getter, keys: &Keys, rows: &[u64]) -> Result<Vec<u64>> {
    let mut lat = Vec::with_capacity(rows.len());
    // The key is copied out of the key array (hundreds of MB, mostly not in the CPU caches)
    // before the clock starts, as a caller holds the key it asks for: otherwise every timed
    // get would include a memory miss on the benchmark's own array. (The Python harness of
    // RocksDB already had its key at hand: the bytes object it passes is read to take it.)
    let mut key = Vec::new();
    for &r in rows {
        key.clear();
        key.extend_from_slice(keys.get(r as usize));
        let k = key.as_slice();
        let t = Instant::now();
        let v = g.get(black_box(k))?;
        let d = t.elapsed();
        check(v, r, k)?;
        lat.push(d.as_nanos() as u64);
    }
    Ok(lat)
}

/// Gets every row's key without a clock per get; returns the elapsed seconds.
fn untimed_gets(g: &mut dyn Getter, keys: &Keys, rows: &[u64]) -> Result<f64> {
    let t = Instant::now();
    let mut bad = 0u64;
    for &r in rows {
        let k = keys.get(r as usize);
        if g.get(black_box(k))? != Some(r) {
            bad += 1;
        }
    }
    let s = t.elapsed().as_secs_f64();
    if bad > 0 {
        bail!("{bad} gets returned a wrong value");
    }
    Ok(s)
}

/// Median cost of one `Instant::now()` + `elapsed()` pair, the floor of the timed figures.
pub fn timer_overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..100_000)
        .map(|_| {
            let t = Instant::now();
            black_box(&t);
            t.elapsed().as_nanos() as u64
        })
        .collect();
    v.sort_unstable();
    percentile(&v, 0.5)
}

fn latency_json(mut lat: Vec<u64>) -> Value {
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
    json!({
        "median_ns": percentile(&lat, 0.5),
        "p99_ns": percentile(&lat, 0.99),
        "mean_ns": mean,
    })
}

/// Untimed gets before the measured ones (the caches are also warmed by the scans).
const WARM_UP_GETS: usize = 200_000;

/// Warm reads: two scans (the first loads the file into the page cache and any cache of the
/// store), a warm-up pass of gets, then timed gets on 1 and 2 threads.
pub fn warm(reader: &dyn Reader, keys: &Keys, rows: &[Vec<u64>; 2]) -> Result<Value> {
    let (n0, _) = reader.scan()?;
    let t = Instant::now();
    let (n, bytes) = reader.scan()?;
    let scan_s = t.elapsed().as_secs_f64();
    if n != n0 || n != keys.len() as u64 {
        bail!("scan saw {n} entries, expected {}", keys.len());
    }
    let mut g = reader.getter()?;
    untimed_gets(
        g.as_mut(),
        keys,
        &rows[0][..rows[0].len().min(WARM_UP_GETS)],
    )?;
    let untimed_1 = untimed_gets(g.as_mut(), keys, &rows[0])?;
    let lat1 = timed_gets(g.as_mut(), keys, &rows[0])?;
    drop(g);
    let (wall2, lat2) = std::thread::scope(|s| -> Result<(f64, Vec<u64>)> {
        let t = Instant::now();
        let hs: Vec<_> = rows
            .iter()
            .map(|r| {
                s.spawn(move || -> Result<f64> {
                    let mut g = reader.getter()?;
                    untimed_gets(g.as_mut(), keys, r)
                })
            })
            .collect();
        for h in hs {
            h.join()
                .map_err(|_| anyhow::anyhow!("reader thread panicked"))??;
        }
        let wall = t.elapsed().as_secs_f64();
        let hs: Vec<_> = rows
            .iter()
            .map(|r| {
                s.spawn(move || -> Result<Vec<u64>> {
                    let mut g = reader.getter()?;
                    timed_gets(g.as_mut(), keys, r)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in hs {
            all.extend(
                h.join()
                    .map_err(|_| anyhow::anyhow!("reader thread panicked"))??,
            );
        }
        Ok((wall, all))
    })?;
    let total2 = (rows[0].len() + rows[1].len()) as f64;
    Ok(json!({
        "scan_s": scan_s,
        "scan_entries": n,
        "scan_bytes": bytes,
        "gets": rows[0].len(),
        "get1": latency_json(lat1),
        "get1_untimed_mean_ns": untimed_1 * 1e9 / rows[0].len() as f64,
        "get2": latency_json(lat2),
        "get2_ops_per_s": total2 / wall2,
        "timer_overhead_ns": timer_overhead_ns(),
    }))
}

/// Cold reads: evict the store's files, open, then one get per row, counting the bytes
/// fetched from the disk (`/proc/self/io` read_bytes).
pub fn cold(
    path: &std::path::Path,
    open: impl FnOnce() -> Result<Box<dyn Reader>>,
    keys: &Keys,
    rows: &[u64],
) -> Result<Value> {
    let evicted = sys::evict(path)?;
    let io0 = sys::storage_read_bytes()?;
    let t = Instant::now();
    let reader = open()?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let io1 = sys::storage_read_bytes()?;
    let mut g = reader.getter()?;
    let half = rows.len() / 2;
    let first = timed_gets(g.as_mut(), keys, &rows[..half])?;
    let io_half = sys::storage_read_bytes()?;
    let second = timed_gets(g.as_mut(), keys, &rows[half..])?;
    let io2 = sys::storage_read_bytes()?;
    let mut lat = first;
    lat.extend(second);
    Ok(json!({
        "evicted_bytes": evicted,
        "open_ms": open_ms,
        "open_read_bytes": io1 - io0,
        "gets": rows.len(),
        "read_bytes": io2 - io1,
        "read_bytes_second_half": io2 - io_half,
        "gets_second_half": rows.len() - half,
        "latency": latency_json(lat),
    }))
}
