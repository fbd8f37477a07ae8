//! Indexes stored compactly: an index's keys in compressed blocks, in the index's own map.
//!
//! ```text
//! block entry:  key   0x00 | the block's last index key
//!               value u8 format (1) | varint key count | varint raw bytes | zstd frame of
//!                     the raw bytes: per key, varint bytes shared with the key before it
//!                     in the block | varint suffix length | suffix
//! loose entry:  key   an index key (its first byte, a value's type, is 0x10 or more)
//!               value empty: the key is there; 0x01: the key is removed (it may sit in a block)
//! ```
//!
//! Packing (at `create_index`, at compaction, at close) writes every key of an index into
//! blocks of about [`BLOCK_RAW_BYTES`] and nothing else. Writes after it go to the map as
//! loose entries, above the blocks, until the next packing. A scan merges both, a loose entry
//! winning over a block's key. An index written by an older build holds loose keys only and
//! reads the same way.

use super::cache::{KeyBlock, KeyBlockCache};
use crate::bytes::{Reader, put_varint};
use crate::error::{Error, Result};
use std::ops::Bound;
use std::sync::Arc;
use stele_durable::{DurableMap, MapIter, Store};

/// First byte of a block entry's key (index keys start with a type byte of 0x10 or more).
const BLOCK_KEY: u8 = 0x00;
/// Keys of block entries lie in `[BLOCK_KEY]..[BLOCK_KEY + 1]`.
const LOOSE_FROM: u8 = 0x01;
/// Format byte of a block.
const BLOCK_FORMAT: u8 = 1;
/// Value of a loose entry whose key is removed.
const REMOVED: &[u8] = &[0x01];
/// Raw (prefix-coded) bytes of keys per block: a scan that starts in a block decodes it all
/// (a few microseconds), and bigger blocks compress better.
pub(crate) const BLOCK_RAW_BYTES: usize = 4 << 10;
/// zstd level of blocks.
const BLOCK_LEVEL: i32 = 9;
/// Largest raw size a block may claim (a check on untrusted bytes before allocating).
const MAX_BLOCK_RAW_BYTES: u64 = 16 << 20;
/// Table unit of a packed index's map: blocks are values of a few KiB, so small units keep
/// the padding after each under 16 bytes.
const TABLE_BLOCK_BYTES: u32 = 16;

fn corrupt(problem: &str) -> Error {
    Error::CorruptValue {
        offset: 0,
        problem: format!("index block: {problem} (rebuild the index: drop and create it)"),
    }
}

/// Encodes the keys of one block (sorted, at least one).
pub(crate) fn encode_block(keys: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut raw = Vec::new();
    let mut prev: &[u8] = &[];
    for k in keys {
        let shared = prev.iter().zip(k).take_while(|(a, b)| a == b).count();
        put_varint(&mut raw, shared as u64);
        put_varint(&mut raw, (k.len() - shared) as u64);
        raw.extend_from_slice(k.get(shared..).unwrap_or_default());
        prev = k;
    }
    let frame = with_contexts(|c, _| c.compress(&raw))
        .map_err(|e| Error::io("compressing an index block", "", e))?;
    let mut out = vec![BLOCK_FORMAT];
    put_varint(&mut out, keys.len() as u64);
    put_varint(&mut out, raw.len() as u64);
    out.extend_from_slice(&frame);
    Ok(out)
}

/// The number of keys a block holds, from its header (nothing decompressed).
fn block_count(value: &[u8]) -> Result<u64> {
    let mut r = Reader::new(value);
    if r.u8() != Some(BLOCK_FORMAT) {
        return Err(corrupt("unknown format"));
    }
    r.varint().ok_or_else(|| corrupt("truncated header"))
}

