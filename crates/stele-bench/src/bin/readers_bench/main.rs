//! One writer process and 0, 1 or 2 reader processes on one database, for Stele, SQLite
//! (WAL mode) and LMDB side by side: the writer's commits/s (and as a ratio of its rate
//! without readers), the readers' random gets + 3 fields per second, and how soon a reader
//! process sees a commit once it is acknowledged.
//!
//! ```text
//! cargo run --release -p stele-bench --bin readers_bench -- [--quick] [--docs N] [--seconds S]
//!     [--batch B] [--work DIR]
//! ```
//!
//! Each engine gets a database of `--docs` documents (about 330 bytes of JSON each: id,
//! name, city, amount, tags, text). The writer, in this process, commits batches of
//! `--batch` documents (new amounts for random ids), each durable when it returns. Reader
//! processes (this binary again) each read random documents and 3 fields of each, starting
//! a new snapshot every 1,000 gets, each engine ending the old one before it starts the new
//! (Stele `refresh_snapshot`, SQLite `COMMIT; BEGIN`, LMDB a read transaction dropped, then
//! a new one). One more run has one reader beside a writer that holds the
//! database open and commits nothing: the get path alone; and one more, one reader beside a
//! writer held to 1,000 commits/s, so that every engine's reader sees the same stream of
//! changes whatever its writer's top speed. Each reader also reports its share of time in
//! `refresh()` and its gets per CPU second (the cost of a get, whatever share of the cores
//! the reader got). Then, for the visibility figure, a reader process is told after
//! each of 200 acknowledged commits what the commit wrote, and refreshes until it sees it.
//! `--quick`: 2,000 documents, 0.3 s per run (the CI smoke run).

mod engines;

use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Gets between two refreshes of a reader.
const GETS_PER_REFRESH: u64 = 1000;

