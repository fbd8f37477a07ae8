//! The manifest of a table set: which shards, in key order, with their key ranges.
//!
//! Byte layout (all integers little-endian; the diagram is also in `docs/FORMAT.md`):
//!
//! ```text
//! offset  bytes  field
//! 0       8      magic "STELESET"
//! 8       4      version (1)
//! 12      4      flags (0; readers reject any other value)
//! 16      8      shard count N
//! 24      8      total entries (the sum of the shards' counts)
//! 32      ...    N shard records, in key order:
//!                  16  table id (xxh3-128 of the shard file; its name is <id hex>.stt)
//!                   8  entries (> 0)
//!                   8  file bytes
//!                   4  first key length F, then F bytes: the shard's smallest key
//!                   4  last key length L, then L bytes: the shard's largest key
//! end-8   8      checksum: XXH3-64 of every byte before it
//! ```
//!
//! Invariants checked on decode (and asserted before encode): first <= last within a shard,
//! each shard's last key < the next shard's first key, counts add up to the total.

use crate::{Error, TableId, checksum};

/// The manifest's first bytes.
pub const SET_MAGIC: [u8; 8] = *b"STELESET";
/// The manifest format version this build writes and reads.
pub const SET_VERSION: u32 = 1;
/// Bytes before the first shard record.
const HEADER_BYTES: usize = 32;

/// One shard of a set as the manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardInfo {
    /// The shard file's content id (its name is `<id>.stt`, beside the manifest).
    pub id: TableId,
    /// Number of entries (at least 1).
    pub entries: u64,
    /// Size of the shard file.
    pub file_bytes: u64,
    /// Its smallest key.
    pub first_key: Vec<u8>,
    /// Its largest key.
    pub last_key: Vec<u8>,
}

/// Checks the invariants of a list of shards; `Err(reason)` names the first broken one.
pub(crate) fn check_order(shards: &[ShardInfo]) -> Result<(), String> {
    for (i, s) in shards.iter().enumerate() {
        if s.entries == 0 {
            return Err(format!("shard {i} ({}) has no entries", s.id));
        }
        if s.first_key > s.last_key {
            return Err(format!("shard {i} ({}) ends before it starts", s.id));
        }
        if let Some(next) = shards.get(i + 1)
            && s.last_key >= next.first_key
        {
            return Err(format!(
                "the key ranges of shards {i} ({}) and {} ({}) overlap or are out of order: \
                 {:?} is not below {:?}",
                s.id,
                i + 1,
                next.id,
                s.last_key.escape_ascii().to_string(),
                next.first_key.escape_ascii().to_string()
            ));
        }
    }
    Ok(())
}

