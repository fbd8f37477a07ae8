//! The crate's internal decoders of stored bytes, for the fuzz targets in `fuzz/` (feature
//! `fuzzing`, which nothing else enables): each as the database reads those bytes, with the
//! writer that made them where there is one, so that a target can decode arbitrary bytes and
//! encode what decoded again.

use std::path::Path;

use crate::compress::{Decoder, Dictionaries, DictionaryId};
use crate::error::{Error, Result};
use crate::index::IndexDef;

/// A raw-content dictionary, id 1 in the seeds of the fuzz targets that decode compressed
/// values (seeds compressed with it reach the decompressor).
pub const SEED_DICTIONARY: &[u8] =
    b"{\"id\":1,\"name\":\"user number\",\"email\":\"user@example.com\",\"tags\":[\"a\",\"b\"]}";

/// A log segment as opening a database reads it.
#[derive(Debug)]
pub struct Segment {
    /// Batches read, in order.
    pub batches: usize,
    /// Length of the whole records at the start of the segment: what opening keeps.
    pub valid: usize,
    /// Why reading stopped before the end of the bytes; `None` for a clean end (including
    /// zeroes after the last record).
    pub stopped: Option<&'static str>,
    /// The batches read, written again by the log writer.
    pub reencoded: Vec<u8>,
}

/// Reads `bytes` as a log segment (`wal::read_segment`) and writes its batches again
/// (`wal::encode_batch`).
pub fn read_log_segment(bytes: &[u8]) -> Result<Segment> {
    let (batches, valid, stopped) = crate::wal::read_segment(bytes);
    let mut reencoded = Vec::new();
    for b in &batches {
        crate::wal::encode_batch(&mut reencoded, b.seq, &b.ops)?;
    }
    Ok(Segment {
        batches: batches.len(),
        valid,
        stopped,
        reencoded,
    })
}

/// A log segment as a reader process tails it while the writer appends (`wal::tail`).
#[derive(Debug)]
pub struct Tailed {
    /// Batches taken, over every read.
    pub batches: usize,
    /// Bytes of whole records taken: where the next read would start.
    pub read_bytes: usize,
    /// The batches taken, written again by the log writer.
    pub reencoded: Vec<u8>,
    /// Whether, after every read, the header the reader keeps of the last record it took
    /// is that record's header in `bytes` (what it checks to notice a cut-back).
    pub last_header_matches: bool,
}

/// Tails `bytes` as a reader does while they are written: a read of what has been written
/// after each `step_bytes` more bytes (1 or more), and one at the end.
pub fn tail_log_segment(bytes: &[u8], step_bytes: usize) -> Result<Tailed> {
    let mut at = crate::wal::tail::Position::default();
    let mut out = Tailed {
        batches: 0,
        read_bytes: 0,
        reencoded: Vec::new(),
        last_header_matches: true,
    };
    let mut written = 0usize;
    while written < bytes.len() {
        written = (written + step_bytes.max(1)).min(bytes.len());
        let from = usize::try_from(at.read_bytes).unwrap_or(usize::MAX);
        let tail = bytes.get(from..written).unwrap_or_default();
        for b in at.take(tail) {
            crate::wal::encode_batch(&mut out.reencoded, b.seq, &b.ops)?;
            out.batches += 1;
        }
        if let Some((offset, header)) = at.last_record {
            let offset = usize::try_from(offset).unwrap_or(usize::MAX);
            out.last_header_matches &= bytes.get(offset..offset + header.len()) == Some(&header);
        }
    }
    out.read_bytes = usize::try_from(at.read_bytes).unwrap_or(usize::MAX);
    Ok(out)
}

/// `bytes` with the checksum of every record of a log segment whose payload is there set
/// right (so that a fuzzer reaches the payload decoder, which a 64-bit checksum would
/// otherwise keep it from).
pub fn with_log_checksums(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut at = 0usize;
    while let Some(len) = out.get(at..at + 4) {
        let n = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let Some(payload) = out.get(at + 12..at + 12 + n) else {
            break;
        };
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(out.get(at..at + 4).unwrap_or_default());
        hasher.update(payload);
        let sum = hasher.digest().to_le_bytes();
        if let Some(slot) = out.get_mut(at + 4..at + 12) {
            slot.copy_from_slice(&sum);
        }
        at += 12 + n;
    }
    out
}

/// Reads `bytes` as a `MANIFEST` file and returns the manifest written again (as the current
/// version).
pub fn reencode_manifest(bytes: &[u8]) -> Result<Vec<u8>> {
    Ok(crate::manifest::Manifest::decode(bytes, Path::new("MANIFEST"))?.encode())
}

/// The manifest version the database writes; older ones are read and written again as it.
pub const MANIFEST_VERSION: u32 = crate::manifest::VERSION;

