//! Helpers shared by the integration tests: where the shared data lives and how to read it.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

/// `../shared/data` beside the repository (override with `STELE_DATA`).
pub fn data_dir() -> PathBuf {
    match std::env::var_os("STELE_DATA") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")),
    }
}

/// The first `n` lines of a zstd-compressed JSON Lines file.
pub fn zst_lines(path: &std::path::Path, n: usize) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = BufReader::new(zstd::Decoder::new(file).unwrap());
    reader
        .lines()
        .take(n)
        .map(|l| l.unwrap())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// Every `.jsonl.zst` collection file, sorted by path.
pub fn collection_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![data_dir().join("collections")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.to_string_lossy().ends_with(".jsonl.zst") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(
        !out.is_empty(),
        "no collections found under {}",
        data_dir().display()
    );
    out
}

/// Parses JSON exactly (arbitrary precision numbers, input key order).
pub fn exact(json: &[u8]) -> serde_json::Value {
    serde_json::from_slice(json).unwrap()
}

/// Converts `json`, checks the document validates, and checks value equality of the output.
/// Returns the document.
pub fn round_trip(json: &[u8]) -> Vec<u8> {
    let bytes = stele_doc::from_json(json)
        .unwrap_or_else(|e| panic!("conversion failed: {e}\n{}", String::from_utf8_lossy(json)));
    let doc = stele_doc::Document::new(bytes.as_slice()).expect("written document validates");
    let out = doc.to_json();
    assert_eq!(exact(out.as_bytes()), exact(json), "value changed: {out}");
    let sorted = doc.to_json_with(&stele_doc::JsonOptions::new().sorted_keys(true));
    assert_eq!(
        exact(sorted.as_bytes()),
        exact(json),
        "sorted output changed values"
    );
    let pretty = doc.to_json_with(&stele_doc::JsonOptions::new().pretty(true));
    assert_eq!(
        exact(pretty.as_bytes()),
        exact(json),
        "pretty output changed values"
    );
    bytes
}

/// Checks that a minified (canonical) rendering of `json` comes back byte for byte.
pub fn byte_exact(json: &[u8]) {
    let minified = serde_json::to_string(&exact(json)).unwrap();
    let bytes = stele_doc::from_json(minified.as_bytes()).unwrap();
    let doc = stele_doc::Document::new(bytes.as_slice()).unwrap();
    let out = doc.to_json();
    if out != minified {
        let at = out
            .bytes()
            .zip(minified.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(out.len().min(minified.len()));
        let lo = at.saturating_sub(40);
        panic!(
            "output differs at byte {at}:\n ours: {}\n want: {}",
            out.get(lo..(at + 40).min(out.len())).unwrap_or(""),
            minified
                .get(lo..(at + 40).min(minified.len()))
                .unwrap_or("")
        );
    }
    let pretty = doc.to_json_with(&stele_doc::JsonOptions::new().pretty(true));
    assert_eq!(pretty, serde_json::to_string_pretty(&exact(json)).unwrap());
}
