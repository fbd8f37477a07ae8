//! Aggregation pipelines in MongoDB's JSON form:
//!
//! ```text
//! [{"$match": {"license": {"$exists": true}}},
//!  {"$group": {"_id": "$license", "n": {"$sum": 1}, "stars": {"$avg": "$stars"}}},
//!  {"$sort": {"n": -1}}, {"$limit": 10}]
//! ```
//!
//! Stages: `$match $group $sort $limit $skip $project $count $unwind`. Accumulators of
//! `$group`: `$sum $min $max $avg $count $first $last $push`. Expressions are field paths
//! (`"$a.b"`), literals, and objects of expressions (`{"y": "$year", "m": "$month"}`).
//!
//! The leading `$match`, `$sort`, `$skip` and `$limit` stages run as a query (so they use
//! indexes, [`Snapshot::query`](crate::Snapshot::query)); a `$group` right after them
//! aggregates while the collection is scanned, on all cores, without keeping documents; a
//! `$count` right after them is a [`Snapshot::count_matching`](crate::Snapshot::count_matching).
//! The stages after that run over the documents the earlier ones produced.

pub(crate) mod expr;
pub(crate) mod group;
mod grouper;
mod hash;
mod render;
mod spill_state;
mod stages;

use crate::error::{Error, Result};
use crate::query::filter::parse::{json_document, parse_filter};
use crate::query::path::DocPath;
use crate::query::{Filter, Plan, QueryStats};
use group::Group;
use stele_doc::{Document, Value};

/// A parsed pipeline. Run it with [`Snapshot::aggregate`](crate::Snapshot::aggregate).
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub(crate) stages: Vec<Stage>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stage {
    Match(Filter),
    Group(Group),
    Sort(Vec<(DocPath, bool)>),
    Limit(usize),
    Skip(usize),
    Project { include: bool, paths: Vec<String> },
    Count(String),
    Unwind { path: DocPath, keep_empty: bool },
}

/// The output of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AggregateOutput {
    /// Each output document as JSON text.
    pub rows: Vec<String>,
    /// The plan of the query that read the collection.
    pub plan: Plan,
    /// What that query examined.
    pub stats: QueryStats,
}

fn err(at: &str, reason: impl Into<String>) -> Error {
    Error::InvalidFilter {
        at: at.to_owned(),
        reason: reason.into(),
    }
}

/// A whole number of at least `min`.
fn count_arg(v: &Value<'_>, at: &str, min: u64) -> Result<usize> {
    match v.as_u64() {
        Some(n) if n >= min && !matches!(v, Value::Float(_)) => {
            usize::try_from(n).map_err(|_| err(at, "is too large"))
        }
        _ => Err(err(at, format!("takes a whole number of at least {min}"))),
    }
}

/// `{"a": 1, "b": -1}`: paths and directions.
pub(crate) fn parse_sort(v: &Value<'_>, at: &str) -> Result<Vec<(DocPath, bool)>> {
    let Value::Object(o) = v else {
        return Err(err(
            at,
            "takes an object of paths and directions: {\"n\": -1}",
        ));
    };
    let mut out = Vec::new();
    for (k, dir) in o.iter_original() {
        let here = format!("{at}.{k}");
        let desc = match dir {
            Value::Int(1) => false,
            Value::Int(-1) => true,
            _ => return Err(err(&here, "takes 1 (ascending) or -1 (descending)")),
        };
        out.push((
            DocPath::parse(k).map_err(|e| err(&here, e.to_string()))?,
            desc,
        ));
    }
    if out.is_empty() {
        return Err(err(at, "takes at least one path"));
    }
    Ok(out)
}

impl Pipeline {
    /// Memory each `$group` may hold before its groups spill to temporary files through
    /// the table sorter (default [`DEFAULT_MEMORY_BUDGET_BYTES`](crate::query::DEFAULT_MEMORY_BUDGET_BYTES),
    /// 64 MiB; the sorter's floor is 64 KiB). The groups come back merged, in key order,
    /// with the answer of an unlimited budget; the output itself is returned in memory.
    #[must_use]
    pub fn memory_budget(mut self, bytes: usize) -> Pipeline {
        for stage in &mut self.stages {
            if let Stage::Group(g) = stage {
                g.budget = bytes;
            }
        }
        self
    }

