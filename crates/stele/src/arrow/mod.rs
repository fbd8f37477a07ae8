//! Collections as Arrow record batches (feature `arrow`): [`Snapshot::scan_arrow`] streams a
//! collection's documents, or the ones a filter keeps, as batches of at most
//! [`ArrowOptions::batch_rows`] rows, for DataFusion, Polars, DuckDB or pyarrow to read
//! without JSON in between. Memory is bounded by the batch, not the collection.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use arrow_array::RecordBatchReader;
//! use stele::arrow::ArrowOptions;
//! let db = stele::Database::open("/tmp/db")?;
//! let snap = db.snapshot();
//! let opts = ArrowOptions::new().fields(&["_id", "name", "address.city"]);
//! let reader = snap.scan_arrow("users", opts)?;
//! println!("{}", reader.schema());
//! for batch in reader {
//!     println!("{} rows", batch?.num_rows());
//! }
//! # Ok(()) }
//! ```
//!
//! # Columns
//!
//! Without [`fields`](ArrowOptions::fields): `_id` (the document id, never null) first, then
//! one column per property of the documents' root objects, in the order first seen. A root
//! property that is itself named `_id` comes out as the column `doc._id`. With `fields`:
//! one column per path given, named by the path (`address.city`), `_id` where named; only
//! those paths are read from each document (its other fields are not decoded).
//!
//! # Types inferred
//!
//! From the documents the filter keeps (all of them by default: one pass more, which reads
//! only the named fields when there are; or the first
//! [`sample_rows`](ArrowOptions::sample_rows)), per place in the documents:
//!
//! | values seen (nulls aside) | column type |
//! |---|---|
//! | booleans | `Boolean` |
//! | integers in 64 bits | `Int64` |
//! | numbers with fractions or exponents, alone or with integers | `Float64` |
//! | strings | `Utf8` |
//! | objects | `Struct` of the keys seen, in the order first seen |
//! | arrays | `List` of the type inferred over all their elements |
//! | mixed types, integers beyond 64 bits, only nulls, objects always empty or with more than 1,000 distinct keys | `Utf8` holding the value's JSON text, marked with the `arrow.json` extension type |
//!
//! Every column is nullable; a missing field and a `null` both read as null. A value met
//! after the sample that does not fit its column (a string in an `Int64` column, a key a
//! struct does not have) is an [`Error::ArrowMisfit`](crate::Error::ArrowMisfit) naming the
//! document and the field, or a null with [`misfits_as_null`](ArrowOptions::misfits_as_null)
//! (keys a struct does not have are then left out).
//!
//! # Given schemas
//!
//! [`schema`](ArrowOptions::schema) fixes the columns instead: each field's name is a path
//! as in `fields` (`_id` the id), its type one of `Boolean`, `Int64`, `Float64` (any number,
//! rounded), `Utf8` (strings; with the `arrow.json` extension, any value as JSON text),
//! `Struct`, `List` and `Null`, nested as deep as needed.

mod build;
mod docs;
mod import;
mod import_text;
mod kind;
mod parallel;
#[cfg(feature = "parquet")]
mod parquet;
#[cfg(feature = "parquet")]
mod parquet_file;
#[cfg(feature = "parquet")]
mod parquet_groups;
#[cfg(feature = "parquet")]
mod parquet_import;
mod reader;
mod row_writer;
mod rows;
mod state;

pub use import::{SLICE_ROWS, import_arrow};
#[cfg(feature = "parquet")]
pub use parquet::PARQUET_ROW_GROUP_ROWS;
#[cfg(feature = "parquet")]
pub use parquet_import::import_parquet_file;
pub use state::ArrowReader;

use crate::error::{Error, Result};
use crate::query::Filter;
use crate::snapshot::Snapshot;
use arrow_schema::SchemaRef;

/// Rows per batch unless told: large enough that per-batch costs vanish, small enough that
/// a batch of wide documents stays within tens of MB.
pub const DEFAULT_BATCH_ROWS: usize = 65_536;

/// Documents read to infer a schema unless told: all of them, so that an inferred schema
/// fits every document (a pass over a collection of 50 MB costs about 0.1 s; see
/// `docs/notes/arrow.md`).
pub const DEFAULT_SAMPLE_ROWS: usize = usize::MAX;

/// What to read and how: built with the methods, used by [`Snapshot::scan_arrow`].
#[derive(Debug, Clone)]
pub struct ArrowOptions {
    pub(crate) fields: Option<Vec<String>>,
    pub(crate) filter: Filter,
    pub(crate) schema: Option<SchemaRef>,
    pub(crate) batch_rows: usize,
    pub(crate) sample_rows: usize,
    pub(crate) misfits_as_null: bool,
    pub(crate) nested_as_json: bool,
    pub(crate) skip: usize,
    pub(crate) limit: usize,
}

impl Default for ArrowOptions {
    fn default() -> Self {
        ArrowOptions::new()
    }
}

