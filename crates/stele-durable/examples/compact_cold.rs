//! Compaction of a map whose tables are not in the page cache: 400,000 entries of 1 KiB
//! (8-byte random keys), one diff of 1,000 puts on top, files evicted with
//! `posix_fadvise(DONTNEED)`, then `compact` timed.
//!
//! ```text
//! cargo run --release -p stele-durable --example compact_cold -- /tmp/compact-cold
//! ```

use std::time::Instant;
use stele_durable::Store;

/// Drops a file's pages from the page cache (Linux; elsewhere a no-op).
fn evict(path: &std::path::Path) -> std::io::Result<()> {
    let f = std::fs::File::open(path)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: plain integers and a descriptor `f` keeps open for the call; no memory is
        // passed.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    drop(f);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: compact_cold <empty folder>")?,
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
    let mut map = store.build_map(pairs)?;
    for i in 0..1000u64 {
        map.put(&i.to_be_bytes(), b"new")?;
    }
    map.save()?;
    let ids = map.layer_ids();
    drop(map);
    for id in &ids {
        evict(&store.table_path(*id))?;
    }
    let top = *ids.last().ok_or("no table")?;
    let mut map = store.open_map(top)?;
    let started = Instant::now();
    map.compact()?;
    println!(
        "compact of {entries} entries, tables evicted first: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
