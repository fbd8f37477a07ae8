//! Landing a bulk import (`crate::import::bulk`): the packs map it wrote goes into the
//! collection in one checkpoint, and tables a killed import left are collected at open.
//!
//! The switch is one atomic step: under the writer lock, with no commit pending or in
//! flight, the new state (the import's dictionary in the meta collection, the collection's
//! packs map, its count and its indexes rebuilt) is checkpointed: its tables are written,
//! then the manifest naming them replaces the old one by a rename. Before that rename the
//! database is as it was (the import's tables are named by nothing, and the next open or
//! checkpoint removes them); after it, the whole import is there.
//!
//! Into an empty collection the import's packs map goes in as it is. Into a collection
//! that holds documents (or removal marks) it is merged at once, under the writer lock:
//! the imported documents replace those of the same ids, the collection's other blocks are
//! copied as they are, the documents its map holds are packed with them (writers wait
//! meanwhile; readers do not).

use super::apply::{Ops, apply};
use super::compaction::{pack_settings, packs_collection};
use super::{Database, lock_poisoned};
use crate::compress::{Compressor, NewDictionary};
use crate::error::Result;
use crate::internal::packs_name;
use crate::pack::{Change, ChangeEntry, PackSettings, PackedIter, map_changes, pack_changes};
use crate::state::State;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use stele_durable::DurableMap;
use stele_table::TableId;

/// What a bulk import wrote, ready to land.
#[derive(Debug)]
pub(crate) struct Landing {
    /// The imported documents, packed (ids unique, ascending).
    pub(crate) packs: DurableMap,
    /// Documents its blocks hold.
    pub(crate) documents: u64,
    /// The dictionary their blocks were compressed with, if a new one was trained (handed
    /// out by `compressor`, which adopts it once it landed).
    pub(crate) dictionary: Option<(NewDictionary, Arc<Mutex<Compressor>>)>,
}

/// What landed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Landed {
    /// Documents in the collection afterwards.
    pub(crate) documents: u64,
    /// Whether the import was merged with documents already there.
    pub(crate) merged: bool,
}

/// Where the sorter of a bulk import spills its runs: folders of this prefix in the
/// database folder (removed when the import ends, or at the next open after a crash).
pub(crate) const SORT_PREFIX: &str = ".stele-sort-";

impl Database {
    /// Whether a bulk import into `collection` writes packed blocks (compression on and
    /// packing enabled), and if so how they are compressed.
    pub(crate) fn bulk_settings(&self, collection: &str) -> Result<Option<PackSettings>> {
        let state = self.snapshot_state();
        Ok(packs_collection(&self.inner.opts, &state, collection)?
            .then(|| pack_settings(&self.inner.opts)))
    }

    /// The state new snapshots see (a bulk import packs against it).
    pub(crate) fn visible_state(&self) -> Arc<State> {
        self.snapshot_state()
    }

    /// The compressor of `collection` (for training an import's dictionary).
    pub(crate) fn compressor_of(&self, collection: &str) -> Result<Arc<Mutex<Compressor>>> {
        self.compressor(collection)
    }

    /// Switches a bulk import's packs map into `collection` in one checkpoint (see the
    /// module documentation); on error the database is as it was.
    pub(crate) fn land_import(&self, collection: &str, landing: Landing) -> Result<Landed> {
        let Landing {
            packs,
            documents: imported,
            dictionary,
        } = landing;
        let store = &self.inner.store;
        let mut w = self.quiet_writer()?;
        if imported == 0 {
            // Nothing to switch in (an input of no documents, or only bad ones skipped).
            return Ok(Landed {
                documents: crate::collection::count(&w.state, collection),
                merged: false,
            });
        }
        let before = w.state.clone();
        let mut next = w.state.clone();
        if let Some((dict, _)) = &dictionary {
            apply(
                store,
                &mut next,
                &[crate::dicts::put_op(collection, dict)?],
                Ops::Batch,
            )?;
        }
        let pname = packs_name(collection);
        let empty = next
            .collections
            .get(collection)
            .is_none_or(DurableMap::is_empty)
            && !next.collections.contains_key(&pname);
        let (packs, documents) = if empty {
            (packs, imported)
        } else {
            merge_into(self, &next, collection, &packs)?
        };
        let landed_id = packs.id();
        next.collections
            .insert(collection.to_owned(), store.new_map());
        if documents == 0 {
            next.collections.remove(&pname);
        } else {
            next.collections.insert(pname.clone(), packs);
        }
        next.counts.insert(collection.to_owned(), documents);
        let defs: Vec<_> = next
            .indexes_of(collection)
            .map(|ix| Arc::clone(&ix.def))
            .collect();
        for def in defs {
            let (map, arrays) = crate::index::build::build(store, &next, &def)?;
            if let Some(ix) = next
                .indexes
                .get_mut(&(collection.to_owned(), def.name.clone()))
            {
                // Built afresh over every document: what they hold now, exactly.
                ix.map = map;
                ix.arrays = arrays;
            }
        }
        w.state = next;
        if let Err(e) = self.checkpoint_locked(&mut w, false) {
            // The manifest may be in place even so (renamed, then its folder's sync
            // failed; or the log's rotation failed after it): then the import landed and
            // the state must say so; else back to the state before.
            if self.manifest_names(&pname, landed_id) {
                self.publish(Arc::new(w.state.clone()));
            } else {
                w.state = before;
                return Err(e);
            }
        }
        drop(w);
        if let Some((dict, compressor)) = dictionary
            && let Ok(mut c) = compressor.lock()
        {
            // Refused only if a newer one was adopted meanwhile: keep that one.
            let _ = c.adopt(dict);
        }
        Ok(Landed {
            documents,
            merged: !empty,
        })
    }