    /// Parses a pipeline: a JSON array of stages.
    ///
    /// ```
    /// let p = stele::Pipeline::parse(r#"[{"$group": {"_id": "$license", "n": {"$sum": 1}}}]"#).unwrap();
    /// assert!(stele::Pipeline::parse(r#"[{"$lookup": {}}]"#).is_err());
    /// # drop(p);
    /// ```
    pub fn parse(json: &str) -> Result<Pipeline> {
        let bytes = json_document(json, "pipeline")?;
        let doc = Document::new(&bytes[..]).map_err(|e| err("$", e.to_string()))?;
        let Value::Array(a) = doc.root() else {
            return Err(err(
                "$",
                "a pipeline is a JSON array of stages: [{\"$match\": {...}}, ...]",
            ));
        };
        let mut stages = Vec::new();
        for (i, stage) in a.iter().enumerate() {
            let at = format!("$[{i}]");
            let Value::Object(o) = stage else {
                return Err(err(
                    &at,
                    "a stage is an object with one key: {\"$match\": {...}}",
                ));
            };
            let mut it = o.iter_original();
            let (Some((name, arg)), None) = (it.next(), it.next()) else {
                return Err(err(&at, "a stage is an object with exactly one key"));
            };
            let at = format!("{at}.{name}");
            stages.push(match name {
                "$match" => Stage::Match(parse_filter(arg, &at)?),
                "$group" => Stage::Group(Group::parse(arg, &at)?),
                "$sort" => Stage::Sort(parse_sort(&arg, &at)?),
                "$limit" => Stage::Limit(count_arg(&arg, &at, 1)?),
                "$skip" => Stage::Skip(count_arg(&arg, &at, 0)?),
                "$count" => match arg.as_str() {
                    Some(n) if !n.is_empty() && !n.starts_with('$') && !n.contains('.') => {
                        Stage::Count(n.into_owned())
                    }
                    _ => return Err(err(&at, "takes the output field's name: {\"$count\": \"n\"}")),
                },
                "$project" => {
                    let Value::Object(p) = arg else {
                        return Err(err(&at, "takes an object: {\"a\": 1, \"b.c\": 1}"));
                    };
                    let mut include = None;
                    let mut paths = Vec::new();
                    let mut keep_id = true;
                    for (k, v) in p.iter_original() {
                        let here = format!("{at}.{k}");
                        let keep = match v {
                            Value::Bool(b) => b,
                            Value::Int(1) => true,
                            Value::Int(0) => false,
                            _ => return Err(err(&here, "takes 1 (keep) or 0 (drop); computed fields are not supported")),
                        };
                        if k == "_id" {
                            keep_id = keep;
                            continue;
                        }
                        if include.is_some_and(|i| i != keep) {
                            return Err(err(&here, "a projection either keeps paths (1) or drops them (0), not both"));
                        }
                        DocPath::parse(k).map_err(|e| err(&here, e.to_string()))?;
                        include = Some(keep);
                        paths.push(k.to_owned());
                    }
                    let include = include.unwrap_or(keep_id);
                    match (include, keep_id) {
                        (true, true) => paths.push("_id".to_owned()),
                        (false, false) => paths.push("_id".to_owned()),
                        _ => {}
                    }
                    Stage::Project { include, paths }
                }
                "$unwind" => {
                    let (path, keep_empty) = match arg {
                        Value::String(s) => (s.to_cow().into_owned(), false),
                        Value::Object(u) => {
                            let path = u.get("path").and_then(|p| p.as_str()).map(|p| p.into_owned());
                            let keep = u
                                .get("preserveNullAndEmptyArrays")
                                .and_then(|k| k.as_bool())
                                .unwrap_or(false);
                            (path.unwrap_or_default(), keep)
                        }
                        _ => (String::new(), false),
                    };
                    let Some(p) = path.strip_prefix('$') else {
                        return Err(err(&at, "takes a field path: {\"$unwind\": \"$tags\"}"));
                    };
                    Stage::Unwind {
                        path: DocPath::parse(p).map_err(|e| err(&at, e.to_string()))?,
                        keep_empty,
                    }
                }
                other => {
                    return Err(err(
                        &at,
                        format!("{other} is not a supported stage; use $match $group $sort $limit $skip $project $count $unwind"),
                    ));
                }
            });
        }
        Ok(Pipeline { stages })
    }
}
