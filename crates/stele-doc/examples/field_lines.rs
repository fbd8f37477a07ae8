//! Where the time of a field read goes on documents out of cache: which cache lines a
//! `PathSet` read touches (from the format, per document), the latency of one cache miss on this
//! machine, and ns per document of read loops with and without cache hints, at several
//! distances ahead. Not a benchmark of record (see `stele-bench doc`): a tool for the arithmetic.
//!
//! `cargo run --release --example field_lines -- FILE.jsonl[.zst] [FIELDS] [ROUNDS]`
//! (FIELDS comma-separated top-level keys; default: the first document's first 3 keys).
//! Documents are converted and stored back to back in one buffer, in file order, as in
//! `stele-bench doc`.

#![allow(clippy::unwrap_used, reason = "a measuring harness")]

use std::collections::BTreeSet;
use std::hint::black_box;
use std::io::Read;
use std::ops::Range;
use std::time::Instant;

use stele_doc::{Document, DocumentWriter, PathSet, Value};

const LINE: usize = 64;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = read_text(&args[1]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let fields: Vec<String> = match args.get(2).filter(|a| !a.is_empty()) {
        Some(f) => f.split(',').map(str::to_owned).collect(),
        None => first_keys(lines[0], 3),
    };
    let rounds: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut w = DocumentWriter::new();
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    for l in &lines {
        let d = w.from_json(l.as_bytes()).unwrap();
        ranges.push(buf.len()..buf.len() + d.len());
        buf.extend_from_slice(&d);
    }
    let docs: Vec<&[u8]> = ranges.iter().map(|r| &buf[r.clone()]).collect();
    println!(
        "{} documents, {:.1} MB, {:.0} bytes each on average; fields {fields:?}",
        docs.len(),
        buf.len() as f64 / 1e6,
        buf.len() as f64 / docs.len() as f64
    );
    let oracle = analyse(&docs, &fields);
    let set = PathSet::new(fields.iter().map(String::as_str)).unwrap();
    let n = docs.len() as f64;
    // ONLY=text: only the loops whose name contains it (for profilers).
    let only = std::env::var("ONLY").unwrap_or_default();
    if only.is_empty() || only == "latency" {
        println!(
            "miss latency (dependent loads, random 64-byte slots): {:.1} ns in 256 MB, {:.1} ns in \
             {:.0} MB (4 KB pages: most hops also miss the TLB, a two-level walk in a VM)",
            chase(256 << 20),
            chase(buf.len()),
            buf.len() as f64 / 1e6,
        );
    }
    // The loops, run interleaved round by round (the machine is shared: a slow spell hits
    // every loop alike); each loop's median and best round reported.
    let mut loops: Vec<(String, Box<dyn FnMut() -> u64 + '_>)> = Vec::new();
    let docs = &docs;
    loops.push((
        "open only (trailer + root header)".into(),
        Box::new(move || {
            docs.iter()
                .map(|b| {
                    // SAFETY: just written by DocumentWriter.
                    let doc = unsafe { Document::new_unchecked(*b) };
                    black_box(doc.root_object()).map_or(0, |o| o.len() as u64)
                })
                .sum()
        }),
    ));
    let s = set.clone();
    loops.push((
        "PathSet::read_doc, no hint".into(),
        Box::new(move || read(docs, &mut s.clone(), |_, _| {})),
    ));
    for ahead in [4, 8] {
        let s = set.clone();
        loops.push((
            format!("prefetch_document {ahead} ahead"),
            Box::new(move || {
                read(docs, &mut s.clone(), |d, _| {
                    if let Some(b) = docs.get(d + ahead) {
                        stele_doc::prefetch_document(b);
                    }
                })
            }),
        ));
    }
    for ahead in [2, 4, 6, 8, 12, 16] {
        let s = set.clone();
        loops.push((
            format!("PathSet::prefetch {ahead} ahead"),
            Box::new(move || {
                read(docs, &mut s.clone(), |d, s| {
                    if let Some(b) = docs.get(d + ahead) {
                        s.prefetch(b);
                    }
                })
            }),
        ));
    }
    for ahead in [4, 8, 16] {
        let (s, oracle) = (set.clone(), &oracle);
        loops.push((
            format!("exact lines (precomputed) {ahead} ahead"),
            Box::new(move || {
                read(docs, &mut s.clone(), |d, _| {
                    for &a in oracle.get(d + ahead).map_or(&[][..], Vec::as_slice) {
                        prefetch_addr(a);
                    }
                })
            }),
        ));
    }
    for ahead in [8, 16] {
        let s = set.clone();
        loops.push((
            format!("every line of the document {ahead} ahead"),
            Box::new(move || {
                read(docs, &mut s.clone(), |d, _| {
                    if let Some(b) = docs.get(d + ahead) {
                        for i in (0..b.len()).step_by(LINE) {
                            prefetch_addr(b[i..].as_ptr().addr());
                        }
                        prefetch_addr(b[b.len() - 1..].as_ptr().addr());
                    }
                })
            }),
        ));
    }
    // In cache: the first documents that fill about 512 KB, read over and over (the compute).
    let mut bytes = 0;
    let small: Vec<&[u8]> = docs
        .iter()
        .take_while(|b| {
            bytes += b.len();
            bytes < 512 << 10
        })
        .copied()
        .collect();
    let reps = docs.len() / small.len().max(1);
    let s = set.clone();
    loops.push((
        "in cache (512 KB of documents, repeated)".into(),
        Box::new(move || {
            let mut s = s.clone();
            (0..reps).map(|_| read(&small, &mut s, |_, _| {})).sum()
        }),
    ));
    loops.retain(|(name, _)| name.contains(&only));
    let mut times = vec![Vec::new(); loops.len()];
    for _ in 0..=rounds {
        for ((_, f), t) in loops.iter_mut().zip(&mut times) {
            let started = cpu_ns();
            black_box(f());
            t.push((cpu_ns() - started) as f64 / n);
        }
    }
    for ((name, _), t) in loops.iter().zip(&mut times) {
        t.remove(0); // warm-up
        t.sort_by(f64::total_cmp);
        println!(
            "{name:<44} {:>7.1} ns per document (thread CPU time, median of {rounds}; best {:.1})",
            t[t.len() / 2],
            t[0]
        );
    }
}

/// This thread's time on a CPU so far, in ns (`CLOCK_THREAD_CPUTIME_ID`, Linux): the machine
/// is shared, and time waiting for a core is not the loop's.
fn cpu_ns() -> u64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a valid `struct timespec` (two 64-bit fields on 64-bit Linux) that the
    // call writes; the clock id is Linux's.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime");
    t.sec as u64 * 1_000_000_000 + t.nsec as u64
}

