//! `stele import`: a file, a folder or standard input into a collection, all or nothing.

use std::fmt::Write as FmtWrite;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use stele::import::{ImportError, ImportFormat, ImportOptions, ImportPhase, ImportProgress};

use super::write_creating;
use crate::say::count;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// One JSON array of documents (read incrementally).
    Json,
    /// One document per line.
    Jsonl,
    /// A folder of .json files, one document per file (id: the file name without .json).
    Dir,
    /// A Parquet file: one document per row, the columns its properties (nulls left out).
    Parquet,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele import shop.db orders orders.jsonl --id-field id
  stele import shop.db orders orders.json --id-field meta.id       a JSON array, nested id
  stele import shop.db people profiles/                            one document per .json file
  stele import geo.db cities cities.jsonl.zst                       zstd-compressed, read as it is
  zstd -dc cities.jsonl.zst | stele import geo.db cities - --skip-bad
  stele import big.db events events.jsonl --memory 128MiB               within 128 MiB
  stele import shop.db orders orders.parquet --id-field _id        a Parquet file, a row each

The format is detected when not given: a folder is `dir`, a file named .parquet `parquet`,
input starting with `[` is `json`, anything else `jsonl`; zstd-compressed input (a file or -) is
read through a decoder (a file whose zstd frames give their sizes is sampled first and, its ids
ascending, packed while read, as its text would be), and gzip, bzip2, xz or zip input is refused
with how to unpack it. Without --id-field, ids number the records from 1 (0000000001, ...;
folders: the file names). An import is all or nothing, even if the process is killed: the
records are converted on every core, sorted by id (spilling to the database folder beyond
--memory), packed into compressed blocks with a dictionary trained on the input, and switched
in at once. A JSON Lines file whose ids ascend (numbered records, or a file sorted by its id
field) is not sorted: its blocks are packed while it is read (--json: packed_while_reading).
A bad record stops the import with its file and line (nothing is written), unless
--skip-bad; a record that is not a JSON object is bad unless --wrap-non-objects. It prints what landed: documents, bytes at rest, and their ratio to the JSON.")]
pub struct ImportArgs {
    /// The database folder (created if missing or empty; see --create-here).
    db: PathBuf,
    /// The collection to import into (created if missing; documents with the same id are replaced).
    collection: String,
    /// A file, a folder of .json files, or - for standard input.
    input: PathBuf,
    /// The input's format (default: detected).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The field holding each document's id: a string or an integer; a path like meta.id.
    /// Integer ids (i64) stay integers: numeric order, printed as numbers. All ids of a
    /// collection are strings or all are integers.
    #[arg(long)]
    id_field: Option<String>,
    /// What to do with repeated keys in one object (reject: a bad record).
    #[arg(long, value_enum, default_value = "last")]
    duplicates: crate::doc_cmd::Duplicates,
    /// Deepest nesting of arrays and objects accepted in a document (at most 1024).
    #[arg(long, default_value_t = stele_doc::DEFAULT_MAX_DEPTH)]
    max_depth: usize,
    /// Store a record that is not a JSON object (a number, string, array, boolean or null)
    /// as {FIELD: record}; without it such a record is bad (its line and type are said).
    #[arg(long, value_name = "FIELD")]
    wrap_non_objects: Option<String>,
    /// Skip bad records (the first ones are listed on stderr) instead of stopping.
    #[arg(long)]
    skip_bad: bool,
    /// Documents per committed batch (at least 1).
    #[arg(long, default_value_t = 10_000, value_parser = crate::say::at_least_one())]
    batch: usize,
    /// Memory the import may use (at least 4MiB); beyond it the sort spills to disk. A size:
    /// 65536 (bytes), 64KiB, 256MiB, 1.5GiB (K, M, G alone: KiB, MiB, GiB; KB, MB, GB:
    /// powers of 1000).
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = crate::size::at_least(4 << 20))]
    memory: usize,
    /// zstd level of the blocks the import packs, 1 to 22 (default 6 with a dictionary
    /// trained on the input, 3 for an input of 1 MiB or less): lower packs faster and stores
    /// more, until a compaction packs them again at the database's level.
    #[arg(long, value_name = "LEVEL", value_parser = clap::value_parser!(i32).range(1..=22))]
    pack_level: Option<i32>,
    /// Create the database even if the folder holds other files (by default a database is
    /// created only in a new or empty folder).
    #[arg(long)]
    create_here: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// A progress bar that follows the import's phases: bytes while reading, documents while
/// writing. Hidden when stderr is not a terminal.
fn import_bar(bar: ProgressBar) -> impl FnMut(ImportProgress) {
    let mut phase = None;
    move |p: ImportProgress| {
        if phase != Some(p.phase) {
            phase = Some(p.phase);
            let (template, len, msg) = match p.phase {
                ImportPhase::Reading => (
                    "{spinner} {elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
                    p.bytes_total,
                    "reading and checking",
                ),
                ImportPhase::Writing => (
                    "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} documents {docs_per_sec} {msg}",
                    Some(p.documents),
                    "writing",
                ),
                _ => ("{spinner} {elapsed_precise} {msg}", None, "rolling back"),
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> ").with_key(
                    "docs_per_sec",
                    |state: &ProgressState, w: &mut dyn FmtWrite| {
                        let _ = write!(w, "{:.0}/s", state.per_sec());
                    },
                ));
            }
            // A new phase counts other things: its position and rate start again (the rate
            // of bytes read is not a rate of documents written).
            bar.set_position(0);
            bar.reset_eta();
            bar.set_length(len.unwrap_or(0));
            bar.set_message(msg);
        }
        match p.phase {
            ImportPhase::Reading => bar.set_position(p.bytes_read),
            _ => bar.set_position(p.written),
        }
    }
}

