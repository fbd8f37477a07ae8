//! Changes taken back: a map records what its puts and removals replaced, so that a caller
//! changing a map no snapshot shares, in place, can restore it when a later step of the
//! same change fails.
//!
//! Why in place: a put into a map whose in-memory diff a clone (a snapshot) shares copies
//! the nodes on its paths, each with every entry in it; a map nothing shares is changed
//! where it lies (`imbl` copies a node only when another owner holds it). A reader of a
//! live database that drops its snapshot before catching up (`stele`'s
//! `ReadOnlyDatabase::refresh`) applies the log to such a map, and must not publish half a
//! batch when one of its documents fails a check: recording costs one reference count per
//! change (the replaced entry is kept, not copied).

use crate::map::DurableMap;

impl DurableMap {
    /// Starts recording this map's changes ([`put`](Self::put), [`remove`](Self::remove))
    /// so that [`undo`](Self::undo) can take them back; a recording already under way
    /// starts over. Clones taken meanwhile do not record. A [`save`](Self::save) or
    /// [`compact`](Self::compact) ends the recording (what they wrote stays).
    pub fn start_undo(&mut self) {
        self.diff.start_undo(self.len);
    }

    /// Stops recording, keeping the changes made since [`start_undo`](Self::start_undo)
    /// (and freeing what they replaced).
    pub fn end_undo(&mut self) {
        self.diff.end_undo();
    }

    /// Takes back every change made since [`start_undo`](Self::start_undo), leaving the map
    /// as it was then, and stops recording. Returns whether a recording was under way
    /// (if not, nothing changes).
    ///
    /// ```
    /// # fn main() -> stele_durable::Result<()> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = stele_durable::Store::open(dir.path())?;
    /// let mut map = store.new_map();
    /// map.put(b"a", b"1")?;
    /// map.start_undo();
    /// map.put(b"a", b"2")?;
    /// map.put(b"b", b"3")?;
    /// assert!(map.undo());
    /// assert_eq!((map.get(b"a")?, map.get(b"b")?, map.len()), (Some(&b"1"[..]), None, 1));
    /// # Ok(()) }
    /// ```
    pub fn undo(&mut self) -> bool {
        match self.diff.undo() {
            Some(len) => {
                self.len = len;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn contents(map: &crate::DurableMap) -> Vec<(Vec<u8>, Vec<u8>)> {
        map.iter()
            .map(|r| {
                let (k, v) = r.expect("an entry");
                (k.to_vec(), v.to_vec())
            })
            .collect()
    }

    proptest! {
        /// After any puts and removals on top of saved tables (so removals leave marks),
        /// `undo` restores exactly the contents and length from `start_undo`, in both kinds
        /// of store; a clone taken while recording keeps its own contents and records
        /// nothing; changes kept by `end_undo` are not taken back by a later `undo`.
        #[test]
        fn undo_restores_the_map_as_it_was(
            saved in proptest::collection::vec((0u8..24, any::<u8>()), 0..20),
            before in proptest::collection::vec((0u8..24, any::<u8>(), any::<bool>()), 0..30),
            after in proptest::collection::vec((0u8..24, any::<u8>(), any::<bool>()), 1..30),
            read_only in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let store = crate::Store::open(dir.path()).expect("a store");
            let mut base = store.new_map();
            for (k, v) in &saved {
                base.put(&[*k], &[*v]).expect("a put");
            }
            let id = base.save().expect("a save");
            let store = if read_only {
                crate::Store::open_read_only(dir.path()).expect("a read-only store")
            } else {
                store
            };
            let mut map = store.open_map(id).expect("the saved map");
            let apply = |map: &mut crate::DurableMap, ops: &[(u8, u8, bool)]| {
                for (k, v, put) in ops {
                    if *put {
                        map.put(&[*k], &[*v]).expect("a put");
                    } else {
                        map.remove(&[*k]).expect("a removal");
                    }
                }
            };
            apply(&mut map, &before);
            let was = (contents(&map), map.len());
            map.start_undo();
            apply(&mut map, &after[..after.len() / 2]);
            let midway = map.clone();
            let at_midway = (contents(&midway), midway.len());
            apply(&mut map, &after[after.len() / 2..]);
            prop_assert!(map.undo());
            prop_assert_eq!((contents(&map), map.len()), was.clone());
            prop_assert_eq!((contents(&midway), midway.len()), at_midway);
            // The length agrees with the entries.
            prop_assert_eq!(map.len(), contents(&map).len() as u64);
            // Nothing to take back any more.
            prop_assert!(!map.undo());
            // Kept changes stay.
            map.start_undo();
            apply(&mut map, &after);
            map.end_undo();
            let kept = (contents(&map), map.len());
            prop_assert!(!map.undo());
            prop_assert_eq!((contents(&map), map.len()), kept);
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = was.0.into_iter().collect();
            for (k, v, put) in &after {
                if *put {
                    model.insert(vec![*k], vec![*v]);
                } else {
                    model.remove(&vec![*k]);
                }
            }
            prop_assert_eq!(contents(&map), model.into_iter().collect::<Vec<_>>());
        }
    }
}
