//! The bulk write of an import: each document written once, in its final form.
//!
//! 1. **Sort.** Converted documents go to the table sorter (`stele_table::Sorter`) keyed
//!    by id, the last of equal ids winning: sorted in memory within the import's budget,
//!    spilled as sorted runs in a folder of the database (`.stele-sort-*`) beyond it.
//!    Meanwhile a sample of the documents (reservoir sampling: evenly spread over the
//!    whole input, whatever its order) is kept for the dictionary.
//! 2. **Train.** The collection's compressor trains a dictionary for packed blocks on the
//!    sample, judged as a full compaction judges one (`Compressor::train_for_blocks`),
//!    with the trainer's middle parameters rather than searching them
//!    (`BlockTraining::without_parameter_search`), and one dictionary size rather than
//!    three ([`dictionary_divisor`]). An import of fewer bytes than
//!    [`DICTIONARY_MIN_BLOCKS`] blocks trains none: such a dictionary does not pay for
//!    its own bytes, and training it took most of a small import's time.
//! 3. **Pack.** The sorter hands the documents over in id order; they are cut into blocks
//!    as compaction cuts them and compressed on every core with that dictionary, into a
//!    new packs map (`crate::pack::sorted`).
//! 4. **Land.** One checkpoint switches the packs map in (`Database::land_import`): all
//!    or nothing. A failure before it leaves tables no manifest names, removed by the
//!    next checkpoint or open.

use super::options::{IResult, ImportError};
use crate::compress::{Compressor, NewDictionary, PackTarget};
use crate::db::{Landed, Landing, SORT_PREFIX};
use crate::error::Error;
use crate::pack::PackSettings;
use crate::pack::sorted::SortedPacker;
use crate::{Database, Result};
use std::sync::{Arc, Mutex};
use stele_table::{DuplicatePolicy, Sorter, SorterOptions};

/// Largest document kept in the sample (bigger ones are rare; the trainer cuts samples to
/// 16 KiB anyway, and held-out ones are packed whole).
const MAX_SAMPLE_DOC_BYTES: usize = 1 << 20;

/// Most bytes of documents sampled for the dictionary.
const MAX_SAMPLE_BYTES: usize = 2 << 20;

/// An import of fewer document bytes than this many blocks is packed without a dictionary,
/// without training one. On the import benchmark's files under 8 blocks (0.3 MB of JSON)
/// a dictionary stored none smaller: the trainings refused one (sample_analytics
/// customers and accounts, grades, students) or kept one that cost more than it saved
/// (github events, 30 documents: 13.5 KiB at rest with a 2 KiB dictionary, 10.7 KiB
/// without; countries-small 80.4 against 79.1 KiB), and they took 30-60 % of the import.
pub(super) const DICTIONARY_MIN_BLOCKS: usize = 8;

/// An import of fewer document bytes than this many blocks (1 MiB of 32 KiB blocks) trains
/// its dictionary at half the usual size, a bigger one at the usual size
/// ([`dictionary_divisor`]).
pub(super) const HALF_DICTIONARY_BELOW_BLOCKS: usize = 32;

/// The one dictionary size an import of `doc_bytes` in blocks of `block_bytes` trains, as
/// a divisor of the usual size (`BlockTraining::one_size`). A compaction trains three
/// sizes (1, 1/2, 1/4) and keeps the one that stores the held-out documents smallest; the
/// three trainings were most of the CPU of an import of 0.3-1 MB. Measured on the import
/// benchmark's 18 files that train one (2026-11-26, `docs/notes/store.md`), bytes at rest
/// against the three sizes: under 1 MiB, the half size stored 0.976-1.022x (geometric mean
/// 0.999; the usual size alone up to 1.060x: its bytes weigh on a small collection); from
/// 1 MiB on, the usual size stored exactly what the three did on 9 of 10 files (one 0.5 %
/// smaller), where the half one stored up to 4.6 % more (github-webhooks, twitter tweets).
pub(super) fn dictionary_divisor(doc_bytes: u64, block_bytes: usize) -> usize {
    let half_below = block_bytes.saturating_mul(HALF_DICTIONARY_BELOW_BLOCKS) as u64;
    if doc_bytes < half_below { 2 } else { 1 }
}

