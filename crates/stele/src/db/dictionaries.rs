//! The lifecycle of compression dictionaries beyond commits: settling trainings in
//! flight, training for packing before a full compaction, persisting then adopting, and
//! removing the dictionaries nothing can need any more.

use super::compaction::packs_collection;
use super::{Database, lock_poisoned};
use crate::compress::{Compressor, NewDictionary};
use crate::error::Result;
use crate::internal::{META, MetaKey};
use crate::wal::LoggedOp;
use std::sync::{Arc, Mutex};

impl Database {
    /// Removes the dictionaries that no stored value, batch in flight or later write can
    /// need (see `crate::dicts` for why each rule is there); returns how many went. Runs
    /// after a full compaction, which leaves packed collections on their newest
    /// dictionary. Skipped while a background compaction runs or waits to be swapped in.
    /// Dictionaries of dropped collections are left as they are.
    pub(super) fn remove_unused_dictionaries(&self) -> Result<usize> {
        let ops = {
            let w = self.quiet_writer()?;
            let busy = !self
                .inner
                .compacting
                .lock()
                .map_err(lock_poisoned)?
                .is_empty()
                || !self.inner.ready.lock().map_err(lock_poisoned)?.is_empty();
            if busy {
                return Ok(0);
            }
            let mut ops = Vec::new();
            for (collection, dicts) in &w.state.dicts {
                let persisted: std::collections::BTreeSet<_> = dicts.ids().collect();
                if persisted.len() < 2 || !w.state.collections.contains_key(collection) {
                    continue;
                }
                let compressor = self
                    .inner
                    .compressors
                    .lock()
                    .map_err(lock_poisoned)?
                    .get(collection)
                    .cloned();
                // Without a compressor, the next one resumes from the newest dictionary. A
                // compressor without a dictionary may be about to adopt any: keep them all.
                let current = match compressor {
                    Some(c) => c
                        .lock()
                        .map_err(lock_poisoned)?
                        .current_dictionary()
                        .unwrap_or(0),
                    None => persisted.last().copied().unwrap_or(0),
                };
                // Read after the current id: a batch compressed before that read is pinned.
                let Some(pinned) = self.inner.pins.of(collection) else {
                    return Ok(0);
                };
                let named = crate::dicts::named(&w.state, collection)?;
                for id in crate::dicts::removable(&persisted, current, &pinned, &named) {
                    ops.push(LoggedOp::Delete {
                        collection: META.to_owned(),
                        id: MetaKey::dict(collection, id),
                    });
                }
            }
            ops
        };
        // Safe after the writer lock is released: from here on, new values name only the
        // current dictionary or newer ones (commits) or the newest (packing), and blocks
        // copied by later packings were part of the scan.
        let removed = ops.len();
        self.commit_ops(ops)?;
        Ok(removed)
    }

    /// Finishes the pending dictionary training of `only` (or of every collection) and
    /// persists (then adopts) a dictionary that came out of it. With packing on, first
    /// trainings run in the background; bulk operations (imports, `compact`) call this so
    /// that a collection written in one go does not end up without any dictionary.
    pub(crate) fn settle_dictionaries(&self, only: Option<&str>) -> Result<()> {
        self.settle_dictionaries_where(&|name| only.is_none_or(|o| o == name))
    }

    /// [`settle_dictionaries`](Self::settle_dictionaries) of the collections `select` picks.
    pub(super) fn settle_dictionaries_where(&self, select: &dyn Fn(&str) -> bool) -> Result<()> {
        let compressors: Vec<(String, Arc<Mutex<Compressor>>)> = self
            .inner
            .compressors
            .lock()
            .map_err(lock_poisoned)?
            .iter()
            .filter(|(name, _)| select(name))
            .map(|(name, c)| (name.clone(), Arc::clone(c)))
            .collect();
        for (collection, compressor) in compressors {
            let dict = {
                let mut c = compressor.lock().map_err(lock_poisoned)?;
                c.finish_training()?;
                // A training that was only due starts here; then wait for it too.
                match c.take_new_dictionary()? {
                    Some(d) => Some(d),
                    None => {
                        c.finish_training()?;
                        c.take_new_dictionary()?
                    }
                }
            };
            if let Some(dict) = dict {
                self.persist_and_adopt(&collection, &compressor, dict)?;
            }
        }
        Ok(())
    }

    /// Stores `dict` durably in the meta collection, then has `compressor` (the one of
    /// `collection` that handed it out) adopt it.
    pub(super) fn persist_and_adopt(
        &self,
        collection: &str,
        compressor: &Mutex<Compressor>,
        dict: NewDictionary,
    ) -> Result<()> {
        self.commit_ops(vec![crate::dicts::put_op(collection, &dict)?])?;
        if let Ok(mut c) = compressor.lock() {
            // Refused only if a newer one was adopted meanwhile: drop this one.
            let _ = c.adopt(dict);
        }
        Ok(())
    }

    /// Before a full compaction packs them, trains a dictionary for each collection it
    /// packs (of those `select` picks) on documents spread evenly over the whole collection (every n-th in id order,
    /// up to the compressor's `sample_docs`), and persists and adopts it if the collection's
    /// blocks plus the dictionary come out smaller than with the current one
    /// (`Compressor::train_for_blocks`). Commits train on what was written last, so a
    /// collection written in one go keeps the dictionary of its first documents until its
    /// sample ring fills, which a collection of fewer documents never does.
    pub(super) fn train_for_packing_where(&self, select: &dyn Fn(&str) -> bool) -> Result<()> {
        let state = self.snapshot_state();
        for collection in state.collections.keys() {
            if !select(collection) || !packs_collection(&self.inner.opts, &state, collection)? {
                continue;
            }
            let compressor = self.compressor(collection)?;
            let (train_after, sample_docs, sample_bytes) = {
                let c = compressor.lock().map_err(lock_poisoned)?;
                let o = c.options();
                (o.train_after, o.sample_docs, o.sample_bytes)
            };
            let count = crate::collection::count(&state, collection);
            if count < train_after.max(1) as u64 {
                continue;
            }
            // Whole documents, so at most twice the bytes a training keeps (it cuts them).
            let budget_bytes = sample_bytes.saturating_mul(2);
            let samples =
                crate::collection::spread_sample(&state, collection, sample_docs, budget_bytes)?;
            let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
            let target = crate::compress::PackTarget {
                block_bytes: self.inner.opts.pack_block_bytes,
                level: self.inner.opts.pack_level,
                docs: count,
            };
            // Commits keep compressing with the current dictionary while this trains.
            let training = compressor
                .lock()
                .map_err(lock_poisoned)?
                .prepare_training_for_blocks(&refs, target)?;
            let Some(trained) = training.map(|t| t.run()).transpose()?.flatten() else {
                continue;
            };
            let dict = compressor
                .lock()
                .map_err(lock_poisoned)?
                .finish_training_for_blocks(trained)?;
            if let Some(dict) = dict {
                self.persist_and_adopt(collection, &compressor, dict)?;
            }
        }
        Ok(())
    }
}
