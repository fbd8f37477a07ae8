//! Encoding one data block.

use super::{FLAG_WIDE_RESTARTS, HINT_BYTES, NIBBLE_EXT, TRAILER_BYTES, VARIABLE_VALUES};
use crate::varint;
use xxhash_rust::xxh3::xxh3_64;

/// How values' lengths are stored in the block being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueMode {
    /// No entry yet.
    Unset,
    /// Every value so far has this length: stored once in the trailer.
    Fixed(u32),
    /// Each entry carries its value length.
    Variable,
}

/// The size arithmetic of a block, separate from the bytes: the sorter uses it alone to
/// place block boundaries before encoding blocks in parallel, and `BlockBuilder` uses it
/// for every entry, so both produce the same boundaries.
#[derive(Debug, Clone)]
pub(crate) struct BlockSizer {
    entries_len: usize,
    restarts: usize,
    entry_count: u32,
    mode: ValueMode,
    /// Sum of the varint lengths of every value length so far: what switching to
    /// `Variable` would add.
    value_len_varint_bytes: usize,
    restart_interval: u32,
    block_bytes: usize,
}

/// Where an admitted entry goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admitted {
    pub shared: usize,
    /// The block switches to per-entry value lengths with this entry.
    pub converts: bool,
}

impl BlockSizer {
    pub(crate) fn new(block_bytes: usize, restart_interval: u32) -> Self {
        BlockSizer {
            entries_len: 0,
            restarts: 0,
            entry_count: 0,
            mode: ValueMode::Unset,
            value_len_varint_bytes: 0,
            restart_interval,
            block_bytes,
        }
    }

    pub(crate) fn is_restart(&self) -> bool {
        self.entry_count.is_multiple_of(self.restart_interval)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entry_count == 0
    }

    /// Admits an entry whose key shares `lcp` bytes with the previous key (ignored at
    /// restarts), if it fits; an empty block admits anything. `None`: the block is full.
    #[inline]
    pub(crate) fn admit(
        &mut self,
        lcp: usize,
        key_len: usize,
        value_len: usize,
    ) -> Option<Admitted> {
        let restart = self.is_restart();
        let shared = if restart { 0 } else { lcp };
        let unshared = key_len - shared;
        let value_len32 = value_len as u32;
        let new_mode = match self.mode {
            ValueMode::Unset => ValueMode::Fixed(value_len32),
            ValueMode::Fixed(l) if l == value_len32 => ValueMode::Fixed(l),
            _ => ValueMode::Variable,
        };
        let vl_bytes = varint::len(value_len as u64);
        let converts = new_mode == ValueMode::Variable && self.mode != ValueMode::Variable;
        let mut entries_len =
            self.entries_len + header_len(shared, unshared) + unshared + value_len;
        if new_mode == ValueMode::Variable {
            entries_len += vl_bytes;
            if converts {
                entries_len += self.value_len_varint_bytes;
            }
        }
        let restarts = self.restarts + usize::from(restart);
        if self.entry_count > 0 {
            let width = if entries_len > usize::from(u16::MAX) {
                4
            } else {
                2
            };
            if entries_len + restarts * (width + HINT_BYTES) + TRAILER_BYTES > self.block_bytes {
                return None;
            }
        }
        self.entries_len = entries_len;
        self.restarts = restarts;
        self.entry_count += 1;
        self.mode = new_mode;
        self.value_len_varint_bytes += vl_bytes;
        Some(Admitted { shared, converts })
    }

    pub(crate) fn reset(&mut self) {
        *self = BlockSizer::new(self.block_bytes, self.restart_interval);
    }
}

/// Accumulates entries of one block; `finish` appends the padded block to an output buffer.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    sizer: BlockSizer,
    entries: Vec<u8>,
    restarts: Vec<u32>,
    /// Every restart key, back to back (`restart_key_ends` marks their ends): hints are cut
    /// from them once the block's common prefix is known.
    restart_keys: Vec<u8>,
    restart_key_ends: Vec<usize>,
    last_key: Vec<u8>,
    block_bytes: usize,
}

