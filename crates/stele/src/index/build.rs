//! Building an index over the documents a collection holds: every document's keys go
//! straight into the store's sorter (`Store::build_map`: a parallel in-memory sort within
//! the store's memory budget, sorted runs spilled to disk and merged beyond it), which
//! writes them as one sorted table; one pass over it then writes the index in compressed
//! blocks (`packed.rs`). Memory stays within the budget whatever the collection's size; no
//! key is held twice.

use crate::collection::Entries;
use crate::error::{Error, Result};
use crate::index::{ArrayFields, IndexDef};
use crate::state::State;
use std::ops::Bound;
use stele_durable::{DurableMap, Store};

/// Builds index `def` over the documents `state` holds, packed; with the fields some
/// document held an array at (`crate::index::arrays`).
pub(crate) fn build(
    store: &Store,
    state: &State,
    def: &IndexDef,
) -> Result<(DurableMap, ArrayFields)> {
    let entries = Entries::new(
        state,
        &def.collection,
        Bound::Unbounded,
        Bound::Unbounded,
        true,
    )?;
    let mut keys = Keys {
        def,
        entries,
        pending: Vec::new(),
        failed: None,
        arrays: ArrayFields::NONE,
    };
    if store.is_read_only() {
        // A reader process replaying the log writes no table: the index stays in memory
        // until a refresh past the writer's next checkpoint opens the table it wrote.
        let mut map = store.new_map();
        for k in keys.by_ref() {
            map.put(&k, &[])?;
        }
        return match keys.failed {
            Some(e) => Err(e),
            None => Ok((map, keys.arrays)),
        };
    }
    let sorted = store.build_map(keys.by_ref().map(|k| (k, [0u8; 0])));
    // A document that failed to read ends the keys early: the map built is incomplete.
    if let Some(e) = keys.failed {
        return Err(e);
    }
    // Then into compressed blocks, in one pass over the sorted table (which the next
    // checkpoint's garbage collection removes).
    Ok((crate::index::packed::repack(store, &sorted?)?, keys.arrays))
}

/// The index keys of every document, one document at a time; the first error ends it
/// (kept in `failed`).
struct Keys<'a, 's> {
    def: &'a IndexDef,
    entries: Entries<'s>,
    pending: Vec<Vec<u8>>,
    failed: Option<Error>,
    /// The fields an array was met at so far.
    arrays: ArrayFields,
}

impl Iterator for Keys<'_, '_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(k) = self.pending.pop() {
                return Some(k);
            }
            if self.failed.is_some() {
                return None;
            }
            let keys = match self.entries.next()? {
                Ok((_, None)) => continue,
                Ok((id, Some(doc))) => doc
                    .document()
                    .map(|d| self.def.keys_noting(&d, &id, &mut self.arrays)),
                Err(e) => Err(e),
            };
            match keys {
                Ok(keys) => self.pending = keys,
                Err(e) => self.failed = Some(e),
            }
        }
    }
}
