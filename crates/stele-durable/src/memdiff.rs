//! A map's in-memory diff: the entries put or removed since the last save, in key order for
//! iteration and merging, and, in a read-only store's maps, by hash for point lookups.
//!
//! Both halves are persistent (`imbl`): cloning the diff for a snapshot copies two root
//! pointers, and a later put copies only the nodes on its paths. On a diff of 100,000 keys
//! put in random order, the ordered half answers a get in 740-820 ns (a B-tree of 16-key
//! nodes, five levels at that size, each comparison following a key's pointer: a cache
//! miss on a large diff), the hash half in 390-500 ns; an update beside a snapshot costs
//! 2.3-2.5 us with the ordered half, 4.0-4.6 us with both (`examples/diff_get.rs`, quiet
//! machine): copying a node touches the reference counts of all its keys and values.
//!
//! Only read-only stores keep the hash half. A reader of a live database (`stele`'s
//! `ReadOnlyDatabase`) finds most of its gets in a diff that only its refreshes write, and
//! gets dominate: there it doubled the gets per second beside a busy writer. A writer's
//! puts come in batches whose keys land together in the ordered half but anywhere in the
//! hash half: with both, ingest into a store of 171,000 documents ran at half the rate
//! (`store_bench --only geonames`: 247,000-274,000 documents/s against 528,000-535,000).
//!
//! Invariant: `index`, where there is one, holds the same pairs as `ordered`.

use std::ops::Bound;
use std::sync::Arc;

/// A key of the in-memory diff, shared by both halves. Ordered and hashed as the byte
/// string it holds. Shared rather than inline or owned: a put beside a snapshot copies the
/// nodes on its path in both halves, each with every key and value in it, and copying a
/// key must then cost a reference count, not an allocation (measured under load: with
/// owned keys such a put cost 9-13 us, with inline ones up to 47 us where keys spilled
/// past the inline bytes).
pub(crate) type DiffKey = Arc<[u8]>;

/// A value of the diff: `None` is a removal.
pub(crate) type DiffValue = Option<Arc<[u8]>>;

pub(crate) type MemRange<'a> =
    imbl::ordmap::RangedIter<'a, DiffKey, DiffValue, imbl::shared_ptr::DefaultSharedPtr>;

/// The in-memory diff of a map (see the module documentation).
#[derive(Clone)]
pub(crate) struct MemDiff {
    ordered: imbl::OrdMap<DiffKey, DiffValue>,
    index: Option<imbl::HashMap<DiffKey, DiffValue>>,
}

impl std::fmt::Debug for MemDiff {
    /// The ordered half only: the index holds the same pairs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.ordered.fmt(f)
    }
}

impl MemDiff {
    /// An empty diff; `indexed`: with the hash half (see the module documentation).
    pub(crate) fn new(indexed: bool) -> MemDiff {
        MemDiff {
            ordered: imbl::OrdMap::default(),
            index: indexed.then(imbl::HashMap::default),
        }
    }

    /// The operation for `key`, if the diff has one.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&DiffValue> {
        let Some(index) = &self.index else {
            return self.ordered.get(key);
        };
        let found = index.get(key);
        debug_assert_eq!(
            found,
            self.ordered.get(key),
            "the two halves disagree on {key:?}"
        );
        found
    }

    pub(crate) fn insert(&mut self, key: &[u8], value: DiffValue) {
        let key = DiffKey::from(key);
        if let Some(index) = &mut self.index {
            index.insert(key.clone(), value.clone());
        }
        self.ordered.insert(key, value);
        debug_assert!(
            self.index
                .as_ref()
                .is_none_or(|i| i.len() == self.ordered.len())
        );
    }

    pub(crate) fn remove(&mut self, key: &[u8]) {
        if let Some(index) = &mut self.index {
            index.remove(key);
        }
        self.ordered.remove(key);
        debug_assert!(
            self.index
                .as_ref()
                .is_none_or(|i| i.len() == self.ordered.len())
        );
    }

    pub(crate) fn len(&self) -> usize {
        self.ordered.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }

    /// The entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&DiffKey, &DiffValue)> {
        self.ordered.iter()
    }

    /// The entries whose keys lie in `bounds`, in key order (both ends).
    pub(crate) fn range(&self, bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> MemRange<'_> {
        self.ordered.range::<_, [u8]>(bounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Keys of several lengths sharing prefixes, so that keys differ at any position.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        (
            0usize..4,
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0u8)], 0..4),
        )
            .prop_map(|(n, tail)| [vec![b'k'; [0, 22, 23, 24][n]], tail].concat())
    }

    /// A read-only store's maps index their diff by hash, a writable store's do not, and a
    /// diff keeps its kind when a save clears it.
    #[test]
    fn only_read_only_stores_index_their_diffs() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let writable = crate::Store::open(dir.path()).expect("a store");
        let read_only = crate::Store::open_read_only(dir.path()).expect("a read-only store");
        let mut m = writable.new_map();
        m.put(b"a", b"1").expect("a put");
        assert!(m.diff.index.is_none());
        m.save().expect("a save");
        assert!(m.diff.index.is_none());
        let mut r = read_only.new_map();
        r.put(b"a", b"1").expect("a put");
        assert_eq!(r.diff.index.as_ref().map(imbl::HashMap::len), Some(1));
        let opened = read_only.open_map(m.id().expect("saved")).expect("opened");
        assert!(opened.diff.index.is_some());
    }

    proptest! {
        /// Every get, the order and every range agree with a `BTreeMap` after any sequence of
        /// puts, removal marks and removals, and a clone taken midway keeps its contents.
        #[test]
        fn agrees_with_a_btreemap(
            ops in proptest::collection::vec((key(), 0u8..3, any::<u8>()), 1..80),
            probes in proptest::collection::vec(key(), 1..20),
            indexed in any::<bool>(),
        ) {
            let mut diff = MemDiff::new(indexed);
            let mut model: BTreeMap<Vec<u8>, DiffValue> = BTreeMap::new();
            let mut frozen = None;
            for (i, (k, op, byte)) in ops.iter().enumerate() {
                match op {
                    0 => {
                        let v: DiffValue = Some(Arc::from(&[*byte][..]));
                        diff.insert(k, v.clone());
                        model.insert(k.clone(), v);
                    }
                    1 => {
                        diff.insert(k, None);
                        model.insert(k.clone(), None);
                    }
                    _ => {
                        diff.remove(k);
                        model.remove(k);
                    }
                }
                if i == ops.len() / 2 {
                    frozen = Some((diff.clone(), model.clone()));
                }
            }
            for (diff, model) in [(diff, model)].into_iter().chain(frozen) {
                prop_assert_eq!(diff.len(), model.len());
                prop_assert_eq!(diff.is_empty(), model.is_empty());
                for p in probes.iter().chain(model.keys()) {
                    prop_assert_eq!(diff.get(p), model.get(p));
                }
                let all: Vec<_> = diff.iter().map(|(k, v)| (k.to_vec(), v.clone())).collect();
                let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(all, want);
                for p in &probes {
                    let from = (Bound::Included(p.as_slice()), Bound::Unbounded);
                    let got: Vec<Vec<u8>> = diff.range(from).map(|(k, _)| k.to_vec()).collect();
                    let want: Vec<Vec<u8>> = model.range::<[u8], _>(from).map(|(k, _)| k.clone()).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
    }
}
