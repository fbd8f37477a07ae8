//! Training a collection's dictionary for its packed blocks, at compaction
//! ([`Compressor::train_for_blocks`]).
//!
//! A compressor trains on the documents written last: a collection written in one go gets
//! the dictionary of its first [`CompressOptions::train_after`] documents, and one of fewer
//! than [`CompressOptions::sample_docs`] documents never gets another (its sample ring never
//! fills). A full compaction reads the whole collection anyway, so it can train on documents
//! spread over all of it and judge the result by what it will store: blocks of held-out
//! documents, scaled to the collection, plus the dictionary as stored (compressed, which
//! still weighs on small collections: github-webhooks' 32 KiB dictionary was 0.64x of its
//! whole file at zstd -3 stored as it is, 0.11x compressed).
//!
//! [`CompressOptions::train_after`]: super::CompressOptions::train_after
//! [`CompressOptions::sample_docs`]: super::CompressOptions::sample_docs

use super::compressor::{Compressor, NewDictionary};
use super::context::{block_context, context, zstd_io};
use super::header::DictionaryId;
use super::trainer::{
    CoverParams, FIXED_COVER_PARAMS, HELD_OUT_EVERY, MIN_DICTIONARY_BYTES, Trained,
    train_fast_cover,
};
use crate::Result;
use rayon::prelude::*;
use std::sync::Arc;
use zstd::bulk;

/// How a full compaction will store the collection a dictionary is trained for
/// ([`Compressor::train_for_blocks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackTarget {
    /// Uncompressed bytes per block.
    pub block_bytes: usize,
    /// zstd level of blocks.
    pub level: i32,
    /// Documents in the collection (the held-out blocks are scaled to it).
    pub docs: u64,
}

/// Dictionary sizes tried, as fractions of the usual size (at most
/// [`super::CompressOptions::dictionary_bytes`] and a tenth of the training bytes): that
/// size, and a half and a quarter of it for collections so small or so uniform, or with
/// blocks so big, that a smaller dictionary costs less than it loses.
const SIZE_DIVISORS: [usize; 3] = [1, 2, 4];

/// Documents a packed block holds at least, while it stays under
/// [`MAX_BLOCK_GROWTH`] times the block size: blocks of a few big documents share little.
/// github-webhooks (329 documents of 10 KB, 3 to a 32 KiB block) stored 1.99x of its
/// whole file at zstd -3 in 32 KiB blocks and 1.44x in 128 KiB blocks; an uncached read
/// then decodes the bigger block (`docs/benchmarks.md`, "Dictionaries for blocks").
/// 32 rather than 16 (with blocks up to 8 rather than 4 times the size): a bulk import of
/// github-webhooks lands 9 % smaller (1.20x -> 1.09x of zstd -3, 25 to 26 documents a
/// block), twitter tweets (4 KB each) 4 %, mdn-compat-features 0.7 %, none of the 28
/// import benchmark files bigger; an uncached get of github-webhooks decodes about twice
/// as much (p50 47-55 us -> 60-81 us in `store_bench --only github-webhooks`).
pub const MIN_BLOCK_DOCS: usize = 32;

/// How far past the block size a block may grow to hold [`MIN_BLOCK_DOCS`] documents.
pub const MAX_BLOCK_GROWTH: usize = 8;

/// Whether a block being filled, holding `docs` documents in `bytes` bytes, is complete
/// for blocks of `block_bytes`: at least `block_bytes` and [`MIN_BLOCK_DOCS`] documents, or
/// [`MAX_BLOCK_GROWTH`] times `block_bytes`. Packing and the scoring of dictionaries for
/// blocks cut blocks by this one rule.
pub fn block_is_full(bytes: usize, docs: usize, block_bytes: usize) -> bool {
    (bytes >= block_bytes && docs >= MIN_BLOCK_DOCS)
        || bytes >= block_bytes.saturating_mul(MAX_BLOCK_GROWTH)
}

/// A training for blocks ([`Compressor::prepare_training_for_blocks`]): everything it
/// needs, owned, so that it runs without the compressor's lock
/// ([`BlockTraining::run`]) while commits keep compressing.
pub struct BlockTraining {
    train: Vec<Vec<u8>>,
    held_out: Vec<Vec<u8>>,
    /// The dictionary in use when prepared (its id and bytes), or none.
    current: Option<(DictionaryId, Arc<[u8]>)>,
    params: Option<CoverParams>,
    /// Dictionary sizes to train, as divisors of the usual size ([`SIZE_DIVISORS`], or
    /// one of them: [`BlockTraining::one_size`]).
    divisors: Vec<usize>,
    target: PackTarget,
    level: i32,
    dictionary_bytes: usize,
    dictionary_sample_ratio: usize,
    adoption_margin: f64,
}

