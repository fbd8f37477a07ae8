//! Document compression benchmark: Stele's per-collection compressor (`stele::compress`)
//! against whole-file zstd -3 and RavenDB-style per-document zstd with an 8 KB dictionary, on
//! every collection of the shared data, in one run.
//!
//! `compress_bench` runs everything; `compress_bench --quick` is the CI smoke run (first 500
//! documents of 3 collections). Sizes are exact; timings are the benchmark thread's CPU time.

#[path = "../../doc/data.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; not every helper is used here"
)]
mod data;
#[path = "../../doc/ingest_costs.rs"]
mod ingest_costs;
#[path = "../../doc/ravendb.rs"]
mod ravendb;
#[path = "../../doc/table.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; not every helper is used here"
)]
mod table;
#[path = "../../doc/timing.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; only the CPU clock is used here"
)]
mod timing;

mod inputs;
mod tables;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail, ensure};
use clap::Parser;
use stele::compress::CompressOptions;

use data::Docs;
use inputs::{Input, ours, ravendb, whole_file};
use table::{Table, bytes, f, ratio};
use tables::{blocks_table, keyed_table, stream_table, variants_table};

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