fn header_len(shared: usize, unshared: usize) -> usize {
    let ext = |n: usize| {
        if n >= usize::from(NIBBLE_EXT) {
            varint::len((n - usize::from(NIBBLE_EXT)) as u64)
        } else {
            0
        }
    };
    1 + ext(shared) + ext(unshared)
}

/// The 4 bytes of `key` after its first `skip`, zero-padded, as a big-endian integer.
#[inline]
pub(crate) fn hint(key: &[u8], skip: usize) -> u32 {
    let rest = key.get(skip..).unwrap_or_default();
    let mut h = [0u8; HINT_BYTES];
    for (d, s) in h.iter_mut().zip(rest) {
        *d = *s;
    }
    u32::from_be_bytes(h)
}

/// Length of the common prefix of `a` and `b`, 8 bytes at a time.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut done = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let (Ok(x), Ok(y)) = (<[u8; 8]>::try_from(x), <[u8; 8]>::try_from(y)) else {
            break;
        };
        let diff = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
        if diff != 0 {
            return done + (diff.trailing_zeros() / 8) as usize;
        }
        done += 8;
    }
    let (a, b) = (
        a.get(done..).unwrap_or_default(),
        b.get(done..).unwrap_or_default(),
    );
    done + a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl BlockBuilder {
    pub(crate) fn new(block_bytes: usize, restart_interval: u32) -> Self {
        BlockBuilder {
            sizer: BlockSizer::new(block_bytes, restart_interval),
            entries: Vec::with_capacity(block_bytes),
            restarts: Vec::new(),
            restart_keys: Vec::new(),
            restart_key_ends: Vec::new(),
            last_key: Vec::new(),
            block_bytes,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sizer.is_empty()
    }

    pub(crate) fn entry_count(&self) -> u32 {
        self.sizer.entry_count
    }

    /// The last key added to this block.
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Adds the entry if it fits in the block size (an empty block takes anything and
    /// grows to several block-size units). Returns false when the block is full.
    pub(crate) fn try_add(&mut self, key: &[u8], value: &[u8]) -> bool {
        let lcp = if self.sizer.is_restart() {
            0
        } else {
            common_prefix(&self.last_key, key)
        };
        self.try_add_with_lcp(key, value, lcp)
    }

    /// `try_add` for a caller that knows the common prefix length of `key` with the
    /// previous key (it must be exact).
    #[inline]
    pub(crate) fn try_add_with_lcp(&mut self, key: &[u8], value: &[u8], lcp: usize) -> bool {
        let restart = self.sizer.is_restart();
        debug_assert!(
            restart || lcp == common_prefix(&self.last_key, key),
            "caller's common prefix length is not exact"
        );
        let old_mode = self.sizer.mode;
        let Some(Admitted { shared, converts }) = self.sizer.admit(lcp, key.len(), value.len())
        else {
            return false;
        };
        if converts && let ValueMode::Fixed(fixed) = old_mode {
            self.convert_to_variable(fixed);
        }
        let unshared = key.len() - shared;
        if restart {
            self.restarts.push(self.entries.len() as u32);
            self.restart_keys.extend_from_slice(key);
            self.restart_key_ends.push(self.restart_keys.len());
        }
        let nib = |n: usize| n.min(usize::from(NIBBLE_EXT)) as u8;
        self.entries.push((nib(shared) << 4) | nib(unshared));
        if shared >= usize::from(NIBBLE_EXT) {
            varint::put(&mut self.entries, (shared - usize::from(NIBBLE_EXT)) as u64);
        }
        if unshared >= usize::from(NIBBLE_EXT) {
            varint::put(
                &mut self.entries,
                (unshared - usize::from(NIBBLE_EXT)) as u64,
            );
        }
        if self.sizer.mode == ValueMode::Variable {
            varint::put(&mut self.entries, value.len() as u64);
        }
        self.entries
            .extend_from_slice(key.get(shared..).unwrap_or_default());
        self.entries.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key
            .extend_from_slice(key.get(shared..).unwrap_or_default());
        debug_assert_eq!(self.entries.len(), self.sizer.entries_len);
        true
    }

    /// Re-encodes the entries so far with per-entry value lengths.
    fn convert_to_variable(&mut self, fixed: u32) {
        let interval = self.sizer.restart_interval;
        let old = std::mem::take(&mut self.entries);
        let mut out = Vec::with_capacity(old.len() + self.sizer.value_len_varint_bytes + 64);
        let mut pos = 0usize;
        let mut restart_iter = 0usize;
        // The entry just admitted is not encoded yet.
        for i in 0..self.sizer.entry_count - 1 {
            if i % interval == 0 {
                if let Some(r) = self.restarts.get_mut(restart_iter) {
                    *r = out.len() as u32;
                }
                restart_iter += 1;
            }
            // The bytes were produced by `try_add` above, so they decode; on the impossible
            // failure the block keeps whatever was converted, and reading would report it.
            let start = pos;
            let Some(&h) = old.get(pos) else { break };
            pos += 1;
            let mut unshared = usize::from(h & 0x0f);
            if h >> 4 == NIBBLE_EXT {
                let _ = varint::get(&old, &mut pos);
            }
            if h & 0x0f == NIBBLE_EXT {
                unshared += varint::get(&old, &mut pos).unwrap_or(0) as usize;
            }
            out.extend_from_slice(old.get(start..pos).unwrap_or_default());
            varint::put(&mut out, u64::from(fixed));
            let end = pos + unshared + fixed as usize;
            out.extend_from_slice(old.get(pos..end).unwrap_or_default());
            pos = end;
        }
        self.entries = out;
    }

    /// Appends the finished block, padded to a multiple of the block size, to `out` and
    /// resets the builder. Returns the number of bytes appended.
    pub(crate) fn finish_into(&mut self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        let wide = self.entries.len() > usize::from(u16::MAX);
        let width = if wide { 4 } else { 2 };
        let restarts_bytes = self.restarts.len() * (width + HINT_BYTES);
        let used = self.entries.len() + restarts_bytes + TRAILER_BYTES;
        let total = used.div_ceil(self.block_bytes) * self.block_bytes;
        out.extend_from_slice(&self.entries);
        // Padding goes between the entries and the restarts, so that the hints, restart
        // offsets and trailer sit together in the block's last cache lines.
        out.resize(start + total - TRAILER_BYTES - restarts_bytes, 0);
        let first_key_end = self.restart_key_ends.first().copied().unwrap_or(0);
        let first_key = self.restart_keys.get(..first_key_end).unwrap_or_default();
        let prefix_len = common_prefix(first_key, &self.last_key);
        let mut key_start = 0;
        for &end in &self.restart_key_ends {
            let key = self.restart_keys.get(key_start..end).unwrap_or_default();
            out.extend_from_slice(&hint(key, prefix_len).to_be_bytes());
            key_start = end;
        }
        for &r in &self.restarts {
            if wide {
                out.extend_from_slice(&r.to_le_bytes());
            } else {
                out.extend_from_slice(&(r as u16).to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.sizer.entry_count.to_le_bytes());
        let fixed = match self.sizer.mode {
            ValueMode::Fixed(l) => l,
            ValueMode::Unset | ValueMode::Variable => VARIABLE_VALUES,
        };
        out.extend_from_slice(&fixed.to_le_bytes());
        out.extend_from_slice(&(prefix_len as u32).to_le_bytes());
        out.push(if wide { FLAG_WIDE_RESTARTS } else { 0 });
        let sum = xxh3_64(out.get(start..).unwrap_or_default());
        out.extend_from_slice(&sum.to_le_bytes());
        self.entries.clear();
        self.restarts.clear();
        self.restart_keys.clear();
        self.restart_key_ends.clear();
        self.sizer.reset();
        self.last_key.clear();
        total
    }
}
