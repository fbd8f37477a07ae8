//! The write-ahead log: checksummed records appended to segment files, one fsync per group
//! of commits.
//!
//! A segment is `wal/<first sequence number, 20 digits>.log`: records back to back.
//!
//! ```text
//! record:  u32 payload length | u64 XXH3-64 of (length bytes + payload) | payload
//! payload: u8 kind (1 batch) | u64 sequence number | varint operation count | operations
//! op:      u8 code, then by code:
//!          1 put:          varint len | collection | varint len | id | varint len | stored value
//!          2 delete:       varint len | collection | varint len | id
//!          3 create index: varint len | collection | varint len | name | varint field count
//!                          | per field: varint len | path (an earlier version's keys)
//!          7 create index by the query rules: as 3, each path followed by u8 flags
//!                          (bit 0: descending)
//!          4 drop index:   varint len | collection | varint len | name
//!          5 drop collection:  varint len | collection
//!          6 merge collection: varint len | source collection | varint len | target
//! ```
//!
//! Integers are little-endian. On open, records of the last segment are read up to the
//! first one that is incomplete or fails its checksum (a write torn by a crash); the file
//! is cut there. A bad record in an earlier segment is corruption, reported, never skipped.

pub(crate) mod record;
pub(crate) mod tail;

pub use record::MAX_RECORD_BYTES;
use record::decode_payload;
pub(crate) use record::{HEADER_BYTES, LoggedBatch, LoggedOp, encode_batch};

use crate::error::{Error, Result};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use stele_table::{Storage, StorageFile};

/// The records of one segment, and the length of its valid prefix.
///
/// Zeroes after the last record are the space a writer zeroed ahead of its records, not
/// damage: a segment that ends in them ends cleanly (no record starts with 12 zero bytes:
/// its checksum would have to be 0).
pub(crate) fn read_segment(bytes: &[u8]) -> (Vec<LoggedBatch>, usize, Option<&'static str>) {
    let (batches, valid, why) = read_records(bytes);
    (batches, valid, why.filter(|_| !zeroes_after(bytes, valid)))
}

/// Whether everything after the first `valid` bytes of a segment is zero (the space a
/// writer zeroed ahead of its records).
pub(crate) fn zeroes_after(bytes: &[u8], valid: usize) -> bool {
    bytes
        .get(valid..)
        .is_some_and(|t| t.iter().all(|&b| b == 0))
}

fn read_records(bytes: &[u8]) -> (Vec<LoggedBatch>, usize, Option<&'static str>) {
    let mut batches = Vec::new();
    let mut at = 0usize;
    loop {
        let Some(header) = bytes.get(at..at + HEADER_BYTES) else {
            let why = (at != bytes.len()).then_some("incomplete record header");
            return (batches, at, why);
        };
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&header[4..12]);
        let Some(payload) = bytes.get(at + HEADER_BYTES..at + HEADER_BYTES + len) else {
            return (batches, at, Some("incomplete record"));
        };
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&header[..4]);
        hasher.update(payload);
        if hasher.digest() != u64::from_le_bytes(sum) {
            return (batches, at, Some("record checksum mismatch"));
        }
        let Some(batch) = decode_payload(payload) else {
            return (batches, at, Some("record does not decode"));
        };
        batches.push(batch);
        at += HEADER_BYTES + len;
    }
}

/// Writes zeroes over `from..to` of `file`.
fn write_zeroes(file: &mut dyn StorageFile, from: u64, to: u64) -> std::io::Result<()> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(ZEROES.len() as u64);
        file.write_at(at, ZEROES.get(..n as usize).unwrap_or_default())?;
        at += n;
    }
    Ok(())
}

/// The path of the segment whose first sequence number is `first_seq`.
pub(crate) fn segment_path(wal_dir: &Path, first_seq: u64) -> PathBuf {
    wal_dir.join(format!("{first_seq:020}.log"))
}

/// Segments in `wal_dir`, by first sequence number.
pub(crate) fn list_segments(wal_dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    let entries = fs::read_dir(wal_dir).map_err(|e| Error::io("listing log", wal_dir, e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| Error::io("listing log", wal_dir, e))?
            .path();
        let first = path
            .extension()
            .filter(|e| *e == "log")
            .and_then(|_| path.file_stem()?.to_str()?.parse::<u64>().ok());
        if let Some(first) = first {
            out.push((first, path));
        }
    }
    out.sort();
    Ok(out)
}

