//! Repeats the indexed queries of `query_bench` over a database it left (or any with a
//! compound index on CAT, NUM), to profile them or to compare binaries by CPU time:
//!
//! ```text
//! cargo run --release -p stele --example index_cost -- DB COLLECTION CAT NUM MEDIAN MODE RUNS
//! ```
//!
//! MODE: `selective` (each run asks `{CAT: v, NUM: {"$gt": MEDIAN}}` for every value `v`
//! of CAT held by 1 to 100 documents, the 200 commonest of them, as `query_bench` does;
//! repeated to 200 queries when there are fewer),
//! `sort` (each run asks for the 20 largest NUM within the commonest value of CAT, 200
//! times), `count` (the covered count of `{CAT: <commonest>, NUM: {"$gt": MEDIAN}}`, 200
//! times). MEDIAN is JSON (`1000`, `"m"`). The values are found once by a group-by before
//! the runs; each run prints its queries' CPU time (user + system, this process) per query,
//! so the set-up is not counted. The block cache is 256 MiB, as in `query_bench`.

use std::time::Duration;

/// CPU time this process has used (user + system).
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` writes the whole `rusage` it is given; zeroed is a valid
    // starting value for that plain C struct.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, coll, cat, num, median, mode, runs] = args.as_slice() else {
        return Err(
            "usage: index_cost DB COLLECTION CAT NUM MEDIAN selective|sort|count RUNS".into(),
        );
    };
    let runs: usize = runs.parse()?;
    let db = stele::Database::open_with(
        db,
        stele::DatabaseOptions::default().block_cache_bytes(256 << 20),
    )?;
    let snap = db.snapshot();
    let key = serde_json::to_string(cat)?;
    let num_key = serde_json::to_string(num)?;
    // The values of CAT and their counts, commonest first.
    let group = stele::Pipeline::parse(&format!(
        r#"[{{"$group": {{"_id": "${cat}", "n": {{"$sum": 1}}}}}}, {{"$sort": {{"n": -1}}}}]"#
    ))?;
    let mut values = Vec::new();
    for row in snap.aggregate(coll, &group)?.rows {
        let v: serde_json::Value = serde_json::from_str(&row)?;
        let n = v.get("n").and_then(serde_json::Value::as_u64).unwrap_or(0);
        values.push((serde_json::to_string(&v["_id"])?, n));
    }
    let common = values.first().ok_or("the collection is empty")?.0.clone();
    let rare: Vec<&str> = values
        .iter()
        .filter(|(_, n)| (1..=100).contains(n))
        .take(200)
        .map(|(v, _)| v.as_str())
        .collect();
    let filter = |v: &str| format!("{{{key}: {v}, {num_key}: {{\"$gt\": {median}}}}}");
    let query = |f: &str| -> stele::Result<stele::Query> {
        Ok(stele::Query::new(coll).filter(stele::Filter::parse(f)?))
    };
    let queries: Vec<stele::Query> = match mode.as_str() {
        // The rare values over and over, to 200 queries a run (a collection may have few).
        "selective" => rare
            .iter()
            .cycle()
            .take(if rare.is_empty() {
                0
            } else {
                200.max(rare.len())
            })
            .map(|v| query(&filter(v)))
            .collect::<stele::Result<_>>()?,
        "sort" => {
            let q = query(&format!("{{{key}: {common}}}"))?
                .sort(num, true)
                .limit(20);
            vec![q; 200]
        }
        "count" => vec![query(&filter(&common))?; 200],
        other => return Err(format!("unknown mode {other}").into()),
    };
    eprintln!(
        "{} queries a run; plan: {}",
        queries.len(),
        queries
            .first()
            .map(|q| snap.explain(q).map(|o| o.plan.to_string()))
            .transpose()?
            .unwrap_or_default()
    );
    for i in 0..runs {
        let t = cpu_time();
        let mut rows = 0usize;
        for q in &queries {
            rows += if mode == "count" {
                usize::try_from(snap.count_matching(q)?.count)?
            } else {
                snap.query(q)?.rows.len()
            };
        }
        let per_query = (cpu_time() - t).as_secs_f64() * 1e6 / queries.len().max(1) as f64;
        eprintln!("run {i}: {rows} rows, {per_query:.1} us CPU a query");
    }
    Ok(())
}
