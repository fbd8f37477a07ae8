//! Packing: at compaction, a compressed collection's documents move into blocks of about
//! [`DatabaseOptions::pack_block_bytes`](crate::DatabaseOptions::pack_block_bytes) compressed
//! together (zstd at the block level, with the collection's newest dictionary), and each
//! document's value in the collection map becomes a packed pointer (codec 4: block number and
//! index, 3-6 bytes; layout in `docs/FORMAT.md`, "Packed documents").
//!
//! Why: one zstd frame per document cannot use what documents share beyond the dictionary,
//! and stays 2-5x bigger than zstd over the whole collection; blocks of 16-64 KB come within
//! 1.5x on most collections (`docs/benchmarks.md`, "Document compression"). Reading a packed
//! document decodes its block once; the database's [`BlockCache`] keeps decoded blocks for
//! the next reads of any of their documents.
//!
//! Where the blocks live: in a second map per collection, the internal collection
//! `_packs/<collection>` (block number, 8 bytes big-endian, to the block value). Packing
//! writes a whole new packs map each time (the live blocks it still needs, then its new
//! ones), and the new collection base and packs map replace the old ones in the same
//! manifest write, so a pointer never outlives its block. Snapshots keep reading their own
//! maps.
//!
//! Invariants:
//! - A block number names one block for as long as the database is open ([`Packing`]
//!   hands numbers out from above every number stored); the cache relies on it.
//! - Every pointer in a collection map names a block of the packs map of the same state.
//! - Packing writes pointers only into the bases it builds; diffs hold whole documents.

pub(crate) mod cache;

use crate::compress::{BlockPacker, Decoder, Dictionaries, DictionaryId, MAX_BLOCK_DOCS};
use crate::db::State;
use crate::error::{Error, Result};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use stele_durable::{DurableMap, Store};

use cache::BlockCache;
pub use cache::BlockCacheStats;
pub(crate) use cache::DecodedBlock;

/// Prefix of the internal collections holding packed blocks.
pub(crate) const PACKS_PREFIX: &str = "_packs/";

/// The internal collection holding `collection`'s blocks.
pub(crate) fn packs_name(collection: &str) -> String {
    format!("{PACKS_PREFIX}{collection}")
}

/// Table block size of packs maps: their values (compressed blocks of a few KiB each) span
/// whole table blocks, so small table blocks keep the padding after each one small
/// (4 KiB ones wasted 2 KiB per value on average).
const PACKS_TABLE_BLOCK_BYTES: u32 = 256;

/// Block numbers and decoded blocks of one open database.
#[derive(Debug)]
pub(crate) struct Packing {
    next_block: AtomicU64,
    pub(crate) cache: BlockCache,
}

impl Default for Packing {
    fn default() -> Self {
        Packing::new(0, 0)
    }
}

impl Packing {
    /// `first_free`: above every block number stored in the database.
    pub(crate) fn new(first_free: u64, cache_bytes: usize) -> Self {
        Packing {
            next_block: AtomicU64::new(first_free.max(1)),
            cache: BlockCache::new(cache_bytes),
        }
    }

    /// A block number never handed out before by this database while open, and above every
    /// stored one.
    fn allocate(&self) -> u64 {
        self.next_block.fetch_add(1, Ordering::Relaxed)
    }
}

/// The first block number above every block stored in `state`'s packs maps.
pub(crate) fn first_free_block(state: &State) -> Result<u64> {
    let mut top = 0u64;
    for (name, map) in state.collections.range(PACKS_PREFIX.to_owned()..) {
        if !name.starts_with(PACKS_PREFIX) {
            break;
        }
        if let Some((key, _)) = map.last()? {
            top = top.max(block_number(name, &key)?);
        }
    }
    Ok(top + 1)
}

fn block_key(number: u64) -> [u8; 8] {
    number.to_be_bytes()
}

fn block_number(packs: &str, key: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| Error::CorruptDocument {
        collection: packs.to_owned(),
        id: String::from_utf8_lossy(key).into_owned(),
        reason: "a packs key is not an 8-byte block number".to_owned(),
    })?;
    Ok(u64::from_be_bytes(bytes))
}

/// Block `number` of `collection`, decoded: from the cache, else read from the packs map of
/// `state` and cached.
pub(crate) fn load_block(
    state: &State,
    collection: &str,
    number: u64,
    decoder: &mut Decoder,
) -> Result<Arc<DecodedBlock>> {
    if let Some(block) = state.packing.cache.get(number) {
        return Ok(block);
    }
    let missing = |reason: String| Error::CorruptDocument {
        collection: collection.to_owned(),
        id: format!("(packed block {number})"),
        reason,
    };
    let name = packs_name(collection);
    let Some(packs) = state.collections.get(&name) else {
        return Err(missing(
            "the collection has packed documents but no packs map".to_owned(),
        ));
    };
    let Some(stored) = packs.get(&block_key(number))? else {
        return Err(missing(
            "the block is missing from the packs map".to_owned(),
        ));
    };
    let none = Dictionaries::new();
    let dicts = state.dicts.get(collection).unwrap_or(&none);
    let block = Arc::new(DecodedBlock::new(
        decoder
            .decode_block(stored, dicts)
            .map_err(|e| missing(e.to_string()))?,
    ));
    state.packing.cache.insert(number, &block);
    Ok(block)
}

