//! The query commands: `query` (this file, with the old one-field flags in `shorthand.rs`
//! and the `--explain` output in `explain.rs`), `aggregate` and `distinct`
//! (`aggregate.rs`) and `index create|list|drop` (`index.rs`).

mod aggregate;
mod explain;
mod index;
mod shorthand;

pub use aggregate::{AggregateArgs, DistinctArgs, aggregate, distinct};
pub use index::{IndexCommand, index};

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use stele::{Filter, Query};

use crate::db_cmd::{open_reading, require_in};

#[derive(Debug, Args)]
#[command(after_help = r#"Examples:
  stele query shop.db orders --filter '{"customer.name": "Ada", "total": {"$gte": 10}}'
  stele query shop.db orders --filter '{"status": {"$in": ["paid", "shipped"]}}' --limit 20
  stele query shop.db orders --sort customer.name,created:desc --skip 20 --limit 20
  stele query shop.db orders --filter '{"$or": [{"tags": "gift"}, {"total": {"$gt": 100}}]}'
  stele query shop.db orders --filter '{"items.sku": "kb-101"}' --select id,total,customer.name
  stele query shop.db orders --filter '{"note": null}' --count
  stele query shop.db orders --filter '{"status": "paid"}' --sort total:desc --limit 5 --explain
  stele query shop.db orders --eq 'status="paid"' --range 'total>=10' --order-by total --desc

The filter is MongoDB's JSON form: {"field": value} for equality (an array matches when an
element does; null also matches a missing field), {"field": {"$op": value}} with $eq $ne $gt
$gte $lt $lte $in $nin $exists $type $size $all $elemMatch $not $prefix, and $and $or $nor
over lists of filters. Fields are dotted paths (customer.address.city, items.sku, tags.0);
_id is the document id. Values order null < false < true < numbers < strings < objects <
arrays. Sorting puts documents without the field first ascending, last descending.

The planner picks an index (stele index create) when one serves the filter or the sort,
else reads every document; --explain shows the plan, the indexes considered and why, and
what was read. --eq, --range, --prefix and --order-by are the shorthands of earlier
versions: they add their condition to --filter (AND). Output: one JSON object per line,
{"id":..,"document":..}; --count prints the number."#)]
pub struct QueryArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// A filter in MongoDB's JSON form: '{"a.b": 5, "n": {"$gte": 1}}'.
    #[arg(long, value_name = "JSON")]
    filter: Option<String>,
    /// Sort by FIELD, ascending or (`:desc`) descending; repeat it or separate by commas
    /// for several: `--sort status,total:desc`.
    #[arg(long, value_name = "FIELD[:desc]", value_delimiter = ',')]
    sort: Vec<String>,
    /// Skip the first N results.
    #[arg(long, value_name = "N", default_value_t = 0)]
    skip: usize,
    /// At most this many results (at least 1).
    #[arg(long, value_parser = crate::say::at_least_one())]
    limit: Option<usize>,
    /// Only these fields of each document, comma-separated (dotted paths, kept nested).
    #[arg(long, value_delimiter = ',', conflicts_with = "projection")]
    select: Vec<String>,
    /// A projection in MongoDB's JSON form: '{"a": 1, "b.c": 1}' keeps those paths,
    /// '{"note": 0}' drops them.
    #[arg(long, value_name = "JSON")]
    projection: Option<String>,
    /// Print the number of matching documents (after --skip and --limit) instead of them.
    #[arg(long, conflicts_with_all = ["select", "projection", "sort", "order_by"])]
    count: bool,
    /// Print the plan, the indexes considered, keys and documents examined, rows and time
    /// instead of the results.
    #[arg(long)]
    explain: bool,
    /// With --explain: one JSON object.
    #[arg(long, requires = "explain")]
    json: bool,
    /// Stop the query once it has run this long: `500ms`, `2s`, `1m` (a bare number is
    /// seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    time_budget: Option<Duration>,
    #[command(flatten)]
    shorthands: shorthand::Shorthands,
}

