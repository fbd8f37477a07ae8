//! Backups of a live database (`stele::backup`) against `cp -r` of its folder and SQLite's
//! online backup API and `VACUUM INTO` on the same documents, in one run.
//!
//! ```text
//! cargo run --release -p stele-bench --bin backup_bench -- [--quick] [--keep] [--rounds N]
//!     [--mb MB] [--seconds S] [--rates MB/s,...] [--only-copies] [--work DIR] [--data DIR]
//! ```
//!
//! 1. A database of at least `--mb` megabytes on disk (default 1024) is built from every
//!    collection of `../shared/data/collections`, repeated with new ids (`<id>~<round>`),
//!    stored uncompressed (so that the bytes on disk are the documents' own, not a 10x
//!    compression of them), committed in batches and compacted.
//! 2. A writer thread commits batches of 100 small documents, durable each, throughout;
//!    its commits/s are measured while `cp -r` copies the folder, then while this binary
//!    (again, as a separate process: a reader of the database) backs it up with copies
//!    (`--copy`, unlimited and at each of `--rates`, default 400,200,100 MB/s) and with
//!    hard links, each to a new folder on the same file system, against its rate alone in
//!    the windows just before and after each run (paired ratios); `dd` of the largest
//!    table gives the disk's write rates. In `--rounds` rounds (default 5), medians
//!    reported: see `copies.rs`. `--only-copies`: this part only.
//! 3. Incremental: 1% of the documents replaced, then a backup into the copy made in 2:
//!    bytes written over the database's bytes, after a checkpoint; after the change spread
//!    over 9 checkpoints, which start a compaction (size-tiered: the base stays, see
//!    `DatabaseOptions::compact_base_ratio`); after a full `Database::compact`.
//! 4. Replica lag: a writer committing every 10 ms while a replicator process ships every
//!    interval: for each commit, the time from its acknowledgement to the end of the first
//!    shipment holding it (p50, p99, max) against the interval.
//!    Beside it, Litestream (if built: see `litestream.rs`) replicating an SQLite writer
//!    committing every 10 ms to a file replica, at the same intervals.
//! 5. A restore of the replica (latest version, hard links and copies) against opening it
//!    read-only, reading its files once and `cp -r` of it.
//! 6. SQLite (WAL, one table id TEXT PRIMARY KEY, body TEXT) with the same documents: the
//!    online backup API (`sqlite3_backup_step` of 1,024 pages at a time) and `VACUUM INTO`,
//!    at rest.
//!
//! `--keep`: the work folder (the database, its backups, SQLite's files) is left for a look
//! afterwards. `--quick`: 8 MB, 0.3 s per measure (the CI smoke run). Page cache warm
//! throughout (the database was just written): times are of copying from memory to disk.

mod child;
mod copies;
mod disk;
mod lag;
mod litestream;
mod restore;
#[path = "../../doc/timing.rs"]
#[allow(
    dead_code,
    reason = "shared with `stele-bench doc`; only the CPU clock is used here"
)]
mod timing;
mod writer;

use anyhow::{Context, Result, bail};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use stele::{Database, DatabaseOptions};

#[derive(Debug, Clone)]
pub(crate) struct Args {
    quick: bool,
    keep: bool,
    rounds: usize,
    mb: u64,
    seconds: f64,
    /// The rate limits (MB/s) of the copies measured beside the unlimited one.
    rates: Vec<f64>,
    /// Part 2 only (the copies beside the writer).
    only_copies: bool,
    work: Option<PathBuf>,
    data: PathBuf,
}

