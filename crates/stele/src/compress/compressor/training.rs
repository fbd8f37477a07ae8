//! What a [`Compressor`] learns from the documents it compresses: the ring of samples, when
//! a training is due, the training itself (in the background or in line) and whether its
//! dictionary is proposed.

use std::sync::Arc;

use super::{Compressor, MAX_BACKOFF_SHIFT, NewDictionary};
use crate::compress::trainer::{FIXED_COVER_PARAMS, Running, TrainJob, Trained};
use crate::{Error, Result};

impl Compressor {
    /// Whether a proposal is under way: a training runs, or a dictionary it made waits to be
    /// handed out or awaits adoption. One proposal at a time: nothing else trains meanwhile.
    pub(in crate::compress) fn proposing(&self) -> bool {
        self.candidate.is_some() || self.running.is_some() || self.outstanding.strong_count() > 0
    }

    /// Samples kept at most (the ring).
    pub(in crate::compress) fn ring(&self) -> usize {
        self.opts.sample_docs.max(self.opts.train_after).max(1)
    }

    pub(in crate::compress) fn observe(&mut self, doc: &[u8], stored: usize) -> Result<()> {
        // Keep the document as a sample.
        let keep = &doc[..doc.len().min(self.opts.sample_doc_bytes)];
        let cap_docs = self.ring();
        while !self.samples.is_empty()
            && (self.samples.len() >= cap_docs
                || self.sample_total + keep.len() > self.opts.sample_bytes)
        {
            if let Some(old) = self.samples.pop_front() {
                self.sample_total -= old.len();
            }
        }
        self.sample_total += keep.len();
        self.samples.push_back(Arc::from(keep));
        self.fresh_samples += 1;

        // Ratio windows (only once a dictionary is in use).
        let mut drifted = false;
        if self.current.is_some() {
            let w = &mut self.window;
            w.0 += doc.len();
            w.1 += stored;
            w.2 += 1;
            if w.2 >= self.opts.window_docs.max(1) {
                let ratio = w.1 as f64 / w.0.max(1) as f64;
                *w = (0, 0, 0);
                match self.best_window {
                    Some(best) if ratio > best * self.opts.retrain_drift => drifted = true,
                    Some(best) if ratio >= best => {}
                    _ => self.best_window = Some(ratio),
                }
            }
        }

        let full = self.samples.len() >= cap_docs;
        // From the second training in a row that produced nothing, each doubles the wait
        // for the next. The first miss costs nothing: a drift often needs one more half
        // ring before a dictionary wins by enough to pay for itself (palbum__images).
        let shift = self
            .failed_trainings
            .saturating_sub(1)
            .min(MAX_BACKOFF_SHIFT);
        let backoff = 1usize << shift;
        let half_ring = (cap_docs / 2).saturating_mul(backoff);
        let due = if self.due || self.proposing() {
            false // one proposal at a time, and none while one awaits adoption
        } else {
            match &self.current {
                // First dictionary; after a failed attempt wait for as many new samples again.
                None => self.fresh_samples >= self.opts.train_after.saturating_mul(backoff),
                // A provisional dictionary (trained on less than half a ring): once more
                // when the ring is full.
                Some(_) if self.provisional() => full && self.fresh_samples >= half_ring,
                // Retrain on drift, at most once per half ring of fresh samples.
                Some(_) => drifted && self.fresh_samples >= half_ring,
            }
        };
        self.due |= due;
        // A background training starts at once: its samples are as fresh as they get, and
        // waiting for the caller's next `take_new_dictionary` (the end of the batch) would
        // leave the current dictionary in use a batch longer.
        if self.due && self.trains_in_background() {
            self.due = false;
            self.train()?;
        }
        Ok(())
    }

    /// Whether the current dictionary is provisional: trained on less than half a ring
    /// (the first one, when the caller asked for it after `train_after` documents) or for
    /// packed blocks (on stream forms, which serve documents compressed one by one badly:
    /// 1.4-3x their bytes with a dictionary trained on both forms), and not yet retrained
    /// on a full ring.
    pub(in crate::compress) fn provisional(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|c| (c.trained_on < self.ring() / 2 || c.for_blocks) && !c.ring_tried)
    }

    /// Whether the next training runs on a background thread: with
    /// [`CompressOptions::background_training`], once a dictionary is in use and is not
    /// provisional. The first training and the one retraining a provisional dictionary run
    /// in line, at most two per collection, so that a collection of a few thousand
    /// documents does not end its ingest before its real dictionary arrives (and they run
    /// when the caller asks, on everything written up to then).
    pub(in crate::compress) fn trains_in_background(&self) -> bool {
        self.opts.background_training
            && (self.opts.background_first_training
                || (self.current.is_some() && !self.provisional()))
    }

    /// Trains a dictionary on the kept samples, in line or on a background thread (see
    /// [`CompressOptions::background_training`]).
    pub(in crate::compress) fn train(&mut self) -> Result<()> {
        self.fresh_samples = 0;
        self.stats.trainings += 1;
        let job = TrainJob {
            samples: self.samples.iter().cloned().collect(),
            current: self.current.as_ref().map(|c| Arc::clone(&c.bytes)),
            level: self.opts.level,
            dictionary_bytes: self.opts.dictionary_bytes,
            dictionary_sample_ratio: self.opts.dictionary_sample_ratio,
            adoption_margin: self.opts.adoption_margin,
            cap_docs: self.ring(),
            params: if self.opts.light_ingest {
                Some(FIXED_COVER_PARAMS)
            } else {
                self.cover_params
            },
            stream_samples: self.opts.stream_samples,
            light: self.opts.light_ingest,
        };
        let background = self.trains_in_background();
        if let Some(c) = self.current.as_mut() {
            // Whatever this training gives, a provisional dictionary gets no second one of
            // its own: later trainings follow the drift rule.
            c.ring_tried = true;
        }
        if background {
            // Cloning the job copies reference counts, not samples.
            let background = job.clone();
            let spawned = std::thread::Builder::new()
                .name("stele-train".into())
                .spawn(move || background.run());
            // No thread to be had (resource limits): train in line rather than fail the
            // write.
            if let Ok(handle) = spawned {
                self.running = Some(Running { handle });
                return Ok(());
            }
        }
        let trained = job.run()?;
        self.conclude(trained)
    }

    /// Records a finished training: its dictionary (if it won) becomes the candidate under
    /// the next id; a training that produced nothing makes the next one wait longer.
    pub(in crate::compress) fn conclude(&mut self, trained: Option<Trained>) -> Result<()> {
        let Some(t) = trained else {
            self.failed_trainings = self.failed_trainings.saturating_add(1);
            return Ok(());
        };
        self.failed_trainings = 0;
        // Fixed parameters chose nothing: `train_for_blocks` searches its own.
        if t.trained_on >= self.ring() / 2 && self.cover_params.is_none() && !self.opts.light_ingest
        {
            self.cover_params = Some(t.params);
        }
        let Some(id) = self.last_id.checked_add(1) else {
            return Err(Error::Zstd {
                op: "train dictionary",
                message: "dictionary ids are exhausted for this collection".into(),
            });
        };
        self.last_id = id;
        self.stats.candidates += 1;
        self.candidate = Some(NewDictionary {
            id,
            bytes: t.bytes,
            cctx: t.cctx,
            eval: t.eval,
            trained_on: t.trained_on,
            for_blocks: t.for_blocks,
            _outstanding: Arc::new(()),
        });
        Ok(())
    }
}
