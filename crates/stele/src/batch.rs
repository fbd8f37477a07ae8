//! Batches: operations across collections committed all or nothing.

use crate::error::{Error, Result};
use crate::wal::LoggedOp;
use stele_doc::{Document, DocumentWriter, WriteOptions};

/// Longest document id, in bytes.
pub const MAX_ID_BYTES: usize = 1024;

/// Checks a collection name: 1 to 100 of `A-Z a-z 0-9 _ - .`, not starting with `.` or `_`
/// (names starting with `_` are reserved).
pub fn check_collection_name(name: &str) -> Result<()> {
    let ok = (1..=100).contains(&name.len())
        && !name.starts_with(['.', '_'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidCollectionName {
            name: name.chars().take(120).collect(),
        })
    }
}

pub(crate) fn check_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_ID_BYTES {
        "it is longer than 1024 bytes"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId {
        id: id.chars().take(80).collect(),
        reason,
    })
}

/// How the database turns JSON text into documents ([`Batch::put_json`], imports, the
/// Python package): [`WriteOptions::default`] without LZ4 compression of long strings. A
/// compressed collection's zstd shrinks long strings far better when they are stored plain:
/// LZ4-compressed strings made packed blocks of `mongodb-samples/books` 30 % bigger and of
/// `debian-packages` 5 % (`docs/benchmarks.md`, "Document store"); a collection with
/// compression off stores documents as they are, which is what turning it off asks for.
/// Documents given as bytes ([`Batch::put_document`]) are stored as they are.
pub fn write_options() -> WriteOptions {
    WriteOptions::default().compress_strings(None)
}

/// Puts and deletes across collections, applied by [`Database::commit`](crate::Database::commit)
/// all or nothing. Documents are converted and checked when added, so a bad one is
/// reported here, before anything is written.
#[derive(Debug)]
pub struct Batch {
    ops: Vec<LoggedOp>,
    writer: DocumentWriter,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    pub(crate) fn new() -> Self {
        Batch {
            ops: Vec::new(),
            writer: DocumentWriter::with_options(write_options()),
        }
    }

    /// Inserts or replaces document `id` of `collection` with JSON text (one value, usually
    /// an object). The collection is created on first write.
    pub fn put_json(&mut self, collection: &str, id: &str, json: &[u8]) -> Result<()> {
        check_collection_name(collection)?;
        check_id(id)?;
        let doc = self.writer.from_json(json)?;
        self.push(collection, id, Some(&doc));
        Ok(())
    }

    /// Inserts or replaces with a document already in Stele's binary format; the bytes are
    /// validated.
    pub fn put_document(&mut self, collection: &str, id: &str, doc: &[u8]) -> Result<()> {
        check_collection_name(collection)?;
        check_id(id)?;
        Document::new(doc)?;
        self.push(collection, id, Some(doc));
        Ok(())
    }

    /// Deletes document `id` of `collection` (nothing happens if it does not exist).
    pub fn delete(&mut self, collection: &str, id: &str) -> Result<()> {
        check_collection_name(collection)?;
        check_id(id)?;
        self.push(collection, id, None);
        Ok(())
    }

    /// Puts a document this crate's writer produced into any collection, internal ones
    /// included (no name check, no second validation).
    pub(crate) fn put_trusted(&mut self, collection: &str, id: &str, doc: &[u8]) {
        self.push(collection, id, Some(doc));
    }

    fn push(&mut self, collection: &str, id: &str, doc: Option<&[u8]>) {
        let (collection, id) = (collection.to_owned(), id.as_bytes().to_vec());
        self.ops.push(match doc {
            Some(doc) => LoggedOp::Put {
                collection,
                id,
                value: crate::stored::encode(doc),
            },
            None => LoggedOp::Delete { collection, id },
        });
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True if the batch has no operations.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub(crate) fn into_ops(self) -> Vec<LoggedOp> {
        self.ops
    }
}
