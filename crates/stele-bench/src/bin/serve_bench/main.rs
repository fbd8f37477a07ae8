//! `stele serve` under load, beside a live writer, with Datasette over the same documents in
//! SQLite side by side when it is installed.
//!
//! ```text
//! cargo run --release -p stele-bench --bin serve_bench -- [--quick] [--docs N] [--seconds S]
//!     [--clients C] [--work DIR] [--datasette PATH]
//! ```
//!
//! 1. A database of `--docs` generated documents (about 300 bytes of JSON each) is built.
//! 2. The server runs in a child process (this binary with `--child DIR`), so that its peak
//!    memory (`VmHWM`) is its own: the time from spawn to listening and the time of the
//!    first collection page of that cold process are measured.
//! 3. For `--seconds`, a writer in this process commits batches of 10 changed documents
//!    every 10 ms (about 100 commits/s) while `--clients` keep-alive clients on loopback
//!    ask for collection pages (50 documents by cursor) and document pages, HTML and JSON
//!    in turn. Every answer is checked against a direct read of the database: the ids of a
//!    collection page, and a document's fields (its `rev`, which the writer changes, must
//!    lie between direct reads before and after the request).
//! 4. The whole collection is exported as JSON Lines over HTTP and compared with
//!    `stele export --id-field _id` (its library call, `stele::export::export_jsonl`, to a
//!    sink: the same work without the file).
//! 5. With `--datasette PATH` (or `datasette` on PATH), the same documents in SQLite (id,
//!    JSON text) served by Datasette with its defaults, a SQLite writer committing alike,
//!    and the same clients on its table page (`?_next=` cursor, `_size=50`) and row page.
//!
//! `--quick`: 2,000 documents, 1 s of load, 2 clients, no Datasette (the CI smoke run).

mod datasette;
mod load;
mod site;

