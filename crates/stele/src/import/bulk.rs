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
//!    (`BlockTraining::without_parameter_search`), and one dictionary size, the usual one,
//!    rather than three (`BlockTraining::one_size`). An import of fewer bytes than
//!    [`DICTIONARY_MIN_BLOCKS`] blocks trains none: such a dictionary does not pay for
//!    its own bytes, and training it took most of a small import's time.
//! 3. **Pack.** The sorter hands the documents over in id order; they are cut into blocks
//!    as compaction cuts them and compressed on every core with that dictionary, into a
//!    new packs map (`crate::pack::sorted`); an import too small to train one packs at a
//!    lower level ([`super::SMALL_IMPORT_PACK_LEVEL`]).
//! 4. **Land.** One checkpoint switches the packs map in (`Database::land_import`): all
//!    or nothing. A failure before it leaves tables no manifest names, removed by the
//!    next checkpoint or open.
//!
//! An input whose ids ascend (a JSON Lines file big enough for a dictionary, of numbered
//! records or sorted by its id field) skips steps 1 and 2's waiting: the dictionary trains
//! first, on documents sampled from the whole file before it is read
//! ([`super::presample`]), and each block is packed as soon as it is full
//! ([`BulkWriter::streaming`]), overlapping the packing with the reading and converting,
//! with no sorter (no copy into its arena, no spill). On the
//! import benchmark's four files of 17-53 MB it stores within 0.3 % of the sorted
//! import's bytes (the samples differ).

use super::options::{IResult, ImportError};
use super::presample::Presample;
use super::sample::{MAX_SAMPLE_DOCS, Sample, docs_to_sample, spread, train_share};
use crate::compress::{Compressor, NewDictionary, PackTarget};
use crate::db::{Landed, Landing, SORT_PREFIX};
use crate::error::Error;
use crate::pack::PackSettings;
use crate::pack::sorted::SortedPacker;
use crate::{Database, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use stele_table::{DuplicatePolicy, Sorter, SorterOptions};

/// Most bytes of documents sampled for the dictionary.
const MAX_SAMPLE_BYTES: usize = 2 << 20;

/// An import of fewer document bytes than this many blocks (1 MiB of 32 KiB blocks) is
/// packed without a dictionary, without training one; a later full compaction trains one
/// if it pays (`Compressor::train_for_blocks`). Under 8 blocks (0.3 MB of JSON) a
/// dictionary stored none of the import benchmark's files smaller: the trainings refused
/// one or kept one that cost more than it saved (github events: 13.5 KiB at rest with its
/// 2 KiB dictionary, 10.7 KiB without). From 8 to 32 blocks (the benchmark's 8 files of
/// 0.3-0.7 MB) a dictionary stored them 0-17 % smaller (7 % on most, 0 where the training
/// kept none) and took half of the import's CPU (books 25.6 against 13.9 ms, theaters 24.8
/// against 14.6): there a collection has no size target but "smaller than its JSON", which
/// it meets without one by far (0.05-0.48x), and the import's fixed costs are most of its
/// time. From 1 MB on a collection must land within 1.2x whole-file zstd -3, which needs
/// the dictionary (`docs/notes/store.md`, "Import time: one dictionary size").
pub(super) const DICTIONARY_MIN_BLOCKS: usize = 32;

/// The dictionary of an import trains on at most 1/`SAMPLE_SHARE` of the import's document
/// bytes (and at most [`MAX_SAMPLE_BYTES`]): training costs about what packing the sample
/// costs, so an import of a few MB of big documents, whose 2 MiB sample was half of it,
/// spent more on the dictionary than on its blocks. Measured on the import benchmark's two
/// such files (2026-11-26, under load, best of 3): twitter tweets (4.09 MB of JSON, 966
/// documents) trained in 30-60 ms instead of 90-98 ms and stored 530,123 bytes instead of
/// 521,275 (+1.7 %, 0.95x zstd -3); github-webhooks (3.25 MB, 329 documents) in 21-26 ms
/// instead of 49-56 and stored 71,122 bytes instead of 70,914 (+0.3 %). Imports of 8 MiB
/// of documents or more, and those of small documents (whose sample holds
/// `CompressOptions::sample_docs` documents first), train as before.
const SAMPLE_SHARE: u64 = 4;

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
    /// Whether the blocks were packed as the documents came (`Mode::Streaming`).
    pub(super) streamed: bool,
}