/// The manifest bytes of `shards` (which must satisfy [`check_order`]).
pub(crate) fn encode(shards: &[ShardInfo]) -> Vec<u8> {
    debug_assert_eq!(check_order(shards), Ok(()));
    let total: u64 = shards.iter().map(|s| s.entries).sum();
    let mut out = Vec::with_capacity(
        HEADER_BYTES
            + 8
            + shards
                .iter()
                .map(|s| 40 + s.first_key.len() + s.last_key.len())
                .sum::<usize>(),
    );
    out.extend_from_slice(&SET_MAGIC);
    out.extend_from_slice(&SET_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(shards.len() as u64).to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    for s in shards {
        out.extend_from_slice(&s.id.to_bytes());
        out.extend_from_slice(&s.entries.to_le_bytes());
        out.extend_from_slice(&s.file_bytes.to_le_bytes());
        for key in [&s.first_key, &s.last_key] {
            // Keys are at most MAX_ITEM_BYTES, far below u32::MAX.
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads fields from the manifest bytes, failing with the reason when they run out.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!("truncated in {what} at byte {}", self.at));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// Decodes and checks manifest bytes: `Err(reason)` says what is wrong.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<ShardInfo>, String> {
    if bytes.len() < HEADER_BYTES + 8 {
        return Err(format!("{} bytes is too short for a manifest", bytes.len()));
    }
    if bytes[..8] != SET_MAGIC {
        return Err("it does not start with the table set magic \"STELESET\"".into());
    }
    let (body, stored) = bytes.split_at(bytes.len() - 8);
    let mut sum = [0u8; 8];
    sum.copy_from_slice(stored);
    let (stored, computed) = (u64::from_le_bytes(sum), checksum(body));
    if stored != computed {
        return Err(format!(
            "checksum mismatch: stored {stored:#018x}, computed {computed:#018x}"
        ));
    }
    let mut r = Reader { bytes: body, at: 8 };
    let version = r.u32("the version")?;
    if version != SET_VERSION {
        return Err(format!(
            "format version {version} is not supported (this build reads version {SET_VERSION}); upgrade stele"
        ));
    }
    let flags = r.u32("the flags")?;
    if flags != 0 {
        return Err(format!("unknown flags {flags:#x}"));
    }
    let count = r.u64("the shard count")?;
    let total = r.u64("the total")?;
    // Each record takes at least 40 bytes: a count beyond that is damage, not a reason to
    // reserve memory.
    let max = (body.len() - HEADER_BYTES) / 40;
    let count = usize::try_from(count)
        .ok()
        .filter(|&c| c <= max)
        .ok_or_else(|| format!("shard count {count} does not fit in {} bytes", body.len()))?;
    let mut shards = Vec::with_capacity(count);
    for i in 0..count {
        let what = |f: &str| format!("shard {i}'s {f}");
        let mut id = [0u8; 16];
        id.copy_from_slice(r.take(16, &what("id"))?);
        let entries = r.u64(&what("entries"))?;
        let file_bytes = r.u64(&what("size"))?;
        let first_len = r.u32(&what("first key length"))? as usize;
        let first_key = r.take(first_len, &what("first key"))?.to_vec();
        let last_len = r.u32(&what("last key length"))? as usize;
        let last_key = r.take(last_len, &what("last key"))?.to_vec();
        shards.push(ShardInfo {
            id: TableId::from_bytes(id),
            entries,
            file_bytes,
            first_key,
            last_key,
        });
    }
    if r.at != body.len() {
        return Err(format!("{} bytes after the last shard", body.len() - r.at));
    }
    check_order(&shards)?;
    let sum_entries = shards
        .iter()
        .try_fold(0u64, |acc, s| acc.checked_add(s.entries))
        .ok_or("the shards' entry counts overflow")?;
    if sum_entries != total {
        return Err(format!(
            "the shards hold {sum_entries} entries, the header says {total}"
        ));
    }
    Ok(shards)
}

/// A manifest error for the file at `path`.
pub(crate) fn corrupt(path: &std::path::Path, reason: String) -> Error {
    Error::CorruptSet {
        path: path.to_path_buf(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn shard(n: u8, first: &[u8], last: &[u8]) -> ShardInfo {
        ShardInfo {
            id: TableId::from_bytes([n; 16]),
            entries: u64::from(n) + 1,
            file_bytes: 100,
            first_key: first.to_vec(),
            last_key: last.to_vec(),
        }
    }

    #[test]
    fn round_trip_and_every_damage_is_caught() {
        let shards = vec![
            shard(1, b"a", b"c"),
            shard(2, b"d", b"d"),
            shard(3, b"e", b"zz"),
        ];
        let bytes = encode(&shards);
        assert_eq!(decode(&bytes).unwrap(), shards);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
        // Any single flipped bit and any truncation is an error, never a panic.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(&bad).is_err(), "flip at {i}");
            assert!(decode(&bytes[..i]).is_err(), "cut at {i}");
        }
    }

    #[test]
    fn order_is_checked() {
        let overlap = vec![shard(1, b"a", b"d"), shard(2, b"d", b"e")];
        assert!(check_order(&overlap).unwrap_err().contains("overlap"));
        let backwards = vec![shard(1, b"b", b"a")];
        assert!(check_order(&backwards).unwrap_err().contains("ends before"));
        let mut empty = shard(1, b"a", b"a");
        empty.entries = 0;
        assert!(check_order(&[empty]).unwrap_err().contains("no entries"));
    }
}
