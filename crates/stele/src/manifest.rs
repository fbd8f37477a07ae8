//! The manifest: which tables hold each collection, and up to which log record.
//!
//! `MANIFEST` in the database folder, replaced atomically (temp file, fsync, rename, fsync
//! of the folder) at every checkpoint:
//!
//! ```text
//! 0   8 bytes magic "STELEMAN"
//! 8   u32 version (9; versions 1 to 8 are read too)
//! 12  u32 number of collections
//! 16  u64 sequence number of the last batch the tables contain
//! 24  per collection, sorted by name: varint name length, name (UTF-8),
//!     16 bytes top table id (all zero: no table yet), varint number of documents (v2)
//! ..  u32 number of indexes, then per index: varint length + collection, varint length +
//!     index name, u8 kind (v6: 1 keys by the query rules, 0 an earlier version's keys),
//!     varint field count, per field varint length + path and (v6) u8 flags (bit 0:
//!     descending; v9, bit 1: some document has held an array there,
//!     `crate::index::arrays`), 16 bytes table id
//! ..  u64 next packed block number (v2)
//! end u64 XXH3-64 of every byte before it
//! ```
//!
//! Version 1 had no document counts (a collection's map length was its count: there were
//! no removal marks) and no packed blocks. Version 2 had no packed index blocks, version 3
//! no compressed dictionaries, version 4 no text blocks (same layout). Before version 6
//! indexes had no kind and no field flags: their keys are an earlier version's
//! (`IndexDef::query_keys` false). Before version 9 no flag said which fields had held
//! arrays: every field of such an index counts as having held them.
//!
//! Recovery opens the tables named here and replays log records with a higher sequence
//! number. Replaying a record the tables already contain is harmless: every operation sets
//! or removes a key.

use crate::bytes::{Reader, put_bytes, put_varint};
use crate::error::{Error, Result};
use crate::index::{ArrayFields, IndexDef};
use std::collections::BTreeMap;
use std::path::Path;
use stele_table::{Storage, TableId};
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: [u8; 8] = *b"STELEMAN";
/// 3: index maps may hold compressed blocks of keys (`crate::index::packed`), which builds
/// that read version 2 would not see. 4: dictionaries in the meta collection may be stored
/// compressed (`crate::compress::dictionary_to_stored`), which builds that read version 3
/// would load as raw-content dictionaries and decode values with wrongly. 5: packed blocks
/// may be text blocks (codec 7, `crate::compress::Codec::TextBlock`: documents kept as the
/// JSON text an import read), which builds that read version 4 would report as corrupt.
/// Otherwise laid out as version 2. 6: an index kind and field flags (indexes by the query
/// rules, descending fields), which builds that read version 5 would not see. 7: laid out
/// as 6; collections may hold integer ids (`crate::ids`: the meta key `ids/<collection>`),
/// whose keys builds that read version 6 would show as text (`B42` for 42) once a
/// checkpoint has taken the mark out of the log. 8: laid out as 6; text blocks may hold
/// elided text forms (`crate::compress::elide`: an import's records without their id
/// field, put back from the key when read), which builds that read version 7 would report
/// as corrupt documents. 9: laid out as 6, with field flag bit 1 (the field has held an
/// array), which builds that read version 8 would reject as an index entry that does not
/// decode.
pub(crate) const VERSION: u32 = 9;
/// File name of the manifest in the database folder.
pub(crate) const FILE_NAME: &str = "MANIFEST";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub seq: u64,
    pub collections: BTreeMap<String, Option<TableId>>,
    pub indexes: Vec<IndexEntry>,
    /// Documents per collection; `None` when read from a version 1 manifest.
    pub counts: Option<BTreeMap<String, u64>>,
    /// Next packed block number (1 in a version 1 manifest).
    pub next_block: u64,
}