/// Reads every document with `set` (trusted open), calling `before(index, set)` first.
#[inline(always)]
fn read(docs: &[&[u8]], set: &mut PathSet, mut before: impl FnMut(usize, &PathSet)) -> u64 {
    let mut sum = 0u64;
    for (d, b) in docs.iter().enumerate() {
        before(d, set);
        // SAFETY: just written by DocumentWriter.
        let doc = unsafe { Document::new_unchecked(*b) };
        set.read_doc(&doc, |_, v| sum = sum.wrapping_add(digest(&v)));
    }
    sum
}

/// What `stele-bench doc` does with a value: a string's length, a number.
#[inline(always)]
fn digest(v: &Value<'_>) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        Value::Int(i) => *i as u64,
        other => other.as_f64().map_or(1, f64::to_bits),
    }
}

fn prefetch_addr(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory (the addresses are inside the
    // buffer anyway).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::with_exposed_provenance::<i8>(addr),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// The bytes a `PathSet` read of `fields` touches in each document, from the format
/// (docs/FORMAT.md): the lines, their count and where they sit; returns each document's line
/// addresses.
fn analyse(docs: &[&[u8]], fields: &[String]) -> Vec<Vec<usize>> {
    let mut per_doc = Vec::with_capacity(docs.len());
    let (mut total, mut hist) = (0usize, [0usize; 12]);
    let mut part_lines = [0usize; 4];
    let mut from_start = [(0usize, usize::MAX, 0usize); 4];
    let mut from_end = from_start;
    for b in docs {
        let parts = parts_read(b, fields);
        let mut lines = BTreeSet::new();
        for (p, r) in parts.iter().enumerate() {
            let (first, last) = (addr(b, r.start) / LINE, addr(b, r.end - 1) / LINE);
            part_lines[p] += last - first + 1;
            lines.extend(first..=last);
            let s = &mut from_start[p];
            *s = (s.0 + r.start, s.1.min(r.start), s.2.max(r.end));
            let e = &mut from_end[p];
            *e = (
                e.0 + (b.len() - r.start),
                e.1.min(b.len() - r.start),
                e.2.max(b.len() - r.start),
            );
        }
        total += lines.len();
        hist[lines.len().min(11)] += 1;
        per_doc.push(lines.into_iter().map(|l| l * LINE).collect());
    }
    let n = docs.len() as f64;
    println!(
        "lines a read touches per document: {:.2} on average; documents by count: {}",
        total as f64 / n,
        hist.iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| format!("{k}: {:.1}%", 100.0 * *c as f64 / n))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (p, name) in ["values", "root header", "names", "trailer"]
        .iter()
        .enumerate()
    {
        println!(
            "  {name:<12} {:.2} lines; starts {:.0} bytes from the start (min {}, max end {}), {:.0} from the end (min {}, max {})",
            part_lines[p] as f64 / n,
            from_start[p].0 as f64 / n,
            from_start[p].1,
            from_start[p].2,
            from_end[p].0 as f64 / n,
            from_end[p].1,
            from_end[p].2,
        );
    }
    per_doc
}

fn addr(b: &[u8], pos: usize) -> usize {
    b[pos.min(b.len() - 1)..].as_ptr().addr()
}

/// Byte ranges a read of `fields` uses: values (first to last value byte read), the root
/// header (flags to the last key id, offset or tag read), the names area (from its start to
/// the end of the last name read), the trailer.
fn parts_read(b: &[u8], fields: &[String]) -> [Range<usize>; 4] {
    let len = b.len();
    let w = 1usize << (b[len - 1] & 3);
    let names_end = len - 2 - 2 * w;
    let uint = |pos: usize, w: usize| {
        let mut x = [0u8; 8];
        x[..w].copy_from_slice(&b[pos..pos + w]);
        u64::from_le_bytes(x) as usize
    };
    let root = uint(names_end, w);
    let names_pos = uint(names_end + w, w);
    let (flags, (n, used)) = (b[root], varint(b, root + 1));
    let (kw, ow) = (1usize << ((flags >> 2) & 3), 1usize << (flags & 3));
    let keys = root + 1 + used;
    let offsets = keys + n * kw;
    let tags = offsets + n * ow;
    let (mut head_end, mut names_read, mut values) = (offsets, 0, (usize::MAX, 0));
    for i in 0..n {
        let id = uint(keys + i * kw, kw);
        let (name_len, u) = varint(b, names_pos + id);
        let name = &b[names_pos + id + u..names_pos + id + u + name_len];
        if !fields.iter().any(|f| f.as_bytes() == name) {
            continue;
        }
        names_read = names_read.max(id + u + name_len);
        head_end = head_end.max(offsets + i * ow + 8).max(tags + i + 1);
        let pos = root - uint(offsets + i * ow, ow);
        // A length varint or a number: the first 8 bytes at most.
        values = (values.0.min(pos), values.1.max((pos + 8).min(root)));
    }
    if values.0 == usize::MAX {
        values = (1, 2);
    }
    [
        values.0..values.1,
        root..head_end.min(names_pos),
        names_pos..names_pos + names_read.max(1),
        names_end..len,
    ]
}

fn varint(b: &[u8], pos: usize) -> (usize, usize) {
    let (mut v, mut shift, mut i) = (0usize, 0, pos);
    loop {
        let x = b[i];
        v |= usize::from(x & 0x7F) << shift;
        i += 1;
        if x < 0x80 {
            return (v, i - pos);
        }
        shift += 7;
    }
}

/// ns per dependent load over a random cycle of 64-byte slots in `bytes` of memory.
fn chase(bytes: usize) -> f64 {
    let slots = bytes / LINE;
    let stride = LINE / 8;
    let mut next = vec![0usize; slots * stride];
    // A random cyclic order of the slots (xorshift, Sattolo's shuffle).
    let mut order: Vec<usize> = (0..slots).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..slots).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % i as u64) as usize);
    }
    for i in 0..order.len() {
        next[order[i] * stride] = order[(i + 1) % order.len()] * stride;
    }
    let hops = 2_000_000.min(order.len() * 4);
    let mut at = 0;
    let t = Instant::now();
    for _ in 0..hops {
        at = next[at];
    }
    black_box(at);
    t.elapsed().as_secs_f64() * 1e9 / hops as f64
}

fn read_text(path: &str) -> String {
    let mut text = String::new();
    if path.ends_with(".zst") {
        zstd::stream::read::Decoder::new(std::fs::File::open(path).unwrap())
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = std::fs::read_to_string(path).unwrap();
    }
    text
}

/// The first `n` keys of a JSON object's text, in order.
fn first_keys(json: &str, n: usize) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v.as_object()
        .map(|m| m.keys().take(n).cloned().collect())
        .unwrap_or_default()
}
