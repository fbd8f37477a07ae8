//! Reading the log beside a live writer, and removing segments only when no reader holds
//! them.
//!
//! A reader holds a shared advisory lock (`flock`) on every segment it has open; the writer
//! removes a segment only once it gets an exclusive lock without waiting, else leaves it
//! for a later checkpoint or open. The same rule as the tables' (`stele_durable::Store`):
//! no registry of readers, nothing a killed reader leaves behind (the kernel drops its
//! locks with its files).
//!
//! A reader reads whole records only: an incomplete or garbage tail is a record the writer
//! has not finished writing yet (or a crash left, which the next writer cuts), not damage.
//! Records reach a reader once written, before their fsync returns; a writer whose fsync
//! fails cuts the log back to its durable length (`WalWriter::append`), and the reader
//! notices at its next read that the last record it took is no longer there
//! ([`Read::CutBack`]).

use super::{HEADER_BYTES, LoggedBatch, read_records};
use crate::error::{Error, Result};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use stele_table::Storage;

/// One segment open for reading, share-locked while this lives.
#[derive(Debug)]
pub(crate) struct SegmentReader {
    path: PathBuf,
    file: File,
    at: Position,
}

/// How far a reader has read a segment. Kept apart from the file so that the fuzz target
/// can feed it a segment as it grows.
#[derive(Debug, Default, Clone)]
pub(crate) struct Position {
    /// Bytes of whole records taken so far: where the next read starts.
    pub(crate) read_bytes: u64,
    /// Offset and header (length and checksum) of the last record taken, read again
    /// before each read to notice a cut-back.
    pub(crate) last_record: Option<(u64, [u8; HEADER_BYTES])>,
}

/// What one [`SegmentReader::read_new`] found.
#[derive(Debug)]
pub(crate) enum Read {
    /// The whole records written since the last read (maybe none).
    Batches(Vec<LoggedBatch>),
    /// The last record taken is gone or different: the writer cut the log back after a
    /// failed sync. What was taken from this segment must be dropped.
    CutBack,
}

impl SegmentReader {
    /// Opens segment `path` and takes its shared lock; `None` if the writer removed it
    /// (before the open, or between the open and the lock).
    pub(crate) fn open(path: &Path) -> Result<Option<SegmentReader>> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("opening log segment", path, e)),
        };
        file.lock_shared()
            .map_err(|e| Error::io("locking log segment (shared)", path, e))?;
        // The writer removes a segment while holding its exclusive lock: a reader that
        // opened it just before gets the lock afterwards and finds no link left.
        let links = file
            .metadata()
            .map_err(|e| Error::io("reading metadata of log segment", path, e))?
            .nlink();
        if links == 0 {
            return Ok(None);
        }
        Ok(Some(SegmentReader {
            path: path.to_path_buf(),
            file,
            at: Position::default(),
        }))
    }

    /// The segment's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes of the file after the whole records taken: zeroes written ahead, or a
    /// record being written.
    pub(crate) fn bytes_after_records(&self) -> u64 {
        self.file
            .metadata()
            .map_or(0, |m| m.len().saturating_sub(self.at.read_bytes))
    }

    /// Reads the whole records written after those taken so far.
    pub(crate) fn read_new(&mut self) -> Result<Read> {
        Ok(self.read_new_bytes()?.0)
    }

    /// [`read_new`](Self::read_new), with the bytes of the whole records taken (what a
    /// backup copies: `crate::backup`).
    pub(crate) fn read_new_bytes(&mut self) -> Result<(Read, Vec<u8>)> {
        if let Some((at, header)) = self.at.last_record {
            let mut now = [0u8; HEADER_BYTES];
            if !read_exact_at(&self.file, &mut now, at, &self.path)? || now != header {
                return Ok((Read::CutBack, Vec::new()));
            }
        }
        let mut tail = Vec::new();
        let before = self.at.read_bytes;
        read_records_at(&self.file, &mut tail, before, &self.path)?;
        let batches = self.at.take(&tail);
        let taken = usize::try_from(self.at.read_bytes - before).unwrap_or(usize::MAX);
        tail.truncate(taken);
        Ok((Read::Batches(batches), tail))
    }

    /// The open file (share-locked).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Where this reader stands in the segment.
    pub(crate) fn position(&self) -> &Position {
        &self.at
    }

    /// Goes on from `at` (where an earlier reader of the same file stopped) instead of the
    /// start: the next read checks that its last record is still there.
    pub(crate) fn resume(&mut self, at: Position) {
        self.at = at;
    }
}

