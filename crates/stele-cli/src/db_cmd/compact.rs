//! `stele compact`: every collection merged into one table (packed when compressed).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use stele::Database;

use super::{close_db, open_existing};
use crate::say::count;

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
