//! Compression on the write path: a collection's setting, its compressor (resumed from
//! the persisted dictionaries), and the compression of a batch's documents before it is
//! logged, with the dictionaries they propose.

use super::{Database, lock_poisoned};
use crate::compress::{CompressOptions, Compressor, NewDictionary};
use crate::dicts::Pin;
use crate::error::Result;
use crate::internal::{Internal, META, MetaKey, check_collection_name, is_internal};
use crate::wal::LoggedOp;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

impl Database {
    /// Whether `collection` stores new documents compressed (default: yes).
    pub fn compression(&self, collection: &str) -> Result<bool> {
        self.snapshot_state().compression(collection)
    }

    /// Turns compression of new documents in `collection` on or off (documents already
    /// stored stay as they are, readable either way). Logged like any write.
    pub fn set_compression(&self, collection: &str, on: bool) -> Result<()> {
        check_collection_name(collection)?;
        self.commit_ops(vec![LoggedOp::Put {
            collection: META.to_owned(),
            id: MetaKey::compress(collection),
            value: Arc::from(if on { &b"1"[..] } else { &b"0"[..] }),
        }])
    }

    /// The compressor of `collection`, resumed from its persisted dictionaries.
    pub(super) fn compressor(&self, collection: &str) -> Result<Arc<Mutex<Compressor>>> {
        let mut all = self.inner.compressors.lock().map_err(lock_poisoned)?;
        if let Some(c) = all.get(collection) {
            return Ok(Arc::clone(c));
        }
        // One state for the dictionary and the blocks that may name it.
        let state = self.snapshot_state();
        let last = crate::pack::last_dictionary(&state, collection)?;
        let current = last.as_ref().map(|(id, bytes)| (*id, bytes.as_slice()));
        let packing = self.inner.opts.pack_block_bytes > 0;
        // With packing on, documents stay compressed one by one only until the next
        // compaction packs them (at level 9): level 1 makes commits faster for the same
        // final size (debian-packages 131k -> 157k docs/s, `docs/benchmarks.md`).
        let level = if packing {
            1
        } else {
            CompressOptions::default().level
        };
        let opts = CompressOptions {
            background_training: self.inner.opts.background_training,
            // Packing recompresses every document at compaction, with whatever dictionary
            // exists by then: no commit needs to wait for the first training.
            background_first_training: packing,
            // Full compactions pack stream forms with the collection's newest dictionary.
            stream_samples: packing && self.inner.opts.pack_streams,
            // Documents compressed one by one are packed again at compaction, with a
            // dictionary trained for the blocks.
            light_ingest: packing,
            level,
            ..CompressOptions::default()
        };
        let mut c = Compressor::resume(opts, current, last.as_ref().map_or(0, |(id, _)| *id))?;
        // A dictionary the collection's blocks use was trained for them (by a full
        // compaction, on stream forms): provisional for documents, as it was before the
        // restart. Were it trained on documents, this costs one more training, adopted
        // only if better. A block that cannot be read says nothing here (reads of it report
        // the damage; writes need not fail for it).
        if let Some((id, _)) = &last
            && packing
        {
            let first_block = crate::collection::first_block_dictionary(&state, collection);
            if first_block.ok().flatten() == Some(*id) {
                c.current_serves_blocks();
            }
        }
        let c = Arc::new(Mutex::new(c));
        all.insert(collection.to_owned(), Arc::clone(&c));
        Ok(c)
    }

    /// Compresses the documents of user collections with compression on, in place. Then each
    /// compressor used may hand out a dictionary (trained on everything up to this batch's
    /// last document, or earlier on a background thread): it goes into this batch, ahead of
    /// the documents (none of which uses it), and is adopted once the batch is durable.
    /// Returns the proposed dictionaries with their compressors, and the pins that keep the
    /// dictionaries the documents were compressed with until the batch is applied.
    pub(super) fn compress_ops(
        &self,
        ops: &mut Vec<LoggedOp>,
    ) -> Result<(Vec<Proposal>, Vec<Pin>)> {
        let uses = self.compressors_of(ops)?;
        let pins = self.compress_in_place(ops, &uses)?;
        let proposals = log_new_dictionaries(ops, uses)?;
        Ok((proposals, pins))
    }