    /// Whether the manifest on disk names table `id` as collection `name`'s.
    fn manifest_names(&self, name: &str, id: Option<TableId>) -> bool {
        let path = self.inner.dir.join(crate::manifest::FILE_NAME);
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| crate::manifest::Manifest::decode(&bytes, &path).ok())
            .is_some_and(|m| id.is_some() && m.collections.get(name).copied().flatten() == id)
    }

    /// Removes the tables no map of the state opened names (what an import, a compaction
    /// or a checkpoint killed before its manifest was written left behind) and the sort
    /// folders of killed imports. Run at open, before anything else writes a table.
    pub(crate) fn collect_unnamed_tables(&self) -> Result<()> {
        let keep: Vec<TableId> = {
            let w = self.inner.writer.lock().map_err(lock_poisoned)?;
            w.state
                .map_refs()
                .flat_map(|(_, m)| m.layer_ids())
                .collect()
        };
        self.inner.store.try_collect_garbage_keeping(&keep)?;
        // The folder lock is held: no other import of this database sorts now.
        if let Ok(entries) = std::fs::read_dir(&self.inner.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_string_lossy().starts_with(SORT_PREFIX) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        Ok(())
    }
}

/// Packs the documents of `imported` (an import's packs map) over what `collection` holds
/// in `state`: imported documents replace those of the same ids; blocks of the collection
/// no imported id or map entry falls into are copied. Returns the new packs map and the
/// documents it holds.
fn merge_into(
    db: &Database,
    state: &State,
    collection: &str,
    imported: &DurableMap,
) -> Result<(DurableMap, u64)> {
    // The imported blocks read through a view that names them as the collection's.
    let mut view = state.clone();
    view.collections
        .insert(packs_name(collection), imported.clone());
    let imports = PackedIter::new(&view, collection, Bound::Unbounded)?
        .map(|e| e.map(|(id, doc)| (id, Change::Document(doc.into_owned()))));
    let source = match state.collections.get(collection) {
        Some(map) => map.sequential()?,
        None => db.inner.store.new_map(),
    };
    let changes = Overlay {
        top: imports.peekable(),
        below: map_changes(&source).peekable(),
    };
    pack_changes(
        &db.inner.store,
        state,
        collection,
        changes,
        false,
        pack_settings(&db.inner.opts),
    )
}

/// Two sorted change streams as one: on equal ids, `top`'s change wins.
struct Overlay<A: Iterator<Item = ChangeEntry>, B: Iterator<Item = ChangeEntry>> {
    top: std::iter::Peekable<A>,
    below: std::iter::Peekable<B>,
}

impl<A: Iterator<Item = ChangeEntry>, B: Iterator<Item = ChangeEntry>> Iterator for Overlay<A, B> {
    type Item = ChangeEntry;

    fn next(&mut self) -> Option<ChangeEntry> {
        let order = match (self.top.peek(), self.below.peek()) {
            (None, None) => return None,
            (Some(_), None) | (Some(Err(_)), _) => std::cmp::Ordering::Less,
            (None, Some(_)) | (_, Some(Err(_))) => std::cmp::Ordering::Greater,
            (Some(Ok((a, _))), Some(Ok((b, _)))) => a.cmp(b),
        };
        match order {
            std::cmp::Ordering::Less => self.top.next(),
            std::cmp::Ordering::Greater => self.below.next(),
            std::cmp::Ordering::Equal => {
                self.below.next();
                self.top.next()
            }
        }
    }
}