use anyhow::{Context, Result, bail};
use load::{KINDS, Outcome, quantile};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
struct Args {
    quick: bool,
    docs: u64,
    seconds: f64,
    clients: usize,
    work: Option<PathBuf>,
    datasette: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        quick: false,
        docs: 1_000_000,
        seconds: 30.0,
        clients: 8,
        work: None,
        datasette: None,
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
            "--child" => {
                let dir = it.next().context("--child needs a folder")?;
                return child(Path::new(&dir)).map(|()| std::process::exit(0));
            }
            "--quick" | "--test" => {
                args.quick = true;
                args.docs = 2_000;
                args.seconds = 1.0;
                args.clients = 2;
            }
            "--docs" => args.docs = number(&mut it, "--docs")?.max(100.0) as u64,
            "--seconds" => args.seconds = number(&mut it, "--seconds")?,
            "--clients" => args.clients = number(&mut it, "--clients")?.max(1.0) as usize,
            "--work" => {
                args.work = Some(PathBuf::from(it.next().context("--work needs a folder")?))
            }
            "--datasette" => {
                args.datasette = Some(PathBuf::from(
                    it.next().context("--datasette needs a path")?,
                ))
            }
            "--help" | "-h" => {
                println!(
                    "serve_bench: stele serve under load beside a writer; Datasette side by side\n\n\
                     --quick          2,000 documents, 1 s, 2 clients (CI smoke run)\n\
                     --docs N         documents (default 1,000,000)\n\
                     --seconds S      length of the load (default 30)\n\
                     --clients C      concurrent clients (default 8)\n\
                     --datasette PATH the datasette program (default: datasette on PATH, if any)\n\
                     --work DIR       where the databases go (default: a temporary folder)\n\n\
                     STELE_SERVE_WORKERS=N  the server's worker threads (default: stele serve's)"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    if args.datasette.is_none() && !args.quick {
        args.datasette = which("datasette");
    }
    Ok(args)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

pub fn id(i: u64) -> String {
    format!("d{i:08}")
}

const CITIES: [&str; 8] = [
    "Oslo", "Lima", "Pune", "Kyiv", "Accra", "Quito", "Hanoi", "Perth",
];

/// Document `i` at revision `rev`: about 300 bytes of JSON.
pub fn doc(i: u64, rev: u64) -> String {
    doc_value(i, rev).to_string()
}

/// [`doc`] as a value (what the checks compare an answer with).
pub fn doc_value(i: u64, rev: u64) -> serde_json::Value {
    let tags: Vec<&str> = ["new", "sale", "eco", "gift"]
        .into_iter()
        .enumerate()
        .filter(|(k, _)| (i >> k) & 1 == 1)
        .map(|(_, t)| t)
        .collect();
    serde_json::json!({
        "name": format!("customer {i}"),
        "city": CITIES[(i % 8) as usize],
        "amount": (i * 37) % 10_000,
        "rev": rev,
        "tags": tags,
        "text": format!("order {i} placed online; ships in {} days from the {} warehouse", i % 9 + 1, CITIES[(i / 8 % 8) as usize]),
        "address": {"street": format!("{} Long Road", i % 1000), "zip": format!("{:05}", i % 100_000)},
    })
}

/// The server child: serves `dir` on a free port, prints `url URL`, answers until its
/// standard input closes, then prints `peak_rss BYTES`.
fn child(dir: &Path) -> Result<()> {
    let kick = std::env::var_os("STELE_SERVE_NO_KICK").is_none();
    let mut opts = stele_serve::Options::default()
        .port(0)
        .kick_connections(kick);
    // The server's worker threads (`stele serve --workers`); its default when unset.
    if let Some(n) = std::env::var_os("STELE_SERVE_WORKERS") {
        let n = n.to_string_lossy();
        let n: usize = n
            .parse()
            .with_context(|| format!("STELE_SERVE_WORKERS={n:?}: not a number"))?;
        opts = opts.workers(n);
    }
    eprintln!("server workers: {}", opts.workers);
    let server = stele_serve::Server::start(dir, opts)?;
    println!("url {}", server.url());
    std::io::stdout().flush()?;
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line)? > 0 {
        line.clear();
    }
    server.stop();
    println!("peak_rss {}", status_kb("VmHWM")? * 1024);
    Ok(())
}

/// A `kB` field of `/proc/<pid>/status`.
fn status_kb_of(pid: &str, field: &str) -> Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no {field} in /proc/{pid}/status"))
}

/// CPU time (user and system, every thread) of process `pid` (or `self`) so far, in seconds.
fn cpu_seconds(pid: &str) -> Result<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command's name, in parentheses: the state is field 3, utime and stime are
    // fields 14 and 15, in clock ticks.
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .with_context(|| format!("/proc/{pid}/stat: no name"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |field: usize| -> Result<f64> {
        fields
            .get(field - 3)
            .and_then(|f| f.parse::<f64>().ok())
            .with_context(|| format!("/proc/{pid}/stat: no field {field}"))
    };
    // SAFETY: sysconf takes a constant and reads a configuration value; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Ok((ticks(14)? + ticks(15)?) / (hz.max(1) as f64))
}

/// CPU time of the calling thread so far, in seconds (0 if the clock cannot be read).
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a live timespec the call writes; the clock id is a constant.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if r != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// The 1-minute load average, as `/proc/loadavg` says it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn status_kb(field: &str) -> Result<u64> {
    status_kb_of("self", field)
}

fn build(dir: &Path, docs: u64) -> Result<Duration> {
    let t = Instant::now();
    let db = stele::Database::open(dir)?;
    let mut i = 0;
    while i < docs {
        let mut b = db.batch();
        for k in i..(i + 10_000).min(docs) {
            b.put_json("docs", &id(k), doc(k, 0).as_bytes())?;
        }
        db.commit(b)?;
        i += 10_000;
    }
    db.close()?;
    Ok(t.elapsed())
}

/// Pace of the writers: a batch of 10 documents every 10 ms.
const WRITE_EVERY: Duration = Duration::from_millis(10);
const WRITE_BATCH: u64 = 10;

/// Commits batches (each document's `rev` raised) until `stop`; returns the commits made.
fn write_until(
    stop: &AtomicBool,
    docs: u64,
    mut commit: impl FnMut(&[(u64, u64)]) -> Result<()>,
) -> Result<u64> {
    let mut rng = load::Rng(7);
    let mut rev = 0u64;
    let mut commits = 0;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        rev += 1;
        let batch: Vec<(u64, u64)> = (0..WRITE_BATCH).map(|_| (rng.below(docs), rev)).collect();
        commit(&batch)?;
        commits += 1;
        next += WRITE_EVERY;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    Ok(commits)
}

/// Spawns the server child on `dir`: the child, its URL and the time to listening.
fn spawn_child(dir: &Path) -> Result<(Child, String, Duration)> {
    let t = Instant::now();
    let mut c = Command::new(std::env::current_exe()?)
        .arg("--child")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    let out = c.stdout.as_mut().context("child stdout")?;
    BufReader::new(out).read_line(&mut line)?;
    let url = line
        .strip_prefix("url ")
        .with_context(|| format!("child said {line:?}"))?
        .trim()
        .to_owned();
    Ok((c, url, t.elapsed()))
}

pub fn report(name: &str, out: &mut Outcome, seconds: f64) {
    let n: usize = out.latencies.iter().map(Vec::len).sum();
    println!(
        "{name}: {n} answers in {seconds:.0} s ({:.0}/s), {} errors, {} wrong",
        n as f64 / seconds,
        out.errors,
        out.wrong
    );
    for (k, kind) in KINDS.iter().enumerate() {
        let v = &mut out.latencies[k];
        let count = v.len();
        println!(
            "  {:<34} n={count:>7}  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms",
            kind.name(),
            quantile(v, 0.5) as f64 / 1000.0,
            quantile(v, 0.99) as f64 / 1000.0,
            quantile(v, 1.0) as f64 / 1000.0,
        );
    }
    for p in &out.first_problems {
        println!("  problem: {p}");
    }
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let temp = tempfile::tempdir()?;
    let work = args
        .work
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&work)?;
    let dir = work.join("serve.stele");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    println!(
        "serve_bench: {} documents, {} clients, {:.0} s of load, writer 10 docs every 10 ms; {} cores",
        args.docs,
        args.clients,
        args.seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let built = build(&dir, args.docs)?;
    println!("built the database in {:.1} s", built.as_secs_f64());

    let (mut server, base, to_listen) = spawn_child(&dir)?;
    let agent = load::agent();
    let t = Instant::now();
    let (status, _) = load::get(&agent, &format!("{base}c/docs"))?;
    let first = t.elapsed();
    if status != 200 {
        bail!("first page: status {status}");
    }
    println!(
        "cold server: listening {:.1} ms after spawn; first collection page {:.1} ms",
        to_listen.as_secs_f64() * 1000.0,
        first.as_secs_f64() * 1000.0
    );

    let writer = stele::Database::open(&dir)?;
    let site = site::SteleSite::new(base.clone(), stele::Database::open_read_only(&dir)?)?;
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    let pid = server.id().to_string();
    let load_before = load_average();
    let cpu_before = (cpu_seconds(&pid)?, cpu_seconds("self")?);
    let mut writer_cpu = 0.0;
    let mut outcome = std::thread::scope(|scope| -> Result<Outcome> {
        let w = scope.spawn(|| {
            let cpu = thread_cpu_seconds();
            let n = write_until(&stop, args.docs, |batch| {
                let mut b = writer.batch();
                for (i, rev) in batch {
                    b.put_json("docs", &id(*i), doc(*i, *rev).as_bytes())?;
                }
                writer.commit(b)?;
                Ok(())
            });
            n.map(|n| (n, thread_cpu_seconds() - cpu))
        });
        let out = load::run(&site, args.clients, args.seconds, args.docs, id);
        stop.store(true, Ordering::Relaxed);
        let (n, cpu) = w.join().map_err(|_| anyhow::anyhow!("writer panicked"))??;
        commits.store(n, Ordering::Relaxed);
        writer_cpu = cpu;
        Ok(out)
    })?;
    let cpu = (
        cpu_seconds(&pid)? - cpu_before.0,
        cpu_seconds("self")? - cpu_before.1,
    );
    if let Err(why) = site.ids_unchanged() {
        bail!("{why}");
    }
    let rss_now = status_kb_of(&pid, "VmRSS")? * 1024;
    // Resident memory is mostly the tables' pages mapped from the page cache (file-backed,
    // given back under pressure); the anonymous part is what the server allocated.
    let anon_now = status_kb_of(&pid, "RssAnon")? * 1024;
    report("stele serve", &mut outcome, args.seconds);
    println!(
        "  writer: {} commits of {WRITE_BATCH} documents during the load",
        commits.load(Ordering::Relaxed)
    );
    let answers = outcome.latencies.iter().map(Vec::len).sum::<usize>().max(1) as f64;
    println!(
        "  CPU during the load ({:.0} s on {} cores): server {:.1} s ({:.0} us an answer); this process {:.1} s: writer {:.1} s, clients and checks {:.1} s ({:.0} us an answer); load average {} before, {} after",
        args.seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu.0,
        cpu.0 / answers * 1e6,
        cpu.1,
        writer_cpu,
        cpu.1 - writer_cpu,
        (cpu.1 - writer_cpu) / answers * 1e6,
        load_before,
        load_average(),
    );

    // Export: the whole collection over HTTP against the library's export to a sink.
    let t = Instant::now();
    let (status, http_bytes, lines) = load::get_counting(&agent, &format!("{base}c/docs.jsonl"))?;
    let http = t.elapsed();
    if status != 200 || lines != args.docs {
        bail!(
            "export: status {status}, {lines} lines for {} documents",
            args.docs
        );
    }
    let snap = writer.snapshot();
    let t = Instant::now();
    let r = stele::export::export_jsonl(
        &snap,
        "docs",
        std::io::sink(),
        &stele::export::ExportOptions::new().id_field("_id"),
    )?;
    let direct = t.elapsed();
    if r.bytes != http_bytes {
        println!(
            "  note: export sizes differ: HTTP {http_bytes} bytes, direct {} bytes",
            r.bytes
        );
    }
    println!(
        "export as JSON Lines: over HTTP {:.2} s ({:.0} MB/s); stele export (to a sink) {:.2} s; HTTP / direct = {:.2}x the time",
        http.as_secs_f64(),
        http_bytes as f64 / 1e6 / http.as_secs_f64(),
        direct.as_secs_f64(),
        http.as_secs_f64() / direct.as_secs_f64()
    );
    drop(server.stdin.take());
    let out = server.wait_with_output()?;
    let peak = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss ")?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!(
        "server memory: {:.0} MB resident after the load ({:.0} MB of it anonymous, the rest file pages of the tables), peak {:.0} MB (whole export included)",
        rss_now as f64 / 1e6,
        anon_now as f64 / 1e6,
        peak as f64 / 1e6
    );
    writer.close()?;

    if let Some(ds) = &args.datasette {
        datasette::run(ds, &work, &args, &outcome)?;
    } else if !args.quick {
        println!(
            "datasette: not found (pip install -r crates/stele-py/requirements-bench.txt, or --datasette PATH)"
        );
    }
    if outcome.errors + outcome.wrong > 0 {
        bail!("{} errors, {} wrong answers", outcome.errors, outcome.wrong);
    }
    Ok(())
}
