//! The one-field flags of earlier versions (`--eq`, `--range`, `--prefix`, `--order-by`,
//! `--desc`): shorthands that add their condition to `--filter` by AND.

use std::ops::Bound;

use anyhow::{Context, Result, bail};
use clap::Args;
use stele::Query;

/// The shorthand flags, flattened into `stele query`.
#[derive(Debug, Args)]
pub struct Shorthands {
    /// FIELD=JSON: documents whose field equals the value (repeatable; the same as
    /// --filter '{"FIELD": JSON}').
    #[arg(long, value_name = "FIELD=JSON")]
    eq: Vec<String>,
    /// FIELD>JSON, FIELD>=JSON, FIELD<JSON or FIELD<=JSON; give one of each side for both
    /// bounds (repeatable, on any fields).
    #[arg(long, value_name = "FIELD<OP>JSON")]
    range: Vec<String>,
    /// FIELD=TEXT: documents whose field is a string starting with TEXT (no quotes).
    #[arg(long, value_name = "FIELD=TEXT")]
    prefix: Vec<String>,
    /// Order by this field (the same as --sort FIELD).
    #[arg(long, value_name = "FIELD", conflicts_with = "sort")]
    pub(super) order_by: Option<String>,
    /// Descending order (with --order-by).
    #[arg(long, requires = "order_by")]
    pub(super) desc: bool,
}

fn split_eq<'a>(flag: &str, text: &'a str) -> Result<(&'a str, &'a str)> {
    text.split_once('=')
        .filter(|(f, _)| !f.is_empty())
        .with_context(|| format!("--{flag} takes FIELD=VALUE, got {text:?}"))
}

/// One side of a range: `FIELD>=JSON` and friends.
struct Side<'a> {
    field: &'a str,
    lower: bool,
    inclusive: bool,
    value: &'a str,
}

/// Parses `FIELD>=JSON` and friends. The operator is the first `<` or `>`; a field ending
/// in `=` or `!` means a misspelt operator (`=>`, `!<`), which would otherwise run as a
/// filter on a field named `Score=` and match nothing.
fn parse_range(text: &str) -> Result<Side<'_>> {
    const FORMS: &str = "FIELD>VALUE, FIELD>=VALUE, FIELD<VALUE or FIELD<=VALUE";
    let Some(at) = text.find(['<', '>']) else {
        bail!("--range takes {FORMS}, got {text:?}");
    };
    let (field, rest) = text.split_at(at);
    let lower = rest.starts_with('>');
    // The operator is one ASCII byte, so `rest[1..]` starts on a character boundary.
    let after = rest.get(1..).unwrap_or("");
    let (inclusive, value) = match after.strip_prefix('=') {
        Some(value) => (true, value),
        None => (false, after),
    };
    if field.is_empty() {
        bail!("--range {text:?} names no field: it takes {FORMS}");
    }
    if let Some(stem) = field.strip_suffix(['=', '!']) {
        let op = if lower { ">=" } else { "<=" };
        let typed = text.get(stem.len()..=at).unwrap_or("");
        bail!(
            "--range {text:?}: {typed:?} is not an operator; did you mean {stem}{op}{value}? It takes {FORMS}"
        );
    }
    if value.is_empty() {
        bail!("--range {text:?} has no value after its operator: it takes {FORMS}");
    }
    Ok(Side {
        field,
        lower,
        inclusive,
        value,
    })
}

impl Shorthands {
    /// `q` with every shorthand condition added (AND), and the shorthand order.
    pub(super) fn apply(&self, mut q: Query) -> Result<Query> {
        for eq in &self.eq {
            let (field, value) = split_eq("eq", eq)?;
            q = q.eq(field, value);
        }
        for p in &self.prefix {
            let (field, value) = split_eq("prefix", p)?;
            q = q.prefix(field, value);
        }
        // Ranges grouped by field, in the order the fields first appear: each field takes
        // at most one lower and one upper bound.
        let mut ranges: Vec<(&str, Bound<&str>, Bound<&str>)> = Vec::new();
        for r in &self.range {
            let side = parse_range(r)?;
            let at = match ranges.iter().position(|(f, _, _)| *f == side.field) {
                Some(at) => at,
                None => {
                    ranges.push((side.field, Bound::Unbounded, Bound::Unbounded));
                    ranges.len() - 1
                }
            };
            let Some((_, lo, hi)) = ranges.get_mut(at) else {
                continue; // `at` was just found or pushed
            };
            let taken = if side.lower { lo } else { hi };
            if !matches!(taken, Bound::Unbounded) {
                bail!(
                    "--range {r:?} gives a second {} bound on {}: give at most one of > / >= and one of < / <= per field",
                    if side.lower { "lower" } else { "upper" },
                    side.field
                );
            }
            *taken = if side.inclusive {
                Bound::Included(side.value)
            } else {
                Bound::Excluded(side.value)
            };
        }
        for (field, lo, hi) in ranges {
            q = q.range(field, lo, hi);
        }
        if let Some(field) = &self.order_by {
            q = q.order_by(field, self.desc);
        }
        Ok(q)
    }
}
