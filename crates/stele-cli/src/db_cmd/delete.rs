//! `stele delete`: documents by id.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::{close_db, open_existing, require_collection};
use crate::say::count;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele delete shop.db orders o-1 o-2

Ids that do not exist are reported on stderr; they are not an error.")]
pub struct DeleteArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// Document ids.
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
