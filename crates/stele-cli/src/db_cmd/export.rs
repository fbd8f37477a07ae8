//! `stele export`: a collection as JSON Lines, Parquet or CSV, in id order.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use stele::export::{ExportError, ExportOptions, Lost, export_jsonl, export_salvage};
use stele::{Filter, Query};

use super::{open_reading, require_in};
use crate::say::count;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele export shop.db orders -o orders.jsonl
  stele export shop.db people --id-field _id | head
  stele export shop.db orders --salvage -o saved.jsonl     what a damaged collection still holds
  stele export shop.db orders -o orders.parquet            Parquet (from the file name)
  stele export shop.db orders --format csv --fields _id,total,customer.city
  stele export shop.db orders --filter '{\"status\": \"paid\"}' -o paid.jsonl

JSON Lines: one document per line in id order, keys in their original order; importing the
output gives equal data (with --id-field on both sides when ids are not in the documents).
Parquet and CSV: a column per field (`_id` and every root property, or the --fields), types
inferred from every document (objects to structs, arrays to lists, mixed types
to JSON text; in CSV objects and arrays are JSON text).")]
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
    /// For a damaged collection: export every readable document, skipping the parts that
    /// cannot be read and listing each on stderr (its file, byte offset, and the ids it
    /// held); exit code 1 if any was lost.
    #[arg(long)]
    salvage: bool,
    /// The output's format (default: from the output file's extension, else jsonl).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Only these fields, comma-separated paths (`_id,name,address.city`).
    #[arg(long, value_delimiter = ',')]
    fields: Option<Vec<String>>,
    /// Only the documents this query filter keeps (JSON, MongoDB's form).
    #[arg(long)]
    filter: Option<String>,
}

/// The formats `stele export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Jsonl,
    Parquet,
    Csv,
}

impl ExportArgs {
    fn format(&self) -> Format {
        let ext = self.output.as_deref().and_then(Path::extension);
        self.format.unwrap_or(match ext.and_then(|e| e.to_str()) {
            Some("parquet") => Format::Parquet,
            Some("csv") => Format::Csv,
            _ => Format::Jsonl,
        })
    }
}

/// Counts the bytes written through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// JSON Lines of the documents `filter` keeps, only `fields` of each (a projection, nested
/// as in the documents) when given; the rows are collected by the query engine first.
fn jsonl_selected(
    args: &ExportArgs,
    snap: &stele::Snapshot,
    filter: Filter,
    mut out: impl std::io::Write,
) -> Result<(u64, u64)> {
    let mut q = Query::new(&args.collection).filter(filter);
    if let Some(f) = &args.fields {
        let paths: Vec<&str> = f.iter().map(String::as_str).collect();
        q = q.select(&paths);
    }
    let rows = snap.query(&q)?.rows;
    let (mut docs, mut bytes) = (0, 0);
    for row in rows {
        let line = match &args.id_field {
            Some(name) if row.json.len() > 2 => format!(
                "{{{}:{},{}",
                crate::db_cmd::json_str(name),
                crate::db_cmd::json_str(&row.id),
                &row.json[1..]
            ),
            Some(name) => format!(
                "{{{}:{}}}",
                crate::db_cmd::json_str(name),
                crate::db_cmd::json_str(&row.id)
            ),
            None => row.json,
        };
        writeln!(out, "{line}")?;
        docs += 1;
        bytes += line.len() as u64 + 1;
    }
    Ok((docs, bytes))
}

/// Writes the export in the format asked for into `out`.
fn write_any(
    args: &ExportArgs,
    snap: &stele::Snapshot,
    opts: &ExportOptions,
    out: impl std::io::Write + Send,
) -> Result<Written> {
    let format = args.format();
    let selected = args.fields.is_some() || args.filter.is_some();
    if args.salvage && (format != Format::Jsonl || selected) {
        bail!(
            "--salvage writes whole documents as JSON Lines: leave out --format, --fields and --filter"
        );
    }
    let filter = match &args.filter {
        Some(text) => Filter::parse(text).with_context(|| format!("--filter {text}"))?,
        None => Filter::all(),
    };
    let sel = super::export_arrow::Selection {
        fields: args.fields.as_deref(),
        filter,
    };
    let mut counted = Counted {
        inner: out,
        bytes: 0,
    };
    let rows = match format {
        Format::Jsonl if selected => {
            let (docs, bytes) = jsonl_selected(args, snap, sel.filter, counted)?;
            return Ok((docs, bytes, Vec::new()));
        }
        Format::Jsonl => return write_to(args, snap, opts, counted.inner).map_err(salvage_hint),
        Format::Parquet => {
            super::export_arrow::parquet(snap, &args.collection, &sel, &mut counted)?
        }
        Format::Csv => super::export_arrow::csv(snap, &args.collection, &sel, &mut counted)?,
    };
    std::io::Write::flush(&mut counted)?;
    Ok((rows, counted.bytes, Vec::new()))
}

