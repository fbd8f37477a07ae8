//! Log records: the operations of a batch, encoded into a record's payload and decoded
//! from it (the layout is in the [`wal`](super) module's documentation). Decoding returns
//! `None` for anything that does not read: the caller reports it with its segment and
//! offset.

use crate::bytes::{Reader, put_bytes, put_varint};
use crate::error::{Error, Result};
use crate::index::IndexDef;
use std::sync::Arc;

const KIND_BATCH: u8 = 1;
const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_CREATE_INDEX: u8 = 3;
const OP_DROP_INDEX: u8 = 4;
const OP_DROP_COLLECTION: u8 = 5;
const OP_MERGE_COLLECTION: u8 = 6;
/// An index by the query rules (`IndexDef::query_keys`), with a direction per field; the
/// earlier `OP_CREATE_INDEX` records name indexes an earlier version made.
const OP_CREATE_QUERY_INDEX: u8 = 7;
/// Largest payload of one record (one batch).
pub const MAX_RECORD_BYTES: usize = 1 << 30;
pub(crate) const HEADER_BYTES: usize = 12;

/// One operation of a batch as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoggedOp {
    Put {
        collection: String,
        id: Vec<u8>,
        value: Arc<[u8]>,
    },
    Delete {
        collection: String,
        id: Vec<u8>,
    },
    CreateIndex(IndexDef),
    DropIndex {
        collection: String,
        name: String,
    },
    /// Removes a collection with its documents and indexes.
    DropCollection {
        collection: String,
    },
    /// Puts every document of `collection` into `into` (replacing documents with the same
    /// id), then drops `collection`: how a staged import lands atomically.
    MergeCollection {
        collection: String,
        into: String,
    },
}

/// A batch read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoggedBatch {
    pub seq: u64,
    pub ops: Vec<LoggedOp>,
}

/// Appends the record of batch `seq` to `out`.
pub(crate) fn encode_batch(out: &mut Vec<u8>, seq: u64, ops: &[LoggedOp]) -> Result<()> {
    let start = out.len();
    // One allocation for the record (a big batch would otherwise grow the buffer by
    // doubling, copying it each time): an upper bound of its size, 10 bytes per varint.
    let body_bytes: usize = ops
        .iter()
        .map(|op| match op {
            LoggedOp::Put {
                collection,
                id,
                value,
            } => 31 + collection.len() + id.len() + value.len(),
            LoggedOp::Delete { collection, id } => 21 + collection.len() + id.len(),
            _ => 0,
        })
        .sum();
    out.reserve(HEADER_BYTES + 19 + body_bytes);
    out.extend_from_slice(&[0; HEADER_BYTES]);
    out.push(KIND_BATCH);
    out.extend_from_slice(&seq.to_le_bytes());
    put_varint(out, ops.len() as u64);
    for op in ops {
        match op {
            LoggedOp::Put {
                collection,
                id,
                value,
            } => {
                out.push(OP_PUT);
                put_bytes(out, collection.as_bytes());
                put_bytes(out, id);
                put_bytes(out, value);
            }
            LoggedOp::Delete { collection, id } => {
                out.push(OP_DELETE);
                put_bytes(out, collection.as_bytes());
                put_bytes(out, id);
            }
            LoggedOp::CreateIndex(def) => {
                out.push(if def.query_keys {
                    OP_CREATE_QUERY_INDEX
                } else {
                    OP_CREATE_INDEX
                });
                put_bytes(out, def.collection.as_bytes());
                put_bytes(out, def.name.as_bytes());
                put_varint(out, def.fields.len() as u64);
                for (f, &desc) in def.fields.iter().zip(&def.descending) {
                    put_bytes(out, f.as_str().as_bytes());
                    if def.query_keys {
                        out.push(u8::from(desc));
                    }
                }
            }
            LoggedOp::DropIndex { collection, name } => {
                out.push(OP_DROP_INDEX);
                put_bytes(out, collection.as_bytes());
                put_bytes(out, name.as_bytes());
            }
            LoggedOp::DropCollection { collection } => {
                out.push(OP_DROP_COLLECTION);
                put_bytes(out, collection.as_bytes());
            }
            LoggedOp::MergeCollection { collection, into } => {
                out.push(OP_MERGE_COLLECTION);
                put_bytes(out, collection.as_bytes());
                put_bytes(out, into.as_bytes());
            }
        }
    }
    let payload_len = out.len() - start - HEADER_BYTES;
    if payload_len > MAX_RECORD_BYTES {
        out.truncate(start);
        return Err(Error::BatchTooLarge {
            bytes: payload_len,
            max_bytes: MAX_RECORD_BYTES,
        });
    }
    let len_bytes = (payload_len as u32).to_le_bytes();
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&len_bytes);
    hasher.update(out.get(start + HEADER_BYTES..).unwrap_or(&[]));
    let sum = hasher.digest();
    if let Some(h) = out.get_mut(start..start + HEADER_BYTES) {
        h[..4].copy_from_slice(&len_bytes);
        h[4..].copy_from_slice(&sum.to_le_bytes());
    }
    Ok(())
}

pub(super) fn decode_payload(payload: &[u8]) -> Option<LoggedBatch> {
    let mut c = Reader::new(payload);
    if c.u8()? != KIND_BATCH {
        return None;
    }
    let seq = c.u64()?;
    let count = c.varint()?;
    let mut ops = Vec::new();
    for _ in 0..count {
        let code = c.u8()?;
        let collection = c.text()?;
        ops.push(match code {
            OP_PUT => LoggedOp::Put {
                collection,
                id: c.bytes()?.to_vec(),
                value: Arc::from(c.bytes()?),
            },
            OP_DELETE => LoggedOp::Delete {
                collection,
                id: c.bytes()?.to_vec(),
            },
            OP_CREATE_INDEX | OP_CREATE_QUERY_INDEX => {
                let query_keys = code == OP_CREATE_QUERY_INDEX;
                let name = c.text()?;
                let n = c.varint()?;
                if n > 16 {
                    return None;
                }
                let mut fields = Vec::new();
                let mut descending = Vec::new();
                for _ in 0..n {
                    fields.push(c.text()?);
                    descending.push(match query_keys {
                        false => false,
                        true => match c.u8()? {
                            0 => false,
                            1 => true,
                            _ => return None,
                        },
                    });
                }
                let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
                LoggedOp::CreateIndex(
                    IndexDef::from_parts(&collection, &name, &refs, descending, query_keys).ok()?,
                )
            }
            OP_DROP_INDEX => LoggedOp::DropIndex {
                collection,
                name: c.text()?,
            },
            OP_DROP_COLLECTION => LoggedOp::DropCollection { collection },
            OP_MERGE_COLLECTION => LoggedOp::MergeCollection {
                collection,
                into: c.text()?,
            },
            _ => return None,
        });
    }
    c.is_empty().then_some(LoggedBatch { seq, ops })
}
