//! The points a backup holds, when they were shipped, and their retention.
//!
//! A *point* is a manifest the backup keeps (`points/<seq, 20 digits>.manifest`) with the
//! tables it names; with the log records after it, every version from the point's to the
//! last record shipped can be restored. `points/shipped.log` has one line per shipment,
//! `<version> <unix milliseconds>`: the time is when the shipment was durable, which is
//! what `restore --at TIME` goes by (a commit is shipped at most one interval plus the
//! shipment's time after it was made).

use super::error::BackupError;
use super::{POINTS_DIR, SHIPPED_LOG};
use crate::db::{TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::manifest::Manifest;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use stele_table::Storage;

/// Extension of the points' manifests.
const POINT_EXTENSION: &str = "manifest";

/// Which points a backup keeps (the newest is always kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retention {
    /// The newest `n` points (at least 1).
    Count(usize),
    /// The points shipped within this long before now.
    Age(Duration),
}

impl Retention {
    /// Parses `--keep`: a count (`10`) or a duration with a unit (`90s`, `30m`, `24h`,
    /// `7d`).
    pub fn parse(text: &str) -> Result<Retention> {
        let bad = || BackupError::BadArgument {
            what: "retention",
            text: text.to_owned(),
            expected: "a count of points (10) or a duration: a number with s, m, h or d (24h)",
        };
        let t = text.trim();
        if let Ok(n) = t.parse::<usize>() {
            return if n == 0 {
                Err(bad().into())
            } else {
                Ok(Retention::Count(n))
            };
        }
        Ok(Retention::Age(parse_duration(t).ok_or_else(bad)?))
    }
}

/// A duration as a number and a unit: `s`, `m`, `h` or `d`.
pub(crate) fn parse_duration(t: &str) -> Option<Duration> {
    let unit = t.chars().last()?;
    let secs = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    let n: u64 = t.get(..t.len() - 1)?.parse().ok()?;
    Some(Duration::from_secs(n.checked_mul(secs)?))
}

/// A point a backup holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Point {
    /// The version its manifest is at.
    pub seq: u64,
    /// Its manifest file.
    pub path: PathBuf,
    /// When it was shipped (the file's modification time).
    pub shipped_at: Option<SystemTime>,
}

/// The manifest file of the point at version `seq`.
pub(crate) fn point_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(POINTS_DIR)
        .join(format!("{seq:020}.{POINT_EXTENSION}"))
}

/// Whether `dir` is a backup or replica (it keeps points to restore), not a plain database.
pub fn is_backup(dir: &Path) -> bool {
    dir.join(POINTS_DIR).is_dir()
}

/// The points of the backup in `dir`, oldest first.
pub fn points(dir: &Path) -> Result<Vec<Point>> {
    let folder = dir.join(POINTS_DIR);
    let entries =
        std::fs::read_dir(&folder).map_err(|e| Error::io("listing points", &folder, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("listing points", &folder, e))?;
        let path = entry.path();
        let seq = path
            .extension()
            .filter(|e| *e == POINT_EXTENSION)
            .and_then(|_| path.file_stem()?.to_str()?.parse::<u64>().ok());
        if let Some(seq) = seq {
            let shipped_at = entry.metadata().ok().and_then(|m| m.modified().ok());
            out.push(Point {
                seq,
                path,
                shipped_at,
            });
        }
    }
    out.sort_by_key(|p| p.seq);
    Ok(out)
}

/// The lines of `points/shipped.log`: version and time, in shipping order. A line torn
/// by a crash (the last) is left out.
pub(crate) fn shipped_log(dir: &Path) -> Result<Vec<(u64, SystemTime)>> {
    let path = dir.join(POINTS_DIR).join(SHIPPED_LOG);
    let text = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("reading shipping log", &path, e)),
    };
    let mut out = Vec::new();
    // Whole lines only: what follows the last newline is empty, or a line a crash tore
    // (its time could be cut short and read as another).
    let whole = whole_lines(&text);
    for line in whole.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let mut parts = line.split(' ');
        let (Some(seq), Some(ms), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(seq), Ok(ms)) = (seq.parse::<u64>(), ms.parse::<u64>()) else {
            continue;
        };
        out.push((seq, UNIX_EPOCH + Duration::from_millis(ms)));
    }
    Ok(out)
}

/// The bytes of `text` up to and including its last newline.
fn whole_lines(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    text.get(..end).unwrap_or_default()
}

/// Appends a line for version `seq`, shipped now, and syncs it.
pub(crate) fn note_shipped(storage: &dyn Storage, dir: &Path, seq: u64) -> Result<()> {
    let path = dir.join(POINTS_DIR).join(SHIPPED_LOG);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut file = storage
        .open_append(&path)
        .map_err(|e| Error::io("opening shipping log", &path, e))?;
    // A line torn by a crash before this one ends here: the new line starts afresh.
    let line = format!("\n{seq} {ms}\n");
    file.write_all(line.as_bytes())
        .and_then(|()| file.flush())
        .and_then(|()| file.sync())
        .map_err(|e| Error::io("writing shipping log", &path, e))
}

/// Applies `keep` to the backup in `dir`: removes the points it does not keep (never the
/// newest), then the log segments and tables no kept point needs (those a reader of the
/// backup holds stay for a later run). Returns how many points were removed.
pub(crate) fn prune(
    storage: &std::sync::Arc<dyn Storage>,
    dir: &Path,
    keep: Retention,
) -> Result<usize> {
    let all = points(dir)?;
    let now = SystemTime::now();
    let n = all.len();
    let kept: Vec<&Point> = all
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            *i + 1 == n
                || match keep {
                    Retention::Count(c) => *i + c >= n,
                    Retention::Age(d) => p
                        .shipped_at
                        .is_some_and(|t| now.duration_since(t).map_or(true, |age| age <= d)),
                }
        })
        .map(|(_, p)| p)
        .collect();
    let Some(oldest) = kept.first().map(|p| p.seq) else {
        return Ok(0);
    };
    let mut removed = 0;
    for p in all.iter().filter(|p| p.seq < oldest) {
        storage
            .remove(&p.path)
            .map_err(|e| Error::io("removing point", &p.path, e))?;
        removed += 1;
    }
    if removed == 0 {
        return Ok(0);
    }
    let folder = dir.join(POINTS_DIR);
    storage
        .sync_dir(&folder)
        .map_err(|e| Error::io("syncing folder", &folder, e))?;
    crate::wal::tail::remove_obsolete(&**storage, &dir.join(WAL_DIR), oldest)?;
    let mut tables = Vec::new();
    for p in &kept {
        let bytes = std::fs::read(&p.path).map_err(|e| Error::io("reading point", &p.path, e))?;
        tables.extend(super::cut::manifest_tables(&Manifest::decode(
            &bytes, &p.path,
        )?));
    }
    let store = stele_durable::Store::open_with(
        dir.join(TABLES_DIR),
        stele_durable::StoreOptions::default().storage(std::sync::Arc::clone(storage)),
    )?;
    store.collect_garbage_keeping(&tables)?;
    Ok(removed)
}