/// How packing compresses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackSettings {
    /// Documents go into a block until it holds at least this many bytes (decoded).
    pub(crate) block_bytes: usize,
    /// zstd level of blocks.
    pub(crate) level: i32,
}

/// What one packing produced: the collection's new base and its new packs map.
#[derive(Debug)]
pub(crate) struct Packed {
    pub(crate) base: DurableMap,
    pub(crate) packs: DurableMap,
}

/// The newest persisted dictionary of `collection` in `state`: id and bytes.
pub(crate) fn last_dictionary(
    state: &State,
    collection: &str,
) -> Result<Option<(DictionaryId, Vec<u8>)>> {
    let Some(meta) = state.collections.get(crate::db::META) else {
        return Ok(None);
    };
    let prefix = format!("dict/{collection}/");
    let Some(entry) = meta.prefix(prefix.as_bytes()).next_back() else {
        return Ok(None);
    };
    let (key, value) = entry?;
    let id = key
        .get(prefix.len()..)
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    Ok(Some((id, value.to_vec())))
}

/// Rewrites `source` (the saved layers of `collection`, or all of it) as a new base in which
/// every whole document (and with `full`, every packed one too) is packed into new blocks,
/// plus a new packs map: the blocks of `state`'s packs map that the base still points at,
/// then the new blocks. `state` supplies the dictionaries and the old blocks; it must be a
/// state whose packs map holds every block `source` points at.
pub(crate) fn pack(
    store: &Store,
    state: &State,
    collection: &str,
    source: &DurableMap,
    full: bool,
    settings: PackSettings,
) -> Result<Packed> {
    let dictionary = last_dictionary(state, collection)?;
    let mut packer = BlockPacker::new(
        settings.level,
        dictionary.as_ref().map(|(id, b)| (*id, b.as_slice())),
    )?;
    let mut base = store.map_builder()?;
    let mut fresh = store.map_builder_with_block_size(PACKS_TABLE_BLOCK_BYTES)?;
    let mut kept: BTreeSet<u64> = BTreeSet::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    let mut current: Option<u64> = None;
    let mut pointer = Vec::new();
    let mut block_value = Vec::new();
    let mut decoder = Decoder::new()?;
    let mut new_blocks = 0u64;

    let mut flush = |number: u64,
                     pending: &mut Vec<u8>,
                     ends: &mut Vec<usize>,
                     fresh: &mut stele_durable::MapBuilder|
     -> Result<()> {
        let mut docs = Vec::with_capacity(ends.len());
        let mut start = 0;
        for &end in ends.iter() {
            docs.push(pending.get(start..end).unwrap_or_default());
            start = end;
        }
        packer.pack(&docs, &mut block_value)?;
        fresh.add(&block_key(number), &block_value)?;
        pending.clear();
        ends.clear();
        Ok(())
    };

    for entry in source.iter() {
        let (id, stored) = entry?;
        if let Some((number, _)) =
            crate::compress::parse_packed(stored).map_err(|e| Error::CorruptDocument {
                collection: collection.to_owned(),
                id: String::from_utf8_lossy(&id).into_owned(),
                reason: e.to_string(),
            })?
            && !full
        {
            kept.insert(number);
            base.add(&id, stored)?;
            continue;
        }
        let doc = crate::stored::decode_with(state, collection, &id, stored, &mut decoder)?;
        let number = match current {
            Some(n) => n,
            None => *current.insert(state.packing.allocate()),
        };
        crate::compress::encode_packed(number, ends.len() as u32, &mut pointer);
        base.add(&id, &pointer)?;
        pending.extend_from_slice(&doc);
        ends.push(pending.len());
        if pending.len() >= settings.block_bytes || ends.len() >= MAX_BLOCK_DOCS as usize {
            flush(number, &mut pending, &mut ends, &mut fresh)?;
            new_blocks += 1;
            current = None;
        }
    }
    if let Some(number) = current {
        flush(number, &mut pending, &mut ends, &mut fresh)?;
        new_blocks += 1;
    }
    let base = base.finish()?;
    let fresh = fresh.finish()?;
    // The new packs map: kept old blocks (smaller numbers), then the new ones.
    let mut packs = store.map_builder_with_block_size(PACKS_TABLE_BLOCK_BYTES)?;
    if !kept.is_empty() {
        let name = packs_name(collection);
        let Some(old) = state.collections.get(&name) else {
            return Err(Error::CorruptDocument {
                collection: collection.to_owned(),
                id: String::new(),
                reason: "the collection has packed documents but no packs map".to_owned(),
            });
        };
        for number in &kept {
            let Some(value) = old.get(&block_key(*number))? else {
                return Err(Error::CorruptDocument {
                    collection: collection.to_owned(),
                    id: format!("(packed block {number})"),
                    reason: "the block is missing from the packs map".to_owned(),
                });
            };
            packs.add(&block_key(*number), value)?;
        }
    }
    for entry in fresh.iter() {
        let (key, value) = entry?;
        packs.add(&key, value)?;
    }
    let packs = packs.finish()?;
    debug_assert_eq!(base.len(), source.len());
    debug_assert_eq!(packs.len(), kept.len() as u64 + new_blocks);
    Ok(Packed { base, packs })
}