thread_local! {
    /// zstd contexts reused across blocks: making one per block cost more than decoding it.
    static CONTEXTS: std::cell::RefCell<Option<(zstd::bulk::Compressor<'static>, zstd::bulk::Decompressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's zstd contexts.
fn with_contexts<T>(
    f: impl FnOnce(
        &mut zstd::bulk::Compressor<'static>,
        &mut zstd::bulk::Decompressor<'static>,
    ) -> std::io::Result<T>,
) -> std::io::Result<T> {
    CONTEXTS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some((
                zstd::bulk::Compressor::new(BLOCK_LEVEL)?,
                zstd::bulk::Decompressor::new()?,
            ));
        }
        match slot.as_mut() {
            Some((c, d)) => f(c, d),
            None => Err(std::io::Error::other("no zstd context")),
        }
    })
}

/// Decodes the keys of a block (validating every length).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn decode_block(value: &[u8]) -> Result<Vec<Vec<u8>>> {
    let block = decode_keys(value)?;
    Ok((0..block.len()).map(|i| block.key(i).to_vec()).collect())
}

/// Decodes a block, validating every key (lengths, strictly ascending order, first byte).
pub(crate) fn decode_keys(value: &[u8]) -> Result<KeyBlock> {
    let mut r = Reader::new(value);
    if r.u8() != Some(BLOCK_FORMAT) {
        return Err(corrupt("unknown format"));
    }
    let count = r.varint().ok_or_else(|| corrupt("truncated header"))?;
    let raw_len = r.varint().ok_or_else(|| corrupt("truncated header"))?;
    // Every key takes at least two bytes of raw (two varints).
    if raw_len > MAX_BLOCK_RAW_BYTES || count.saturating_mul(2) > raw_len {
        return Err(corrupt("implausible sizes"));
    }
    let frame = r.rest();
    let raw = with_contexts(|_, d| d.decompress(frame, raw_len as usize))
        .map_err(|_| corrupt("does not decompress"))?;
    if raw.len() as u64 != raw_len {
        return Err(corrupt("wrong raw length"));
    }
    // Whole keys take more than the prefix-coded raw bytes: twice is a first guess.
    let mut block = KeyBlock::with_capacity(raw.len() * 2, count as usize);
    // The key being rebuilt (the previous one, then this one).
    let mut key: Vec<u8> = Vec::new();
    let mut r = Reader::new(&raw);
    for i in 0..count {
        let shared = r.varint().ok_or_else(|| corrupt("truncated key"))?;
        let suffix_len = r.varint().ok_or_else(|| corrupt("truncated key"))?;
        let suffix = usize::try_from(suffix_len)
            .ok()
            .and_then(|n| r.take(n))
            .ok_or_else(|| corrupt("truncated key"))?;
        let shared = usize::try_from(shared)
            .ok()
            .filter(|&n| n <= key.len())
            .ok_or_else(|| corrupt("bad shared length"))?;
        // Strictly increasing: the first byte after the shared prefix grows, or the key
        // is a longer extension of the previous one.
        let grows = match (key.get(shared), suffix.first()) {
            (Some(old), Some(new)) => new > old,
            (None, Some(_)) => true,
            _ => false,
        };
        if i > 0 && !grows {
            return Err(corrupt("keys out of order"));
        }
        key.truncate(shared);
        key.extend_from_slice(suffix);
        if key.first().is_none_or(|&b| b <= LOOSE_FROM) {
            return Err(corrupt("a key that no index writes"));
        }
        if !block.push(&key) {
            return Err(corrupt("implausible sizes"));
        }
    }
    if !r.is_empty() {
        return Err(corrupt("bytes after the last key"));
    }
    Ok(block)
}

/// The decoded keys of the block stored as `value`: from `cache` when it holds them, else
/// decoded (and then kept there).
fn block_keys(value: &[u8], cache: Option<&KeyBlockCache>) -> Result<Arc<KeyBlock>> {
    if let Some(block) = cache.and_then(|c| c.get(value)) {
        return Ok(block);
    }
    let block = Arc::new(decode_keys(value)?);
    if let Some(c) = cache {
        c.insert(value, &block);
    }
    Ok(block)
}

/// Whether `map` holds blocks.
#[cfg(test)]
pub(crate) fn has_blocks(map: &DurableMap) -> bool {
    map.range((
        Bound::Included(&[BLOCK_KEY][..]),
        Bound::Excluded(&[LOOSE_FROM][..]),
    ))
    .next()
    .is_some()
}

