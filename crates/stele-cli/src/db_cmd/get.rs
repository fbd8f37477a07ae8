//! `stele get`: documents by id.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::{id_json, open_reading, require_in};

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
    /// Document ids (a numbered record's by its number too: 42 finds 0000000042; in a
    /// collection of integer ids, the integers).
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
            let id = id_json(snap.id_kind(&args.collection), id);
            writeln!(out, "{{\"id\":{id},\"document\":{text}}}")?;
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
