//! A reader's refresh applied in place, to a state no snapshot shares.
//!
//! Why: a reader's in-memory diffs are persistent maps (`imbl`), and a put into one that a
//! snapshot shares copies the nodes on its paths, each with every entry in it. Beside a
//! busy writer that copying, mostly cache misses, was most of a refresh: about 9 us per
//! document applied in `readers_bench`, 42% of the reader's time. When nothing but the
//! database handle holds the state (the caller dropped its last snapshot before
//! refreshing, as `ReadOnlyDatabase::refresh_snapshot` does), the maps are changed where
//! they lie and nothing is copied.
//!
//! Invariant: a snapshot never sees a change after it was taken. The state is changed in
//! place only while it is uniquely owned (`Arc::get_mut` under the write lock of the
//! visible state, so no snapshot can be taken meanwhile), and a batch is never half
//! applied when seen: every map records what its changes replaced, and an error (a
//! document of the log that fails its check, a table that cannot be read) or a gap in
//! the log takes every change of this refresh back before anything can read the state.

use super::apply::apply_batches;
use crate::error::Result;
use crate::internal::META;
use crate::state::State;
use crate::wal::{LoggedBatch, LoggedOp};
use std::collections::BTreeMap;
use stele_durable::Store;

/// Whether `batches` may be applied in place: puts and removals of documents outside the
/// meta collection, whose changes the maps' records and the counts saved here take back.
/// Others (indexes made or dropped, collections dropped or merged, dictionaries) are rare
/// and go to a copy of the state, as before.
pub(super) fn eligible(batches: &[LoggedBatch]) -> bool {
    batches.iter().flat_map(|b| &b.ops).all(|op| match op {
        LoggedOp::Put { collection, .. } | LoggedOp::Delete { collection, .. } => {
            collection != META
        }
        _ => false,
    })
}

/// Applies `batches` (which must be [`eligible`]) to `state` in place: `Ok(true)` when all
/// were applied; `Ok(false)` on a gap in the log and `Err` on a failed batch, both with
/// `state` as it was.
pub(super) fn apply(store: &Store, state: &mut State, batches: &[LoggedBatch]) -> Result<bool> {
    debug_assert!(eligible(batches));
    let mut guard = Restore::new(state);
    let applied = apply_batches(store, guard.state, batches)?;
    if applied {
        guard.keep();
    }
    Ok(applied)
}

/// Takes back the changes made to a state since it was built, unless [`kept`](Self::keep);
/// also when unwinding from a panic, so the state behind a poisoned lock is whole.
struct Restore<'a> {
    state: &'a mut State,
    /// What the maps do not record; `None` once kept.
    saved: Option<Saved>,
}

struct Saved {
    seq: u64,
    counts: BTreeMap<String, u64>,
}