/// Most zeroes written ahead of the log's end when it reaches the zeroed part's end. A commit
/// whose records land in space already written (zeroes) changes neither the file's size nor
/// its block map, so its fdatasync writes the data alone: here the disk takes 86-95 us to
/// sync a small record written into zeroes against 122-138 us appended, and a one-document
/// commit went from 152 to 115 us (p50; `docs/benchmarks.md`, "Document store"). Each byte
/// of the log is written twice (as a zero, then as a record), as PostgreSQL does with its
/// zero-filled WAL segments.
///
/// The zeroes grow with use: each time the records reach their end, as many zeroes as the
/// segment holds records are written ahead (so the file doubles), from
/// [`ZEROED_AHEAD_MIN_BYTES`] up to this. A small database thus keeps a few KiB of zeroes,
/// not 1 MiB, and a clean close gives them back ([`WalWriter::give_back_zeroes`]).
const ZEROED_AHEAD_BYTES: u64 = 1 << 20;
/// Fewest zeroes written ahead (a new or empty segment).
const ZEROED_AHEAD_MIN_BYTES: u64 = 16 << 10;

/// Zeroes to write ahead of a segment whose records end at `end`: as many as the records,
/// within [`ZEROED_AHEAD_MIN_BYTES`]..=[`ZEROED_AHEAD_BYTES`].
fn zeroes_ahead_for(end: u64) -> u64 {
    end.clamp(ZEROED_AHEAD_MIN_BYTES, ZEROED_AHEAD_BYTES)
}
/// Records at least this big are written without zeroes after them: a commit that big is
/// bound by the disk's bandwidth, not by the metadata write, and zeroing would double it.
const ZEROED_RECORDS_MAX_BYTES: usize = 256 << 10;
static ZEROES: [u8; 64 << 10] = [0; 64 << 10];

/// The open segment being appended to.
#[derive(Debug)]
pub(crate) struct WalWriter {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    path: PathBuf,
    file: Box<dyn StorageFile>,
    /// Bytes of the segment known to be durable: where the next record goes.
    durable_bytes: u64,
    /// The file holds zeroes from `durable_bytes` up to here (written by this writer), or
    /// `None` if the file cannot be written at an offset (a storage seam that only appends):
    /// records are then appended and each sync also writes the file's new size.
    zeroed_to: Option<u64>,
    /// Whether the segment's folder entry and the zeroes written at open are synced. Not at
    /// open: the first append syncs them ([`WalWriter::append`]), before which the segment
    /// holds no record a crash could lose, so a session that logs nothing (a bulk import
    /// into a new database, then a close) never pays those two syncs.
    synced: bool,
}

impl WalWriter {
    /// Opens (or creates) segment `first_seq`, whose valid length is `valid_bytes` and whose
    /// file holds `file_bytes`: the bytes after the valid ones are kept as zeroes ahead if
    /// `zeroes_after` says they are all zero, else cut. A segment with fewer zeroes ahead
    /// than [`zeroes_ahead_for`] its records gets them now, so that commits do not pay for
    /// the file's growth (best effort: on a full disk the database still opens, and the
    /// first commit reports the error). Neither those zeroes nor the segment's folder entry
    /// are synced here: the first append does it, as it must sync its records anyway
    /// (see [`WalWriter::append`]).
    pub(crate) fn open(
        storage: Arc<dyn Storage>,
        wal_dir: &Path,
        first_seq: u64,
        valid_bytes: u64,
        file_bytes: u64,
        zeroes_after: bool,
    ) -> Result<Self> {
        let path = segment_path(wal_dir, first_seq);
        let mut file = storage
            .open_log(&path)
            .map_err(|e| Error::io("opening log segment", &path, e))?;
        // A file that cannot write at an offset says so for an empty write too.
        let zeroed_to = match file.write_at(valid_bytes, &[]) {
            Ok(()) => Some(valid_bytes),
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => None,
            Err(e) => return Err(Error::io("opening log segment", &path, e)),
        };
        // Whatever follows the valid records goes, unless it is zeroes this log can use.
        let zeroed_to = match zeroed_to {
            Some(_) if zeroes_after => Some(file_bytes.max(valid_bytes)),
            other => {
                if file_bytes > valid_bytes {
                    // The cut is synced before anything else happens: the next checkpoint
                    // makes a new segment and removes this one without syncing the folder,
                    // so a power cut can bring this one back, no longer the last segment,
                    // where its old torn tail is corruption (the database would not open).
                    // The folder needs no sync for it: the cut changes no name.
                    // (`power_loss_recovery.rs`, `a_torn_log_tail_cut_at_open_survives_a_power_cut`.)
                    file.set_len(valid_bytes)
                        .map_err(|e| Error::io("cutting the torn tail of log segment", &path, e))?;
                    file.sync()
                        .map_err(|e| Error::io("syncing log segment", &path, e))?;
                }
                other
            }
        };
        let zeroed_to = zeroed_to.map(|at| {
            let want = valid_bytes + zeroes_ahead_for(valid_bytes);
            if at >= want {
                return at;
            }
            // Not synced: until a record follows them, losing them loses nothing (a segment
            // with no record, or a shorter one, reads the same); the first append's
            // `fdatasync` writes them with its records.
            match write_zeroes(&mut *file, at, want) {
                Ok(()) => want,
                // Back to the valid records; the first commit zeroes ahead (or fails).
                Err(_) => match file.set_len(valid_bytes).and_then(|()| file.sync()) {
                    Ok(()) => valid_bytes,
                    Err(_) => at,
                },
            }
        });
        Ok(WalWriter {
            storage,
            dir: wal_dir.to_path_buf(),
            path,
            file,
            durable_bytes: valid_bytes,
            zeroed_to,
            synced: false,
        })
    }

