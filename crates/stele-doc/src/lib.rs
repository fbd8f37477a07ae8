//! # stele-doc: JSON documents you read without parsing
//!
//! A document is one self-contained block of bytes written from JSON text (or Rust values, or any
//! `serde::Serialize`) in a single forward pass. Reading it needs no parsing: every object keeps a
//! property index sorted by name (binary search), arrays index in O(1), each container stores
//! offsets in the narrowest width that fits, and property names are stored once per document.
//! Every JSON value round-trips exactly: integers over the whole `i64` and `u64` ranges, floats to the
//! same `f64` and the same text, any other number as its exact decimal text, and key order as
//! written (or sorted, if asked). Long strings are LZ4-compressed when that pays.
//!
//! ```
//! use stele_doc::{Document, JsonOptions};
//!
//! let bytes = stele_doc::from_json(br#"{"name":"Ada","born":1815,"langs":["en","fr"]}"#)?;
//! let doc = Document::new(&bytes)?;                     // validates untrusted bytes
//! assert_eq!(doc.get("born").and_then(|v| v.as_i64()), Some(1815));
//! assert_eq!(doc.path("langs[1]")?.unwrap().as_str().as_deref(), Some("fr"));
//! assert_eq!(doc.to_json(), r#"{"name":"Ada","born":1815,"langs":["en","fr"]}"#);
//! assert_eq!(
//!     doc.to_json_with(&JsonOptions::new().sorted_keys(true)),
//!     r#"{"born":1815,"langs":["en","fr"],"name":"Ada"}"#
//! );
//! # Ok::<(), stele_doc::Error>(())
//! ```
//!
//! The byte layout is specified in `docs/FORMAT.md`.

#![warn(missing_docs)]

mod error;
pub mod format;
mod inspect;
pub mod lz4;
mod output;
mod reader;
pub mod serde;
pub mod stream;
mod validate;
mod writer;

pub use crate::serde::{from_document, from_value, to_document, to_document_with};
pub use error::{DUPLICATE_KEY_FIX, Error, MAX_DEPTH_FIX, Result};
pub use inspect::{Layout as DocLayout, inspect};
pub use output::JsonOptions;
pub use reader::{
    Array, ArrayIter, CachedKey, CachedPath, Document, Object, ObjectIter, Path, PathSegment,
    PathSet, ScaledDecimal, Str, Value, prefetch_document,
};
pub use validate::validate;
pub use writer::{
    DEFAULT_COMPRESS_MIN_BYTES, DEFAULT_MAX_DEPTH, DocumentWriter, DuplicateKeys, KeyOrder,
    WriteOptions,
};

/// Converts JSON text to a document with default options.
///
/// For many documents, keep one [`DocumentWriter`] and call [`DocumentWriter::from_json`]: it
/// reuses its buffers.
pub fn from_json(json: &[u8]) -> Result<Vec<u8>> {
    DocumentWriter::new().from_json(json)
}

/// Converts JSON text to a document with the given options.
pub fn from_json_with(json: &[u8], options: WriteOptions) -> Result<Vec<u8>> {
    DocumentWriter::with_options(options).from_json(json)
}

/// The byte scanner JSON conversion uses on this CPU (for benchmark reports), e.g.
/// `"AVX2 (32 bytes)"`; chosen at run time, so a portable build gets the SIMD one too.
pub fn json_scanner() -> &'static str {
    writer::scan::Level::detect().name()
}