/// Sorts, samples, packs and lands the documents of one import.
pub(super) struct BulkWriter {
    mode: Mode,
    /// Bytes of the documents pushed (ids not counted).
    doc_bytes: u64,
    settings: PackSettings,
    /// The zstd level of an import of fewer bytes than [`DICTIONARY_MIN_BLOCKS`] blocks.
    small_level: i32,
    compressor: Arc<Mutex<Compressor>>,
    /// Whether every document pushed was just written by a `DocumentWriter` of this
    /// import ([`BulkWriter::converted`]).
    converted: bool,
    /// The zstd level the blocks are packed at when a dictionary is trained and blocks of
    /// the sample come out nearly as small with it as at `settings.level`
    /// ([`BulkWriter::level_from_sample`]).
    fast_level: Option<i32>,
    /// The compressor's sample ring (`CompressOptions::sample_docs`): the fewest documents
    /// of the sample an import trains on, if it holds them ([`train_share`]).
    ring_docs: usize,
}

/// How the documents reach their blocks.
#[expect(
    clippy::large_enum_variant,
    reason = "one per import, in a box (`Sink::Bulk`)"
)]
enum Mode {
    /// In any order: sorted (spilled beyond the budget), sampled on the way, packed at the
    /// end with a dictionary trained on the sample.
    Sorting { sorter: Sorter, sample: Sample },
    /// In ascending id order, with the dictionary trained before the first one came
    /// ([`BulkWriter::streaming`]): each block packed as soon as it is full.
    Streaming(Box<Streaming>),
}

/// The state of a [`Mode::Streaming`] import.
struct Streaming {
    packer: SortedPacker,
    dictionary: Option<NewDictionary>,
    /// The id pushed last (ids must ascend).
    last_id: Vec<u8>,
    pushed: u64,
    /// Set when an id does not sort after the one before (the import then fails, to be
    /// started again sorted: `super::import_path`).
    out_of_order: Arc<AtomicBool>,
}

impl BulkWriter {
    /// A writer for `collection` of `db`, packing with `settings` (at `small_level` if the
    /// import turns out too small to train a dictionary), holding at most about
    /// `budget_bytes` (the sorter gets most of it; see `ImportOptions::memory_budget_bytes`).
    pub(super) fn new(
        db: &Database,
        collection: &str,
        settings: PackSettings,
        small_level: i32,
        budget_bytes: usize,
    ) -> IResult<Self> {
        let compressor = db.compressor_of(collection)?;
        let (sample_docs, sample_bytes, ring_docs) = {
            let c = compressor.lock().map_err(|_| poisoned())?;
            let o = c.options();
            // Whole documents, so up to twice the bytes a training keeps (it cuts them).
            (
                o.sample_docs.max(MAX_SAMPLE_DOCS),
                o.sample_bytes.saturating_mul(2),
                o.sample_docs,
            )
        };
        // At most 2 MiB: training on the compressor's full 16 MiB took 0.6 s of a 1 s import
        // of 4 MB of tweets, and stored them 1 % smaller.
        let sample_bytes = sample_bytes.min(budget_bytes / 8).min(MAX_SAMPLE_BYTES);
        let sort_budget = super::budget::sort_budget(budget_bytes, sample_bytes);
        let sorter = Sorter::new(
            SorterOptions::default()
                .memory_budget_bytes(sort_budget)
                .temp_dir(sort_dir(db)?)
                .duplicates(DuplicatePolicy::KeepLast),
        )
        .map_err(Error::from)?;
        Ok(BulkWriter {
            mode: Mode::Sorting {
                sorter,
                sample: Sample::new(sample_docs, sample_bytes),
            },
            doc_bytes: 0,
            settings,
            small_level,
            compressor,
            converted: false,
            fast_level: None,
            ring_docs,
        })
    }

    /// This writer, packing at zstd level `fast` rather than its settings' level where a
    /// sample of the import packs nearly as small at it (`crate::compress::cheapest_level`):
    /// for an import whose level nobody chose.
    #[must_use]
    pub(super) fn level_from_sample(mut self, fast: i32) -> Self {
        self.fast_level = Some(fast);
        self
    }

    /// How this writer packs: what [`Self::streams`] judges an import by.
    pub(super) fn settings(&self) -> PackSettings {
        self.settings
    }

    /// The most documents and bytes its sample holds (`None` once streaming): what a
    /// [`Presample`] for [`Self::streaming`] should take, as the sorting writer's own
    /// reservoir would for an input of `input_bytes` bytes (`train_share`).
    pub(super) fn sample_limits(&self, input_bytes: u64) -> Option<(usize, usize)> {
        match &self.mode {
            Mode::Sorting { sample, .. } => {
                let docs = docs_to_sample(input_bytes, self.ring_docs).min(sample.max_docs);
                Some((docs, sample.max_bytes))
            }
            Mode::Streaming(_) => None,
        }
    }

