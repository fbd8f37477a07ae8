//! Reading a table: open (footer and index checked), point reads, ranks, iteration.

mod iter;
mod key;
mod mmap;

pub use iter::{Cursor, Iter};
pub use key::Key;
pub use mmap::{Access, MmapBytes};

use crate::block::{self, BlockRef};
use crate::error::{Error, Part, Result};
use crate::footer::{FOOTER_BYTES, Footer};
use crate::index::Index;
use crate::prefetch::prefetch;
use std::ops::{Bound, RangeBounds};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Candidate blocks of a get whose tails are prefetched (see `Table::prefetch_tails`).
const PREFETCH_CANDIDATES: usize = 8;
/// The last cache line of a block (blocks end on a line boundary in a map): its trailer and
/// restart offsets, which a get reads first.
const TAIL_PREFETCH_BYTES: usize = 64;

/// A key and its value. Values always borrow the table; keys borrow it when stored whole
/// (restart points: every `restart_interval`-th key) and are rebuilt otherwise (see [`Key`]).
pub type Entry<'t> = (Key<'t>, &'t [u8]);

/// Facts about an open table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableStats {
    /// Number of entries.
    pub entries: u64,
    /// Number of data blocks.
    pub blocks: u64,
    /// Block size in bytes.
    pub block_size_bytes: u32,
    /// Restart interval in entries.
    pub restart_interval: u32,
    /// Size of the file (or buffer) in bytes.
    pub file_bytes: u64,
    /// Size of the index in bytes.
    pub index_bytes: u64,
    /// Sum of the key lengths.
    pub raw_key_bytes: u64,
    /// Sum of the value lengths.
    pub raw_value_bytes: u64,
}

/// An open, immutable sorted table. `Send + Sync`: share it between threads by reference
/// or `Arc`.
///
/// Generic over its bytes: [`Table::open`] maps a file ([`MmapBytes`]), and
/// [`Table::from_bytes`] reads any `AsRef<[u8]>`, such as a `Vec<u8>`.
///
/// Integrity: the footer and index checksums are verified at open; a data block's checksum
/// is verified the first time the block is read (one bit per block remembers it), so warm
/// reads pay nothing and every byte returned was checked once. Checking on every read would
/// cost a hash of the block per get: about 430 ns per 4 KiB block on the project's 2-core
/// machine (`table_perf` example, "verify every block once"), more than a warm get itself.
/// The trade-off: a block that rots on disk *after* it was verified in this process (and
/// was evicted and re-read) is not re-checked; `verify_all` on a fresh open re-checks all.
///
/// Zero-copy: values are always slices of the file. Keys stored whole (restart points,
/// every `restart_interval`-th key of a block, and keys that share nothing with the
/// previous one) are returned borrowed; other keys are rebuilt from their shared prefix,
/// without allocation up to 30 bytes (see [`Key`]). [`Cursor`] rebuilds keys in one buffer it lends
/// out, so a scan allocates nothing per entry.
pub struct Table<B = MmapBytes> {
    bytes: B,
    footer: Footer,
    index: Index,
    verified: Box<[AtomicU64]>,
    /// The largest key, read once when a range first needs it (`None`: the table is
    /// empty, or it could not be read, and ranges search as usual).
    last_key: OnceLock<Option<Box<[u8]>>>,
}

impl<B: AsRef<[u8]>> std::fmt::Debug for Table<B> {
    // Not derived: it would print every byte of the table.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<B: AsRef<[u8]>> Table<B> {
    /// Reads a table from bytes in memory, checking the footer and index.
    pub fn from_bytes(bytes: B) -> Result<Self> {
        Self::from_bytes_kind(bytes, false)
    }

    pub(crate) fn from_bytes_kind(bytes: B, list: bool) -> Result<Self> {
        let all = bytes.as_ref();
        let footer = Footer::decode(all)?;
        if footer.is_list() != list {
            let name = |l: bool| if l { "list" } else { "table" };
            return Err(Error::WrongKind {
                expected: name(list),
                found: name(footer.is_list()),
            });
        }
        let start = usize::try_from(footer.index_offset)
            .map_err(|_| Error::corrupt(Part::Footer, "index offset too large"))?;
        let index_bytes = all
            .get(start..all.len() - FOOTER_BYTES)
            .ok_or_else(|| Error::corrupt(Part::Footer, "index outside the file"))?;
        let computed = xxhash_rust::xxh3::xxh3_64(index_bytes);
        if computed != footer.index_checksum {
            return Err(Error::ChecksumMismatch {
                part: Part::Index,
                stored: footer.index_checksum,
                computed,
            });
        }
        let index = Index::parse(
            index_bytes,
            footer.block_count,
            footer.entry_count,
            footer.block_size,
            footer.index_offset,
            !list,
        )?;
        let words = index.block_count().div_ceil(64);
        let verified = (0..words).map(|_| AtomicU64::new(0)).collect();
        Ok(Table {
            bytes,
            footer,
            index,
            verified,
            last_key: OnceLock::new(),
        })
    }

