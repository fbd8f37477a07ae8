//! Queries on every collection of `../shared/data/collections`, Stele beside SQLite (the
//! documents as JSON text, and as JSONB), the same question asked of each in one run:
//!
//! - full scans without an index: a filter on two fields (a count), a group-by count, the
//!   top 20 by a number field (whole documents);
//! - with a compound index on the same two fields (Stele `create_index(cat, num)`, SQLite an
//!   expression index on `json_extract` of both): selective queries (one rare value of the
//!   category and a range of the number, for up to 200 rare values; p50 and p99 over at
//!   least 200 samples an engine: a warm-up round over the values not counted, then as many
//!   rounds as that takes, the engines taking turns on each value), sort + limit 20 within
//!   the commonest category (also timed without the index), the same with a range on the
//!   sorted field (the median and above), the same within the two commonest categories
//!   (`$in`, SQL `IN`), and a count.
//!
//! The fields are chosen from each collection's documents (`fields.rs`). SQLite is the
//! bundled build of `rusqlite` (3.45 or newer: JSONB). Stele's collection is written in
//! batches of 10,000 and compacted (packed blocks), as an import leaves it.
//!
//! ```text
//! cargo run --release -p stele-bench --bin query_bench -- [--quick] [--data DIR] [--only NAME] [--big N]
//! ```
//!
//! `--quick`: 2,000 documents of three collections (the CI smoke run). `--big N`: also a
//! collection of N documents made from the largest collection repeated with new ids, on
//! which the peak memory of a group-by and of a sort without a limit is measured too
//! (`memory.rs`; with `--quick`, on each collection with a 64 KiB budget, so they spill).
//! `--memory-of DB FIELD [BUDGET]` measures that alone over a database a run left in
//! `target/query-bench/`.

#[path = "../../doc/data.rs"]
#[allow(
    dead_code,
    reason = "shared with the doc benchmark; this binary uses a part"
)]
mod data;
mod duckdb;
mod fields;
mod memory;
mod sqlite;
#[path = "../../doc/table.rs"]
#[allow(
    dead_code,
    reason = "shared with the doc benchmark; this binary uses a part"
)]
mod table;

use anyhow::{Context, Result};
use fields::Fields;
use std::path::PathBuf;
use std::time::Instant;
use stele::{Database, Filter, Pipeline, Query};
use table::{Table, f};

struct Args {
    quick: bool,
    data: PathBuf,
    only: Option<String>,
    big: Option<usize>,
}

fn args() -> Result<Args> {
    let mut a = Args {
        quick: false,
        data: data::default_data_dir(),
        only: None,
        big: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" | "--test" => a.quick = true,
            "--data" => a.data = it.next().context("--data takes a folder")?.into(),
            "--only" => a.only = Some(it.next().context("--only takes a name")?),
            "--big" => a.big = Some(it.next().context("--big takes a count")?.parse()?),
            "--bench" => {}
            other => anyhow::bail!(
                "unknown argument {other:?} (use --quick, --data DIR, --only NAME, --big N)"
            ),
        }
    }
    Ok(a)
}

/// Timed runs go on past the runs asked for until they took this long together (at most
/// [`MAX_RUNS`]): the median of 3 runs of a query of 10 us moved by 4x between two quiet
/// runs of the benchmark (a preempted run, a cold cache line), where hundreds of runs do not.
const MIN_TIMED_MS: f64 = 250.0;
/// The most timed runs of one query.
const MAX_RUNS: usize = 2_000;

/// Median of `runs` timings of `f` or more (see [`MIN_TIMED_MS`]; exactly `runs` when it is
/// 1, the smoke run's), in milliseconds, and its last result.
fn median_ms<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut times = Vec::new();
    let mut last = None;
    let mut total_ms = 0.0;
    while times.len() < runs || (runs > 1 && total_ms < MIN_TIMED_MS && times.len() < MAX_RUNS) {
        let t = Instant::now();
        last = Some(f()?);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        total_ms += ms;
        times.push(ms);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((times[times.len() / 2], last.context("no run")?))
}

