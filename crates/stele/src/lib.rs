//! Stele's document store: an embedded database of JSON documents.
//!
//! A [`Database`] is a folder. It holds collections of documents by string id, stored in
//! Stele's binary document format (`stele-doc`) inside durable maps (`stele-durable`).
//! Writes go through a checksummed write-ahead log with group commit (many writers, one
//! fsync); [`Database::commit`] returns once a batch is on disk. Reads go through a
//! [`Snapshot`]: a consistent view of every collection that writers never disturb.
//! One process writes a database; any number of other processes read it beside that
//! writer through [`Database::open_read_only`] ([`ReadOnlyDatabase`]), catching up with
//! [`ReadOnlyDatabase::refresh`].
//!
//! Layout of the folder and of every file: `docs/FORMAT.md` ("Document store").

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod backup;
mod batch;
mod bytes;
mod clock;
mod collection;
pub mod compress;
mod cores;
mod db;
mod dicts;
mod disk;
mod error;
pub mod export;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod id_kind;
mod ids;
pub mod import;
mod index;
mod internal;
mod json_text;
mod manifest;
mod pack;
pub mod query;
mod snapshot;
mod state;
mod stored;
mod wal;

pub use batch::{Batch, MAX_ID_BYTES, PARALLEL_JSON_BYTES, write_options};
pub use db::{Database, DatabaseOptions, ReadOnlyDatabase};
pub use disk::DiskUsage;
pub use error::{CREATE_HERE_FIX, Error, Result};
pub use ids::{IdKind, parse_int_id};
pub use index::{FieldPath, IndexDef, IndexStats};
pub use internal::check_collection_name;
pub use pack::cache::BlockCacheStats;
#[doc(hidden)]
pub use pack::forms::PackedForms;
pub use query::{
    Access, AggregateOutput, Candidate, CountOutput, DocPath, Filter, Pipeline, Plan, Query,
    QueryOutput, QueryStats, Row, RowStream,
};
pub use snapshot::{CollectionStats, CompressionStats, Doc, Snapshot};
pub use wal::MAX_RECORD_BYTES;
