//! Database commands: `import`, `get`, `put`, `delete`, `export`, `compact`, `stats`.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use std::fmt::Write as FmtWrite;

use crate::say::count;
use stele::export::{ExportOptions, export_jsonl};
use stele::import::{ImportError, ImportFormat, ImportOptions, ImportPhase, ImportProgress};
use stele::{Database, ReadOnlyDatabase, Snapshot};

/// Opens the database at `dir`, which must exist already.
pub(crate) fn open_existing(dir: &Path) -> Result<Database> {
    check_existing(dir)?;
    open_or_create(dir)
}

/// Opens the database at `dir`, which must exist already, for reading only: the read
/// commands work beside a process that has it open for writing, and on a folder they may
/// not write.
pub(crate) fn open_reading(dir: &Path) -> Result<ReadOnlyDatabase> {
    check_existing(dir)?;
    Database::open_read_only(dir)
        .with_context(|| format!("opening database {} for reading", dir.display()))
}

/// Fails unless `dir` is a database folder.
fn check_existing(dir: &Path) -> Result<()> {
    if dir.is_file() {
        bail!(
            "{} is a file, not a database folder: give the folder `stele import` or `stele put` created",
            dir.display()
        );
    }
    if !dir.join("wal").is_dir() {
        bail!(
            "no database at {}: check the path, or create one with `stele import` or `stele put`",
            dir.display()
        );
    }
    Ok(())
}

/// Opens the database at `dir`, creating it if needed.
pub(crate) fn open_or_create(dir: &Path) -> Result<Database> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "{} is a file, not a database folder: give the database's folder (created if missing)",
            dir.display()
        );
    }
    Database::open(dir).with_context(|| format!("opening database {}", dir.display()))
}

/// Closes `db` (the folder `dir`), reporting what closing did: a clean close leaves the
/// database compact at rest (see `Database::close`).
pub(crate) fn close_db(db: Database, dir: &Path) -> Result<()> {
    db.close().with_context(|| {
        format!(
            "closing database {} (every change is in its log: the next open recovers it)",
            dir.display()
        )
    })
}

/// Runs `write` on the database at `dir`, creating it if needed, then closes it. If `write` fails on a
/// database this call created, what the call created is removed again: a failed first
/// import or put leaves no folder behind. Entries that were in the folder before stay.
pub(crate) fn write_creating<T>(
    dir: &Path,
    write: impl FnOnce(&Database) -> Result<T>,
) -> Result<T> {
    let write_and_close = |db: Database| {
        let out = write(&db)?;
        close_db(db, dir).map(|()| out)
    };
    if dir.join("wal").is_dir() {
        return write_and_close(open_or_create(dir)?);
    }
    // What to clean up after a failure: the top-most folder this call creates (the database
    // folder or a missing parent of it), or else the entries it adds to an existing folder.
    // A folder that cannot be listed for another reason is left alone.
    enum Before {
        Missing(PathBuf),
        Entries(HashSet<OsString>),
        Unknown,
    }
    let before = match std::fs::read_dir(dir) {
        Ok(entries) => Before::Entries(
            entries
                .filter_map(|e| e.ok().map(|e| e.file_name()))
                .collect(),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut top = dir.to_path_buf();
            while let Some(parent) = top
                .parent()
                .filter(|p| !p.as_os_str().is_empty() && !p.exists())
            {
                top = parent.to_path_buf();
            }
            Before::Missing(top)
        }
        Err(_) => Before::Unknown,
    };
    let result = open_or_create(dir).and_then(write_and_close);
    // The database is closed here (the `Database` was closed or dropped above), so its lock is free.
    if result.is_err() {
        match &before {
            Before::Missing(top) => {
                let _ = std::fs::remove_dir_all(top);
            }
            Before::Entries(kept) => {
                for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    if !kept.contains(&entry.file_name()) {
                        let path = entry.path();
                        let _ = if path.is_dir() {
                            std::fs::remove_dir_all(&path)
                        } else {
                            std::fs::remove_file(&path)
                        };
                    }
                }
            }
            Before::Unknown => {}
        }
    }
    result
}