/// What a `MANIFEST` file says (every field it decodes to, as text), for comparing a
/// manifest of an older version with its encoding as the current one. A version 1
/// manifest has no document counts: it says 0 for each collection, as it is written
/// again (the database computes the counts from the maps before it writes one).
pub fn manifest_meaning(bytes: &[u8]) -> Result<String> {
    let mut m = crate::manifest::Manifest::decode(bytes, Path::new("MANIFEST"))?;
    if m.counts.is_none() {
        m.counts = Some(m.collections.keys().map(|c| (c.clone(), 0)).collect());
    }
    Ok(format!("{m:?}"))
}

/// The version field of a manifest's bytes, whether or not they read.
pub fn manifest_version(bytes: &[u8]) -> Option<u32> {
    let field: [u8; 4] = bytes.get(8..12)?.try_into().ok()?;
    Some(u32::from_le_bytes(field))
}

/// `bytes` (a manifest) as version `version` writes it (before version 6 without index
/// kinds and field flags), with its checksum made right (the fuzz seeds of the older
/// versions are made so). Bytes that do not read are relabelled as they are.
pub fn manifest_as_version(bytes: &[u8], version: u32) -> Vec<u8> {
    if let Ok(m) = crate::manifest::Manifest::decode(bytes, Path::new("MANIFEST")) {
        return m.encode_as(version);
    }
    let mut out = bytes.to_vec();
    if let Some(field) = out.get_mut(8..12) {
        field.copy_from_slice(&version.to_le_bytes());
    }
    if let Some(body_len) = out.len().checked_sub(8) {
        let sum = xxhash_rust::xxh3::xxh3_64(out.get(..body_len).unwrap_or_default());
        if let Some(slot) = out.get_mut(body_len..) {
            slot.copy_from_slice(&sum.to_le_bytes());
        }
    }
    out
}

/// The ids of a packed block, each with its document.
pub type PackedEntries = Vec<(Vec<u8>, Vec<u8>)>;

/// A packed block as the database reads it: a value of the packs map of a collection,
/// stored under key `last_id`, decoded with `dicts`. Its block number, then each id with its
/// document (rebuilt from its stream form where the block holds one).
pub fn read_packed_block(
    last_id: &[u8],
    value: &[u8],
    dicts: &Dictionaries,
) -> Result<(u64, PackedEntries)> {
    let (number, stored) = crate::pack::split_value("fuzz", last_id, value)?;
    let block = Decoder::new()?.decode_block(stored, dicts)?;
    let bad = |reason: String| Error::corrupt_document("fuzz", last_id, reason);
    let block = crate::pack::DecodedBlock::new(number, block, last_id).map_err(bad)?;
    let mut entries = Vec::with_capacity(block.len());
    for i in 0..block.len() {
        let (doc, _) = block.document(i).map_err(|r| bad(r.to_string()))?;
        entries.push((block.id(i).to_vec(), doc.to_vec()));
    }
    Ok((number, entries))
}

/// The collection and dictionary id a key of the meta collection names, if it is the key of
/// a stored dictionary (`dict/<collection>/<id, 10 digits>`).
pub fn parse_dictionary_key(key: &[u8]) -> Option<(String, DictionaryId)> {
    match crate::internal::MetaKey::parse(key).ok()? {
        crate::internal::MetaKey::Dict { collection, id } => Some((collection, id)),
        crate::internal::MetaKey::Compress(_) | crate::internal::MetaKey::IntIds(_) => None,
    }
}

/// An index on `fields` fields (named `f0`, `f1`, ...; 1 to 16).
fn index(fields: usize) -> Result<IndexDef> {
    let names: Vec<String> = (0..fields).map(|i| format!("f{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    IndexDef::new("fuzz", "fuzz", &refs)
}

/// Splits a key of an index on `fields` fields (1 to 16) into its encoded values and the
/// document id, as queries read index keys (`IndexDef::split_key`); `None` if it does not
/// split.
pub fn split_index_key(fields: usize, key: &[u8]) -> Option<(&[u8], &[u8])> {
    index(fields).ok()?.split_key(key)
}

/// The length of the encoded value at the start of `bytes`, if one starts there.
pub fn index_value_len(bytes: &[u8]) -> Option<usize> {
    crate::index::encode::encoded_len_flipped(bytes, 0)
}

/// The keys of a block of a packed index (the value of a block entry of its map), validated
/// as a scan reads them.
pub fn read_index_block(value: &[u8]) -> Result<Vec<Vec<u8>>> {
    crate::index::packed::decode_block(value)
}

/// A block of a packed index holding `keys` (sorted, distinct, at least one), as packing
/// writes it.
pub fn write_index_block(keys: &[Vec<u8>]) -> Result<Vec<u8>> {
    crate::index::packed::encode_block(keys)
}

/// The index keys of document `doc` (bytes of a valid document) under id `id` in an index on
/// the field paths `fields`, as the database writes them.
pub fn index_keys(fields: &[&str], doc: &[u8], id: &[u8]) -> Result<Vec<Vec<u8>>> {
    let def = IndexDef::new("fuzz", "fuzz", fields)?;
    let doc = stele_doc::Document::new(doc)
        .map_err(|e| Error::corrupt_document("fuzz", id, e.to_string()))?;
    Ok(def.keys(&doc, id))
}