/// Documents sampled for the dictionary: a reservoir of at most `max_docs` documents and
/// about `max_bytes` bytes, each document of the input equally likely to be in it.
#[derive(Debug)]
struct Sample {
    docs: Vec<Vec<u8>>,
    bytes: usize,
    max_docs: usize,
    max_bytes: usize,
    seen: u64,
    /// SplitMix64 state: deterministic, so the same input trains the same dictionary.
    rng: u64,
}

impl Sample {
    fn new(max_docs: usize, max_bytes: usize) -> Self {
        Sample {
            docs: Vec::new(),
            bytes: 0,
            max_docs: max_docs.max(1),
            max_bytes,
            seen: 0,
            rng: 0x5eed_1e55_c0ff_ee00,
        }
    }

    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn offer(&mut self, doc: &[u8]) {
        self.seen += 1;
        if doc.len() > MAX_SAMPLE_DOC_BYTES {
            return;
        }
        if self.docs.len() < self.max_docs && self.bytes + doc.len() <= self.max_bytes {
            self.bytes += doc.len();
            self.docs.push(doc.to_vec());
            return;
        }
        let slot = (self.next_random() % self.seen) as usize;
        if let Some(old) = self.docs.get_mut(slot)
            && self.bytes - old.len() + doc.len() <= self.max_bytes
        {
            self.bytes = self.bytes - old.len() + doc.len();
            old.clear();
            old.extend_from_slice(doc);
        }
    }
}

/// What the bulk write did.
#[derive(Debug, Clone, Copy)]
pub(super) struct BulkOutcome {
    /// Documents of the import that landed (ids unique).
    pub(super) imported: u64,
    /// Documents in the collection afterwards.
    pub(super) landed: Landed,
    /// Compressed bytes of the imported blocks.
    pub(super) packed_bytes: u64,
    /// Bytes the sorter spilled to disk (0: sorted in memory).
    pub(super) spilled_bytes: u64,
}

/// Sorts, samples, packs and lands the documents of one import.
pub(super) struct BulkWriter {
    sorter: Sorter,
    sample: Sample,
    /// Bytes of the documents pushed (ids not counted).
    doc_bytes: u64,
    settings: PackSettings,
    compressor: Arc<Mutex<Compressor>>,
}

impl BulkWriter {
    /// A writer for `collection` of `db`, packing with `settings`, holding at most about
    /// `budget_bytes` (the sorter gets most of it; see `ImportOptions::memory_budget_bytes`).
    pub(super) fn new(
        db: &Database,
        collection: &str,
        settings: PackSettings,
        budget_bytes: usize,
    ) -> IResult<Self> {
        let compressor = db.compressor_of(collection)?;
        let (sample_docs, sample_bytes) = {
            let c = compressor.lock().map_err(|_| poisoned())?;
            let o = c.options();
            // Whole documents, so up to twice the bytes a training keeps (it cuts them).
            (o.sample_docs, o.sample_bytes.saturating_mul(2))
        };
        // At most 2 MiB: training on the compressor's full 16 MiB took 0.6 s of a 1 s import
        // of 4 MB of tweets, and stored them 1 % smaller.
        let sample_bytes = sample_bytes.min(budget_bytes / 8).min(MAX_SAMPLE_BYTES);
        let sort_budget = (budget_bytes - budget_bytes / 4).max(1 << 20);
        let sorter = Sorter::new(
            SorterOptions::default()
                .memory_budget_bytes(sort_budget)
                .temp_dir(sort_dir(db)?)
                .duplicates(DuplicatePolicy::KeepLast),
        )
        .map_err(Error::from)?;
        Ok(BulkWriter {
            sorter,
            sample: Sample::new(sample_docs, sample_bytes),
            doc_bytes: 0,
            settings,
            compressor,
        })
    }