/// Fails unless `collection` exists, listing the ones that do.
pub(crate) fn require_collection(db: &Database, dir: &Path, collection: &str) -> Result<()> {
    require_in(&db.snapshot(), dir, collection)
}

/// Fails unless `collection` exists in `snap`, listing the ones that do.
pub(crate) fn require_in(snap: &Snapshot, dir: &Path, collection: &str) -> Result<()> {
    let names = snap.collections();
    if !snap.has_collection(collection) {
        let have = if names.is_empty() {
            "it has none yet".to_owned()
        } else {
            format!("it has: {}", names.join(", "))
        };
        bail!(
            "no collection {collection:?} in database {} ({have})",
            dir.display()
        );
    }
    Ok(())
}

/// `s` as a JSON string literal.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// One JSON array of documents (read incrementally).
    Json,
    /// One document per line.
    Jsonl,
    /// A folder of .json files, one document per file (id: the file name without .json).
    Dir,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele import shop.db orders orders.jsonl --id-field id
  stele import shop.db orders orders.json --id-field meta.id       a JSON array, nested id
  stele import shop.db people profiles/                            one document per .json file
  zstd -dc cities.jsonl.zst | stele import geo.db cities - --skip-bad
  stele import big.db events events.jsonl --memory 128                  within 128 MiB

