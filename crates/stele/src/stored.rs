//! Stored values: how a document is kept in a collection's map.
//!
//! One codec byte, then the payload. Codec 0: the document bytes as they are.

use crate::error::{Error, Result};
use std::borrow::Cow;
use std::sync::Arc;

const RAW: u8 = 0;

/// The stored form of a (validated) document.
pub(crate) fn encode(doc: &[u8]) -> Arc<[u8]> {
    let mut v = Vec::with_capacity(doc.len() + 1);
    v.push(RAW);
    v.extend_from_slice(doc);
    Arc::from(v)
}

/// The document bytes of a stored value.
pub(crate) fn decode<'a>(collection: &str, id: &[u8], stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    match stored.split_first() {
        Some((&RAW, doc)) => Ok(Cow::Borrowed(doc)),
        Some((codec, _)) => Err(Error::CorruptDocument {
            collection: collection.to_owned(),
            id: String::from_utf8_lossy(id).into_owned(),
            reason: format!("unknown codec {codec}"),
        }),
        None => Err(Error::CorruptDocument {
            collection: collection.to_owned(),
            id: String::from_utf8_lossy(id).into_owned(),
            reason: "empty stored value".to_owned(),
        }),
    }
}
