//! Queries: filters on any number of fields in MongoDB's JSON form, sorts, skip and limit,
//! projections, counts, distinct values and aggregation pipelines, planned over the
//! collection's indexes.
//!
//! The stages mirror the folders: [`filter`] (what a filter is, its parsing and its test of
//! one document), [`plan`] (which index, which key ranges, what is left to check),
//! [`execute`] (index and full scans, sorting, projection), [`aggregate`] (pipelines).
//!
//! ```no_run
//! # fn main() -> stele::Result<()> {
//! # let db = stele::Database::open("/tmp/q")?;
//! use stele::{Filter, Query};
//! let q = Query::new("orders")
//!     .filter(Filter::parse(r#"{"customer": "ada", "total": {"$gte": 10}}"#)?)
//!     .sort("date", true)
//!     .limit(20);
//! let out = db.snapshot().query(&q)?;
//! println!("{}", out.plan);
//! for row in out.rows { println!("{} {}", row.id, row.json); }
//! // The same rows as they are found (see `stream`): dropping the stream stops the query.
//! for row in db.snapshot().query_iter(&q)?.take(5) { println!("{}", row?.id); }
//! # Ok(()) }
//! ```
//!
//! # Operators
//!
//! | operator | holds when |
//! |---|---|
//! | `{"a": v}`, `$eq` | a value (or an array element) equals `v`; `null` also matches a missing field |
//! | `$ne`, `$nin` | no value equals (is in the list); a missing field matches |
//! | `$gt $gte $lt $lte` | a value of the operand's type compares so |
//! | `$in` | a value equals one of the list |
//! | `$exists` | the field is there (`true`) or not (`false`) |
//! | `$type` | a value has the type: `null bool number integer string object array` |
//! | `$size` | the field is an array of that many elements |
//! | `$all` | every value of the list is among the field's values |
//! | `$elemMatch` | some element of the array matches (a filter on objects, or operators) |
//! | `$not` | the operators inside do not all hold |
//! | `$prefix` | a string value starts with the text |
//! | `$and $or $nor` | all / any / none of the filters in the list |
//!
//! Paths are dotted (`a.b`, `items.sku`, `tags.0`, see [`path`]); `_id` is the document id.
//! Values order as the index encoding does: null < false < true < numbers < strings <
//! objects < arrays; numbers by exact value.
//!
//! # Sorting
//!
//! By one or more paths, each ascending or descending. A document's key for a path is its
//! smallest value ascending and its largest descending (an array's elements are its
//! values); a document without the field sorts first ascending and last descending.
//! Ties keep id order.

pub mod aggregate;
pub(crate) mod collect;
pub(crate) mod entries;
pub(crate) mod execute;
pub(crate) mod explain;
pub mod filter;
pub(crate) mod int_ids;
pub(crate) mod keys;
pub(crate) mod plan;
pub(crate) mod project;
pub(crate) mod run;
pub(crate) mod scan;
pub(crate) mod sort;
pub(crate) mod spill;
pub mod stream;

pub use crate::index::path;
pub use aggregate::{AggregateOutput, Pipeline};
pub use explain::{Access, Candidate, Plan};
pub use filter::Filter;
pub use path::DocPath;
pub use stream::RowStream;

use crate::error::{Error, Result};
use std::ops::Bound;

/// The memory a sort without a limit or a `$group` holds before it spills (64 MiB): see
/// [`Query::memory_budget`] and [`Pipeline::memory_budget`].
pub const DEFAULT_MEMORY_BUDGET_BYTES: usize = 64 << 20;
use std::time::Duration;

/// A query over one collection: a filter, a sort, skip, limit and projection. Build it with
/// the methods, run it with [`Snapshot::query`](crate::Snapshot::query) (rows),
/// [`Snapshot::count_matching`](crate::Snapshot::count_matching) or
/// [`Snapshot::explain`](crate::Snapshot::explain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub(crate) collection: String,
    pub(crate) filter: Filter,
    /// Set by a shorthand (`eq`, `range`, `prefix`) whose value did not parse: reported
    /// when the query runs, since the builder methods do not fail.
    pub(crate) error: Option<String>,
    pub(crate) sort: Vec<(DocPath, bool)>,
    pub(crate) skip: usize,
    pub(crate) limit: Option<usize>,
    pub(crate) projection: Option<project::Projection>,
    pub(crate) time_budget: Option<Duration>,
    pub(crate) memory_budget: usize,
}

/// One result: the document id and its JSON (whole, or the projection).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    /// The document id.
    pub id: String,
    /// The document, or its projection, as JSON text.
    pub json: String,
}

/// What a query did, counted as it ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueryStats {
    /// Index entries read.
    pub keys_examined: u64,
    /// Documents read (and tested against the filter).
    pub docs_examined: u64,
    /// Rows returned (or counted).
    pub rows: u64,
    /// Wall time, in microseconds.
    pub elapsed_us: u64,
    /// Bytes written to temporary files by a sort or a group past its memory budget.
    pub spilled_bytes: u64,
}

/// The results of a query, the plan that ran and what it examined.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueryOutput {
    /// The plan that ran.
    pub plan: Plan,
    /// The rows, in the order asked for (id order without a sort).
    pub rows: Vec<Row>,
    /// What it examined.
    pub stats: QueryStats,
}

/// A count and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CountOutput {
    /// The documents matching (after skip and limit, when given).
    pub count: u64,
    /// The plan that ran.
    pub plan: Plan,
    /// What it examined.
    pub stats: QueryStats,
}

