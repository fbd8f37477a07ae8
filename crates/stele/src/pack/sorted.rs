//! Packing documents that arrive already sorted by id (a bulk import's sorter output)
//! straight into a new packs map: blocks are cut by the same rule as compaction's
//! ([`block_is_full`]) and compressed on every core, in rounds of a few blocks per thread,
//! then written in id order with block numbers handed out in that order.
//!
//! A round is compressed while the caller fills the next one ([`InFlight`]): each
//! thread's packer, back from its share of one round, takes its share of the next at once,
//! so the cores compress while the caller's thread reads the sorter and cuts blocks (and
//! a thread that drew the cheaper share does not wait for the other). Block `i` of a round
//! always goes to packer `i / share`, as before: the blocks stored do not depend on timing.
//! A caller running on a thread of the pool itself compresses each round in place instead
//! (waiting there for its own pool could leave no thread to do the work).
//!
//! Memory: the block being filled, plus two rounds of `2 * threads` filled blocks (one being
//! compressed, one being filled) and the compressed values of one; about
//! `5 * threads * 8 * block_bytes` at most (blocks stop at 8 times their size,
//! `crate::compress::MAX_BLOCK_GROWTH`): 2.5 MiB for 2 threads and 32 KiB blocks.

use super::packing::Packing;
use super::{PACKS_TABLE_BLOCK_BYTES, PackSettings};
use crate::compress::{BlockPacker, DictionaryId, MAX_BLOCK_DOCS, block_is_full};
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::sync::{Arc, mpsc};
use stele_durable::{DurableMap, MapBuilder, Store};

/// A compressed block and its last id.
type PackedBlock = (Vec<u8>, Vec<u8>);

/// What a packer sends back from its share of a round: its index, itself, and the share's
/// compressed blocks.
type ShareDone = (usize, BlockPacker, Result<Vec<PackedBlock>>);

/// A round of blocks being compressed on the pool: each share went to one packer.
#[derive(Debug)]
struct InFlight {
    done: mpsc::Receiver<ShareDone>,
    /// Documents of each block, in order.
    counts: Vec<usize>,
    /// Shares not back yet.
    out: usize,
    /// Each share's blocks, by packer, once back.
    shares: Vec<Option<Result<Vec<PackedBlock>>>>,
}

/// Ids and documents of one block being filled or waiting to be compressed.
#[derive(Debug, Default)]
struct PendingBlock {
    ids: Vec<u8>,
    id_ends: Vec<usize>,
    docs: Vec<u8>,
    doc_ends: Vec<usize>,
}