fn parse_args(raw: &[String]) -> Result<Args> {
    let mut args = Args {
        quick: false,
        keep: false,
        rounds: 5,
        mb: 1024,
        seconds: 5.0,
        rates: vec![400.0, 200.0, 100.0],
        only_copies: false,
        work: None,
        data: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    let mut it = raw.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().context("a value after the flag");
        match a.as_str() {
            "--quick" => {
                args.quick = true;
                args.mb = 8;
                args.seconds = 0.3;
                args.rounds = 1;
                args.rates = vec![4.0];
            }
            "--rates" => {
                args.rates = value()?
                    .split(',')
                    .filter(|r| !r.trim().is_empty())
                    .map(|r| r.trim().parse::<f64>())
                    .collect::<Result<_, _>>()?;
            }
            "--only-copies" => args.only_copies = true,
            "--keep" => args.keep = true,
            "--rounds" => args.rounds = value()?.parse::<usize>()?.max(1),
            "--mb" => args.mb = value()?.parse()?,
            "--seconds" => args.seconds = value()?.parse()?,
            "--work" => args.work = Some(PathBuf::from(value()?)),
            "--data" => args.data = PathBuf::from(value()?),
            other => bail!(
                "backup_bench: unknown argument {other:?}\n\nusage: backup_bench [--quick] [--keep] [--rounds N] [--mb MB] [--seconds S] [--rates MB/s,...] [--only-copies] [--work DIR] [--data DIR]"
            ),
        }
    }
    Ok(args)
}

