//! The RavenDB 5.0 way of compressing documents, as the reference the document store and the
//! compression benchmark compare against: JSON documents, each compressed alone (standard zstd
//! frames, level 3) with an 8 KB dictionary trained on the first 256 documents; documents
//! before the dictionary exists are compressed without one. The dictionary is counted once.

/// Documents RavenDB collects before it trains its first dictionary.
const TRAIN_DOCS: usize = 256;
/// RavenDB's dictionary size.
const DICTIONARY_BYTES: usize = 8 * 1024;

/// Total stored bytes of `docs` (JSON texts, in insertion order), dictionary included.
pub fn ravendb_bytes(docs: &[&[u8]]) -> anyhow::Result<usize> {
    let first: Vec<&[u8]> = docs.iter().take(TRAIN_DOCS).copied().collect();
    let dict = if docs.len() >= TRAIN_DOCS {
        zstd::dict::from_samples(&first, DICTIONARY_BYTES).ok()
    } else {
        None
    };
    let mut plain = zstd::bulk::Compressor::new(3)?;
    let mut total = dict.as_ref().map_or(0, Vec::len);
    let mut with = match &dict {
        Some(d) => Some(zstd::bulk::Compressor::with_dictionary(3, d)?),
        None => None,
    };
    for (n, d) in docs.iter().enumerate() {
        let c = match (&mut with, n >= TRAIN_DOCS) {
            (Some(w), true) => w.compress(d)?,
            _ => plain.compress(d)?,
        };
        total += c.len();
    }
    Ok(total)
}
