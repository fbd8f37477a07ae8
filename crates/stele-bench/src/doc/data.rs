//! Inputs: the JSON corpus files and the JSON Lines collections, decompressed once into memory.

use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use stele_doc::DocumentWriter;

/// Documents as slices of one text buffer.
#[derive(Debug)]
pub struct Collection {
    pub name: String,
    text: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl Collection {
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn docs(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.ranges.iter().filter_map(|r| self.text.get(r.clone()))
    }

    pub fn doc_slices(&self) -> Vec<&[u8]> {
        self.docs().collect()
    }

    /// Bytes of JSON text over all documents (without line breaks).
    pub fn json_bytes(&self) -> usize {
        self.ranges.iter().map(|r| r.len()).sum()
    }
}

/// Converted documents, stored back to back.
#[derive(Debug, Default)]
pub struct Docs {
    bytes: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl Docs {
    /// Converts every document of `c` with `w`.
    pub fn convert(w: &mut DocumentWriter, c: &Collection) -> Result<Docs> {
        let mut d = Docs::default();
        for (i, json) in c.docs().enumerate() {
            let b = w
                .from_json(json)
                .with_context(|| format!("{}: document {i} does not convert", c.name))?;
            let start = d.bytes.len();
            d.bytes.extend_from_slice(&b);
            d.ranges.push(start..d.bytes.len());
        }
        Ok(d)
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.ranges.iter().filter_map(|r| self.bytes.get(r.clone()))
    }

    pub fn total_bytes(&self) -> usize {
        self.bytes.len()
    }
}

/// `../shared/data` next to the repository root.
pub fn default_data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// Reads up to `limit` non-empty lines of a zstd-compressed JSON Lines file.
pub fn load_jsonl_zst(path: &Path, name: String, limit: Option<usize>) -> Result<Collection> {
    let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let dec = zstd::stream::read::Decoder::new(file)?;
    load_lines(BufReader::with_capacity(1 << 20, dec), name, limit)
        .with_context(|| format!("read {}", path.display()))
}

/// Reads up to `limit` non-empty lines of a plain JSON Lines file.
pub fn load_jsonl(path: &Path, name: String, limit: Option<usize>) -> Result<Collection> {
    let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    load_lines(BufReader::new(file), name, limit)
}

fn load_lines(mut r: impl BufRead, name: String, limit: Option<usize>) -> Result<Collection> {
    let mut text = Vec::new();
    let mut ranges = Vec::new();
    let mut line = Vec::new();
    while limit.is_none_or(|l| ranges.len() < l) {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        let start = text.len();
        text.extend_from_slice(trimmed);
        ranges.push(start..text.len());
    }
    Ok(Collection { name, text, ranges })
}

/// One whole JSON file as a one-document collection.
pub fn load_file(path: &Path, name: String) -> Result<Collection> {
    let text = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
    let ranges = std::iter::once(0..text.len()).collect();
    Ok(Collection { name, text, ranges })
}

/// Files under `dir` (recursively) whose name ends with `suffix`, sorted.
pub fn find_files(dir: &Path, suffix: &str) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("list {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The collections (`.jsonl.zst`) under `base` whose path contains `only`; with `quick`, only
/// the three of the CI smoke runs (geonames-cities, github-webhooks, mongodb-zips).
#[allow(dead_code, reason = "for the store_bench and at_rest_bench binaries")]
pub fn bench_collections(base: &Path, only: Option<&str>, quick: bool) -> Result<Vec<PathBuf>> {
    let mut files = find_files(base, ".jsonl.zst")?;
    if let Some(only) = only {
        files.retain(|p| p.to_string_lossy().contains(only));
    }
    if quick {
        files.retain(|p| {
            let s = p.to_string_lossy();
            s.contains("geonames") || s.contains("github-webhooks") || s.contains("mongodb-zips")
        });
    }
    anyhow::ensure!(!files.is_empty(), "no collections under {}", base.display());
    Ok(files)
}

/// A scratch folder `name` under `$CARGO_TARGET_DIR` (default `target`), created.
#[allow(dead_code, reason = "for the store_bench and at_rest_bench binaries")]
pub fn work_dir(name: &str) -> Result<PathBuf> {
    let dir = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
        .join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    Ok(dir)
}

/// The name of `path` relative to `base`, without `suffix`.
pub fn short_name(path: &Path, base: &Path, suffix: &str) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path).to_string_lossy();
    rel.strip_suffix(suffix).unwrap_or(&rel).to_owned()
}