impl std::fmt::Debug for BlockTraining {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockTraining")
            .field("train", &self.train.len())
            .field("held_out", &self.held_out.len())
            .field("current", &self.current.as_ref().map(|(id, _)| *id))
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// A trained dictionary with its cost (see [`BlockTraining::run`]) and the trainer's
/// parameters, or `None` when zstd trained nothing.
type Candidate = Option<(f64, Vec<u8>, CoverParams)>;

/// The outcome of a [`BlockTraining`] that beat the dictionary it was prepared against:
/// hand it to [`Compressor::finish_training_for_blocks`].
pub struct BlockTrained {
    /// The dictionary it was prepared against (`None`: no dictionary).
    against: Option<DictionaryId>,
    trained: Trained,
}

impl std::fmt::Debug for BlockTrained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockTrained")
            .field("against", &self.against)
            .field("bytes", &self.trained.bytes.len())
            .field("eval", &self.trained.eval)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// Trains dictionaries in line on `samples` (documents the caller picked, such as every
    /// n-th document of the whole collection at compaction) instead of the recent documents
    /// this compressor kept, and hands out the one that stores the collection smallest if it
    /// beats the current setup by [`super::CompressOptions::adoption_margin`]. Persist it,
    /// then [`Compressor::adopt`] it, as for [`Compressor::take_new_dictionary`].
    ///
    /// "Smallest" counts what `target` describes: every 8th sample is held out, packed into
    /// blocks of `target.block_bytes` (as stream forms, with
    /// [`super::CompressOptions::stream_samples`]) at `target.level` with each dictionary,
    /// the bytes scaled from the held-out documents to `target.docs`, plus the dictionary's
    /// stored size (compressed; the current one's, for the current setup: a full compaction leaves it
    /// unused). Three sizes are tried: the usual size, a half and a quarter of it.
    ///
    /// Returns `None` without training while compression is off, a training runs or a
    /// handed-out dictionary awaits adoption, and when fewer than 8 samples are given.
    /// Samples are cut to [`super::CompressOptions::sample_doc_bytes`] and their total to
    /// [`super::CompressOptions::sample_bytes`]. The same in three steps, the training
    /// itself without `&mut self`: [`Compressor::prepare_training_for_blocks`],
    /// [`BlockTraining::run`], [`Compressor::finish_training_for_blocks`].
    pub fn train_for_blocks(
        &mut self,
        samples: &[&[u8]],
        target: PackTarget,
    ) -> Result<Option<NewDictionary>> {
        let Some(training) = self.prepare_training_for_blocks(samples, target)? else {
            return Ok(None);
        };
        match training.run()? {
            Some(trained) => self.finish_training_for_blocks(trained),
            None => Ok(None),
        }
    }

    /// The first step of [`Compressor::train_for_blocks`]: checks that a training may run
    /// and takes what it needs (`None`: it may not).
    pub fn prepare_training_for_blocks(
        &mut self,
        samples: &[&[u8]],
        target: PackTarget,
    ) -> Result<Option<BlockTraining>> {
        self.poll_training()?;
        if !self.may_hand_out() {
            return Ok(None);
        }
        let (train, held_out) = self.split_samples(samples);
        if held_out.is_empty() || train.is_empty() {
            return Ok(None);
        }
        self.stats.trainings += 1;
        Ok(Some(BlockTraining {
            train,
            held_out,
            current: self.current.as_ref().map(|c| (c.id, Arc::clone(&c.bytes))),
            params: self.cover_params,
            divisors: SIZE_DIVISORS.to_vec(),
            target,
            level: self.opts.level,
            dictionary_bytes: self.opts.dictionary_bytes,
            dictionary_sample_ratio: self.opts.dictionary_sample_ratio,
            adoption_margin: self.opts.adoption_margin,
        }))
    }

