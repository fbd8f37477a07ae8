//! Packing: at compaction, a compressed collection's documents move into blocks of about
//! [`DatabaseOptions::pack_block_bytes`](crate::DatabaseOptions::pack_block_bytes) of ids
//! and documents compressed together (zstd at [`DatabaseOptions::pack_level`](crate::DatabaseOptions::pack_level),
//! 9 by default, with the collection's newest dictionary). The blocks form the bottom level of the collection; its map keeps only what
//! was written since (whole documents, and marks of removed ones).
//!
//! Why: one zstd frame per document cannot use what documents share beyond the dictionary,
//! and stays 2-5x bigger than zstd over the whole collection; blocks of 16-64 KB come within
//! 1.5x on most collections (`docs/benchmarks.md`, "Document compression"). Ids go inside
//! the blocks too: a table entry per document (id, pointer) would cost 8-12 bytes per
//! document, more than the compressed document on collections of small documents.
//!
//! Layout: the internal collection `_packs/<collection>` maps the last id of each block to
//! `varint block number | block value`: a keyed block (codec 5: n ids in ascending order,
//! front-coded, and their n documents), or, packed before keyed blocks existed, a block of
//! 2n entries (codec 3: the n ids, then the n documents); both decode to the ids, then the
//! documents (`docs/FORMAT.md`, "Packed documents"). A document is visible if
//! the collection map holds it, or, when the map does not mention its id, if a block holds
//! it. A removal writes the mark `0x04` (codec "removed") into the map, which hides a packed
//! version below; compaction drops marks with nothing left to hide.
//!
//! Invariants:
//! - Block ids are disjoint, ascending ranges: block k holds ids in (last id of block k-1,
//!   its own key].
//! - A block number names one block content for as long as the database exists (numbers
//!   only grow; the manifest records the next one): the decoded-block cache relies on it.
//! - A collection's packs map is replaced only together with its map, in one manifest.

pub(crate) mod cache;
pub(crate) mod decoded;
pub(crate) mod forms;
pub(crate) mod packing;
pub(crate) mod sorted;

use crate::bytes::Reader;
use crate::compress::{
    BlockPacker, Decoder, Dictionaries, DictionaryId, MAX_BLOCK_DOCS, block_is_full,
};
use crate::error::{Error, Result};
use crate::internal::MetaKey;
use crate::state::State;
use crate::stored::DocBytes;
use std::ops::Bound;
use std::sync::Arc;
use stele_durable::{DurableMap, MapBuilder, Store};

pub(crate) use decoded::DecodedBlock;
use packing::Packing;

/// The stored value that marks a removed document.
pub(crate) const REMOVED: [u8; 1] = [crate::compress::Codec::Removed as u8];

/// Whether a stored value marks a removed document.
pub(crate) fn is_removed(stored: &[u8]) -> bool {
    stored == REMOVED
}

/// Table block size of packs maps: their values (compressed blocks of a few KiB each) span
/// whole table blocks, so small table blocks keep the padding after each one small
/// (4 KiB ones wasted 2 KiB per value on average, 256 B ones 128 B; 16 B ones waste 8 B,
/// and make the packs table a format version 3 table).
const PACKS_TABLE_BLOCK_BYTES: u32 = 16;

/// A value of `collection`'s packs map (stored under key `last_id`) split into its block
/// number and its block value (a keyed block, codec 5; codec 3 if packed before keyed blocks).
pub(crate) fn split_value<'v>(
    collection: &str,
    last_id: &[u8],
    value: &'v [u8],
) -> Result<(u64, &'v [u8])> {
    let mut r = Reader::new(value);
    let Some(number) = r.varint() else {
        return Err(Error::corrupt_document(
            collection,
            last_id,
            "a packed block does not start with its number",
        ));
    };
    Ok((number, r.rest()))
}

/// The header of the block in a value of `collection`'s packs map (see [`split_value`]).
pub(crate) fn block_header(
    collection: &str,
    last_id: &[u8],
    value: &[u8],
) -> Result<crate::compress::Header> {
    let (_, block) = split_value(collection, last_id, value)?;
    crate::compress::parse_header(block)
        .map_err(|e| Error::corrupt_document(collection, last_id, e.to_string()))
}

