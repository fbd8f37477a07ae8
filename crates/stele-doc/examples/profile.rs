//! A fixed workload for profilers (callgrind, perf): convert a JSON file repeatedly, then read
//! fields from JSON Lines documents. Not a benchmark: see `stele-bench` for measured comparisons.
//!
//! `cargo run --release --example profile -- FILE.json [FILE.jsonl] [ROUNDS]`

#![allow(clippy::unwrap_used, reason = "a profiling harness")]

use stele_doc::{CachedPath, Document, DocumentWriter};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = std::fs::read(&args[1]).unwrap();
    let rounds: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(20);
    let mut w = if std::env::var_os("NO_LZ4").is_some() {
        DocumentWriter::with_options(stele_doc::WriteOptions::default().compress_strings(None))
    } else {
        DocumentWriter::new()
    };
    let mut total = 0;
    // A JSON Lines first argument converts line by line (collections); otherwise one document.
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let started = std::time::Instant::now();
    if args[1].ends_with(".jsonl") {
        for _ in 0..rounds {
            for line in &lines {
                total += w.from_json(line.as_bytes()).unwrap().len();
            }
        }
    } else {
        // FORGET=1: time first conversions (no key prediction from the previous round).
        let forget = std::env::var_os("FORGET").is_some();
        for _ in 0..rounds {
            if forget {
                w.forget_shape();
            }
            total += w.from_json(&json).unwrap().len();
        }
    }
    let input_bytes = std::fs::metadata(&args[1]).unwrap().len() as f64 * rounds as f64;
    eprintln!(
        "convert: {:.0} MB/s",
        input_bytes / started.elapsed().as_secs_f64() / 1e6
    );
    if let Some(lines) = args.get(2).filter(|a| !a.is_empty()) {
        let text = std::fs::read_to_string(lines).unwrap();
        let docs: Vec<Vec<u8>> = text
            .lines()
            .map(|l| w.from_json(l.as_bytes()).unwrap())
            .collect();
        let fields = std::env::var("FIELDS")
            .unwrap_or_else(|_| "customer.address.city,total,items[0].sku".to_owned());
        let mut paths: Vec<CachedPath> = fields
            .split(',')
            .map(|p| CachedPath::new(p).unwrap())
            .collect();
        // PLAIN_GET=1: `doc.get(key)`; GET_VALUE=1: `CachedPath::get`; else `CachedPath::read`.
        let plain_get = std::env::var_os("PLAIN_GET").is_some();
        let get_value = std::env::var_os("GET_VALUE").is_some();
        // OPEN=1: open and root only (the per-document floor).
        let open_only = std::env::var_os("OPEN").is_some();
        // PREFETCH=N: hint document i+N's trailer and start while document i is read.
        let prefetch_ahead: usize = std::env::var("PREFETCH")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let read_started = std::time::Instant::now();
        let passes = rounds * 10;
        for _ in 0..passes {
            for (i, d) in docs.iter().enumerate() {
                if let Some(next) = docs.get(i + prefetch_ahead).filter(|_| prefetch_ahead > 0) {
                    stele_doc::prefetch_document(next);
                }
                // SAFETY: just written by DocumentWriter.
                let doc = unsafe { Document::new_unchecked(d.as_slice()) };
                if open_only {
                    total += std::hint::black_box(doc.root_object()).map_or(0, |o| o.len());
                } else if plain_get {
                    for p in &paths {
                        let key = p.path_text();
                        total += doc.get(key).map_or(0, |v| digest(&v));
                    }
                } else {
                    for p in &mut paths {
                        total += if get_value {
                            p.get(doc.root()).map_or(0, |v| digest(&v))
                        } else {
                            p.read_doc(&doc, |v| digest(&v)).unwrap_or(0)
                        };
                    }
                }
            }
        }
        eprintln!(
            "read: {:.1} ns per document",
            read_started.elapsed().as_secs_f64() * 1e9 / (passes * docs.len()) as f64
        );
    }
    println!("{total}");
}

/// What a reader does with a value (as `stele-bench doc` part 2): a string's length, a number.
#[inline]
fn digest(v: &stele_doc::Value<'_>) -> usize {
    match v {
        stele_doc::Value::String(s) => s.len(),
        stele_doc::Value::Int(i) => *i as usize,
        other => other.as_f64().map_or(1, |f| f as usize),
    }
}
