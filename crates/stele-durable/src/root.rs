//! Root files: a named pointer (like a git ref) to the top table of a collection's stack.
//!
//! A root lives in `<store>/roots/<name>` and is replaced atomically (temp file, fsync,
//! rename, fsync of the folder), so a reader sees the old or the new one, never a mix.
//! Layout (48 bytes, integers little-endian):
//!
//! ```text
//! 0   8 bytes magic "STELEREF"
//! 8   u32 version (1)
//! 12  u32 kind (1 map, 2 list)
//! 16  u64 generation (1 for a new root, +1 on every switch)
//! 24  16 bytes top table id (XXH3-128 content id, as in the file name)
//! 40  u64 checksum: XXH3-64 of bytes 0..40
//! ```

use crate::error::{Error, Result};
use std::path::Path;
use stele_table::TableId;
use xxhash_rust::xxh3::xxh3_64;

/// Magic at the start of a root file.
pub const ROOT_MAGIC: [u8; 8] = *b"STELEREF";
/// Version of the root file layout.
pub const ROOT_VERSION: u32 = 1;
/// Size of a root file in bytes.
pub const ROOT_BYTES: usize = 48;

/// What a collection is: the kind recorded in its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A [`DurableMap`](crate::DurableMap).
    Map,
    /// A [`DurableList`](crate::DurableList).
    List,
}

impl Kind {
    fn code(self) -> u32 {
        match self {
            Kind::Map => 1,
            Kind::List => 2,
        }
    }

    pub(crate) fn article(self) -> &'static str {
        match self {
            Kind::Map => "a map",
            Kind::List => "a list",
        }
    }
}

/// The state of a root: which collection it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RootInfo {
    /// Map or list.
    pub kind: Kind,
    /// Counts switches: 1 when created, +1 every switch.
    pub generation: u64,
    /// The top table of the collection's stack.
    pub id: TableId,
}

impl RootInfo {
    /// The 48 bytes of the root file holding this state.
    pub fn encode(&self) -> [u8; ROOT_BYTES] {
        let mut out = [0u8; ROOT_BYTES];
        let mut parts = Vec::with_capacity(ROOT_BYTES);
        parts.extend_from_slice(&ROOT_MAGIC);
        parts.extend_from_slice(&ROOT_VERSION.to_le_bytes());
        parts.extend_from_slice(&self.kind.code().to_le_bytes());
        parts.extend_from_slice(&self.generation.to_le_bytes());
        parts.extend_from_slice(&self.id.to_bytes());
        let sum = xxh3_64(&parts);
        parts.extend_from_slice(&sum.to_le_bytes());
        out.copy_from_slice(&parts);
        out
    }

    /// Reads the bytes of a root file (`path` names it in errors): checks its length, magic,
    /// checksum, version, kind and generation.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<RootInfo> {
        let bad = |reason| {
            Err(Error::CorruptRoot {
                path: path.to_path_buf(),
                reason,
            })
        };
        if bytes.len() != ROOT_BYTES {
            return bad("wrong length (a root file is 48 bytes)");
        }
        let field = |at: usize, len: usize| bytes.get(at..at + len).unwrap_or(&[]);
        let u32_at = |at| u32::from_le_bytes(field(at, 4).try_into().unwrap_or([0; 4]));
        let u64_at = |at| u64::from_le_bytes(field(at, 8).try_into().unwrap_or([0; 8]));
        if field(0, 8) != ROOT_MAGIC {
            return bad("no root magic");
        }
        if u64_at(40) != xxh3_64(field(0, 40)) {
            return bad("checksum mismatch");
        }
        if u32_at(8) != ROOT_VERSION {
            return bad("unsupported root version");
        }
        let kind = match u32_at(12) {
            1 => Kind::Map,
            2 => Kind::List,
            _ => return bad("unknown collection kind"),
        };
        let generation = u64_at(16);
        if generation == 0 {
            return bad("generation is zero");
        }
        let id = TableId::from_bytes(field(24, 16).try_into().unwrap_or([0; 16]));
        let info = RootInfo {
            kind,
            generation,
            id,
        };
        debug_assert_eq!(info.encode().as_slice(), bytes);
        Ok(info)
    }
}

/// Checks that `name` can be a root file name.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = (1..=100).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidRootName {
            name: name.chars().take(120).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_corruption() {
        let info = RootInfo {
            kind: Kind::List,
            generation: 7,
            id: TableId::from_u128(0xabcdef),
        };
        let bytes = info.encode();
        let p = Path::new("r");
        assert_eq!(RootInfo::decode(&bytes, p).unwrap(), info);
        for i in 0..bytes.len() {
            let mut bad = bytes;
            bad[i] ^= 0x04;
            assert!(RootInfo::decode(&bad, p).is_err(), "byte {i}");
        }
        for len in 0..bytes.len() {
            assert!(RootInfo::decode(&bytes[..len], p).is_err());
        }
    }

    #[test]
    fn names() {
        for good in ["main", "a", "v1.2_x-y", &"n".repeat(100)] {
            check_name(good).unwrap();
        }
        for bad in ["", ".hidden", "a/b", "..", "a b", "é", &"n".repeat(101)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
