//! Sorted-table benchmark: Stele's tables against LMDB (heed), fst, redb, fjall, RocksDB
//! (the `rocksdict` wheel) and GNU sort, on the same key/value pairs, in one run.
//!
//! Every build and every read phase runs in its own child process (`table_bench run-one`),
//! so that peak memory (`VmHWM`) and `/proc/self/io` belong to one store and one phase.
//! `table_bench --help` lists the options; `table_bench --test` is the quick smoke run.

mod data;
mod measure;
mod report;
mod stele;
mod stores;
mod sys;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use data::{SetInfo, SetKind};
use stores::{Input, Reader};

#[derive(Parser, Debug)]
#[command(about = "Sorted-table benchmark: Stele vs LMDB, fst, redb, fjall, RocksDB, GNU sort")]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Key sets to run: npm (4.5M names), npm14 (~14M derived keys), or both.
    #[arg(long, default_value = "npm14")]
    set: String,
    /// Smoke run: 20,000 keys, few lookups (what CI runs).
    #[arg(long)]
    test: bool,
    /// Run on a derived set of this many keys instead of --set.
    #[arg(long)]
    keys: Option<usize>,
    /// Comma-separated store names (default: all). See --list.
    #[arg(long)]
    stores: Option<String>,
    /// Print the store names and exit.
    #[arg(long)]
    list: bool,
    /// Warm random gets per thread.
    #[arg(long, default_value_t = 1_000_000)]
    lookups: usize,
    /// Cold random gets (after eviction from the page cache).
    #[arg(long, default_value_t = 2_000)]
    cold: usize,
    /// Folder of the source key file (default: <repo>/../shared/data/keys, else
    /// /work/shared/data/keys).
    #[arg(long)]
    source_dir: Option<PathBuf>,
    /// Cache of prepared key sets and built stores (never in git).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Python with rocksdict installed (default: <repo>/.venv-bench/bin/python).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Keep the built stores after the run.
    #[arg(long)]
    keep: bool,
    /// Also write the markdown tables to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Internal: one phase of one store, in its own process; prints `RESULT <json>`.
    RunOne {
        #[arg(long)]
        store: String,
        #[arg(long)]
        phase: String,
        #[arg(long)]
        set_dir: PathBuf,
        #[arg(long)]
        input: String,
        /// Store folder (build) or store path (read, cold).
        #[arg(long)]
        path: PathBuf,
        #[arg(long, default_value_t = 0)]
        lookups: usize,
        #[arg(long, default_value_t = 0)]
        cold: usize,
    },
}

/// One row of the plan: a store built from one input; `reads` runs the read phases on it.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub store: &'static str,
    pub input: Input,
    pub reads: bool,
    pub what: &'static str,
}

const fn job(store: &'static str, input: Input, reads: bool, what: &'static str) -> Job {
    Job {
        store,
        input,
        reads,
        what,
    }
}