    /// The compressors a batch's documents go through, in order of first use (so that
    /// dictionaries are logged in a stable order), each with the positions of the puts whose
    /// documents it compresses: raw documents of user collections with compression on, and
    /// of import staging collections into them (compressed as the target's documents).
    fn compressors_of(&self, ops: &[LoggedOp]) -> Result<Vec<CompressorUse>> {
        let mut enabled: HashMap<String, bool> = HashMap::new();
        let mut uses: Vec<CompressorUse> = Vec::new();
        let mut used_at: HashMap<String, usize> = HashMap::new();
        for (at, op) in ops.iter().enumerate() {
            let LoggedOp::Put {
                collection, value, ..
            } = op
            else {
                continue;
            };
            let target = match Internal::parse(collection) {
                Some(Internal::Import { target, .. }) => target,
                _ if is_internal(collection) => continue,
                _ => collection.clone(),
            };
            let on = match enabled.get(target.as_str()) {
                Some(on) => *on,
                None => {
                    let on = self.compression(&target)?;
                    enabled.insert(target.clone(), on);
                    on
                }
            };
            if !on || crate::stored::raw(value).is_none() {
                continue;
            }
            match used_at.get(target.as_str()).and_then(|&i| uses.get_mut(i)) {
                Some(using) => using.positions.push(at),
                None => {
                    let compressor = self.compressor(&target)?;
                    used_at.insert(target.clone(), uses.len());
                    uses.push(CompressorUse {
                        collection: target,
                        compressor,
                        positions: vec![at],
                    });
                }
            }
        }
        Ok(uses)
    }

    /// Replaces the raw documents at each use's positions with their compressed values;
    /// returns a pin of each dictionary used.
    fn compress_in_place(&self, ops: &mut [LoggedOp], uses: &[CompressorUse]) -> Result<Vec<Pin>> {
        let threads = crate::cores::cores();
        let mut pins = Vec::new();
        for using in uses {
            let docs: Vec<&[u8]> = using
                .positions
                .iter()
                .filter_map(|&at| match ops.get(at) {
                    Some(LoggedOp::Put { value, .. }) => crate::stored::raw(value),
                    _ => None,
                })
                .collect();
            let values = {
                let mut c = using.compressor.lock().map_err(lock_poisoned)?;
                // Pinned under the compressor's lock, before any removal can read this
                // compressor's current id (the dictionary only changes through `adopt`,
                // which takes the same lock).
                if let Some(id) = c.current_dictionary() {
                    pins.push(self.inner.pins.pin(&using.collection, id));
                }
                c.compress_many(&docs, threads)?
            };
            drop(docs);
            for (&at, compressed) in using.positions.iter().zip(values) {
                if let Some(LoggedOp::Put { value, .. }) = ops.get_mut(at) {
                    *value = Arc::from(compressed);
                }
            }
        }
        Ok(pins)
    }
}

/// A compressor a batch uses: its collection and the positions of the puts it compresses.
struct CompressorUse {
    collection: String,
    compressor: Arc<Mutex<Compressor>>,
    positions: Vec<usize>,
}

/// A dictionary logged with a batch, to be adopted by its compressor once the batch is
/// durable.
pub(super) type Proposal = (Arc<Mutex<Compressor>>, NewDictionary);

/// Puts the dictionary each used compressor hands out ahead of the batch's operations.
fn log_new_dictionaries(
    ops: &mut Vec<LoggedOp>,
    uses: Vec<CompressorUse>,
) -> Result<Vec<Proposal>> {
    let mut proposals = Vec::new();
    let mut dict_ops = Vec::new();
    for using in uses {
        let dict = using
            .compressor
            .lock()
            .map_err(lock_poisoned)?
            .take_new_dictionary()?;
        if let Some(dict) = dict {
            dict_ops.push(crate::dicts::put_op(&using.collection, &dict)?);
            proposals.push((using.compressor, dict));
        }
    }
    if !dict_ops.is_empty() {
        dict_ops.append(ops);
        *ops = dict_ops;
    }
    Ok(proposals)
}
