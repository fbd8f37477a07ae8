//! Database commands: `query` and `index create|list|drop`.

use std::io::Write;
use std::ops::Bound;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use stele::Query;

use crate::db_cmd::{
    close_db, json_str, open_existing, open_reading, require_collection, require_in,
};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele query shop.db orders                                  every document
  stele query shop.db orders --eq 'customer=\"ada\"'            strings in JSON quotes
  stele query shop.db orders --range 'total>=10' --range 'total<20' --order-by total --desc
  stele query shop.db orders --prefix 'customer=a' --select customer,total --limit 5
  stele query shop.db orders --eq 'tags[]=\"gift\"' --explain    the plan only

One field per query. It uses an index whose first field is that field when there is one
(`stele index create`), else reads every document; --explain says which. Values are JSON:
numbers compare by value (1 = 1.0), strings need quotes; a range with one open side stays
within its bound's type. Output: one JSON object per line, {\"id\":..,\"document\":..}.")]
pub struct QueryArgs {
    /// The database folder.
    db: PathBuf,
    /// The collection.
    collection: String,
    /// FIELD=JSON: documents whose field equals the value.
    #[arg(long, value_name = "FIELD=JSON")]
    eq: Option<String>,
    /// FIELD>JSON, FIELD>=JSON, FIELD<JSON or FIELD<=JSON; give it twice for both bounds.
    #[arg(long, value_name = "FIELD<OP>JSON")]
    range: Vec<String>,
    /// FIELD=TEXT: documents whose field is a string starting with TEXT (no quotes).
    #[arg(long, value_name = "FIELD=TEXT")]
    prefix: Option<String>,
    /// Order by this field (documents without it last).
    #[arg(long, value_name = "FIELD")]
    order_by: Option<String>,
    /// Descending order.
    #[arg(long, requires = "order_by")]
    desc: bool,
    /// At most this many results (at least 1).
    #[arg(long, value_parser = crate::say::at_least_one())]
    limit: Option<usize>,
    /// Only these fields of each document, comma-separated (dotted paths).
    #[arg(long, value_delimiter = ',')]
    select: Vec<String>,
    /// Print the plan (index scan or full scan) instead of results.
    #[arg(long)]
    explain: bool,
}

fn split_eq<'a>(flag: &str, text: &'a str) -> Result<(&'a str, &'a str)> {
    text.split_once('=')
        .filter(|(f, _)| !f.is_empty())
        .with_context(|| format!("--{flag} takes FIELD=VALUE, got {text:?}"))
}

/// Parses `FIELD>=JSON` and friends into (field, is_lower, inclusive, value). The operator
/// is the first `<` or `>`; a field ending in `=` or `!` means a misspelt operator (`=>`,
/// `!<`), which would otherwise run as a filter on a field named `Score=` and match nothing.
fn parse_range(text: &str) -> Result<(&str, bool, bool, &str)> {
    const FORMS: &str = "FIELD>VALUE, FIELD>=VALUE, FIELD<VALUE or FIELD<=VALUE";
    let Some(at) = text.find(['<', '>']) else {
        bail!("--range takes {FORMS}, got {text:?}");
    };
    let (field, rest) = text.split_at(at);
    let lower = rest.starts_with('>');
    let (inclusive, value) = match rest[1..].strip_prefix('=') {
        Some(value) => (true, value),
        None => (false, &rest[1..]),
    };
    if field.is_empty() {
        bail!("--range {text:?} names no field: it takes {FORMS}");
    }
    if let Some(stem) = field.strip_suffix(['=', '!']) {
        let op = if lower { ">=" } else { "<=" };
        bail!(
            "--range {text:?}: {:?} is not an operator; did you mean {stem}{op}{value}? It takes {FORMS}",
            &text[stem.len()..=at]
        );
    }
    if value.is_empty() {
        bail!("--range {text:?} has no value after its operator: it takes {FORMS}");
    }
    Ok((field, lower, inclusive, value))
}

