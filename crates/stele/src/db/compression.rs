//! Compression on the write path: a collection's setting, its compressor (resumed from
//! the persisted dictionaries), and the compression of a batch's documents before it is
//! logged, with the dictionaries they propose.

use super::{Database, lock_poisoned};
use crate::compress::{CompressOptions, Compressor, NewDictionary};
use crate::error::Result;
use crate::internal::{META, dict_key};
use crate::wal::LoggedOp;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

impl Database {
    /// Whether `collection` stores new documents compressed (default: yes).
    pub fn compression(&self, collection: &str) -> Result<bool> {
        let snap = self.snapshot();
        Ok(
            match snap.meta(format!("compress/{collection}").as_bytes())? {
                Some(v) => v != b"0",
                None => true,
            },
        )
    }

    /// Turns compression of new documents in `collection` on or off (documents already
    /// stored stay as they are, readable either way). Logged like any write.
    pub fn set_compression(&self, collection: &str, on: bool) -> Result<()> {
        crate::batch::check_collection_name(collection)?;
        self.commit_ops(vec![LoggedOp::Put {
            collection: META.to_owned(),
            id: format!("compress/{collection}").into_bytes(),
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
    #[expect(
        clippy::type_complexity,
        reason = "one private call site; a struct would only name the pair"
    )]
    pub(super) fn compress_ops(
        &self,
        ops: &mut Vec<LoggedOp>,
    ) -> Result<(
        Vec<(Arc<Mutex<Compressor>>, NewDictionary)>,
        Vec<crate::dicts::Pin>,
    )> {
        let mut enabled: HashMap<String, bool> = HashMap::new();
        // In order of first use, so that dictionaries are logged in a stable order; with
        // the positions of the operations whose documents each compresses.
        let mut used: Vec<(String, Arc<Mutex<Compressor>>, Vec<usize>)> = Vec::new();
        let mut used_at: HashMap<String, usize> = HashMap::new();
        for (at, op) in ops.iter().enumerate() {
            let LoggedOp::Put {
                collection, value, ..
            } = op
            else {
                continue;
            };
            // Documents staged by an import are compressed as the target's documents.
            let target = match collection.strip_prefix(crate::import::STAGING_PREFIX) {
                Some(staged) => match staged.split_once('/') {
                    Some((_, target)) => target.to_owned(),
                    None => continue,
                },
                None if collection.starts_with('_') => continue,
                None => collection.clone(),
            };
            let collection = &target;
            let on = match enabled.get(collection.as_str()) {
                Some(on) => *on,
                None => {
                    let on = self.compression(collection)?;
                    enabled.insert(collection.clone(), on);
                    on
                }
            };
            if !on || crate::stored::raw(value).is_none() {
                continue;
            }
            match used_at
                .get(collection.as_str())
                .and_then(|&i| used.get_mut(i))
            {
                Some((_, _, positions)) => positions.push(at),
                None => {
                    let c = self.compressor(collection)?;
                    used_at.insert(collection.clone(), used.len());
                    used.push((collection.clone(), c, vec![at]));
                }
            }
        }
        let threads = crate::cores();
        let mut pins = Vec::new();
        for (collection, compressor, positions) in &used {
            let docs: Vec<&[u8]> = positions
                .iter()
                .filter_map(|&at| match ops.get(at) {
                    Some(LoggedOp::Put { value, .. }) => crate::stored::raw(value),
                    _ => None,
                })
                .collect();
            let values = {
                let mut c = compressor.lock().map_err(lock_poisoned)?;
                // Pinned under the compressor's lock, before any removal can read this
                // compressor's current id (the dictionary only changes through `adopt`,
                // which takes the same lock).
                if let Some(id) = c.current_dictionary() {
                    pins.push(self.inner.pins.pin(collection, id));
                }
                c.compress_many(&docs, threads)?
            };
            drop(docs);
            for (&at, compressed) in positions.iter().zip(values) {
                if let Some(LoggedOp::Put { value, .. }) = ops.get_mut(at) {
                    *value = Arc::from(compressed);
                }
            }
        }
        let mut proposals = Vec::new();
        let mut dict_ops = Vec::new();
        for (collection, compressor, _) in used {
            let dict = compressor
                .lock()
                .map_err(lock_poisoned)?
                .take_new_dictionary()?;
            if let Some(dict) = dict {
                dict_ops.push(LoggedOp::Put {
                    collection: META.to_owned(),
                    id: dict_key(&collection, dict.id()),
                    value: Arc::from(dict.bytes()),
                });
                proposals.push((compressor, dict));
            }
        }
        if !dict_ops.is_empty() {
            dict_ops.append(ops);
            *ops = dict_ops;
        }
        Ok((proposals, pins))
    }
}