/// `500ms`, `2s`, `1.5s`, `1m`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let bad = || format!("{text:?} is not a duration: give one such as 500ms, 2s or 1m");
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    Duration::try_from_secs_f64(value * scale)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(bad)
}

/// `FIELD`, `FIELD:desc` or `FIELD:asc` (also `:-1`, `:1`, as index fields take).
fn sort_key(text: &str) -> (&str, bool) {
    match text.rsplit_once(':') {
        Some((field, "desc" | "-1")) => (field, true),
        Some((field, "asc" | "1")) => (field, false),
        _ => (text, false),
    }
}

/// A `--filter` that does not parse, said with the flag (the library's error names the
/// place in the filter, `$.total.$gte`, and what is wrong).
pub(crate) fn parse_filter(text: &str) -> Result<Filter> {
    Filter::parse(text).with_context(|| format!("--filter {text}"))
}

fn build(args: &QueryArgs) -> Result<Query> {
    let mut q = Query::new(&args.collection);
    if let Some(text) = &args.filter {
        q = q.filter(parse_filter(text)?);
    }
    q = args.shorthands.apply(q)?;
    for s in &args.sort {
        let (field, desc) = sort_key(s);
        if field.is_empty() {
            bail!("--sort {s:?} names no field: it takes FIELD or FIELD:desc");
        }
        q = q.sort(field, desc);
    }
    q = q.skip(args.skip);
    if let Some(n) = args.limit {
        q = q.limit(n);
    }
    if !args.select.is_empty() {
        let refs: Vec<&str> = args.select.iter().map(String::as_str).collect();
        q = q.select(&refs);
    }
    if let Some(p) = &args.projection {
        q = q
            .projection_json(p)
            .with_context(|| format!("--projection {p}"))?;
    }
    if let Some(budget) = args.time_budget {
        q = q.time_budget(budget);
    }
    Ok(q)
}

pub fn query(args: &QueryArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let q = build(args)?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    if args.count {
        let out = snap.count_matching(&q).context("counting")?;
        if args.explain {
            explain::print(&mut w, &out.plan, &out.stats, Some(out.count), args.json)?;
        } else {
            writeln!(w, "{}", out.count)?;
        }
    } else if args.explain {
        let out = snap.explain(&q).context("running the query")?;
        explain::print(&mut w, &out.plan, &out.stats, None, args.json)?;
    } else {
        // Rows are printed as the query finds them (a full scan's first rows before it has
        // read everything); stopping early (a closed pipe) drops the stream, which stops it.
        let mut stream = snap.query_iter(&q).context("running the query")?;
        let kind = snap.id_kind(&args.collection);
        let mut n = 0u64;
        for row in stream.by_ref() {
            let row = row.context("running the query")?;
            let id = crate::db_cmd::id_json(kind, &row.id);
            writeln!(w, "{{\"id\":{id},\"document\":{}}}", row.json)?;
            n += 1;
            if n.is_multiple_of(64) || n <= 16 {
                // The first rows show at once, then in batches.
                w.flush()?;
            }
        }
        eprintln!("{}; {}", crate::say::count(n, "row", "rows"), stream.plan());
    }
    w.flush()?;
    Ok(())
}

/// Writes one line per item, then says on stderr how many rows and the plan.
fn print_lines(
    w: &mut impl Write,
    lines: impl Iterator<Item = impl std::fmt::Display>,
    plan: &stele::Plan,
) -> Result<()> {
    let mut n = 0u64;
    for line in lines {
        writeln!(w, "{line}")?;
        n += 1;
    }
    eprintln!("{}; {plan}", crate::say::count(n, "row", "rows"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sort_keys() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["", "fast", "-1s", "0s", "1h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(sort_key("total:desc"), ("total", true));
        assert_eq!(sort_key("a.b:asc"), ("a.b", false));
        assert_eq!(sort_key("created"), ("created", false));
        assert_eq!(sort_key("x:-1"), ("x", true));
    }
}