pub const PLAN: &[Job] = &[
    job(
        "stele-mem",
        Input::Shuffled,
        false,
        "Sorter, budget above the data (in memory)",
    ),
    job(
        "stele-256m",
        Input::Shuffled,
        false,
        "Sorter, 256 MiB budget",
    ),
    job(
        "stele-mem-sorted",
        Input::Sorted,
        false,
        "Sorter fed sorted input, in memory",
    ),
    job(
        "stele-builder",
        Input::Sorted,
        true,
        "TableBuilder (needs sorted input)",
    ),
    job(
        "stele-keys",
        Input::Sorted,
        false,
        "TableBuilder, keys only (empty values), for the size target",
    ),
    job(
        "gnu-sort",
        Input::Shuffled,
        false,
        "LC_ALL=C sort of the key file (keys only, reference)",
    ),
    job(
        "gnu-sort-256m",
        Input::Shuffled,
        false,
        "LC_ALL=C sort -S 256M (keys only, reference)",
    ),
    job(
        "lmdb",
        Input::Sorted,
        true,
        "heed, MDB_APPEND of sorted pairs",
    ),
    job(
        "lmdb",
        Input::Shuffled,
        false,
        "heed: sort_unstable in memory (1 thread), then MDB_APPEND",
    ),
    job(
        "fst",
        Input::Sorted,
        true,
        "fst::MapBuilder of sorted pairs",
    ),
    job(
        "fst",
        Input::Shuffled,
        false,
        "fst: sort_unstable in memory (1 thread), then MapBuilder",
    ),
    job(
        "redb",
        Input::Sorted,
        true,
        "redb, inserts in key order, one transaction",
    ),
    job(
        "fjall",
        Input::Sorted,
        true,
        "fjall, PartitionHandle::ingest of sorted pairs",
    ),
    job(
        "rocksdb",
        Input::Sorted,
        true,
        "rocksdict: SstFileWriter + ingest_external_file",
    ),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Some(Cmd::RunOne {
        store,
        phase,
        set_dir,
        input,
        path,
        lookups,
        cold,
    }) = &cli.cmd
    {
        let result = run_one(
            store,
            phase,
            set_dir,
            Input::parse(input)?,
            path,
            *lookups,
            *cold,
        )?;
        println!("RESULT {}", serde_json::to_string(&result)?);
        return Ok(());
    }
    if cli.list {
        for j in PLAN {
            println!("{:<18} {:<9} {}", j.store, j.input.name(), j.what);
        }
        return Ok(());
    }
    orchestrate(&cli)
}

fn orchestrate(cli: &Cli) -> Result<()> {
    let data_dir = cli
        .data_dir
        .clone()
        .unwrap_or_else(|| repo_root().join("target/data/table-bench"));
    let (kinds, lookups, cold) = if cli.test || cli.keys.is_some() {
        let k = cli.keys.unwrap_or(20_000);
        let names = k / 3 + 10;
        let l = if cli.test { 20_000 } else { cli.lookups };
        let c = if cli.test { 200 } else { cli.cold };
        (
            vec![SetKind::Derived {
                names: Some(names),
                keys: Some(k),
            }],
            l,
            c,
        )
    } else {
        let kinds = match cli.set.as_str() {
            "npm" => vec![SetKind::Npm],
            "npm14" => vec![SetKind::Derived {
                names: None,
                keys: None,
            }],
            "both" => vec![
                SetKind::Npm,
                SetKind::Derived {
                    names: None,
                    keys: None,
                },
            ],
            s => bail!("unknown set {s:?} (npm, npm14, both)"),
        };
        (kinds, cli.lookups, cli.cold)
    };
    let wanted: Option<Vec<String>> = cli
        .stores
        .as_ref()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let python = cli
        .python
        .clone()
        .unwrap_or_else(|| repo_root().join(".venv-bench/bin/python"));
    let source_dir = cli.source_dir.clone().unwrap_or_else(|| {
        let beside = repo_root().join("../shared/data/keys");
        if beside.join(data::NPM_SOURCE).exists() {
            beside
        } else {
            PathBuf::from("/work/shared/data/keys")
        }
    });
    let mut out_md = String::new();
    let mut total_failures = 0usize;
    out_md.push_str(&report::preamble(lookups, cold));
    for kind in kinds {
        let set = data::prepare(kind, &source_dir, &data_dir)?;
        eprintln!(
            "set {}: {} keys, {} raw key bytes; {}",
            set.name, set.entries, set.raw_key_bytes, set.derivation
        );
        let stores_dir = data_dir.join("stores").join(&set.name);
        let load_start = load_average();
        let mut rows = Vec::new();
        let mut failures = 0usize;
        for j in PLAN {
            if let Some(w) = &wanted
                && !w.iter().any(|x| x == j.store)
            {
                continue;
            }
            if j.store.starts_with("stele") && !stele::AVAILABLE {
                rows.push(report::Row::skipped(j, "stele-table not built yet"));
                continue;
            }
            if j.store == "rocksdb" && !python.exists() {
                rows.push(report::Row::skipped(
                    j,
                    "no rocksdict venv: run crates/stele-bench/scripts/setup-peers.sh",
                ));
                continue;
            }
            let dir = stores_dir.join(format!("{}-{}", j.store, j.input.name()));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            eprintln!("== {} ({}) build", j.store, j.input.name());
            let row = match run_job(cli, &python, j, &set, &dir, lookups, cold) {
                Ok(row) => row,
                Err(e) => {
                    eprintln!("!! {} ({}) failed: {e:#}", j.store, j.input.name());
                    failures += 1;
                    let first = format!("{e:#}");
                    let first = first.lines().next().unwrap_or("").to_string();
                    report::Row::skipped(j, &format!("FAILED: {first}"))
                }
            };
            if !cli.keep {
                std::fs::remove_dir_all(&dir).ok();
            }
            rows.push(row);
        }
        let mut md = report::tables(&set, &rows);
        md.push_str(&format!(
            "Load average (1, 5, 15 min) at the start of this set: {load_start}; at its end: {}.\n\n",
            load_average()
        ));
        println!("{md}");
        out_md.push_str(&md);
        total_failures += failures;
    }
    if let Some(out) = &cli.out {
        std::fs::write(out, out_md)?;
    }
    if total_failures > 0 {
        bail!("{total_failures} store run(s) failed (see the tables)");
    }
    Ok(())
}