    /// Writes and fsyncs `records`. On failure the segment is cut back to its durable
    /// length; if that fails too, the error says the log must be reopened.
    ///
    /// The first append to a segment this writer opened also syncs the segment's folder
    /// (its entry, if the segment is new) after the records: the records are durable only
    /// once both are. Its `fdatasync` writes the zeroes the open wrote ahead with them.
    pub(crate) fn append(&mut self, records: &[u8]) -> Result<()> {
        let end = self.durable_bytes + records.len() as u64;
        let written = match self.zeroed_to {
            Some(zeroed_to) => {
                // Zeroes ahead when the records reach past them, unless the records alone
                // are big enough for the size change not to matter.
                let zero_to = if end > zeroed_to && records.len() < ZEROED_RECORDS_MAX_BYTES {
                    end + zeroes_ahead_for(end)
                } else {
                    zeroed_to.max(end)
                };
                self.file
                    .write_at(self.durable_bytes, records)
                    .and_then(|()| write_zeroes(&mut *self.file, zeroed_to.max(end), zero_to))
                    .and_then(|()| self.file.sync_data())
                    .and_then(|()| self.sync_folder_once())
                    .map(|()| Some(zero_to))
            }
            None => self
                .file
                .write_all(records)
                .and_then(|()| self.file.flush())
                .and_then(|()| self.file.sync())
                .and_then(|()| self.sync_folder_once())
                .map(|()| None),
        };
        match written {
            Ok(zeroed_to) => {
                self.durable_bytes = end;
                self.zeroed_to = zeroed_to;
                debug_assert!(self.zeroed_to.is_none_or(|z| z >= self.durable_bytes));
                Ok(())
            }
            Err(e) => {
                // Cut back to the durable records; zeroes are written ahead again later.
                if let Some(z) = self.zeroed_to.as_mut() {
                    *z = self.durable_bytes;
                }
                let cut = self
                    .file
                    .set_len(self.durable_bytes)
                    .and_then(|()| self.file.sync());
                Err(match cut {
                    Ok(()) => Error::io("appending to log segment", &self.path, e),
                    Err(cut_err) => Error::LogPoisoned {
                        path: self.path.clone(),
                        reason: format!("{e}; then cutting the partial write failed: {cut_err}"),
                    },
                })
            }
        }
    }

    /// Syncs the segment's folder the first time (see [`WalWriter::append`]).
    fn sync_folder_once(&mut self) -> std::io::Result<()> {
        if !self.synced {
            self.storage.sync_dir(&self.dir)?;
            self.synced = true;
        }
        Ok(())
    }

    /// Zeroes written ahead of the segment's records.
    pub(crate) fn zeroes_ahead_bytes(&self) -> u64 {
        self.zeroed_to
            .map_or(0, |z| z.saturating_sub(self.durable_bytes))
    }

    /// Gives back the zeroes written ahead (a clean close): cuts the segment to its records.
    /// The next append zeroes ahead again.
    ///
    /// The cut is not synced: it changes no record, only how many zeroes follow them, and
    /// every length between the records and the old end reads the same (records, then
    /// zeroes or nothing: opening stops at the first zero header). A crash before the file
    /// system writes the new length back only leaves some zeroes at rest until the next
    /// clean close; the records were synced when they were appended (`durable_bytes`), and
    /// a later append's `fdatasync` makes the length durable with its data. Syncing here
    /// cost every close one `fsync`.
    pub(crate) fn give_back_zeroes(&mut self) -> Result<()> {
        let Some(zeroed_to) = self.zeroed_to else {
            return Ok(());
        };
        if zeroed_to <= self.durable_bytes {
            return Ok(());
        }
        self.file
            .set_len(self.durable_bytes)
            .map_err(|e| Error::io("giving back the log's zeroes", &self.path, e))?;
        self.zeroed_to = Some(self.durable_bytes);
        Ok(())
    }

