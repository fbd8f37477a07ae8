//! Iteration: a double-ended iterator over a position range, and a lending cursor.

use super::{Entry, Key, Table};
use crate::block::BlockRef;
use crate::error::{Error, Result};
use std::fmt;

/// Bytes a scan asks for ahead of itself at first, once it has shown it is a scan.
const FIRST_WINDOW_BYTES: u64 = 128 << 10;
/// The most a scan keeps asked for ahead of itself (the window doubles up to this).
const MAX_WINDOW_BYTES: u64 = 8 << 20;
/// Blocks a forward walk reads before it starts asking for bytes ahead: short ranges and
/// point-like reads pay no system call.
const BLOCKS_BEFORE_READ_AHEAD: u32 = 2;

/// Read-ahead of a forward walk over a table mapped for point reads (no kernel read-ahead):
/// the walk asks for the bytes ahead of it (`MADV_WILLNEED`), a window that doubles from
/// 128 KiB to 8 MiB, never past the block holding its last entry. Without it, a scan of a
/// cold table faults one page at a time.
struct ReadAhead {
    /// Position one past the last entry the walk will read.
    end_pos: u64,
    /// File offset where the block of the walk's last entry ends (0 until computed).
    end_offset: u64,
    /// File offset up to which bytes were asked for.
    asked_to: u64,
    window_bytes: u64,
    blocks_seen: u32,
}

impl ReadAhead {
    fn new(end_pos: u64) -> Self {
        ReadAhead {
            end_pos,
            end_offset: 0,
            asked_to: 0,
            window_bytes: FIRST_WINDOW_BYTES,
            blocks_seen: 0,
        }
    }

    /// Called as the walk enters block `b`.
    #[inline]
    fn enter<B: AsRef<[u8]>>(&mut self, table: &Table<B>, b: usize) {
        self.blocks_seen = self.blocks_seen.saturating_add(1);
        if self.blocks_seen <= BLOCKS_BEFORE_READ_AHEAD {
            return;
        }
        let index = table.index();
        let Some((start, end)) = index.block_range(b) else {
            return;
        };
        if self.end_offset == 0 {
            let last = index.block_for_pos(self.end_pos.saturating_sub(1));
            self.end_offset = index.block_range(last).map_or(end, |(_, e)| e);
        }
        // Ask for the next window once less than half of the current one is left ahead.
        if self.asked_to > end && self.asked_to - end > self.window_bytes / 2 {
            return;
        }
        let from = self.asked_to.max(start);
        let to = from.saturating_add(self.window_bytes).min(self.end_offset);
        if to <= from {
            return;
        }
        let range = usize::try_from(from).ok().zip(usize::try_from(to).ok());
        if let Some(bytes) = range.and_then(|(f, t)| table.bytes().as_ref().get(f..t)) {
            crate::memory::will_need(bytes);
        }
        self.asked_to = to;
        self.window_bytes = (self.window_bytes * 2).min(MAX_WINDOW_BYTES);
    }
}

/// Forward decoding state: the current block and where the next entry starts in it.
struct Forward<'t> {
    block: Option<(usize, BlockRef<'t>)>,
    local: u32,
    offset: usize,
    key_buf: Vec<u8>,
    ahead: ReadAhead,
}

impl<'t> Forward<'t> {
    /// A walk that will read no entry at or past position `end_pos`.
    fn new(end_pos: u64) -> Self {
        Forward {
            block: None,
            local: 0,
            offset: 0,
            key_buf: Vec::new(),
            ahead: ReadAhead::new(end_pos),
        }
    }

