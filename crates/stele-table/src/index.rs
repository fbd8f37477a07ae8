//! The block index: one record per data block, read whole into memory at open.
//!
//! On disk, after the last data block, for each block in order:
//!
//! ```text
//! varint units (block length / block size)   varint entry count
//! varint separator length                    separator bytes
//! ```
//!
//! The separator of block 0 is empty; the separator of block i > 0 is the shortest prefix
//! of its first key that sorts after the last key of block i - 1. So a key can only be in
//! the last block whose separator is `<=` it, and separators are much shorter than keys.

use crate::error::{Error, Part, Result};
use crate::prefix::{le_with_prefix, prefix8};
use crate::varint;

/// Separator prefixes per cache line of the in-memory search array, and the stride of the
/// upper sample: a search reads the small upper sample, then exactly one 64-byte line.
const LINE: usize = 8;

/// One cache line of separator prefixes (aligned, so a search never straddles two lines).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; LINE]);

/// Asks for every cache line of `items` (a few lines at most, in a search).
#[inline]
fn prefetch_slice<T>(items: &[T]) {
    let bytes = std::mem::size_of_val(items);
    let start = items.as_ptr().cast::<u8>();
    let mut at = 0;
    while at < bytes {
        // `wrapping_add` keeps this free of unsafe: the address is only a hint.
        crate::prefetch::prefetch_ptr(start.wrapping_add(at));
        at += 64;
    }
    crate::prefetch::prefetch_ptr(start.wrapping_add(bytes.saturating_sub(1)));
}

/// Builds the on-disk index while blocks are written.
#[derive(Debug, Default)]
pub(crate) struct IndexBuilder {
    bytes: Vec<u8>,
    blocks: u64,
}

/// Shortest prefix of `first` that sorts after `prev_last` (requires `prev_last < first`).
pub(crate) fn separator<'k>(prev_last: &[u8], first: &'k [u8]) -> &'k [u8] {
    let lcp = prev_last
        .iter()
        .zip(first)
        .take_while(|(a, b)| a == b)
        .count();
    first.get(..(lcp + 1).min(first.len())).unwrap_or(first)
}

impl IndexBuilder {
    pub(crate) fn add(&mut self, separator: &[u8], units: u64, entries: u64) {
        varint::put(&mut self.bytes, units);
        varint::put(&mut self.bytes, entries);
        varint::put(&mut self.bytes, separator.len() as u64);
        self.bytes.extend_from_slice(separator);
        self.blocks += 1;
    }