/// One index of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    pub def: IndexDef,
    /// Its top table (`None`: no table yet).
    pub table: Option<TableId>,
    /// The fields its documents have held arrays at (every field of a manifest before
    /// version 9).
    pub arrays: ArrayFields,
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.encode_as(VERSION)
    }

    /// The manifest laid out as version `version` (2 to the current one) writes it: before
    /// version 6 without index kinds and field flags. Older versions are written only to
    /// make fuzz seeds and test what older builds left.
    pub(crate) fn encode_as(&self, version: u32) -> Vec<u8> {
        let v6 = version >= 6;
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(self.collections.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        for (name, id) in &self.collections {
            put_bytes(&mut out, name.as_bytes());
            out.extend_from_slice(&id.map_or([0; 16], TableId::to_bytes));
            let count = self.counts.as_ref().and_then(|c| c.get(name)).copied();
            put_varint(&mut out, count.unwrap_or(0));
        }
        out.extend_from_slice(&(self.indexes.len() as u32).to_le_bytes());
        for IndexEntry {
            def,
            table: id,
            arrays,
        } in &self.indexes
        {
            put_bytes(&mut out, def.collection.as_bytes());
            put_bytes(&mut out, def.name.as_bytes());
            if v6 {
                out.push(u8::from(def.query_keys));
            }
            put_varint(&mut out, def.fields.len() as u64);
            for (i, (f, &desc)) in def.fields.iter().zip(&def.descending).enumerate() {
                put_bytes(&mut out, f.as_str().as_bytes());
                if v6 {
                    let held_arrays = version >= 9 && arrays.has(i);
                    out.push(u8::from(desc) | (u8::from(held_arrays) << 1));
                }
            }
            out.extend_from_slice(&id.map_or([0; 16], TableId::to_bytes));
        }
        out.extend_from_slice(&self.next_block.to_le_bytes());
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
        let mut r = Reader::new(body);
        if r.take(8).ok_or_else(|| bad("truncated"))? != MAGIC {
            return Err(bad("no manifest magic"));
        }
        let version = r.u32().ok_or_else(|| bad("truncated"))?;
        if !(1..=VERSION).contains(&version) {
            return Err(bad("unsupported manifest version"));
        }
        let v2 = version >= 2;
        let v6 = version >= 6;
        let v9 = version >= 9;
        let count = r.u32().ok_or_else(|| bad("truncated"))?;
        let seq = r.u64().ok_or_else(|| bad("truncated"))?;
        let mut collections = BTreeMap::new();
        let mut counts = BTreeMap::new();
        for _ in 0..count {
            let name = r
                .text()
                .ok_or_else(|| bad("a collection entry does not decode"))?;
            let id = read_id(&mut r).ok_or_else(|| bad("truncated"))?;
            // Written in order from a map: a name out of order (or repeated) was not.
            if collections
                .last_key_value()
                .is_some_and(|(last, _): (&String, _)| *last >= name)
            {
                return Err(bad("collection names are not in strictly ascending order"));
            }
            if v2 {
                let n = r.varint().ok_or_else(|| bad("truncated"))?;
                counts.insert(name.clone(), n);
            }
            collections.insert(name, id);
        }
        let index_count = r.u32().ok_or_else(|| bad("truncated"))?;
        let mut indexes = Vec::new();
        for _ in 0..index_count {
            let entry = (|| {
                let collection = r.text()?;
                let name = r.text()?;
                let query_keys = match (v6, v6.then(|| r.u8()).flatten()) {
                    (false, _) => false,
                    (true, Some(0)) => false,
                    (true, Some(1)) => true,
                    (true, _) => return None,
                };
                let n = r.varint()?;
                if n == 0 || n > 16 {
                    return None;
                }
                let mut fields = Vec::new();
                let mut descending = Vec::new();
                // Before version 9 not known: every field counts as having held arrays.
                let mut arrays = ArrayFields::NONE;
                // Bit 0 (v6 on): descending; bit 1 (v9 on): has held arrays; no other.
                let known_flags = if v9 { 0b11 } else { 0b01 };
                for i in 0..n {
                    fields.push(r.text()?);
                    let flags = if v6 { r.u8()? } else { 0 };
                    if flags & !known_flags != 0 {
                        return None;
                    }
                    descending.push(flags & 1 != 0);
                    if !v9 || flags & 0b10 != 0 {
                        arrays.add(usize::try_from(i).ok()?);
                    }
                }
                let id = read_id(&mut r)?;
                let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
                let def = IndexDef::from_parts(&collection, &name, &refs, descending, query_keys);
                Some(IndexEntry {
                    def: def.ok()?,
                    table: id,
                    arrays,
                })
            })();
            indexes.push(entry.ok_or_else(|| bad("an index entry does not decode"))?);
        }
        let next_block = if v2 {
            r.u64().ok_or_else(|| bad("truncated"))?
        } else {
            1
        };
        if !r.is_empty() {
            return Err(bad("bytes after the last entry"));
        }
        Ok(Manifest {
            seq,
            collections,
            indexes,
            counts: v2.then_some(counts),
            next_block,
        })
    }

    /// Writes the manifest into `dir` atomically.
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        let path = dir.join(FILE_NAME);
        let temp = dir.join(format!("{FILE_NAME}.tmp"));
        // A temp file left by a crash during an earlier checkpoint is replaced: the database
        // lock keeps other writers out.
        Ok(stele_table::replace_file(
            storage,
            &temp,
            &path,
            &self.encode(),
        )?)
    }
}

