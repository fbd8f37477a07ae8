//! The lifetime of compression dictionaries: which ones a collection still needs, and which
//! ones may be removed.
//!
//! A dictionary is stored durably (in the meta collection) before any value uses it, and is
//! needed for as long as any stored value names it: a lost dictionary is lost data. Once a
//! full compaction has packed every document of a collection with its newest dictionary,
//! the older ones are usually named by nothing, and every retraining would otherwise add
//! another 1-32 KiB to the database forever.
//!
//! Who can name a dictionary of collection `c`:
//! - values in `c`'s map (documents written one by one since its last packing), and the
//!   blocks of its packs map;
//! - values of import staging collections into `c` (compressed as `c`'s documents);
//! - a batch compressed but not yet applied: commits compress outside the writer lock, so a
//!   batch may carry an older dictionary while a collection runs. Such batches *pin* their
//!   dictionary ([`Pins`]) from the moment they compress (under the compressor's lock) until
//!   their commit returns;
//! - later writes: commits compress with the compressor's current dictionary, packing uses
//!   the newest persisted one; both are at least the current id, which is never removed;
//! - background compactions running or waiting to be swapped in (they may copy blocks the
//!   scan did not see): removal does not run while there are any;
//! - open snapshots: each holds the dictionaries of its own state, untouched by removals.
//!
//! So a dictionary may go when its id is below the compressor's current one (read before the
//! pins), it is not the newest persisted one (new ids continue after it, so ids are never
//! reused), no pin holds it, and no value of the scan names it.

use crate::compress::{DictionaryId, NewDictionary};
use crate::error::Result;
use crate::internal::{Internal, META, MetaKey};
use crate::state::State;
use crate::wal::LoggedOp;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Dictionaries held by batches compressed but not applied yet, by collection: a count per
/// (collection, dictionary id).
#[derive(Debug, Default)]
pub(crate) struct Pins {
    held: Mutex<HashMap<(String, DictionaryId), usize>>,
}

impl Pins {
    /// Pins `id` of `collection` until the returned guard drops.
    pub(crate) fn pin(self: &Arc<Self>, collection: &str, id: DictionaryId) -> Pin {
        let key = (collection.to_owned(), id);
        if let Ok(mut held) = self.held.lock() {
            *held.entry(key.clone()).or_default() += 1;
        }
        Pin {
            pins: Arc::clone(self),
            key,
        }
    }

    /// The pinned ids of `collection`, or `None` if the pins cannot be read (a thread
    /// panicked while holding them): then nothing may be removed.
    pub(crate) fn of(&self, collection: &str) -> Option<BTreeSet<DictionaryId>> {
        let held = self.held.lock().ok()?;
        Some(
            held.keys()
                .filter(|(c, _)| c == collection)
                .map(|(_, id)| *id)
                .collect(),
        )
    }
}

/// A dictionary held by one batch in flight (see [`Pins`]).
#[derive(Debug)]
pub(crate) struct Pin {
    pins: Arc<Pins>,
    key: (String, DictionaryId),
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Ok(mut held) = self.pins.held.lock()
            && let Some(n) = held.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The logged put that persists `dict` of `collection` in the meta collection, in its
/// stored form (compressed when that is smaller: `crate::compress::dictionary_to_stored`).
pub(crate) fn put_op(collection: &str, dict: &NewDictionary) -> Result<LoggedOp> {
    Ok(LoggedOp::Put {
        collection: META.to_owned(),
        id: MetaKey::dict(collection, dict.id()),
        value: Arc::from(crate::compress::dictionary_to_stored(dict.bytes())?),
    })
}

/// The dictionary ids of `collection` that values of `state` name: its map's documents, its
/// packed blocks, and the documents of import staging collections into it.
pub(crate) fn named(state: &State, collection: &str) -> Result<BTreeSet<DictionaryId>> {
    let mut ids = BTreeSet::new();
    let maps = state.collections.keys().filter(|name| {
        name.as_str() == collection
            || matches!(Internal::parse(name), Some(Internal::Import { target, .. }) if target == collection)
    });
    for name in maps {
        crate::collection::for_each_value_header(state, name, |h, _| ids.extend(h.dictionary))?;
    }
    crate::collection::for_each_block_header(state, collection, |h, _| ids.extend(h.dictionary))?;
    Ok(ids)
}

/// Of `persisted` (the dictionary ids of a collection), those that may be removed: below
/// `current` (the compressor's current id, read before `pinned`), not the newest, not
/// pinned, not named by any stored value.
pub(crate) fn removable(
    persisted: &BTreeSet<DictionaryId>,
    current: DictionaryId,
    pinned: &BTreeSet<DictionaryId>,
    named: &BTreeSet<DictionaryId>,
) -> Vec<DictionaryId> {
    let newest = persisted.last().copied();
    persisted
        .iter()
        .copied()
        .filter(|id| {
            *id < current && Some(*id) != newest && !pinned.contains(id) && !named.contains(id)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[DictionaryId]) -> BTreeSet<DictionaryId> {
        ids.iter().copied().collect()
    }

    #[test]
    fn only_old_unnamed_unpinned_dictionaries_go() {
        let persisted = set(&[1, 2, 3, 4, 5, 6]);
        // Current 5: 5 and 6 (persisted, not adopted yet) stay; 2 is pinned, 3 named.
        assert_eq!(removable(&persisted, 5, &set(&[2]), &set(&[3])), [1, 4]);
        // Never the newest, even when it is below the current id (cannot happen, but the
        // rule does not depend on it).
        assert_eq!(removable(&set(&[1, 2]), 9, &set(&[]), &set(&[])), [1]);
        // Nothing is current (no compressor): the caller passes the newest, which stays.
        assert!(removable(&set(&[7]), 7, &set(&[]), &set(&[])).is_empty());
    }

    #[test]
    fn pins_count_and_release() {
        let pins = Arc::new(Pins::default());
        let a = pins.pin("c", 3);
        let b = pins.pin("c", 3);
        let other = pins.pin("d", 4);
        assert_eq!(pins.of("c"), Some(set(&[3])));
        drop(a);
        assert_eq!(pins.of("c"), Some(set(&[3])));
        drop(b);
        assert_eq!(pins.of("c"), Some(set(&[])));
        assert_eq!(pins.of("d"), Some(set(&[4])));
        drop(other);
        assert_eq!(pins.of("d"), Some(set(&[])));
    }
}
