//! The fixed-size footer at the end of every table file.
//!
//! Layout (all integers little-endian), [`FOOTER_BYTES`] bytes:
//!
//! ```text
//! 0   u32 format version (2, or 3 when the block size is under 256 bytes)
//!                                 4   u32 flags (bit 0 list, bit 1 diff, bit 2 positional)
//! 8   u32 block size (bytes)      12  u32 restart interval (entries)
//! 16  u64 entry count             24  u64 block count
//! 32  u64 index offset            40  u64 index length (bytes)
//! 48  u64 raw key bytes           56  u64 raw value bytes
//! 64  u64 index checksum (xxh3-64 of the index bytes)
//! 72  16 bytes parent table id (diffs: the layer this diff applies to; zero otherwise)
//! 88  u64 logical length (diffs: entries of the collection with this diff applied;
//!         otherwise the entry count)
//! 96  u64 reserved, zero
//! 104 u64 footer checksum (xxh3-64 of bytes 0..104)
//! 112 8 bytes magic "STELETBL"
//! ```

use crate::error::{Error, Part, Result};
use crate::id::TableId;
use xxhash_rust::xxh3::xxh3_64;

/// Magic at the very end of the file.
pub const MAGIC: [u8; 8] = *b"STELETBL";
/// Newest format version this build writes and reads. Version 3 is version 2 with block
/// sizes from [`crate::block::MIN_BLOCK_BYTES`] (16 bytes) up; a table is written as version
/// 2 whenever its block size is 256 bytes or more, so builds that read only version 2 still
/// read every such table, and report a table of smaller blocks as a newer version instead of
/// as damage.
pub const FORMAT_VERSION: u32 = 3;
/// Oldest format version this build reads.
const OLDEST_VERSION: u32 = 2;
/// Smallest block size a version 2 table may have.
const V2_MIN_BLOCK_BYTES: u32 = 256;
/// Size of the footer in bytes.
pub const FOOTER_BYTES: usize = 120;
/// Size of the version 1 footer, only read to name the version in the error.
const V1_FOOTER_BYTES: usize = 88;
/// Footer flag: the file is a list (values by position, empty keys).
pub(crate) const FLAG_LIST: u32 = 1;
/// Footer flag: the file is a diff (every value starts with an operation byte) applying to
/// the table named in the parent field.
pub(crate) const FLAG_DIFF: u32 = 2;
/// Footer flag: keys are 8-byte big-endian positions (the diff of a list).
pub(crate) const FLAG_POSITIONAL: u32 = 4;
const KNOWN_FLAGS: u32 = FLAG_LIST | FLAG_DIFF | FLAG_POSITIONAL;
/// Byte offset of the footer checksum (it covers the bytes before it).
const CHECKSUM_AT: usize = 104;

/// Decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub flags: u32,
    pub block_size: u32,
    pub restart_interval: u32,
    pub entry_count: u64,
    pub block_count: u64,
    pub index_offset: u64,
    pub index_len: u64,
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub index_checksum: u64,
    /// Zero unless the file is a diff.
    pub parent: [u8; 16],
    pub logical_len: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b.get(at..at + 4).unwrap_or(&[0; 4]));
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b.get(at..at + 8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(a)
}

/// The version of a file written with the 88-byte version 1 footer, if it is one.
fn v1_version(file: &[u8]) -> Option<u32> {
    let start = file.len().checked_sub(V1_FOOTER_BYTES)?;
    let b = file.get(start..)?;
    let stored = u64_at(b, 72);
    (b.get(80..) == Some(&MAGIC[..]) && xxh3_64(b.get(..72)?) == stored).then(|| u32_at(b, 0))
}