    /// For a diff table (see [`TableOptions::diff`](crate::TableOptions::diff)): the table it
    /// applies to, the resulting length and whether keys are positions. `None` otherwise.
    pub fn diff_info(&self) -> Option<crate::DiffInfo> {
        self.footer.diff()
    }

    /// The bytes the table reads from.
    pub fn bytes(&self) -> &B {
        &self.bytes
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.footer.entry_count
    }

    /// True if the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Facts about the table.
    pub fn stats(&self) -> TableStats {
        TableStats {
            entries: self.footer.entry_count,
            blocks: self.footer.block_count,
            block_size_bytes: self.footer.block_size,
            restart_interval: self.footer.restart_interval,
            file_bytes: self.bytes.as_ref().len() as u64,
            index_bytes: self.footer.index_len,
            raw_key_bytes: self.footer.raw_key_bytes,
            raw_value_bytes: self.footer.raw_value_bytes,
        }
    }

    /// Data block `b`, its checksum verified on first use.
    pub(crate) fn block(&self, b: usize) -> Result<BlockRef<'_>> {
        let (start, end) = self
            .index
            .block_range(b)
            .ok_or_else(|| Error::corrupt(Part::Index, "block number out of range"))?;
        let part = Part::Block {
            number: b as u64,
            offset: start,
            len: end - start,
        };
        let bytes = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.bytes.as_ref().get(s..e))
            .ok_or_else(|| Error::corrupt(part, "block outside the file"))?;
        // The trailer ends the block and the restart hints and offsets sit just before it,
        // usually across the last two cache lines: ask for the second-to-last one now, so
        // it arrives together with the trailer's.
        if let Some(tail) = bytes.get(bytes.len().saturating_sub(96)..) {
            prefetch(tail);
        }
        let (word, bit) = (b / 64, 1u64 << (b % 64));
        let flag = self.verified.get(word);
        // Relaxed is enough: the bytes never change, so a thread that sees the bit set by
        // another merely skips a check whose outcome is already known.
        if flag.is_none_or(|w| w.load(Ordering::Relaxed) & bit == 0) {
            block::verify(bytes, part)?;
            if let Some(w) = flag {
                w.fetch_or(bit, Ordering::Relaxed);
            }
        }
        BlockRef::parse(
            bytes,
            self.footer.restart_interval,
            self.index.entries_in(b),
            part,
        )
    }

    /// Starts loading the last cache line (trailer, restart offsets) of the
    /// candidate `blocks` of a get while the index search picks one of them: the block's
    /// tail is otherwise a miss that waits for the whole index search. Only where block
    /// offsets are known without the index's marks, and for a few blocks (the search
    /// usually leaves about 8).
    #[inline]
    fn prefetch_tails(&self, blocks: std::ops::Range<usize>) {
        if !self.index.one_unit_blocks() || blocks.len() > 2 * PREFETCH_CANDIDATES {
            return;
        }
        let size = self.footer.block_size as usize;
        let all = self.bytes.as_ref();
        for b in blocks {
            // The last line only (trailer, restart offsets, the last hints): `block` asks for
            // the line before it once the block is chosen. Asking for both lines of every
            // candidate was a little slower (warm get medians on 14M keys, 6 alternating runs
            // each at load 5-8: 1113-1302 ns, middle 1203, against 1012-1372 ns, middle
            // 1138, with one line), as 9 more lines per get crowd the caches.
            let end = (b + 1).saturating_mul(size);
            if let Some(tail) = all.get(end.saturating_sub(TAIL_PREFETCH_BYTES)..end) {
                prefetch(tail);
            }
        }
    }

    /// Checks the checksum of every data block (a scrub); returns the first failure.
    pub fn verify_all(&self) -> Result<()> {
        for b in 0..self.index.block_count() {
            self.block(b)?;
        }
        Ok(())
    }

    pub(crate) fn index(&self) -> &Index {
        &self.index
    }

    pub(crate) fn restart_interval(&self) -> u32 {
        self.footer.restart_interval
    }

    /// The value stored under `key`, borrowed from the table.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        if self.is_empty() {
            return Ok(None);
        }
        let b = self
            .index
            .block_for_key_from(0, key, |blocks| self.prefetch_tails(blocks));
        Ok(self.block(b)?.search(key)?.1)
    }

    /// True if `key` is in the table.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Looks up a batch of keys. Any order works; ascending order is fastest, because each
    /// lookup then searches only the index from the previous key's block on.
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<&[u8]>>> {
        let mut out = Vec::with_capacity(keys.len());
        if self.is_empty() {
            out.resize(keys.len(), None);
            return Ok(out);
        }
        let mut prev: Option<(&[u8], usize, BlockRef<'_>)> = None;
        for key in keys {
            let key = key.as_ref();
            let from = match &prev {
                Some((p, b, _)) if *p <= key => *b,
                _ => 0,
            };
            let b = self.index.block_for_key_from(from, key, |_| {});
            let block = match prev {
                Some((_, pb, blk)) if pb == b => blk,
                _ => self.block(b)?,
            };
            out.push(block.search(key)?.1);
            prev = Some((key, b, block));
        }
        Ok(out)
    }

    /// Number of entries whose key is smaller than `key` (the position `key` has or would have).
    pub fn rank(&self, key: &[u8]) -> Result<u64> {
        if self.is_empty() {
            return Ok(0);
        }
        let b = self.index.block_for_key(key);
        let (i, _) = self.block(b)?.search(key)?;
        Ok(self.index.entries_before(b) + u64::from(i))
    }

    /// The entry at position `i` (0-based, in key order); `None` past the end.
    pub fn nth(&self, i: u64) -> Result<Option<Entry<'_>>> {
        if i >= self.len() {
            return Ok(None);
        }
        let mut key_buf = Vec::new();
        self.entry_at(i, &mut key_buf).map(Some)
    }

    /// Decodes the entry at position `pos < len`, using `key_buf` for the key.
    pub(crate) fn entry_at(&self, pos: u64, key_buf: &mut Vec<u8>) -> Result<Entry<'_>> {
        let b = self.index.block_for_pos(pos);
        let block = self.block(b)?;
        let local = pos - self.index.entries_before(b);
        let local = u32::try_from(local)
            .map_err(|_| Error::corrupt(block.part(), "entry position out of range"))?;
        let mut offset = block.seek_index(local, key_buf)?;
        let raw = block.decode_into(&mut offset, key_buf)?;
        let key = if raw.shared == 0 {
            Key::borrowed(raw.suffix)
        } else {
            Key::copied(key_buf)
        };
        Ok((key, raw.value))
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<Entry<'_>>> {
        self.nth(0)
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<Entry<'_>>> {
        match self.len().checked_sub(1) {
            Some(i) => self.nth(i),
            None => Ok(None),
        }
    }

    /// All entries in key order; double-ended (`.rev()` walks backwards).
    pub fn iter(&self) -> Iter<'_, B> {
        Iter::new(self, 0, self.len())
    }

    /// Entries whose keys fall in `range`, e.g. `t.range(&b"a"[..]..&b"c"[..])` or `t.range(..)`.
    pub fn range<'k, R: RangeBounds<&'k [u8]>>(&self, range: R) -> Iter<'_, B> {
        // A range starting past the largest key is empty: no search (the range of an
        // index's loose entries over a base that holds only its blocks asked for two).
        if let Bound::Included(k) | Bound::Excluded(k) = range.start_bound()
            && self.last_key().is_some_and(|last| *k > last)
        {
            return Iter::new(self, self.len(), self.len());
        }
        let lo = match range.start_bound() {
            Bound::Unbounded => Ok(0),
            Bound::Included(k) => self.rank(k),
            Bound::Excluded(k) => self.rank_after(k),
        };
        let hi = match range.end_bound() {
            Bound::Unbounded => Ok(self.len()),
            Bound::Included(k) => self.rank_after(k),
            Bound::Excluded(k) => self.rank(k),
        };
        match (lo, hi) {
            (Ok(lo), Ok(hi)) => Iter::new(self, lo, hi.max(lo)),
            (Err(e), _) | (_, Err(e)) => Iter::failed(self, e),
        }
    }

    /// Entries whose keys start with `prefix`.
    pub fn prefix(&self, prefix: &[u8]) -> Iter<'_, B> {
        let lo = self.rank(prefix);
        let hi = match prefix_successor(prefix) {
            Some(end) => self.rank(&end),
            None => Ok(self.len()),
        };
        match (lo, hi) {
            (Ok(lo), Ok(hi)) => Iter::new(self, lo, hi.max(lo)),
            (Err(e), _) | (_, Err(e)) => Iter::failed(self, e),
        }
    }

    /// The largest key, read once (a table never changes); `None` if the table is empty or
    /// its last entry does not read (the caller then searches, and meets the error there).
    fn last_key(&self) -> Option<&[u8]> {
        self.last_key
            .get_or_init(|| match self.last() {
                Ok(Some((key, _))) => Some(Box::from(&*key)),
                _ => None,
            })
            .as_deref()
    }

    /// Number of entries whose key is `<= key`.
    fn rank_after(&self, key: &[u8]) -> Result<u64> {
        if self.is_empty() {
            return Ok(0);
        }
        let b = self.index.block_for_key(key);
        let (i, found) = self.block(b)?.search(key)?;
        Ok(self.index.entries_before(b) + u64::from(i) + u64::from(found.is_some()))
    }

    /// A lending cursor over all entries: no allocation per entry (keys are rebuilt in a
    /// buffer the cursor owns). The fastest way to scan.
    pub fn cursor(&self) -> Cursor<'_, B> {
        Cursor::new(self, 0, self.len())
    }
}

/// The smallest byte string greater than every string starting with `prefix`
/// (`None` if there is none: the prefix is empty or all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}
