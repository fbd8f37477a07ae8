//! Restoring a database from a backup at a version or a time, all or nothing.
//!
//! The backup is verified first; the restore refuses (writing nothing) if a file it needs
//! is damaged or missing: the point's manifest, a table of its stacks, or a log record
//! between the point and the version asked for. It builds the database in a temp folder
//! beside the output (tables linked or copied and checked against their names, the log cut
//! right after the version's record, the manifest last), opens it read-only to check that
//! it is at that version, and only then renames the folder to the output.

use super::copy::{Job, put_tables};
use super::error::BackupError;
use super::points::{Point, points, shipped_log};
use crate::db::{TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::manifest::{self, Manifest};
use crate::wal;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use stele_table::{Storage, TableId};

/// Which version to restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum At {
    /// The last version the backup holds.
    Latest,
    /// This version (a batch's sequence number).
    Version(u64),
    /// The last version shipped at or before this time.
    Time(SystemTime),
}

impl At {
    /// Parses `--at`: a version (`1234`), a UTC time (`2026-11-28T12:30:00Z`), seconds
    /// since the Unix epoch (`@1795000000`) or a time before now (`10m` ago as `-10m`).
    pub fn parse(text: &str) -> Result<At> {
        let t = text.trim();
        let bad = || BackupError::BadArgument {
            what: "point in time",
            text: text.to_owned(),
            expected: "a version (1234), a UTC time (2026-11-28T12:30:00Z), @unix-seconds, or -<n>s/m/h/d before now",
        };
        if let Ok(v) = t.parse::<u64>() {
            return Ok(At::Version(v));
        }
        if let Some(secs) = t.strip_prefix('@') {
            let s: u64 = secs.parse().map_err(|_| bad())?;
            return Ok(At::Time(UNIX_EPOCH + Duration::from_secs(s)));
        }
        if let Some(ago) = t.strip_prefix('-') {
            let d = super::points::parse_duration(ago).ok_or_else(bad)?;
            return Ok(At::Time(SystemTime::now() - d));
        }
        parse_utc(t).map(At::Time).ok_or_else(|| bad().into())
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` (or with a space for `T`) as a time.
fn parse_utc(t: &str) -> Option<SystemTime> {
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = t.split_once(['T', ' '])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut h = time.split(':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (h.next()??, h.next()??, h.next().unwrap_or(Some(0))?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// The versions a backup holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Held {
    /// Its points (manifests), oldest first.
    pub points: Vec<Point>,
    /// The versions that can be restored (if the files are whole: `verify` says), as
    /// ranges `(first, last)`, oldest first.
    pub ranges: Vec<(u64, u64)>,
    /// The last version held.
    pub last_seq: u64,
    /// What was shipped when: `(version, time)`, in shipping order.
    pub shipped: Vec<(u64, SystemTime)>,
}

impl Held {
    /// The oldest version held.
    pub fn first_seq(&self) -> u64 {
        self.points.first().map_or(0, |p| p.seq)
    }

    /// The versions held, as text: `"versions 12 to 480"`.
    pub fn describe(&self) -> String {
        if self.ranges.is_empty() {
            return "no version".into();
        }
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a} to {b}")
                }
            })
            .collect();
        format!("versions {}", parts.join(", "))
    }

    /// The version `at` names, if the backup holds it.
    pub fn resolve(&self, at: At) -> Option<u64> {
        let v = match at {
            At::Latest => self.last_seq,
            At::Version(v) => v,
            At::Time(t) => self.shipped.iter().rev().find(|(_, s)| *s <= t)?.0,
        };
        self.ranges
            .iter()
            .any(|(a, b)| (*a..=*b).contains(&v))
            .then_some(v)
    }
}

/// The points and versions the backup in `dir` holds (reads the log, not the tables).
pub fn held(dir: &Path) -> Result<Held> {
    let points = points(dir)?;
    let seqs: Vec<u64> = points.iter().map(|p| p.seq).collect();
    let mut scratch = super::verify::VerifyReport::default();
    let runs = super::verify::check_log(&dir.join(WAL_DIR), true, &seqs, &mut scratch)?;
    let ranges = super::verify::restorable(&seqs, &runs);
    Ok(Held {
        points,
        last_seq: ranges.last().map_or(0, |r| r.1),
        ranges,
        shipped: shipped_log(dir)?,
    })
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Restored {
    /// The version the database is at.
    pub seq: u64,
    /// The point it started from.
    pub point_seq: u64,
    /// Tables copied or linked.
    pub tables: usize,
    /// Bytes written (copied tables, log, manifest).
    pub bytes_written: u64,
}

/// Restores the backup in `dir` at `at` into the new folder `out` (see the module
/// comment). `storage` writes the output; `link` hard-links tables where it can.
pub(crate) fn restore(
    dir: &Path,
    out: &Path,
    at: At,
    storage: &Arc<dyn Storage>,
    link: bool,
) -> Result<Restored> {
    if std::fs::symlink_metadata(out).is_ok() {
        return Err(BackupError::OutputExists {
            path: out.to_path_buf(),
        }
        .into());
    }
    let held = held(dir)?;
    let asked = match at {
        At::Latest => "latest".to_owned(),
        At::Version(v) => v.to_string(),
        At::Time(t) => format!(
            "{} (unix time)",
            t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
        ),
    };
    let seq = held.resolve(at).ok_or_else(|| BackupError::NoSuchPoint {
        path: dir.to_path_buf(),
        asked,
        held: held.describe(),
    })?;
    // The latest version is the last one shipped: a log that ends before it lost records,
    // and restoring the version before them would be silently older.
    if let (At::Latest, Some(&(shipped, _))) = (at, held.shipped.last())
        && shipped > seq
    {
        return Err(BackupError::Damaged {
            path: dir.to_path_buf(),
            seq: shipped,
            count: 1,
            first: format!(
                "the log ends at version {seq} but version {shipped} was shipped (ask for an earlier version with --at to restore what is whole)"
            ),
        }
        .into());
    }
    let point = held
        .points
        .iter()
        .rev()
        .find(|p| p.seq <= seq)
        .cloned()
        .ok_or_else(|| BackupError::NoSuchPoint {
            path: dir.to_path_buf(),
            asked: seq.to_string(),
            held: held.describe(),
        })?;
    let bytes =
        std::fs::read(&point.path).map_err(|e| Error::io("reading point", &point.path, e))?;
    let manifest = Manifest::decode(&bytes, &point.path).map_err(|e| BackupError::Damaged {
        path: dir.to_path_buf(),
        seq,
        count: 1,
        first: e.to_string(),
    })?;
    // Only what this version needs is checked (every byte of it): a damaged file of
    // another point does not stop this restore.
    let mut report = super::verify::VerifyReport::default();
    let tables = needed_tables(&dir.join(TABLES_DIR), &manifest, &mut report);
    let problems: Vec<_> = report.findings.iter().filter(|f| f.damage).collect();
    if let Some(first) = problems.first() {
        return Err(BackupError::Damaged {
            path: dir.to_path_buf(),
            seq,
            count: problems.len(),
            first: first.to_string(),
        }
        .into());
    }
    let log =
        log_up_to(&dir.join(WAL_DIR), point.seq, seq).map_err(|why| BackupError::Damaged {
            path: dir.to_path_buf(),
            seq,
            count: 1,
            first: why,
        })?;
    let name = out
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("restore");
    let temp = out.with_file_name(format!(".{name}.restore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&temp);
    let built = build(storage, dir, &temp, &tables, &log, &bytes, link);
    let restored = built.and_then(|written| {
        let db = crate::Database::open_read_only(&temp)?;
        let found = db.snapshot().seq();
        drop(db);
        if found != seq {
            return Err(BackupError::RestoredWrong {
                expected: seq,
                found,
            }
            .into());
        }
        storage
            .rename(&temp, out)
            .map_err(|e| Error::io("renaming the restored folder into place", out, e))?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        storage
            .sync_dir(parent)
            .map_err(|e| Error::io("syncing folder", parent, e))?;
        Ok(Restored {
            seq,
            point_seq: point.seq,
            tables: tables.len(),
            bytes_written: written,
        })
    });
    if restored.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    restored
}

/// Every table of the stacks `manifest` names (the empty map, which has no file, left
/// out), each once, each checked whole (problems go to `report`: missing, not opening, or
/// bytes that do not hash to its name). The hash of every byte against the name is the
/// check a restore needs: the file holds the bytes the writer named, whose block checksums
/// [`verify`](super::verify) checks again. Two tables are hashed at a time.
fn needed_tables(
    dir: &Path,
    manifest: &Manifest,
    report: &mut super::verify::VerifyReport,
) -> Vec<TableId> {
    let empty = stele_table::empty_map_id();
    let mut out = Vec::new();
    let mut opened = Vec::new();
    for top in super::cut::manifest_tables(manifest) {
        let mut next = Some(top);
        while let Some(id) = next.take() {
            if out.contains(&id) || out.len() > stele_durable::MAX_LAYERS * 64 {
                break;
            }
            let path = dir.join(id.file_name());
            if !path.exists() {
                if id != empty {
                    report.damage(&path, None, "missing");
                }
                break;
            }
            out.push(id);
            // Footer and index checked; the parent a diff's footer names is next. (Closed
            // again: a stack may hold more tables than a process may keep open.)
            match stele_table::Table::open(&path) {
                Ok(t) => {
                    next = t.diff_info().map(|d| d.parent);
                    opened.push((id, path));
                }
                Err(e) => report.table_damage(&path, &e),
            }
        }
    }
    let hashes = super::copy::par_map(&opened, |(_, path)| super::copy::hash_file(path));
    for ((id, path), found) in opened.iter().zip(hashes) {
        report.tables += 1;
        match found {
            Ok((found, _)) if found == *id => {}
            Ok((found, _)) => report.damage(
                path,
                None,
                format!(
                    "its bytes hash to {found}, not to its name (changed, cut short or replaced)"
                ),
            ),
            Err(e) => report.damage(path, None, format!("cannot be read: {e}")),
        }
    }
    out
}

/// The bytes of each segment needed to go from the point at `from` to version `to`: from
/// the last segment starting at or before `from + 1`, whole records only, the last cut
/// right after version `to`. An error says what is missing or damaged.
fn log_up_to(
    wal_dir: &Path,
    from: u64,
    to: u64,
) -> std::result::Result<Vec<(u64, Vec<u8>)>, String> {
    let segments = match wal::list_segments(wal_dir) {
        Ok(s) => s,
        Err(_) if to == from => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    let Some(start) = segments.iter().rposition(|(first, _)| *first <= from + 1) else {
        return if to == from {
            Ok(Vec::new())
        } else {
            Err(format!("no log segment holds version {}", from + 1))
        };
    };
    let mut out = Vec::new();
    let mut have = from;
    for (first, path) in segments.iter().skip(start) {
        if have >= to {
            break;
        }
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (batches, valid, _) = wal::read_segment(&bytes);
        let mut end = 0usize;
        let mut at = 0usize;
        for b in &batches {
            let len = record_len(&bytes, at);
            at += len;
            if b.seq <= have {
                end = at;
                continue;
            }
            if b.seq != have + 1 {
                return Err(format!(
                    "{}: the log jumps from version {have} to {}",
                    path.display(),
                    b.seq
                ));
            }
            have = b.seq;
            end = at;
            if have == to {
                break;
            }
        }
        debug_assert!(end <= valid);
        out.push((*first, bytes.get(..end).unwrap_or_default().to_vec()));
    }
    if have < to {
        return Err(format!(
            "the log holds versions up to {have} only (a record after it is damaged or missing)"
        ));
    }
    Ok(out)
}

/// The length of the whole record at `at` of `bytes` (header included).
fn record_len(bytes: &[u8], at: usize) -> usize {
    let len = bytes
        .get(at..at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    wal::HEADER_BYTES + len
}

/// Writes the database into the new folder `temp`; returns the bytes written.
fn build(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    temp: &Path,
    tables: &[TableId],
    log: &[(u64, Vec<u8>)],
    manifest_bytes: &[u8],
    link: bool,
) -> Result<u64> {
    let tables_dir = temp.join(TABLES_DIR);
    let wal_dir = temp.join(WAL_DIR);
    for d in [tables_dir.join(stele_durable::ROOTS_DIR), wal_dir.clone()] {
        stele_table::create_dir_all(&**storage, &d)
            .map_err(|e| Error::io("creating folder", &d, e))?;
    }
    let jobs = tables
        .iter()
        .map(|&id| Job {
            id,
            from: dir.join(TABLES_DIR).join(id.file_name()),
            to: tables_dir.join(id.file_name()),
        })
        .collect();
    let mut written = put_tables(&**storage, jobs, link, None)?.copied_bytes;
    storage
        .sync_dir(&tables_dir)
        .map_err(|e| Error::io("syncing folder", &tables_dir, e))?;
    for (first, bytes) in log {
        let path = wal::segment_path(&wal_dir, *first);
        let mut file = storage
            .create(&path)
            .map_err(|e| Error::io("creating log segment", &path, e))?;
        std::io::Write::write_all(&mut file, bytes)
            .and_then(|()| std::io::Write::flush(&mut file))
            .and_then(|()| file.sync())
            .map_err(|e| Error::io("writing log segment", &path, e))?;
        written += bytes.len() as u64;
    }
    storage
        .sync_dir(&wal_dir)
        .map_err(|e| Error::io("syncing folder", &wal_dir, e))?;
    let path = temp.join(manifest::FILE_NAME);
    stele_table::replace_file(
        &**storage,
        &temp.join("MANIFEST.tmp"),
        &path,
        manifest_bytes,
    )?;
    written += manifest_bytes.len() as u64;
    Ok(written)
}
