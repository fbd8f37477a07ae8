//! The collections the benchmark reads, and one run of Stele's compressor over them.

use anyhow::{Context, Result, ensure};
use stele::compress::{CompressOptions, Compressor, Decoder, Dictionaries};

use crate::data::{Collection, Docs};
use crate::timing::thread_cpu_secs;

/// One collection: JSON text per document and the same documents in Stele's format.
pub(crate) struct Input {
    pub(crate) json: Collection,
    pub(crate) docs: Docs,
    /// The same documents written without LZ4 string compression (`compress_strings(None)`).
    pub(crate) plain: Docs,
}

impl Input {
    pub(crate) fn doc_slices(&self) -> Vec<&[u8]> {
        self.docs.iter().collect()
    }

    pub(crate) fn plain_slices(&self) -> Vec<&[u8]> {
        self.plain.iter().collect()
    }

    pub(crate) fn jsonl(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(self.json.json_bytes() + self.json.len());
        for d in self.json.docs() {
            t.extend_from_slice(d);
            t.push(b'\n');
        }
        t
    }
}

/// Whole collection file (JSON Lines) at zstd -3.
pub(crate) fn whole_file(i: &Input) -> Result<usize> {
    Ok(zstd::bulk::compress(&i.jsonl(), 3)?.len())
}

/// RavenDB 5.0 style (see `doc/ravendb.rs`).
pub(crate) fn ravendb(i: &Input) -> Result<usize> {
    crate::ravendb::ravendb_bytes(&i.json.doc_slices())
}

/// Result of running documents through a [`Compressor`].
pub(crate) struct Run {
    pub(crate) stored: usize,
    pub(crate) dict_bytes: usize,
    pub(crate) dicts: usize,
    pub(crate) trainings: u64,
    pub(crate) compress_secs: f64,
    pub(crate) decompress_secs: f64,
}

impl Run {
    pub(crate) fn total(&self) -> usize {
        self.stored + self.dict_bytes
    }
}

/// Every document through one compressor, as the database would drive it (persist, then
/// adopt); then every stored value decoded and compared with its document.
pub(crate) fn ours(docs: &[&[u8]], opts: CompressOptions) -> Result<Run> {
    let mut c = Compressor::new(opts)?;
    let mut dicts = Dictionaries::new();
    let mut persisted: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut flat = Vec::new();
    let mut ends = Vec::new();
    let mut out = Vec::new();
    let t = thread_cpu_secs();
    for &d in docs {
        c.compress_into(d, &mut out)?;
        flat.extend_from_slice(&out);
        ends.push(flat.len());
        if let Some(nd) = c.take_new_dictionary()? {
            persisted.push((nd.id(), nd.bytes().to_vec()));
            dicts.insert(nd.id(), nd.bytes())?;
            c.adopt(nd)?;
        }
    }
    let compress_secs = thread_cpu_secs() - t;
    let mut dec = Decoder::new()?;
    let mut buf = Vec::new();
    let t = thread_cpu_secs();
    let mut start = 0;
    for (&d, &end) in docs.iter().zip(&ends) {
        let stored = flat.get(start..end).context("stored value range")?;
        dec.decode_into(stored, &dicts, &mut buf)?;
        ensure!(buf == d, "decoded document differs");
        start = end;
    }
    let decompress_secs = thread_cpu_secs() - t;
    Ok(Run {
        stored: flat.len(),
        dict_bytes: persisted.iter().map(|p| p.1.len()).sum(),
        dicts: persisted.len(),
        trainings: c.stats().trainings,
        compress_secs,
        decompress_secs,
    })
}