/// The block stored under key `last_id` as `value` in `collection`'s packs map, decoded:
/// from the cache, else decoded, checked and cached.
pub(crate) fn load_block(
    state: &State,
    collection: &str,
    last_id: &[u8],
    value: &[u8],
    decoder: &mut Decoder,
) -> Result<Arc<DecodedBlock>> {
    let (number, stored) = split_value(collection, last_id, value)?;
    if let Some(block) = state.packing.cache.get(number) {
        return Ok(block);
    }
    let none = Dictionaries::new();
    let dicts = state.dicts.get(collection).unwrap_or(&none);
    let bad = |e: String| {
        Error::corrupt_document(collection, last_id, format!("packed block {number}: {e}"))
    };
    let block = decoder
        .decode_block(stored, dicts)
        .map_err(|e| bad(e.to_string()))?;
    let block = Arc::new(DecodedBlock::new(number, block, last_id).map_err(bad)?);
    state.packing.cache.insert(&block);
    Ok(block)
}

/// The packed document `id` of `collection`, if a block holds it: the block and its index
/// (the document itself is read with [`read_document`]).
pub(crate) fn lookup(
    state: &State,
    collection: &str,
    id: &[u8],
    decoder: &mut Decoder,
) -> Result<Option<(Arc<DecodedBlock>, usize)>> {
    Ok(lookup_block(state, collection, id, decoder)?.and_then(|(block, i)| i.map(|i| (block, i))))
}

/// The packed block of `collection` whose range of ids holds `id` (if any block's does),
/// and the index of `id` in it if the block holds it.
pub(crate) fn lookup_block(
    state: &State,
    collection: &str,
    id: &[u8],
    decoder: &mut Decoder,
) -> Result<Option<(Arc<DecodedBlock>, Option<usize>)>> {
    let Some(packs) = state.packs(collection) else {
        return Ok(None);
    };
    let Some((last_id, value)) = packs.ceiling(id)? else {
        return Ok(None);
    };
    let block = load_block(state, collection, &last_id, value, decoder)?;
    let i = block.find(id).ok();
    Ok(Some((block, i)))
}

/// The packed documents of a collection from an id on, in id order.
pub(crate) struct PackedIter<'a> {
    state: &'a State,
    collection: &'a str,
    blocks: Option<stele_durable::MapIter<'a>>,
    current: Option<(Arc<DecodedBlock>, usize)>,
}

impl<'a> PackedIter<'a> {
    /// From the first packed id at or after `lo`.
    pub(crate) fn new(state: &'a State, collection: &'a str, lo: Bound<&[u8]>) -> Result<Self> {
        let blocks = state
            .packs(collection)
            .map(|p| p.range((lo, Bound::Unbounded)));
        let mut it = PackedIter {
            state,
            collection,
            blocks,
            current: None,
        };
        // Position inside the first block (its ids may start below `lo`).
        if let Some((block, start)) = it.next_block()? {
            let i = match lo {
                Bound::Included(k) => block.find(k).unwrap_or_else(|i| i),
                Bound::Excluded(k) => block.find(k).map_or_else(|i| i, |i| i + 1),
                Bound::Unbounded => start,
            };
            it.current = Some((block, i));
        }
        Ok(it)
    }

    fn next_block(&mut self) -> Result<Option<(Arc<DecodedBlock>, usize)>> {
        let Some(blocks) = self.blocks.as_mut() else {
            return Ok(None);
        };
        match blocks.next() {
            Some(entry) => {
                let (last_id, value) = entry?;
                // The thread's decoder: one made per iterator (per stretch of a scan) cost
                // more than reading a collection of a few hundred documents from the cache.
                let block = crate::stored::with_decoder(|decoder| {
                    load_block(self.state, self.collection, &last_id, value, decoder)
                })?;
                Ok(Some((block, 0)))
            }
            None => Ok(None),
        }
    }
}

