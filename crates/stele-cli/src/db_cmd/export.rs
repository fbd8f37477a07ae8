//! `stele export`: a collection as JSON Lines, in id order.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use stele::export::{ExportError, ExportOptions, Lost, export_jsonl, export_salvage};

use super::{open_reading, require_in};
use crate::say::count;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele export shop.db orders -o orders.jsonl
  stele export shop.db people --id-field _id | head
  stele export shop.db orders --salvage -o saved.jsonl     what a damaged collection still holds

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
    /// For a damaged collection: export every readable document, skipping the parts that
    /// cannot be read and listing each on stderr (its file, byte offset, and the ids it
    /// held); exit code 1 if any was lost.
    #[arg(long)]
    salvage: bool,
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
        None => match write_to(args, &snap, &opts, std::io::stdout().lock()) {
            Err(ExportError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(());
            }
            other => other.map_err(salvage_hint).with_context(context)?,
        },
        Some(path) => {
            let tmp = crate::io::temp_beside(path);
            let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
            let written = write_to(args, &snap, &opts, &file)
                .map_err(salvage_hint)
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
