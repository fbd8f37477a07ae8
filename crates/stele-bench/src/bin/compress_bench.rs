//! Document compression benchmark: Stele's per-collection compressor (`stele::compress`)
//! against whole-file zstd -3 and RavenDB-style per-document zstd with an 8 KB dictionary, on
//! every collection of the shared data, in one run.
//!
//! `compress_bench` runs everything; `compress_bench --quick` is the CI smoke run (first 500
//! documents of 3 collections). Sizes are exact; timings are the benchmark thread's CPU time.

#[path = "../doc/data.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; not every helper is used here"
)]
mod data;
#[path = "../doc/ingest_costs.rs"]
mod ingest_costs;
#[path = "../doc/ravendb.rs"]
mod ravendb;
#[path = "../doc/table.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; not every helper is used here"
)]
mod table;
#[path = "../doc/timing.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; only the CPU clock is used here"
)]
mod timing;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use stele::compress::{BlockPacker, CompressOptions, Compressor, Decoder, Dictionaries};

use data::{Collection, Docs};
use table::{Table, bytes, f, geomean, ratio};
use timing::thread_cpu_secs;

#[derive(Parser, Debug)]
#[command(about = "Document compression: Stele vs whole-file zstd -3 vs RavenDB-style")]
struct Args {
    /// Smoke run: first 500 documents of 3 collections, all variants, a few seconds.
    #[arg(long, visible_alias = "test")]
    quick: bool,
    /// Data folder (default: ../shared/data next to the repository root).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Only collections whose name contains one of these (comma-separated).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip the variants table (sizes of other options).
    #[arg(long)]
    no_variants: bool,
}

const QUICK: [&str; 3] = ["geonames-cities", "debian-packages", "mdn-compat-features"];
const QUICK_DOCS: usize = 500;

/// One collection: JSON text per document and the same documents in Stele's format.
struct Input {
    json: Collection,
    docs: Docs,
    /// The same documents written without LZ4 string compression (`compress_strings(None)`).
    plain: Docs,
}

impl Input {
    fn doc_slices(&self) -> Vec<&[u8]> {
        self.docs.iter().collect()
    }

    fn plain_slices(&self) -> Vec<&[u8]> {
        self.plain.iter().collect()
    }

