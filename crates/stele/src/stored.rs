//! Stored values: how a document is kept in a collection's map (layouts in
//! [`crate::compress::codec`] and `docs/FORMAT.md`, "Stored document values").

use crate::compress::{Decoder, Dictionaries};
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, LazyLock};

/// The raw stored form of a (validated) document: codec byte 0, then the document.
pub(crate) fn encode(doc: &[u8]) -> Arc<[u8]> {
    let mut v = Vec::with_capacity(doc.len() + 1);
    crate::compress::encode_raw(doc, &mut v);
    Arc::from(v)
}

/// The document of a raw stored value, if it is one.
pub(crate) fn raw(stored: &[u8]) -> Option<&[u8]> {
    match stored.split_first() {
        Some((0, doc)) => Some(doc),
        _ => None,
    }
}

static NO_DICTIONARIES: LazyLock<Dictionaries> = LazyLock::new(Dictionaries::new);

thread_local! {
    /// One zstd decompression context per thread, reused by every read.
    static DECODER: RefCell<Option<Decoder>> = const { RefCell::new(None) };
}

/// The document bytes of a stored value: borrowed when stored raw, decompressed with the
/// collection's dictionaries otherwise.
pub(crate) fn decode<'a>(
    dicts: Option<&Dictionaries>,
    collection: &str,
    id: &[u8],
    stored: &'a [u8],
) -> Result<Cow<'a, [u8]>> {
    if let Some(doc) = raw(stored) {
        return Ok(Cow::Borrowed(doc));
    }
    let dicts = dicts.unwrap_or(&NO_DICTIONARIES);
    let decoded = DECODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Decoder::new()?);
        }
        match slot.as_mut() {
            Some(decoder) => decoder
                .decode(stored, dicts)
                .map(|c| Cow::Owned(c.into_owned())),
            None => Err(Error::CorruptDocument {
                collection: collection.to_owned(),
                id: String::from_utf8_lossy(id).into_owned(),
                reason: "no decoder".to_owned(),
            }),
        }
    });
    decoded.map_err(|e| Error::CorruptDocument {
        collection: collection.to_owned(),
        id: String::from_utf8_lossy(id).into_owned(),
        reason: e.to_string(),
    })
}
