//! Stele's document store: an embedded database of JSON documents.
//!
//! A [`Database`] is a folder. It holds collections of documents by string id, stored in
//! Stele's binary document format (`stele-doc`) inside durable maps (`stele-durable`),
//! compressed per collection with zstd dictionaries trained from the collection's own
//! documents. Writes go through a checksummed write-ahead log with group commit; reads see
//! a consistent snapshot of every collection.

pub mod compress;
mod error;

pub use error::{Error, Result};
