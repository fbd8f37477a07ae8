//! The per-collection compressor: compresses documents, keeps samples, decides when to
//! train and retrain, and proposes a dictionary only when it beats the current one.
//! Pure logic plus zstd; the database persists what it hands out.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use zstd::bulk;

use super::context::{
    block_context, context, document_context, encode_all, encode_block, encode_with,
};
use super::header::{Codec, DictionaryId, encode_raw};
use super::options::{CompressOptions, PARALLEL_COMPRESS_BYTES};
use super::trainer::{CoverParams, Running};
use crate::{Error, Result};

mod training;

/// A dictionary the compressor trained and found better than the current one. Not used for
/// anything until it comes back through [`Compressor::adopt`], which the database calls only
/// after it has stored [`NewDictionary::bytes`] durably under [`NewDictionary::id`]: no
/// document can be written with a dictionary the database might lose.
pub struct NewDictionary {
    pub(super) id: DictionaryId,
    pub(super) bytes: Vec<u8>,
    pub(super) cctx: bulk::Compressor<'static>,
    /// Stored bytes of the held-out samples with this dictionary and with the current setup.
    pub(super) eval: (usize, usize),
    /// Samples it was trained on.
    pub(super) trained_on: usize,
    /// Trained for packed blocks ([`Compressor::train_for_blocks`]), on stream forms.
    pub(super) for_blocks: bool,
    /// While this lives (handed out, neither adopted nor dropped) the compressor trains
    /// nothing: a dictionary trained meanwhile would be measured against a setup that is
    /// about to change, and a caller that adopts only after its batch is durable would
    /// otherwise collect one proposal per `train_after` documents of a big batch.
    pub(super) _outstanding: Arc<()>,
}

impl std::fmt::Debug for NewDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewDictionary")
            .field("id", &self.id)
            .field("bytes", &self.bytes.len())
            .field("eval", &self.eval)
            .finish_non_exhaustive()
    }
}

impl NewDictionary {
    /// Its id: unique in the collection, greater than every id handed out before.
    pub fn id(&self) -> DictionaryId {
        self.id
    }

    /// The raw dictionary, to persist (and to load into `Dictionaries` for reading).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes the held-out samples took with this dictionary, and with the one in use when it
    /// was trained (or none).
    pub fn evaluation(&self) -> (usize, usize) {
        self.eval
    }
}

/// Most doublings of the wait between trainings that produce nothing (see
/// `Compressor::failed_trainings`): at most 1024x the normal spacing.
pub(super) const MAX_BACKOFF_SHIFT: u32 = 10;

pub(super) struct Current {
    pub(super) id: DictionaryId,
    pub(super) cctx: bulk::Compressor<'static>,
    /// The same dictionary at `block_level`, made on first use.
    pub(super) block: Option<bulk::Compressor<'static>>,
    /// Shared with background trainings, which compare against it.
    pub(super) bytes: Arc<[u8]>,
    /// Samples it was trained on (`usize::MAX` when resumed: unknown, taken as a full ring).
    pub(super) trained_on: usize,
    /// Trained for packed blocks, on stream forms: provisional for documents compressed
    /// one by one (see [`Compressor::provisional`]).
    pub(super) for_blocks: bool,
    /// Whether the one training on a full ring that a provisional dictionary (trained on
    /// less than half a ring, or for blocks) gets has started.
    pub(super) ring_tried: bool,
}

/// Counters of what a compressor did (for logs and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompressStats {
    /// Documents compressed.
    pub docs: u64,
    /// Trainings run.
    pub trainings: u64,
    /// Trainings whose dictionary beat the current setup (handed out).
    pub candidates: u64,
    /// Dictionaries adopted.
    pub adopted: u64,
}

