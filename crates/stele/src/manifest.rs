//! The manifest: which tables hold each collection, and up to which log record.
//!
//! `MANIFEST` in the database folder, replaced atomically (temp file, fsync, rename, fsync
//! of the folder) at every checkpoint:
//!
//! ```text
//! 0   8 bytes magic "STELEMAN"
//! 8   u32 version (1)
//! 12  u32 number of collections
//! 16  u64 sequence number of the last batch the tables contain
//! 24  per collection, sorted by name: varint name length, name (UTF-8),
//!     16 bytes top table id (all zero: no table yet)
//! end u64 XXH3-64 of every byte before it
//! ```
//!
//! Recovery opens the tables named here and replays log records with a higher sequence
//! number. Replaying a record the tables already contain is harmless: every operation sets
//! or removes a key.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use stele_table::{Storage, TableId};
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: [u8; 8] = *b"STELEMAN";
const VERSION: u32 = 1;
/// File name of the manifest in the database folder.
pub(crate) const FILE_NAME: &str = "MANIFEST";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub seq: u64,
    pub collections: BTreeMap<String, Option<TableId>>,
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.collections.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        for (name, id) in &self.collections {
            let mut n = name.len() as u64;
            while n >= 0x80 {
                out.push((n as u8) | 0x80);
                n >>= 7;
            }
            out.push(n as u8);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&id.map_or([0; 16], TableId::to_bytes));
        }
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<Manifest> {
        let bad = |reason: &'static str| Error::CorruptManifest {
            path: path.to_path_buf(),
            reason,
        };
        let body_len = bytes
            .len()
            .checked_sub(8)
            .ok_or_else(|| bad("shorter than a checksum"))?;
        let (body, sum) = bytes.split_at(body_len);
        let sum: [u8; 8] = sum.try_into().map_err(|_| bad("no checksum"))?;
        if xxh3_64(body) != u64::from_le_bytes(sum) {
            return Err(bad("checksum mismatch"));
        }
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let s = body.get(at..at + n).ok_or_else(|| bad("truncated"))?;
            at += n;
            Ok(s)
        };
        if take(8)? != MAGIC {
            return Err(bad("no manifest magic"));
        }
        let word = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
        if word(take(4)?) != VERSION {
            return Err(bad("unsupported manifest version"));
        }
        let count = word(take(4)?);
        let seq = u64::from_le_bytes(take(8)?.try_into().unwrap_or([0; 8]));
        let mut collections = BTreeMap::new();
        for _ in 0..count {
            let mut len = 0u64;
            let mut shift = 0;
            loop {
                let b = *take(1)?.first().ok_or_else(|| bad("truncated"))?;
                len |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    break;
                }
                shift += 7;
                if shift > 63 {
                    return Err(bad("name length does not decode"));
                }
            }
            let len = usize::try_from(len).map_err(|_| bad("name too long"))?;
            let name = std::str::from_utf8(take(len)?)
                .map_err(|_| bad("collection name is not UTF-8"))?
                .to_owned();
            let id: [u8; 16] = take(16)?.try_into().map_err(|_| bad("truncated"))?;
            let id = (id != [0; 16]).then(|| TableId::from_bytes(id));
            collections.insert(name, id);
        }
        if at != body.len() {
            return Err(bad("bytes after the last collection"));
        }
        Ok(Manifest { seq, collections })
    }

    /// Writes the manifest into `dir` atomically.
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        let path = dir.join(FILE_NAME);
        let temp = dir.join(format!("{FILE_NAME}.tmp"));
        // Left by a crash during an earlier checkpoint; the database lock excludes others.
        let _ = std::fs::remove_file(&temp);
        let result = (|| {
            let mut f = storage
                .create(&temp)
                .map_err(|e| Error::io("creating temp manifest", &temp, e))?;
            f.write_all(&self.encode())
                .map_err(|e| Error::io("writing temp manifest", &temp, e))?;
            f.sync()
                .map_err(|e| Error::io("syncing temp manifest", &temp, e))?;
            drop(f);
            storage
                .rename(&temp, &path)
                .map_err(|e| Error::io("renaming manifest into place", &path, e))
        })();
        if result.is_err() {
            let _ = storage.remove(&temp);
        }
        result?;
        storage
            .sync_dir(dir)
            .map_err(|e| Error::io("syncing folder", dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_corruption() {
        let mut m = Manifest {
            seq: 42,
            ..Manifest::default()
        };
        m.collections
            .insert("books".into(), Some(TableId::from_u128(7)));
        m.collections.insert("empty".into(), None);
        let bytes = m.encode();
        let p = Path::new("MANIFEST");
        assert_eq!(Manifest::decode(&bytes, p).unwrap(), m);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(Manifest::decode(&bad, p).is_err(), "byte {i}");
        }
        for len in 0..bytes.len() {
            assert!(Manifest::decode(&bytes[..len], p).is_err(), "length {len}");
        }
    }
}