    fn jsonl(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(self.json.json_bytes() + self.json.len());
        for d in self.json.docs() {
            t.extend_from_slice(d);
            t.push(b'\n');
        }
        t
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    let dir = args.data.clone().unwrap_or_else(data::default_data_dir);
    let coll_dir = dir.join("collections");
    if !coll_dir.is_dir() {
        bail!("{} not found (use --data)", coll_dir.display());
    }
    let mut inputs = Vec::new();
    for path in data::find_files(&coll_dir, ".jsonl.zst")? {
        let name = data::short_name(&path, &coll_dir, ".jsonl.zst");
        if args.quick && !QUICK.contains(&name.as_str()) {
            continue;
        }
        if !args.only.is_empty() && !args.only.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        let limit = args.quick.then_some(QUICK_DOCS);
        let json = data::load_jsonl_zst(&path, name, limit)?;
        let mut w = stele_doc::DocumentWriter::new();
        let docs = Docs::convert(&mut w, &json)?;
        let mut w = stele_doc::DocumentWriter::with_options(
            stele_doc::WriteOptions::default().compress_strings(None),
        );
        let plain = Docs::convert(&mut w, &json)?;
        inputs.push(Input { json, docs, plain });
    }
    ensure!(
        !inputs.is_empty(),
        "no collections under {}",
        coll_dir.display()
    );
    print_header(&args, &dir, &inputs);
    main_table(&inputs)?;
    if !args.no_variants {
        variants_table(&inputs)?;
        blocks_table(&inputs)?;
        keyed_table(&inputs)?;
        stream_table(&inputs)?;
        let collections: Vec<(&str, Vec<&[u8]>)> = inputs
            .iter()
            .map(|i| (i.json.name.as_str(), i.doc_slices()))
            .collect();
        ingest_costs::trainer_table(&collections)?;
        ingest_costs::literals_table(&collections)?;
    }
    println!(
        "_Total run time: {:.1} s; load average at the end: {}._",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn print_header(args: &Args, dir: &std::path::Path, inputs: &[Input]) {
    println!(
        "# compress_bench{}\n",
        if args.quick { " --quick" } else { "" }
    );
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "- build: {}; {cores} cores; load average at start: {}",
        if cfg!(debug_assertions) {
            "DEBUG (timings meaningless)"
        } else {
            "release"
        },
        loadavg()
    );
    println!("- data: {}", dir.display());
    println!(
        "- inputs: {} collections, {} documents, {:.1} MB of JSON",
        inputs.len(),
        inputs.iter().map(|i| i.json.len()).sum::<usize>(),
        inputs.iter().map(|i| i.json.json_bytes()).sum::<usize>() as f64 / 1e6
    );
    println!(
        "- timings: thread CPU time of one pass over the collection (compress includes training)\n"
    );
}

/// Whole collection file (JSON Lines) at zstd -3.
fn whole_file(i: &Input) -> Result<usize> {
    Ok(zstd::bulk::compress(&i.jsonl(), 3)?.len())
}

/// RavenDB 5.0 style (see `doc/ravendb.rs`).
fn ravendb(i: &Input) -> Result<usize> {
    ravendb::ravendb_bytes(&i.json.doc_slices())
}

/// Result of running documents through a [`Compressor`].
struct Run {
    stored: usize,
    dict_bytes: usize,
    dicts: usize,
    trainings: u64,
    compress_secs: f64,
    decompress_secs: f64,
}

impl Run {
    fn total(&self) -> usize {
        self.stored + self.dict_bytes
    }
}

/// Every document through one compressor, as the database would drive it (persist, then
/// adopt); then every stored value decoded and compared with its document.
fn ours(docs: &[&[u8]], opts: CompressOptions) -> Result<Run> {
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

fn main_table(inputs: &[Input]) -> Result<()> {
    println!("## Stored size per collection (bytes; lower is better)\n");
    println!(
        "JSON = the JSON Lines text; zstd-3 file = that text compressed at once (the target's \
         reference: no document readable alone); RavenDB-style = each JSON document alone, \
         zstd -3, 8 KB dictionary trained on the first 256 documents (dictionary counted); \
         ours = Stele documents through `stele::compress::Compressor` with default options, \
         stored values plus every dictionary persisted. Target: ours/zstd-3 <= 1.50.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "docs",
        "JSON",
        "zstd-3 file",
        "RavenDB-style",
        "ours",
        "ours/JSON",
        "ours/zstd-3",
        "RavenDB/zstd-3",
        "target 1.5x",
        "dicts (trainings)",
        "compress docs/s",
        "decompress docs/s",
    ]);
    let mut sums = [0usize; 4];
    let mut met = 0;
    for i in inputs {
        let json = i.json.json_bytes() + i.json.len();
        let z3 = whole_file(i)?;
        let rv = ravendb(i)?;
        let run = ours(&i.doc_slices(), CompressOptions::default())?;
        let ours = run.total();
        for (s, v) in sums.iter_mut().zip([json, z3, rv, ours]) {
            *s += v;
        }
        let r = ours as f64 / z3 as f64;
        met += usize::from(r <= 1.5);
        let n = i.json.len() as f64;
        t.row(vec![
            i.json.name.clone(),
            i.json.len().to_string(),
            bytes(json),
            bytes(z3),
            bytes(rv),
            bytes(ours),
            f(ours as f64 / json as f64, 3),
            ratio(r),
            ratio(rv as f64 / z3 as f64),
            if r <= 1.5 { "met" } else { "missed" }.into(),
            format!("{} ({})", run.dicts, run.trainings),
            f(n / run.compress_secs, 0),
            f(n / run.decompress_secs, 0),
        ]);
    }
    let [json, z3, rv, ours] = sums;
    t.row(vec![
        "**all**".into(),
        inputs
            .iter()
            .map(|i| i.json.len())
            .sum::<usize>()
            .to_string(),
        bytes(json),
        bytes(z3),
        bytes(rv),
        bytes(ours),
        f(ours as f64 / json as f64, 3),
        ratio(ours as f64 / z3 as f64),
        ratio(rv as f64 / z3 as f64),
        format!("{met}/{} met", inputs.len()),
        String::new(),
        String::new(),
        String::new(),
    ]);
    t.print();
    Ok(())
}

/// A named change of the default options.
type Variant = (&'static str, fn(&mut CompressOptions));

const VARIANTS: [Variant; 9] = [
    ("dict 8K", |o| o.dictionary_bytes = 8 * 1024),
    ("dict 32K unscaled", |o| o.dictionary_sample_ratio = 1),
    ("dict 64K", |o| o.dictionary_bytes = 64 * 1024),
    ("dict 110K", |o| o.dictionary_bytes = 110 * 1024),
    ("train 256", |o| o.train_after = 256),
    ("train 1024", |o| o.train_after = 1024),
    ("level 1", |o| o.level = 1),
    ("level 9", |o| o.level = 9),
    ("level 19", |o| o.level = 19),
];

fn variants_table(inputs: &[Input]) -> Result<()> {
    println!("## Variants: stored size / whole-file zstd -3 (lower is better)\n");
    println!(
        "Each column changes one default (default: 32 KB dictionary, trained after 64 \
         documents, 1024 samples kept, level 3, Stele documents). \"JSON docs\" feeds the JSON \
         text instead of Stele documents through the same compressor. Dictionaries counted.\n"
    );
    let mut header = vec!["collection", "default"];
    header.extend(VARIANTS.iter().map(|v| v.0));
    header.push("JSON docs");
    header.push("no-LZ4 docs");
    let mut t = Table::new(&header);
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len() + 3];
    let mut secs = vec![0.0f64; VARIANTS.len() + 3];
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let mut row = vec![i.json.name.clone()];
        let mut runs = vec![ours(&i.doc_slices(), CompressOptions::default())?];
        for (_, change) in VARIANTS {
            let mut o = CompressOptions::default();
            change(&mut o);
            runs.push(ours(&i.doc_slices(), o)?);
        }
        runs.push(ours(&i.json.doc_slices(), CompressOptions::default())?);
        runs.push(ours(&i.plain_slices(), CompressOptions::default())?);
        for (k, run) in runs.iter().enumerate() {
            let r = run.total() as f64 / z3;
            row.push(ratio(r));
            if let (Some(c), Some(s)) = (cols.get_mut(k), secs.get_mut(k)) {
                c.push(r);
                *s += run.compress_secs;
            }
        }
        t.row(row);
    }
    let mut g = vec!["**geomean**".to_owned()];
    g.extend(cols.iter().map(|c| ratio(geomean(c))));
    t.row(g);
    let mut s = vec!["compress CPU s (all)".to_owned()];
    s.extend(secs.iter().map(|x| f(*x, 2)));
    t.row(s);
    t.print();
    Ok(())
}

/// Block variant: consecutive documents grouped into blocks of about `block` raw bytes through
/// `Compressor::compress_block` with default options (dictionaries trained, persisted and
/// adopted as for single documents). Returns bytes (values plus dictionaries) and the mean CPU
/// microseconds to decode one block, which is what reading one uncached document costs.
fn blocks(docs: &[&[u8]], block: usize) -> Result<(usize, f64)> {
    let mut c = Compressor::new(CompressOptions::default())?;
    let mut dicts = Dictionaries::new();
    let mut total = 0;
    let mut values: Vec<(Vec<u8>, usize, usize)> = Vec::new();
    let mut start = 0;
    let mut raw = 0;
    for (k, d) in docs.iter().enumerate() {
        raw += d.len();
        if raw < block && k + 1 < docs.len() {
            continue;
        }
        let group = docs.get(start..=k).context("block range")?;
        let mut out = Vec::new();
        c.compress_block(group, &mut out)?;
        total += out.len();
        values.push((out, start, k + 1));
        if let Some(nd) = c.take_new_dictionary()? {
            total += nd.bytes().len();
            dicts.insert(nd.id(), nd.bytes())?;
            c.adopt(nd)?;
        }
        start = k + 1;
        raw = 0;
    }
    let mut dec = Decoder::new()?;
    let t = thread_cpu_secs();
    for (v, a, b) in &values {
        let got = dec.decode_block(v, &dicts)?;
        let want = docs.get(*a..*b).context("block range")?;
        ensure!(got.iter().eq(want.iter().copied()), "block decodes wrong");
    }
    let per_block_us = (thread_cpu_secs() - t) * 1e6 / values.len().max(1) as f64;
    Ok((total, per_block_us))
}

const BLOCKS: [usize; 4] = [4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024];

fn blocks_table(inputs: &[Input]) -> Result<()> {
    println!("## Blocks of documents (not per document): size / zstd-3, and cost of one read\n");
    println!(
        "Consecutive Stele documents written without LZ4 strings, grouped into blocks of about \
         N raw bytes by `Compressor::compress_block` (default options: block level 9, \
         dictionaries trained and adopted as for single documents, counted), one zstd frame per block holding \
         the documents' lengths and the documents. \"per doc\" = the same no-LZ4 documents one value each. A read of one document decodes its whole block: \"us/read\" is the mean \
         CPU time to decode one block (what a cache miss costs; a block cache hides it for \
         neighbours).\n"
    );
    let mut header = vec!["collection".to_owned(), "per doc (ours)".to_owned()];
    for b in BLOCKS {
        header.push(format!("{} KB", b / 1024));
        header.push(format!("{} KB us/read", b / 1024));
    }
    header.push("16 KB, LZ4 docs".to_owned());
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&h);
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); BLOCKS.len() + 2];
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let plain = i.plain_slices();
        let per_doc = ours(&plain, CompressOptions::default())?.total() as f64 / z3;
        let mut row = vec![i.json.name.clone(), ratio(per_doc)];
        if let Some(c) = cols.get_mut(0) {
            c.push(per_doc);
        }
        for (k, b) in BLOCKS.iter().enumerate() {
            let (size, us) = blocks(&plain, *b)?;
            row.push(ratio(size as f64 / z3));
            row.push(f(us, 1));
            if let Some(c) = cols.get_mut(k + 1) {
                c.push(size as f64 / z3);
            }
        }
        let (size, _) = blocks(&i.doc_slices(), 16 * 1024)?;
        row.push(ratio(size as f64 / z3));
        if let Some(c) = cols.last_mut() {
            c.push(size as f64 / z3);
        }
        t.row(row);
    }
    let mut g = vec!["**geomean**".to_owned()];
    for (k, c) in cols.iter().enumerate() {
        g.push(ratio(geomean(c)));
        if k > 0 && k <= BLOCKS.len() {
            g.push(String::new());
        }
    }
    t.row(g);
    t.print();
    Ok(())
}

