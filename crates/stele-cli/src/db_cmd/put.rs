//! `stele put`: one document, creating the database and collection if needed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::write_creating;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele put shop.db orders o-1 '{\"customer\":\"ada\",\"total\":12.50}'
  curl -s https://example.org/o-2.json | stele put shop.db orders o-2 -")]
pub struct PutArgs {
    /// The database folder (created if missing or empty; see --create-here).
    db: PathBuf,
    /// The collection (created if missing).
    collection: String,
    /// The document's id (replaces a document with the same id).
    id: String,
    /// The document as JSON text, or - to read it from standard input.
    #[arg(value_name = "JSON")]
    document: String,
    /// Create the database even if the folder holds other files (by default a database is
    /// created only in a new or empty folder).
    #[arg(long)]
    create_here: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn put(args: &PutArgs) -> Result<()> {
    // Checked first: a bad name is not blamed on the input, and creates no database.
    stele::check_collection_name(&args.collection)?;
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
    let (existed, kind) = write_creating(&args.db, args.create_here, |db| {
        let existed = db.snapshot().contains(&args.collection, &args.id)?;
        let mut batch = db.batch();
        batch
            .put_json(&args.collection, &args.id, &text)
            .with_context(|| format!("{source} (document {:?})", args.id))?;
        db.commit(batch)
            .with_context(|| format!("writing to database {}", args.db.display()))?;
        Ok((existed, db.snapshot().id_kind(&args.collection)))
    })?;
    // An integer id of a collection of integer ids is shown as the number.
    let id = super::id_json(kind, &args.id);
    if args.json {
        println!(
            "{{\"collection\":{},\"id\":{id},\"replaced\":{existed}}}",
            super::json_str(&args.collection)
        );
    } else {
        let what = if existed { "replaced" } else { "created" };
        eprintln!("{what} {id} in collection {:?}", args.collection);
    }
    Ok(())
}
