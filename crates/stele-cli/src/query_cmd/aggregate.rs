//! `stele aggregate` (pipelines) and `stele distinct`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use stele::{Pipeline, Query};

use crate::db_cmd::{open_reading, require_in};

#[derive(Debug, Args)]
#[command(after_help = r#"Examples:
  stele aggregate shop.db orders '[{"$group": {"_id": "$status", "n": {"$sum": 1}}}]'
  stele aggregate shop.db orders '[{"$match": {"status": "paid"}}, {"$unwind": "$items"},
    {"$group": {"_id": "$items.sku", "sold": {"$sum": "$items.qty"}}}, {"$sort": {"sold": -1}}]'
  stele aggregate shop.db orders '[{"$match": {"note": null}}, {"$count": "without_note"}]'

The pipeline is MongoDB's JSON form: a list of stages $match $group $sort $limit $skip
$project $count $unwind; $group takes the accumulators $sum $min $max $avg $count $first
$last $push over expressions: field paths ("$a.b"), literals, and objects of them. The
leading $match, $sort, $skip and $limit run as a query (indexes serve them: see --explain);
a $group right after them groups while the collection is read, on all cores.
Output: one JSON document per line."#)]
pub struct AggregateArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// The pipeline: a JSON array of stages.
    pipeline: String,
    /// Print the plan of the query that reads the collection, keys and documents examined
    /// and time, instead of the results.
    #[arg(long)]
    explain: bool,
    /// With --explain: one JSON object.
    #[arg(long, requires = "explain")]
    json: bool,
}

pub fn aggregate(args: &AggregateArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let pipeline =
        Pipeline::parse(&args.pipeline).with_context(|| format!("pipeline {}", args.pipeline))?;
    let out = snap
        .aggregate(&args.collection, &pipeline)
        .context("running the pipeline")?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    if args.explain {
        super::explain::print(&mut w, &out.plan, &out.stats, None, args.json)?;
    } else {
        super::print_lines(&mut w, out.rows.iter(), &out.plan)?;
    }
    w.flush()?;
    Ok(())
}

#[derive(Debug, Args)]
#[command(after_help = r#"Examples:
  stele distinct shop.db orders status
  stele distinct shop.db orders items.sku --filter '{"status": "paid"}'

Prints each distinct value of the field (one JSON value per line, in value order: null <
false < true < numbers < strings < objects < arrays). An array contributes its elements."#)]
pub struct DistinctArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// The field: a dotted path.
    field: String,
    /// Only the documents matching this filter (MongoDB's JSON form).
    #[arg(long, value_name = "JSON")]
    filter: Option<String>,
}

pub fn distinct(args: &DistinctArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let mut q = Query::new(&args.collection);
    if let Some(text) = &args.filter {
        q = q.filter(super::parse_filter(text)?);
    }
    let values = snap
        .distinct(&q, &args.field)
        .with_context(|| format!("the distinct values of {}", args.field))?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for v in &values {
        writeln!(w, "{v}")?;
    }
    w.flush()?;
    eprintln!(
        "{}",
        crate::say::count(values.len() as u64, "value", "values")
    );
    Ok(())
}
