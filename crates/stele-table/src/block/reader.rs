//! Decoding one data block. Every access is bounds-checked: a damaged block yields
//! `Error::Corrupt` naming it, never a panic.

use super::builder::hint;
use super::{FLAG_WIDE_RESTARTS, HINT_BYTES, NIBBLE_EXT, TRAILER_BYTES, VARIABLE_VALUES};
use crate::error::{Error, Part, Result};
use crate::prefetch::prefetch;
use crate::varint;
use std::cmp::Ordering;
use xxhash_rust::xxh3::xxh3_64;

/// One decoded entry; the key is `key_buf[..shared] + suffix`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawEntry<'a> {
    pub shared: usize,
    pub suffix: &'a [u8],
    pub value: &'a [u8],
}

/// A parsed view of one data block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockRef<'a> {
    entries: &'a [u8],
    hints: &'a [u8],
    restarts: &'a [u8],
    prefix_len: usize,
    wide: bool,
    count: u32,
    fixed_value_len: Option<u32>,
    interval: u32,
    part: Part,
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

/// Compares `key` with `target`, both known to share their first `skip` bytes: returns
/// their common prefix length and the order of `key` relative to `target`.
#[inline]
fn compare_from(key: &[u8], target: &[u8], skip: usize) -> (usize, Ordering) {
    let (k, t) = (
        key.get(skip..).unwrap_or_default(),
        target.get(skip..).unwrap_or_default(),
    );
    let m = k.iter().zip(t).take_while(|(a, b)| a == b).count();
    let ord = match (k.get(m), t.get(m)) {
        (Some(a), Some(b)) => a.cmp(b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    };
    (skip + m, ord)
}

/// Checks the block's checksum.
pub(crate) fn verify(block: &[u8], part: Part) -> Result<()> {
    let Some(body_len) = block.len().checked_sub(8) else {
        return Err(Error::corrupt(part, "block shorter than its checksum"));
    };
    let (body, tail) = block.split_at(body_len);
    let mut a = [0u8; 8];
    a.copy_from_slice(tail);
    let stored = u64::from_le_bytes(a);
    let computed = xxh3_64(body);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            part,
            stored,
            computed,
        });
    }
    Ok(())
}

impl<'a> BlockRef<'a> {
    /// Parses the trailer. `expected_count` comes from the index and must match.
    #[inline]
    pub(crate) fn parse(
        block: &'a [u8],
        interval: u32,
        expected_count: u64,
        part: Part,
    ) -> Result<Self> {
        let bad = |reason| Error::corrupt(part, reason);
        let t = block
            .len()
            .checked_sub(TRAILER_BYTES)
            .ok_or_else(|| bad("block shorter than its trailer"))?;
        let entries_len = le_u32(block, t).ok_or_else(|| bad("trailer unreadable"))? as usize;
        let count = le_u32(block, t + 4).ok_or_else(|| bad("trailer unreadable"))?;
        let fixed = le_u32(block, t + 8).ok_or_else(|| bad("trailer unreadable"))?;
        let prefix_len = le_u32(block, t + 12).ok_or_else(|| bad("trailer unreadable"))? as usize;
        let flags = *block.get(t + 16).ok_or_else(|| bad("trailer unreadable"))?;
        if u64::from(count) != expected_count {
            return Err(bad("entry count differs from the index"));
        }
        if count == 0 {
            return Err(bad("empty block"));
        }
        if flags & !FLAG_WIDE_RESTARTS != 0 {
            return Err(bad("unknown block flags"));
        }
        let wide = flags & FLAG_WIDE_RESTARTS != 0;
        let restart_count = count.div_ceil(interval) as usize;
        let width = if wide { 4 } else { 2 };
        let restarts_start = restart_count
            .checked_mul(width)
            .and_then(|r| t.checked_sub(r))
            .ok_or_else(|| bad("entries and restarts overflow the block"))?;
        let hints_start = restart_count
            .checked_mul(HINT_BYTES)
            .and_then(|h| restarts_start.checked_sub(h))
            .filter(|&start| start >= entries_len)
            .ok_or_else(|| bad("entries and restart hints overflow the block"))?;
        let entries = block
            .get(..entries_len)
            .ok_or_else(|| bad("entries overflow the block"))?;
        let restarts = block
            .get(restarts_start..t)
            .ok_or_else(|| bad("restarts overflow the block"))?;
        let hints = block
            .get(hints_start..restarts_start)
            .ok_or_else(|| bad("restart hints overflow the block"))?;
        Ok(BlockRef {
            entries,
            hints,
            restarts,
            prefix_len,
            wide,
            count,
            fixed_value_len: (fixed != VARIABLE_VALUES).then_some(fixed),
            interval,
            part,
        })
    }

