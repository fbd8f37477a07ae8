//! A full scan of a map whose table is not in the page cache: 400,000 entries of 1 KiB
//! (8-byte random keys), the table evicted with `posix_fadvise(DONTNEED)`, then one pass
//! of `iter()` timed, three times. Prints MB/s of entries read and the bytes the process
//! read from the disk (`read_bytes` of `/proc/self/io`).
//!
//! ```text
//! cargo run --release -p stele-durable --example scan_cold -- /tmp/scan-cold
//! ```

mod common;

use std::time::Instant;
use stele_durable::Store;

/// Bytes this process has caused to be read from storage so far.
fn read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("read_bytes: "))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = common::folder_arg("scan_cold")?;
    let entries: u64 = 400_000;
    let store = Store::open(&dir)?;
    let map = common::sample_map(&store, entries)?;
    let ids = map.layer_ids();
    drop(map);
    let top = *ids.last().ok_or("no table")?;
    for _ in 0..3 {
        common::evict(&store.table_path(top))?;
        let map = store.open_map(top)?;
        let before = read_bytes();
        let started = Instant::now();
        let (mut n, mut bytes) = (0u64, 0u64);
        for e in map.iter() {
            let (k, v) = e?;
            n += 1;
            bytes += (k.len() + v.len()) as u64;
        }
        let secs = started.elapsed().as_secs_f64();
        let read = read_bytes() - before;
        println!(
            "scan of {n} entries ({:.0} MB), table evicted first: {secs:.2} s, {:.0} MB/s, \
             {:.2} bytes read per byte scanned",
            bytes as f64 / 1e6,
            bytes as f64 / 1e6 / secs,
            read as f64 / bytes as f64
        );
    }
    Ok(())
}