/// Whether `map` holds loose entries (keys written since its last packing).
pub(crate) fn has_loose(map: &DurableMap) -> bool {
    map.range((Bound::Included(&[LOOSE_FROM][..]), Bound::Unbounded))
        .next()
        .is_some()
}

/// Adds index key `key` to `map`.
pub(crate) fn insert(map: &mut DurableMap, key: &[u8]) -> Result<()> {
    map.put(key, &[])?;
    Ok(())
}

/// Removes index key `key` from `map`: always a mark, even while no block holds it. A
/// compaction running on the side may be packing the key into a block of the next base,
/// and `DurableMap::rebase` keeps a plain removal only for a key its new base holds as a key
/// (a key inside a block is not one). The next packing drops the marks.
pub(crate) fn remove(map: &mut DurableMap, key: &[u8]) -> Result<()> {
    map.put(key, REMOVED)?;
    Ok(())
}

/// Keys of `map` in (`lo`, `hi`), ascending or (`descending`) descending: its blocks' keys
/// and its loose entries merged, removal marks hiding the keys they name. Blocks are
/// decoded through `cache` when given. The bounds are borrowed for the scan's life (they
/// were copied, with the fixed bounds of the blocks' and the loose entries' ranges: six
/// allocations per scan opened, now one).
pub(crate) fn scan<'a>(
    map: &'a DurableMap,
    lo: Bound<&'a [u8]>,
    hi: Bound<&'a [u8]>,
    descending: bool,
    cache: Option<&'a KeyBlockCache>,
) -> Scan<'a> {
    const BLOCKS_START: &[u8] = &[BLOCK_KEY];
    const LOOSE_START: &[u8] = &[LOOSE_FROM];
    // Blocks from the first whose last key reaches `lo`, up to the first whose last key
    // reaches `hi` (every block after that one holds only keys past `hi`).
    let blocks_lo: Option<Vec<u8>> = match lo {
        Bound::Included(k) | Bound::Excluded(k) => Some([BLOCKS_START, k].concat()),
        Bound::Unbounded => None,
    };
    let blocks_lo = Bound::Included(blocks_lo.as_deref().unwrap_or(BLOCKS_START));
    let loose_start = Bound::Excluded(LOOSE_START);
    let reaching: Option<Vec<u8>>;
    let blocks_hi = match hi {
        // Ascending, the scan stops taking blocks after the first whose last key reaches
        // `hi` (`Scan::fill_block`): no search for that block first (a third of the map
        // ranges a selective query's scan opened); and it stops at the first entry that is
        // not a block (`fill_block` again), so the range is open above: no search of each
        // table for the end of the blocks either (a rank per layer, 4 % of a small count).
        _ if !descending => Bound::Unbounded,
        Bound::Included(k) | Bound::Excluded(k) => {
            let from = [BLOCKS_START, k].concat();
            reaching = match map
                .range((Bound::Included(from.as_slice()), loose_start))
                .next()
            {
                Some(Ok((last, _))) => Some(last.to_vec()),
                _ => None,
            };
            match &reaching {
                Some(last) => Bound::Included(last.as_slice()),
                None => loose_start,
            }
        }
        Bound::Unbounded => loose_start,
    };
    let blocks = map.range((blocks_lo, blocks_hi));
    // Loose entries: keys from 0x01 on (a lower bound below it would take in blocks).
    let loose_lo = match lo {
        Bound::Included(k) | Bound::Excluded(k) if k.first().is_some_and(|&b| b > LOOSE_FROM) => lo,
        _ => Bound::Included(LOOSE_START),
    };
    let loose = map.range((loose_lo, hi));
    Scan {
        descending,
        lo,
        hi,
        loose,
        blocks,
        cache,
        block: None,
        pos: 0,
        end: 0,
        blocks_done: false,
        next_loose: None,
        last: Last::None,
        failed: false,
    }
}

