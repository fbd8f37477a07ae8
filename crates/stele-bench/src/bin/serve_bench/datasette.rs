//! The peer: Datasette serving the same documents from SQLite (id, JSON text), with a
//! SQLite writer committing alike, asked by the same clients; printed beside Stele's figures.

use crate::load::{self, KINDS, Kind, Outcome, Site, quantile};
use crate::{Args, WRITE_BATCH, doc, id, report, write_until};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

struct DatasetteSite {
    base: String,
    docs: u64,
}

impl DatasetteSite {
    /// The ids a page after `id` holds: ids are dense and never added to or removed during
    /// the run (the writer changes documents only), so they are known without a read.
    fn want(&self, id: &str) -> Vec<String> {
        let n: u64 = id.trim_start_matches('d').parse().unwrap_or(0);
        (n + 1..(n + 51).min(self.docs)).map(crate::id).collect()
    }
}

impl Site for DatasetteSite {
    fn url(&self, kind: Kind, id: &str) -> String {
        match kind {
            Kind::ListHtml => format!("{}bench/docs?_next={id}&_size=50", self.base),
            Kind::ListJson => format!(
                "{}bench/docs.json?_next={id}&_size=50&_shape=array",
                self.base
            ),
            Kind::DocHtml => format!("{}bench/docs/{id}", self.base),
            Kind::DocJson => format!("{}bench/docs/{id}.json?_shape=array", self.base),
        }
    }

    fn check(&self, kind: Kind, id: &str, body: &str) -> Result<(), String> {
        match kind {
            Kind::ListHtml => {
                let mut got = load::linked_ids(body, "href=\"/bench/docs/");
                got.retain(|x| x.len() == 9 && x.starts_with('d'));
                got.dedup();
                (got == self.want(id))
                    .then_some(())
                    .ok_or_else(|| format!("ids {got:?}"))
            }
            Kind::ListJson => {
                let v: serde_json::Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
                let got: Vec<String> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["id"].as_str().map(str::to_owned))
                    .collect();
                (got == self.want(id))
                    .then_some(())
                    .ok_or_else(|| format!("ids {got:?}"))
            }
            Kind::DocHtml => body
                .contains(&format!(
                    "customer {}",
                    id.trim_start_matches('d').trim_start_matches('0')
                ))
                .then_some(())
                .ok_or_else(|| "name missing".to_owned()),
            Kind::DocJson => {
                let v: serde_json::Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
                let text = v[0]["body"].as_str().ok_or("no body")?;
                let d: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
                let n: u64 = id.trim_start_matches('d').parse().map_err(|_| "bad id")?;
                let rev = d["rev"].as_u64().ok_or("no rev")?;
                let want = crate::doc_value(n, rev);
                (d == want)
                    .then_some(())
                    .ok_or_else(|| format!("document {d}"))
            }
        }
    }
}

fn build(path: &Path, docs: u64) -> Result<Duration> {
    let t = Instant::now();
    let mut conn = rusqlite::Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \
         CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID;",
    )?;
    let tx = conn.transaction()?;
    {
        let mut ins = tx.prepare("INSERT INTO docs (id, body) VALUES (?1, ?2)")?;
        for i in 0..docs {
            ins.execute((id(i), doc(i, 0)))?;
        }
    }
    tx.commit()?;
    Ok(t.elapsed())
}

pub fn run(program: &Path, work: &Path, args: &Args, stele: &Outcome) -> Result<()> {
    let path = work.join("bench.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let built = build(&path, args.docs)?;
    println!(
        "datasette: built SQLite (id, JSON text) in {:.1} s",
        built.as_secs_f64()
    );
    let port = free_port()?;
    let t = Instant::now();
    let mut child = Command::new(program)
        .arg("serve")
        .arg(&path)
        .args(["--port", &port.to_string(), "--host", "127.0.0.1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let base = format!("http://127.0.0.1:{port}/");
    let agent = load::agent();
    let mut first = None;
    while t.elapsed() < Duration::from_secs(60) {
        if let Ok((200, _)) = load::get(&agent, &format!("{base}-/versions.json")) {
            let listening = t.elapsed();
            let f = Instant::now();
            let (status, _) = load::get(&agent, &format!("{base}bench/docs?_size=50"))?;
            if status != 200 {
                bail!("datasette first page: {status}");
            }
            first = Some((listening, f.elapsed()));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (listening, first) = first.context("datasette did not answer within 60 s")?;
    println!(
        "datasette cold: answering {:.0} ms after spawn; first table page {:.1} ms",
        listening.as_secs_f64() * 1000.0,
        first.as_secs_f64() * 1000.0
    );
    let site = DatasetteSite {
        base,
        docs: args.docs,
    };
    let stop = AtomicBool::new(false);
    let mut out = std::thread::scope(|scope| -> Result<Outcome> {
        let w = scope.spawn(|| {
            let conn = rusqlite::Connection::open(&path)?;
            conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")?;
            let mut conn = conn;
            write_until(&stop, args.docs, |batch| {
                let tx = conn.transaction()?;
                for (i, rev) in batch {
                    tx.execute(
                        "UPDATE docs SET body = ?2 WHERE id = ?1",
                        (id(*i), doc(*i, *rev)),
                    )?;
                }
                tx.commit()?;
                Ok(())
            })
        });
        let out = load::run(&site, args.clients, args.seconds, args.docs, id);
        stop.store(true, Ordering::Relaxed);
        let commits = w.join().map_err(|_| anyhow::anyhow!("writer panicked"))??;
        println!("datasette writer: {commits} commits of {WRITE_BATCH} documents");
        Ok(out)
    })?;
    let rss = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    report("datasette", &mut out, args.seconds);
    println!(
        "  datasette peak memory: {:.0} MB",
        rss as f64 * 1024.0 / 1e6
    );
    let _ = child.kill();
    let _ = child.wait();
    println!("side by side, p99 (ms): stele serve / datasette");
    let mut st = stele.latencies.clone();
    for (k, kind) in KINDS.iter().enumerate() {
        let (a, b) = (
            quantile(&mut st[k], 0.99),
            quantile(&mut out.latencies[k], 0.99),
        );
        println!(
            "  {:<34} {:>7.2} / {:>7.2}  ({:.2}x)",
            kind.name(),
            a as f64 / 1000.0,
            b as f64 / 1000.0,
            a as f64 / b.max(1) as f64
        );
    }
    Ok(())
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}