impl Iterator for PackedIter<'_> {
    type Item = Result<(Vec<u8>, DocBytes<'static>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((block, i)) = &mut self.current
                && *i < block.len()
            {
                let at = *i;
                *i += 1;
                let id = block.id(at).to_vec();
                let doc = DocBytes::in_block(self.state, self.collection, Arc::clone(block), at);
                return Some(doc.map(|doc| (id, doc)));
            }
            match self.next_block() {
                Ok(Some(next)) => self.current = Some(next),
                Ok(None) => {
                    self.current = None;
                    self.blocks = None;
                    return None;
                }
                Err(e) => {
                    self.blocks = None;
                    self.current = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// How packing compresses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackSettings {
    /// Documents go into a block until its ids and documents hold at least this many bytes
    /// and [`crate::compress::MIN_BLOCK_DOCS`] documents, or 8 times as many bytes
    /// ([`block_is_full`]).
    pub(crate) block_bytes: usize,
    /// zstd level of blocks.
    pub(crate) level: i32,
    /// Whether full packings may store stream forms.
    pub(crate) streams: bool,
}

/// The newest persisted dictionary of `collection` in `state`: id and bytes.
pub(crate) fn last_dictionary(
    state: &State,
    collection: &str,
) -> Result<Option<(DictionaryId, Vec<u8>)>> {
    let Some(meta) = state.collections.get(crate::internal::META) else {
        return Ok(None);
    };
    let prefix = MetaKey::dicts_of(collection);
    let Some(entry) = meta.prefix(prefix.as_bytes()).next_back() else {
        return Ok(None);
    };
    let (key, value) = entry?;
    // Collection names cannot hold '/', so the prefix matches this collection's keys only;
    // checked all the same.
    let id = match MetaKey::parse(&key)? {
        MetaKey::Dict { collection: c, id } if c == collection => id,
        _ => {
            return Err(Error::CorruptMetaKey {
                key: String::from_utf8_lossy(&key).into_owned(),
                reason: "a key among a collection's dictionaries names another",
            });
        }
    };
    Ok(Some((
        id,
        crate::compress::dictionary_from_stored(value)?.into_owned(),
    )))
}

/// Collects documents into blocks and writes them to a new packs map.
struct BlockWriter<'s> {
    out: MapBuilder,
    packer: BlockPacker,
    packing: &'s Packing,
    settings: PackSettings,
    /// Ids then documents of the block being filled, concatenated, and each one's end.
    ids: Vec<u8>,
    id_ends: Vec<usize>,
    docs: Vec<u8>,
    doc_ends: Vec<usize>,
    value: Vec<u8>,
    block: Vec<u8>,
    /// Documents written (in full blocks and copied ones).
    docs_written: u64,
}

impl BlockWriter<'_> {
    fn pending_bytes(&self) -> usize {
        self.ids.len() + self.docs.len()
    }

    fn push(&mut self, id: &[u8], doc: &[u8]) -> Result<()> {
        self.ids.extend_from_slice(id);
        self.id_ends.push(self.ids.len());
        self.docs.extend_from_slice(doc);
        self.doc_ends.push(self.docs.len());
        if block_is_full(
            self.pending_bytes(),
            self.id_ends.len(),
            self.settings.block_bytes,
        ) || self.id_ends.len() * 2 >= MAX_BLOCK_DOCS as usize
        {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.id_ends.is_empty() {
            return Ok(());
        }
        let ids = crate::bytes::split_at_ends(&self.ids, &self.id_ends);
        let docs = crate::bytes::split_at_ends(&self.docs, &self.doc_ends);
        let last_id = ids.last().copied().unwrap_or_default();
        self.packer.pack_documents(&ids, &docs, &mut self.block)?;
        self.value.clear();
        crate::bytes::put_varint(&mut self.value, self.packing.allocate());
        self.value.extend_from_slice(&self.block);
        self.out.add(last_id, &self.value)?;
        self.docs_written += self.id_ends.len() as u64;
        self.ids.clear();
        self.id_ends.clear();
        self.docs.clear();
        self.doc_ends.clear();
        Ok(())
    }

    /// Writes an existing block as it is (after any pending documents, which come first).
    fn copy(&mut self, last_id: &[u8], value: &[u8], docs: usize) -> Result<()> {
        self.flush()?;
        self.out.add(last_id, value)?;
        self.docs_written += docs as u64;
        Ok(())
    }
}

/// Merges `source` (what `collection`'s map holds: whole documents and marks of removed
/// ones) with the collection's packed blocks in `state` into a new packs map holding every
/// visible document. Blocks no entry of `source` falls into are copied as they are (unless
/// `full`, which rewrites every block and may store documents in their stream form), so
/// appending to a packed collection costs only its new documents. `state` supplies the
/// dictionaries and the current blocks. Returns the new packs map and the number of
/// documents it holds.
pub(crate) fn pack(
    store: &Store,
    state: &State,
    collection: &str,
    source: &DurableMap,
    full: bool,
    settings: PackSettings,
) -> Result<(DurableMap, u64)> {
    pack_changes(
        store,
        state,
        collection,
        map_changes(source),
        full,
        settings,
    )
}

/// A change to a packed collection, in id order (see [`pack_changes`]).
#[derive(Debug)]
pub(crate) enum Change {
    /// The document is removed (a removal mark).
    Removed,
    /// The document is this stored value (whole, as the collection map holds it).
    Stored(Vec<u8>),
    /// The document is this document (an import's, not compressed).
    Document(Vec<u8>),
}

/// An id and its change, or an error reading it.
pub(crate) type ChangeEntry = Result<(Vec<u8>, Change)>;

/// The entries of a collection map as changes.
pub(crate) fn map_changes(source: &DurableMap) -> impl Iterator<Item = ChangeEntry> + '_ {
    source.iter().map(|entry| {
        let (id, stored) = entry?;
        let change = if is_removed(stored) {
            Change::Removed
        } else {
            Change::Stored(stored.to_vec())
        };
        Ok((id.to_vec(), change))
    })
}

