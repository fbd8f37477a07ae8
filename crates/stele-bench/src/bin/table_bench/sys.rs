//! Linux helpers: memory high-water mark, bytes read from storage, page cache eviction.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// A `kB` field of `/proc/self/status` (e.g. `VmHWM`, `VmRSS`), in bytes.
pub fn status_bytes(field: &str) -> Result<u64> {
    let text = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
            let kb: u64 = rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .with_context(|| format!("parsing {field} in /proc/self/status"))?;
            return Ok(kb * 1024);
        }
    }
    bail!("{field} not found in /proc/self/status")
}

/// Peak resident set size of this process so far (`VmHWM`).
pub fn peak_rss_bytes() -> Result<u64> {
    status_bytes("VmHWM")
}

/// Bytes this process caused to be fetched from the storage layer (`read_bytes` of
/// `/proc/self/io`): page cache hits do not count, page faults on a mapping and read-ahead do.
pub fn storage_read_bytes() -> Result<u64> {
    io_counter("read_bytes")
}

/// A field of `/proc/self/io` (`read_bytes`, `write_bytes`, `cancelled_write_bytes`, ...).
/// `write_bytes` counts pages when they are dirtied, also those of files deleted before
/// write-back (which `cancelled_write_bytes` counts again).
pub fn io_counter(field: &str) -> Result<u64> {
    let text = std::fs::read_to_string("/proc/self/io").context("reading /proc/self/io")?;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
            return rest
                .trim()
                .parse()
                .with_context(|| format!("parsing {field} of /proc/self/io"));
        }
    }
    bail!("{field} not found in /proc/self/io")
}

/// Largest peak RSS among the waited-for children of this process (`getrusage(RUSAGE_CHILDREN)`).
pub fn children_peak_rss_bytes() -> Result<u64> {
    // SAFETY: `rusage` is plain old data; all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("getrusage");
    }
    Ok(u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024)
}

/// User + system CPU seconds of this process (`RUSAGE_SELF`) or of its waited-for children
/// (`RUSAGE_CHILDREN`).
pub fn cpu_seconds(children: bool) -> Result<f64> {
    // SAFETY: `rusage` is plain old data; all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let who = if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: `usage` is a valid, writable `rusage` for the duration of the call.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("getrusage");
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let entry = entry?;
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(entry.path());
            } else if ty.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Total apparent size of the files under `dir` (or of `dir` itself if it is a file).
pub fn path_bytes(path: &Path) -> Result<u64> {
    let meta = std::fs::metadata(path).with_context(|| format!("stat {}", path.display()))?;
    if meta.is_file() {
        return Ok(meta.len());
    }
    let mut total = 0;
    for f in files_under(path)? {
        total += std::fs::metadata(&f)?.len();
    }
    Ok(total)
}

/// Writes back and drops from the page cache every file under `path`, so that the next
/// reads come from the disk. Returns the bytes covered.
pub fn evict(path: &Path) -> Result<u64> {
    let files = if std::fs::metadata(path)?.is_file() {
        vec![path.to_path_buf()]
    } else {
        files_under(path)?
    };
    let mut total = 0;
    for f in files {
        let file = File::open(&f).with_context(|| format!("opening {}", f.display()))?;
        // Dirty pages are not dropped by DONTNEED: write them back first.
        file.sync_all()
            .with_context(|| format!("fsync {}", f.display()))?;
        // SAFETY: the descriptor is open for the whole call; offset 0 and length 0 cover the
        // whole file; the call only drops clean cached pages and touches no memory of ours.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            bail!("posix_fadvise(DONTNEED) on {}: error {rc}", f.display());
        }
        total += file.metadata()?.len();
    }
    Ok(total)
}

/// Tells the kernel that a mapping is read at random, so a page fault reads one page and
/// not the device's read-ahead window (8 MiB on the benchmark machine).
pub fn madvise_random(map: &memmap2::Mmap) -> Result<()> {
    map.advise(memmap2::Advice::Random)
        .context("madvise(MADV_RANDOM)")
}
