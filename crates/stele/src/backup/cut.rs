//! A consistent cut of a live database: one manifest, the tables it names (held
//! share-locked, so the writer's garbage collection leaves them alone) and the log records
//! after it, up to the last whole record, held the same way.
//!
//! The writer never changes a table and only appends whole records to the log (cutting a
//! record off again only when its sync failed: see `wal::tail`), so the files of a cut
//! stay what they were while they are copied; what the writer does meanwhile lands after
//! the cut. The cut starts over (as a reader's load does) when the writer checkpointed
//! between the reading of the manifest and the locking of what it names.

use super::Position;
use crate::db::{Attempt, TABLES_DIR, WAL_DIR, retry};
use crate::error::{Error, Result};
use crate::manifest::{self, Manifest};
use crate::wal::tail::{Read, SegmentReader};
use crate::wal::{self, HEADER_BYTES};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use stele_durable::{DurableMap, Store};
use stele_table::TableId;

/// What a cut holds of one log segment.
#[derive(Debug)]
pub(crate) struct SegmentCut {
    /// Its first sequence number (its name).
    pub first: u64,
    /// Where the bytes below start: 0, or the end of what the destination holds already.
    pub from: u64,
    /// The whole records from `from` on, as read.
    pub bytes: Vec<u8>,
    /// Where the records end and which was the last (for the next cut to go on from).
    pub end: Position,
    /// Share-locked while this lives: the writer does not remove the segment.
    pub reader: SegmentReader,
}

/// A consistent cut: restoring the manifest, the tables and the records gives the database
/// as of batch `last_seq`.
#[derive(Debug)]
pub(crate) struct Cut {
    /// The manifest's bytes as read (an empty manifest's when there is none yet).
    pub manifest_bytes: Vec<u8>,
    pub manifest: Manifest,
    /// Every table of every map the manifest names, each once (the empty map, which has
    /// no file, left out).
    pub tables: BTreeSet<TableId>,
    /// The source's table folder.
    pub tables_dir: PathBuf,
    pub segments: Vec<SegmentCut>,
    /// The last batch in the cut.
    pub last_seq: u64,
    /// Keep the tables share-locked while the cut lives.
    _maps: Vec<DurableMap>,
}

/// Takes a cut of the database in `dir`. `shipped` gives, per segment (by first sequence
/// number), how far a destination holds it already: those bytes are not read again if
/// the source's record there is still the same one.
pub(crate) fn take(dir: &Path, shipped: &BTreeMap<u64, Position>) -> Result<Cut> {
    if !dir.join(WAL_DIR).is_dir() && !dir.join(manifest::FILE_NAME).is_file() {
        return Err(Error::NoDatabase {
            path: dir.to_path_buf(),
        });
    }
    retry(|| take_once(dir, shipped))
}

fn take_once(dir: &Path, shipped: &BTreeMap<u64, Position>) -> Result<Cut, Attempt> {
    let manifest_path = dir.join(manifest::FILE_NAME);
    let manifest_bytes = match std::fs::read(&manifest_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default().encode(),
        Err(e) => return Err(Error::io("reading manifest", &manifest_path, e).into()),
    };
    let manifest = Manifest::decode(&manifest_bytes, &manifest_path)?;
    let tables_dir = dir.join(TABLES_DIR);
    let mut maps = Vec::new();
    let mut tables = BTreeSet::new();
    let ids = manifest_tables(&manifest);
    if !ids.is_empty() {
        let store = Store::open_read_only(&tables_dir).map_err(Error::from)?;
        for id in ids {
            let map = store.open_map(id).map_err(Error::from)?;
            tables.extend(map.layer_ids());
            maps.push(map);
        }
    }
    let empty = stele_table::empty_map_id();
    if !tables_dir.join(empty.file_name()).is_file() {
        tables.remove(&empty);
    }
    let (segments, last_seq) = log_after(&dir.join(WAL_DIR), manifest.seq, shipped)?;
    Ok(Cut {
        manifest_bytes,
        manifest,
        tables,
        tables_dir,
        segments,
        last_seq,
        _maps: maps,
    })
}

/// The top table of every collection and index of `manifest`.
pub(crate) fn manifest_tables(manifest: &Manifest) -> Vec<TableId> {
    manifest
        .collections
        .values()
        .copied()
        .chain(manifest.indexes.iter().map(|ix| ix.table))
        .flatten()
        .collect()
}

