//! A full scan of a map whose table is not in the page cache: 400,000 entries of 1 KiB
//! (8-byte random keys), the table evicted with `posix_fadvise(DONTNEED)`, then one pass
//! of `iter()` timed, three times. Prints MB/s of entries read and the bytes the process
//! read from the disk (`read_bytes` of `/proc/self/io`).
//!
//! ```text
//! cargo run --release -p stele-durable --example scan_cold -- /tmp/scan-cold
//! ```

use std::time::Instant;
use stele_durable::Store;

/// Drops a file's pages from the page cache (Linux; elsewhere a no-op).
fn evict(path: &std::path::Path) -> std::io::Result<()> {
    let f = std::fs::File::open(path)?;
    f.sync_all()?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: plain integers and a descriptor `f` keeps open for the call; no memory is
        // passed.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    Ok(())
}

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
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: scan_cold <empty folder>")?,
    );
    let entries: u64 = 400_000;
    let store = Store::open(&dir)?;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let pairs = (0..entries).map(|i| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x.to_be_bytes().to_vec(), vec![(i % 251) as u8; 1016])
    });
    let map = store.build_map(pairs)?;
    let ids = map.layer_ids();
    drop(map);
    let top = *ids.last().ok_or("no table")?;
    for _ in 0..3 {
        evict(&store.table_path(top))?;
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
