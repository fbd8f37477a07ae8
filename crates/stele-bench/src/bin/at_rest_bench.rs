//! A database at rest without a manual step, on every collection of
//! `../shared/data/collections`: each collection written through commits (batches of 1,000
//! documents, as Python's `put_many` writes them), then closed. Prints the folder's bytes
//! before the close (log, zeroes, tables) and at rest after it, against the JSON and whole-file
//! zstd -3; the close's time with and without packing (`DatabaseOptions::pack_on_close`); the
//! time to open again; and an index on one string field against the raw bytes of its
//! (value, id) pairs.
//!
//! ```text
//! cargo run --release -p stele-bench --bin at_rest_bench -- [--quick] [--data DIR] [--only NAME]
//! ```
//!
//! `--quick`: the first 500 documents of three collections (a smoke run for CI).

#[path = "../doc/data.rs"]
#[allow(
    dead_code,
    reason = "shared with the doc benchmark; this binary uses a part"
)]
mod data;
#[path = "../doc/table.rs"]
#[allow(
    dead_code,
    reason = "shared with the doc benchmark; this binary uses a part"
)]
mod table;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use stele::{Database, DatabaseOptions};
use table::Table;

/// Documents per commit.
const BATCH_DOCS: usize = 1000;

#[derive(Debug)]
struct Args {
    quick: bool,
    data: PathBuf,
    only: Option<String>,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        quick: false,
        data: data::default_data_dir(),
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" | "--test" => args.quick = true,
            "--data" => args.data = PathBuf::from(it.next().context("--data needs a folder")?),
            "--only" => args.only = Some(it.next().context("--only needs a name")?),
            other => {
                anyhow::bail!("unknown argument {other:?} (use --quick, --data DIR, --only NAME)")
            }
        }
    }
    Ok(args)
}

/// Bytes of every file under `dir` (what `du -b` counts for files).
fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => folder_bytes(&e.path()),
                _ => e.metadata().map_or(0, |m| m.len()),
            })
            .sum()
    })
}

fn mb(bytes: u64) -> String {
    format!("{:.3}", bytes as f64 / 1e6)
}

fn id_of(i: usize) -> String {
    format!("{i:08}")
}

/// Writes every document through commits of [`BATCH_DOCS`] into a new database in `dir`.
fn write_all(dir: &Path, opts: DatabaseOptions, c: &data::Collection) -> Result<Database> {
    let db = Database::open_with(dir, opts)?;
    let docs = c.doc_slices();
    for (n, chunk) in docs.chunks(BATCH_DOCS).enumerate() {
        let mut batch = db.batch();
        for (j, json) in chunk.iter().enumerate() {
            batch.put_json("c", &id_of(n * BATCH_DOCS + j), json)?;
        }
        db.commit(batch)?;
    }
    Ok(db)
}

/// The first top-level field of the first document holding a string (not `_id`), how many
/// (value, id) pairs an index on it holds, and their raw bytes: the value's plus the id's.
fn string_field(c: &data::Collection) -> Result<Option<(String, u64, u64)>> {
    let Some(first) = c.docs().next() else {
        return Ok(None);
    };
    let first: serde_json::Value = serde_json::from_slice(first)?;
    let Some(field) = first.as_object().and_then(|o| {
        o.iter()
            .find(|(k, v)| v.is_string() && k.as_str() != "_id")
            .map(|(k, _)| k.clone())
    }) else {
        return Ok(None);
    };
    let (mut pairs, mut bytes) = (0u64, 0u64);
    for (i, json) in c.docs().enumerate() {
        let v: serde_json::Value = serde_json::from_slice(json)?;
        // The index takes every value by the query rules: a scalar or an object as one entry
        // (its JSON text counted for a number, true, false and null, the UTF-8 for a
        // string), an array's distinct elements, and the missing marker (1 byte) for a
        // document without the field.
        let values: Vec<usize> = match v.get(&field) {
            None => vec![1],
            Some(serde_json::Value::String(s)) => vec![s.len()],
            Some(serde_json::Value::Array(a)) if !a.is_empty() => {
                let mut texts: Vec<String> = a.iter().map(|e| e.to_string()).collect();
                texts.sort();
                texts.dedup();
                texts.iter().map(String::len).collect()
            }
            Some(x) => vec![x.to_string().len()],
        };
        for value_bytes in values {
            pairs += 1;
            bytes += (value_bytes + id_of(i).len()) as u64;
        }
    }
    Ok(Some((field, pairs, bytes)))
}

struct Row {
    name: String,
    docs: usize,
    json_bytes: u64,
    zstd_bytes: u64,
    open_log_bytes: u64,
    open_zeroes_bytes: u64,
    open_total_bytes: u64,
    close_s: f64,
    rest_bytes: u64,
    plain_close_s: f64,
    plain_rest_bytes: u64,
    reopen_ms: f64,
    index: Option<(String, u64, u64, u64)>,
}

