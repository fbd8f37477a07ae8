//! The document-format benchmark (`stele-bench doc`): Stele documents against serde_json,
//! sonic-rs, simd-json, MessagePack (rmp-serde), BSON and CBOR (ciborium), in one run.
//!
//! Parts: 1 JSON to document; 2 field reads; 3 document to JSON; 4 sizes; 5 wide objects;
//! 6 string compression threshold. Every part prints markdown tables with ratios vs the peers.

mod convert;
mod data;
mod fields;
mod floor;
mod peers;
mod sizes;
mod table;
mod timing;
mod wide;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use data::Collection;
use timing::Timer;

/// Options of `stele-bench doc`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Smoke run on tiny inputs (first 200 documents of 3 collections, one corpus file): every
    /// part in a few seconds. What CI runs.
    #[arg(long, visible_alias = "test")]
    quick: bool,
    /// Data folder (default: ../shared/data next to the repository root).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Parts to run, comma-separated (1 convert, 2 fields, 3 to JSON, 4 sizes, 5 wide objects,
    /// 6 compression threshold). Default: all.
    #[arg(long, value_delimiter = ',')]
    parts: Vec<u8>,
    /// Seconds of measured runs per measurement (after warm-up), split over 5 runs.
    #[arg(long, default_value_t = 0.5)]
    min_time: f64,
    /// Only the collections whose name contains one of these (comma-separated); default: all.
    /// For quick before/after runs of one part on a few collections.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

/// What every part needs.
#[derive(Debug)]
pub struct Ctx {
    pub timer: Timer,
    /// Whole JSON files (one document each).
    pub corpus: Vec<Collection>,
    /// JSON Lines collections (one document per line).
    pub collections: Vec<Collection>,
}

/// Collections of the quick run (first 200 documents each).
const QUICK_COLLECTIONS: [&str; 3] = ["geonames-cities", "debian-packages", "mdn-compat-features"];
const QUICK_DOCS: usize = 200;

pub fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let dir = args.data.clone().unwrap_or_else(data::default_data_dir);
    if !dir.is_dir() {
        bail!("data folder {} not found (use --data)", dir.display());
    }
    let ctx = load(args, &dir)?;
    print_header(args, &dir, &ctx);
    let all = args.parts.is_empty();
    let want = |p: u8| all || args.parts.contains(&p);
    if want(1) {
        convert::json_to_doc(&ctx)?;
    }
    if want(2) {
        fields::field_reads(&ctx)?;
    }
    if want(3) {
        convert::doc_to_json(&ctx)?;
    }
    if want(4) {
        sizes::sizes(&ctx)?;
    }
    if want(5) {
        wide::wide_objects(&ctx)?;
    }
    if want(6) {
        sizes::threshold(&ctx)?;
    }
    println!(
        "_Total run time: {:.1} s; wall time / CPU time of the measured runs: {:.2} (1.00 = the \
         benchmark thread never waited for a core)._",
        started.elapsed().as_secs_f64(),
        ctx.timer.contention()
    );
    Ok(())
}

fn load(args: &Args, dir: &std::path::Path) -> Result<Ctx> {
    let corpus_dir = dir.join("json-corpus");
    let coll_dir = dir.join("collections");
    let mut corpus = Vec::new();
    let mut collections = Vec::new();
    if args.quick {
        corpus.push(data::load_file(
            &corpus_dir.join("twitter.json"),
            "twitter.json".to_owned(),
        )?);
        for name in QUICK_COLLECTIONS {
            let path = coll_dir.join(format!("{name}.jsonl.zst"));
            collections.push(data::load_jsonl_zst(
                &path,
                name.to_owned(),
                Some(QUICK_DOCS),
            )?);
        }
    } else {
        for path in data::find_files(&corpus_dir, ".json")? {
            let name = data::short_name(&path, &corpus_dir, "");
            corpus.push(data::load_file(&path, name)?);
        }
        let wanted =
            |name: &str| args.only.is_empty() || args.only.iter().any(|o| name.contains(o));
        for path in data::find_files(&coll_dir, ".jsonl.zst")? {
            let name = data::short_name(&path, &coll_dir, ".jsonl.zst");
            if !wanted(&name) {
                continue;
            }
            eprintln!("loading {name}");
            collections.push(data::load_jsonl_zst(&path, name, None)?);
        }
        for path in data::find_files(&corpus_dir, ".ndjson")? {
            let name = format!("json-corpus/{}", data::short_name(&path, &corpus_dir, ""));
            if !wanted(&name) {
                continue;
            }
            collections.push(data::load_jsonl(&path, name, None)?);
        }
    }
    if corpus.is_empty() || collections.is_empty() {
        bail!("no corpus files or collections under {}", dir.display());
    }
    let timer = if args.quick {
        Timer::quick()
    } else {
        Timer::full(args.min_time)
    };
    Ok(Ctx {
        timer,
        corpus,
        collections,
    })
}

fn first_line_with(path: &str, prefix: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned())
}

fn print_header(args: &Args, dir: &std::path::Path, ctx: &Ctx) {
    println!(
        "# stele-bench doc{}\n",
        if args.quick { " --quick" } else { "" }
    );
    let cpu = first_line_with("/proc/cpuinfo", "model name").unwrap_or_else(|| "?".into());
    let mem = first_line_with("/proc/meminfo", "MemTotal").unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("- machine: {cpu}, {cores} cores, {mem} memory");
    println!(
        "- build: {} profile; target features: {}",
        if cfg!(debug_assertions) {
            "DEBUG (timings meaningless)"
        } else {
            "release"
        },
        peers::target_features()
    );
    println!(
        "- serde_json features in this build: {} (features unify per crate)",
        peers::serde_json_features()
    );
    println!(
        "- JSON scanner (chosen at run time): {}",
        stele_doc::json_scanner()
    );
    println!("- data: {}", dir.display());
    println!(
        "- timing: thread CPU time (`CLOCK_THREAD_CPUTIME_ID`); warm-up {:.0} ms, then {} runs totalling >= {:.2} s per measurement, peers interleaved run by run; median run reported",
        ctx.timer.warmup.as_secs_f64() * 1e3,
        ctx.timer.runs,
        ctx.timer.target.as_secs_f64()
    );
    println!(
        "- inputs: {} corpus files, {} collections ({} documents, {:.1} MB of JSON)\n",
        ctx.corpus.len(),
        ctx.collections.len(),
        ctx.collections.iter().map(Collection::len).sum::<usize>(),
        ctx.collections
            .iter()
            .map(Collection::json_bytes)
            .sum::<usize>() as f64
            / 1e6
    );
}

/// The path text that names top-level key `key` (quoted if it has path syntax in it).
pub fn key_path(key: &str) -> String {
    if key.contains(['.', '[', ']', '"', '\\']) || key.is_empty() {
        let escaped = key.replace('\\', "\\\\").replace('"', "\\\"");
        format!("[\"{escaped}\"]")
    } else {
        key.to_owned()
    }
}

/// Converts with default options; errors name the collection.
pub fn convert_default(c: &Collection) -> Result<data::Docs> {
    let mut w = stele_doc::DocumentWriter::new();
    data::Docs::convert(&mut w, c).with_context(|| format!("converting {}", c.name))
}