impl ArrowOptions {
    /// Every document, every field, a schema inferred, batches of [`DEFAULT_BATCH_ROWS`].
    pub fn new() -> ArrowOptions {
        ArrowOptions {
            fields: None,
            filter: Filter::all(),
            schema: None,
            batch_rows: DEFAULT_BATCH_ROWS,
            sample_rows: DEFAULT_SAMPLE_ROWS,
            misfits_as_null: false,
            nested_as_json: false,
            skip: 0,
            limit: usize::MAX,
        }
    }

    /// Only these paths (`a`, `a.b`, `tags.0`; `_id` for the id), one column each.
    #[must_use]
    pub fn fields<S: AsRef<str>>(mut self, paths: &[S]) -> ArrowOptions {
        self.fields = Some(paths.iter().map(|p| p.as_ref().to_owned()).collect());
        self
    }

    /// Only the documents `filter` keeps (the query engine's filters).
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> ArrowOptions {
        self.filter = filter;
        self
    }

    /// These columns and types instead of inferred ones (see the module documentation).
    #[must_use]
    pub fn schema(mut self, schema: SchemaRef) -> ArrowOptions {
        self.schema = Some(schema);
        self
    }

    /// At most `rows` rows per batch (at least 1).
    #[must_use]
    pub fn batch_rows(mut self, rows: usize) -> ArrowOptions {
        self.batch_rows = rows.max(1);
        self
    }

    /// Infers the schema from the first `rows` documents kept (by default all of them,
    /// which reads the collection twice; a sample is faster, and a value met after it that
    /// does not fit is an error, or a null with [`misfits_as_null`](Self::misfits_as_null)).
    #[must_use]
    pub fn sample_rows(mut self, rows: usize) -> ArrowOptions {
        self.sample_rows = rows.max(1);
        self
    }

    /// Values that do not fit their column read as nulls instead of ending the stream with
    /// an error.
    #[must_use]
    pub fn misfits_as_null(mut self, yes: bool) -> ArrowOptions {
        self.misfits_as_null = yes;
        self
    }
}

impl ArrowOptions {
    /// Objects and arrays inferred as JSON text instead of structs and lists: flat columns,
    /// for writers of flat formats (CSV). A given schema is kept as it is.
    #[must_use]
    pub fn nested_as_json(mut self, yes: bool) -> ArrowOptions {
        self.nested_as_json = yes;
        self
    }
}

impl ArrowOptions {
    /// The documents of `query` (its filter, skip and limit), for `find` results read as
    /// Arrow; the query's collection is the one to scan. A sort or a projection is refused
    /// with the way to say it here: sort in the reader (DuckDB `ORDER BY`, Polars `sort`),
    /// name the columns with [`fields`](Self::fields).
    pub fn for_query(query: &crate::Query) -> Result<ArrowOptions> {
        query.check()?;
        let refuse = |what: &str| {
            Err(Error::InvalidQuery {
                reason: format!(
                    "{what} is not applied to Arrow streams: {}",
                    match what {
                        "a sort" =>
                            "Snapshot::query_arrow streams a sorted query's rows, or sort in the reader (DuckDB ORDER BY, Polars sort)",
                        _ =>
                            "Snapshot::query_arrow streams projected rows, or name the columns to read (fields)",
                    }
                ),
            })
        };
        if !query.sort.is_empty() {
            return refuse("a sort");
        }
        if query.projection.is_some() {
            return refuse("a projection");
        }
        Ok(ArrowOptions::new().documents_of(query))
    }

    /// These options reading the documents `query` keeps: its filter, skip and limit.
    pub(crate) fn documents_of(mut self, query: &crate::Query) -> ArrowOptions {
        self.filter = query.filter.clone();
        self.skip = query.skip;
        self.limit = query.limit.unwrap_or(usize::MAX);
        self
    }
}

impl Snapshot {
    /// Streams `collection` as Arrow record batches (see [`crate::arrow`]). The schema is
    /// fixed (given, or inferred from a sample) before the first batch; the reader owns a
    /// clone of the snapshot, so it sees this snapshot's documents whatever is written
    /// since, and reading it twice means calling this twice.
    pub fn scan_arrow(&self, collection: &str, options: ArrowOptions) -> Result<ArrowReader> {
        check_named(&options)?;
        ArrowReader::new(self.clone(), collection, options)
    }
}

/// `fields` and `schema` together must name the same columns.
fn check_named(options: &ArrowOptions) -> Result<()> {
    if let (Some(fields), Some(schema)) = (&options.fields, &options.schema) {
        let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
        if names.len() != fields.len() || names.iter().zip(fields).any(|(n, f)| *n != f) {
            return Err(Error::ArrowSchema {
                field: "(all)".to_owned(),
                reason: format!(
                    "the schema's fields {names:?} are not the fields asked for {fields:?}: give one or the other (a schema's names are the paths read)"
                ),
            });
        }
    }
    Ok(())
}