/// Ids and documents packed as the database packs them, about 32 KiB of both per block at
/// level 9 without a dictionary: ids stored whole (2n entries of a plain block, codec 3) or
/// front-coded (a keyed block, codec 5). Returns bytes and the mean CPU microseconds to
/// decode one block, checked against the input.
fn id_blocks(ids: &[String], docs: &[&[u8]], keyed: bool) -> Result<(usize, f64)> {
    let mut packer = BlockPacker::new(9, None)?;
    let mut values: Vec<(Vec<u8>, usize, usize)> = Vec::new();
    let (mut start, mut raw) = (0, 0);
    for (k, (id, d)) in ids.iter().zip(docs).enumerate() {
        raw += id.len() + d.len();
        if raw < 32 * 1024 && k + 1 < docs.len() {
            continue;
        }
        let keys: Vec<&[u8]> = ids
            .get(start..=k)
            .context("ids")?
            .iter()
            .map(|i| i.as_bytes())
            .collect();
        let group = docs.get(start..=k).context("block range")?;
        let mut out = Vec::new();
        if keyed {
            packer.pack_keyed(&keys, group, &mut out)?;
        } else {
            let all: Vec<&[u8]> = keys.iter().chain(group).copied().collect();
            packer.pack(&all, &mut out)?;
        }
        values.push((out, start, k + 1));
        (start, raw) = (k + 1, 0);
    }
    let (dicts, mut dec) = (Dictionaries::new(), Decoder::new()?);
    let t = thread_cpu_secs();
    for (v, a, b) in &values {
        let got = dec.decode_block(v, &dicts)?;
        let want_ids = ids.get(*a..*b).context("ids")?.iter().map(|i| i.as_bytes());
        let want = want_ids.chain(docs.get(*a..*b).context("block range")?.iter().copied());
        ensure!(got.iter().eq(want), "block decodes wrong");
    }
    let per_block_us = (thread_cpu_secs() - t) * 1e6 / values.len().max(1) as f64;
    Ok((values.iter().map(|v| v.0.len()).sum(), per_block_us))
}