fn run_one(work: &Path, path: &Path, base: &Path, limit: Option<usize>) -> Result<Row> {
    let name = data::short_name(path, base, ".jsonl.zst");
    let c = data::load_jsonl_zst(path, name.clone(), limit)?;
    let text: Vec<u8> = c.doc_slices().join(&b'\n');
    let zstd_bytes = zstd::bulk::compress(&text, 3)?.len() as u64;
    let no_idle = DatabaseOptions::default().idle_checkpoint(None);
    // Packing at close (the default).
    let dir = work.join("packed");
    let _ = std::fs::remove_dir_all(&dir);
    let db = write_all(&dir, no_idle.clone(), &c)?;
    let usage = db.disk_usage();
    let started = Instant::now();
    db.close()?;
    let close_s = started.elapsed().as_secs_f64();
    let rest_bytes = folder_bytes(&dir);
    let started = Instant::now();
    let db = Database::open_with(&dir, no_idle.clone())?;
    let reopen_ms = started.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        db.disk_usage().log_bytes == 0,
        "{name}: the log holds records after a close"
    );
    // An index on a string field, at rest.
    let index = match string_field(&c)? {
        Some((field, pairs, raw_bytes)) => {
            db.create_index("c", "ix", &[field.as_str()])?;
            db.close()?;
            let db = Database::open_with(&dir, no_idle.clone())?;
            let stats = db.snapshot().index_stats("c");
            let ix = stats.first().context("the index is missing")?;
            anyhow::ensure!(
                ix.entries == pairs,
                "{name}: {} entries, {pairs} pairs",
                ix.entries
            );
            Some((field, pairs, raw_bytes, ix.table_bytes))
        }
        None => None,
    };
    // Checkpoint only (documents compressed one by one in a diff table).
    let plain = work.join("plain");
    let _ = std::fs::remove_dir_all(&plain);
    let db = write_all(&plain, no_idle.pack_on_close(false), &c)?;
    let started = Instant::now();
    db.close()?;
    let plain_close_s = started.elapsed().as_secs_f64();
    let plain_rest_bytes = folder_bytes(&plain);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&plain);
    Ok(Row {
        name,
        docs: c.len(),
        json_bytes: text.len() as u64,
        zstd_bytes,
        open_log_bytes: usage.log_bytes,
        open_zeroes_bytes: usage.log_zeroes_bytes,
        open_total_bytes: usage.total_bytes,
        close_s,
        rest_bytes,
        plain_close_s,
        plain_rest_bytes,
        reopen_ms,
        index,
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let base = args.data.join("collections");
    let files = data::bench_collections(&base, args.only.as_deref(), args.quick)?;
    let limit = args.quick.then_some(500);
    let work = data::work_dir("at-rest-bench")?;
    let mut rows = Vec::new();
    for path in &files {
        let row = run_one(&work, path, &base, limit)?;
        eprintln!("{}: {:.2} s to close", row.name, row.close_s);
        rows.push(row);
    }
    println!("# A database at rest without a manual step\n");
    println!(
        "Each collection written through commits of {BATCH_DOCS} documents (ids of 8 digits), \
         then closed; `du -b` of the folder. Open: before the close (log records, the zeroes \
         ahead of them, tables). At rest: after `Database::close` (packing collections mostly \
         outside blocks, checkpoint, the log's zeroes given back); checkpoint only: with \
         `pack_on_close(false)`.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "docs",
        "JSON MB",
        "zstd -3 MB",
        "open: log MB",
        "open: zeroes MB",
        "open: all MB",
        "close s",
        "at rest MB",
        "/ JSON",
        "/ zstd",
        "reopen ms",
        "checkpoint only: close s",
        "checkpoint only: MB",
    ]);
    for r in &rows {
        t.row(vec![
            r.name.clone(),
            r.docs.to_string(),
            mb(r.json_bytes),
            mb(r.zstd_bytes),
            mb(r.open_log_bytes),
            mb(r.open_zeroes_bytes),
            mb(r.open_total_bytes),
            format!("{:.2}", r.close_s),
            mb(r.rest_bytes),
            format!("{:.2}", r.rest_bytes as f64 / r.json_bytes as f64),
            format!("{:.2}", r.rest_bytes as f64 / r.zstd_bytes as f64),
            format!("{:.1}", r.reopen_ms),
            format!("{:.2}", r.plain_close_s),
            mb(r.plain_rest_bytes),
        ]);
    }
    t.print();
    println!(
        "\n## An index on a string field\n\nThe first top-level string field of the first \
         document (not `_id`); raw: the bytes of each (value, id) pair, the string's UTF-8 and \
         the id's; index: its table on disk after a close.\n"
    );
    let mut t = Table::new(&[
        "collection",
        "field",
        "pairs",
        "raw MB",
        "index MB",
        "index / raw",
    ]);
    for r in &rows {
        if let Some((field, pairs, raw, index)) = &r.index {
            t.row(vec![
                r.name.clone(),
                field.clone(),
                pairs.to_string(),
                mb(*raw),
                mb(*index),
                format!("{:.2}", *index as f64 / *raw as f64),
            ]);
        }
    }
    t.print();
    Ok(())
}
