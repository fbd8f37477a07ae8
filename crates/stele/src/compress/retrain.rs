//! Training a collection's dictionary for its packed blocks, at compaction
//! ([`Compressor::train_for_blocks`]).
//!
//! A compressor trains on the documents written last: a collection written in one go gets
//! the dictionary of its first [`CompressOptions::train_after`] documents, and one of fewer
//! than [`CompressOptions::sample_docs`] documents never gets another (its sample ring never
//! fills). A full compaction reads the whole collection anyway, so it can train on documents
//! spread over all of it and judge the result by what it will store: blocks of held-out
//! documents, scaled to the collection, plus the dictionary itself (which, for a collection
//! of a few hundred documents, weighs as much as a tenth of it).
//!
//! [`CompressOptions::train_after`]: super::CompressOptions::train_after
//! [`CompressOptions::sample_docs`]: super::CompressOptions::sample_docs

use super::{
    Compressor, MIN_DICTIONARY_BYTES, NewDictionary, Trained, context, train_fast_cover, zstd_io,
};
use crate::Result;
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

/// Every `HELD_OUT_EVERY`-th sample is kept out of training to judge the dictionaries.
const HELD_OUT_EVERY: usize = 8;

/// Dictionary sizes tried, as fractions of the usual size (at most
/// [`super::CompressOptions::dictionary_bytes`] and a tenth of the training bytes): that
/// size, and a quarter of it for collections so small or so uniform that a smaller
/// dictionary costs less than it loses.
const SIZE_DIVISORS: [usize; 2] = [1, 4];

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
    /// own size (the current one's, for the current setup: a full compaction leaves it
    /// unused). Two sizes are tried: `dictionary_bytes` and a quarter of it.
    ///
    /// Returns `None` without training while compression is off, a training runs or a
    /// handed-out dictionary awaits adoption, and when fewer than 8 samples are given.
    /// Samples are cut to [`super::CompressOptions::sample_doc_bytes`] and their total to
    /// [`super::CompressOptions::sample_bytes`].
    pub fn train_for_blocks(
        &mut self,
        samples: &[&[u8]],
        target: PackTarget,
    ) -> Result<Option<NewDictionary>> {
        self.poll_training()?;
        if !self.opts.enabled
            || self.candidate.is_some()
            || self.running.is_some()
            || self.outstanding.strong_count() > 0
        {
            return Ok(None);
        }
        let (train, held_out) = self.split_samples(samples);
        if held_out.is_empty() || train.is_empty() {
            return Ok(None);
        }
        self.stats.trainings += 1;
        let train_refs: Vec<&[u8]> = train.iter().map(Vec::as_slice).collect();
        let train_bytes: usize = train.iter().map(Vec::len).sum();
        let scale = target.docs.max(1) as f64 / held_out.len() as f64;
        // What the collection would take: held-out blocks scaled up, plus the dictionary.
        let cost = |dict: Option<&[u8]>| -> Result<f64> {
            let mut cctx = context(target.level, dict)?;
            let packed = packed_bytes(&mut cctx, &held_out, target.block_bytes)?;
            Ok(packed as f64 * scale + dict.map_or(0, <[u8]>::len) as f64)
        };
        let current = self.current.as_ref().map(|c| Arc::clone(&c.bytes));
        let current_cost = cost(current.as_deref())?;
        let mut best: Option<(f64, Vec<u8>, super::CoverParams)> = None;
        let mut params = self.cover_params;
        let full_size = self
            .opts
            .dictionary_bytes
            .min(train_bytes / self.opts.dictionary_sample_ratio.max(1));
        let mut sizes: Vec<usize> = SIZE_DIVISORS
            .iter()
            .map(|d| (full_size / d).max(MIN_DICTIONARY_BYTES))
            .collect();
        sizes.dedup();
        for size in sizes {
            // zstd's trainer fails on too little input: that only means "no dictionary".
            let Some((bytes, p)) = train_fast_cover(&train_refs, size, self.opts.level, params)
            else {
                continue;
            };
            // The first size searches the trainer's parameters; the others reuse them.
            params = Some(p);
            let c = cost(Some(&bytes))?;
            if best.as_ref().is_none_or(|(b, _, _)| c < *b) {
                best = Some((c, bytes, p));
            }
        }
        let Some((best_cost, bytes, params)) = best else {
            return Ok(None);
        };
        if best_cost > current_cost * (1.0 - self.opts.adoption_margin) {
            return Ok(None);
        }
        let cctx = context(self.opts.level, Some(&bytes))?;
        self.conclude(Some(Trained {
            params,
            trained_on: train.len(),
            bytes,
            cctx,
            eval: (best_cost as usize, current_cost as usize),
        }))?;
        let Some(nd) = self.candidate.take() else {
            return Ok(None);
        };
        self.outstanding = Arc::downgrade(&nd._outstanding);
        Ok(Some(nd))
    }

    /// Splits `samples` into training samples (every other one the stream form of the
    /// whole document, cut afterwards, when the options ask for stream samples: big
    /// documents carry most of what the blocks of a collection such as github-webhooks
    /// share, and a cut document has no stream form) and held-out forms (every 8th sample,
    /// whole, as stored in blocks: stream forms where they exist).
    fn split_samples(&self, samples: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let mut writer = self
            .opts
            .stream_samples
            .then(|| stele_doc::DocumentWriter::with_options(stele_doc::stream::write_options()));
        let (mut train, mut held_out) = (Vec::new(), Vec::new());
        let mut total = 0usize;
        for (i, s) in samples.iter().enumerate() {
            let mut form = Vec::new();
            let streamed = writer.as_mut().is_some_and(|w| {
                (i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 || train.len() % 2 == 1)
                    && super::super::streams::append_stream_form(s, w, &mut form)
            });
            if !streamed {
                form.extend_from_slice(s);
            }
            if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 {
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

/// Bytes of `forms` packed in order into blocks of at least `block_bytes` (the last one
/// smaller), each compressed with `cctx`.
fn packed_bytes(
    cctx: &mut bulk::Compressor<'static>,
    forms: &[Vec<u8>],
    block_bytes: usize,
) -> Result<usize> {
    let mut joined = Vec::with_capacity(block_bytes * 2);
    let mut total = 0usize;
    for (i, form) in forms.iter().enumerate() {
        joined.extend_from_slice(form);
        if joined.len() >= block_bytes || i + 1 == forms.len() {
            total += cctx
                .compress(&joined)
                .map_err(zstd_io("compress held-out block"))?
                .len();
            joined.clear();
        }
    }
    Ok(total)
}
