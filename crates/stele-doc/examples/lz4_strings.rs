//! The string compression of the converter alone: every string of 128 bytes or more of a JSON
//! file (the default `compress_strings` threshold), compressed and judged (kept if it saves an
//! eighth) by `lz4_flex` with a reused table, then by `stele_doc::lz4` within the kept size.
//! Thread CPU time, MB/s of string bytes, three alternating repetitions. Not a benchmark of
//! record (`stele-bench doc` is): a harness for the encoder's changes.
//!
//! `cargo run --release --example lz4_strings -- FILE.json`

#![allow(clippy::unwrap_used, reason = "a measuring harness")]

fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::String(s) if s.len() >= 128 => out.push(s.clone()),
        _ => {}
    }
}

/// This thread's CPU seconds (user + system, in clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / 100.0
}

fn varint_len(v: usize) -> usize {
    (64 - (v as u64 | 1).leading_zeros() as usize).div_ceil(7)
}

/// The longest compressed form the writer keeps (see `max_compressed_len` in the writer).
fn max_kept(len: usize) -> usize {
    let budget = len - len / 8 - varint_len(len);
    (0..budget)
        .rev()
        .find(|&n| varint_len(n) + n <= budget)
        .unwrap()
}

fn main() {
    let path = std::env::args().nth(1).expect("a JSON file");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut ss = Vec::new();
    strings(&v, &mut ss);
    let total: usize = ss.iter().map(|s| s.len()).sum();
    let mut table = lz4_flex::block::CompressTable::small();
    let mut enc = stele_doc::lz4::Lz4Encoder::new();
    let mut out = vec![0u8; 1 << 20];
    // About 300 MB of strings per measurement: 3 s at 100 MB/s, the tick is 10 ms.
    let rounds = 300_000_000 / total.max(1);
    println!("{} strings, {total} bytes", ss.len());
    for rep in 0..3 {
        let t = cpu_seconds();
        let mut kept_flex = 0;
        for _ in 0..rounds {
            for s in &ss {
                let n =
                    lz4_flex::block::compress_into_with_table(s.as_bytes(), &mut out, &mut table)
                        .unwrap();
                kept_flex += usize::from(n <= max_kept(s.len()));
            }
        }
        let flex = cpu_seconds() - t;
        let t = cpu_seconds();
        let mut kept_ours = 0;
        for _ in 0..rounds {
            for s in &ss {
                let limit = &mut out[..max_kept(s.len())];
                kept_ours += usize::from(enc.compress_within(s.as_bytes(), limit).is_some());
            }
        }
        let ours = cpu_seconds() - t;
        assert_eq!(kept_flex, kept_ours);
        let mb = (total * rounds) as f64 / 1e6;
        println!(
            "rep {rep}: lz4_flex {:.0} MB/s, stele_doc::lz4 {:.0} MB/s, {} kept",
            mb / flex,
            mb / ours,
            kept_flex / rounds
        );
    }
}