impl PendingBlock {
    /// An empty block with room for one like `like` and an eighth more: blocks of one
    /// import are alike, and a block grown from empty buffers copied each of them over
    /// again at every doubling (`realloc`, 1-2 % of the CPU of an import of small
    /// documents).
    fn like(like: &PendingBlock) -> Self {
        let room = |n: usize| n + n / 8;
        PendingBlock {
            ids: Vec::with_capacity(room(like.ids.len())),
            id_ends: Vec::with_capacity(room(like.id_ends.len())),
            docs: Vec::with_capacity(room(like.docs.len())),
            doc_ends: Vec::with_capacity(room(like.doc_ends.len())),
        }
    }

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
pub(crate) struct SortedPacker {
    out: MapBuilder,
    packing: Arc<Packing>,
    settings: PackSettings,
    /// One packer per thread (each prepares the dictionary once); `None` while it
    /// compresses a share of the round in flight.
    packers: Vec<Option<BlockPacker>>,
    filling: PendingBlock,
    full: Vec<PendingBlock>,
    in_flight: Option<InFlight>,
    value: Vec<u8>,
    docs_written: u64,
    /// Compressed bytes of the blocks written (values, without the table's framing).
    packed_bytes: u64,
}

impl SortedPacker {
    /// A packer writing into a new packs map of `store`, with block numbers from `packing`
    /// and blocks compressed with `dictionary` (its id and bytes as persisted), if any.
    pub(crate) fn new(
        store: &Store,
        packing: Arc<Packing>,
        settings: PackSettings,
        dictionary: Option<(DictionaryId, &[u8])>,
    ) -> Result<Self> {
        let threads = rayon::current_num_threads().max(1);
        let packers = (0..threads)
            .map(|_| {
                BlockPacker::new(settings.level, dictionary)
                    .map(|p| Some(p.streams(settings.streams)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SortedPacker {
            out: store.map_builder_with_block_size(PACKS_TABLE_BLOCK_BYTES)?,
            packing,
            settings,
            packers,
            filling: PendingBlock::default(),
            full: Vec::new(),
            in_flight: None,
            value: Vec::new(),
            docs_written: 0,
            packed_bytes: 0,
        })
    }

    /// This packer, taking the documents pushed as valid (see
    /// [`BlockPacker::trusting_documents`]).
    ///
    /// # Safety
    ///
    /// Every document later pushed must be one that `stele_doc::validate` accepts (for
    /// example, one `DocumentWriter` just wrote in this process and kept in memory since).
    #[must_use]
    pub(crate) unsafe fn trusting_documents(mut self) -> Self {
        self.packers = self
            .packers
            .into_iter()
            // SAFETY: the caller's promise covers every document this packer's packers get.
            .map(|p| p.map(|p| unsafe { p.trusting_documents() }))
            .collect();
        self
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
            let next = PendingBlock::like(&self.filling);
            self.full.push(std::mem::replace(&mut self.filling, next));
            if self.full.len() >= 2 * self.packers.len() {
                self.write_full()?;
            }
        }
        Ok(())
    }

    /// Sends the full blocks waiting to be compressed, each packer a share of them in
    /// order, then writes the round sent before (waiting for it), each of its packers
    /// taking its share of this round as soon as it is back.
    fn write_full(&mut self) -> Result<()> {
        if self.full.is_empty() {
            return Ok(());
        }
        if rayon::current_thread_index().is_some() {
            return self.write_full_in_place();
        }
        let per_share = self.full.len().div_ceil(self.packers.len());
        let counts: Vec<usize> = self.full.iter().map(PendingBlock::len).collect();
        let mut shares: Vec<Option<Vec<PendingBlock>>> = Vec::new();
        let mut blocks = std::mem::take(&mut self.full).into_iter().peekable();
        while blocks.peek().is_some() {
            shares.push(Some(blocks.by_ref().take(per_share).collect()));
        }
        shares.resize_with(self.packers.len(), || None);
        let (sender, done) = mpsc::channel();
        let mut round = InFlight {
            done,
            counts,
            out: 0,
            shares: (0..self.packers.len()).map(|_| None).collect(),
        };
        let mut send =
            |i: usize, packer: BlockPacker, packers: &mut [Option<BlockPacker>]| match shares
                .get_mut(i)
                .and_then(Option::take)
            {
                Some(blocks) => {
                    round.out += 1;
                    compress_share(i, packer, blocks, sender.clone());
                }
                None => packers[i] = Some(packer),
            };
        for i in 0..self.packers.len() {
            if let Some(packer) = self.packers[i].take() {
                send(i, packer, &mut self.packers);
            }
        }
        let before = self.in_flight.take();
        if let Some(mut before) = before {
            while before.out > 0 {
                let (i, packer, blocks) = before.done.recv().map_err(|_| share_lost())?;
                before.out -= 1;
                before.shares[i] = Some(blocks);
                send(i, packer, &mut self.packers);
            }
            self.in_flight = Some(round);
            return self.write_round(before);
        }
        self.in_flight = Some(round);
        Ok(())
    }

    /// Writes the blocks of `round` (all its shares back) in order.
    fn write_round(&mut self, round: InFlight) -> Result<()> {
        let mut counts = round.counts.into_iter();
        for share in round.shares.into_iter().flatten() {
            for (last_id, block) in share? {
                self.write_block(&last_id, &block, counts.next().unwrap_or(0))?;
            }
        }
        Ok(())
    }

    /// Waits for the round in flight and writes it.
    fn drain(&mut self) -> Result<()> {
        let Some(mut round) = self.in_flight.take() else {
            return Ok(());
        };
        while round.out > 0 {
            let (i, packer, blocks) = round.done.recv().map_err(|_| share_lost())?;
            round.out -= 1;
            round.shares[i] = Some(blocks);
            self.packers[i] = Some(packer);
        }
        self.write_round(round)
    }

    /// Compresses the full blocks waiting on the caller's pool, each packer a share of
    /// them, then writes them in id order.
    fn write_full_in_place(&mut self) -> Result<()> {
        self.drain()?;
        let per_share = self.full.len().div_ceil(self.packers.len());
        let packed: Vec<Result<Vec<PackedBlock>>> = self
            .full
            .par_chunks(per_share)
            .zip(self.packers.par_iter_mut())
            .map(|(blocks, packer)| match packer {
                Some(packer) => blocks.iter().map(|b| b.compress(packer)).collect(),
                None => Err(share_lost()),
            })
            .collect();
        let counts: Vec<usize> = self.full.iter().map(PendingBlock::len).collect();
        let mut counts = counts.into_iter();
        for run in packed {
            for (last_id, block) in run? {
                self.write_block(&last_id, &block, counts.next().unwrap_or(0))?;
            }
        }
        self.full.clear();
        Ok(())
    }

    /// Writes one compressed block of `docs` documents under the next block number.
    fn write_block(&mut self, last_id: &[u8], block: &[u8], docs: usize) -> Result<()> {
        self.value.clear();
        crate::bytes::put_varint(&mut self.value, self.packing.allocate());
        self.value.extend_from_slice(block);
        self.out.add(last_id, &self.value)?;
        self.packed_bytes += block.len() as u64;
        self.docs_written += docs as u64;
        Ok(())
    }

    /// Writes the last blocks and the map; returns it with the number of documents it holds
    /// and the compressed bytes of its blocks.
    pub(crate) fn finish(mut self) -> Result<(DurableMap, u64, u64)> {
        if self.filling.len() > 0 {
            self.full.push(std::mem::take(&mut self.filling));
        }
        self.write_full()?;
        self.drain()?;
        let map = self.out.finish().map_err(Error::from)?;
        Ok((map, self.docs_written, self.packed_bytes))
    }
}

/// Compresses `blocks` with `packer` on the pool, then sends them back with the packer as
/// share `i`. A panic while compressing comes back as an error (the import fails), not as
/// the end of the process.
fn compress_share(
    i: usize,
    mut packer: BlockPacker,
    blocks: Vec<PendingBlock>,
    done: mpsc::Sender<ShareDone>,
) {
    rayon::spawn(move || {
        let packed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            blocks
                .iter()
                .map(|b| b.compress(&mut packer))
                .collect::<Result<Vec<_>>>()
        }))
        .unwrap_or_else(|_| {
            Err(Error::CommitFailed {
                reason: "a thread panicked while compressing imported blocks".into(),
            })
        });
        // The receiver is gone only if the import already failed.
        let _ = done.send((i, packer, packed));
    });
}