/// A table id, all zero for none.
fn read_id(r: &mut Reader<'_>) -> Option<Option<TableId>> {
    let id: [u8; 16] = r.take(16)?.try_into().ok()?;
    Some((id != [0; 16]).then(|| TableId::from_bytes(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_corruption() {
        let mut m = Manifest {
            seq: 42,
            next_block: 77,
            counts: Some(BTreeMap::from([("books".into(), 3), ("empty".into(), 0)])),
            ..Manifest::default()
        };
        m.collections
            .insert("books".into(), Some(TableId::from_u128(7)));
        m.collections.insert("empty".into(), None);
        let mut arrays = ArrayFields::NONE;
        arrays.add(1);
        m.indexes.push(IndexEntry {
            def: IndexDef::new("books", "by_year", &["year", "tags[]:desc"]).unwrap(),
            table: Some(TableId::from_u128(9)),
            arrays,
        });
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

    /// A manifest of version 8 says nothing of arrays: its indexes count every field as
    /// having held them (the planner then serves no sort it could get wrong).
    #[test]
    fn indexes_of_older_manifests_count_every_field_as_holding_arrays() {
        let mut m = Manifest::default();
        m.indexes.push(IndexEntry {
            def: IndexDef::new("c", "i", &["a", "b:desc"]).unwrap(),
            table: None,
            arrays: ArrayFields::NONE,
        });
        let p = Path::new("MANIFEST");
        let now = Manifest::decode(&m.encode(), p).unwrap();
        assert_eq!(now.indexes[0].arrays, ArrayFields::NONE);
        let old = Manifest::decode(&m.encode_as(8), p).unwrap();
        assert!(old.indexes[0].arrays.has(0) && old.indexes[0].arrays.has(1));
        // Written again as version 9, it says the same (what the fuzz target checks).
        let again = Manifest::decode(&old.encode(), p).unwrap();
        assert_eq!(again, old);
        assert_eq!(
            old.indexes[0].def, m.indexes[0].def,
            "directions still read"
        );
        // Bit 1 in a version 8 manifest is no flag of that version.
        let mut bytes = m.encode();
        let at = bytes.iter().rposition(|&b| b == b'b').unwrap() + 1;
        assert_eq!(bytes[at], 0b01, "the flags of `b:desc`");
        bytes[at] = 0b11;
        bytes[8] = 8;
        let body = bytes.len() - 8;
        let sum = xxh3_64(&bytes[..body]);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(Manifest::decode(&bytes, p).is_err());
        bytes[8] = 9;
        let sum = xxh3_64(&bytes[..body]);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(
            Manifest::decode(&bytes, p).unwrap().indexes[0]
                .arrays
                .has(1)
        );
    }

    /// Found by the `manifest` fuzz target: collections "authors" then "Books" (out of
    /// order, with a right checksum) read, and wrote back in the other order.
    #[test]
    fn collections_out_of_order_are_corrupt() {
        let mut bytes = vec![
            0x53, 0x54, 0x45, 0x4c, 0x45, 0x4d, 0x41, 0x4e, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00,
            0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x61, 0x75, 0x74,
            0x68, 0x6f, 0x72, 0x73, 0xf0, 0x73, 0xb9, 0x0e, 0x46, 0x85, 0x45, 0x1e, 0xcb, 0x34,
            0xe9, 0x69, 0xac, 0xc8, 0x5a, 0x93, 0x01, 0x05, 0x42, 0x6f, 0x6f, 0x6b, 0x73, 0xb8,
            0xb7, 0xda, 0x90, 0x3b, 0xb1, 0x12, 0x35, 0x67, 0xec, 0x8b, 0xcc, 0xed, 0x77, 0xa9,
            0x49, 0x02, 0x01, 0x00, 0x00, 0x00, 0x05, 0x62, 0x6f, 0x6f, 0x6b, 0x73, 0x07, 0x62,
            0x79, 0x5f, 0x79, 0x65, 0x61, 0x72, 0x02, 0x04, 0x79, 0x65, 0x61, 0x72, 0x06, 0x74,
            0x61, 0x67, 0x73, 0x5b, 0x5d, 0x67, 0xdf, 0xea, 0x83, 0x65, 0x63, 0x7a, 0xe3, 0xbb,
            0xc9, 0x52, 0xac, 0xa5, 0xce, 0xa6, 0x33, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00,
        ];
        let sum = xxh3_64(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
        let err = Manifest::decode(&bytes, Path::new("MANIFEST")).unwrap_err();
        assert!(err.to_string().contains("ascending"), "{err}");
    }
}