#[derive(Debug, Clone)]
struct Args {
    quick: bool,
    docs: u64,
    seconds: f64,
    batch: usize,
    /// Runs of each reader count, interleaved (0, 1, 2, 1 beside an idle writer, 1 beside a
    /// paced writer, 0, 1, ...); medians reported.
    repeat: usize,
    visibility_rounds: usize,
    work: Option<PathBuf>,
    engines: Vec<String>,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        quick: false,
        docs: 100_000,
        seconds: 5.0,
        batch: 10,
        repeat: 3,
        visibility_rounds: 200,
        work: None,
        engines: engines::ENGINES.iter().map(|s| (*s).to_owned()).collect(),
    };
    let mut it = std::env::args().skip(1);
    let number = |it: &mut dyn Iterator<Item = String>, what: &str| -> Result<f64> {
        let n = it
            .next()
            .with_context(|| format!("{what} needs a number"))?;
        n.parse()
            .with_context(|| format!("{what} {n:?}: not a number"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" | "--test" => {
                args.quick = true;
                args.docs = 2_000;
                args.seconds = 0.3;
                args.repeat = 1;
                args.visibility_rounds = 20;
            }
            "--docs" => args.docs = number(&mut it, "--docs")? as u64,
            "--seconds" => args.seconds = number(&mut it, "--seconds")?,
            "--batch" => args.batch = number(&mut it, "--batch")?.max(1.0) as usize,
            "--repeat" => args.repeat = number(&mut it, "--repeat")?.max(1.0) as usize,
            "--work" => {
                args.work = Some(PathBuf::from(it.next().context("--work needs a folder")?))
            }
            "--only" => args.engines = vec![it.next().context("--only needs an engine")?],
            "--help" | "-h" => {
                println!(
                    "readers_bench: one writer process + 0, 1, 2 reader processes; Stele, \
                     SQLite (WAL), LMDB\n\n\
                     --quick      2,000 documents, 0.3 s per run (CI smoke run)\n\
                     --docs N     documents in each database (default 100,000)\n\
                     --seconds S  length of each run (default 5)\n\
                     --batch B    documents per commit (default 10)\n\
                     --repeat R   runs of each reader count, interleaved; medians (default 3)\n\
                     --only E     one engine: stele, sqlite or lmdb\n\
                     --work DIR   where the databases go (default: a temporary folder)"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    Ok(args)
}

/// SplitMix64: the ids read and written (no dependency for a random number).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn id(i: u64) -> String {
    format!("user{i:08}")
}

/// JSON text of document `i` with `amount`.
fn doc_json(i: u64, amount: i64) -> String {
    format!(
        r#"{{"id":"{}","name":"user number {i}","city":"city {}","amount":{amount},"tags":["t{}","t{}"],"active":{},"bio":"member since {} who writes about topics {} and {} with a preference for long walks, tea and databases that keep their promises"}}"#,
        id(i),
        i % 997,
        i % 13,
        i % 7,
        i.is_multiple_of(2),
        2000 + i % 25,
        i % 101,
        i % 37
    )
}

// ---- reader processes ----

/// In a reader process: `--reader ENGINE DIR SECONDS DOCS`: prints `ready`, waits for a
/// line, reads for SECONDS, prints `gets N seconds S`.
fn reader_process(rest: &[String]) -> Result<()> {
    let [engine, dir, seconds, docs] = rest else {
        bail!("--reader ENGINE DIR SECONDS DOCS");
    };
    let seconds: f64 = seconds.parse()?;
    let docs: u64 = docs.parse()?;
    let mut r = engines::open_reader(engine, Path::new(dir))?;
    let mut rng = Rng(u64::from(std::process::id()));
    println!("ready");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let deadline = start + Duration::from_secs_f64(seconds);
    let (mut gets, mut sum) = (0u64, 0i64);
    let mut refreshing = Duration::ZERO;
    loop {
        if gets.is_multiple_of(GETS_PER_REFRESH) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            r.refresh()?;
            refreshing += now.elapsed();
        }
        sum = sum.wrapping_add(r.get3(&id(rng.below(docs)))?);
        gets += 1;
    }
    std::hint::black_box(sum);
    println!(
        "gets {gets} seconds {} refreshing {} cpu {}",
        start.elapsed().as_secs_f64(),
        refreshing.as_secs_f64(),
        cpu_seconds() - cpu_start
    );
    Ok(())
}

/// In a reader process: `--watch ENGINE DIR`: for each line `ID AMOUNT`, refreshes until
/// document ID has AMOUNT, and prints the microseconds that took.
fn watch_process(rest: &[String]) -> Result<()> {
    let [engine, dir] = rest else {
        bail!("--watch ENGINE DIR");
    };
    let mut r = engines::open_reader(engine, Path::new(dir))?;
    println!("ready");
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let mut parts = line.split_whitespace();
        let (Some(doc), Some(amount)) = (parts.next(), parts.next()) else {
            break;
        };
        let amount: i64 = amount.parse()?;
        let i: u64 = doc.trim_start_matches("user").parse()?;
        // get3 adds the lengths of name and city to the amount.
        let want = amount + fields_len(i);
        let start = Instant::now();
        let mut tries = 0u64;
        loop {
            r.refresh()?;
            if r.get3(doc)? == want {
                break;
            }
            tries += 1;
            if start.elapsed() > Duration::from_secs(10) {
                bail!("{engine}: commit to {doc} not visible after 10 s");
            }
        }
        writeln!(out, "{} {tries}", start.elapsed().as_nanos())?;
        out.flush()?;
    }
    Ok(())
}

/// The lengths of the name and city of document `i`.
fn fields_len(i: u64) -> i64 {
    (format!("user number {i}").len() + format!("city {}", i % 997).len()) as i64
}

fn spawn(args: &[String]) -> Result<(Child, BufReader<std::process::ChildStdout>)> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut out = BufReader::new(child.stdout.take().context("child stdout")?);
    let mut line = String::new();
    out.read_line(&mut line)?;
    if line.trim() != "ready" {
        bail!("a reader process did not start: {line:?}");
    }
    Ok((child, out))
}

// ---- the writer ----