/// Ids `00000000`, `00000001`, ...: the 8-digit line numbers `store_bench` uses.
fn line_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{i:08}")).collect()
}

/// A table's last row: "geomean" and `value` in column `at` of `columns`.
fn geomean_row(columns: usize, at: usize, value: f64) -> Vec<String> {
    let mut row = vec![String::new(); columns];
    if let Some(first) = row.first_mut() {
        *first = "**geomean**".to_owned();
    }
    if let Some(cell) = row.get_mut(at) {
        *cell = ratio(value);
    }
    row
}

/// Plain blocks (ids whole) against keyed blocks (ids front-coded), ids = 8-digit line
/// numbers as in `store_bench`.
fn keyed_table(inputs: &[Input]) -> Result<()> {
    println!("## Ids in blocks: whole (codec 3) or front-coded (codec 5)\n");
    println!(
        "Each collection's no-LZ4 documents under 8-digit line numbers, packed as the database \
         packs them (ids then documents, about 32 KiB per block, level 9, no dictionary): the \
         ids stored whole in a plain block or front-coded in a keyed block. us/read: mean CPU \
         time to decode one block (ids rebuilt for the keyed one), checked against the input.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "ids whole / zstd-3",
        "front-coded / zstd-3",
        "front-coded / whole",
        "whole us/read",
        "front-coded us/read",
    ]);
    let mut gains = Vec::new();
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let docs = i.plain_slices();
        let ids = line_ids(docs.len());
        let (whole, whole_us) = id_blocks(&ids, &docs, false)?;
        let (keyed, keyed_us) = id_blocks(&ids, &docs, true)?;
        gains.push(keyed as f64 / whole as f64);
        t.row(vec![
            i.json.name.clone(),
            ratio(whole as f64 / z3),
            ratio(keyed as f64 / z3),
            ratio(keyed as f64 / whole as f64),
            f(whole_us, 1),
            f(keyed_us, 1),
        ]);
    }
    t.row(geomean_row(6, 3, geomean(&gains)));
    t.print();
    Ok(())
}