The format is detected when not given: a folder is `dir`, input starting with `[` is `json`,
anything else `jsonl`. Without --id-field, ids number the records from 1 (0000000001, ...;
folders: the file names). An import is all or nothing, even if the process is killed: the
records are converted on every core, sorted by id (spilling to the database folder beyond
--memory), packed into compressed blocks with a dictionary trained on the input, and switched
in at once. A JSON Lines file whose ids ascend (numbered records, or a file sorted by its id
field) is not sorted: its blocks are packed while it is read (--json: packed_while_reading).
A bad record stops the import with its file and line (nothing is written), unless
--skip-bad. It prints what landed: documents, bytes at rest, and their ratio to the JSON.")]
pub struct ImportArgs {
    /// The database folder (created if missing).
    db: PathBuf,
    /// The collection to import into (created if missing; documents with the same id are replaced).
    collection: String,
    /// A file, a folder of .json files, or - for standard input.
    input: PathBuf,
    /// The input's format (default: detected).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The field holding each document's id: a string or an integer; a path like meta.id.
    #[arg(long)]
    id_field: Option<String>,
    /// What to do with repeated keys in one object (reject: a bad record).
    #[arg(long, value_enum, default_value = "last")]
    duplicates: crate::doc_cmd::Duplicates,
    /// Deepest nesting of arrays and objects accepted in a document (at most 1024).
    #[arg(long, default_value_t = stele_doc::DEFAULT_MAX_DEPTH)]
    max_depth: usize,
    /// Skip bad records (the first ones are listed on stderr) instead of stopping.
    #[arg(long)]
    skip_bad: bool,
    /// Documents per committed batch (at least 1).
    #[arg(long, default_value_t = 10_000, value_parser = crate::say::at_least_one())]
    batch: usize,
    /// Memory the import may use, in MiB (at least 4); beyond it the sort spills to disk.
    #[arg(long, default_value_t = (stele::import::DEFAULT_IMPORT_BUDGET_BYTES >> 20) as u64, value_parser = clap::value_parser!(u64).range(4..))]
    memory: u64,
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
    let mut opts = ImportOptions::new()
        .skip_bad(args.skip_bad)
        .batch_docs(args.batch)
        .memory_budget_bytes(usize::try_from(args.memory << 20).unwrap_or(usize::MAX))
        .write_options(
            stele::write_options()
                .duplicate_keys(args.duplicates.into())
                .max_depth(args.max_depth),
        );
    if let Some(f) = args.format {
        opts = opts.format(match f {
            Format::Json => ImportFormat::Json,
            Format::Jsonl => ImportFormat::JsonLines,
            Format::Dir => ImportFormat::Dir,
        });
    }
    if let Some(field) = &args.id_field {
        opts = opts.id_field(field.clone());
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
    let report = write_creating(&args.db, |db| {
        let bar = ProgressBar::new_spinner();
        let result = if from_stdin {
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
        ))
    })?;
    let (report, at_rest, folder_bytes) = report;
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
        let ratio = |bytes: u64| match report.bytes_read {
            0 => String::new(),
            read => format!(" ({:.2}x the JSON read)", bytes as f64 / read as f64),
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

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele get shop.db orders o-1 o-2           one JSON document per line
  stele get shop.db orders o-1 --pretty
  stele get shop.db orders o-1 --json        {\"id\":\"o-1\",\"document\":{...}} per id

Exit code 1 if any id is not found (the others are printed).")]
pub struct GetArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// Document ids (a numbered record's by its number too: 42 finds 0000000042).
    #[arg(required = true)]
    ids: Vec<String>,
    /// Indented output.
    #[arg(long)]
    pretty: bool,
    /// One JSON object per id with its id and document (null when not found).
    #[arg(long)]
    json: bool,
}

pub fn get(args: &GetArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let opts = stele_doc::JsonOptions::new().pretty(args.pretty);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut missing = Vec::new();
    for id in &args.ids {
        let read = |id: &str| {
            snap.get(&args.collection, id)
                .with_context(|| format!("reading {id:?} from collection {:?}", args.collection))
        };
        let mut doc = read(id)?;
        let mut id = id.clone();
        // A numbered record asked for by its number: `123456` is `0000123456`.
        if doc.is_none()
            && let Some(numbered) = stele::import::numbered_id_for(&id)
        {
            doc = read(&numbered)?;
            if doc.is_some() {
                id = numbered;
            }
        }
        let id = &id;
        let text = match &doc {
            Some(d) => Some(d.document()?.to_json_with(&opts)),
            None => {
                missing.push(id.clone());
                None
            }
        };
        if args.json {
            let text = text.as_deref().unwrap_or("null");
            writeln!(out, "{{\"id\":{},\"document\":{text}}}", json_str(id))?;
        } else if let Some(text) = text {
            writeln!(out, "{text}")?;
        }
    }
    out.flush()?;
    if !missing.is_empty() {
        bail!(
            "not found in collection {:?}: {}",
            args.collection,
            missing.join(", ")
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele put shop.db orders o-1 '{\"customer\":\"ada\",\"total\":12.50}'
  curl -s https://example.org/o-2.json | stele put shop.db orders o-2 -")]
pub struct PutArgs {
    /// The database folder (created if missing).
    db: PathBuf,
    /// The collection (created if missing).
    collection: String,
    /// The document's id (replaces a document with the same id).
    id: String,
    /// The document as JSON text, or - to read it from standard input.
    #[arg(value_name = "JSON")]
    document: String,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn put(args: &PutArgs) -> Result<()> {
    let text = if args.document == "-" {
        crate::io::read_input(Path::new("-"))?
    } else {
        args.document.as_bytes().to_vec()
    };
    let source = if args.document == "-" {
        "<stdin>"
    } else {
        "the JSON argument"
    };
    let existed = write_creating(&args.db, |db| {
        let existed = db.snapshot().contains(&args.collection, &args.id)?;
        let mut batch = db.batch();
        batch
            .put_json(&args.collection, &args.id, &text)
            .with_context(|| format!("{source} (document {:?})", args.id))?;
        db.commit(batch)
            .with_context(|| format!("writing to database {}", args.db.display()))?;
        Ok(existed)
    })?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({"collection": args.collection, "id": args.id, "replaced": existed})
        );
    } else {
        let what = if existed { "replaced" } else { "created" };
        eprintln!("{what} {:?} in collection {:?}", args.id, args.collection);
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele delete shop.db orders o-1 o-2

Ids that do not exist are reported on stderr; they are not an error.")]
pub struct DeleteArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// Document ids (a numbered record's by its number too: 42 finds 0000000042).
    #[arg(required = true)]
    ids: Vec<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn delete(args: &DeleteArgs) -> Result<()> {
    let db = open_existing(&args.db)?;
    require_collection(&db, &args.db, &args.collection)?;
    let snap = db.snapshot();
    let mut batch = db.batch();
    let mut missing = Vec::new();
    for id in &args.ids {
        if snap.contains(&args.collection, id)? {
            batch.delete(&args.collection, id)?;
        } else {
            missing.push(id.as_str());
        }
    }
    let deleted = batch.len();
    db.commit(batch)
        .with_context(|| format!("writing to database {}", args.db.display()))?;
    drop(snap);
    close_db(db, &args.db)?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({"collection": args.collection, "deleted": deleted, "not_found": missing})
        );
    } else {
        eprintln!(
            "deleted {} from collection {:?}",
            count(deleted as u64, "document", "documents"),
            args.collection
        );
        if !missing.is_empty() {
            eprintln!("not found: {}", missing.join(", "));
        }
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele export shop.db orders -o orders.jsonl
  stele export shop.db people --id-field _id | head

One document per line in id order, keys in their original order; importing the output
gives equal data (with --id-field on both sides when ids are not in the documents).")]
pub struct ExportArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// Output file (written atomically), or - for standard output (the default).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Add each document's id as a first field with this name (objects that lack it).
    #[arg(long)]
    id_field: Option<String>,
}

pub fn export(args: &ExportArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let mut opts = ExportOptions::new();
    if let Some(f) = &args.id_field {
        opts = opts.id_field(f.clone());
    }
    let context = || format!("exporting collection {:?}", args.collection);
    let report = match args.output.as_deref().filter(|p| p.as_os_str() != "-") {
        None => match export_jsonl(&snap, &args.collection, std::io::stdout().lock(), &opts) {
            Err(stele::export::ExportError::Write(e))
                if e.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                return Ok(());
            }
            other => other.with_context(context)?,
        },
        Some(path) => {
            let tmp = crate::io::temp_beside(path);
            let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
            let written = export_jsonl(&snap, &args.collection, &file, &opts)
                .with_context(|| format!("{} to {}", context(), path.display()))
                .and_then(|r| {
                    file.sync_all()
                        .with_context(|| format!("writing {}", tmp.display()))?;
                    std::fs::rename(&tmp, path).with_context(|| {
                        format!("renaming {} to {}", tmp.display(), path.display())
                    })?;
                    Ok(r)
                });
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written?
        }
    };
    eprintln!(
        "exported {} ({}) from collection {:?}",
        count(report.documents, "document", "documents"),
        count(report.bytes, "byte", "bytes"),
        args.collection
    );
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = "Example:
  stele compact shop.db --json")]
pub struct CompactArgs {
    /// The database folder.
    db: PathBuf,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// (layers, table bytes, compression dictionaries) of every collection together.
fn totals(db: &Database) -> (usize, u64, usize) {
    let snap = db.snapshot();
    snap.collections()
        .iter()
        .map(|c| (snap.stats(c), snap.dictionaries(c)))
        .fold((0, 0, 0), |(l, b, d), (s, n)| {
            (l + s.layers, b + s.table_bytes, d + n)
        })
}

pub fn compact(args: &CompactArgs) -> Result<()> {
    let db = open_existing(&args.db)?;
    let (layers_before, bytes_before, dicts_before) = totals(&db);
    let started = std::time::Instant::now();
    db.compact()
        .with_context(|| format!("compacting database {}", args.db.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let (layers, bytes, dicts) = totals(&db);
    if args.json {
        let v = serde_json::json!({
            "layers_before": layers_before, "table_bytes_before": bytes_before,
            "dictionaries_before": dicts_before,
            "layers": layers, "table_bytes": bytes, "dictionaries": dicts, "seconds": seconds,
        });
        println!("{v}");
    } else {
        println!(
            "compacted: {} ({}) -> {} ({}), {dicts_before} -> {} compression dictionaries, {seconds:.2} s",
            count(layers_before as u64, "table", "tables"),
            count(bytes_before, "byte", "bytes"),
            count(layers as u64, "table", "tables"),
            count(bytes, "byte", "bytes"),
            dicts,
        );
    }
    close_db(db, &args.db)
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele stats shop.db
  stele stats shop.db --json | jq '.collections[] | {name, documents, ratio: .compression.ratio}'")]
pub struct StatsArgs {
    /// The database folder. The compression ratio is the bytes of each collection's values
    /// before compression over the bytes stored (read from their headers, one pass).
    db: PathBuf,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

pub fn stats(args: &StatsArgs) -> Result<()> {
    let db = open_reading(&args.db)?;
    let snap = db.snapshot();
    let stats: Vec<stele::CollectionStats> =
        snap.collections().iter().map(|c| snap.stats(c)).collect();
    // A value that does not decode makes its collection's ratio unknown (and says where),
    // not the whole command fail: stats is what one runs on a database in doubt.
    type Sizes = std::result::Result<stele::CompressionStats, String>;
    let compression: Vec<(bool, usize, Sizes)> = stats
        .iter()
        .map(|s| {
            Ok((
                db.compression(&s.name)?,
                snap.dictionaries(&s.name),
                snap.compression_stats(&s.name).map_err(|e| e.to_string()),
            ))
        })
        .collect::<Result<_>>()?;
    let usage = db.disk_usage();
    let (disk, wal) = (usage.total_bytes, usage.log_bytes);
    if args.json {
        let collections: Vec<serde_json::Value> = stats
            .iter()
            .zip(&compression)
            .map(|(s, (on, dicts, sizes))| {
                serde_json::json!({
                    "name": s.name,
                    "documents": s.documents,
                    "layers": s.layers,
                    "table_bytes": s.table_bytes,
                    "stored_bytes": s.stored_bytes,
                    "unsaved_changes": s.unsaved_changes,
                    "packed_blocks": s.packed_blocks,
                    "pack_bytes": s.pack_bytes,
                    "index_bytes": s.index_bytes,
                    "indexes": snap.index_stats(&s.name).iter().map(|ix| serde_json::json!({
                        "name": ix.name, "fields": ix.fields, "entries": ix.entries,
                        "layers": ix.layers, "table_bytes": ix.table_bytes,
                        "key_bytes": ix.key_bytes,
                    })).collect::<Vec<_>>(),
                    "compression": match sizes {
                        Ok(c) => serde_json::json!({
                            "enabled": on,
                            "dictionaries": dicts,
                            "raw_bytes": c.raw_bytes,
                            "stored_bytes": c.stored_bytes,
                            "ratio": c.ratio(),
                        }),
                        Err(e) => serde_json::json!({
                            "enabled": on,
                            "dictionaries": dicts,
                            "ratio": null,
                            "error": e,
                        }),
                    },
                })
            })
            .collect();
        let v = serde_json::json!({
            "path": args.db.display().to_string(),
            "seq": snap.seq(),
            "bytes_on_disk": disk,
            "log_bytes": wal,
            "log_zeroes_bytes": usage.log_zeroes_bytes,
            "index_bytes": usage.index_bytes,
            "collections": collections,
        });
        println!("{v}");
        return Ok(());
    }
    println!(
        "database {}: {disk} bytes on disk ({wal} in the log, {} zeroed ahead of it, {} in \
         indexes), last commit {}",
        args.db.display(),
        usage.log_zeroes_bytes,
        usage.index_bytes,
        snap.seq()
    );
    if stats.is_empty() {
        println!("no collections yet");
        return Ok(());
    }
    println!(
        "{:<24} {:>12} {:>7} {:>8} {:>14} {:>14} {:>12} {:>9}  compression",
        "collection",
        "documents",
        "layers",
        "blocks",
        "table bytes",
        "stored bytes",
        "index bytes",
        "unsaved"
    );
    for (s, (on, dicts, sizes)) in stats.iter().zip(&compression) {
        let state = match (on, dicts) {
            (false, 0) => "off".to_owned(),
            (false, n) => format!("off ({n} dictionaries kept for older documents)"),
            (true, 0) => "on (no dictionary trained yet)".to_owned(),
            (true, 1) => "on, 1 dictionary".to_owned(),
            (true, n) => format!("on, {n} dictionaries"),
        };
        let compression = match sizes {
            Ok(c) => format!("{:.2}x, {state}", c.ratio()),
            Err(e) => format!("ratio unknown, {state} ({e})"),
        };
        println!(
            "{:<24} {:>12} {:>7} {:>8} {:>14} {:>14} {:>12} {:>9}  {compression}",
            s.name,
            s.documents,
            s.layers,
            s.packed_blocks,
            s.table_bytes,
            s.stored_bytes,
            s.index_bytes,
            s.unsaved_changes,
        );
    }
    Ok(())
}
