//! Encoding one data block.

use super::{FLAG_WIDE_RESTARTS, NIBBLE_EXT, TRAILER_BYTES, VARIABLE_VALUES};
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

/// Accumulates entries of one block; `finish` appends the padded block to an output buffer.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    entries: Vec<u8>,
    restarts: Vec<u32>,
    entry_count: u32,
    mode: ValueMode,
    /// Sum of the varint lengths of every value length so far: what switching to
    /// `Variable` would add.
    value_len_varint_bytes: usize,
    last_key: Vec<u8>,
    restart_interval: u32,
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

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl BlockBuilder {
    pub(crate) fn new(block_bytes: usize, restart_interval: u32) -> Self {
        BlockBuilder {
            entries: Vec::with_capacity(block_bytes),
            restarts: Vec::new(),
            entry_count: 0,
            mode: ValueMode::Unset,
            value_len_varint_bytes: 0,
            last_key: Vec::new(),
            restart_interval,
            block_bytes,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entry_count == 0
    }

    pub(crate) fn entry_count(&self) -> u32 {
        self.entry_count
    }

    /// The last key added to this block.
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    fn is_restart(&self) -> bool {
        self.entry_count % self.restart_interval == 0
    }

    /// Adds the entry if it fits in the block size (an empty block takes anything and
    /// grows to several block-size units). Returns false when the block is full.
    pub(crate) fn try_add(&mut self, key: &[u8], value: &[u8]) -> bool {
        let restart = self.is_restart();
        let shared = if restart {
            0
        } else {
            common_prefix(&self.last_key, key)
        };
        let unshared = key.len() - shared;
        let value_len = value.len() as u32;
        let new_mode = match self.mode {
            ValueMode::Unset => ValueMode::Fixed(value_len),
            ValueMode::Fixed(l) if l == value_len => ValueMode::Fixed(l),
            _ => ValueMode::Variable,
        };
        let vl_bytes = varint::len(u64::from(value_len));
        if self.entry_count > 0 {
            let mut entries_len = self.entries.len() + header_len(shared, unshared) + key.len()
                - shared
                + value.len();
            if new_mode == ValueMode::Variable {
                entries_len += vl_bytes;
                if self.mode != ValueMode::Variable {
                    entries_len += self.value_len_varint_bytes;
                }
            }
            let restarts = self.restarts.len() + usize::from(restart);
            let width = if entries_len > usize::from(u16::MAX) {
                4
            } else {
                2
            };
            if entries_len + restarts * width + TRAILER_BYTES > self.block_bytes {
                return false;
            }
        }
        if new_mode == ValueMode::Variable && self.mode != ValueMode::Variable {
            self.convert_to_variable();
        }
        self.mode = new_mode;
        if restart {
            self.restarts.push(self.entries.len() as u32);
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
        if self.mode == ValueMode::Variable {
            varint::put(&mut self.entries, u64::from(value_len));
        }
        self.entries
            .extend_from_slice(key.get(shared..).unwrap_or_default());
        self.entries.extend_from_slice(value);
        self.value_len_varint_bytes += vl_bytes;
        self.last_key.truncate(shared);
        self.last_key
            .extend_from_slice(key.get(shared..).unwrap_or_default());
        self.entry_count += 1;
        true
    }

    /// Re-encodes the entries so far with per-entry value lengths.
    fn convert_to_variable(&mut self) {
        let ValueMode::Fixed(fixed) = self.mode else {
            return;
        };
        let old = std::mem::take(&mut self.entries);
        let mut out = Vec::with_capacity(old.len() + self.value_len_varint_bytes + 64);
        let mut pos = 0usize;
        let mut restart_iter = 0usize;
        for i in 0..self.entry_count {
            if i % self.restart_interval == 0 {
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
        let used = self.entries.len() + self.restarts.len() * width + TRAILER_BYTES;
        let total = used.div_ceil(self.block_bytes) * self.block_bytes;
        out.extend_from_slice(&self.entries);
        // Padding goes between the entries and the restarts, so that the restarts sit right
        // before the trailer: a get reads both from the block's last cache lines.
        out.resize(
            start + total - TRAILER_BYTES - self.restarts.len() * width,
            0,
        );
        for &r in &self.restarts {
            if wide {
                out.extend_from_slice(&r.to_le_bytes());
            } else {
                out.extend_from_slice(&(r as u16).to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.entry_count.to_le_bytes());
        let fixed = match self.mode {
            ValueMode::Fixed(l) => l,
            ValueMode::Unset | ValueMode::Variable => VARIABLE_VALUES,
        };
        out.extend_from_slice(&fixed.to_le_bytes());
        out.push(if wide { FLAG_WIDE_RESTARTS } else { 0 });
        let sum = xxh3_64(out.get(start..).unwrap_or_default());
        out.extend_from_slice(&sum.to_le_bytes());
        self.entries.clear();
        self.restarts.clear();
        self.entry_count = 0;
        self.mode = ValueMode::Unset;
        self.value_len_varint_bytes = 0;
        self.last_key.clear();
        total
    }
}