/// Keyed blocks of documents against keyed blocks of their stream forms
/// (`stele_doc::stream`), and what rebuilding a document from its stream costs.
fn stream_table(inputs: &[Input]) -> Result<()> {
    println!("## Documents or their stream forms in blocks\n");
    println!(
        "Each collection's no-LZ4 documents under 8-digit line numbers in keyed blocks (about \
         32 KiB, level 9, no dictionary), as documents or as their stream forms \
         (`stele_doc::stream`: values in input order, keys spelled out, no offsets; a document \
         whose stream does not rebuild it exactly stays a document). rebuild: mean CPU time to \
         turn one stream back into its document, and the documents' bytes per second, checked \
         against the input.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "documents / zstd-3",
        "streams / zstd-3",
        "streams / documents",
        "kept as documents",
        "stream / document bytes",
        "rebuild us/doc",
        "rebuild MB/s",
    ]);
    let mut gains = Vec::new();
    for i in inputs {
        let z3 = whole_file(i)? as f64;
        let docs = i.plain_slices();
        let ids = line_ids(docs.len());
        let mut w = stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options());
        let mut streams: Vec<Vec<u8>> = Vec::with_capacity(docs.len());
        let mut kept = 0usize;
        for d in &docs {
            let doc = stele_doc::Document::new(*d)?;
            let mut s = Vec::new();
            if !stele_doc::stream::encode(&doc, &mut w, &mut s) {
                s = d.to_vec();
                kept += 1;
            }
            streams.push(s);
        }
        let stream_slices: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let (as_docs, _) = id_blocks(&ids, &docs, true)?;
        let (as_streams, _) = id_blocks(&ids, &stream_slices, true)?;
        let t0 = thread_cpu_secs();
        let mut rebuilt = 0usize;
        for (s, d) in stream_slices.iter().zip(&docs) {
            if stele_doc::stream::is_stream(s) {
                let doc = stele_doc::stream::decode(s, &mut w)?;
                ensure!(doc.as_slice() == *d, "stream rebuilds another document");
                rebuilt += d.len();
            }
        }
        let secs = thread_cpu_secs() - t0;
        let n = (docs.len() - kept).max(1) as f64;
        let doc_bytes: usize = docs.iter().map(|d| d.len()).sum();
        let stream_bytes: usize = stream_slices.iter().map(|s| s.len()).sum();
        gains.push(as_streams as f64 / as_docs as f64);
        t.row(vec![
            i.json.name.clone(),
            ratio(as_docs as f64 / z3),
            ratio(as_streams as f64 / z3),
            ratio(as_streams as f64 / as_docs as f64),
            kept.to_string(),
            ratio(stream_bytes as f64 / doc_bytes as f64),
            f(secs * 1e6 / n, 2),
            f(rebuilt as f64 / secs.max(1e-9) / 1e6, 0),
        ]);
    }
    t.row(geomean_row(8, 3, geomean(&gains)));
    t.print();
    Ok(())
}