impl Footer {
    pub(crate) fn encode(&self) -> [u8; FOOTER_BYTES] {
        let mut out = Vec::with_capacity(FOOTER_BYTES);
        out.extend_from_slice(&Self::version_for(self.block_size).to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.block_size.to_le_bytes());
        out.extend_from_slice(&self.restart_interval.to_le_bytes());
        for v in [
            self.entry_count,
            self.block_count,
            self.index_offset,
            self.index_len,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.index_checksum,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.parent);
        out.extend_from_slice(&self.logical_len.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        debug_assert_eq!(out.len(), CHECKSUM_AT);
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out.extend_from_slice(&MAGIC);
        let mut arr = [0u8; FOOTER_BYTES];
        arr.copy_from_slice(&out);
        arr
    }

    /// Reads and checks the footer of a whole file image.
    pub(crate) fn decode(file: &[u8]) -> Result<Footer> {
        let file_bytes = file.len() as u64;
        let Some(start) = file.len().checked_sub(FOOTER_BYTES) else {
            if let Some(found) = v1_version(file) {
                return Err(Error::UnsupportedVersion {
                    found,
                    supported: FORMAT_VERSION,
                });
            }
            return Err(Error::NotATable {
                reason: "shorter than a footer",
                file_bytes,
            });
        };
        let b = file.get(start..).unwrap_or(&[]);
        if b.get(FOOTER_BYTES - MAGIC.len()..) != Some(&MAGIC[..]) {
            return Err(Error::NotATable {
                reason: "no table magic at the end",
                file_bytes,
            });
        }
        let stored = u64_at(b, CHECKSUM_AT);
        let computed = xxh3_64(b.get(..CHECKSUM_AT).unwrap_or(&[]));
        if stored != computed {
            // A footer of an older version has its own checksum: name the version rather
            // than reporting corruption.
            if let Some(found) = v1_version(file) {
                return Err(Error::UnsupportedVersion {
                    found,
                    supported: FORMAT_VERSION,
                });
            }
            return Err(Error::ChecksumMismatch {
                part: Part::Footer,
                stored,
                computed,
            });
        }
        let version = u32_at(b, 0);
        if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let mut parent = [0u8; 16];
        parent.copy_from_slice(b.get(72..88).unwrap_or(&[0; 16]));
        let f = Footer {
            flags: u32_at(b, 4),
            block_size: u32_at(b, 8),
            restart_interval: u32_at(b, 12),
            entry_count: u64_at(b, 16),
            block_count: u64_at(b, 24),
            index_offset: u64_at(b, 32),
            index_len: u64_at(b, 40),
            raw_key_bytes: u64_at(b, 48),
            raw_value_bytes: u64_at(b, 56),
            index_checksum: u64_at(b, 64),
            parent,
            logical_len: u64_at(b, 88),
        };
        let bad = |reason| Err(Error::corrupt(Part::Footer, reason));
        if f.flags & !KNOWN_FLAGS != 0 {
            return bad("unknown flags");
        }
        if f.flags & FLAG_LIST != 0 && f.flags & (FLAG_DIFF | FLAG_POSITIONAL) != 0 {
            return bad("a list cannot be a diff or positional");
        }
        if f.flags & FLAG_POSITIONAL != 0 && f.flags & FLAG_DIFF == 0 {
            return bad("positional keys are only used by diffs");
        }
        if (f.flags & FLAG_DIFF == 0) != (f.parent == [0; 16]) {
            return bad("a diff must name its parent, and only a diff has one");
        }
        if f.flags & FLAG_DIFF == 0 && f.logical_len != f.entry_count {
            return bad(
                "logical length differs from the entry count of a table that is not a diff",
            );
        }
        if u64_at(b, 96) != 0 {
            return bad("reserved field is not zero");
        }
        if !f.block_size.is_power_of_two() || f.block_size < crate::block::MIN_BLOCK_BYTES {
            return bad("block size is not a power of two of at least 16");
        }
        if version != Self::version_for(f.block_size) {
            return bad("version does not match the block size (3 below 256 bytes, else 2)");
        }
        if f.restart_interval == 0 {
            return bad("restart interval is zero");
        }
        if f.index_offset.checked_add(f.index_len) != Some(start as u64) {
            return Err(Error::corrupt(
                Part::File,
                "file length does not match the index position in the footer (truncated or extended)",
            ));
        }
        if !f.index_offset.is_multiple_of(u64::from(f.block_size)) {
            return bad("index offset is not a multiple of the block size");
        }
        if f.block_count > f.index_offset / u64::from(f.block_size) {
            return bad("more blocks than fit before the index");
        }
        Ok(f)
    }

    /// The version a table of `block_size` byte blocks is written as: the oldest that can
    /// describe it.
    fn version_for(block_size: u32) -> u32 {
        if block_size < V2_MIN_BLOCK_BYTES {
            FORMAT_VERSION
        } else {
            OLDEST_VERSION
        }
    }

    pub(crate) fn is_list(&self) -> bool {
        self.flags & FLAG_LIST != 0
    }

    /// The diff description, for diff tables.
    pub(crate) fn diff(&self) -> Option<DiffInfo> {
        (self.flags & FLAG_DIFF != 0).then_some(DiffInfo {
            parent: TableId::from_bytes(self.parent),
            logical_len: self.logical_len,
            positional: self.flags & FLAG_POSITIONAL != 0,
        })
    }
}

/// What makes a table a diff: written with [`TableOptions::diff`](crate::TableOptions::diff),
/// read with [`Table::diff_info`](crate::Table::diff_info).
///
/// A diff is an ordinary sorted table whose every value starts with an operation byte
/// ([`DIFF_PUT`] then the value, or [`DIFF_REMOVE`] alone), applied on top of the table named
/// by `parent` (a base or another diff). Durable collections (crate `stele-durable`) stack
/// them; this crate only stores and checks the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DiffInfo {
    /// The table this diff applies to.
    pub parent: TableId,
    /// Entries in the collection once this diff is applied (maps: live keys; lists: length).
    pub logical_len: u64,
    /// Keys are 8-byte big-endian positions (the diff of a list) rather than map keys.
    pub positional: bool,
}

impl DiffInfo {
    /// A diff on top of `parent`, leaving `logical_len` entries; `positional` for lists.
    pub fn new(parent: TableId, logical_len: u64, positional: bool) -> Self {
        DiffInfo {
            parent,
            logical_len,
            positional,
        }
    }
}

/// Operation byte of a diff value: the key is set to the bytes that follow.
pub const DIFF_PUT: u8 = 1;
/// Operation byte of a diff value: the key is removed (nothing follows).
pub const DIFF_REMOVE: u8 = 0;