/// Where the key [`Scan::next_key`] returned last lies.
enum Last {
    None,
    Loose(Vec<u8>),
    Block(usize),
}

/// The keys of an index in a range, in one direction (see [`scan`]).
pub(crate) struct Scan<'a> {
    descending: bool,
    lo: Bound<&'a [u8]>,
    hi: Bound<&'a [u8]>,
    loose: MapIter<'a>,
    blocks: MapIter<'a>,
    cache: Option<&'a KeyBlockCache>,
    /// The block being read, and its keys in range not yet merged: `pos..end`.
    block: Option<Arc<KeyBlock>>,
    pos: usize,
    end: usize,
    /// No block after the current one can hold a key in range (ascending: its last key
    /// reached `hi`).
    blocks_done: bool,
    /// The next loose entry (key, removed), read ahead.
    next_loose: Option<(Vec<u8>, bool)>,
    /// The key returned last.
    last: Last,
    /// An error was returned: the scan is over.
    failed: bool,
}

impl Scan<'_> {
    /// The next loose entry in the scan's direction.
    fn read_loose(&mut self) -> Result<Option<(Vec<u8>, bool)>> {
        let next = if self.descending {
            self.loose.next_back()
        } else {
            self.loose.next()
        };
        match next {
            None => Ok(None),
            Some(e) => {
                let (k, v) = e?;
                Ok(Some((k.to_vec(), v == REMOVED)))
            }
        }
    }

    /// Whether a block key is left, decoding the next block when the current one is used
    /// up; the keys in range of a block are found by binary search.
    fn fill_block(&mut self) -> Result<bool> {
        while self.pos >= self.end {
            let next = if self.blocks_done {
                None
            } else if self.descending {
                self.blocks.next_back()
            } else {
                self.blocks.next()
            };
            // Ascending, `blocks` runs on past the blocks (see `scan`): a loose entry ends them.
            let Some((_, value)) = next
                .transpose()?
                .filter(|(k, _)| k.first() == Some(&BLOCK_KEY))
            else {
                self.block = None;
                self.blocks_done = true;
                return Ok(false);
            };
            let block = block_keys(value, self.cache)?;
            self.pos = match self.lo {
                Bound::Included(k) => block.partition_point(|x| x < k),
                Bound::Excluded(k) => block.partition_point(|x| x <= k),
                Bound::Unbounded => 0,
            };
            self.end = match self.hi {
                Bound::Included(k) => block.partition_point(|x| x <= k),
                Bound::Excluded(k) => block.partition_point(|x| x < k),
                Bound::Unbounded => block.len(),
            };
            // The block's keys past `hi` mean every later block's are.
            self.blocks_done |= !self.descending && self.end < block.len();
            self.block = Some(block);
        }
        Ok(true)
    }

    /// The index (in the current block) of the next block key in the scan's direction.
    fn head(&self) -> usize {
        if self.descending {
            // `fill_block` returned true: `pos < end`.
            self.end.saturating_sub(1)
        } else {
            self.pos
        }
    }

    /// Consumes the block key [`Scan::head`] names.
    fn advance(&mut self) {
        if self.descending {
            self.end -= 1;
        } else {
            self.pos += 1;
        }
    }

    fn step(&mut self) -> Result<bool> {
        loop {
            if self.next_loose.is_none() {
                self.next_loose = self.read_loose()?;
            }
            let have_block = self.fill_block()?;
            let head = self.head();
            let block_key = match (&self.block, have_block) {
                (Some(b), true) => Some(b.key(head)),
                _ => None,
            };
            // Which comes first in the scan's direction; equal keys: the loose entry wins
            // (and the block's key is dropped).
            let (take_loose, drop_block_key) = match (&self.next_loose, block_key) {
                (None, None) => return Ok(false),
                (Some(_), None) => (true, false),
                (None, Some(_)) => (false, false),
                (Some((l, _)), Some(b)) if l.as_slice() == b => (true, true),
                (Some((l, _)), Some(b)) => ((l.as_slice() < b) != self.descending, false),
            };
            if drop_block_key {
                self.advance();
            }
            if take_loose {
                if let Some((k, removed)) = self.next_loose.take()
                    && !removed
                {
                    self.last = Last::Loose(k);
                    return Ok(true);
                }
            } else {
                self.advance();
                self.last = Last::Block(head);
                return Ok(true);
            }
        }
    }

    /// The next key, borrowed until the next call (no copy of a block's key).
    pub(crate) fn next_key(&mut self) -> Option<Result<&[u8]>> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(true) => Some(Ok(match &self.last {
                Last::Loose(k) => k.as_slice(),
                Last::Block(i) => self.block.as_ref().map_or(&[][..], |b| b.key(*i)),
                Last::None => &[],
            })),
            Ok(false) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Result<Vec<u8>>> {
        self.next_key().map(|r| r.map(<[u8]>::to_vec))
    }
}