    /// Adds document `doc` as `id` (a later document of the same id replaces it).
    pub(super) fn push(&mut self, id: &[u8], doc: &[u8]) -> IResult<()> {
        self.sorter.add(id, doc).map_err(Error::from)?;
        self.sample.offer(doc);
        self.doc_bytes += doc.len() as u64;
        Ok(())
    }

    /// Trains the dictionary, packs the sorted documents and lands them in `collection`.
    /// `cancelled` is asked every 4,096 documents packed; yes stops the import
    /// ([`ImportError::Cancelled`]) before anything landed.
    pub(super) fn finish(
        self,
        db: &Database,
        collection: &str,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> IResult<BulkOutcome> {
        let BulkWriter {
            sorter,
            sample,
            doc_bytes,
            settings,
            compressor,
        } = self;
        let spilled_bytes = sorter.spilled_bytes();
        let docs = sample.seen;
        let small = doc_bytes < (settings.block_bytes * DICTIONARY_MIN_BLOCKS) as u64;
        let dictionary = if small {
            None
        } else {
            let divisor = dictionary_divisor(doc_bytes, settings.block_bytes);
            train(&compressor, &sample.docs, settings, docs, divisor)?
        };
        drop(sample);
        let state = db.visible_state();
        let current = crate::pack::last_dictionary(&state, collection)?;
        let dict_for_blocks = match &dictionary {
            Some(d) => Some((d.id(), d.bytes())),
            None => current.as_ref().map(|(id, b)| (*id, b.as_slice())),
        };
        let mut packer =
            SortedPacker::new(&db.inner.store, &state.packing, settings, dict_for_blocks)?;
        let mut failed: Option<ImportError> = None;
        let mut packed = 0u64;
        let sorted = sorter.finish_each(&mut |id, doc| {
            packed += 1;
            let pushed = if packed.is_multiple_of(4096) && cancelled() {
                Err(ImportError::Cancelled)
            } else {
                packer.push(id, doc).map_err(ImportError::from)
            };
            pushed.map_err(|e| {
                failed = Some(e);
                stele_table::Error::Internal("packing sorted documents stopped")
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        sorted.map_err(Error::from)?;
        let (packs, imported, packed_bytes) = packer.finish()?;
        let landed = db.land_import(
            collection,
            Landing {
                packs,
                documents: imported,
                dictionary: dictionary.map(|d| (d, compressor)),
            },
        )?;
        Ok(BulkOutcome {
            imported,
            landed,
            packed_bytes,
            spilled_bytes,
        })
    }
}

/// A dictionary for the blocks trained on `samples` by `compressor`, of 1/`divisor` of the
/// usual size, if it beats the collection's current one (for `docs` documents in blocks as
/// `settings` cuts them).
fn train(
    compressor: &Mutex<Compressor>,
    samples: &[Vec<u8>],
    settings: PackSettings,
    docs: u64,
    divisor: usize,
) -> Result<Option<NewDictionary>> {
    let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let target = PackTarget {
        block_bytes: settings.block_bytes,
        level: settings.level,
        docs,
    };
    let training = compressor
        .lock()
        .map_err(|_| poisoned())?
        .prepare_training_for_blocks(&refs, target)?;
    let Some(trained) = training
        .map(|t| t.without_parameter_search().one_size(divisor).run())
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    compressor
        .lock()
        .map_err(|_| poisoned())?
        .finish_training_for_blocks(trained)
}

fn poisoned() -> Error {
    Error::CommitFailed {
        reason: "a thread panicked while holding a collection's compressor".into(),
    }
}

/// The folder the sorter's temp folder (`.stele-sort-*`, [`SORT_PREFIX`]) goes in: the
/// database folder (same file system; leftovers of a killed import are removed at the
/// next open).
fn sort_dir(db: &Database) -> IResult<std::path::PathBuf> {
    let _ = SORT_PREFIX;
    Ok(db.dir().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{ImportOptions, import_reader};

    /// JSON Lines of `n` documents of about 100 bytes.
    fn lines(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!(
                    "{{\"id\":\"k{i:06}\",\"city\":\"{}\",\"n\":{i},\"note\":\"{}\"}}\n",
                    ["Lima", "Oslo", "Pune"][i % 3],
                    "y".repeat(i % 40)
                )
            })
            .collect()
    }

    /// Fewer bytes than `DICTIONARY_MIN_BLOCKS` blocks: no training runs; more: one does.
    #[test]
    fn only_imports_of_enough_blocks_train_a_dictionary() {
        for (docs, trains) in [(30, false), (2_000, true)] {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let db = Database::open_with(
                dir.path(),
                crate::DatabaseOptions::default().pack_block_bytes(4096),
            )
            .expect("open");
            let text = lines(docs);
            assert_eq!(text.len() >= 8 * 4096, trains, "{} bytes", text.len());
            let opts = ImportOptions::new().id_field("id");
            import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).expect("import");
            let stats = db
                .compressor_of("c")
                .expect("a compressor")
                .lock()
                .expect("not poisoned")
                .stats();
            assert_eq!(stats.trainings > 0, trains, "{docs} documents: {stats:?}");
            assert_eq!(db.snapshot().count("c"), docs as u64);
        }
    }

    #[test]
    fn imports_under_32_blocks_train_a_half_size_dictionary() {
        let block = 32 << 10;
        assert_eq!(dictionary_divisor(0, block), 2);
        assert_eq!(dictionary_divisor((32 * block - 1) as u64, block), 2);
        assert_eq!(dictionary_divisor((32 * block) as u64, block), 1);
        assert_eq!(dictionary_divisor(u64::MAX, usize::MAX), 1);
    }

    /// The dictionary an import lands with, in bytes (`None`: none).
    fn imported_dictionary_bytes(docs: usize) -> Option<usize> {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let db = Database::open_with(
            dir.path(),
            crate::DatabaseOptions::default().pack_block_bytes(4096),
        )
        .expect("open");
        let opts = ImportOptions::new().id_field("id");
        let text = lines(docs);
        import_reader(&db, "c", "in", text.as_bytes(), None, &opts, |_| {}).expect("import");
        let state = db.visible_state();
        crate::pack::last_dictionary(&state, "c")
            .expect("the dictionary read")
            .map(|(_, bytes)| bytes.len())
    }

    /// One dictionary size, from the import's bytes: under 32 blocks half the usual size
    /// (a tenth of the training bytes here, the samples being small), from 32 blocks on the
    /// usual size.
    #[test]
    fn an_import_trains_one_dictionary_sized_by_its_bytes() {
        // 4 KiB blocks: half size under 128 KiB of documents.
        let small = lines(900);
        assert!(
            small.len() > 8 * 4096 && small.len() < 32 * 4096,
            "{}",
            small.len()
        );
        let big = lines(3_000);
        assert!(big.len() > 32 * 4096);
        let small_dict = imported_dictionary_bytes(900).expect("a dictionary");
        let big_dict = imported_dictionary_bytes(3_000).expect("a dictionary");
        // Both sample about 50 bytes a document (stored form), the big one 1,024 of its
        // documents: about 43 and 50 KiB of training bytes, usual sizes of about 4.3 and 5 KiB
        // (zstd's trainer fills the size asked). Half the first, all of the second.
        assert!(
            small_dict * 2 <= big_dict,
            "{small_dict} and {big_dict} bytes"
        );
        assert!(big_dict > 4096, "{big_dict} bytes");
    }
}
