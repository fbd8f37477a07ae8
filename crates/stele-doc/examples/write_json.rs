//! A fixed workload for profilers and for comparing builds by CPU time: documents made from
//! a JSON Lines file (`.jsonl` or `.jsonl.zst`), then written back as compact JSON in
//! original key order, ROUNDS times over. Prints the time per document of the writing (wall
//! clock: use `perf stat` for CPU time) and a checksum of the output, so that two builds can be checked to write the same bytes.
//!
//! `cargo run --release -p stele-doc --example write_json -- FILE [ROUNDS]`

#![allow(clippy::unwrap_used, reason = "a profiling harness")]

use std::io::Read;
use stele_doc::{Document, DocumentWriter, JsonOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = args.get(1).expect("usage: write_json FILE [ROUNDS]");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(20);
    let mut raw = Vec::new();
    std::fs::File::open(file)
        .unwrap()
        .read_to_end(&mut raw)
        .unwrap();
    let text = if file.ends_with(".zst") {
        zstd::decode_all(raw.as_slice()).unwrap()
    } else {
        raw
    };
    let mut w = DocumentWriter::new();
    let docs: Vec<Vec<u8>> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| w.from_json(l).unwrap())
        .collect();
    let docs: Vec<Document<&[u8]>> = docs
        .iter()
        .map(|d| Document::new(d.as_slice()).unwrap())
        .collect();
    let opts = JsonOptions::new();
    let mut out = Vec::new();
    // A checksum of every output byte (FNV-1a), from one pass before the timed ones.
    let mut sum = 0xcbf2_9ce4_8422_2325u64;
    for d in &docs {
        out.clear();
        d.write_json(&mut out, &opts);
        for &b in &out {
            sum = (sum ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut bytes = 0usize;
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        for d in &docs {
            out.clear();
            d.write_json(&mut out, &opts);
            bytes += out.len();
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let n = (docs.len() * rounds) as f64;
    eprintln!(
        "{} documents x {rounds}: {:.1} ns a document, {:.0} MB/s of JSON; checksum {sum:016x}",
        docs.len(),
        secs * 1e9 / n,
        bytes as f64 / secs / 1e6
    );
}