/// What an export wrote: documents, bytes, and (salvaging) the parts it could not read.
type Written = (u64, u64, Vec<Lost>);

/// Exports (or, with `--salvage`, salvages) into `out`.
fn write_to(
    args: &ExportArgs,
    snap: &stele::Snapshot,
    opts: &ExportOptions,
    out: impl std::io::Write,
) -> Result<Written, ExportError> {
    if args.salvage {
        let r = export_salvage(snap, &args.collection, out, opts)?;
        Ok((r.documents, r.bytes, r.lost))
    } else {
        let r = export_jsonl(snap, &args.collection, out, opts)?;
        Ok((r.documents, r.bytes, Vec::new()))
    }
}

/// One line about a part a salvage could not read.
fn say_lost(db: &Path, lost: &Lost) -> String {
    let mut line = format!("lost {}", lost.part);
    let files: Vec<String> = lost
        .files
        .iter()
        .map(|f| f.strip_prefix(db).unwrap_or(f).display().to_string())
        .collect();
    if !files.is_empty() {
        line.push_str(&format!(" in {}", files.join(" or ")));
    }
    if let Some(offset) = lost.offset {
        line.push_str(&format!(" at byte {offset}"));
    }
    let ids: Vec<String> = lost
        .ids
        .iter()
        .map(|id| crate::db_cmd::json_str(id))
        .collect();
    match (&lost.after, &lost.before) {
        (None, None) if !ids.is_empty() => line.push_str(&format!(": ids {}", ids.join(", "))),
        (after, before) => {
            let after = after
                .as_deref()
                .map_or("the first".to_owned(), crate::db_cmd::json_str);
            let before = before
                .as_deref()
                .map_or("the last".to_owned(), crate::db_cmd::json_str);
            line.push_str(&format!(": ids after {after} and before {before}"));
            if !ids.is_empty() {
                line.push_str(&format!(" (among them {})", ids.join(", ")));
            }
        }
    }
    line.push_str(&format!(" ({})", lost.reason));
    line
}

pub fn export(args: &ExportArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let mut opts = ExportOptions::new();
    if let Some(f) = &args.id_field {
        opts = opts.id_field(f.clone());
    }
    let context = || format!("exporting collection {:?}", args.collection);
    let (documents, bytes, lost) = match args.output.as_deref().filter(|p| p.as_os_str() != "-") {
        None => match write_any(
            args,
            &snap,
            &opts,
            std::io::BufWriter::new(std::io::stdout()),
        ) {
            Err(e) if broken_pipe(&e) => return Ok(()),
            other => other.with_context(context)?,
        },
        Some(path) => {
            let tmp = crate::io::temp_beside(path);
            let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
            let written = write_any(args, &snap, &opts, &file)
                .with_context(|| format!("{} to {}", context(), path.display()))
                .and_then(|r| {
                    file.sync_all()
                        .with_context(|| format!("writing {}", tmp.display()))?;
                    std::fs::rename(&tmp, path).with_context(|| {
                        format!("renaming {} to {}", tmp.display(), path.display())
                    })?;
                    // The new name is an entry of the folder: synced so it survives a crash.
                    let dir = tmp.parent().unwrap_or(std::path::Path::new("."));
                    File::open(dir)
                        .and_then(|d| d.sync_all())
                        .with_context(|| format!("syncing folder {}", dir.display()))?;
                    Ok(r)
                });
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written?
        }
    };
    for part in &lost {
        eprintln!("{}", say_lost(&args.db, part));
    }
    eprintln!(
        "exported {} ({}) from collection {:?}",
        count(documents, "document", "documents"),
        count(bytes, "byte", "bytes"),
        args.collection
    );
    if !lost.is_empty() {
        bail!(
            "{} of collection {:?} could not be read (listed above); every readable document was exported",
            count(lost.len() as u64, "part", "parts"),
            args.collection
        );
    }
    Ok(())
}

/// Whether the export stopped because its reader went away (`stele export | head`).
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let io = match c.downcast_ref::<ExportError>() {
            Some(ExportError::Write(io)) => Some(io),
            _ => c.downcast_ref::<std::io::Error>(),
        };
        io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A failed export's error, with the way to export what is still readable when the
/// collection is damaged.
fn salvage_hint(e: ExportError) -> anyhow::Error {
    let damaged = matches!(&e, ExportError::Database(_));
    let e = anyhow::Error::new(e);
    if damaged {
        e.context("the collection could not be read whole: `stele export --salvage` exports every readable document and lists what is lost")
    } else {
        e
    }
}