/// Build, then (if the job says so) warm and cold reads, each in its own process.
fn run_job(
    cli: &Cli,
    python: &Path,
    j: &Job,
    set: &SetInfo,
    dir: &Path,
    lookups: usize,
    cold: usize,
) -> Result<report::Row> {
    let build = phase(cli, python, j, "build", set, dir, 0, 0)?;
    let mut row = report::Row::new(j, build);
    if j.reads {
        let path = PathBuf::from(row.build["path"].as_str().context("build path")?);
        eprintln!("== {} read (warm)", j.store);
        row.warm = Some(phase(cli, python, j, "read", set, &path, lookups, 0)?);
        eprintln!("== {} read (cold)", j.store);
        row.cold = Some(phase(cli, python, j, "cold", set, &path, 0, cold)?);
    }
    Ok(row)
}

/// Runs one phase of one store in a child process and parses its `RESULT` line.
#[allow(clippy::too_many_arguments)]
fn phase(
    _cli: &Cli,
    python: &Path,
    j: &Job,
    phase: &str,
    set: &SetInfo,
    path: &Path,
    lookups: usize,
    cold: usize,
) -> Result<Value> {
    let mut cmd = if j.store == "rocksdb" {
        let mut c = Command::new(python);
        c.arg(repo_root().join("crates/stele-bench/scripts/rocks_bench.py"));
        c
    } else {
        let mut c = Command::new(std::env::current_exe()?);
        c.arg("run-one");
        c
    };
    cmd.args([
        "--store",
        j.store,
        "--phase",
        phase,
        "--input",
        j.input.name(),
    ])
    .arg("--set-dir")
    .arg(&set.dir)
    .arg("--path")
    .arg(path)
    .args([
        "--lookups",
        &lookups.to_string(),
        "--cold",
        &cold.to_string(),
    ]);
    let t = Instant::now();
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running {:?}", cmd))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("{} {} failed ({}):\n{stdout}", j.store, phase, out.status);
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .with_context(|| format!("{} {}: no RESULT line in:\n{stdout}", j.store, phase))?;
    let v: Value = serde_json::from_str(line)?;
    eprintln!(
        "   {:.1} s: {}",
        t.elapsed().as_secs_f64(),
        if line.len() > 300 { &line[..300] } else { line }
    );
    Ok(v)
}

/// The first three fields of /proc/loadavg: other work on the machine shows here.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn set_info(set_dir: &Path) -> Result<SetInfo> {
    let text = std::fs::read_to_string(set_dir.join("meta.json"))?;
    let v: Value = serde_json::from_str(&text)?;
    Ok(SetInfo {
        name: set_dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir: set_dir.to_path_buf(),
        entries: v["entries"].as_u64().context("entries")?,
        raw_key_bytes: v["raw_key_bytes"].as_u64().context("raw_key_bytes")?,
        derivation: String::new(),
    })
}

