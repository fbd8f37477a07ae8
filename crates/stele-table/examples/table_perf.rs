//! Quick measurements of build and read speed on a key file (one key per line), for tuning.
//! The side-by-side benchmark against peers lives in `stele-bench`.
//!
//! `cargo run --release -p stele-table --example table_perf -- KEYS.txt OUT_DIR [copies] [budget_mib]`
//! `copies` > 1 derives more keys (`key`, `key\x01` + n) to reach e.g. 14M from 4.5M.
//! Environment: `VALUE_BYTES=8` (8-byte values), `BUILD_ONLY=1`, `ITER_SCANS`, `SAME_KEY_REPS`.

#![allow(
    clippy::unwrap_used,
    reason = "a measuring tool: failing loudly is right"
)]

use std::time::Instant;
use stele_table::{Access, Sorter, SorterOptions, Table};

/// CPU seconds used by the whole process so far (all threads), from /proc/self/stat.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let keys_path = &args[1];
    let out = std::path::PathBuf::from(&args[2]);
    let copies: usize = args.get(3).map_or(1, |s| s.parse().unwrap());
    let budget_mib: usize = args.get(4).map_or(1 << 20, |s| s.parse().unwrap());
    let text = std::fs::read(keys_path).unwrap();
    let base: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(base.len() * copies);
    for c in 0..copies {
        for k in &base {
            let mut k = k.to_vec();
            if c > 0 {
                k.push(1);
                k.extend_from_slice(c.to_string().as_bytes());
            }
            keys.push(k);
        }
    }
    let raw: usize = keys.iter().map(Vec::len).sum();
    println!(
        "keys {} raw key bytes {} threads {}",
        keys.len(),
        raw,
        rayon::current_num_threads()
    );

    let (t0, c0) = (Instant::now(), cpu_s());
    let mut s = Sorter::new(
        SorterOptions::default()
            .memory_budget_bytes(budget_mib << 20)
            .temp_dir(&out),
    )
    .unwrap();
    // VALUE_BYTES=8 stores each key's row number (u64 LE), as the stele-bench harness does.
    let with_values = std::env::var("VALUE_BYTES").is_ok_and(|v| v == "8");
    for (row, k) in keys.iter().enumerate() {
        let v = (row as u64).to_le_bytes();
        s.add(k, if with_values { &v[..] } else { &[] }).unwrap();
    }
    let added = t0.elapsed();
    let c_added = cpu_s() - c0;
    let runs = s.spilled_runs();
    let info = s.finish(&out).unwrap();
    let total = t0.elapsed();
    let c_total = cpu_s() - c0;
    println!(
        "build: add {:.2}s (cpu {:.2}s) total {:.2}s (cpu {:.2}s) runs {} file {} bytes = {:.3} of raw keys, blocks {}",
        added.as_secs_f64(),
        c_added,
        total.as_secs_f64(),
        c_total,
        runs,
        info.file_bytes,
        info.file_bytes as f64 / raw as f64,
        info.blocks
    );

    if std::env::var_os("BUILD_ONLY").is_some() {
        std::fs::remove_file(&info.path).unwrap();
        return;
    }
    let t = Table::open_with(&info.path, Access::Random).unwrap();
    // Streaming builder over sorted input (from the table just built).
    let sorted: Vec<(Vec<u8>, Vec<u8>)> = t
        .iter()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.into_owned(), v.to_vec())
        })
        .collect();
    let (t3, c3) = (Instant::now(), cpu_s());
    let mut b = stele_table::TableBuilder::new(&out, stele_table::TableOptions::default()).unwrap();
    for (k, v) in &sorted {
        b.add(k, v).unwrap();
    }
    let info2 = b.finish().unwrap();
    println!(
        "TableBuilder on sorted input: {:.2}s (cpu {:.2}s)",
        t3.elapsed().as_secs_f64(),
        cpu_s() - c3
    );
    assert_eq!(info2.path, info.path);
    drop(sorted);
    // First-touch checksum cost: a fresh open verifies every block once.
    let fresh = Table::open_with(&info.path, Access::Sequential).unwrap();
    let tv = Instant::now();
    fresh.verify_all().unwrap();
    println!(
        "verify every block once: {:.3}s, {:.0} ns per {}-byte block",
        tv.elapsed().as_secs_f64(),
        tv.elapsed().as_nanos() as f64 / fresh.stats().blocks as f64,
        fresh.stats().block_size_bytes
    );
    drop(fresh);
    let t1 = Instant::now();
    let mut n = 0u64;
    let mut c = t.cursor();
    while let Some((k, _)) = c.next_entry().unwrap() {
        n += k.len() as u64;
    }
    println!(
        "scan (cursor): {:.3}s ({n} key bytes)",
        t1.elapsed().as_secs_f64()
    );
    let t1 = Instant::now();
    let mut m = 0usize;
    let scans: usize = std::env::var("ITER_SCANS").map_or(1, |v| v.parse().unwrap());
    for _ in 0..scans {
        for e in t.iter() {
            m += e.unwrap().0.len();
        }
    }
    println!("scan (iter): {:.3}s ({m})", t1.elapsed().as_secs_f64());

    // Warm random gets over a pseudo-random sample of existing keys.
    let mut x: u64 = 88172645463325252;
    let sample: Vec<&[u8]> = (0..1_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            keys[(x % keys.len() as u64) as usize].as_slice()
        })
        .collect();
    for k in sample.iter().take(200_000) {
        assert!(t.get(k).unwrap().is_some());
    }
    let t2 = Instant::now();
    for k in &sample {
        assert!(t.get(k).unwrap().is_some());
    }
    println!(
        "warm get: {:.0} ns",
        t2.elapsed().as_nanos() as f64 / sample.len() as f64
    );
    let one = sample[0];
    let t2 = Instant::now();
    let reps = std::env::var("SAME_KEY_REPS").map_or(1_000_000, |v| v.parse().unwrap());
    for _ in 0..reps {
        assert!(t.get(std::hint::black_box(one)).unwrap().is_some());
    }
    println!(
        "same-key get (CPU only): {:.0} ns {:?}",
        t2.elapsed().as_nanos() as f64 / reps as f64,
        String::from_utf8_lossy(one)
    );
    // Sample keys packed contiguously, so the probe keys themselves cost no cache misses.
    let packed: Vec<u8> = sample
        .iter()
        .take(100_000)
        .flat_map(|k| k.iter().copied())
        .collect();
    let mut bounds = Vec::new();
    let mut at = 0;
    for k in sample.iter().take(100_000) {
        bounds.push((at, at + k.len()));
        at += k.len();
    }
    let t2 = Instant::now();
    for _ in 0..10 {
        for &(a, b) in &bounds {
            assert!(t.get(&packed[a..b]).unwrap().is_some());
        }
    }
    println!(
        "warm get, packed probe keys: {:.0} ns",
        t2.elapsed().as_nanos() as f64 / 1e6
    );
    let t2 = Instant::now();
    for i in 0..1_000_000u64 {
        let _ = t.nth((i * 7919) % t.len()).unwrap();
    }
    println!("nth: {:.0} ns", t2.elapsed().as_nanos() as f64 / 1e6);
    std::fs::remove_file(&info.path).unwrap();
}