impl Position {
    /// Takes the whole records at the start of `tail` (the bytes after those taken);
    /// whatever follows them is not written yet.
    pub(crate) fn take(&mut self, tail: &[u8]) -> Vec<LoggedBatch> {
        let (batches, valid, _not_yet) = read_records(tail);
        // The offset of the last whole record: walk the headers of the records read.
        let mut at = 0usize;
        for _ in 1..batches.len() {
            at += HEADER_BYTES + record_payload_bytes(tail, at);
        }
        if !batches.is_empty()
            && let Some(header) = tail.get(at..at + HEADER_BYTES)
        {
            let mut h = [0u8; HEADER_BYTES];
            h.copy_from_slice(header);
            self.last_record = Some((self.read_bytes + at as u64, h));
        }
        self.read_bytes += valid as u64;
        batches
    }
}

/// The payload length in the header at `at` of `bytes` (0 if there is no header there).
fn record_payload_bytes(bytes: &[u8], at: usize) -> usize {
    bytes
        .get(at..at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// Fills `buf` from offset `at`; `false` if the file ends first.
fn read_exact_at(file: &File, buf: &mut [u8], at: u64, path: &Path) -> Result<bool> {
    match file.read_exact_at(buf, at) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(Error::io("reading log segment", path, e)),
    }
}

/// Bytes read at a time after the records taken: most refreshes find a few small records,
/// then the zeroes the writer keeps ahead (up to 1 MiB, which is not read).
const READ_CHUNK_BYTES: usize = 16 << 10;

/// Appends to `out` the bytes of `file` from offset `at` that may hold records: chunk by
/// chunk while the records' headers (walked, not checked) say more follows, up to the first
/// zero header or the end of the file. Whatever this reads past the whole records is
/// checked by [`read_records`] and left for later.
fn read_records_at(file: &File, out: &mut Vec<u8>, at: u64, path: &Path) -> Result<()> {
    // A garbage length in a torn header must not make this allocate more than the file.
    let file_bytes = file
        .metadata()
        .map_err(|e| Error::io("reading metadata of log segment", path, e))?
        .len();
    let limit = usize::try_from(file_bytes.saturating_sub(at)).unwrap_or(usize::MAX);
    let mut walked = 0usize;
    loop {
        let need = match records_end(out, &mut walked) {
            End::Zeroes => return Ok(()),
            End::Needs(bytes) => bytes.max(out.len() + READ_CHUNK_BYTES).min(limit),
        };
        let have = out.len();
        if need <= have {
            return Ok(());
        }
        out.resize(need, 0);
        let mut filled = have;
        while filled < need {
            let slot = out.get_mut(filled..need).unwrap_or_default();
            match file.read_at(slot, at + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("reading log segment", path, e)),
            }
        }
        out.truncate(filled);
        if filled < need {
            return Ok(()); // the end of the file
        }
    }
}

/// Where the records at the start of a buffer end, as far as their headers say.
enum End {
    /// A zero header (the zeroes written ahead): nothing more to read.
    Zeroes,
    /// The buffer must hold this many bytes to go on (a header or a payload is cut off).
    Needs(usize),
}

/// Walks the record headers of `bytes` from `walked` (kept between calls).
fn records_end(bytes: &[u8], walked: &mut usize) -> End {
    loop {
        let Some(header) = bytes.get(*walked..*walked + HEADER_BYTES) else {
            return End::Needs(*walked + HEADER_BYTES);
        };
        if header.iter().all(|&b| b == 0) {
            return End::Zeroes;
        }
        let len = record_payload_bytes(bytes, *walked).min(super::MAX_RECORD_BYTES);
        let end = *walked + HEADER_BYTES + len;
        if end > bytes.len() {
            return End::Needs(end);
        }
        *walked = end;
    }
}

/// Removes segment `path` if no reader holds it (an exclusive lock taken without waiting);
/// returns whether it did. A segment already gone counts as removed.
pub(crate) fn remove_if_unheld(storage: &dyn Storage, path: &Path) -> Result<bool> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(Error::io("opening old log segment", path, e)),
    };
    match file.try_lock() {
        Ok(()) => {
            // Removed while locked: a reader that opened it just before waits for the lock,
            // then sees no link left and goes to the manifest instead.
            storage
                .remove(path)
                .map_err(|e| Error::io("removing old log segment", path, e))?;
            Ok(true)
        }
        Err(fs::TryLockError::WouldBlock) => Ok(false),
        Err(fs::TryLockError::Error(e)) => Err(Error::io("locking log segment", path, e)),
    }
}

