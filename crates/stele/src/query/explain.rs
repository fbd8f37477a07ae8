//! What a plan says: the access path, and the indexes considered with why each was or
//! was not chosen ([`Plan`], for `explain` and people). The planner (`plan.rs`) records
//! its reasons as [`Why`]; they become text only when [`Plan::candidates`] is asked.

use crate::index::IndexDef;
use std::fmt;
use std::sync::Arc;

/// One index considered, and why it was or was not chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Candidate {
    /// The index name.
    pub index: String,
    /// Whether the plan uses it.
    pub chosen: bool,
    /// What it offered, or why it could not serve.
    pub reason: String,
}

/// How a query reads the collection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Every document, in id order.
    FullScan,
    /// The documents with these ids (`_id` equality or `$in`).
    Ids(Vec<String>),
    /// Documents with ids in a range (`_id` ranges and prefixes).
    IdRange {
        /// Lowest id, inclusive.
        lo: Option<String>,
        /// Highest id.
        hi: Option<(String, bool)>,
    },
    /// Entries of one index in key ranges.
    Index {
        /// The index.
        index: String,
        /// Number of key ranges read.
        ranges: usize,
        /// Read from the high end (a descending sort over an ascending index, or the reverse).
        reverse: bool,
        /// Counted from the index keys alone, no document read.
        covered: bool,
    },
    /// Several accesses whose ids are merged (one per `$or` branch).
    Union(Vec<Access>),
}

/// The plan of a query: its access path, whether rows are sorted after reading, and the
/// candidates considered ([`Plan::candidates`]). [`Display`](fmt::Display) prints it for
/// people.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plan {
    /// How documents are found.
    pub access: Access,
    /// Rows are sorted in memory (or through the sorter) after reading.
    pub sorted_in_memory: bool,
    /// The indexes considered, as the planner left them (no text yet).
    pub(crate) considered: Vec<Considered>,
}

impl Plan {
    /// The indexes considered, and why each was or was not chosen. The reasons are written
    /// here, when asked: a query that no one explains does not format them (they were a
    /// few percent of a small indexed query).
    pub fn candidates(&self) -> Vec<Candidate> {
        self.considered
            .iter()
            .map(|c| Candidate {
                index: c.def.name.clone(),
                chosen: c.chosen,
                reason: c.reason(),
            })
            .collect()
    }

    /// The index the plan reads, if one (the first, for a union).
    pub fn index(&self) -> Option<&str> {
        fn first(a: &Access) -> Option<&str> {
            match a {
                Access::Index { index, .. } => Some(index),
                Access::Union(parts) => parts.iter().find_map(first),
                _ => None,
            }
        }
        first(&self.access)
    }

    /// Whether the plan reads every document.
    pub fn is_full_scan(&self) -> bool {
        matches!(self.access, Access::FullScan)
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::FullScan => write!(f, "full scan"),
            Access::Ids(ids) => write!(f, "id lookup of {} id(s)", ids.len()),
            Access::IdRange { lo, hi } => {
                write!(f, "id range")?;
                if let Some(lo) = lo {
                    write!(f, " from {lo:?}")?;
                }
                if let Some((hi, incl)) = hi {
                    write!(f, " to {hi:?}{}", if *incl { " inclusive" } else { "" })?;
                }
                Ok(())
            }
            Access::Index {
                index,
                ranges,
                reverse,
                covered,
            } => {
                write!(f, "index scan of {index:?} ({ranges} key range(s)")?;
                if *reverse {
                    write!(f, ", reversed")?;
                }
                if *covered {
                    write!(f, ", covered: no document read")?;
                }
                write!(f, ")")
            }
            Access::Union(parts) => {
                write!(f, "union of ")?;
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        write!(f, " + ")?;
                    }
                    write!(f, "[{p}]")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.access)?;
        if self.sorted_in_memory {
            write!(f, ", then sorted")?;
        }
        Ok(())
    }
}

/// An index the planner considered, and why it was or was not chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Considered {
    pub def: Arc<IndexDef>,
    pub chosen: bool,
    pub why: Why,
    /// The filter's `$or` branches are read through indexes (this index serves none of the
    /// filter's top level).
    pub or_branches: bool,
}

/// Why an index could or could not serve a query (see [`Considered::reason`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// The filter names documents by `_id`: the collection's own order serves it.
    ById,
    /// Made by an earlier version, whose keys do not follow the query rules.
    OldKeys,
    /// No condition on its first field; `sort`: the query has a sort it does not serve.
    NoFirstField { sort: bool },
    /// What it offered.
    Offered {
        /// Leading fields narrowing the scan.
        bounded: usize,
        /// Of them, fixed to one value.
        eq_fields: usize,
        /// The last of them a range.
        range: bool,
        /// It serves the query's sort.
        serves_sort: bool,
        /// The sorted path it does not serve the sort over: the filter tests it, and a
        /// document has held an array there (`crate::index::arrays`).
        sort_over_arrays: Option<String>,
        /// Key ranges read.
        ranges: usize,
    },
}

impl Considered {
    /// The reason as people read it.
    pub(crate) fn reason(&self) -> String {
        let mut reason = match &self.why {
            Why::ById => "the filter names documents by _id".to_owned(),
            Why::OldKeys => "made by an earlier version, its keys do not follow the query rules: drop it and create it again".to_owned(),
            Why::NoFirstField { sort } => format!(
                "no condition on its first field ({}){}",
                self.def.doc_paths().first().map_or("", |p| p.as_str()),
                if *sort {
                    " and it does not serve the sort"
                } else {
                    ""
                }
            ),
            Why::Offered {
                bounded,
                eq_fields,
                range,
                serves_sort,
                sort_over_arrays,
                ranges,
            } => format!(
                "{bounded} field(s) narrowing the scan ({eq_fields} to one value{}){}, {ranges} key range(s)",
                if *range { ", then a range" } else { "" },
                match sort_over_arrays {
                    _ if *serves_sort => ", serves the sort".to_owned(),
                    Some(p) => format!(
                        ", does not serve the sort: a document has held an array at {p:?}, which the filter tests"
                    ),
                    None => String::new(),
                },
            ),
        };
        if matches!(self.why, Why::Offered { .. }) && !self.chosen {
            reason.push_str("; another offered more");
        }
        if self.or_branches {
            reason.push_str("; the $or branches are read through indexes");
        }
        reason
    }
}