/// CPU time this process has used (user + system), in seconds.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer given; RUSAGE_SELF is valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return f64::NAN;
    }
    // SAFETY: getrusage succeeded, so it initialised the struct (zeroed before anyway).
    let u = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// How the writer works during a run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pace {
    /// Commits as fast as it can.
    Full,
    /// Commits at most this many times per second (sleeping between commits): every engine's
    /// readers then see the same stream of changes, whatever its writer's top speed.
    PerSecond(f64),
    /// Holds the database open and commits nothing: the readers' gets alone.
    Idle,
}

/// Commits per second of the paced runs: below every engine's top speed here (1,600-4,100
/// commits/s in quiet runs), so that each writer keeps the pace.
const PACED_COMMITS_PER_S: f64 = 1000.0;

/// One run: the writer for `seconds`, at `pace`, beside `readers` reader processes.
fn run(
    args: &Args,
    engine: &str,
    dir: &Path,
    readers: usize,
    pace: Pace,
    w: &mut dyn engines::Writer,
) -> Result<RunResult> {
    let mut children = Vec::new();
    for _ in 0..readers {
        let a = vec![
            "--reader".to_owned(),
            engine.to_owned(),
            dir.display().to_string(),
            args.seconds.to_string(),
            args.docs.to_string(),
        ];
        children.push(spawn(&a)?);
    }
    for (c, _) in &mut children {
        writeln!(c.stdin.as_mut().context("child stdin")?, "go")?;
    }
    let mut rng = Rng(7 + readers as u64);
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let deadline = start + Duration::from_secs_f64(args.seconds);
    let mut commits = 0u64;
    if pace == Pace::Idle {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    }
    while pace != Pace::Idle && Instant::now() < deadline {
        let docs: Vec<(String, String)> = (0..args.batch)
            .map(|_| {
                let i = rng.below(args.docs);
                (id(i), doc_json(i, rng.below(1_000_000) as i64))
            })
            .collect();
        w.commit(&docs)?;
        commits += 1;
        if let Pace::PerSecond(rate) = pace {
            let due = start + Duration::from_secs_f64(commits as f64 / rate);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let commits_per_s = commits as f64 / wall;
    let writer_cores = (cpu_seconds() - cpu_start) / wall;
    let (mut gets_per_s, mut gets_per_cpu_s, mut refresh_share) = (0.0, 0.0, 0.0);
    for (mut c, mut out) in children {
        let mut line = String::new();
        out.read_line(&mut line)?;
        let status = c.wait()?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(gets), Some(secs), Some(refreshing), Some(cpu)) =
            (f.get(1), f.get(3), f.get(5), f.get(7))
        else {
            bail!("{engine}: a reader process failed ({status}): {line:?}");
        };
        let (gets, secs) = (gets.parse::<f64>()?, secs.parse::<f64>()?);
        gets_per_s += gets / secs;
        gets_per_cpu_s += gets / cpu.parse::<f64>()? / readers as f64;
        refresh_share += refreshing.parse::<f64>()? / secs / readers as f64;
    }
    Ok(RunResult {
        commits_per_s,
        gets_per_s,
        gets_per_cpu_s,
        writer_cores,
        refresh_share,
    })
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct RunResult {
    commits_per_s: f64,
    /// Summed over the readers.
    gets_per_s: f64,
    /// Gets per CPU second of a reader process (mean over the readers; 0 without): the cost
    /// of a get, refreshes included, whatever share of the cores the reader got.
    gets_per_cpu_s: f64,
    /// The writer's CPU seconds per second.
    writer_cores: f64,
    /// The share of a reader's time spent in `refresh()` (mean over the readers; 0 without).
    refresh_share: f64,
}

/// Commits one document at a time and has a reader process refresh until it sees each:
/// (the reader's refresh-to-visible times, acknowledgement-to-visible times with the pipe),
/// in microseconds.
fn visibility(
    args: &Args,
    engine: &str,
    dir: &Path,
    w: &mut dyn engines::Writer,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (mut child, mut out) = spawn(&[
        "--watch".to_owned(),
        engine.to_owned(),
        dir.display().to_string(),
    ])?;
    let mut rng = Rng(99);
    let (mut refresh_us, mut ack_us) = (Vec::new(), Vec::new());
    for round in 0..args.visibility_rounds {
        let i = rng.below(args.docs);
        let amount = 2_000_000 + round as i64;
        w.commit(&[(id(i), doc_json(i, amount))])?;
        let acked = Instant::now();
        let stdin = child.stdin.as_mut().context("child stdin")?;
        writeln!(stdin, "{} {amount}", id(i))?;
        stdin.flush()?;
        let mut line = String::new();
        out.read_line(&mut line)?;
        ack_us.push(acked.elapsed().as_secs_f64() * 1e6);
        let ns: f64 = line
            .split_whitespace()
            .next()
            .with_context(|| format!("{engine}: the watching reader failed"))?
            .parse()?;
        refresh_us.push(ns / 1e3);
    }
    drop(child.stdin.take());
    child.wait()?;
    Ok((refresh_us, ack_us))
}

fn median(v: Vec<f64>) -> f64 {
    percentile(v, 0.5)
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

/// Fills a new database of `args.docs` documents (in commits of 10,000), then lets it
/// settle (see `Writer::settle`).
fn fill(args: &Args, w: &mut dyn engines::Writer) -> Result<()> {
    let mut i = 0;
    while i < args.docs {
        let end = (i + 10_000).min(args.docs);
        let docs: Vec<(String, String)> = (i..end).map(|i| (id(i), doc_json(i, 100))).collect();
        w.commit(&docs)?;
        i = end;
    }
    w.settle()
}

struct Row {
    engine: String,
    commits: [f64; 3],
    gets: [f64; 3],
    /// Share of a reader's time in `refresh()`, by reader count (index 0 unused).
    refresh_share: [f64; 3],
    /// Gets per CPU second of one reader, by reader count (index 0 unused).
    gets_per_cpu_s: [f64; 3],
    /// The same beside a writer that commits nothing.
    gets_per_cpu_s_alone: f64,
    /// Gets/s of one reader beside a writer held to `PACED_COMMITS_PER_S`, and the
    /// commits/s it kept.
    gets_paced: f64,
    commits_paced: f64,
    /// Gets/s of one reader while the writer commits nothing.
    gets_alone: f64,
    writer_cores: f64,
    refresh_us: (f64, f64),
    ack_us: (f64, f64),
}

fn main() -> Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some("--reader") => return reader_process(&argv[1..]),
        Some("--watch") => return watch_process(&argv[1..]),
        _ => {}
    }
    let args = parse_args()?;
    let work = args.work.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let temp = tempfile::tempdir_in(&work)?;
    println!(
        "readers_bench: {} documents, batches of {}, {} s per run, medians of {} runs, {} cores",
        args.docs,
        args.batch,
        args.seconds,
        args.repeat,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let mut rows = Vec::new();
    for engine in &args.engines {
        let dir = temp.path().join(engine);
        std::fs::create_dir_all(&dir)?;
        let mut w = engines::open_writer(engine, &dir)?;
        fill(&args, &mut *w)?;
        let mut row = Row {
            engine: engine.clone(),
            commits: [0.0; 3],
            gets: [0.0; 3],
            refresh_share: [0.0; 3],
            gets_per_cpu_s: [0.0; 3],
            gets_per_cpu_s_alone: 0.0,
            gets_paced: 0.0,
            commits_paced: 0.0,
            gets_alone: 0.0,
            writer_cores: 0.0,
            refresh_us: (0.0, 0.0),
            ack_us: (0.0, 0.0),
        };
        // Interleaved, so that the load other processes put on the disk and the cores
        // falls on every reader count alike.
        let mut runs: [Vec<RunResult>; 3] = Default::default();
        let (mut alone, mut paced) = (Vec::new(), Vec::new());
        for _ in 0..args.repeat {
            for (readers, got) in runs.iter_mut().enumerate() {
                got.push(run(&args, engine, &dir, readers, Pace::Full, &mut *w)?);
            }
            alone.push(run(&args, engine, &dir, 1, Pace::Idle, &mut *w)?);
            let rate = Pace::PerSecond(PACED_COMMITS_PER_S);
            paced.push(run(&args, engine, &dir, 1, rate, &mut *w)?);
        }
        row.gets_alone = median(alone.iter().map(|r| r.gets_per_s).collect());
        row.gets_per_cpu_s_alone = median(alone.iter().map(|r| r.gets_per_cpu_s).collect());
        row.gets_paced = median(paced.iter().map(|r| r.gets_per_s).collect());
        row.commits_paced = median(paced.iter().map(|r| r.commits_per_s).collect());
        for (readers, got) in runs.into_iter().enumerate() {
            row.commits[readers] = median(got.iter().map(|r| r.commits_per_s).collect());
            row.gets[readers] = median(got.iter().map(|r| r.gets_per_s).collect());
            row.refresh_share[readers] = median(got.iter().map(|r| r.refresh_share).collect());
            row.gets_per_cpu_s[readers] = median(got.iter().map(|r| r.gets_per_cpu_s).collect());
            if readers == 0 {
                row.writer_cores = median(got.iter().map(|r| r.writer_cores).collect());
            }
        }
        let (refresh, ack) = visibility(&args, engine, &dir, &mut *w)?;
        row.refresh_us = (percentile(refresh.clone(), 0.5), percentile(refresh, 0.99));
        row.ack_us = (percentile(ack.clone(), 0.5), percentile(ack, 0.99));
        rows.push(row);
    }
    print_rows(&rows);
    Ok(())
}

fn print_rows(rows: &[Row]) {
    println!(
        "| engine | writer cores, 0 readers | commits/s, 0 readers | 1 reader | 2 readers | writer with 1 / 2 readers | gets/s, 1 reader | 2 readers | 1 reader, writer idle | refresh to visible p50 / p99 (us) | ack to visible p50 / p99 (us) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.2} | {:.0} | {:.0} | {:.0} | {:.2} / {:.2} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} | {:.0} / {:.0} |",
            r.engine,
            r.writer_cores,
            r.commits[0],
            r.commits[1],
            r.commits[2],
            r.commits[1] / r.commits[0],
            r.commits[2] / r.commits[0],
            r.gets[1],
            r.gets[2],
            r.gets_alone,
            r.refresh_us.0,
            r.refresh_us.1,
            r.ack_us.0,
            r.ack_us.1
        );
    }
    println!();
    for r in rows {
        println!(
            "{}: a reader's time in refresh(): {:.1}% (1 reader), {:.1}% (2 readers); gets per CPU second of a reader: {:.0} (1 reader), {:.0} (2 readers), {:.0} (writer idle)",
            r.engine,
            100.0 * r.refresh_share[1],
            100.0 * r.refresh_share[2],
            r.gets_per_cpu_s[1],
            r.gets_per_cpu_s[2],
            r.gets_per_cpu_s_alone
        );
        println!(
            "{}: 1 reader beside a writer held to {:.0} commits/s (it kept {:.0}): {:.0} gets/s",
            r.engine, PACED_COMMITS_PER_S, r.commits_paced, r.gets_paced
        );
    }
    let stele = rows.iter().find(|r| r.engine == "stele");
    if let Some(s) = stele {
        println!();
        for peer in rows.iter().filter(|r| r.engine != "stele") {
            println!(
                "stele / {}: reader gets/s {:.2}x (1 reader), {:.2}x (2 readers), {:.2}x (1 reader, writer idle), {:.2}x (1 reader, writers paced alike); writer commits/s {:.2}x (0 readers)",
                peer.engine,
                s.gets[1] / peer.gets[1],
                s.gets[2] / peer.gets[2],
                s.gets_alone / peer.gets_alone,
                s.gets_paced / peer.gets_paced,
                s.commits[0] / peer.commits[0]
            );
        }
    }
}
