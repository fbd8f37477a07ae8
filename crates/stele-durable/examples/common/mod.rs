//! What the cold-read examples share: their folder argument, the sample map they build and
//! how they push its files out of the page cache.

use stele_durable::{DurableMap, Store};

/// The example's one argument, an empty folder for its store.
pub fn folder_arg(example: &str) -> Result<std::path::PathBuf, String> {
    std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .ok_or_else(|| format!("usage: {example} <empty folder>"))
}

/// A map of `entries` pairs built in `store` through the sorter: 8-byte pseudo-random keys
/// (xorshift, fixed seed) and 1016-byte values, so that an entry is 1 KiB.
pub fn sample_map(store: &Store, entries: u64) -> stele_durable::Result<DurableMap> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let pairs = (0..entries).map(|i| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x.to_be_bytes().to_vec(), vec![(i % 251) as u8; 1016])
    });
    store.build_map(pairs)
}

/// Writes a file's dirty pages out, then drops its pages from the page cache (Linux;
/// elsewhere only the write-out).
pub fn evict(path: &std::path::Path) -> std::io::Result<()> {
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