impl<'a> Restore<'a> {
    fn new(state: &'a mut State) -> Restore<'a> {
        for map in state.maps_mut() {
            map.start_undo();
        }
        let saved = Saved {
            seq: state.seq,
            counts: state.counts.clone(),
        };
        Restore {
            state,
            saved: Some(saved),
        }
    }

    /// Keeps the changes (and frees what they replaced).
    fn keep(&mut self) {
        self.saved = None;
        for map in self.state.maps_mut() {
            map.end_undo();
        }
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let Some(saved) = self.saved.take() else {
            return;
        };
        // A map that was not recording was made by these batches: it goes.
        self.state.collections.retain(|_, m| m.undo());
        self.state.indexes.retain(|_, ix| ix.map.undo());
        self.state.seq = saved.seq;
        self.state.counts = saved.counts;
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]
mod tests {
    use super::*;
    use std::sync::Arc;

    type Contents = (
        u64,
        BTreeMap<String, Vec<(Vec<u8>, Vec<u8>)>>,
        BTreeMap<String, u64>,
    );

    /// Everything a refresh may change: the sequence number, every map's entries and
    /// length, the counts.
    fn contents(state: &State) -> Contents {
        let maps = state
            .collections
            .iter()
            .map(|(name, map)| {
                let entries: Vec<_> = map
                    .iter()
                    .map(|r| {
                        let (k, v) = r.unwrap();
                        (k.to_vec(), v.to_vec())
                    })
                    .collect();
                assert_eq!(map.len(), entries.len() as u64, "{name}");
                (name.clone(), entries)
            })
            .collect();
        (state.seq, maps, state.counts.clone())
    }

    fn put(collection: &str, id: &str, json: &str) -> LoggedOp {
        LoggedOp::Put {
            collection: collection.to_owned(),
            id: id.as_bytes().to_vec(),
            value: crate::stored::encode(&stele_doc::from_json(json.as_bytes()).unwrap()),
        }
    }

    fn delete(collection: &str, id: &str) -> LoggedOp {
        LoggedOp::Delete {
            collection: collection.to_owned(),
            id: id.as_bytes().to_vec(),
        }
    }

    fn batch(seq: u64, ops: Vec<LoggedOp>) -> LoggedBatch {
        LoggedBatch { seq, ops }
    }

    /// A batch that fails midway (an invalid document after valid puts, removals and a new
    /// collection), or a gap in the log, leaves the state exactly as it was: entries,
    /// lengths, counts, collections and sequence number; batches that apply are kept, and
    /// the maps stop recording.
    #[test]
    fn a_failed_refresh_is_taken_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        let store = Store::open_read_only(dir.path()).unwrap();
        let mut state = State::default();
        let first = [batch(
            1,
            vec![put("c", "a", r#"{"n":1}"#), put("c", "b", r#"{"n":2}"#)],
        )];
        assert!(apply(&store, &mut state, &first).unwrap());
        let before = contents(&state);
        let mut bad = crate::stored::encode(&stele_doc::from_json(br#"{"n":3}"#).unwrap()).to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 0xFF;
        let failing = [
            batch(
                2,
                vec![
                    put("c", "a", r#"{"n":10}"#),
                    put("c", "z", r#"{"n":11}"#),
                    delete("c", "b"),
                    put("d", "new", r#"{"n":12}"#),
                ],
            ),
            batch(
                3,
                vec![
                    put("c", "a", r#"{"n":20}"#),
                    LoggedOp::Put {
                        collection: "c".to_owned(),
                        id: b"bad".to_vec(),
                        value: Arc::from(bad),
                    },
                ],
            ),
        ];
        assert!(eligible(&failing));
        assert!(apply(&store, &mut state, &failing).is_err());
        assert_eq!(contents(&state), before);
        assert!(!state.collections.contains_key("d"));
        // A gap after a batch that applied: taken back too.
        let gap = [failing[0].clone(), batch(4, vec![delete("c", "a")])];
        assert!(!apply(&store, &mut state, &gap).unwrap());
        assert_eq!(contents(&state), before);
        // Batches that apply stay, and nothing records any more.
        assert!(apply(&store, &mut state, &failing[..1]).unwrap());
        let after = contents(&state);
        assert_eq!(after.0, 2);
        assert_eq!(after.2.get("c"), Some(&2));
        assert_eq!(after.2.get("d"), Some(&1));
        assert!(state.maps_mut().all(|m| !m.undo()));
        assert_eq!(contents(&state), after);
    }

    /// Batches that change indexes, collections as a whole or dictionaries go to a copy.
    #[test]
    fn only_document_puts_and_removals_apply_in_place() {
        assert!(eligible(&[batch(
            1,
            vec![put("c", "a", "{}"), delete("c", "a")]
        )]));
        assert!(!eligible(&[batch(1, vec![put(META, "a", "{}")])]));
        let drop_c = LoggedOp::DropCollection {
            collection: "c".to_owned(),
        };
        assert!(!eligible(&[
            batch(1, vec![put("c", "a", "{}")]),
            batch(2, vec![drop_c])
        ]));
    }
}