fn main() -> Result<()> {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().is_some_and(|a| a.starts_with("child-")) {
        return child::run(&raw);
    }
    let args = parse_args(&raw)?;
    let load = |label: &str| {
        let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "load average {label}: {}",
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
    };
    load("at start");
    let tmp = tempfile::Builder::new()
        .prefix("backup-bench-")
        .tempdir_in(args.work.clone().unwrap_or_else(std::env::temp_dir))?;
    let work = tmp.path();
    let src = work.join("db");
    let started = Instant::now();
    let (docs, ids) = build(&args, &src)?;
    let db_bytes = folder_bytes(&src);
    println!(
        "database: {docs} documents, {:.1} MB on disk, built in {:.1} s",
        db_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let db = Database::open_with(&src, options())?;
    let period = Duration::from_secs_f64(args.seconds);
    // 2. Writer alone, beside cp -r, beside backups.
    let copies = copies::measure(&db, &src, work, args.rounds, &args.rates)?;
    let copy_dest = copies.copy_dest.clone();
    if args.only_copies {
        drop(db);
        load("at end");
        if args.keep {
            let kept = tmp.keep();
            println!("kept the work folder: {}", kept.display());
        }
        return Ok(());
    }
    // 3. Incremental after 1% changed: with a checkpoint; over enough checkpoints that they
    // start a compaction (size-tiered: the base stays); with a full `compact`.
    let changed = change_share(&db, &ids, 100, 0)?;
    db.checkpoint()?;
    let after_checkpoint = incremental(&src, &copy_dest)?;
    // In line, so that the compaction is done when the checkpoint that starts it returns
    // (on the background thread, the next checkpoint would swap it in).
    drop(db);
    let db = Database::open_with(&src, options().background_compaction(false))?;
    let parts = DEFAULT_COMPACT_LAYERS + 1;
    for part in 0..parts {
        change_share(&db, &ids, 100 * parts, 100 * part + 1)?;
        db.checkpoint()?;
    }
    let after_tiered = incremental(&src, &copy_dest)?;
    drop(db);
    let db = Database::open_with(&src, options())?;
    change_share(&db, &ids, 100, 2)?;
    db.compact()?;
    let after_compaction = incremental(&src, &copy_dest)?;
    let now_bytes = folder_bytes(&src) as f64;
    println!(
        "\n| incremental backup after {changed} documents (1%) changed | bytes written | / database bytes |"
    );
    println!("|---|---:|---:|");
    for (name, b) in [
        ("and a checkpoint", after_checkpoint),
        (
            "over 9 checkpoints, and the compaction they start (tiered)",
            after_tiered,
        ),
        (
            "and a full compaction (`Database::compact`)",
            after_compaction,
        ),
    ] {
        println!("| {name} | {b} | {:.4} |", b as f64 / now_bytes);
    }
    // 4. Replica lag, beside Litestream's on an SQLite writer; 5. restore against open.
    println!(
        "\n| replica | interval | shipments | commits | lag p50 ms | lag p99 ms | lag max ms | p99 / interval |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let intervals: &[u64] = if args.quick { &[100] } else { &[250, 1000] };
    let litestream_bin = litestream::binary();
    let mut replica = PathBuf::new();
    for &ms in intervals {
        replica = work.join(format!("replica-{ms}"));
        let interval = Duration::from_millis(ms);
        let run = period.max(Duration::from_millis(10 * ms));
        let r = lag::measure(&db, &src, &replica, interval, run)?;
        print_lag("Stele replicate", ms, &r);
        match &litestream_bin {
            Some(bin) => {
                let r = litestream::measure(bin, work, interval, run)?;
                print_lag(
                    &format!(
                        "Litestream {} (monitor and sync interval)",
                        litestream::VERSION
                    ),
                    ms,
                    &r,
                );
            }
            None => println!(
                "| Litestream | {ms} ms | not run (no binary: set LITESTREAM or build it into <target>/litestream/bin) | | | | | |"
            ),
        }
    }
    restore::measure(work, &replica)?;
    drop(db);
    // 6. SQLite.
    sqlite(work, copies.copy, copies.cp)?;
    load("at end");
    if args.keep {
        let kept = tmp.keep();
        println!("kept the work folder: {}", kept.display());
    }
    Ok(())
}

fn print_lag(name: &str, ms: u64, r: &lag::Lag) {
    println!(
        "| {name} | {ms} ms | {} | {} | {:.0} | {:.0} | {:.0} | {:.2} |",
        r.shipments,
        r.commits,
        r.p50_ms,
        r.p99_ms,
        r.max_ms,
        r.p99_ms / ms as f64
    );
}

pub(crate) fn options() -> DatabaseOptions {
    DatabaseOptions::default().idle_checkpoint(None)
}

/// Per collection, the ids written.
type Ids = Vec<(String, Vec<String>)>;

/// Builds the database; returns the documents and the ids.
fn build(args: &Args, dir: &Path) -> Result<(u64, Ids)> {
    let db = Database::open_with(dir, options())?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(args.data.join("collections"))
        .with_context(|| format!("listing {}/collections", args.data.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.zst"))
        .collect();
    files.sort();
    let target = args.mb * 1_000_000;
    let mut ids: Vec<(String, Vec<String>)> = Vec::new();
    let mut docs = 0u64;
    let mut written = 0u64;
    'rounds: for round in 0.. {
        for file in &files {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("c");
            let coll: String = name
                .trim_end_matches(".jsonl.zst")
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if round == 0 {
                db.set_compression(&coll, false)?;
                ids.push((coll.clone(), Vec::new()));
            }
            let reader = std::io::BufReader::new(zstd::stream::read::Decoder::new(
                std::fs::File::open(file)?,
            )?);
            let mut batch = db.batch();
            let mut in_batch = 0;
            for (i, line) in reader.lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                let id = format!("{i}~{round}");
                batch.put_json(&coll, &id, line.as_bytes())?;
                written += line.len() as u64;
                docs += 1;
                in_batch += 1;
                if let Some((_, list)) = ids.iter_mut().find(|(c, _)| *c == coll) {
                    list.push(id);
                }
                if in_batch == 5000 {
                    db.commit(std::mem::replace(&mut batch, db.batch()))?;
                    in_batch = 0;
                }
                if written >= target && db.disk_usage().total_bytes >= target {
                    db.commit(batch)?;
                    break 'rounds;
                }
            }
            db.commit(batch)?;
        }
    }
    db.compact()?;
    db.close()?;
    Ok((docs, ids))
}

pub(crate) fn timed_command(cmd: &mut Command) -> Result<Duration> {
    let start = Instant::now();
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(start.elapsed())
}

/// Replaces 1% of every collection's documents (a field added); returns how many.
/// Layers a collection may have before a checkpoint compacts it (the default of
/// `DatabaseOptions::compact_layers`).
const DEFAULT_COMPACT_LAYERS: usize = 8;

/// Replaces the documents at positions `offset`, `offset + every`, ... of every collection
/// (every = 100: 1%) with an edited copy, one batch per collection; returns how many.
fn change_share(db: &Database, ids: &Ids, every: usize, offset: usize) -> Result<u64> {
    let snap = db.snapshot();
    let mut changed = 0;
    for (coll, list) in ids {
        let mut batch = db.batch();
        for id in list.iter().skip(offset).step_by(every) {
            if let Some(doc) = snap.get(coll, id)? {
                let json = doc.to_json()?;
                let edited = match json.strip_suffix('}') {
                    Some(head) if head.len() > 1 => {
                        format!(r#"{head},"bench_changed":{changed}}}"#)
                    }
                    _ => json,
                };
                batch.put_json(coll, id, edited.as_bytes())?;
                changed += 1;
            }
        }
        db.commit(batch)?;
    }
    Ok(changed)
}

fn incremental(src: &Path, dest: &Path) -> Result<u64> {
    let opts = stele::backup::BackupOptions::default().link(false);
    Ok(stele::backup::backup_with(src, dest, &opts)?.bytes_written)
}

/// Bytes of the database folder `dir` on disk.
pub(crate) fn folder_bytes(dir: &Path) -> u64 {
    Database::open_read_only(dir).map_or(0, |db| db.disk_usage().total_bytes)
}

/// SQLite with the same documents: its backup API and `VACUUM INTO`, at rest.
fn sqlite(work: &Path, stele_copy: Duration, cp: Duration) -> Result<()> {
    let path = work.join("sqlite.db");
    let start = Instant::now();
    let con = rusqlite::Connection::open(&path)?;
    con.pragma_update(None, "journal_mode", "WAL")?;
    con.execute("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)", [])?;
    let src = work.join("db");
    let db = Database::open_read_only(&src)?;
    let snap = db.snapshot();
    let mut docs = 0u64;
    // The built collections only (not what the writers of the runs added).
    for coll in snap
        .collections()
        .into_iter()
        .filter(|c| !c.starts_with("bench-"))
    {
        let tx = con.unchecked_transaction()?;
        {
            let mut stmt = tx.prepare("INSERT INTO t (id, body) VALUES (?1, ?2)")?;
            for entry in snap.iter(coll) {
                let (id, doc) = entry?;
                stmt.execute(rusqlite::params![format!("{coll}/{id}"), doc.to_json()?])?;
                docs += 1;
            }
        }
        tx.commit()?;
    }
    con.pragma_update(None, "wal_checkpoint", "TRUNCATE")?;
    let bytes = folder_bytes_matching(work, "sqlite.db");
    println!(
        "\nSQLite: {docs} documents, {:.1} MB, built in {:.1} s",
        bytes as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    {
        let mut dest = rusqlite::Connection::open(work.join("sqlite-backup.db"))?;
        let backup = rusqlite::backup::Backup::new(&con, &mut dest)?;
        backup.run_to_completion(1024, Duration::ZERO, None)?;
    }
    let api = t.elapsed();
    let t = Instant::now();
    con.execute(
        "VACUUM INTO ?1",
        [work.join("sqlite-vacuum.db").to_string_lossy()],
    )?;
    let vacuum = t.elapsed();
    println!("\n| same documents | backup s | MB/s | vs cp -r of Stele's folder |");
    println!("|---|---:|---:|---:|");
    let stele_mb = folder_bytes(&src) as f64 / 1e6;
    for (name, t, mb) in [
        (
            "Stele backup --copy (writer running, median)",
            stele_copy,
            stele_mb,
        ),
        ("SQLite backup API (at rest)", api, bytes as f64 / 1e6),
        ("SQLite VACUUM INTO (at rest)", vacuum, bytes as f64 / 1e6),
    ] {
        println!(
            "| {name} | {:.3} | {:.0} | {:.2} |",
            t.as_secs_f64(),
            mb / t.as_secs_f64().max(1e-9),
            t.as_secs_f64() / cp.as_secs_f64()
        );
    }
    Ok(())
}

fn folder_bytes_matching(dir: &Path, prefix: &str) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .map(|e| e.metadata().map_or(0, |m| m.len()))
                .sum()
        })
        .unwrap_or(0)
}
