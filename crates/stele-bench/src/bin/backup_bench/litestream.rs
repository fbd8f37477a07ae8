//! Litestream beside the replicator: its lag replicating an SQLite writer to a file
//! replica, measured as the replicator's is (a commit every 10 ms; for each, the time from
//! its commit returning to the first shipment in the replica holding it).
//!
//! Litestream is not part of this workspace: it is built from the Go module proxy into
//! the target folder (`GOBIN=$CARGO_TARGET_DIR/litestream/bin go install
//! github.com/benbjohnson/litestream/cmd/litestream@v0.3.13`), or named by `LITESTREAM`.
//! Without it the row says "not run".
//!
//! A shipment is a WAL segment Litestream writes into the replica (`generations/<g>/wal/
//! <index>/<offset>.wal.lz4`, written under a temp name and renamed, so a segment seen is
//! whole). Each commit inserts one row whose text is `lsmark<n, 10 digits>`; a segment holds
//! the WAL frames (whole pages) of the commits it ships, so the largest mark in its
//! decompressed bytes is the last commit it holds. A thread lists the replica every 2 ms:
//! a segment's time is when it was first seen (up to 2 ms late).

use super::lag::{Lag, summarize};
use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The version the benchmark's figures were measured with.
pub(crate) const VERSION: &str = "v0.3.13";

/// The Litestream binary: `LITESTREAM`, else `<target>/litestream/bin/litestream`.
pub(crate) fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LITESTREAM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    Some(target.join("litestream/bin/litestream")).filter(|p| p.is_file())
}

/// Litestream's lag at `interval` (its monitor and sync intervals both) over `run`.
pub(crate) fn measure(bin: &Path, work: &Path, interval: Duration, run: Duration) -> Result<Lag> {
    let dir = work.join(format!("litestream-{}", interval.as_millis()));
    std::fs::create_dir_all(&dir)?;
    let db_path = dir.join("ls.db");
    let replica = dir.join("replica");
    let con = rusqlite::Connection::open(&db_path)?;
    con.pragma_update(None, "journal_mode", "WAL")?;
    // Durable commits, as the Stele writer's.
    con.pragma_update(None, "synchronous", "FULL")?;
    con.busy_timeout(Duration::from_secs(5))?;
    con.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT)", [])?;
    let ms = interval.as_millis();
    let config = dir.join("litestream.yml");
    std::fs::write(
        &config,
        format!(
            "dbs:\n  - path: {}\n    monitor-interval: {ms}ms\n    replicas:\n      - type: file\n        path: {}\n        sync-interval: {ms}ms\n",
            db_path.display(),
            replica.display()
        ),
    )?;
    let log = std::fs::File::create(dir.join("litestream.log"))?;
    let mut child = Command::new(bin)
        .arg("replicate")
        .arg("-config")
        .arg(&config)
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let measured = run_writer(&con, &replica, interval, run);
    let _ = child.kill();
    let _ = child.wait();
    measured.with_context(|| format!("Litestream's log: {}", dir.join("litestream.log").display()))
}

fn run_writer(
    con: &rusqlite::Connection,
    replica: &Path,
    interval: Duration,
    run: Duration,
) -> Result<Lag> {
    // Its first snapshot: replication has started.
    let started = Instant::now();
    while files(replica, "snapshots", ".snapshot.lz4").is_empty() {
        if started.elapsed() > Duration::from_secs(30) {
            bail!(
                "Litestream wrote no snapshot into {} in 30 s",
                replica.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, replica) = (Arc::clone(&stop), replica.to_path_buf());
        std::thread::spawn(move || watch(&replica, &stop))
    };
    let mut commits = Vec::new();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < run {
        n += 1;
        con.execute(
            "INSERT INTO t (n, body) VALUES (?1, ?2)",
            rusqlite::params![n as i64, format!("lsmark{n:010}")],
        )?;
        commits.push((n, super::child::unix_ns()));
        std::thread::sleep(Duration::from_millis(10));
    }
    // Its lag can reach both intervals: wait for the last commits' shipments.
    std::thread::sleep(interval * 4 + Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let shipped = watcher
        .join()
        .map_err(|_| anyhow::anyhow!("the watcher panicked"))??;
    Ok(summarize(&commits, &shipped))
}

/// Lists the replica every 2 ms until `stop`; returns, per new WAL segment in the order
/// seen, the last commit it holds and when it was seen.
fn watch(replica: &Path, stop: &AtomicBool) -> Result<Vec<(u64, u128)>> {
    let mut seen = BTreeSet::new();
    let mut shipped = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        for path in files(replica, "wal", ".wal.lz4") {
            if seen.contains(&path) {
                continue;
            }
            let at = super::child::unix_ns();
            let mut bytes = Vec::new();
            lz4_flex::frame::FrameDecoder::new(std::fs::File::open(&path)?)
                .read_to_end(&mut bytes)
                .with_context(|| format!("decompressing {}", path.display()))?;
            if let Some(last) = last_mark(&bytes) {
                shipped.push((last, at));
            }
            seen.insert(path);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(shipped)
}

/// The files of `generations/*/<kind>/**` under `replica` whose names end with `suffix`.
fn files(replica: &Path, kind: &str, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = read_dir(&replica.join("generations"))
        .into_iter()
        .map(|g| g.join(kind))
        .collect();
    while let Some(d) = dirs.pop() {
        for p in read_dir(&d) {
            if p.is_dir() {
                dirs.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// The largest `n` of the `lsmark<n>` marks in `bytes`.
fn last_mark(bytes: &[u8]) -> Option<u64> {
    const MARK: &[u8] = b"lsmark";
    let mut best = None;
    let mut at = 0;
    while let Some(i) = find(bytes.get(at..).unwrap_or_default(), MARK) {
        let digits = bytes.get(at + i + MARK.len()..at + i + MARK.len() + 10);
        if let Some(n) = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse::<u64>().ok())
        {
            best = best.max(Some(n));
        }
        at += i + MARK.len();
    }
    best
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_last_mark_is_the_largest() {
        let bytes = b"xxlsmark0000000012..lsmark0000000003lsmark00000000";
        assert_eq!(super::last_mark(bytes), Some(12));
        assert_eq!(super::last_mark(b"nothing"), None);
    }
}