    #[inline]
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    #[inline]
    pub(crate) fn part(&self) -> Part {
        self.part
    }

    fn bad(&self, reason: &'static str) -> Error {
        Error::corrupt(self.part, reason)
    }

    fn restart_count(&self) -> usize {
        self.count.div_ceil(self.interval) as usize
    }

    #[inline]
    fn restart_offset(&self, r: usize) -> Result<usize> {
        let v = if self.wide {
            le_u32(self.restarts, r * 4)
        } else {
            self.restarts
                .get(r * 2..r * 2 + 2)
                .and_then(|s| s.try_into().ok())
                .map(|s| u32::from(u16::from_le_bytes(s)))
        };
        v.map(|v| v as usize)
            .ok_or_else(|| self.bad("restart offset out of range"))
    }

    /// Decodes the entry starting at `*pos`, advancing `*pos` past it.
    #[inline]
    pub(crate) fn decode(&self, pos: &mut usize) -> Result<RawEntry<'a>> {
        match self.decode_opt(pos) {
            Some(e) => Ok(e),
            None => Err(self.bad_entry()),
        }
    }

    #[cold]
    fn bad_entry(&self) -> Error {
        self.bad("entry lengths overrun the block")
    }

    /// The decoding itself; `None` on any inconsistency (kept free of error construction so
    /// the hot path stays small).
    #[inline(always)]
    fn decode_opt(&self, pos: &mut usize) -> Option<RawEntry<'a>> {
        let e = self.entries;
        let mut p = *pos;
        let h = *e.get(p)?;
        p += 1;
        let mut shared = usize::from(h >> 4);
        let mut unshared = usize::from(h & 0x0f);
        if shared == usize::from(NIBBLE_EXT) {
            shared = shared.checked_add(usize::try_from(varint::get(e, &mut p)?).ok()?)?;
        }
        if unshared == usize::from(NIBBLE_EXT) {
            unshared = unshared.checked_add(usize::try_from(varint::get(e, &mut p)?).ok()?)?;
        }
        let value_len = match self.fixed_value_len {
            Some(l) => l as usize,
            None => usize::try_from(varint::get(e, &mut p)?).ok()?,
        };
        let key_end = p.checked_add(unshared)?;
        let suffix = e.get(p..key_end)?;
        let value_end = key_end.checked_add(value_len)?;
        let value = e.get(key_end..value_end)?;
        *pos = value_end;
        Some(RawEntry {
            shared,
            suffix,
            value,
        })
    }

    /// Decodes the entry at `*pos` and applies it to `key_buf` (which holds the previous
    /// key). Returns the value.
    #[inline]
    pub(crate) fn decode_into(
        &self,
        pos: &mut usize,
        key_buf: &mut Vec<u8>,
    ) -> Result<RawEntry<'a>> {
        let at_start = *pos;
        let raw = self.decode(pos)?;
        if raw.shared > key_buf.len() {
            return Err(self.bad("shared prefix longer than the previous key"));
        }
        if raw.shared > 0 && at_start == 0 {
            return Err(self.bad("first entry shares a prefix"));
        }
        key_buf.truncate(raw.shared);
        key_buf.extend_from_slice(raw.suffix);
        Ok(raw)
    }

    #[inline]
    fn hint_at(&self, r: usize) -> Result<u32> {
        let at = r * HINT_BYTES;
        self.hints
            .get(at..at + HINT_BYTES)
            .and_then(|h| h.try_into().ok())
            .map(u32::from_be_bytes)
            .ok_or_else(|| self.bad("restart hint out of range"))
    }

    /// The whole key stored at restart point `r` (restart keys share no prefix).
    #[inline]
    fn restart_key(&self, r: usize) -> Result<&'a [u8]> {
        let mut pos = self.restart_offset(r)?;
        let raw = self.decode(&mut pos)?;
        if raw.shared != 0 {
            return Err(self.bad("restart entry shares a prefix"));
        }
        Ok(raw.suffix)
    }

    /// Positions at entry `index` (0-based, `< count`): returns its byte offset, with
    /// `key_buf` holding the previous entry's key (enough to decode it).
    #[inline]
    pub(crate) fn seek_index(&self, index: u32, key_buf: &mut Vec<u8>) -> Result<usize> {
        if index >= self.count {
            return Err(self.bad("entry index past the block"));
        }
        let r = (index / self.interval) as usize;
        let mut pos = self.restart_offset(r)?;
        key_buf.clear();
        for _ in 0..index % self.interval {
            self.decode_into(&mut pos, key_buf)?;
        }
        Ok(pos)
    }

    /// Finds the first entry whose key is `>= target`: its index (`count` if none) and,
    /// when its key equals `target`, its value. Allocation-free: instead of rebuilding
    /// keys it tracks how many leading bytes of the current key match `target`, which works
    /// because the builder stores the exact common prefix with the previous key.
    pub(crate) fn search(&self, target: &[u8]) -> Result<(u32, Option<&'a [u8]>)> {
        // Binary search for the last restart whose key is <= target.
        // Binary search over the hints for the last restart whose key is <= target. Hints
        // order keys correctly where they differ, provided the target shares the block's
        // common prefix; that is checked below on the one restart key read in full.
        let target_hint = hint(target, self.prefix_len);
        let (mut lo, mut hi) = (0usize, self.restart_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let h = self.hint_at(mid)?;
            let ord = if h == target_hint {
                compare_from(self.restart_key(mid)?, target, 0).1
            } else {
                h.cmp(&target_hint)
            };
            if ord != Ordering::Greater {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let r = lo.saturating_sub(1);
        let restart_key = self.restart_key(r)?;
        let block_prefix = restart_key
            .get(..self.prefix_len)
            .ok_or_else(|| self.bad("restart key shorter than the block prefix"))?;
        let target_prefix = target.get(..self.prefix_len).unwrap_or(target);
        match target_prefix.cmp(block_prefix) {
            Ordering::Less => return Ok((0, None)),
            Ordering::Greater => return Ok((self.count, None)),
            Ordering::Equal => {}
        }
        if lo == 0 {
            // target sorts before the first key.
            return Ok((0, None));
        }
        let mut pos = self.restart_offset(r)?;
        // The scan below walks this restart's entries line by line: ask for all their cache
        // lines now, so the misses overlap instead of coming one after another. (Steps are
        // 64-byte aligned relative to the block, which in a map starts on a page boundary;
        // elsewhere a hint may miss a line, which only costs time.)
        let run_end = if r + 1 < self.restart_count() {
            self.restart_offset(r + 1)?
        } else {
            self.entries.len()
        };
        let mut at = pos;
        while let Some(rest) = self.entries.get(at..run_end.min(self.entries.len())) {
            if rest.is_empty() {
                break;
            }
            prefetch(rest);
            at = (at | 63) + 1;
        }
        let first = r as u32 * self.interval;
        let end = (first + self.interval).min(self.count);
        let raw = self.decode(&mut pos)?;
        if raw.shared != 0 {
            return Err(self.bad("restart entry shares a prefix"));
        }
        let mut matched = 0usize;
        let mut i = first;
        let mut entry = raw;
        loop {
            if entry.shared < matched {
                // The previous key matched target beyond this entry's shared prefix, and this
                // key differs from the previous one right there, upwards: it is greater.
                return Ok((i, None));
            }
            if entry.shared == matched {
                let rest = target.get(matched..).unwrap_or_default();
                let m = entry
                    .suffix
                    .iter()
                    .zip(rest)
                    .take_while(|(a, b)| a == b)
                    .count();
                matched += m;
                let key_len = entry.shared + entry.suffix.len();
                let ord = match (entry.suffix.get(m), rest.get(m)) {
                    (Some(a), Some(b)) => a.cmp(b),
                    (Some(_), None) => Ordering::Greater,
                    (None, Some(_)) => Ordering::Less,
                    (None, None) => Ordering::Equal,
                };
                debug_assert!(key_len >= matched);
                match ord {
                    Ordering::Equal => return Ok((i, Some(entry.value))),
                    Ordering::Greater => return Ok((i, None)),
                    Ordering::Less => {}
                }
            }
            // shared > matched: this key agrees with the previous (smaller) key past the
            // point where that one fell below target, so it is smaller too.
            i += 1;
            if i >= end {
                return Ok((end, None));
            }
            entry = self.decode(&mut pos)?;
        }
    }
}