/// A share of a round that never came back (its thread gone): the import fails.
fn share_lost() -> Error {
    Error::CommitFailed {
        reason: "a compression thread of the import stopped without its result".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::packing::Packing;

    /// Keys and values, in order.
    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    /// Map entries (key, value) of `map`.
    fn entries(map: &DurableMap) -> Pairs {
        map.iter()
            .map(|e| {
                let (k, v) = e.expect("an entry");
                (k.to_vec(), v.to_vec())
            })
            .collect()
    }

    /// Packs `docs` into a new map of a new store in `dir`: its entries, documents, bytes.
    fn pack(dir: &std::path::Path, docs: &[(Vec<u8>, Vec<u8>)]) -> (Pairs, u64) {
        pack_with(dir, docs, false)
    }

    /// As [`pack`], the documents taken as valid if `trusted`.
    fn pack_with(
        dir: &std::path::Path,
        docs: &[(Vec<u8>, Vec<u8>)],
        trusted: bool,
    ) -> (Pairs, u64) {
        let store = Store::open(dir).expect("a store");
        let packing = Arc::new(Packing::new(0, 0));
        let settings = PackSettings {
            block_bytes: 4096,
            level: 3,
            streams: true,
        };
        let mut packer = SortedPacker::new(&store, packing, settings, None).expect("a packer");
        if trusted {
            // SAFETY: the tests give documents `DocumentWriter::from_json` wrote.
            packer = unsafe { packer.trusting_documents() };
        }
        for (id, doc) in docs {
            packer.push(id, doc).expect("pushed");
        }
        let (map, count, _) = packer.finish().expect("finished");
        (entries(&map), count)
    }

    /// Documents taken as valid (an import's, just written) are packed into the same blocks
    /// as documents validated first.
    #[test]
    fn trusted_documents_pack_as_validated_ones() {
        let docs = documents();
        let (a, b) = (
            tempfile::tempdir().expect("a folder"),
            tempfile::tempdir().expect("a folder"),
        );
        let validated = pack_with(a.path(), &docs, false);
        assert_eq!(validated, pack_with(b.path(), &docs, true));
        assert_eq!(validated.1, 5_000);
    }

    /// 5,000 documents (ids `k000000`...), some with strings a stream form holds.
    fn documents() -> Pairs {
        let mut writer = stele_doc::DocumentWriter::with_options(crate::write_options());
        (0..5_000)
            .map(|i| {
                let json = format!(
                    "{{\"n\":{i},\"city\":\"{}\",\"note\":\"{}\"}}",
                    ["Lima", "Oslo", "Pune"][i % 3],
                    "y".repeat(i % 50)
                );
                let doc = writer.from_json(json.as_bytes()).expect("a document");
                (format!("k{i:06}").into_bytes(), doc)
            })
            .collect()
    }

    /// From a thread outside the pool each round is compressed while the next is filled;
    /// from a thread of the pool each round in place. Either way block `i` of a round goes
    /// to the same packer (whose stream trials depend on the blocks it packed), so the map
    /// is the same, whatever the timing.
    #[test]
    fn blocks_are_the_same_compressed_beside_the_caller_or_in_place() {
        let docs = documents();
        let (a, b) = (
            tempfile::tempdir().expect("a folder"),
            tempfile::tempdir().expect("a folder"),
        );
        assert!(rayon::current_thread_index().is_none());
        let beside = pack(a.path(), &docs);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .build()
            .expect("a pool");
        let in_place = pool.install(|| pack(b.path(), &docs));
        assert_eq!(beside.1, 5_000);
        // Many rounds: 2 blocks per packer each.
        assert!(
            beside.0.len() > 8 * rayon::current_num_threads(),
            "{}",
            beside.0.len()
        );
        assert_eq!(beside, in_place);
    }
}
