//! Stored values: how a document is kept in a collection's map (layouts in
//! [`crate::compress::codec`] and `docs/FORMAT.md`, "Stored document values").

use crate::compress::{Decoder, Dictionaries};
use crate::error::{Error, Result};
use crate::pack::decoded::DecodedBlock;
use crate::state::State;
use std::cell::RefCell;
use std::ops::Deref;
use std::sync::{Arc, LazyLock};

/// The raw stored form of a (validated) document: codec byte 0, then the document.
pub(crate) fn encode(doc: &[u8]) -> Arc<[u8]> {
    let mut v = Vec::with_capacity(doc.len() + 1);
    crate::compress::encode_raw(doc, &mut v);
    Arc::from(v)
}

/// The raw stored form of the document converted from `json`, built in `buf` (reused
/// between calls: one allocation and one copy per document, for the shared value).
pub(crate) fn encode_json(
    writer: &mut stele_doc::DocumentWriter,
    json: &[u8],
    buf: &mut Vec<u8>,
) -> stele_doc::Result<Arc<[u8]>> {
    crate::compress::encode_raw(&[], buf);
    // The writer checks its own output (debug builds validate what `finish_into` appends).
    writer.from_json_into(json, buf)?;
    Ok(Arc::from(buf.as_slice()))
}

/// The document of a raw stored value, if it is one.
pub(crate) fn raw(stored: &[u8]) -> Option<&[u8]> {
    match stored.split_first() {
        Some((0, doc)) => Some(doc),
        _ => None,
    }
}

/// The bytes of a document read from a collection: borrowed from the mapped table when
/// stored raw, decompressed when stored alone, or shared with a cached decoded block.
#[derive(Debug, Clone)]
pub(crate) enum DocBytes<'a> {
    Borrowed(&'a [u8]),
    /// A document that passed `stele_doc::validate` when it was put into the in-memory
    /// state, and has not changed since (see `apply::put_doc`).
    Validated(&'a [u8]),
    Owned(Vec<u8>),
    /// A document decoded from a compressed value of the in-memory state, which decoded to
    /// a document that passed `stele_doc::validate` when it was put (see `apply::put_doc`):
    /// the value never changes in place, nor does a dictionary while a value names it, and
    /// decoding the same bytes with the same dictionary gives the same document.
    ValidatedOwned(Vec<u8>),
    /// Document `.1` of the block (checked to exist, and rebuilt if the block holds its
    /// stream form, by [`DocBytes::in_block`]).
    InBlock(Arc<DecodedBlock>, usize),
}

impl Deref for DocBytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            DocBytes::Borrowed(b) | DocBytes::Validated(b) => b,
            DocBytes::Owned(v) | DocBytes::ValidatedOwned(v) => v,
            DocBytes::InBlock(block, i) => block.get(*i),
        }
    }
}

impl DocBytes<'static> {
    /// Document `i` of `block`, a packed block of `collection` in `state`.
    pub(crate) fn in_block(
        state: &State,
        collection: &str,
        block: Arc<DecodedBlock>,
        i: usize,
    ) -> Result<DocBytes<'static>> {
        read_document(state, collection, &block, i)?;
        Ok(DocBytes::InBlock(block, i))
    }
}

impl DocBytes<'_> {
    /// A reader over the document, validated unless these very bytes (a document of an
    /// immutable decoded block) passed validation before.
    pub(crate) fn document(&self) -> Result<stele_doc::Document<&[u8]>> {
        if let DocBytes::InBlock(block, i) = self {
            return checked_in_block(block, *i, block.get(*i));
        }
        if let DocBytes::Validated(bytes) = self {
            // SAFETY: `apply::put_doc` validated these bytes before putting them into the
            // in-memory diff they are borrowed from, and values there are never changed in
            // place (a put replaces the value).
            return Ok(unsafe { stele_doc::Document::new_unchecked(*bytes) });
        }
        if let DocBytes::ValidatedOwned(bytes) = self {
            // SAFETY: `apply::put_doc` validated the document this value decodes to before
            // putting the value into the in-memory diff; the value has not changed since,
            // nor has the dictionary it names, so decoding gave the same bytes again.
            return Ok(unsafe { stele_doc::Document::new_unchecked(bytes.as_slice()) });
        }
        Ok(stele_doc::Document::new(&**self)?)
    }

    pub(crate) fn into_owned(self) -> Vec<u8> {
        match self {
            DocBytes::Owned(v) | DocBytes::ValidatedOwned(v) => v,
            other => other.to_vec(),
        }
    }
}