fn build(args: &QueryArgs) -> Result<Query> {
    let mut q = Query::new(&args.collection);
    let filters = usize::from(args.eq.is_some())
        + usize::from(args.prefix.is_some())
        + usize::from(!args.range.is_empty());
    if filters > 1 {
        bail!("give one of --eq, --range or --prefix (a query filters on one field)");
    }
    if let Some(eq) = &args.eq {
        let (field, value) = split_eq("eq", eq)?;
        q = q.eq(field, value);
    }
    if let Some(p) = &args.prefix {
        let (field, value) = split_eq("prefix", p)?;
        q = q.prefix(field, value);
    }
    if !args.range.is_empty() {
        let (mut lo, mut hi) = (Bound::Unbounded, Bound::Unbounded);
        let mut on: Option<&str> = None;
        for r in &args.range {
            let (field, lower, inclusive, value) = parse_range(r)?;
            if on.is_some_and(|f| f != field) {
                bail!("both --range bounds must be on the same field");
            }
            on = Some(field);
            let taken = if lower { &lo } else { &hi };
            if !matches!(taken, Bound::Unbounded) {
                bail!(
                    "--range {r:?} gives a second {} bound: give at most one of > / >= and one of < / <=",
                    if lower { "lower" } else { "upper" }
                );
            }
            let b = if inclusive {
                Bound::Included(value)
            } else {
                Bound::Excluded(value)
            };
            if lower { lo = b } else { hi = b }
        }
        if let Some(field) = on {
            q = q.range(field, lo, hi);
        }
    }
    if let Some(field) = &args.order_by {
        q = q.order_by(field, args.desc);
    }
    if let Some(n) = args.limit {
        q = q.limit(n);
    }
    if !args.select.is_empty() {
        let refs: Vec<&str> = args.select.iter().map(String::as_str).collect();
        q = q.select(&refs);
    }
    Ok(q)
}

pub fn query(args: &QueryArgs) -> Result<()> {
    let snap = open_reading(&args.db)?.snapshot();
    require_in(&snap, &args.db, &args.collection)?;
    let q = build(args)?;
    let out = snap.query(&q).context("running the query")?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    if args.explain {
        writeln!(w, "{}", out.plan)?;
    } else {
        for row in &out.rows {
            writeln!(
                w,
                "{{\"id\":{},\"document\":{}}}",
                json_str(&row.id),
                row.json
            )?;
        }
        eprintln!(
            "{}; {}",
            crate::say::count(out.rows.len() as u64, "row", "rows"),
            out.plan
        );
    }
    w.flush()?;
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Create an index on one or more fields and build it for the documents already there.
    #[command(after_help = "Examples:
  stele index create shop.db orders by_customer customer
  stele index create shop.db orders by_tag_total 'tags[]' total

Fields are dotted paths; `[]` after a name indexes every element of an array. From then on
every write keeps the index current; `stele query` uses it for a filter on its first field.")]
    Create {
        /// The database folder.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// The index's name (letters, digits, '_', '-', '.').
        name: String,
        /// The fields, in key order.
        #[arg(required = true)]
        fields: Vec<String>,
    },
    /// List a collection's indexes (name and fields).
    #[command(after_help = "Example:\n  stele index list shop.db orders --json")]
    List {
        /// The database folder.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// One JSON object per index.
        #[arg(long)]
        json: bool,
    },
    /// Drop an index.
    #[command(after_help = "Example:\n  stele index drop shop.db orders by_customer")]
    Drop {
        /// The database folder.
        db: PathBuf,
        /// The collection.
        collection: String,
        /// The index's name.
        name: String,
    },
}

pub fn index(cmd: &IndexCommand) -> Result<()> {
    match cmd {
        IndexCommand::Create {
            db,
            collection,
            name,
            fields,
        } => {
            let database = open_existing(db)?;
            require_collection(&database, db, collection)?;
            let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
            database
                .create_index(collection, name, &refs)
                .with_context(|| format!("creating index {name:?} on collection {collection:?}"))?;
            close_db(database, db)?;
            eprintln!("index {name:?} on {collection}: {}", fields.join(", "));
        }
        IndexCommand::List {
            db,
            collection,
            json,
        } => {
            let snap = open_reading(db)?.snapshot();
            require_in(&snap, db, collection)?;
            let mut w = std::io::stdout().lock();
            for def in snap.indexes(collection) {
                let fields: Vec<&str> = def.fields.iter().map(|f| f.as_str()).collect();
                if *json {
                    let list: Vec<String> = fields.iter().map(|f| json_str(f)).collect();
                    writeln!(
                        w,
                        "{{\"name\":{},\"fields\":[{}]}}",
                        json_str(&def.name),
                        list.join(",")
                    )?;
                } else {
                    writeln!(w, "{}\t{}", def.name, fields.join(", "))?;
                }
            }
        }
        IndexCommand::Drop {
            db,
            collection,
            name,
        } => {
            let database = open_existing(db)?;
            require_collection(&database, db, collection)?;
            database
                .drop_index(collection, name)
                .with_context(|| format!("dropping index {name:?} of collection {collection:?}"))?;
            close_db(database, db)?;
        }
    }
    Ok(())
}