/// One collection's compression policy: compresses documents into stored values and trains,
/// retrains and proposes dictionaries as documents flow through it.
///
/// ```text
/// let stored = c.compress(doc)?;            // uses only persisted dictionaries
/// if let Some(d) = c.take_new_dictionary() { // trained from recent documents, better
///     db.persist_dictionary(d.id(), d.bytes())?; // durably, before any use
///     dicts.insert(d.id(), d.bytes())?;
///     c.adopt(d)?;                           // later documents use it
/// }
/// ```
pub struct Compressor {
    pub(super) opts: CompressOptions,
    pub(super) plain: bulk::Compressor<'static>,
    /// A second context with the dictionary in force (its id; `None`: no dictionary) for
    /// [`Compressor::compress_many`]'s helper thread, made on first use.
    pub(super) helper: Option<(Option<DictionaryId>, bulk::Compressor<'static>)>,
    pub(super) plain_block: Option<bulk::Compressor<'static>>,
    pub(super) current: Option<Current>,
    pub(super) candidate: Option<NewDictionary>,
    /// Alive while a handed-out candidate is neither adopted nor dropped.
    pub(super) outstanding: Weak<()>,
    /// The background training, if one runs.
    pub(super) running: Option<Running>,
    /// Trainings in a row that produced no candidate; each doubles the samples the next one
    /// waits for, so that a collection whose ratio keeps drifting without any dictionary
    /// helping (or that does not compress at all) stops paying for trainings.
    pub(super) failed_trainings: u32,
    /// Trainer parameters the collection's first dictionary trained on at least half a
    /// ring was built with; later trainings reuse them (one dictionary built instead of
    /// five).
    pub(super) cover_params: Option<CoverParams>,
    /// The last id handed out or resumed from; the next is one more.
    pub(super) last_id: DictionaryId,
    pub(super) samples: VecDeque<Arc<[u8]>>,
    pub(super) sample_total: usize,
    /// Samples added since the last training (or since start).
    pub(super) fresh_samples: usize,
    /// A training is due: it runs when the caller next asks for a dictionary
    /// ([`Compressor::take_new_dictionary`]), on every sample kept by then. A caller that
    /// can use a dictionary only after its batch is durable asks once per batch, so the
    /// training sees the whole batch (a 1,000-document first batch trains once on 1,000
    /// documents instead of on the first 64).
    pub(super) due: bool,
    pub(super) window: (usize, usize, usize),
    pub(super) best_window: Option<f64>,
    pub(super) scratch: Vec<u8>,
    pub(super) block: Vec<u8>,
    pub(super) stats: CompressStats,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("opts", &self.opts)
            .field("current", &self.current.as_ref().map(|c| c.id))
            .field("candidate", &self.candidate)
            .field("training", &self.running.is_some())
            .field("last_id", &self.last_id)
            .field("samples", &self.samples.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// A compressor for a new collection (no dictionary yet, ids start at 1).
    pub fn new(opts: CompressOptions) -> Result<Compressor> {
        Compressor::resume(opts, None, 0)
    }

    /// A compressor for a reopened collection: `current` is the dictionary in use when it was
    /// closed (id and bytes as persisted), `last_id` the greatest dictionary id ever persisted
    /// for the collection (new ids continue after it). An id handed out by
    /// [`Compressor::take_new_dictionary`] but never persisted may be handed out again after a
    /// restart; no stored value can name it, so ids of persisted dictionaries stay unique.
    pub fn resume(
        opts: CompressOptions,
        current: Option<(DictionaryId, &[u8])>,
        last_id: DictionaryId,
    ) -> Result<Compressor> {
        let plain = document_context(opts.level, None, opts.light_ingest)?;
        let current = match current {
            Some((id, bytes)) => Some(Current {
                id,
                cctx: context(opts.level, Some(bytes))?,
                block: None,
                bytes: Arc::from(bytes),
                trained_on: usize::MAX,
                for_blocks: false,
                ring_tried: false,
            }),
            None => None,
        };
        let last_id = last_id.max(current.as_ref().map_or(0, |c| c.id));
        Ok(Compressor {
            opts,
            plain,
            helper: None,
            plain_block: None,
            current,
            candidate: None,
            outstanding: Weak::new(),
            running: None,
            failed_trainings: 0,
            cover_params: None,
            last_id,
            samples: VecDeque::new(),
            sample_total: 0,
            fresh_samples: 0,
            due: false,
            window: (0, 0, 0),
            best_window: None,
            scratch: Vec::new(),
            block: Vec::new(),
            stats: CompressStats::default(),
        })
    }

    /// The options.
    pub fn options(&self) -> &CompressOptions {
        &self.opts
    }

    /// The id of the dictionary new documents are compressed with, if any.
    pub fn current_dictionary(&self) -> Option<DictionaryId> {
        self.current.as_ref().map(|c| c.id)
    }

    /// What the compressor did so far.
    pub fn stats(&self) -> CompressStats {
        self.stats
    }

    /// Whether a training runs on a background thread now (see
    /// [`CompressOptions::background_training`]).
    pub fn training(&self) -> bool {
        self.running.is_some()
    }

    /// Waits for the background training, if one runs, and keeps its dictionary as the
    /// candidate if it won. For tests and for callers that want the dictionary now (e.g.
    /// before writing the rest of a small collection).
    pub fn finish_training(&mut self) -> Result<()> {
        match self.running.take() {
            Some(r) => self.collect(r),
            None => Ok(()),
        }
    }

    /// Collects the background training if it has finished (never waits).
    pub(super) fn poll_training(&mut self) -> Result<()> {
        match self.running.take() {
            Some(r) if r.handle.is_finished() => self.collect(r),
            other => {
                self.running = other;
                Ok(())
            }
        }
    }

    pub(super) fn collect(&mut self, r: Running) -> Result<()> {
        let trained = r.handle.join().map_err(|_| Error::Zstd {
            op: "train dictionary",
            message: "the training thread panicked".into(),
        })??;
        self.conclude(trained)
    }

    /// Compresses one document (stele document bytes) into a new stored value.
    pub fn compress(&mut self, doc: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.compress_into(doc, &mut out)?;
        Ok(out)
    }

    /// Compresses one document into `out` (cleared first) and returns the codec used. Uses
    /// only the adopted dictionary; may train a new one afterwards (then
    /// [`Compressor::take_new_dictionary`] returns it).
    pub fn compress_into(&mut self, doc: &[u8], out: &mut Vec<u8>) -> Result<Codec> {
        if !self.opts.enabled {
            encode_raw(doc, out);
            return Ok(Codec::Raw);
        }
        let codec = match &mut self.current {
            Some(c) => encode_with(&mut c.cctx, Some(c.id), doc, &mut self.scratch, out)?,
            None => encode_with(&mut self.plain, None, doc, &mut self.scratch, out)?,
        };
        self.stats.docs += 1;
        self.observe(doc, out.len())?;
        Ok(codec)
    }

    /// Compresses `docs` into stored values exactly as [`Compressor::compress`] called on each
    /// in turn would (same values, same samples and training), using a second thread for
    /// half of them when `threads` > 1 and they hold at least [`PARALLEL_COMPRESS_BYTES`].
    /// Within one call the dictionary cannot change (only [`Compressor::adopt`] changes it),
    /// so the documents are independent.
    pub fn compress_many(&mut self, docs: &[&[u8]], threads: usize) -> Result<Vec<Vec<u8>>> {
        let total_bytes: usize = docs.iter().map(|d| d.len()).sum();
        if !self.opts.enabled
            || threads < 2
            || docs.len() < 2
            || total_bytes < PARALLEL_COMPRESS_BYTES
        {
            return docs.iter().map(|d| self.compress(d)).collect();
        }
        let id = self.current.as_ref().map(|c| c.id);
        let helper = match &mut self.helper {
            Some((hid, h)) if *hid == id => h,
            slot => {
                let dict = self.current.as_ref().map(|c| &c.bytes[..]);
                let cctx = document_context(self.opts.level, dict, self.opts.light_ingest)?;
                &mut slot.insert((id, cctx)).1
            }
        };
        let main = match &mut self.current {
            Some(c) => &mut c.cctx,
            None => &mut self.plain,
        };
        let (first, second) = docs.split_at(docs.len() / 2);
        let (a, b) = std::thread::scope(|s| {
            let handle = s.spawn(|| encode_all(helper, id, second));
            let a = encode_all(main, id, first);
            let b = handle.join().unwrap_or_else(|_| {
                Err(Error::Zstd {
                    op: "compress",
                    message: "a compression thread panicked".into(),
                })
            });
            (a, b)
        });
        let mut out = a?;
        out.extend(b?);
        for (doc, value) in docs.iter().zip(&out) {
            self.stats.docs += 1;
            self.observe(doc, value.len())?;
        }
        Ok(out)
    }

    /// Compresses consecutive documents together into one block value in `out` (cleared
    /// first): much smaller than one value per document on collections of small documents;
    /// reading any of them decodes the whole block ([`super::Decoder::decode_block`]). Blocks
    /// are always zstd-compressed (with the adopted dictionary, if any), even when
    /// `enabled` is off. The documents count as samples like those of `compress`.
    pub fn compress_block(&mut self, docs: &[&[u8]], out: &mut Vec<u8>) -> Result<()> {
        let level = self.opts.block_level;
        let (cctx, id) = match &mut self.current {
            Some(c) => {
                let cctx = match &mut c.block {
                    Some(b) => b,
                    slot => slot.insert(block_context(level, Some(&c.bytes[..]))?),
                };
                (cctx, c.id)
            }
            None => {
                let cctx = match &mut self.plain_block {
                    Some(b) => b,
                    slot => slot.insert(context(level, None)?),
                };
                (cctx, 0)
            }
        };
        encode_block(cctx, id, docs, &mut self.block, &mut self.scratch, out)?;
        let total = self.block.len().max(1);
        for d in docs {
            self.stats.docs += 1;
            self.observe(d, out.len() * d.len() / total)?;
        }
        Ok(())
    }

    /// A new dictionary, if one is ready and beat the current setup on held-out recent
    /// documents. Persist it, then pass it to [`Compressor::adopt`]. Dropping it instead is
    /// harmless (its id is simply never used).
    ///
    /// Runs the training that the documents compressed so far made due: in line, or (with
    /// [`CompressOptions::background_training`], once the collection has a dictionary trained
    /// on a full ring) on a background thread whose result a later call hands out. While the
    /// returned dictionary is alive (until adopted or dropped), no training starts.
    pub fn take_new_dictionary(&mut self) -> Result<Option<NewDictionary>> {
        self.poll_training()?;
        if self.due && !self.proposing() {
            self.due = false;
            self.train()?;
        }
        let Some(nd) = self.candidate.take() else {
            return Ok(None);
        };
        self.outstanding = Arc::downgrade(&nd._outstanding);
        Ok(Some(nd))
    }

    /// Takes the current dictionary as one trained for packed blocks
    /// ([`Compressor::train_for_blocks`]): provisional for documents, so that once the
    /// sample ring fills, a dictionary for documents is trained. For a compressor resumed
    /// ([`Compressor::resume`]) on a collection whose blocks use its dictionary.
    pub fn current_serves_blocks(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.for_blocks = true;
        }
    }

    /// Starts compressing new documents with `dict`, which the caller has persisted.
    pub fn adopt(&mut self, dict: NewDictionary) -> Result<()> {
        if dict.id <= self.current.as_ref().map_or(0, |c| c.id) {
            return Err(Error::Zstd {
                op: "adopt dictionary",
                message: format!(
                    "dictionary {} is not newer than the current one; adopt dictionaries in the \
                     order they were handed out",
                    dict.id
                ),
            });
        }
        self.current = Some(Current {
            id: dict.id,
            cctx: dict.cctx,
            block: None,
            bytes: Arc::from(dict.bytes),
            trained_on: dict.trained_on,
            for_blocks: dict.for_blocks,
            ring_tried: false,
        });
        self.stats.adopted += 1;
        self.failed_trainings = 0;
        self.best_window = None;
        self.window = (0, 0, 0);
        self.due = false;
        Ok(())
    }
}