/// p50 and p99 of the timings, in microseconds.
fn percentiles(mut us: Vec<f64>) -> (f64, f64) {
    us.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| {
        us.get(((us.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    (at(0.5), at(0.99))
}

/// Samples of the selective queries a p99 is read from: at least this many an engine,
/// more rounds over the rare values on collections that have few of them.
const SELECTIVE_SAMPLES: usize = 200;
/// The bound on the counted rounds' wall time (all engines), should the queries be slow.
const SELECTIVE_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// The selective queries' latencies, microseconds, of each engine (Stele, SQLite text,
/// SQLite JSONB), and the rows each returned in one round.
struct Selective {
    us: [Vec<f64>; 3],
    rows: [usize; 3],
    rounds: usize,
}

/// Times `query(engine, value index)` (it returns its row count) for the three engines
/// alike: one warm-up round over all the values, not counted (each engine's caches, its
/// index blocks or pages, are then as a user's after a first query: SQLite's pages are
/// warm from building the index, Stele's decoded index blocks are not); then counted
/// rounds until every engine has [`SELECTIVE_SAMPLES`] samples (at least 3 rounds; 1 with
/// `quick`, which counts 20), stopped early after [`SELECTIVE_BUDGET`]. Within a round the
/// engines take turns on each value, the one that goes first rotating with the round, so
/// none is always the one that follows another's work.
fn selective_latencies(
    values: &[String],
    quick: bool,
    mut query: impl FnMut(usize, usize) -> Result<usize>,
) -> Result<Selective> {
    let (min_rounds, want) = if quick {
        (1, 20)
    } else {
        (3, SELECTIVE_SAMPLES)
    };
    let rounds = min_rounds.max(want.div_ceil(values.len().max(1)));
    let mut out = Selective {
        us: [Vec::new(), Vec::new(), Vec::new()],
        rows: [0; 3],
        rounds: 0,
    };
    let mut started = Instant::now();
    for round in 0..=rounds {
        if round > 1 && started.elapsed() > SELECTIVE_BUDGET {
            break;
        }
        for i in 0..values.len() {
            for turn in 0..3 {
                let engine = (turn + round) % 3;
                let t = Instant::now();
                let n = query(engine, i)?;
                let us = t.elapsed().as_secs_f64() * 1e6;
                if round == 0 {
                    out.rows[engine] += n;
                } else {
                    out.us[engine].push(us);
                }
            }
        }
        if round == 0 {
            // The counted rounds' time budget starts after the warm-up.
            started = Instant::now();
        }
        out.rounds = round;
    }
    Ok(out)
}

struct Row {
    name: String,
    docs: usize,
    fields: String,
    cells: Vec<(String, f64, f64, f64)>, // query, stele, sqlite text, sqlite jsonb
    /// DuckDB's times of the three scans (count, group, top 20), when it ran.
    duck: Option<[f64; 3]>,
    checks: Vec<String>,
    /// Peak memory of a group-by and sorts, and the budget they had.
    memory: Option<(usize, Vec<memory::Measured>)>,
}

/// Stele's block cache in this benchmark: the 256 MiB SQLite's page cache is given
/// (`sqlite.rs`), so that both hold the same memory of decoded data (Stele's default is
/// 64 MiB, under the decoded blocks of the 1M-document collection).
const BLOCK_CACHE_BYTES: usize = 256 << 20;

fn stele_db(dir: &std::path::Path, docs: &[&[u8]]) -> Result<Database> {
    let _ = std::fs::remove_dir_all(dir);
    let db = Database::open_with(
        dir,
        stele::DatabaseOptions::default().block_cache_bytes(BLOCK_CACHE_BYTES),
    )?;
    for (n, chunk) in docs.chunks(10_000).enumerate() {
        let items: Vec<(String, &[u8])> = chunk
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("{:09}", n * 10_000 + i), *d))
            .collect();
        let mut batch = db.batch();
        batch.put_json_many("c", &items)?;
        db.commit(batch)?;
    }
    db.compact()?;
    Ok(db)
}

fn bench(
    name: &str,
    docs: &[&[u8]],
    work: &std::path::Path,
    quick: bool,
    memory_budget: Option<usize>,
) -> Result<Option<Row>> {
    let Some(fl) = fields::choose(docs) else {
        eprintln!("{name}: no string and number fields to query, skipped");
        return Ok(None);
    };
    let Fields {
        cat,
        num,
        common,
        second,
        rare,
        median,
    } = &fl;
    let runs = if quick { 1 } else { 3 };
    let db_dir = work.join(format!("{name}.stele"));
    let db = stele_db(&db_dir, docs)?;
    let sql = sqlite::Sql::build(&work.join(format!("{name}.sqlite")), docs, cat, num)?;
    let snap = db.snapshot();
    let q = |filter: &str| -> Result<Query> { Ok(Query::new("c").filter(Filter::parse(filter)?)) };
    let qj = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let two = format!(
        "{{{}: {common}, {}: {{\"$gt\": {median}}}}}",
        qj(cat),
        qj(num)
    );
    let mut cells = Vec::new();
    let mut checks = Vec::new();

    // The floor: every document read and validated, nothing tested (one thread).
    let (floor_ms, _) = median_ms(runs, || {
        let mut n = 0usize;
        for entry in snap.iter("c") {
            let (_, doc) = entry?;
            n += doc.document()?.as_bytes().len();
        }
        Ok(n)
    })?;
    checks.push(format!(
        "reading every document on one thread: {floor_ms:.1} ms"
    ));
    // Full scans, no index. The filter parsed once, before timing, as SQLite's statement is
    // prepared once (`prepare_cached`) and only its values bound per call.
    let scan_count = q(&two)?;
    let (ts, n_s) = median_ms(runs, || Ok(snap.count_matching(&scan_count)?.count))?;
    let (tt, n_t) = median_ms(runs, || sql.count_two(false, common, median))?;
    let (tb, n_b) = median_ms(runs, || sql.count_two(true, common, median))?;
    checks.push(format!("count {n_s}/{n_t}/{n_b}"));
    cells.push(("scan: 2-field filter, count".to_owned(), ts, tt, tb));
    let group = Pipeline::parse(&format!(
        r#"[{{"$group": {{"_id": "${cat}", "n": {{"$sum": 1}}}}}}]"#
    ))?;
    let (ts, g_s) = median_ms(runs, || Ok(snap.aggregate("c", &group)?.rows.len()))?;
    let (tt, g_t) = median_ms(runs, || sql.group(false))?;
    let (tb, _) = median_ms(runs, || sql.group(true))?;
    checks.push(format!("groups {g_s}/{g_t}"));
    cells.push(("scan: group-by count".to_owned(), ts, tt, tb));
    let top = Query::new("c").sort(num, true).limit(20);
    let (ts, _) = median_ms(runs, || Ok(snap.query(&top)?.rows.len()))?;
    let (tt, _) = median_ms(runs, || sql.top20(false))?;
    let (tb, _) = median_ms(runs, || sql.top20(true))?;
    cells.push(("scan: top 20 by number".to_owned(), ts, tt, tb));
    let sorted_within = q(&format!("{{{}: {common}}}", qj(cat)))?
        .sort(num, true)
        .limit(20);
    let (no_index_ms, _) = median_ms(runs, || Ok(snap.query(&sorted_within)?.rows.len()))?;
    // The same with a range on the sorted field ("paid orders under 60, largest first"):
    // served while no document holds an array there (`stele::index::arrays`).
    let ranged_sort = q(&two)?.sort(num, true).limit(20);
    let (ranged_no_index_ms, _) = median_ms(runs, || Ok(snap.query(&ranged_sort)?.rows.len()))?;
    // Within the two commonest categories ("paid or shipped orders, newest first"): the
    // index's two key ranges merged.
    let in_two = q(&format!(
        "{{{}: {{\"$in\": [{common}, {}]}}}}",
        qj(cat),
        second
    ))?
    .sort(num, true)
    .limit(20);
    let (in_two_no_index_ms, _) = median_ms(runs, || Ok(snap.query(&in_two)?.rows.len()))?;

    // With the compound index.
    drop(snap);
    db.create_index("c", "cat_num", &[cat.as_str(), num.as_str()])?;
    sql.create_indexes(cat, num)?;
    let snap = db.snapshot();
    if !rare.is_empty() {
        let filters = rare
            .iter()
            .map(|v| {
                q(&format!(
                    "{{{}: {v}, {}: {{\"$gt\": {median}}}}}",
                    qj(cat),
                    qj(num)
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let sel = selective_latencies(rare, quick, |engine, i| match engine {
            0 => Ok(snap.query(&filters[i])?.rows.len()),
            1 => sql.selective(false, &rare[i], median),
            _ => sql.selective(true, &rare[i], median),
        })?;
        let [s, t, b] = &sel.us;
        let (s50, s99) = percentiles(s.clone());
        let (t50, t99) = percentiles(t.clone());
        let (b50, b99) = percentiles(b.clone());
        cells.push(("indexed: selective, p50 (us)".to_owned(), s50, t50, b50));
        cells.push(("indexed: selective, p99 (us)".to_owned(), s99, t99, b99));
        checks.push(format!(
            "selective rows {}/{}/{}; {} samples an engine ({} values x {} round(s) after a warm-up round)",
            sel.rows[0],
            sel.rows[1],
            sel.rows[2],
            s.len(),
            rare.len(),
            sel.rounds
        ));
    }
    let plan = snap.explain(&sorted_within)?.plan;
    let (ts, _) = median_ms(runs.max(5), || Ok(snap.query(&sorted_within)?.rows.len()))?;
    let (tt, _) = median_ms(runs.max(5), || sql.sort_within(false, common))?;
    let (tb, _) = median_ms(runs.max(5), || sql.sort_within(true, common))?;
    cells.push(("indexed: sort + limit 20 (ms)".to_owned(), ts, tt, tb));
    checks.push(format!(
        "sort+limit: {plan}; without the index {no_index_ms:.2} ms ({:.0}x)",
        no_index_ms / ts.max(1e-6)
    ));
    let plan = snap.explain(&ranged_sort)?.plan;
    let (ts, _) = median_ms(runs.max(5), || Ok(snap.query(&ranged_sort)?.rows.len()))?;
    let (tt, _) = median_ms(runs.max(5), || sql.ranged_sort(false, common, median))?;
    let (tb, _) = median_ms(runs.max(5), || sql.ranged_sort(true, common, median))?;
    cells.push((
        "indexed: sort + limit 20, range on it (ms)".to_owned(),
        ts,
        tt,
        tb,
    ));
    checks.push(format!(
        "sort+limit with a range on the sorted field: {plan}; without the index {ranged_no_index_ms:.2} ms ({:.0}x)",
        ranged_no_index_ms / ts.max(1e-6)
    ));
    let plan = snap.explain(&in_two)?.plan;
    let (ts, _) = median_ms(runs.max(5), || Ok(snap.query(&in_two)?.rows.len()))?;
    let (tt, _) = median_ms(runs.max(5), || sql.in_two_sort(false, common, second))?;
    let (tb, _) = median_ms(runs.max(5), || sql.in_two_sort(true, common, second))?;
    cells.push((
        "indexed: sort + limit 20, $in of 2 (ms)".to_owned(),
        ts,
        tt,
        tb,
    ));
    checks.push(format!(
        "sort+limit within two categories: {plan}; without the index {in_two_no_index_ms:.2} ms ({:.0}x)",
        in_two_no_index_ms / ts.max(1e-6)
    ));
    // The filter parsed once, before timing, as SQLite's statement is prepared once
    // (`prepare_cached`) and only its values bound per call.
    let count_query = q(&two)?;
    let counted = snap.count_matching(&count_query)?;
    let (ts, _) = median_ms(runs.max(5), || Ok(snap.count_matching(&count_query)?.count))?;
    let (tt, _) = median_ms(runs.max(5), || sql.count_two(false, common, median))?;
    let (tb, _) = median_ms(runs.max(5), || sql.count_two(true, common, median))?;
    cells.push(("indexed: count (ms)".to_owned(), ts, tt, tb));
    checks.push(format!(
        "count: {}, {} documents read",
        counted.plan, counted.stats.docs_examined
    ));
    let duck = duckdb::times(work, name, docs, &fl, runs, &mut checks);
    let memory = match memory_budget {
        Some(budget) => Some((budget, memory::measure(&db_dir, num, budget)?)),
        None => None,
    };
    Ok(Some(Row {
        name: name.to_owned(),
        docs: docs.len(),
        fields: format!("{cat}, {num}"),
        cells,
        duck,
        checks,
        memory,
    }))
}

fn main() -> Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    match argv.get(1).map(String::as_str) {
        Some("--memory-child") => return memory::child(argv.get(2..).unwrap_or_default()),
        // The memory table alone, over a database an earlier run left: DB FIELD [BUDGET].
        Some("--memory-of") => {
            let (Some(db), Some(field)) = (argv.get(2), argv.get(3)) else {
                anyhow::bail!("--memory-of takes DB FIELD [BUDGET]");
            };
            let budget = match argv.get(4) {
                Some(b) => b.parse()?,
                None => stele::query::DEFAULT_MEMORY_BUDGET_BYTES,
            };
            let measured = memory::measure(std::path::Path::new(db), field, budget)?;
            print_memory(&[Row {
                name: db.rsplit('/').next().unwrap_or(db).to_owned(),
                docs: 0,
                fields: field.clone(),
                cells: Vec::new(),
                duck: None,
                checks: Vec::new(),
                memory: Some((budget, measured)),
            }]);
            return Ok(());
        }
        _ => {}
    }
    let a = args()?;
    let base = a.data.join("collections");
    let files = data::bench_collections(&base, a.only.as_deref(), a.quick)?;
    let work = data::work_dir("query-bench")?;
    let limit = a.quick.then_some(2_000);
    let mut rows = Vec::new();
    let mut largest: Option<data::Collection> = None;
    for path in &files {
        let name = data::short_name(path, &base, ".jsonl.zst");
        let c = data::load_jsonl_zst(path, name.clone(), limit)?;
        let docs = c.doc_slices();
        eprintln!("{name}: {} documents", docs.len());
        let budget = a.quick.then_some(64 << 10);
        if let Some(r) = bench(&name, &docs, &work, a.quick, budget)? {
            rows.push(r);
        }
        if largest.as_ref().is_none_or(|l| l.len() < c.len()) {
            largest = Some(c);
        }
    }
    if let (Some(n), Some(l)) = (a.big, largest.as_ref()) {
        let base_docs = l.doc_slices();
        let docs: Vec<&[u8]> = base_docs.iter().cycle().take(n).copied().collect();
        let name = format!(
            "{} x{:.0} ({n} docs)",
            l.name,
            n as f64 / base_docs.len() as f64
        );
        eprintln!("{name}");
        let budget = Some(stele::query::DEFAULT_MEMORY_BUDGET_BYTES);
        if let Some(r) = bench(&name, &docs, &work, false, budget)? {
            rows.push(r);
        }
    }
    println!(
        "SQLite {} (bundled), JSON text and JSONB, page cache 256 MiB; Stele packed and compacted, block cache {} MiB; medians of at least 3 runs and {MIN_TIMED_MS} ms of runs a query (scans, ms), p50/p99 of the selective queries (us) over rounds of the rare values after a warm-up round, at least {SELECTIVE_SAMPLES} samples an engine (the count is in the notes below the table).\n",
        rusqlite::version(),
        BLOCK_CACHE_BYTES >> 20
    );
    let mut t = Table::new(&[
        "collection",
        "docs",
        "fields",
        "query",
        "Stele",
        "SQLite text",
        "SQLite JSONB",
        "x text",
        "x JSONB",
        "DuckDB",
    ]);
    for r in &rows {
        for (i, (q, s, tt, tb)) in r.cells.iter().enumerate() {
            let duck = r
                .duck
                .and_then(|d| d.get(i).copied())
                .map_or("-".to_owned(), |d| f(d, 2));
            t.row(vec![
                r.name.clone(),
                r.docs.to_string(),
                r.fields.clone(),
                q.clone(),
                f(*s, 2),
                f(*tt, 2),
                f(*tb, 2),
                f(tt / s.max(1e-9), 2),
                f(tb / s.max(1e-9), 2),
                duck,
            ]);
        }
    }
    t.print();
    println!(
        "x text / x JSONB: SQLite's time over Stele's (above 1: Stele faster). DuckDB: the three scans over a table `read_json` made (columnar; reported, not a target).\n"
    );
    let geo = |pick: fn(&(String, f64, f64, f64)) -> f64| {
        let xs: Vec<f64> = rows
            .iter()
            .flat_map(|r| r.cells.iter().take(3).map(pick))
            .collect();
        table::geomean(&xs)
    };
    println!(
        "Full scans, geometric mean over the collections' three scans: {:.2}x SQLite text, {:.2}x SQLite JSONB.\n",
        geo(|c| c.2 / c.1.max(1e-9)),
        geo(|c| c.3 / c.1.max(1e-9))
    );
    for r in &rows {
        println!("- {}: {}", r.name, r.checks.join("; "));
    }
    print_memory(&rows);
    Ok(())
}

/// The memory table: peak heap of each query beside its budget.
fn print_memory(rows: &[Row]) {
    let measured: Vec<&Row> = rows.iter().filter(|r| r.memory.is_some()).collect();
    if measured.is_empty() {
        return;
    }
    println!(
        "\nPeak memory (the query's process: anonymous memory above its value before the query, sampled every 2 ms; block cache {} MiB; `query` keeps every row whatever the budget):\n",
        memory::BLOCK_CACHE_BYTES >> 20
    );
    let mut t = Table::new(&[
        "collection",
        "query",
        "budget (MiB)",
        "peak (MiB)",
        "spilled (MiB)",
        "rows",
        "ms",
    ]);
    for r in measured {
        let Some((budget, ms)) = &r.memory else {
            continue;
        };
        for m in ms {
            t.row(vec![
                r.name.clone(),
                m.what.to_owned(),
                f(*budget as f64 / f64::from(1 << 20), 2),
                f(m.peak_mib, 1),
                f(m.spilled_mib, 1),
                m.rows.to_string(),
                f(m.ms, 0),
            ]);
        }
    }
    t.print();
}