    /// This writer, given nothing yet, made one for documents pushed in strictly ascending
    /// id order (numbered records, or a file sorted by id; a push out of order sets
    /// `out_of_order` and fails), packing each block as soon as it is full, with a
    /// dictionary trained now on `sample` (documents of the input taken before it is read,
    /// [`Presample`]) for an input of about `est_docs` documents and `est_doc_bytes` bytes
    /// of them. The caller makes sure the import is big enough for a dictionary (at least
    /// [`DICTIONARY_MIN_BLOCKS`] blocks, see [`Self::streams`]): the level of a small
    /// import is not chosen here. Memory: the blocks in flight only
    /// (`crate::pack::sorted`), nothing sorted.
    pub(super) fn streaming(
        self,
        db: &Database,
        collection: &str,
        sample: &Presample,
        est_docs: u64,
        est_doc_bytes: u64,
        out_of_order: Arc<AtomicBool>,
    ) -> IResult<Self> {
        debug_assert_eq!(self.doc_bytes, 0, "streaming from the first document on");
        let share = usize::try_from(est_doc_bytes / SAMPLE_SHARE).unwrap_or(usize::MAX);
        // The text forms the blocks will hold (`super::convert::convert_all`).
        let refs: Vec<&[u8]> = sample.texts.iter().map(Vec::as_slice).collect();
        let refs = spread(&refs, sample.json_bytes, share);
        let refs = train_share(refs, est_doc_bytes, self.ring_docs);
        let dictionary = train(&self.compressor, &refs, self.settings, est_docs)?;
        let state = db.visible_state();
        let current = crate::pack::last_dictionary(&state, collection)?;
        let dict_for_blocks = match &dictionary {
            Some(d) => Some((d.id(), d.bytes())),
            None => current.as_ref().map(|(id, b)| (*id, b.as_slice())),
        };
        let settings = choose_level(self.settings, self.fast_level, &refs, dict_for_blocks)?;
        let mut packer = SortedPacker::new(
            &db.inner.store,
            Arc::clone(&state.packing),
            settings,
            dict_for_blocks,
        )?;
        if self.converted {
            // SAFETY: `converted` is set only by `BulkWriter::converted`, whose caller
            // promised valid documents or text forms; a streaming writer hands them to the
            // packer straight from memory.
            packer = unsafe { packer.trusting_documents() };
        }
        Ok(BulkWriter {
            mode: Mode::Streaming(Box::new(Streaming {
                packer,
                dictionary,
                last_id: Vec::new(),
                pushed: 0,
                out_of_order,
            })),
            settings,
            ..self
        })
    }

    /// Whether an import of about `est_doc_bytes` bytes of documents, packed in blocks as
    /// `settings` cuts them, is surely big enough for a dictionary (four times the least,
    /// [`DICTIONARY_MIN_BLOCKS`] blocks: the estimate comes from a sample), and so may be
    /// packed as it is read ([`Self::streaming`]).
    pub(super) fn streams(settings: PackSettings, est_doc_bytes: u64) -> bool {
        est_doc_bytes >= 4 * (settings.block_bytes * DICTIONARY_MIN_BLOCKS) as u64
    }

    /// This writer, for documents that `DocumentWriter::from_json` wrote in this import,
    /// each pushed as written.
    ///
    /// # Safety
    ///
    /// Every document later pushed must be one that `stele_doc::validate` accepts, or a
    /// text form (`crate::compress::is_text_form`, rebuilt by parsing it): packed without
    /// validating it again when the sorter kept every document in memory.
    #[must_use]
    pub(super) unsafe fn converted(mut self) -> Self {
        self.converted = true;
        self
    }

