//! Repeats one full-scan query over a database `query_bench` left (or any), to profile
//! it or to compare binaries by CPU time (`perf stat -e task-clock`):
//!
//! ```text
//! cargo run --release -p stele --example scan_cost -- DB COLLECTION MODE RUNS [ARG]
//! ```
//!
//! MODE: `floor` (every document read on one thread), `count` (ARG: a filter),
//! `group` (ARG: a pipeline), `top` (ARG: a number field; top 20, descending).
//! The block cache is 256 MiB, as in `query_bench`.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, coll, mode, runs, rest @ ..] = args.as_slice() else {
        return Err("usage: scan_cost DB COLLECTION floor|count|group|top RUNS [ARG]".into());
    };
    let runs: usize = runs.parse()?;
    let arg = rest.first().map_or("", String::as_str);
    let db = stele::Database::open_with(
        db,
        stele::DatabaseOptions::default().block_cache_bytes(256 << 20),
    )?;
    let snap = db.snapshot();
    for i in 0..runs {
        let t = Instant::now();
        let n = match mode.as_str() {
            "floor" => {
                let mut n = 0usize;
                for entry in snap.iter(coll) {
                    let (_, doc) = entry?;
                    n += doc.document()?.as_bytes().len();
                }
                n
            }
            "count" => {
                let q = stele::Query::new(coll).filter(stele::Filter::parse(arg)?);
                usize::try_from(snap.count_matching(&q)?.count)?
            }
            "group" => snap
                .aggregate(coll, &stele::Pipeline::parse(arg)?)?
                .rows
                .len(),
            "top" => snap
                .query(&stele::Query::new(coll).sort(arg, true).limit(20))?
                .rows
                .len(),
            other => return Err(format!("unknown mode {other}").into()),
        };
        eprintln!("run {i}: {n} in {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}