    /// Decodes the entry at global position `pos`, which must follow the previous call's
    /// position (or be anywhere after `reset`). The key ends up in `key_buf`.
    #[inline]
    fn step<B: AsRef<[u8]>>(
        &mut self,
        table: &'t Table<B>,
        pos: u64,
    ) -> Result<crate::block::RawEntry<'t>> {
        let block = match self.block {
            Some((_, blk)) if self.local < blk.count() => blk,
            Some((b, _)) => {
                self.ahead.enter(table, b + 1);
                let blk = table.block(b + 1)?;
                self.block = Some((b + 1, blk));
                self.local = 0;
                self.offset = 0;
                self.key_buf.clear();
                blk
            }
            None => {
                let b = table.index().block_for_pos(pos);
                self.ahead.enter(table, b);
                let blk = table.block(b)?;
                let local = pos - table.index().entries_before(b);
                self.local = u32::try_from(local)
                    .map_err(|_| Error::corrupt(blk.part(), "entry position out of range"))?;
                self.offset = blk.seek_index(self.local, &mut self.key_buf)?;
                self.block = Some((b, blk));
                blk
            }
        };
        let raw = block.decode_into(&mut self.offset, &mut self.key_buf)?;
        if self.local.is_multiple_of(table.restart_interval()) && raw.shared != 0 {
            return Err(Error::corrupt(
                block.part(),
                "restart entry shares a prefix",
            ));
        }
        self.local += 1;
        Ok(raw)
    }
}

/// Entries of a table over a range of positions, in key order; double-ended.
///
/// Yields `Result<(key, value)>`: after an error (a damaged block) it yields nothing more.
/// Forward steps decode one entry each; backward steps decode from the nearest restart
/// point (up to `restart_interval` entries), as prefix-compressed keys only decode forwards.
pub struct Iter<'t, B> {
    table: &'t Table<B>,
    front: u64,
    back: u64,
    fwd: Forward<'t>,
    back_buf: Vec<u8>,
    failed: Option<Error>,
    done: bool,
}

impl<B> fmt::Debug for Iter<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("front", &self.front)
            .field("back", &self.back)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<'t, B: AsRef<[u8]>> Iter<'t, B> {
    pub(crate) fn new(table: &'t Table<B>, front: u64, back: u64) -> Self {
        Iter {
            table,
            front,
            back,
            fwd: Forward::new(back),
            back_buf: Vec::new(),
            failed: None,
            done: false,
        }
    }

    pub(crate) fn failed(table: &'t Table<B>, e: Error) -> Self {
        let mut it = Self::new(table, 0, 0);
        it.failed = Some(e);
        it
    }

    /// Positions (ranks) of the entries not yet yielded: `front..back`.
    pub fn positions(&self) -> std::ops::Range<u64> {
        self.front..self.back
    }
}