    pub(crate) fn blocks(&self) -> u64 {
        self.blocks
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// The parsed index, kept in memory by an open table.
#[derive(Debug)]
pub(crate) struct Index {
    seps: Vec<u8>,
    /// `prefix8` of each separator, `LINE` to a cache line: most search steps compare these
    /// alone.
    sep_prefixes: Vec<Line>,
    /// `prefix8` of each separator's bytes after the first 8: settles most ties of the first
    /// prefix without reaching the separator bytes.
    sep_next: Vec<u64>,
    /// The first prefix of each line of `sep_prefixes`: small enough to stay in the L1/L2
    /// cache, it narrows a search to one line (a few on ties).
    upper: Vec<u64>,
    /// Every `LINE`-th entry of `upper` (a few KiB, in L1): narrows a search of `upper` to
    /// one line of it.
    top: Vec<u64>,
    /// `sep_ends[b]` is the end of block b's separator in `seps`.
    sep_ends: Vec<usize>,
    /// For each block, its offset and the entries before it; one extra element: the end of
    /// the last block and the total. Kept together so a get finds both in one cache line.
    marks: Vec<[u64; 2]>,
    /// `lookup[p >> shift]` is the block holding position `p << shift`.
    lookup: Vec<u32>,
    shift: u32,
    /// True when every block is one `block_size` unit long (the usual case): block `b` then
    /// starts at `b * block_size`, known before `marks` is read.
    one_unit_blocks: bool,
}

impl Index {
    /// Parses and validates the index bytes (whose checksum the caller verified).
    pub(crate) fn parse(
        bytes: &[u8],
        block_count: u64,
        entry_count: u64,
        block_size: u32,
        data_end: u64,
        keys_sorted: bool,
    ) -> Result<Index> {
        let bad = |reason| Error::corrupt(Part::Index, reason);
        let cap = usize::try_from(block_count)
            .ok()
            .filter(|&c| c <= bytes.len())
            .ok_or_else(|| bad("block count larger than the index"))?;
        let mut idx = Index {
            seps: Vec::new(),
            sep_prefixes: Vec::with_capacity(cap.div_ceil(LINE)),
            sep_next: Vec::with_capacity(cap),
            upper: Vec::new(),
            top: Vec::new(),
            sep_ends: Vec::with_capacity(cap),
            marks: Vec::with_capacity(cap + 1),
            lookup: Vec::new(),
            shift: 0,
            one_unit_blocks: true,
        };
        let (mut pos, mut offset, mut cum) = (0usize, 0u64, 0u64);
        let mut prev_sep: Option<(usize, usize)> = None;
        for b in 0..block_count {
            let units = varint::get(bytes, &mut pos).ok_or_else(|| bad("truncated record"))?;
            let count = varint::get(bytes, &mut pos).ok_or_else(|| bad("truncated record"))?;
            let sep_len = varint::get(bytes, &mut pos)
                .and_then(|l| usize::try_from(l).ok())
                .ok_or_else(|| bad("truncated record"))?;
            let sep_end = pos
                .checked_add(sep_len)
                .ok_or_else(|| bad("separator past the end"))?;
            let sep = bytes
                .get(pos..sep_end)
                .ok_or_else(|| bad("separator past the end"))?;
            pos = sep_end;
            if units == 0 || count == 0 {
                return Err(bad("empty block record"));
            }
            idx.one_unit_blocks &= units == 1;
            if keys_sorted {
                let ok = match prev_sep {
                    None => sep.is_empty(),
                    Some((s, e)) => idx.seps.get(s..e).is_some_and(|p| p < sep),
                };
                if !ok || (b > 0 && sep.is_empty()) {
                    return Err(bad("separators out of order"));
                }
            }
            let start = idx.seps.len();
            idx.seps.extend_from_slice(sep);
            let b_usize = idx.sep_ends.len();
            if b_usize.is_multiple_of(LINE) {
                idx.sep_prefixes.push(Line([u64::MAX; LINE]));
            }
            if let Some(slot) = idx
                .sep_prefixes
                .last_mut()
                .and_then(|l| l.0.get_mut(b_usize % LINE))
            {
                *slot = prefix8(sep);
            }
            idx.sep_next.push(prefix8(sep.get(8..).unwrap_or_default()));
            prev_sep = Some((start, idx.seps.len()));
            idx.sep_ends.push(idx.seps.len());
            idx.marks.push([offset, cum]);
            offset = units
                .checked_mul(u64::from(block_size))
                .and_then(|l| l.checked_add(offset))
                .ok_or_else(|| bad("block lengths overflow"))?;
            cum = cum
                .checked_add(count)
                .ok_or_else(|| bad("entry counts overflow"))?;
        }
        if pos != bytes.len() {
            return Err(bad("trailing bytes after the last record"));
        }
        if offset != data_end {
            return Err(bad("blocks do not end where the index starts"));
        }
        if cum != entry_count {
            return Err(bad("entry counts do not add up to the footer's"));
        }
        idx.marks.push([offset, cum]);
        idx.upper = idx.sep_prefixes.iter().map(|l| l.0[0]).collect();
        idx.top = idx.upper.iter().step_by(LINE).copied().collect();
        idx.build_lookup();
        Ok(idx)
    }

    fn build_lookup(&mut self) {
        let blocks = self.sep_ends.len() as u64;
        let total = self.entries_before(self.block_count());
        if blocks == 0 || total == 0 {
            return;
        }
        // One slot per block on average: slot width = entries per block, rounded to a power of two.
        let per_block = (total / blocks).max(1);
        self.shift = 63 - per_block.leading_zeros();
        let slots = (total >> self.shift) + 1;
        let mut b = 0usize;
        self.lookup.reserve(slots as usize);
        for slot in 0..slots {
            let p = slot << self.shift;
            while self.marks.get(b + 1).is_some_and(|m| m[1] <= p) && b + 1 < self.sep_ends.len() {
                b += 1;
            }
            self.lookup.push(b as u32);
        }
    }

    #[inline]
    pub(crate) fn block_count(&self) -> usize {
        self.sep_ends.len()
    }

    /// Byte range of block `b` in the file.
    #[inline]
    pub(crate) fn block_range(&self, b: usize) -> Option<(u64, u64)> {
        Some((self.marks.get(b)?[0], self.marks.get(b + 1)?[0]))
    }

    /// Entries before block `b` (`b == block_count` gives the total).
    #[inline]
    pub(crate) fn entries_before(&self, b: usize) -> u64 {
        self.marks.get(b).map_or(0, |m| m[1])
    }

    /// Number of entries in block `b`.
    #[inline]
    pub(crate) fn entries_in(&self, b: usize) -> u64 {
        self.entries_before(b + 1)
            .saturating_sub(self.entries_before(b))
    }

    fn sep(&self, b: usize) -> &[u8] {
        let start = if b == 0 {
            0
        } else {
            self.sep_ends.get(b - 1).copied().unwrap_or(0)
        };
        let end = self.sep_ends.get(b).copied().unwrap_or(0);
        self.seps.get(start..end).unwrap_or_default()
    }

    /// The only block that can hold `key`.
    pub(crate) fn block_for_key(&self, key: &[u8]) -> usize {
        self.block_for_key_from(0, key, |_| {})
    }

    /// True when block `b` starts at `b * block_size` for every `b` (see `one_unit_blocks`).
    #[inline]
    pub(crate) fn one_unit_blocks(&self) -> bool {
        self.one_unit_blocks
    }

    /// Like `block_for_key`, searching only blocks `from..` (for ascending batches).
    /// `candidates` is called with the few blocks the search narrowed to before it reads
    /// their separators, so the caller can start loading them meanwhile.
    pub(crate) fn block_for_key_from(
        &self,
        from: usize,
        key: &[u8],
        candidates: impl FnOnce(std::ops::Range<usize>),
    ) -> usize {
        let key_prefix = prefix8(key);
        // Coarse bounds from the first prefix of each line alone: a block whose separator
        // prefix is smaller than the key's sorts before the key, one whose prefix is larger
        // after it. Usually this leaves one line of `sep_prefixes`.
        let below = match self.top.partition_point(|&p| p < key_prefix) {
            0 => 0,
            t => {
                // Line t - 1 of `upper` starts below the key and line t (if any) does not.
                let start = (t - 1) * LINE;
                let line = self
                    .upper
                    .get(start..(start + LINE).min(self.upper.len()))
                    .unwrap_or_default();
                start + line.partition_point(|&p| p < key_prefix)
            }
        };
        let mut not_above = below;
        while self.upper.get(not_above).is_some_and(|&p| p <= key_prefix) {
            not_above += 1;
        }
        let lo_block = below.saturating_sub(1) * LINE;
        let hi_block = (not_above * LINE).min(self.block_count());
        let (mut lo, mut hi) = (lo_block.max(from), hi_block.max(from));
        // What the steps below read, one dependent miss after another otherwise: the tie
        // breakers of these blocks' separators and their offsets and counts.
        if let Some(next) = self.sep_next.get(lo..hi) {
            prefetch_slice(next);
        }
        if let Some(marks) = self.marks.get(lo..=hi) {
            prefetch_slice(marks);
        }
        candidates(lo.saturating_sub(1).max(from)..hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.sep_le(mid, key_prefix, key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.saturating_sub(1).max(from)
    }

    /// Separator of block `b` `<=` `key` (`key_prefix` is its `prefix8`).
    #[inline]
    fn sep_le(&self, b: usize, key_prefix: u64, key: &[u8]) -> bool {
        let sp = self
            .sep_prefixes
            .get(b / LINE)
            .map_or(u64::MAX, |l| l.0[b % LINE]);
        if sp != key_prefix {
            return sp < key_prefix;
        }
        let sn = self.sep_next.get(b).copied().unwrap_or(0);
        let kn = prefix8(key.get(8..).unwrap_or_default());
        le_with_prefix(sn, self.sep(b), kn, key)
    }

    /// The block holding global position `pos` (`pos < total`): O(1) for typical tables
    /// through the lookup array, a bounded binary search otherwise.
    #[inline]
    pub(crate) fn block_for_pos(&self, pos: u64) -> usize {
        let slot = (pos >> self.shift) as usize;
        let mut b = self.lookup.get(slot).copied().unwrap_or(0) as usize;
        for _ in 0..8 {
            if self.marks.get(b + 1).is_some_and(|m| m[1] <= pos) {
                b += 1;
            } else {
                return b;
            }
        }
        // Many small blocks in this slot (large values): binary search the rest.
        let hi = self
            .lookup
            .get(slot + 1)
            .map_or(self.block_count(), |&h| h as usize + 1)
            .min(self.block_count());
        let marks = self.marks.get(b..hi).unwrap_or_default();
        b + marks.partition_point(|m| m[1] <= pos).saturating_sub(1)
    }
}