pub fn import(args: &ImportArgs) -> Result<()> {
    // Checked first: a bad name is not blamed on the input, and creates no database.
    stele::check_collection_name(&args.collection)?;
    let mut opts = ImportOptions::new()
        .skip_bad(args.skip_bad)
        .batch_docs(args.batch)
        .memory_budget_bytes(args.memory)
        .write_options(
            stele::write_options()
                .duplicate_keys(args.duplicates.into())
                .max_depth(args.max_depth),
        );
    let parquet = match args.format {
        Some(Format::Parquet) => true,
        Some(_) => false,
        None => args.input.extension().is_some_and(|e| e == "parquet"),
    };
    if let Some(level) = args.pack_level {
        opts = opts.pack_level(level);
    }
    if let Some(f) = args.format.filter(|_| !parquet) {
        opts = opts.format(match f {
            Format::Json => ImportFormat::Json,
            Format::Dir => ImportFormat::Dir,
            Format::Jsonl | Format::Parquet => ImportFormat::JsonLines,
        });
    }
    if let Some(field) = &args.id_field {
        opts = opts.id_field(field.clone());
    }
    if let Some(field) = &args.wrap_non_objects {
        opts = opts.wrap_non_objects(field.clone());
    }
    let from_stdin = args.input.as_os_str() == "-";
    let name = if from_stdin {
        "<stdin>".to_owned()
    } else {
        args.input.display().to_string()
    };
    if !from_stdin && !args.input.exists() {
        bail!("no file or folder {name}: check the path (or pass - to read standard input)");
    }
    let started = std::time::Instant::now();
    let report = write_creating(&args.db, args.create_here, |db| {
        let bar = ProgressBar::new_spinner();
        let result = if parquet {
            stele::arrow::import_parquet_file(
                db,
                &args.collection,
                &args.input,
                &opts,
                import_bar(bar.clone()),
            )
        } else if from_stdin {
            stele::import::import_reader(
                db,
                &args.collection,
                &name,
                std::io::stdin().lock(),
                None,
                &opts,
                import_bar(bar.clone()),
            )
        } else {
            stele::import::import_path(
                db,
                &args.collection,
                &args.input,
                &opts,
                import_bar(bar.clone()),
            )
        };
        bar.finish_and_clear();
        let report = result.map_err(|e| match e {
            ImportError::BadRecord(bad) => anyhow::anyhow!(
                "{bad}\nnothing was imported: fix the record, or pass --skip-bad to skip bad records"
            ),
            e => anyhow::Error::new(e).context(format!(
                "importing {name} into collection {:?}",
                args.collection
            )),
        })?;
        db.checkpoint()
            .with_context(|| format!("checkpointing database {}", args.db.display()))?;
        let snap = db.snapshot();
        // The collection at rest: its tables and its dictionaries.
        let at_rest = snap.stats(&args.collection).table_bytes
            + snap.dictionary_bytes(&args.collection).unwrap_or(0);
        // The folder as the close leaves it: without the zeroes the log keeps written
        // ahead while open, which the close gives back (16 KiB on a new database: 30 times
        // an import of one small document).
        let usage = db.disk_usage();
        Ok((
            report,
            at_rest,
            usage.total_bytes.saturating_sub(usage.log_zeroes_bytes),
            snap.has_collection(&args.collection),
        ))
    })?;
    let (report, at_rest, folder_bytes, exists) = report;
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        let bad: Vec<serde_json::Value> = report
            .bad
            .iter()
            .map(|b| {
                serde_json::json!({
                    "source": b.source, "line": b.line, "column": b.column,
                    "record": b.record, "reason": crate::say::in_flags(&b.reason),
                })
            })
            .collect();
        let v = serde_json::json!({
            "collection": args.collection,
            "documents": report.documents,
            "skipped": report.skipped,
            "bad": bad,
            "bytes_read": report.bytes_read,
            "batches": report.batches,
            "collection_documents": report.collection_documents,
            "packed_while_reading": report.packed_while_reading,
            "restarted_sorted": report.restarted_sorted,
            "spilled_bytes": report.spilled_bytes,
            "collection_exists": exists,
            "bytes_at_rest": at_rest,
            "folder_bytes": folder_bytes,
            "seconds": seconds,
        });
        println!("{v}");
    } else {
        for b in &report.bad {
            eprintln!("skipped {}", crate::say::in_flags(&b.to_string()));
        }
        if report.skipped > report.bad.len() as u64 {
            eprintln!("... and {} more", report.skipped - report.bad.len() as u64);
        }
        println!(
            "imported {} into {:?} ({} skipped), {} read, {seconds:.2} s",
            count(report.documents, "document", "documents"),
            args.collection,
            report.skipped,
            count(report.bytes_read, "byte", "bytes"),
        );
        // A collection exists once it holds a document: an import of none makes nothing.
        if !exists {
            println!(
                "no collection {:?} was made: no document was imported",
                args.collection
            );
            return Ok(());
        }
        let input = if parquet {
            "the Parquet file"
        } else {
            "the JSON read"
        };
        let ratio = |bytes: u64| match report.bytes_read {
            0 => String::new(),
            read => format!(" ({:.2}x {input})", bytes as f64 / read as f64),
        };
        println!(
            "at rest: {} in {:?}, {} bytes{}; database folder {} bytes{}",
            count(report.collection_documents, "document", "documents"),
            args.collection,
            at_rest,
            ratio(at_rest),
            folder_bytes,
            ratio(folder_bytes),
        );
    }
    Ok(())
}