    /// Bytes of the segment's file: its records, then the zeroes written ahead of them.
    #[cfg(test)]
    pub(crate) fn file_bytes(&self) -> u64 {
        self.zeroed_to.unwrap_or(self.durable_bytes)
    }

    /// Starts a new segment for records from `first_seq` on. Nothing to do when this one is
    /// that segment and still holds no record, with its zeroes ahead intact (its folder
    /// entry is synced by its first append): say a bulk import into a new database, whose
    /// checkpoint logged nothing. Reopening it would zero and sync it, and sync its folder,
    /// for the same file.
    pub(crate) fn rotate(&mut self, first_seq: u64) -> Result<()> {
        let intact = self
            .zeroed_to
            .is_some_and(|z| z >= zeroes_ahead_for(0) && self.durable_bytes == 0);
        if intact && self.path == segment_path(&self.dir, first_seq) {
            return Ok(());
        }
        let next = WalWriter::open(Arc::clone(&self.storage), &self.dir, first_seq, 0, 0, false)?;
        *self = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexDef;

    fn sample() -> Vec<LoggedOp> {
        vec![
            LoggedOp::Put {
                collection: "books".into(),
                id: b"b1".to_vec(),
                value: Arc::from(&b"\x00doc"[..]),
            },
            LoggedOp::Delete {
                collection: "authors".into(),
                id: b"a9".to_vec(),
            },
            LoggedOp::CreateIndex(IndexDef::new("books", "by_tag", &["tags[]", "year"]).unwrap()),
            LoggedOp::DropIndex {
                collection: "books".into(),
                name: "old".into(),
            },
            LoggedOp::DropCollection {
                collection: "_staging".into(),
            },
            LoggedOp::MergeCollection {
                collection: "_staging".into(),
                into: "books".into(),
            },
        ]
    }

    /// A log of two batches (7 and 8), and the length of the first record.
    fn two_records() -> (Vec<u8>, usize) {
        let mut log = Vec::new();
        encode_batch(&mut log, 7, &sample()).unwrap();
        let first_len = log.len();
        encode_batch(&mut log, 8, &sample()[1..]).unwrap();
        (log, first_len)
    }

    #[test]
    fn zeroes_after_the_records_end_a_segment_cleanly() {
        let (mut log, first_len) = two_records();
        let whole = log.len();
        log.resize(whole + 4096, 0);
        let (batches, valid, why) = read_segment(&log);
        assert_eq!((batches.len(), valid, why), (2, whole, None));
        // A torn second record before the zeroes is damage at its start, as without them.
        let mut torn = log.clone();
        torn[first_len + 20..].fill(0);
        let (batches, valid, why) = read_segment(&torn);
        assert_eq!((batches.len(), valid), (1, first_len));
        assert!(why.is_some());
    }

    /// A checkpoint that logged nothing since the segment opened keeps it, without a sync;
    /// after a record, or to a later first sequence number, it opens the next one.
    #[test]
    fn rotating_an_empty_segment_to_itself_keeps_it_without_syncing() {
        use stele_testkit::faults::{Faults, FaultyStorage, Op};
        let dir = tempfile::tempdir().unwrap();
        let faults = Faults::new()
            .kinds(&[Op::Sync, Op::SyncData, Op::SyncDir, Op::OpenLog])
            .shared();
        let storage = FaultyStorage::with_faults(&faults);
        let mut w = WalWriter::open(Arc::clone(&storage), dir.path(), 1, 0, 0, false).unwrap();
        let opened = faults.ops();
        assert_eq!(
            opened, 1,
            "open the segment (its zeroes and folder are synced by its first append)"
        );
        w.rotate(1).unwrap();
        assert_eq!(faults.ops(), opened, "nothing written or synced");
        assert_eq!(w.file_bytes(), ZEROED_AHEAD_MIN_BYTES);
        // A record in it: the next rotation starts a new segment.
        let mut one = Vec::new();
        encode_batch(&mut one, 1, &sample()).unwrap();
        w.append(&one).unwrap();
        let appended = faults.ops();
        w.rotate(2).unwrap();
        assert!(faults.ops() > appended);
        assert!(segment_path(dir.path(), 2).exists());
        // An empty segment rotated to a later sequence number: a new one too.
        let rotated = faults.ops();
        w.rotate(5).unwrap();
        assert!(faults.ops() > rotated);
        assert!(segment_path(dir.path(), 5).exists());
    }

    #[test]
    fn the_writer_zeroes_ahead_of_small_records_only() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(stele_table::FsStorage);
        let path = segment_path(dir.path(), 1);
        let file_len = || std::fs::metadata(&path).unwrap().len();
        let open = |valid: u64, file: u64, zeroes: bool| {
            WalWriter::open(Arc::clone(&storage), dir.path(), 1, valid, file, zeroes).unwrap()
        };
        // A new segment is zeroed ahead when it opens, and small records land in the zeroes.
        let mut w = open(0, 0, false);
        assert_eq!(file_len(), ZEROED_AHEAD_MIN_BYTES);
        let mut records = Vec::new();
        for seq in 1..=3 {
            let mut one = Vec::new();
            encode_batch(&mut one, seq, &sample()).unwrap();
            w.append(&one).unwrap();
            records.extend_from_slice(&one);
            assert_eq!(file_len(), ZEROED_AHEAD_MIN_BYTES);
            assert_eq!(w.file_bytes(), file_len());
        }
        // A big record goes past the zeroes without writing more.
        let big = vec![LoggedOp::Put {
            collection: "c".into(),
            id: b"big".to_vec(),
            value: Arc::from(vec![7u8; 2 * ZEROED_AHEAD_BYTES as usize]),
        }];
        let mut one = Vec::new();
        encode_batch(&mut one, 4, &big).unwrap();
        w.append(&one).unwrap();
        records.extend_from_slice(&one);
        assert_eq!(file_len(), records.len() as u64);
        // Small again: zeroes ahead again.
        let mut one = Vec::new();
        encode_batch(&mut one, 5, &sample()).unwrap();
        w.append(&one).unwrap();
        records.extend_from_slice(&one);
        let zeroed_len = records.len() as u64 + ZEROED_AHEAD_BYTES;
        assert_eq!(file_len(), zeroed_len);
        drop(w);
        // Reopened: every record, then the zeroes, which are kept.
        let bytes = std::fs::read(&path).unwrap();
        let (batches, valid, why) = read_segment(&bytes);
        assert_eq!((batches.len(), valid, why), (5, records.len(), None));
        assert_eq!(bytes.get(..valid), Some(records.as_slice()));
        let w = open(valid as u64, bytes.len() as u64, true);
        assert_eq!((file_len(), w.file_bytes()), (zeroed_len, zeroed_len));
        drop(w);
        // A torn record in the zeroes: not all zero after the records, so cut, then zeroed
        // ahead again.
        let mut torn = bytes.clone();
        torn[valid + 5..valid + 9].copy_from_slice(b"torn");
        std::fs::write(&path, &torn).unwrap();
        let (_, valid, why) = read_segment(&torn);
        assert_eq!((valid, why.is_some()), (records.len(), true));
        let w = open(valid as u64, torn.len() as u64, false);
        let expected = valid as u64 + ZEROED_AHEAD_BYTES;
        assert_eq!((file_len(), w.file_bytes()), (expected, expected));
        let bytes = std::fs::read(&path).unwrap();
        let (batches, _, why) = read_segment(&bytes);
        assert_eq!((batches.len(), why), (5, None));
    }

    #[test]
    fn round_trip_and_torn_tails() {
        let (log, first_len) = two_records();
        let (batches, valid, why) = read_segment(&log);
        assert_eq!(valid, log.len());
        assert_eq!(why, None);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].seq, 7);
        assert_eq!(batches[0].ops, sample());
        // Every truncation keeps exactly the whole records before the cut.
        for len in 0..log.len() {
            let (batches, valid, _) = read_segment(&log[..len]);
            let whole = usize::from(len >= first_len);
            assert_eq!(batches.len(), whole, "cut at {len}");
            assert_eq!(valid, if whole == 1 { first_len } else { 0 });
        }
        // Every flipped byte of the last record drops that record only.
        for i in first_len..log.len() {
            let mut bad = log.clone();
            bad[i] ^= 0x20;
            let (batches, valid, why) = read_segment(&bad);
            assert_eq!((batches.len(), valid), (1, first_len), "byte {i}");
            assert!(why.is_some());
        }
    }
}