fn open_store(store: &str, path: &Path, cold: bool) -> Result<Box<dyn Reader>> {
    match store {
        "lmdb" => stores::lmdb::open(path, cold),
        "fst" => stores::fst_map::open(path, cold),
        "redb" => stores::redb_store::open(path, cold),
        "fjall" => stores::fjall_store::open(path, cold),
        s if s.starts_with("stele") => stele::open(path, cold),
        s => bail!("no reader for {s}"),
    }
}

fn run_one(
    store: &str,
    phase: &str,
    set_dir: &Path,
    input: Input,
    path: &Path,
    lookups: usize,
    cold: usize,
) -> Result<Value> {
    let set = set_info(set_dir)?;
    match phase {
        "build" => {
            let input_path = match input {
                Input::Shuffled => set.keys_path(),
                Input::Sorted => set.sorted_path(),
            };
            stores::warm_input(&input_path)?;
            let rss_before = sys::status_bytes("VmRSS")?;
            let cpu_before = sys::cpu_seconds(false)?;
            let t = Instant::now();
            let built = match store {
                "lmdb" => stores::lmdb::build(&set, input, path)?,
                "fst" => stores::fst_map::build(&set, input, path)?,
                "redb" => stores::redb_store::build(&set, input, path)?,
                "fjall" => stores::fjall_store::build(&set, input, path)?,
                "gnu-sort" | "gnu-sort-256m" => gnu_sort(&set, store == "gnu-sort-256m", path)?,
                s if s.starts_with("stele") => stele::build(s, &set, input, path)?,
                s => bail!("unknown store {s}"),
            };
            let build_s = t.elapsed().as_secs_f64();
            let mut cpu_s = sys::cpu_seconds(false)? - cpu_before;
            let mut peak = sys::peak_rss_bytes()?;
            let mut note = built.note;
            if store.starts_with("gnu-sort") {
                peak = sys::children_peak_rss_bytes()?;
                cpu_s = sys::cpu_seconds(true)?;
                note.push_str("; peak RSS is sort's own (getrusage of the child)");
            }
            if built.entries != set.entries && !store.starts_with("gnu-sort") {
                bail!(
                    "{store} stored {} entries, expected {}",
                    built.entries,
                    set.entries
                );
            }
            Ok(json!({
                "build_s": build_s,
                "cpu_s": cpu_s,
                "peak_rss_bytes": peak,
                "rss_before_bytes": rss_before,
                "file_bytes": sys::path_bytes(&built.path)?,
                "entries": built.entries,
                "path": built.path,
                "note": note,
            }))
        }
        "read" => {
            let keys = data::Keys::read_lines(&set.keys_path())?;
            let rows = [
                data::lookups(set.entries, lookups, 1),
                data::lookups(set.entries, lookups, 2),
            ];
            let t = Instant::now();
            let reader = open_store(store, path, false)?;
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            let mut v = measure::warm(reader.as_ref(), &keys, &rows)?;
            v["open_ms"] = json!(open_ms);
            Ok(v)
        }
        "cold" => {
            let keys = data::Keys::read_lines(&set.keys_path())?;
            let rows = data::lookups(set.entries, cold, 3);
            measure::cold(path, || open_store(store, path, true), &keys, &rows)
        }
        p => bail!("unknown phase {p}"),
    }
}

fn gnu_sort(set: &SetInfo, small: bool, dir: &Path) -> Result<stores::Built> {
    std::fs::create_dir_all(dir)?;
    let out = dir.join("sorted.txt");
    let mut cmd = Command::new("sort");
    cmd.env("LC_ALL", "C");
    if small {
        cmd.args(["-S", "256M"]);
    }
    cmd.arg("-T")
        .arg(dir)
        .arg("-o")
        .arg(&out)
        .arg(set.keys_path());
    let status = cmd.status().context("running sort")?;
    if !status.success() {
        bail!("sort failed: {status}");
    }
    std::fs::File::open(&out)?.sync_all()?;
    Ok(stores::Built {
        path: out,
        entries: set.entries,
        note: format!(
            "`LC_ALL=C sort {}-T <dir> -o <out> keys.txt` (keys only, no values; fsync of the output)",
            if small { "-S 256M " } else { "" }
        ),
    })
}