    /// The last step of [`Compressor::train_for_blocks`]: hands out the trained dictionary
    /// under the next id, unless the compressor moved on meanwhile (another dictionary was
    /// adopted or handed out, or a training started): then the result is dropped.
    pub fn finish_training_for_blocks(
        &mut self,
        trained: BlockTrained,
    ) -> Result<Option<NewDictionary>> {
        self.poll_training()?;
        if !self.may_hand_out() || self.current.as_ref().map(|c| c.id) != trained.against {
            return Ok(None);
        }
        self.conclude(Some(trained.trained))?;
        let Some(nd) = self.candidate.take() else {
            return Ok(None);
        };
        self.outstanding = Arc::downgrade(&nd._outstanding);
        Ok(Some(nd))
    }

    /// Whether a dictionary may be handed out now: compression is on, no training runs,
    /// and no candidate waits or is out.
    fn may_hand_out(&self) -> bool {
        self.opts.enabled && !self.proposing()
    }

    /// Splits `samples` into training samples and held-out forms (every 8th sample, whole,
    /// as stored in blocks). With stream samples asked for, every sample is the stream form
    /// of the whole document (cut afterwards: big documents carry most of what the blocks
    /// of a collection such as github-webhooks share, and a cut document has no stream
    /// form), where commits train on half documents, half streams because their dictionary
    /// also compresses documents one by one. Blocks hold streams: a dictionary trained on
    /// streams alone stores github-webhooks 11 % smaller and twitter tweets 6 %
    /// (`docs/benchmarks.md`, "Dictionaries for blocks"). It serves documents compressed
    /// one by one badly, so the compressor takes it as provisional for them
    /// ([`NewDictionary`]'s `for_blocks`) and trains one for documents once its ring fills.
    fn split_samples(&self, samples: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let mut writer = self
            .opts
            .stream_samples
            .then(|| stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options()));
        let (mut train, mut held_out) = (Vec::new(), Vec::new());
        let mut total = 0usize;
        for (i, s) in samples.iter().enumerate() {
            let held = i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1;
            let mut form = Vec::new();
            let streamed = writer
                .as_mut()
                .is_some_and(|w| super::streams::append_stream_form(s, w, &mut form));
            if !streamed {
                form.extend_from_slice(s);
            }
            if held {
                held_out.push(form);
                continue;
            }
            form.truncate(self.opts.sample_doc_bytes);
            if total + form.len() > self.opts.sample_bytes {
                break;
            }
            total += form.len();
            train.push(form);
        }
        (train, held_out)
    }
}

impl BlockTraining {
    /// Trains with zstd's middle parameters ([`FIXED_COVER_PARAMS`]) when the collection
    /// has none chosen yet, instead of searching them (five trainings where one does):
    /// for a bulk import, whose training is most of the fixed cost of a small one. Over
    /// the 28 files of the import benchmark the dictionaries so trained stored the files
    /// within 0.5 % of the searched ones, as often smaller as bigger (github-webhooks
    /// 13 % smaller), and trained in 0.4-0.6x the time.
    #[must_use]
    pub fn without_parameter_search(mut self) -> Self {
        self.params = self.params.or(Some(FIXED_COVER_PARAMS));
        self
    }

    /// Trains one dictionary, of 1/`divisor` of the usual size, instead of the three sizes
    /// (the usual one, a half and a quarter of it) that a compaction tries: for a bulk
    /// import, where each training is a fixed cost of the import (most of the CPU of one of
    /// half a MB). The one dictionary is still judged against the current setup (none, for
    /// a new collection) and kept only if it beats it.
    #[must_use]
    pub fn one_size(mut self, divisor: usize) -> Self {
        self.divisors = vec![divisor.max(1)];
        self
    }