static NO_DICTIONARIES: LazyLock<Dictionaries> = LazyLock::new(Dictionaries::new);

thread_local! {
    /// One zstd decompression context per thread, reused by every read.
    static DECODER: RefCell<Option<Decoder>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's reusable decoder (creating a zstd context costs about as
/// much as reading a small collection: scans of one take theirs from here). A call made
/// while the thread's decoder is in use (from inside `f`) gets a decoder of its own.
pub(crate) fn with_decoder<T>(f: impl FnOnce(&mut Decoder) -> Result<T>) -> Result<T> {
    DECODER.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return f(&mut Decoder::new()?);
        };
        if slot.is_none() {
            *slot = Some(Decoder::new()?);
        }
        match slot.as_mut() {
            Some(decoder) => f(decoder),
            None => Err(Error::Zstd {
                op: "create decompression context",
                message: "no decoder".into(),
            }),
        }
    })
}

/// The document bytes of stored value `stored` (a map value, not a removal mark) of
/// document `id` of `collection` in `state`.
pub(crate) fn decode<'a>(
    state: &State,
    collection: &str,
    id: &[u8],
    stored: &'a [u8],
) -> Result<DocBytes<'a>> {
    if let Some(doc) = raw(stored) {
        return Ok(DocBytes::Borrowed(doc));
    }
    with_decoder(|decoder| decode_with(state, collection, id, stored, decoder))
}

/// Like [`decode`], with the caller's decoder.
pub(crate) fn decode_with<'a>(
    state: &State,
    collection: &str,
    id: &[u8],
    stored: &'a [u8],
    decoder: &mut Decoder,
) -> Result<DocBytes<'a>> {
    if let Some(doc) = raw(stored) {
        return Ok(DocBytes::Borrowed(doc));
    }
    let dicts = state.dicts.get(collection).unwrap_or(&NO_DICTIONARIES);
    decoder
        .decode(stored, dicts)
        .map(|c| DocBytes::Owned(c.into_owned()))
        .map_err(|e| Error::corrupt_document(collection, id, e.to_string()))
}

/// A reader over `bytes`, document `i` of `block` (what [`DecodedBlock::get`] gives for
/// it once it is rebuilt), validated unless these very bytes passed validation before.
fn checked_in_block<'b>(
    block: &DecodedBlock,
    i: usize,
    bytes: &'b [u8],
) -> Result<stele_doc::Document<&'b [u8]>> {
    if block.is_checked(i) {
        // SAFETY: `Document::new` accepted exactly these bytes before (the flag is set only
        // after it did), and a decoded block's bytes never change.
        return Ok(unsafe { stele_doc::Document::new_unchecked(bytes) });
    }
    let doc = stele_doc::Document::new(bytes)?;
    block.mark_checked(i);
    Ok(doc)
}

/// A reader over document `i` of `block` (a block of `collection`), borrowed from the
/// block: what [`DocBytes::in_block`] then [`DocBytes::document`] give, without the
/// `Arc` clone and drop of the block per document (a full scan reads every document of a
/// block it holds).
pub(crate) fn document_in_block<'b>(
    state: &State,
    collection: &str,
    block: &'b DecodedBlock,
    i: usize,
) -> Result<stele_doc::Document<&'b [u8]>> {
    let bytes = read_document(state, collection, block, i)?;
    checked_in_block(block, i, bytes)
}

/// Document `i` of `block` (a block of `collection`), rebuilt from its stream form on its
/// first read, the cache's charge for the block updated.
pub(crate) fn read_document<'b>(
    state: &State,
    collection: &str,
    block: &'b DecodedBlock,
    i: usize,
) -> Result<&'b [u8]> {
    let (doc, grown_bytes) = block.document(i).map_err(|reason| {
        Error::corrupt_document(
            collection,
            block.id(i),
            format!("packed block {}: {reason}", block.number()),
        )
    })?;
    state.packing.cache.recharge(block, grown_bytes);
    Ok(doc)
}