impl<'t, B: AsRef<[u8]>> Iterator for Iter<'t, B> {
    type Item = Result<Entry<'t>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.failed.take() {
            self.done = true;
            return Some(Err(e));
        }
        if self.done || self.front >= self.back {
            return None;
        }
        match self.fwd.step(self.table, self.front) {
            Ok(raw) => {
                self.front += 1;
                let key = if raw.shared == 0 {
                    Key::borrowed(raw.suffix)
                } else {
                    Key::copied(&self.fwd.key_buf)
                };
                Some(Ok((key, raw.value)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let n = usize::try_from(self.back.saturating_sub(self.front)).unwrap_or(usize::MAX);
        let extra = usize::from(self.failed.is_some());
        (n.saturating_add(extra), Some(n.saturating_add(extra)))
    }
}

impl<B: AsRef<[u8]>> DoubleEndedIterator for Iter<'_, B> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.failed.take() {
            self.done = true;
            return Some(Err(e));
        }
        if self.done || self.front >= self.back {
            return None;
        }
        self.back -= 1;
        match self.table.entry_at(self.back, &mut self.back_buf) {
            Ok(entry) => Some(Ok(entry)),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl<B: AsRef<[u8]>> std::iter::FusedIterator for Iter<'_, B> {}

/// A forward cursor that lends each key from its own buffer: no allocation per entry.
///
/// ```
/// # fn main() -> stele_table::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| stele_table::Error::Io { op: "temp", path: "".into(), source: e })?;
/// use stele_table::{Table, TableBuilder, TableOptions};
/// let mut b = TableBuilder::new(dir.path(), TableOptions::default())?;
/// b.add(b"apple", b"1")?;
/// b.add(b"apricot", b"2")?;
/// let table = Table::open(b.finish()?.path)?;
/// let mut c = table.cursor();
/// let mut keys = Vec::new();
/// while let Some((key, _value)) = c.next_entry()? {
///     keys.push(key.to_vec()); // `key` is only valid until the next call
/// }
/// assert_eq!(keys, [b"apple".to_vec(), b"apricot".to_vec()]);
/// # Ok(()) }
/// ```
pub struct Cursor<'t, B> {
    table: &'t Table<B>,
    pos: u64,
    end: u64,
    fwd: Forward<'t>,
}

impl<B> fmt::Debug for Cursor<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor")
            .field("pos", &self.pos)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<'t, B: AsRef<[u8]>> Cursor<'t, B> {
    pub(crate) fn new(table: &'t Table<B>, pos: u64, end: u64) -> Self {
        Cursor {
            table,
            pos,
            end,
            fwd: Forward::new(end),
        }
    }

    /// The next entry; the key borrows the cursor until the next call.
    #[inline]
    pub fn next_entry(&mut self) -> Result<Option<(&[u8], &'t [u8])>> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let raw = self.fwd.step(self.table, self.pos)?;
        self.pos += 1;
        Ok(Some((self.fwd.key_buf.as_slice(), raw.value)))
    }

    /// Moves to the first entry whose key is `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.pos = self.table.rank(key)?;
        self.end = self.table.len();
        self.fwd = Forward::new(self.end);
        Ok(())
    }

    /// Position (rank) of the entry the next call returns.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "tests: a failed unwrap is a failed test"
    )]
    use super::*;
    use crate::{TableBuilder, TableOptions};

    /// A table of 20,000 entries in 512-byte blocks (hundreds of blocks), in memory.
    fn table() -> Table<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableOptions::default().block_size_bytes(512);
        let mut b = TableBuilder::new(dir.path(), opts).unwrap();
        for i in 0..20_000u32 {
            b.add(format!("key{i:08}").as_bytes(), &[7u8; 40]).unwrap();
        }
        let info = b.finish().unwrap();
        Table::from_bytes(std::fs::read(info.path).unwrap()).unwrap()
    }

    /// End offset of the block holding position `pos`.
    fn block_end(t: &Table<Vec<u8>>, pos: u64) -> u64 {
        let b = t.index().block_for_pos(pos);
        t.index().block_range(b).unwrap().1
    }

    #[test]
    fn read_ahead_stays_within_the_range_and_skips_short_ones() {
        let t = table();
        assert!(t.index().block_count() > 100);
        let n = t.len();
        for (front, back) in [(0, n), (100, 5_000), (7_000, 7_003), (n - 40, n), (0, 1)] {
            let mut it = Iter::new(&t, front, back);
            let mut seen = 0u64;
            for e in it.by_ref() {
                e.unwrap();
                seen += 1;
            }
            assert_eq!(seen, back - front);
            let ahead = &it.fwd.ahead;
            let blocks = t.index().block_for_pos(back - 1) - t.index().block_for_pos(front) + 1;
            if blocks <= BLOCKS_BEFORE_READ_AHEAD as usize {
                assert_eq!(
                    ahead.asked_to, 0,
                    "{front}..{back}: {blocks} blocks, no advice"
                );
            } else {
                // Everything up to the range's last block was asked for, and nothing past it.
                assert_eq!(ahead.asked_to, block_end(&t, back - 1), "{front}..{back}");
                assert!(ahead.window_bytes <= MAX_WINDOW_BYTES);
            }
        }
    }

    #[test]
    fn a_cursor_reads_ahead_only_to_its_end() {
        let t = table();
        let mut c = t.cursor();
        let mut seen = 0u64;
        while c.next_entry().unwrap().is_some() {
            seen += 1;
        }
        assert_eq!(seen, t.len());
        assert_eq!(c.fwd.ahead.asked_to, block_end(&t, t.len() - 1));
    }
}