/// The segments holding the records after `seq`, each share-locked and read up to its last
/// whole record, and the last batch's sequence number.
fn log_after(
    wal_dir: &Path,
    seq: u64,
    shipped: &BTreeMap<u64, Position>,
) -> Result<(Vec<SegmentCut>, u64), Attempt> {
    let listed = match wal::list_segments(wal_dir) {
        Ok(s) => s,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    let Some(after_manifest) = listed.iter().rposition(|(first, _)| *first <= seq + 1) else {
        return match listed.first() {
            // Every segment starts later: the one the manifest needs was removed after a
            // newer manifest was written.
            Some(_) => Err(Attempt::Again(gap(wal_dir))),
            None => Ok((Vec::new(), seq)),
        };
    };
    // The last segment the destination got, if the writer has not removed it yet (a
    // replicator holds it share-locked between shipments): its rest is shipped too, so that
    // the destination's log has no hole where the writer checkpointed meanwhile.
    let tailed = shipped
        .keys()
        .next_back()
        .and_then(|f| listed.iter().position(|(first, _)| first == f));
    let start = tailed.map_or(after_manifest, |t| t.min(after_manifest));
    let mut last = None::<u64>;
    let mut out = Vec::new();
    for (first, path) in listed.into_iter().skip(start) {
        let Some(mut reader) = SegmentReader::open(&path)? else {
            return Err(Attempt::Again(gap(wal_dir)));
        };
        let resumed = shipped.get(&first).filter(|p| p.read_bytes > 0);
        // The last record the destination holds, read before going on from it.
        let mut prev = None;
        if let Some(at) = resumed {
            prev = last_seq_at(&reader, at, &path)?;
            reader.resume(at.clone());
        }
        let (mut read, mut bytes) = reader.read_new_bytes()?;
        let mut from = resumed.map_or(0, |p| p.read_bytes);
        if matches!(read, Read::CutBack) {
            // What the destination holds of it is no longer the source's: all again.
            reader.resume(Position::default());
            (read, bytes) = reader.read_new_bytes()?;
            from = 0;
        }
        let Read::Batches(batches) = read else {
            return Err(Attempt::Again(gap(wal_dir)));
        };
        if from == 0 {
            prev = None;
        }
        // Batches follow on: within the segment, from the previous segment and after the
        // manifest (a gap means the writer moved on between the listing and the reading).
        let mut expected = last.or(prev).map(|s| s + 1);
        if expected.is_none() && first > seq + 1 {
            return Err(Attempt::Again(gap(wal_dir)));
        }
        for (i, b) in batches.iter().enumerate() {
            // A segment may start after a hole the manifest's tables fill: the writer
            // removed the segments between while the one tailed before stayed locked.
            let bridged = i == 0 && from == 0 && b.seq <= seq + 1;
            if expected.is_some_and(|e| b.seq != e) && !bridged {
                return Err(Attempt::Again(gap(wal_dir)));
            }
            expected = Some(b.seq + 1);
        }
        if let Some(e) = expected {
            last = Some(e - 1);
        }
        out.push(SegmentCut {
            first,
            from,
            bytes,
            end: reader.position().clone(),
            reader,
        });
    }
    Ok((out, last.unwrap_or(seq).max(seq)))
}

/// The sequence number of the last record taken up to position `at` (its header's offset
/// is known; the sequence number follows the kind byte).
fn last_seq_at(reader: &SegmentReader, at: &Position, path: &Path) -> Result<Option<u64>> {
    let Some((at, _)) = at.last_record else {
        return Ok(None);
    };
    let mut seq = [0u8; 8];
    use std::os::unix::fs::FileExt;
    match reader
        .file()
        .read_exact_at(&mut seq, at + HEADER_BYTES as u64 + 1)
    {
        Ok(()) => Ok(Some(u64::from_le_bytes(seq))),
        // Cut back by the writer: the read that follows says so.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(Error::io("reading log segment", path, e)),
    }
}

/// The error a cut gives after its last attempt found the log not following on.
fn gap(wal_dir: &Path) -> Error {
    Error::CorruptLog {
        path: wal_dir.to_path_buf(),
        offset: 0,
        reason: "the log's segments do not follow on from the manifest (a backup retried \
                 while the writer checkpointed, and gave up)",
    }
}