    /// Trains the candidate dictionaries and scores them and the current one (see
    /// [`Compressor::train_for_blocks`]); `Some` if one wins. Costs tens to hundreds of
    /// milliseconds (three trainings on up to 8 MiB of samples, or one with
    /// [`Self::one_size`], the first one searching the trainer's parameters unless they are
    /// chosen, the others on all cores; a packing of the held-out documents with each
    /// dictionary and one with the current setup, that one beside the trainings).
    pub fn run(self) -> Result<Option<BlockTrained>> {
        let target = self.target;
        let train_refs: Vec<&[u8]> = self.train.iter().map(Vec::as_slice).collect();
        let train_bytes: usize = self.train.iter().map(Vec::len).sum();
        let scale = target.docs.max(1) as f64 / self.held_out.len().max(1) as f64;
        // What the collection would take: held-out blocks scaled up, plus the dictionary
        // as stored (compressed: `super::dict_form`).
        let cost = |dict: Option<&[u8]>| -> Result<f64> {
            let mut cctx = block_context(target.level, dict)?;
            let packed = packed_bytes(&mut cctx, &self.held_out, target.block_bytes)?;
            let stored = dict.map(super::dict_form::stored_len).transpose()?;
            Ok(packed as f64 * scale + stored.unwrap_or(0) as f64)
        };
        let full_size = self
            .dictionary_bytes
            .min(train_bytes / self.dictionary_sample_ratio.max(1));
        let mut sizes: Vec<usize> = self
            .divisors
            .iter()
            .map(|d| (full_size / d).max(MIN_DICTIONARY_BYTES))
            .collect();
        sizes.dedup();
        // zstd's trainer fails on too little input: that only means "no dictionary".
        let train_and_cost = |size: usize, params: Option<CoverParams>| -> Result<Candidate> {
            match train_fast_cover(&train_refs, size, self.level, params) {
                Some((bytes, p)) => Ok(Some((cost(Some(&bytes))?, bytes, p))),
                None => Ok(None),
            }
        };
        // Without chosen parameters the sizes search them, one after the other, until one
        // trains; the other sizes reuse them (or the chosen ones), each on its own core:
        // the same dictionaries as one after the other, in about half the time on two.
        let trainings = || -> Result<Candidate> {
            let mut best: Candidate = None;
            let mut params = self.params;
            let mut rest = &sizes[..];
            while params.is_none()
                && let Some((&size, tail)) = rest.split_first()
            {
                rest = tail;
                best = train_and_cost(size, None)?;
                params = best.as_ref().map(|(_, _, p)| *p);
            }
            let others: Vec<Result<Candidate>> = rest
                .par_iter()
                .map(|&size| train_and_cost(size, params))
                .collect();
            for candidate in others {
                if let Some((c, bytes, p)) = candidate?
                    && best.as_ref().is_none_or(|(b, _, _)| c < *b)
                {
                    best = Some((c, bytes, p));
                }
            }
            Ok(best)
        };
        // The current setup's cost beside the trainings (it needs none of them): with one
        // size to train, the other core packs the held-out documents meanwhile.
        let (current_cost, best) = rayon::join(
            || cost(self.current.as_ref().map(|(_, b)| &b[..])),
            trainings,
        );
        let (current_cost, best) = (current_cost?, best?);
        let Some((best_cost, bytes, params)) = best else {
            return Ok(None);
        };
        if best_cost > current_cost * (1.0 - self.adoption_margin) {
            return Ok(None);
        }
        let cctx = context(self.level, Some(&bytes))?;
        Ok(Some(BlockTrained {
            against: self.current.as_ref().map(|(id, _)| *id),
            trained: Trained {
                params,
                trained_on: self.train.len(),
                for_blocks: true,
                bytes,
                cctx,
                // Estimated bytes of the collection, dictionary included: new, current.
                eval: (best_cost as usize, current_cost as usize),
            },
        }))
    }
}

/// How much bigger (in hundredths) blocks packed at a faster level may be than at the
/// level asked for, for [`cheapest_level`] to choose the faster one.
const FAST_LEVEL_MAX_GROWTH_PERCENT: usize = 2;

/// The lowest zstd level from `fast` up to `level` at which blocks of `forms` (a sample of
/// what will be packed, in order), cut as packing cuts them into blocks of `block_bytes`
/// and compressed with `dict`, come out at most [`FAST_LEVEL_MAX_GROWTH_PERCENT`] % bigger
/// than at `level`; `level` if none does. Why: on collections of small documents whose
/// blocks the dictionary already compresses well, level 6 (lazy matching over the
/// dictionary) was 40 % of an import's CPU and stored 1 % less than level 3 (4.5 million
/// npm package documents, numbered); on others (geonames cities, emojibase, mdn) level 3
/// stores 13-20 % more. The levels between count too: the same npm documents sorted by
/// name (`--id-field name`) stored 10.7 % more at level 3 than at 6, 5.6 % more at 4 and
/// 0.2 % more at 5, which costs about a tenth less of the import's CPU than 6
/// (`docs/notes/2026-12-02-import-small-docs.md`). The sample (at most 2 MiB) is packed
/// once per level tried, two levels at a time on the pool (`level` beside `fast`, then the
/// levels between in pairs, lowest first), stopping at the first pair where one fits: the
/// same level as one at a time, in about half the wall time on two cores (the import's
/// other threads wait for it: 3.6 % of a Parquet import's CPU on mdn-compat-features).
pub fn cheapest_level(
    forms: &[&[u8]],
    dict: Option<&[u8]>,
    block_bytes: usize,
    level: i32,
    fast: i32,
) -> Result<i32> {
    if fast >= level || forms.is_empty() {
        return Ok(level);
    }
    let bytes_at = |l: i32| packed_bytes(&mut block_context(l, dict)?, forms, block_bytes);
    let (slow_bytes, fast_bytes) = rayon::join(|| bytes_at(level), || bytes_at(fast));
    let slow_bytes = slow_bytes?;
    let fits = |bytes: usize| bytes * 100 <= slow_bytes * (100 + FAST_LEVEL_MAX_GROWTH_PERCENT);
    if fits(fast_bytes?) {
        return Ok(fast);
    }
    let between: Vec<i32> = (fast + 1..level).collect();
    for pair in between.chunks(2) {
        let sizes: Vec<Result<usize>> = pair.par_iter().map(|&l| bytes_at(l)).collect();
        for (&candidate, bytes) in pair.iter().zip(sizes) {
            if fits(bytes?) {
                return Ok(candidate);
            }
        }
    }
    Ok(level)
}

