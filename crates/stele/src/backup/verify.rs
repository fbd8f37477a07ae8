//! Checking every file of a database or a backup: each manifest (its checksum and
//! layout), each table (its bytes against the hash that names it, its footer, index and
//! every block's checksum), each table a manifest needs (present, its layers too), and each
//! log record (its checksum, its decoding, sequence numbers that follow on, and in a
//! backup, that the log reaches the last version shipped).

use super::POINTS_DIR;
use crate::db::{TABLES_DIR, WAL_DIR};
use crate::error::{Error, Result};
use crate::manifest::{self, Manifest};
use crate::wal;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use stele_table::TableId;

/// One problem found, with its file and, where known, the byte offset in it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The file (or folder) concerned.
    pub path: PathBuf,
    /// The byte offset of the problem in the file, where it is known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub problem: String,
    /// `true`: data is damaged or missing. `false`: a note (a write a crash left unfinished
    /// at the end of a live database's log, which the next open cuts; an unused table).
    pub damage: bool,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(at) = self.offset {
            write!(f, " at byte {at}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// What [`verify`](crate::backup::verify) checked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Manifests read (the current one and a backup's points).
    pub manifests: usize,
    /// Table files checked.
    pub tables: usize,
    /// Their bytes.
    pub table_bytes: u64,
    /// Log segments checked.
    pub segments: usize,
    /// Log records checked.
    pub records: u64,
    /// The last version the log (or, without records after it, the manifest) holds.
    pub last_seq: u64,
    /// Every problem, in the order found.
    pub findings: Vec<Finding>,
}

impl VerifyReport {
    /// Whether nothing is damaged or missing (notes aside).
    pub fn is_ok(&self) -> bool {
        !self.findings.iter().any(|f| f.damage)
    }

    /// A table that does not open or whose blocks are damaged: where, if the error says.
    pub(super) fn table_damage(&mut self, path: &Path, e: &stele_table::Error) {
        let offset = match e {
            stele_table::Error::ChecksumMismatch { part, .. }
            | stele_table::Error::Corrupt { part, .. } => match part {
                stele_table::Part::Block { offset, .. } => Some(*offset),
                _ => None,
            },
            _ => None,
        };
        self.damage(path, offset, e.to_string());
    }

    pub(super) fn damage(&mut self, path: &Path, offset: Option<u64>, problem: impl Into<String>) {
        self.findings.push(Finding {
            path: path.to_path_buf(),
            offset,
            problem: problem.into(),
            damage: true,
        });
    }
}

/// Checks every file of the database or backup in `dir` (see the module comment). Reads
/// every byte; writes nothing. Safe beside a writer: a file the writer removes meanwhile
/// may be reported missing (verify a backup, or a database at rest, for a clean verdict).
pub fn verify(dir: &Path) -> Result<VerifyReport> {
    if !dir.join(WAL_DIR).is_dir() && !dir.join(manifest::FILE_NAME).is_file() {
        return Err(Error::NoDatabase {
            path: dir.to_path_buf(),
        });
    }
    let is_backup = dir.join(POINTS_DIR).is_dir();
    let mut report = VerifyReport::default();
    // Every manifest, and the seq of each that decodes.
    let mut manifests: Vec<(PathBuf, Manifest)> = Vec::new();
    let mut paths = vec![dir.join(manifest::FILE_NAME)];
    if is_backup {
        paths.extend(super::points::points(dir)?.into_iter().map(|p| p.path));
    }
    for path in paths {
        match std::fs::read(&path) {
            Ok(bytes) => {
                report.manifests += 1;
                match Manifest::decode(&bytes, &path) {
                    Ok(m) => manifests.push((path, m)),
                    Err(e) => report.damage(&path, None, e.to_string()),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !is_backup => {}
            Err(e) => report.damage(&path, None, format!("cannot be read: {e}")),
        }
    }
    let tables_dir = dir.join(TABLES_DIR);
    let good = check_tables(&tables_dir, &mut report)?;
    check_needed(&tables_dir, &manifests, &good, &mut report);
    let mut seqs: Vec<u64> = manifests.iter().map(|(_, m)| m.seq).collect();
    if manifests.is_empty() {
        seqs.push(0);
    }
    let runs = check_log(&dir.join(WAL_DIR), is_backup, &seqs, &mut report)?;
    report.last_seq = restorable(&seqs, &runs).last().map_or(0, |r| r.1);
    if is_backup {
        let shipped = super::points::shipped_log(dir)?.last().map(|(s, _)| *s);
        if let Some(s) = shipped.filter(|s| *s > report.last_seq) {
            let path = dir.join(WAL_DIR);
            report.damage(
                &path,
                None,
                format!(
                    "the log ends at version {} but version {s} was shipped: records are missing (a segment cut short or removed)",
                    report.last_seq
                ),
            );
        }
    }
    Ok(report)
}

/// Checks every table file in `dir`; returns the ids of those that are whole, with the
/// parent each diff names.
fn check_tables(
    dir: &Path,
    report: &mut VerifyReport,
) -> Result<BTreeMap<TableId, Option<TableId>>> {
    let mut good = BTreeMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(good),
        Err(e) => return Err(Error::io("listing tables", dir, e)),
    };
    let mut named: Vec<(PathBuf, TableId)> = entries
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| TableId::from_path(&p).map(|id| (p, id)))
        .collect();
    named.sort();
    // Two tables at a time; the findings in the files' order.
    let checked = super::copy::par_map(&named, |(path, id)| {
        let mut part = VerifyReport::default();
        let parent = check_table(path, *id, &mut part);
        (parent, part)
    });
    for ((_, id), (parent, part)) in named.iter().zip(checked) {
        report.tables += part.tables;
        report.table_bytes += part.table_bytes;
        report.findings.extend(part.findings);
        if let Some(parent) = parent {
            good.insert(*id, parent);
        }
    }
    Ok(good)
}

/// Checks the table file `path` named `id` (its bytes against the id, its footer, index and
/// every block); reports what is wrong to `report`. Returns, if it is whole, the parent its
/// footer names (a diff's).
pub(super) fn check_table(
    path: &Path,
    id: TableId,
    report: &mut VerifyReport,
) -> Option<Option<TableId>> {
    report.tables += 1;
    let named_right = match super::copy::hash_file(path) {
        Ok((found, len)) => {
            report.table_bytes += len;
            if found != id {
                report.damage(
                    path,
                    None,
                    format!("its bytes hash to {found}, not to its name (changed, cut short or replaced)"),
                );
            }
            found == id
        }
        Err(e) => {
            report.damage(path, None, format!("cannot be read: {e}"));
            return None;
        }
    };
    let checked = stele_table::Table::open(path).and_then(|t| {
        t.verify_all()?;
        Ok(t.diff_info().map(|d| d.parent))
    });
    match checked {
        Ok(parent) if named_right => Some(parent),
        Ok(_) => None,
        Err(e) => {
            report.table_damage(path, &e);
            None
        }
    }
}

/// Reports every table a manifest needs that is missing (its layers followed down).
fn check_needed(
    dir: &Path,
    manifests: &[(PathBuf, Manifest)],
    good: &BTreeMap<TableId, Option<TableId>>,
    report: &mut VerifyReport,
) {
    let empty = stele_table::empty_map_id();
    let mut reported = BTreeSet::new();
    for (path, m) in manifests {
        for top in super::cut::manifest_tables(m) {
            let mut next = Some((top, None::<TableId>));
            let mut depth = 0;
            while let Some((id, below)) = next.take() {
                depth += 1;
                if depth > stele_durable::MAX_LAYERS {
                    break;
                }
                match good.get(&id) {
                    Some(parent) => next = parent.map(|p| (p, Some(id))),
                    None if id == empty => {}
                    None => {
                        let file = dir.join(id.file_name());
                        if !file.exists() && reported.insert(id) {
                            let by = match below {
                                Some(b) => format!("the layer below table {b}"),
                                None => format!("named by {}", path.display()),
                            };
                            report.damage(&file, None, format!("missing ({by})"));
                        }
                    }
                }
            }
        }
    }
}

/// Checks every record of every segment; returns the runs of versions the log holds
/// without a hole, oldest first. A hole inside a segment is damage; one between segments
/// is damage unless a manifest among `points` bridges it (the writer checkpointed and
/// removed the segment between, whose records the manifest's tables hold).
pub(super) fn check_log(
    dir: &Path,
    is_backup: bool,
    points: &[u64],
    report: &mut VerifyReport,
) -> Result<Vec<(u64, u64)>> {
    let segments = match wal::list_segments(dir) {
        Ok(s) => s,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    };
    let count = segments.len();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (i, (first, path)) in segments.iter().enumerate() {
        report.segments += 1;
        let bytes = std::fs::read(path).map_err(|e| Error::io("reading log segment", path, e))?;
        let (batches, valid, why) = wal::read_segment(&bytes);
        report.records += batches.len() as u64;
        if let Some(b) = batches.first() {
            if b.seq != *first {
                report.damage(
                    path,
                    Some(0),
                    format!(
                        "its first record is version {}, not {first} as its name says",
                        b.seq
                    ),
                );
            }
            match runs.last_mut() {
                Some(run) if b.seq == run.1 + 1 => {}
                Some(run) if !points.iter().any(|&p| p + 1 >= b.seq && p >= run.1) => {
                    let from = run.1;
                    report.damage(
                        path,
                        Some(0),
                        format!("the log jumps from version {from} to {} and no manifest holds the versions between", b.seq),
                    );
                    runs.push((b.seq, b.seq - 1));
                }
                _ => runs.push((b.seq, b.seq - 1)),
            }
        }
        for b in &batches {
            match runs.last_mut() {
                Some(run) if b.seq == run.1 + 1 => run.1 = b.seq,
                _ => {
                    report.damage(
                        path,
                        None,
                        format!("the log jumps to version {} inside the segment", b.seq),
                    );
                    runs.push((b.seq, b.seq));
                }
            }
        }
        if let Some(why) = why {
            let is_last = i + 1 == count;
            report.findings.push(Finding {
                path: path.clone(),
                offset: Some(valid as u64),
                problem: if is_last && !is_backup {
                    format!("{why}: a write left unfinished (the next open cuts it)")
                } else {
                    format!("{why}: the records from here on are lost")
                },
                damage: !is_last || is_backup,
            });
        }
    }
    Ok(runs)
}

/// The versions restorable from the points at `points` with the log's `runs`: each point's
/// own version, and on from it as far as the run holding the record after it goes.
pub(super) fn restorable(points: &[u64], runs: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = points
        .iter()
        .map(|&p| {
            let end = runs
                .iter()
                .find(|(a, b)| *a <= p + 1 && *b >= p)
                .map_or(p, |(_, b)| (*b).max(p));
            (p, end)
        })
        .collect();
    out.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in out {
        match merged.last_mut() {
            Some(m) if a <= m.1 + 1 => m.1 = m.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}
