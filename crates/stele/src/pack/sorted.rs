//! Packing documents that arrive already sorted by id (a bulk import's sorter output)
//! straight into a new packs map: blocks are cut by the same rule as compaction's
//! ([`block_is_full`]) and compressed on every core, a few blocks per thread at a time,
//! then written in id order with block numbers handed out in that order.
//!
//! Memory: the block being filled, plus `2 * threads` filled blocks waiting for the
//! compression round and their compressed values; about `3 * threads * 8 * block_bytes`
//! at most (blocks stop at 8 times their size, `crate::compress::MAX_BLOCK_GROWTH`).

use super::packing::Packing;
use super::{PACKS_TABLE_BLOCK_BYTES, PackSettings};
use crate::compress::{BlockPacker, DictionaryId, MAX_BLOCK_DOCS, block_is_full};
use crate::error::{Error, Result};
use rayon::prelude::*;
use stele_durable::{DurableMap, MapBuilder, Store};

/// A compressed block and its last id.
type PackedBlock = (Vec<u8>, Vec<u8>);

/// Ids and documents of one block being filled or waiting to be compressed.
#[derive(Debug, Default)]
struct PendingBlock {
    ids: Vec<u8>,
    id_ends: Vec<usize>,
    docs: Vec<u8>,
    doc_ends: Vec<usize>,
}

impl PendingBlock {
    fn bytes(&self) -> usize {
        self.ids.len() + self.docs.len()
    }

    fn len(&self) -> usize {
        self.id_ends.len()
    }

    fn push(&mut self, id: &[u8], doc: &[u8]) {
        self.ids.extend_from_slice(id);
        self.id_ends.push(self.ids.len());
        self.docs.extend_from_slice(doc);
        self.doc_ends.push(self.docs.len());
    }

    /// The block value (compressed ids and documents) and its last id.
    fn compress(&self, packer: &mut BlockPacker) -> Result<PackedBlock> {
        let ids = crate::bytes::split_at_ends(&self.ids, &self.id_ends);
        let docs = crate::bytes::split_at_ends(&self.docs, &self.doc_ends);
        let mut out = Vec::new();
        packer.pack_documents(&ids, &docs, &mut out)?;
        let last_id = ids.last().map(|id| id.to_vec()).unwrap_or_default();
        Ok((last_id, out))
    }
}

/// Packs documents given in strictly ascending id order into a new packs map.
#[derive(Debug)]
pub(crate) struct SortedPacker<'s> {
    out: MapBuilder,
    packing: &'s Packing,
    settings: PackSettings,
    /// One packer per thread (each prepares the dictionary once).
    packers: Vec<BlockPacker>,
    filling: PendingBlock,
    full: Vec<PendingBlock>,
    value: Vec<u8>,
    docs_written: u64,
    /// Compressed bytes of the blocks written (values, without the table's framing).
    packed_bytes: u64,
}

impl<'s> SortedPacker<'s> {
    /// A packer writing into a new packs map of `store`, with block numbers from `packing`
    /// and blocks compressed with `dictionary` (its id and bytes as persisted), if any.
    pub(crate) fn new(
        store: &Store,
        packing: &'s Packing,
        settings: PackSettings,
        dictionary: Option<(DictionaryId, &[u8])>,
    ) -> Result<Self> {
        let threads = rayon::current_num_threads().max(1);
        let packers = (0..threads)
            .map(|_| {
                BlockPacker::new(settings.level, dictionary).map(|p| p.streams(settings.streams))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SortedPacker {
            out: store.map_builder_with_block_size(PACKS_TABLE_BLOCK_BYTES)?,
            packing,
            settings,
            packers,
            filling: PendingBlock::default(),
            full: Vec::new(),
            value: Vec::new(),
            docs_written: 0,
            packed_bytes: 0,
        })
    }

    /// Adds document `doc` as `id` (ids strictly ascending across calls).
    pub(crate) fn push(&mut self, id: &[u8], doc: &[u8]) -> Result<()> {
        self.filling.push(id, doc);
        if block_is_full(
            self.filling.bytes(),
            self.filling.len(),
            self.settings.block_bytes,
        ) || self.filling.len() * 2 >= MAX_BLOCK_DOCS as usize
        {
            self.full.push(std::mem::take(&mut self.filling));
            if self.full.len() >= 2 * self.packers.len() {
                self.write_full()?;
            }
        }
        Ok(())
    }

    /// Compresses the full blocks waiting, each thread a run of them with its own packer,
    /// then writes them in id order.
    fn write_full(&mut self) -> Result<()> {
        if self.full.is_empty() {
            return Ok(());
        }
        let per_thread = self.full.len().div_ceil(self.packers.len());
        let packed: Vec<Result<Vec<PackedBlock>>> = self
            .full
            .par_chunks(per_thread)
            .zip(self.packers.par_iter_mut())
            .map(|(blocks, packer)| blocks.iter().map(|b| b.compress(packer)).collect())
            .collect();
        let counts: Vec<usize> = self.full.iter().map(PendingBlock::len).collect();
        let mut counts = counts.into_iter();
        for run in packed {
            for (last_id, block) in run? {
                self.value.clear();
                crate::bytes::put_varint(&mut self.value, self.packing.allocate());
                self.value.extend_from_slice(&block);
                self.out.add(&last_id, &self.value)?;
                self.packed_bytes += block.len() as u64;
                self.docs_written += counts.next().unwrap_or(0) as u64;
            }
        }
        self.full.clear();
        Ok(())
    }

    /// Writes the last blocks and the map; returns it with the number of documents it holds
    /// and the compressed bytes of its blocks.
    pub(crate) fn finish(mut self) -> Result<(DurableMap, u64, u64)> {
        if self.filling.len() > 0 {
            self.full.push(std::mem::take(&mut self.filling));
        }
        self.write_full()?;
        let map = self.out.finish().map_err(Error::from)?;
        Ok((map, self.docs_written, self.packed_bytes))
    }
}
