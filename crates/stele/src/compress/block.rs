//! [`Block`]: the decoded documents (or keys and values) of a block value.

use std::borrow::Cow;

use super::header::corrupt;
use crate::Result;

/// The decoded documents of a block, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The decoded frame: the length table, then the documents from `start` on.
    pub(super) bytes: Vec<u8>,
    /// End of each document within `bytes`, non-decreasing, the last one `bytes.len()`.
    pub(super) ends: Vec<usize>,
    /// Where the first document starts.
    pub(super) start: usize,
    /// Entries from this one on may be stream forms (a [`Codec::StreamBlock`]'s values).
    pub(super) streams_from: Option<usize>,
}

impl Block {
    /// A block of documents given as their concatenation and the end offset of each; checks
    /// that the ends grow and that the last one is the length of `bytes`.
    pub fn from_parts(bytes: Vec<u8>, ends: Vec<usize>) -> Result<Block> {
        let grows = ends.windows(2).all(|w| w.first() <= w.get(1));
        if ends.is_empty() || !grows || ends.last() != Some(&bytes.len()) {
            return Err(corrupt(
                0,
                "block parts do not fit: ends must grow and end at the length of the bytes",
            ));
        }
        Ok(Block {
            bytes,
            ends,
            start: 0,
            streams_from: None,
        })
    }

    /// Bytes this block holds on the heap (documents and offsets), for cache budgets.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the block holds no document (never, for a decoded block).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `i` as stored: a key or a document, or, in a [`Codec::StreamBlock`], a
    /// document's stream form ([`Block::document`] rebuilds it).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 {
            self.start
        } else {
            *self.ends.get(i - 1)?
        };
        self.bytes.get(start..end)
    }

    /// Whether entry `i` may be a stream form, to be read with [`Block::document`].
    pub fn holds_streams(&self, i: usize) -> bool {
        self.streams_from.is_some_and(|from| i >= from)
    }

    /// Entry `i` as a document: as stored, or rebuilt from its stream form. `None` if `i`
    /// is out of range; an error if a stream form does not decode.
    pub fn document(&self, i: usize) -> Option<Result<Cow<'_, [u8]>>> {
        let entry = self.get(i)?;
        if !self.holds_streams(i) {
            return Some(Ok(Cow::Borrowed(entry)));
        }
        // The values of a keyed layout follow its keys: entry `i`'s key is entry `i - n`.
        let key = self
            .streams_from
            .and_then(|n| i.checked_sub(n))
            .and_then(|k| self.get(k))
            .unwrap_or_default();
        Some(super::streams::to_document(key, entry))
    }

    /// The entries in order, as stored (see [`Block::get`]).
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}
