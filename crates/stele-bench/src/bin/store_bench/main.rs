//! The document store on every collection of `../shared/data/collections`: ingest rate,
//! bytes on disk, random get (+ 3 fields), full scan with a 3-field projection, index
//! build and query rate.
//!
//! ```text
//! cargo run --release -p stele-bench --bin store_bench -- [--quick] [--data DIR] [--only NAME]
//! ```
//!
//! `--quick`: the first 500 documents of three collections (a smoke run for CI).

#[path = "../../doc/data.rs"]
#[allow(
    dead_code,
    reason = "shared with the doc benchmark; this binary uses a part"
)]
mod data;
mod latency;
#[path = "../../doc/ravendb.rs"]
mod ravendb;
#[path = "../../doc/table.rs"]
#[allow(
    dead_code,
    reason = "shared with the doc benchmark; this binary uses a part"
)]
mod table;

use anyhow::{Context, Result};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;
use stele::{Database, DatabaseOptions, Query};
use table::{Table, f};

#[derive(Debug)]
struct Args {
    quick: bool,
    data: PathBuf,
    only: Option<String>,
    /// `DatabaseOptions::pack_block_bytes` (default: the library's default).
    pack_block_bytes: Option<usize>,
    /// `DatabaseOptions::pack_level` (default: the library's default).
    pack_level: Option<i32>,
    /// `DatabaseOptions::pack_streams(false)`.
    no_streams: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        quick: false,
        data: data::default_data_dir(),
        only: None,
        pack_block_bytes: None,
        pack_level: None,
        no_streams: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" | "--test" => args.quick = true,
            "--data" => args.data = PathBuf::from(it.next().context("--data needs a folder")?),
            "--only" => args.only = Some(it.next().context("--only needs a name")?),
            "--pack-block-bytes" => {
                let n = it.next().context("--pack-block-bytes needs a number")?;
                args.pack_block_bytes = Some(
                    n.parse()
                        .with_context(|| format!("--pack-block-bytes {n:?}: not a number"))?,
                );
            }
            "--pack-level" => {
                let n = it.next().context("--pack-level needs a number")?;
                args.pack_level = Some(
                    n.parse()
                        .with_context(|| format!("--pack-level {n:?}: not a number"))?,
                );
            }
            "--no-streams" => args.no_streams = true,
            "--help" | "-h" => {
                println!(
                    "store_bench: the document store on every collection of ../shared/data\n\n\
                     --quick            3 collections, 500 documents each (the CI smoke run)\n\
                     --data DIR         the data folder (default: ../shared/data)\n\
                     --only NAME        collections whose path contains NAME\n\
                     --pack-block-bytes N   DatabaseOptions::pack_block_bytes\n\
                     --pack-level N     DatabaseOptions::pack_level\n\
                     --no-streams       DatabaseOptions::pack_streams(false)"
                );
                std::process::exit(0);
            }
            other => anyhow::bail!(
                "unknown argument {other:?} (use --quick, --data DIR, --only NAME, --pack-block-bytes N, --pack-level N, --no-streams)"
            ),
        }
    }
    Ok(args)
}

/// xorshift64 for reproducible random ids.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn percentile(sorted_ns: &[u64], p: f64) -> u64 {
    let i = ((sorted_ns.len() as f64 - 1.0) * p).round() as usize;
    sorted_ns.get(i).copied().unwrap_or(0)
}

/// The first three top-level keys of the first document.
fn three_fields(json: &[u8]) -> Result<Vec<String>> {
    let doc = stele_doc::Document::new(stele_doc::from_json(json)?)?;
    let root = doc.root();
    let obj = root
        .as_object()
        .context("first document is not an object")?;
    Ok(obj
        .iter_original()
        .take(3)
        .map(|(k, _)| k.to_owned())
        .collect())
}

struct Row {
    /// Bytes of the whole database folder (log, tables, manifest) right before `compact`.
    folder_before_compact_bytes: u64,
    name: String,
    compressed: bool,
    dictionaries: usize,
    dictionary_bytes: u64,
    docs: usize,
    ingest_docs_per_s: f64,
    ingest_one_thread_docs_per_s: f64,
    checkpoint_s: f64,
    json_bytes: usize,
    zstd3_bytes: usize,
    ravendb_bytes: usize,
    disk_bytes: u64,
    get_median_ns: u64,
    get_p99_ns: u64,
    get3_median_ns: u64,
    get3_p99_ns: u64,
    get3_trusted_median_ns: u64,
    scan_ns_per_doc: f64,
    index_build_s: f64,
    query_us: f64,
    packed_blocks: u64,
    pack_bytes: u64,
    cache_hit_pct: f64,
    get3_uncached_median_ns: u64,
    get3_uncached_p99_ns: u64,
}

