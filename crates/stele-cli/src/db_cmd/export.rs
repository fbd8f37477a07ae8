//! `stele export`: a collection as JSON Lines, in id order.

use std::fs::File;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use stele::export::{ExportOptions, export_jsonl};

use super::{open_reading, require_in};
use crate::say::count;

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
