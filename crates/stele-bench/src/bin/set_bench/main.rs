//! Random gets on a table set against the same entries in one table, warm and cold, in one
//! process: what reading through a manifest (a binary search over shard ranges, then the
//! shard's own get) costs. The builds themselves are timed by `crates/stele-py/bench/
//! bench_sets.py`, which calls this for the reads.
//!
//! ```text
//! set_bench --table T.stt --set S.sts [--lookups 1000000] [--cold 2000]
//! ```

#[path = "../table_bench/sys.rs"]
#[allow(
    dead_code,
    reason = "shared with table_bench; this binary uses part of it"
)]
mod sys;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use stele_table::{Table, TableSet};

#[derive(Debug, Parser)]
struct Args {
    /// One table holding every entry.
    #[arg(long)]
    table: PathBuf,
    /// A table set (its manifest) holding the same entries.
    #[arg(long)]
    set: PathBuf,
    /// Warm lookups per round (5 rounds, alternating table and set).
    #[arg(long, default_value_t = 1_000_000)]
    lookups: usize,
    /// Cold lookups (each a fresh page-cache miss), after evicting the files.
    #[arg(long, default_value_t = 2_000)]
    cold: usize,
    /// Also time opening a set of this many one-key shards (built in a temporary folder;
    /// 0 skips it).
    #[arg(long, default_value_t = 0)]
    many_shards: usize,
}

/// Builds a set of `n` one-key shards and times opening it and one get (each the median of 5).
fn many_shards(n: usize) -> Result<()> {
    let dir = tempfile::tempdir().context("creating a temporary folder")?;
    let mut paths = Vec::with_capacity(n);
    for i in 0..n {
        let mut b =
            stele_table::TableBuilder::new(dir.path(), stele_table::TableOptions::default())?;
        b.add(format!("k{i:08}").as_bytes(), b"v")?;
        paths.push(b.finish()?.path);
    }
    let manifest = dir.path().join("many.sts");
    let none: &[&[u8]] = &[];
    TableSet::commit(&manifest, &paths, none)?;
    let (mut open_us, mut get_us) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let started = Instant::now();
        let set = TableSet::open(&manifest)?;
        open_us.push(started.elapsed().as_nanos() as f64 / 1000.0);
        let key = format!("k{:08}", n / 2);
        let started = Instant::now();
        ensure!(
            set.get(key.as_bytes())?.is_some(),
            "a key of the set is missing"
        );
        get_us.push(started.elapsed().as_nanos() as f64 / 1000.0);
    }
    let bytes = std::fs::metadata(&manifest)?.len();
    println!(
        "| open a set of {n} shards (manifest {bytes} bytes), us | {:.0} |",
        median(open_us)
    );
    println!(
        "| first get on it (maps one shard), us | {:.0} |",
        median(get_us)
    );
    Ok(())
}

/// SplitMix64, as in table_bench: deterministic positions.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((u128::from(z ^ (z >> 31)) * u128::from(n)) >> 64) as u64
    }
}

/// `count` keys at random positions of `table` (not timed).
fn keys(table: &Table, count: usize, seed: u64) -> Result<Vec<Vec<u8>>> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let (k, _) = table
                .nth(rng.below(table.len()))?
                .context("position past the end")?;
            Ok(k.to_vec())
        })
        .collect()
}

/// Nanoseconds per get of every key through `get`, checking each is found.
fn warm(keys: &[Vec<u8>], get: impl Fn(&[u8]) -> stele_table::Result<bool>) -> Result<f64> {
    let started = Instant::now();
    for k in keys {
        ensure!(get(k)?, "a key drawn from the table is missing");
    }
    Ok(started.elapsed().as_nanos() as f64 / keys.len() as f64)
}

/// Median and 99th percentile of single cold gets, in microseconds.
fn cold(keys: &[Vec<u8>], get: impl Fn(&[u8]) -> stele_table::Result<bool>) -> Result<(f64, f64)> {
    let mut us = Vec::with_capacity(keys.len());
    for k in keys {
        let started = Instant::now();
        ensure!(get(k)?, "a key drawn from the table is missing");
        us.push(started.elapsed().as_nanos() as f64 / 1000.0);
    }
    us.sort_by(f64::total_cmp);
    Ok((us[us.len() / 2], us[us.len() * 99 / 100]))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn set_files(set: &TableSet) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (0..set.shards().len())
        .filter_map(|i| set.shard_path(i))
        .collect();
    files.push(set.path().to_path_buf());
    files
}

fn evict_all(files: &[PathBuf]) -> Result<()> {
    for f in files {
        sys::evict(Path::new(f))?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let table =
        Table::open(&args.table).with_context(|| format!("opening {}", args.table.display()))?;
    let set =
        TableSet::open(&args.set).with_context(|| format!("opening {}", args.set.display()))?;
    if table.len() != set.len() || table.is_empty() {
        bail!(
            "the table has {} entries and the set {}: give the same, non-empty data",
            table.len(),
            set.len()
        );
    }
    let warm_keys = keys(&table, args.lookups, 0x5354_454c_455f_5345)?;
    // One pass each to map and verify every block the keys reach.
    warm(&warm_keys, |k| table.get(k).map(|v| v.is_some()))?;
    warm(&warm_keys, |k| set.get(k).map(|v| v.is_some()))?;
    let (mut t_ns, mut s_ns) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        t_ns.push(warm(&warm_keys, |k| table.get(k).map(|v| v.is_some()))?);
        s_ns.push(warm(&warm_keys, |k| set.get(k).map(|v| v.is_some()))?);
    }
    let (t_warm, s_warm) = (median(t_ns), median(s_ns));
    let cold_keys = keys(&table, args.cold, 0x434f_4c44)?;
    drop(table);
    drop(set);
    // Cold: evict, open afresh, one get per key.
    evict_all(std::slice::from_ref(&args.table))?;
    let table = Table::open(&args.table)?;
    let t_cold = cold(&cold_keys, |k| table.get(k).map(|v| v.is_some()))?;
    let set = TableSet::open(&args.set)?;
    evict_all(&set_files(&set))?;
    let set = TableSet::open(&args.set)?;
    // As the table was opened (footer and index read) before its timed gets, the set's
    // shards are opened before its own; what opening them cold costs is timed apart.
    let started = Instant::now();
    for i in 0..set.shards().len() {
        set.shard(i)?;
    }
    let open_ms = started.elapsed().as_secs_f64() * 1000.0;
    let s_cold = cold(&cold_keys, |k| set.get(k).map(|v| v.is_some()))?;
    println!(
        "| reads ({} entries, {} shards) | one table | table set | set / table |",
        table.len(),
        set.shards().len()
    );
    println!("|---|--:|--:|--:|");
    println!(
        "| warm random get, ns (median of 5 rounds of {}) | {t_warm:.0} | {s_warm:.0} | {:.2} |",
        args.lookups,
        s_warm / t_warm
    );
    println!(
        "| cold random get p50, us ({} gets) | {:.1} | {:.1} | {:.2} |",
        args.cold,
        t_cold.0,
        s_cold.0,
        s_cold.0 / t_cold.0
    );
    println!(
        "| cold random get p99, us | {:.1} | {:.1} | {:.2} |",
        t_cold.1,
        s_cold.1,
        s_cold.1 / t_cold.1
    );
    println!(
        "| opening every shard cold (footer and index of {} shards), ms | | {open_ms:.1} | |",
        set.shards().len()
    );
    if args.many_shards > 0 {
        println!("\n| many shards | median of 5 |\n|---|--:|");
        many_shards(args.many_shards)?;
    }
    Ok(())
}