/// Bytes of `forms` packed in order into blocks of `block_bytes` as packing cuts them
/// ([`block_is_full`]; the last one smaller), each compressed with `cctx`.
fn packed_bytes<F: AsRef<[u8]>>(
    cctx: &mut bulk::Compressor<'static>,
    forms: &[F],
    block_bytes: usize,
) -> Result<usize> {
    let mut joined = Vec::with_capacity(block_bytes * 2);
    let mut total = 0usize;
    let mut docs = 0usize;
    for (i, form) in forms.iter().enumerate() {
        joined.extend_from_slice(form.as_ref());
        docs += 1;
        if block_is_full(joined.len(), docs, block_bytes) || i + 1 == forms.len() {
            total += cctx
                .compress(&joined)
                .map_err(zstd_io("compress held-out block"))?
                .len();
            joined.clear();
            docs = 0;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_close_at_their_size_with_enough_documents_or_at_eight_times_it() {
        // Small documents: the size closes the block.
        assert!(!block_is_full(32_767, 100, 32_768));
        assert!(block_is_full(32_768, 100, 32_768));
        // Big ones: 32 documents, or eight times the size.
        assert!(!block_is_full(60_000, 31, 32_768));
        assert!(block_is_full(60_000, 32, 32_768));
        assert!(!block_is_full(262_143, 3, 32_768));
        assert!(block_is_full(262_144, 3, 32_768));
        // No overflow near the top.
        assert!(!block_is_full(1, 1, usize::MAX));
    }

    /// Sorted records sharing long prefixes with their neighbours (npm-like package names
    /// and their repository URLs): the level chosen is the lowest within 2 % of the level
    /// asked for, which may lie between the fast one and it.
    #[test]
    fn the_cheapest_level_is_the_lowest_within_two_percent_of_the_level_asked_for() {
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let words = [
            "react", "vue", "types", "babel", "eslint", "plugin", "loader", "cli",
        ];
        let mut names: Vec<String> = (0..20_000)
            .map(|_| {
                let a = words[(next() % 8) as usize];
                let b = words[(next() % 8) as usize];
                format!("{a}-{b}-{:x}", next() % 4096)
            })
            .collect();
        names.sort();
        let forms: Vec<Vec<u8>> = names
            .iter()
            .map(|n| format!("{{\"repository\":\"https://github.com/{n}.git\"}}").into_bytes())
            .collect();
        let refs: Vec<&[u8]> = forms.iter().map(Vec::as_slice).collect();
        let bytes_at = |level: i32| {
            packed_bytes(
                &mut block_context(level, None).expect("a context"),
                &refs,
                32_768,
            )
            .expect("packed")
        };
        let chosen = cheapest_level(&refs, None, 32_768, 6, 3).expect("a level");
        let slow = bytes_at(6);
        assert!((3..=6).contains(&chosen), "{chosen}");
        if chosen < 6 {
            assert!(bytes_at(chosen) * 100 <= slow * 102, "level {chosen}");
        }
        for lower in 3..chosen {
            assert!(bytes_at(lower) * 100 > slow * 102, "level {lower} fits too");
        }
        assert_eq!(
            cheapest_level(&refs, None, 32_768, 3, 3).expect("a level"),
            3
        );
        assert_eq!(cheapest_level(&[], None, 32_768, 6, 3).expect("a level"), 6);
    }
}