impl Query {
    /// A query returning every document of `collection`, in id order.
    pub fn new(collection: &str) -> Query {
        Query {
            collection: collection.to_owned(),
            filter: Filter::all(),
            error: None,
            sort: Vec::new(),
            skip: 0,
            limit: None,
            projection: None,
            time_budget: None,
            memory_budget: DEFAULT_MEMORY_BUDGET_BYTES,
        }
    }

    /// Keeps the documents passing `filter` (and any filter given before).
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Query {
        self.filter = if self.filter.is_all() {
            filter
        } else {
            Filter::and(vec![self.filter, filter])
        };
        self
    }

    /// Shorthand: documents whose `field` equals the JSON value `json` (`"\"London\""`, `42`).
    #[must_use]
    pub fn eq(self, field: &str, json: &str) -> Query {
        self.shorthand(field, &format!("{{\"$eq\": {json}}}"), json)
    }

    /// Shorthand: documents whose `field` lies between two JSON values.
    #[must_use]
    pub fn range(self, field: &str, lo: Bound<&str>, hi: Bound<&str>) -> Query {
        let mut ops = Vec::new();
        match lo {
            Bound::Included(v) => ops.push(format!("\"$gte\": {v}")),
            Bound::Excluded(v) => ops.push(format!("\"$gt\": {v}")),
            Bound::Unbounded => {}
        }
        match hi {
            Bound::Included(v) => ops.push(format!("\"$lte\": {v}")),
            Bound::Excluded(v) => ops.push(format!("\"$lt\": {v}")),
            Bound::Unbounded => {}
        }
        if ops.is_empty() {
            return self;
        }
        let text = format!("{{{}}}", ops.join(", "));
        self.shorthand(field, &text, &text)
    }

    /// Shorthand: documents whose `field` is a string starting with `prefix`.
    #[must_use]
    pub fn prefix(self, field: &str, prefix: &str) -> Query {
        let mut quoted = Vec::new();
        project::json_string(prefix, &mut quoted);
        let quoted = String::from_utf8_lossy(&quoted).into_owned();
        self.shorthand(field, &format!("{{\"$prefix\": {quoted}}}"), &quoted)
    }

    fn shorthand(mut self, field: &str, ops: &str, value: &str) -> Query {
        let mut field_json = Vec::new();
        project::json_string(field, &mut field_json);
        let text = format!("{{{}: {ops}}}", String::from_utf8_lossy(&field_json));
        match Filter::parse(&text) {
            Ok(f) => self.filter(f),
            Err(e) => {
                self.error.get_or_insert_with(|| {
                    format!(
                        "the value for {field} must be JSON (a string needs quotes: '\"text\"'), got {value}: {e}"
                    )
                });
                self
            }
        }
    }

    /// Sorts by `path` (after any sort given before), descending if asked.
    #[must_use]
    pub fn sort(mut self, path: &str, descending: bool) -> Query {
        match DocPath::parse(path) {
            Ok(p) => self.sort.push((p, descending)),
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
        self
    }

    /// The same as [`sort`](Self::sort) (the name of earlier versions).
    #[must_use]
    pub fn order_by(self, field: &str, descending: bool) -> Query {
        self.sort(field, descending)
    }

    /// Skips the first `n` rows.
    #[must_use]
    pub fn skip(mut self, n: usize) -> Query {
        self.skip = n;
        self
    }

    /// Returns at most `n` rows; `n` must be at least 1 (0 is rejected when the query runs,
    /// as it can only be a mistake).
    #[must_use]
    pub fn limit(mut self, n: usize) -> Query {
        self.limit = Some(n);
        self
    }

    /// Returns only these paths of each document, nested as in the document
    /// (`["a.b", "c"]` gives `{"a": {"b": ..}, "c": ..}`).
    #[must_use]
    pub fn select(mut self, paths: &[&str]) -> Query {
        match project::Projection::include(paths) {
            Ok(p) => self.projection = Some(p),
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
        self
    }

    /// A projection in MongoDB's JSON form: `{"a": 1, "b.c": 1}` keeps those paths,
    /// `{"a": 0}` drops them (the two cannot mix).
    pub fn projection_json(mut self, json: &str) -> Result<Query> {
        self.projection = Some(project::Projection::parse(json)?);
        Ok(self)
    }

    /// Stops the query with [`Error::QueryTimeout`] once it has run this long (none by
    /// default). Checked between documents, so the overrun is one document's work.
    #[must_use]
    pub fn time_budget(mut self, budget: Duration) -> Query {
        self.time_budget = Some(budget);
        self
    }

    /// Memory a sort without a limit may hold in a streamed query
    /// ([`Snapshot::query_iter`](crate::Snapshot::query_iter)) before its rows spill to
    /// temporary files through the table sorter (default
    /// [`DEFAULT_MEMORY_BUDGET_BYTES`], 64 MiB; the sorter's floor is 64 KiB). The rows of
    /// [`Snapshot::query`](crate::Snapshot::query) are returned together, so it keeps them
    /// in memory whatever the budget.
    #[must_use]
    pub fn memory_budget(mut self, bytes: usize) -> Query {
        self.memory_budget = bytes;
        self
    }

    /// The collection queried.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The same query on another collection.
    #[must_use]
    pub fn on(mut self, collection: &str) -> Query {
        self.collection = collection.to_owned();
        self
    }

    /// The error a shorthand or path recorded, or a limit of 0.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(reason) = &self.error {
            return Err(Error::InvalidQuery {
                reason: reason.clone(),
            });
        }
        if self.limit == Some(0) {
            return Err(Error::InvalidQuery {
                reason: "a limit of 0 returns nothing: give a limit of at least 1, or none"
                    .to_owned(),
            });
        }
        Ok(())
    }
}
