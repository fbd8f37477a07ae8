//! Data blocks: prefix-compressed entries with restart points and a checksummed trailer.
//!
//! A block occupies a whole number of `block_size` units and starts at a multiple of
//! `block_size`, so a cold read of a typical block touches exactly one page:
//!
//! ```text
//! [entries][zero padding][restart hints: u32 BE, one per restart]
//!   [restart offsets: u16 or u32 LE, one per restart][trailer]
//! trailer (TRAILER_BYTES = 25, little-endian):
//!   u32 entries_len  u32 entry_count  u32 fixed_value_len (u32::MAX = per-entry lengths)
//!   u32 prefix_len (common prefix of the block's first and last keys)
//!   u8 flags (bit 0: restart offsets are u32)  u64 checksum (xxh3-64 of every byte before it)
//! ```
//!
//! Entry: a header byte whose high nibble is the shared key prefix length with the previous
//! entry and low nibble the length of the unshared suffix (15 = "15 plus a varint that
//! follows"), then the varint value length (only when the block has no fixed value length),
//! then the suffix bytes, then the value bytes. Every `restart_interval`-th entry stores its
//! whole key (shared = 0), so its key is a zero-copy slice of the file and a binary search
//! over restart points needs no reconstruction. A restart's hint is the 4 key bytes after
//! the block's common prefix (zero-padded, big-endian): a get binary-searches the hints,
//! which sit with the trailer in the block's last cache lines, and then reads one restart
//! entry and the entries after it, instead of probing restart entries all over the block.

mod builder;
mod reader;

pub(crate) use builder::{BlockBuilder, BlockSizer, common_prefix};
pub(crate) use reader::{BlockRef, RawEntry, verify};

/// Smallest allowed block size. Blocks under 256 bytes suit tables whose every value spans
/// several units (such as a document store's compressed blocks): the padding after each
/// block stays under a unit. Tables of such blocks are written as format version 3.
pub const MIN_BLOCK_BYTES: u32 = 16;
/// Largest allowed block size (restart offsets and lengths stay within u32).
pub const MAX_BLOCK_BYTES: u32 = 1 << 24;
/// Bytes of the fixed trailer at the end of each block.
pub(crate) const TRAILER_BYTES: usize = 25;
/// Bytes of a restart hint.
pub(crate) const HINT_BYTES: usize = 4;
/// `fixed_value_len` marker for "each entry stores its value length".
pub(crate) const VARIABLE_VALUES: u32 = u32::MAX;
/// Trailer flag: restart offsets are 4 bytes wide.
pub(crate) const FLAG_WIDE_RESTARTS: u8 = 1;
/// Nibble value meaning "15 or more, rest in a varint".
pub(crate) const NIBBLE_EXT: u8 = 15;