/// Removes the segments whose every record the tables hold (`seq` and below: those
/// followed by a segment that starts at `seq + 1` or before), unless a reader holds them;
/// those stay for a later checkpoint or open. Returns how many stayed.
pub(crate) fn remove_obsolete(storage: &dyn Storage, wal_dir: &Path, seq: u64) -> Result<usize> {
    let segments = super::list_segments(wal_dir)?;
    let mut kept = 0;
    for pair in segments.windows(2) {
        let [(_, path), (next_first, _)] = pair else {
            continue;
        };
        if *next_first <= seq.saturating_add(1) && !remove_if_unheld(storage, path)? {
            kept += 1;
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::super::{LoggedOp, encode_batch};
    use super::*;
    use std::sync::Arc;

    fn record(seq: u64) -> Vec<u8> {
        record_of(seq, "d")
    }

    fn record_of(seq: u64, id: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let ops = vec![LoggedOp::Put {
            collection: "c".into(),
            id: format!("{id}{seq}").into_bytes(),
            value: Arc::from(&b"\x00doc"[..]),
        }];
        encode_batch(&mut out, seq, &ops).unwrap();
        out
    }

    #[test]
    fn a_reader_takes_whole_records_and_notices_a_cut_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        let (one, two, three) = (record(1), record(2), record(3));
        // Zeroes ahead, then the first record and half of the second.
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        w.write_all_at(&one, 0).unwrap();
        w.write_all_at(&two[..two.len() / 2], one.len() as u64)
            .unwrap();
        let mut r = SegmentReader::open(&path).unwrap().unwrap();
        let seqs = |read: Read| match read {
            Read::Batches(b) => b.iter().map(|b| b.seq).collect::<Vec<_>>(),
            Read::CutBack => vec![u64::MAX],
        };
        assert_eq!(seqs(r.read_new().unwrap()), vec![1]);
        // The rest of the second record and the third: both taken now.
        w.write_all_at(&two, one.len() as u64).unwrap();
        w.write_all_at(&three, (one.len() + two.len()) as u64)
            .unwrap();
        assert_eq!(seqs(r.read_new().unwrap()), vec![2, 3]);
        assert_eq!(seqs(r.read_new().unwrap()), Vec::<u64>::new());
        // The writer cuts the third record back (its sync failed) and writes another.
        w.set_len((one.len() + two.len()) as u64).unwrap();
        assert_eq!(seqs(r.read_new().unwrap()), vec![u64::MAX]);
        // Another batch 3 in its place: still not the record taken.
        let mut other = record_of(3, "other");
        other.extend_from_slice(&record(4));
        w.write_all_at(&other[..other.len() - 3], (one.len() + two.len()) as u64)
            .unwrap();
        assert_eq!(seqs(r.read_new().unwrap()), vec![u64::MAX]);
    }

    #[test]
    fn records_bigger_than_a_read_are_read_whole_and_zeroes_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        let mut big = Vec::new();
        let ops = vec![LoggedOp::Put {
            collection: "c".into(),
            id: b"big".to_vec(),
            value: Arc::from(vec![7u8; 3 * READ_CHUNK_BYTES + 5]),
        }];
        encode_batch(&mut big, 1, &ops).unwrap();
        let mut bytes = record(0);
        bytes.extend_from_slice(&big);
        let records = bytes.len();
        bytes.resize(records + (1 << 20), 0);
        std::fs::write(&path, &bytes).unwrap();
        let mut r = SegmentReader::open(&path).unwrap().unwrap();
        let mut read = Vec::new();
        read_records_at(&r.file, &mut read, 0, &path).unwrap();
        // The records, then at most one chunk of the zeroes after them.
        assert!(read.len() >= records && read.len() <= records + READ_CHUNK_BYTES);
        match r.read_new().unwrap() {
            Read::Batches(b) => assert_eq!(b.iter().map(|b| b.seq).collect::<Vec<_>>(), [0, 1]),
            Read::CutBack => panic!("no cut-back here"),
        }
        assert_eq!(r.at.read_bytes, records as u64);
        // A garbage length in a torn header reads no more than the file holds.
        bytes.truncate(records);
        bytes.extend_from_slice(&[0xff; 12]);
        std::fs::write(&path, &bytes).unwrap();
        match r.read_new().unwrap() {
            Read::Batches(b) => assert!(b.is_empty()),
            Read::CutBack => panic!("no cut-back here"),
        }
    }

    #[test]
    fn a_held_segment_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path();
        for first in [1u64, 5, 9] {
            std::fs::write(super::super::segment_path(wal, first), record(first)).unwrap();
        }
        let held = SegmentReader::open(&super::super::segment_path(wal, 1))
            .unwrap()
            .unwrap();
        let storage = stele_table::FsStorage;
        // Segments 1 and 5 are obsolete at seq 8; 1 is held.
        assert_eq!(remove_obsolete(&storage, wal, 8).unwrap(), 1);
        let left: Vec<u64> = super::super::list_segments(wal)
            .unwrap()
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(left, vec![1, 9]);
        drop(held);
        assert_eq!(remove_obsolete(&storage, wal, 8).unwrap(), 0);
        assert_eq!(super::super::list_segments(wal).unwrap().len(), 1);
        // A segment removed after it was listed: the reader is told it is gone.
        assert!(
            SegmentReader::open(&super::super::segment_path(wal, 5))
                .unwrap()
                .is_none()
        );
    }
}