fn run_one(
    c: &data::Collection,
    work: &std::path::Path,
    compressed: bool,
    opts: &DatabaseOptions,
) -> Result<Row> {
    let n = c.len();
    let dir = work.join(c.name.replace('/', "_"));
    let coll = "c";
    let ids: Vec<String> = (0..n).map(|i| format!("{i:08}")).collect();
    let docs: Vec<(&str, &[u8])> = ids.iter().map(String::as_str).zip(c.docs()).collect();
    // One thread: `put_json` one document at a time, in a database of its own (dropped).
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open_with(&dir, opts.clone())?;
    db.set_compression(coll, compressed)?;
    let t = Instant::now();
    for chunk in docs.chunks(1000) {
        let mut batch = db.batch();
        for (id, json) in chunk {
            batch.put_json(coll, id, json)?;
        }
        db.commit(batch)?;
    }
    let ingest_one_thread_s = t.elapsed().as_secs_f64();
    drop(db);
    std::fs::remove_dir_all(&dir)?;
    // Ingest: convert (`put_json_many`, on all cores) and commit in batches of 1,000.
    let db = Database::open_with(&dir, opts.clone())?;
    db.set_compression(coll, compressed)?;
    let t = Instant::now();
    for chunk in docs.chunks(1000) {
        let mut batch = db.batch();
        batch.put_json_many(coll, chunk)?;
        db.commit(batch)?;
    }
    let ingest_s = t.elapsed().as_secs_f64();
    drop(docs);
    // Without the zeroes the log keeps ahead of its records (1 MiB, whatever the data).
    let usage = db.disk_usage();
    let folder_before_compact_bytes = usage.total_bytes - usage.log_zeroes_bytes;
    let t = Instant::now();
    db.compact()?;
    let checkpoint_s = t.elapsed().as_secs_f64();
    let snap = db.snapshot();
    let stats = snap.stats(coll);
    let snap_dictionaries = snap.dictionaries(coll);
    let dictionary_bytes = snap.dictionary_bytes(coll)?;
    anyhow::ensure!(
        stats.documents == n as u64,
        "document count {} != {n}",
        stats.documents
    );
    // Sizes against JSON Lines and whole-file zstd -3.
    let mut jsonl = Vec::with_capacity(c.json_bytes() + n);
    for d in c.docs() {
        jsonl.extend_from_slice(d);
        jsonl.push(b'\n');
    }
    let zstd3_bytes = zstd::bulk::compress(&jsonl, 3)?.len();
    // RavenDB 5.0 style, in the same run: every JSON document alone, 8 KB dictionary.
    let docs: Vec<&[u8]> = c.docs().collect();
    let ravendb_bytes = ravendb::ravendb_bytes(&docs)?;
    // Random gets, and gets reading 3 fields.
    let first = c.docs().next().context("empty collection")?;
    let fields = three_fields(first)?;
    let probes = if n < 1000 { n * 20 } else { 100_000.min(n * 5) };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let cache_before = db.block_cache_stats();
    let mut get_ns = Vec::with_capacity(probes);
    let mut get3_ns = Vec::with_capacity(probes);
    let mut get3_trusted_ns = Vec::with_capacity(probes);
    for _ in 0..probes {
        let id = &ids[(next_random(&mut seed) % n as u64) as usize];
        let t = Instant::now();
        let doc = snap.get(coll, id)?.context("missing id")?;
        black_box(doc.bytes().len());
        get_ns.push(t.elapsed().as_nanos() as u64);
        let id = &ids[(next_random(&mut seed) % n as u64) as usize];
        let t = Instant::now();
        let doc = snap.get(coll, id)?.context("missing id")?;
        let d = doc.document()?;
        for k in &fields {
            black_box(d.get(k).map(|v| v.type_name()));
        }
        get3_ns.push(t.elapsed().as_nanos() as u64);
        let id = &ids[(next_random(&mut seed) % n as u64) as usize];
        let t = Instant::now();
        let doc = snap.get(coll, id)?.context("missing id")?;
        // SAFETY: this benchmark's database was written by Stele just now, in this process.
        let d = unsafe { doc.document_unchecked() };
        for k in &fields {
            black_box(d.get(k).map(|v| v.type_name()));
        }
        get3_trusted_ns.push(t.elapsed().as_nanos() as u64);
    }
    let cache_after = db.block_cache_stats();
    let lookups =
        (cache_after.hits + cache_after.misses) - (cache_before.hits + cache_before.misses);
    let cache_hit_pct = if lookups == 0 {
        f64::NAN
    } else {
        100.0 * (cache_after.hits - cache_before.hits) as f64 / lookups as f64
    };
    get3_trusted_ns.sort_unstable();
    get_ns.sort_unstable();
    get3_ns.sort_unstable();
    // Full scan with a 3-field projection (the RavenDB `select new { ... }` example).
    let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
    let t = Instant::now();
    let out = snap.query(&Query::new(coll).select(&refs))?;
    let scan_ns_per_doc = t.elapsed().as_nanos() as f64 / n as f64;
    anyhow::ensure!(out.rows.len() == n, "scan returned {} rows", out.rows.len());
    // Index on the first field (not `_id`, which a query reads as the document id), then
    // equality queries on values drawn from documents.
    let first = fields
        .iter()
        .find(|f| f.as_str() != "_id")
        .context("no field but _id")?;
    let t = Instant::now();
    db.create_index(coll, "first", &[first.as_str()])?;
    let index_build_s = t.elapsed().as_secs_f64();
    let snap = db.snapshot();
    let mut values = Vec::new();
    for _ in 0..1000 {
        let id = &ids[(next_random(&mut seed) % n as u64) as usize];
        let doc = snap.get(coll, id)?.context("missing id")?;
        let d = doc.document()?;
        if let Some(v) = d.get(first)
            && v.as_object().is_none()
            && v.as_array().is_none()
        {
            values.push(v.to_json());
        }
    }
    let t = Instant::now();
    let mut hits = 0usize;
    for v in &values {
        hits += snap
            .query(&Query::new(coll).eq(first, v).limit(10))?
            .rows
            .len();
    }
    let query_us = t.elapsed().as_secs_f64() * 1e6 / values.len().max(1) as f64;
    anyhow::ensure!(values.is_empty() || hits > 0, "no query found its document");
    drop(snap);
    drop(db);
    // get+3 with no block cache: every read of a packed document decodes its block (what a
    // read of a block not read before costs).
    let db = Database::open_with(&dir, opts.clone().block_cache_bytes(0))?;
    let snap = db.snapshot();
    let mut uncached_ns = Vec::with_capacity(probes.min(20_000));
    for _ in 0..probes.min(20_000) {
        let id = &ids[(next_random(&mut seed) % n as u64) as usize];
        let t = Instant::now();
        let doc = snap.get(coll, id)?.context("missing id")?;
        let d = doc.document()?;
        for k in &fields {
            black_box(d.get(k).map(|v| v.type_name()));
        }
        uncached_ns.push(t.elapsed().as_nanos() as u64);
    }
    uncached_ns.sort_unstable();
    drop(snap);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Row {
        folder_before_compact_bytes,
        packed_blocks: stats.packed_blocks,
        pack_bytes: stats.pack_bytes,
        cache_hit_pct,
        get3_uncached_median_ns: percentile(&uncached_ns, 0.5),
        get3_uncached_p99_ns: percentile(&uncached_ns, 0.99),
        name: c.name.clone(),
        compressed,
        dictionaries: snap_dictionaries,
        dictionary_bytes,
        docs: n,
        ingest_docs_per_s: n as f64 / ingest_s,
        ingest_one_thread_docs_per_s: n as f64 / ingest_one_thread_s,
        checkpoint_s,
        json_bytes: c.json_bytes(),
        zstd3_bytes,
        ravendb_bytes,
        disk_bytes: stats.table_bytes,
        get_median_ns: percentile(&get_ns, 0.5),
        get_p99_ns: percentile(&get_ns, 0.99),
        get3_median_ns: percentile(&get3_ns, 0.5),
        get3_p99_ns: percentile(&get3_ns, 0.99),
        get3_trusted_median_ns: percentile(&get3_trusted_ns, 0.5),
        scan_ns_per_doc,
        index_build_s,
        query_us,
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let base = args.data.join("collections");
    let files = data::bench_collections(&base, args.only.as_deref(), args.quick)?;
    let limit = args.quick.then_some(500);
    let work = data::work_dir("store-bench")?;
    let mut opts = DatabaseOptions::default();
    if let Some(n) = args.pack_block_bytes {
        opts = opts.pack_block_bytes(n);
    }
    if let Some(n) = args.pack_level {
        opts = opts.pack_level(n);
    }
    if args.no_streams {
        opts = opts.pack_streams(false);
    }
    println!("# Document store benchmark\n");
    if let Some(n) = args.pack_block_bytes {
        println!("`--pack-block-bytes {n}`: blocks of {n} bytes instead of the default below.\n");
    }
    if let Some(n) = args.pack_level {
        println!("`--pack-level {n}`: blocks packed at zstd level {n} instead of level 9.\n");
    }
    if args.no_streams {
        println!("`--no-streams`: packed blocks hold documents, never stream forms.\n");
    }
    println!(
        "Each collection twice: compression off (raw Stele documents) and on (as written: each document alone at zstd level 1 with the collection's trained dictionaries; the final `compact` packs ids and documents into 32 KiB blocks at zstd level 9, the documents as stream forms where a trial finds those smaller; `--no-streams`: as documents). Ids: line numbers. Batches of 1,000 documents per commit (ingest: `Batch::put_json_many`, converting on all cores; 1 thread: `Batch::put_json` for each, in a database of its own), then `compact`; \"ingest + compact\" counts the time of both (with compression on, the packing at level 9 happens in `compact`)."
    );
    println!(
        "get+3: get, validate the document, read 3 top-level fields; trusted: without validating again (`Doc::document_unchecked`); of which blocks: the part of (disk + dicts) / zstd-3 that is the table of packed blocks (the rest: the collection's own table, empty after `compact` when compression is on, and the dictionaries); folder before compact: the whole database folder (log, tables, manifest; not the zeroes the log keeps ahead of its records) after ingest, before `compact` (with compression on, documents compressed one by one, mostly still in the log); cache hits %: share of block lookups of the get columns served by the 64 MiB block cache; uncached: get+3 after reopening with no block cache (each read decodes its block). RavenDB-style: every JSON document compressed alone at zstd -3 with an 8 KB dictionary trained on the first 256 documents (RavenDB 5.0), computed in the same run, the dictionary counted.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "zstd",
        "dicts",
        "docs",
        "ingest docs/s",
        "ingest 1 thread docs/s",
        "compact s",
        "ingest + compact docs/s",
        "JSON MB",
        "zstd-3 / JSON",
        "disk / JSON",
        "disk / zstd-3",
        "folder before compact / zstd-3",
        "dicts KB",
        "(disk + dicts) / zstd-3",
        "of which blocks",
        "RavenDB-style / zstd-3",
        "get p50 ns",
        "get p99 ns",
        "get+3 p50 ns",
        "get+3 p99 ns",
        "get+3 trusted p50 ns",
        "blocks",
        "cache hits %",
        "get+3 uncached p50 ns",
        "get+3 uncached p99 ns",
        "scan 3 fields ns/doc",
        "index build s",
        "eq query us",
    ]);
    for path in &files {
        let name = data::short_name(path, &base, ".jsonl.zst");
        let c = data::load_jsonl_zst(path, name.clone(), limit)?;
        if c.len() == 0 {
            continue;
        }
        for compressed in [false, true] {
            let r = run_one(&c, &work, compressed, &opts)
                .with_context(|| format!("collection {name}"))?;
            eprintln!("{name} (compression {compressed}): done");
            t.row(vec![
                r.name,
                if r.compressed { "on" } else { "off" }.to_owned(),
                r.dictionaries.to_string(),
                r.docs.to_string(),
                f(r.ingest_docs_per_s, 0),
                f(r.ingest_one_thread_docs_per_s, 0),
                f(r.checkpoint_s, 2),
                f(
                    r.docs as f64 / (r.docs as f64 / r.ingest_docs_per_s + r.checkpoint_s),
                    0,
                ),
                f(r.json_bytes as f64 / 1e6, 1),
                f(r.zstd3_bytes as f64 / r.json_bytes as f64, 3),
                f(r.disk_bytes as f64 / r.json_bytes as f64, 3),
                f(r.disk_bytes as f64 / r.zstd3_bytes as f64, 2),
                f(
                    r.folder_before_compact_bytes as f64 / r.zstd3_bytes as f64,
                    2,
                ),
                f(r.dictionary_bytes as f64 / 1e3, 1),
                f(
                    (r.disk_bytes + r.dictionary_bytes) as f64 / r.zstd3_bytes as f64,
                    2,
                ),
                f(r.pack_bytes as f64 / r.zstd3_bytes as f64, 2),
                f(r.ravendb_bytes as f64 / r.zstd3_bytes as f64, 2),
                r.get_median_ns.to_string(),
                r.get_p99_ns.to_string(),
                r.get3_median_ns.to_string(),
                r.get3_p99_ns.to_string(),
                r.get3_trusted_median_ns.to_string(),
                r.packed_blocks.to_string(),
                f(r.cache_hit_pct, 1),
                r.get3_uncached_median_ns.to_string(),
                r.get3_uncached_p99_ns.to_string(),
                f(r.scan_ns_per_doc, 0),
                f(r.index_build_s, 3),
                f(r.query_us, 1),
            ]);
        }
    }
    t.print();
    if args.only.is_none() {
        latency::run(&work, args.quick)?;
    }
    Ok(())
}