    /// Adds document `doc` as `id` (a later document of the same id replaces it).
    pub(super) fn push(&mut self, id: &[u8], doc: &[u8]) -> IResult<()> {
        match &mut self.mode {
            Mode::Sorting { sorter, sample } => {
                sorter.add(id, doc).map_err(Error::from)?;
                sample.offer(doc);
            }
            Mode::Streaming(s) => {
                if s.pushed > 0 && id <= s.last_id.as_slice() {
                    // Ids from a field that ascended in the sample but not here, or (in
                    // theory) numbered ids past 9,999,999,999 records, whose 10 digits no
                    // longer sort: the caller starts the import again, sorted.
                    s.out_of_order.store(true, Ordering::Relaxed);
                    return Err(ImportError::from(Error::CommitFailed {
                        reason: format!(
                            "id {:?} does not sort after the one before it, {:?}, in an \
                             import packed while read",
                            String::from_utf8_lossy(id),
                            String::from_utf8_lossy(&s.last_id)
                        ),
                    }));
                }
                s.packer.push(id, doc)?;
                s.last_id.clear();
                s.last_id.extend_from_slice(id);
                s.pushed += 1;
            }
        }
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
            mode,
            doc_bytes,
            mut settings,
            small_level,
            compressor,
            converted,
            fast_level,
            ring_docs,
        } = self;
        let (sorter, sample) = match mode {
            Mode::Sorting { sorter, sample } => (sorter, sample),
            Mode::Streaming(s) => {
                let Streaming {
                    packer, dictionary, ..
                } = *s;
                let (packs, imported, packed_bytes) = packer.finish()?;
                // Asked once more before landing: the reading asked after each stretch,
                // and the packing was done meanwhile.
                if cancelled() {
                    return Err(ImportError::Cancelled);
                }
                let outcome = land(
                    db,
                    collection,
                    packs,
                    imported,
                    packed_bytes,
                    0,
                    dictionary,
                    compressor,
                )?;
                return Ok(BulkOutcome {
                    streamed: true,
                    ..outcome
                });
            }
        };
        let spilled_bytes = sorter.spilled_bytes();
        let docs = sample.seen;
        let small = doc_bytes < (settings.block_bytes * DICTIONARY_MIN_BLOCKS) as u64;
        let mut refs = Vec::new();
        let dictionary = if small {
            // One block or less: the level's cost is microseconds, and such a collection
            // (sessions: 1 document of 560 bytes of JSON, 1.33x it at rest with the
            // table's and manifest's fixed bytes) is the one near its JSON's size.
            if doc_bytes >= settings.block_bytes as u64 {
                settings.level = small_level;
            }
            None
        } else {
            let share = usize::try_from(doc_bytes / SAMPLE_SHARE).unwrap_or(usize::MAX);
            refs = train_share(sample.spread(share), doc_bytes, ring_docs);
            train(&compressor, &refs, settings, docs)?
        };
        let state = db.visible_state();
        let current = crate::pack::last_dictionary(&state, collection)?;
        let dict_for_blocks = match &dictionary {
            Some(d) => Some((d.id(), d.bytes())),
            None => current.as_ref().map(|(id, b)| (*id, b.as_slice())),
        };
        if dictionary.is_some() {
            settings = choose_level(settings, fast_level, &refs, dict_for_blocks)?;
        }
        drop(refs);
        drop(sample);
        let mut packer = SortedPacker::new(
            &db.inner.store,
            Arc::clone(&state.packing),
            settings,
            dict_for_blocks,
        )?;
        if converted && spilled_bytes == 0 {
            // SAFETY: `converted` is set only by `BulkWriter::converted`, whose caller
            // promised valid documents (each just written by a `DocumentWriter`) or text
            // forms; with nothing spilled the sorter hands back the bytes it was given, from memory.
            // Spilled runs are read back from files without a checksum: those documents
            // are validated again, as any packing does.
            packer = unsafe { packer.trusting_documents() };
        }
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
        land(
            db,
            collection,
            packs,
            imported,
            packed_bytes,
            spilled_bytes,
            dictionary,
            compressor,
        )
    }
}

/// `settings` at the level `crate::compress::cheapest_level` chooses between theirs and
/// `fast` (if any) for blocks like `refs` compressed with `dict`.
fn choose_level(
    settings: PackSettings,
    fast: Option<i32>,
    refs: &[&[u8]],
    dict: Option<(crate::compress::DictionaryId, &[u8])>,
) -> Result<PackSettings> {
    let Some(fast) = fast else {
        return Ok(settings);
    };
    let dict = dict.map(|(_, bytes)| bytes);
    let level =
        crate::compress::cheapest_level(refs, dict, settings.block_bytes, settings.level, fast)?;
    Ok(PackSettings { level, ..settings })
}

/// Switches the packed documents in (`Database::land_import`).
#[expect(clippy::too_many_arguments, reason = "private; the outcome's facts")]
fn land(
    db: &Database,
    collection: &str,
    packs: stele_durable::DurableMap,
    imported: u64,
    packed_bytes: u64,
    spilled_bytes: u64,
    dictionary: Option<NewDictionary>,
    compressor: Arc<Mutex<Compressor>>,
) -> IResult<BulkOutcome> {
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
        streamed: false,
    })
}

/// A dictionary for the blocks trained on `refs` by `compressor`, of the usual size
/// only, if it beats the collection's current one (for `docs` documents in blocks as
/// `settings` cuts them). A compaction trains three sizes (the usual one, a half and a
/// quarter) and keeps the one that stores the held-out documents smallest; on the import
/// benchmark's 10 files of 1 MB or more the usual size alone stored exactly what the three
/// did on 9 (one 0.5 % smaller), in 0.67-0.95x of the import's CPU.
fn train(
    compressor: &Mutex<Compressor>,
    refs: &[&[u8]],
    settings: PackSettings,
    docs: u64,
) -> Result<Option<NewDictionary>> {
    let target = PackTarget {
        block_bytes: settings.block_bytes,
        level: settings.level,
        docs,
    };
    let training = compressor
        .lock()
        .map_err(|_| poisoned())?
        .prepare_training_for_blocks(refs, target)?;
    let Some(trained) = training
        .map(|t| t.without_parameter_search().one_size(1).run())
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
mod tests;