/// Keys of an index, counted from block headers and loose entries: exact for an index that
/// is packed, approximate for the keys written since (a removal mark counts -1 whether or not
/// a block holds its key, a key put back after its removal +1 though a block holds it).
pub(crate) fn count(map: &DurableMap) -> Result<u64> {
    let mut n: u64 = 0;
    for entry in map.iter() {
        let (k, v) = entry?;
        if k.first() == Some(&BLOCK_KEY) {
            n += block_count(v)?;
        } else if v == REMOVED {
            n = n.saturating_sub(1);
        } else {
            n += 1;
        }
    }
    Ok(n)
}

/// Writes `keys` (sorted, no duplicates) as a packed index: a new map of blocks only.
pub(crate) fn pack(
    store: &Store,
    keys: impl Iterator<Item = Result<Vec<u8>>>,
) -> Result<DurableMap> {
    pack_in_blocks_of(store, keys, BLOCK_RAW_BYTES)
}

/// [`pack`] with blocks of about `block_raw_bytes` (tests use small ones): each block
/// closes once its keys reach that size, and is written once the next one holds half of it;
/// keys that end before that go into the last full block instead. So blocks hold 1 to 1.5
/// times the size and no small block ends an index: a tail of a few keys in a block of its
/// own cost more (the block's header, its table entry, a zstd frame that shares nothing)
/// than the keys themselves (the 185 keys of `sample_mflix__users`' names, 4.1 KB, made a
/// block and a tail of 3 keys).
fn pack_in_blocks_of(
    store: &Store,
    keys: impl Iterator<Item = Result<Vec<u8>>>,
    block_raw_bytes: usize,
) -> Result<DurableMap> {
    let mut out = store.map_builder_with_block_size(TABLE_BLOCK_BYTES)?;
    let mut block: Vec<Vec<u8>> = Vec::new();
    let mut raw_bytes = 0usize;
    let mut flush = |block: &mut Vec<Vec<u8>>| -> Result<()> {
        if let Some(last) = block.last() {
            let key = [&[BLOCK_KEY][..], last].concat();
            out.add(&key, &encode_block(block)?)?;
            block.clear();
        }
        Ok(())
    };
    // A full block, written once `block` (the next one) holds half a block.
    let mut held: Vec<Vec<u8>> = Vec::new();
    for k in keys {
        let k = k?;
        raw_bytes += k.len() + 2;
        block.push(k);
        if !held.is_empty() && raw_bytes >= block_raw_bytes / 2 {
            flush(&mut held)?;
        }
        if raw_bytes >= block_raw_bytes {
            std::mem::swap(&mut held, &mut block);
            raw_bytes = 0;
        }
    }
    held.append(&mut block);
    flush(&mut held)?;
    Ok(out.finish()?)
}

/// Rewrites index map `map` as a packed one (every key it holds, in blocks).
pub(crate) fn repack(store: &Store, map: &DurableMap) -> Result<DurableMap> {
    let source = map.sequential()?;
    pack(
        store,
        scan(&source, Bound::Unbounded, Bound::Unbounded, false, None),
    )
}

#[cfg(test)]
#[path = "packed_tests.rs"]
mod tests;