/// [`pack`] with the changes given as entries in strictly ascending id order.
pub(crate) fn pack_changes(
    store: &Store,
    state: &State,
    collection: &str,
    changes: impl Iterator<Item = ChangeEntry>,
    full: bool,
    settings: PackSettings,
) -> Result<(DurableMap, u64)> {
    let dictionary = last_dictionary(state, collection)?;
    // Stream forms cost about 2 us per document to make and check: worth it when
    // compacting on demand, not in the background compactions that run beside writers.
    let streams = full && settings.streams;
    let packer = BlockPacker::new(
        settings.level,
        dictionary.as_ref().map(|(id, b)| (*id, b.as_slice())),
    )?
    .streams(streams);
    let mut w = BlockWriter {
        out: store.map_builder_with_block_size(PACKS_TABLE_BLOCK_BYTES)?,
        packer,
        packing: &state.packing,
        settings,
        ids: Vec::new(),
        id_ends: Vec::new(),
        docs: Vec::new(),
        doc_ends: Vec::new(),
        value: Vec::new(),
        block: Vec::new(),
        docs_written: 0,
    };
    let mut decoder = Decoder::new()?;
    let mut changes = Changes {
        iter: changes.peekable(),
    };
    let mut write_change = |w: &mut BlockWriter<'_>, id: &[u8], change: &Change| -> Result<()> {
        match change {
            Change::Removed => {}
            Change::Stored(stored) => {
                let doc = crate::stored::decode_with(state, collection, id, stored, &mut decoder)?;
                w.push(id, &doc)?;
            }
            Change::Document(doc) => w.push(id, doc)?,
        }
        Ok(())
    };
    if let Some(packs) = state.packs(collection) {
        let mut block_decoder = Decoder::new()?;
        for entry in packs.iter() {
            let (last_id, value) = entry?;
            // A block no change falls into is copied, unless the documents waiting for a
            // block would be left as a small one in front of it.
            let small_pending =
                w.pending_bytes() > 0 && w.pending_bytes() < settings.block_bytes / 2;
            if !full && !changes.any_upto(&last_id) && !small_pending {
                let docs = block_header(collection, &last_id, value)?.docs as usize / 2;
                w.copy(&last_id, value, docs)?;
                continue;
            }
            let block = load_block(state, collection, &last_id, value, &mut block_decoder)?;
            for i in 0..block.len() {
                let id = block.id(i);
                // Changes of ids up to this one come first; a change of this very id
                // replaces (or removes) the packed document.
                let mut replaced = false;
                while let Some((cid, change)) = changes.next_upto(Some(id))? {
                    replaced |= cid[..] == *id;
                    write_change(&mut w, &cid, &change)?;
                }
                if replaced {
                    continue;
                }
                // When the new blocks may hold streams, a stream form goes in as it is, with
                // no rebuild and no re-encoding (blocks are then cut at `block_bytes` of
                // stream forms, a tenth or so more documents than when packing documents).
                match streams.then(|| block.stored_form(i)).flatten() {
                    Some(stored) => w.push(id, &stored)?,
                    None => w.push(
                        id,
                        crate::stored::read_document(state, collection, &block, i)?,
                    )?,
                }
            }
        }
    }
    while let Some((cid, change)) = changes.next_upto(None)? {
        write_change(&mut w, &cid, &change)?;
    }
    w.flush()?;
    let docs = w.docs_written;
    Ok((w.out.finish()?, docs))
}

/// The changes being packed, in id order.
struct Changes<I: Iterator<Item = ChangeEntry>> {
    iter: std::iter::Peekable<I>,
}

impl<I: Iterator<Item = ChangeEntry>> Changes<I> {
    /// Whether the next entry's id is at most `upto` (errors count as yes: the next
    /// `next_upto` returns them).
    fn any_upto(&mut self, upto: &[u8]) -> bool {
        match self.iter.peek() {
            Some(Ok((id, _))) => id[..] <= *upto,
            Some(Err(_)) => true,
            None => false,
        }
    }

    /// The next entry if its id is at most `upto` (any next entry for `None`).
    fn next_upto(&mut self, upto: Option<&[u8]>) -> Result<Option<(Vec<u8>, Change)>> {
        let take = match upto {
            Some(u) => self.any_upto(u),
            None => self.iter.peek().is_some(),
        };
        if !take {
            return Ok(None);
        }
        self.iter.next().transpose()
    }
}
