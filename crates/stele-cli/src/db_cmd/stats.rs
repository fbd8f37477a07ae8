//! `stele stats`: the database's disk use and each collection's size and compression.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::open_reading;

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
                        "key_bytes": ix.key_bytes, "array_fields": ix.array_fields,
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
