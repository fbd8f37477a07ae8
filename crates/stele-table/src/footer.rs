//! The fixed-size footer at the end of every table file.
//!
//! Layout (all integers little-endian), [`FOOTER_BYTES`] bytes:
//!
//! ```text
//! 0   u32 format version          4   u32 flags (bit 0: list)
//! 8   u32 block size (bytes)      12  u32 restart interval (entries)
//! 16  u64 entry count             24  u64 block count
//! 32  u64 index offset            40  u64 index length (bytes)
//! 48  u64 raw key bytes           56  u64 raw value bytes
//! 64  u64 index checksum (xxh3-64 of the index bytes)
//! 72  u64 footer checksum (xxh3-64 of bytes 0..72)
//! 80  8 bytes magic "STELETBL"
//! ```

use crate::error::{Error, Part, Result};
use xxhash_rust::xxh3::xxh3_64;

/// Magic at the very end of the file.
pub const MAGIC: [u8; 8] = *b"STELETBL";
/// Format version written by this build, and the only one it reads.
pub const FORMAT_VERSION: u32 = 1;
/// Size of the footer in bytes.
pub const FOOTER_BYTES: usize = 88;
/// Footer flag: the file is a list (values by position, empty keys).
pub(crate) const FLAG_LIST: u32 = 1;

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
}

fn u32_at(b: &[u8; FOOTER_BYTES], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b.get(at..at + 4).unwrap_or(&[0; 4]));
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8; FOOTER_BYTES], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b.get(at..at + 8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(a)
}

impl Footer {
    pub(crate) fn encode(&self) -> [u8; FOOTER_BYTES] {
        let mut out = Vec::with_capacity(FOOTER_BYTES);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
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
            return Err(Error::NotATable {
                reason: "shorter than a footer",
                file_bytes,
            });
        };
        let mut b = [0u8; FOOTER_BYTES];
        b.copy_from_slice(file.get(start..).unwrap_or(&[]));
        if b.get(80..) != Some(&MAGIC[..]) {
            return Err(Error::NotATable {
                reason: "no table magic at the end",
                file_bytes,
            });
        }
        let stored = u64_at(&b, 72);
        let computed = xxh3_64(b.get(..72).unwrap_or(&[]));
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                part: Part::Footer,
                stored,
                computed,
            });
        }
        let version = u32_at(&b, 0);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let f = Footer {
            flags: u32_at(&b, 4),
            block_size: u32_at(&b, 8),
            restart_interval: u32_at(&b, 12),
            entry_count: u64_at(&b, 16),
            block_count: u64_at(&b, 24),
            index_offset: u64_at(&b, 32),
            index_len: u64_at(&b, 40),
            raw_key_bytes: u64_at(&b, 48),
            raw_value_bytes: u64_at(&b, 56),
            index_checksum: u64_at(&b, 64),
        };
        let bad = |reason| Err(Error::corrupt(Part::Footer, reason));
        if f.flags & !FLAG_LIST != 0 {
            return bad("unknown flags");
        }
        if !f.block_size.is_power_of_two() || f.block_size < crate::block::MIN_BLOCK_BYTES {
            return bad("block size is not a power of two of at least 256");
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
        if f.index_offset % u64::from(f.block_size) != 0 {
            return bad("index offset is not a multiple of the block size");
        }
        if f.block_count > f.index_offset / u64::from(f.block_size) {
            return bad("more blocks than fit before the index");
        }
        Ok(f)
    }

    pub(crate) fn is_list(&self) -> bool {
        self.flags & FLAG_LIST != 0
    }
}
