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
    // Parsed once, as an application (and `query_bench`) does: parsing a pipeline each
    // run was a sixth of a group-by over 11 documents, and printing each run a fifth.
    let count = (mode == "count")
        .then(|| Ok::<_, stele::Error>(stele::Query::new(coll).filter(stele::Filter::parse(arg)?)))
        .transpose()?;
    let pipeline = (mode == "group")
        .then(|| stele::Pipeline::parse(arg))
        .transpose()?;
    let top = stele::Query::new(coll).sort(arg, true).limit(20);
    let mut ms = Vec::with_capacity(runs);
    let mut n = 0;
    for _ in 0..runs {
        let t = Instant::now();
        n = match (mode.as_str(), &count, &pipeline) {
            ("floor", _, _) => {
                let mut n = 0usize;
                for entry in snap.iter(coll) {
                    let (_, doc) = entry?;
                    n += doc.document()?.as_bytes().len();
                }
                n
            }
            (_, Some(q), _) => usize::try_from(snap.count_matching(q)?.count)?,
            (_, _, Some(p)) => snap.aggregate(coll, p)?.rows.len(),
            ("top", _, _) => snap.query(&top)?.rows.len(),
            (other, _, _) => return Err(format!("unknown mode {other}").into()),
        };
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The first run reads the blocks from disk; the others from the block cache.
    let first = ms.first().copied().unwrap_or(0.0);
    ms.sort_by(f64::total_cmp);
    let median = ms.get(ms.len() / 2).copied().unwrap_or(0.0);
    eprintln!("{runs} runs, {n} each: first {first:.3} ms, median {median:.3} ms");
    Ok(())
}
