//! A map's in-memory diff: the entries put or removed since the last save, in key order for
//! iteration and merging, and, in a read-only store's maps, by hash for point lookups.
//!
//! Both halves are persistent (`imbl`): cloning the diff for a snapshot copies two root
//! pointers, and a later put copies only the nodes on its paths. On a diff of 100,000 keys
//! put in random order, the ordered half answers a get in 740-820 ns (a B-tree of 16-key
//! nodes, five levels at that size, each comparison following a key's pointer: a cache
//! miss on a large diff), the hash half in 390-500 ns (`examples/diff_get.rs`, quiet
//! machine). A put beside a snapshot copies the nodes on its paths, and copying a node
//! touches the reference count of every entry in it, each in its own allocation: on the
//! same diff an update beside snapshots costs 2.7-3.5 us of CPU with the ordered half,
//! 4.6-5.8 us with both, against 5.6-8.6 us with both before a key and its value shared
//! one allocation (alternating runs at load 4).
//!
//! Only read-only stores keep the hash half. A reader of a live database (`stele`'s
//! `ReadOnlyDatabase`) finds most of its gets in a diff that only its refreshes write, and
//! gets dominate: there it doubled the gets per second beside a busy writer. A writer's
//! puts come in batches whose keys land together in the ordered half but anywhere in the
//! hash half: with both, ingest into a store of 171,000 documents ran at half the rate
//! (`store_bench --only geonames`: 247,000-274,000 documents/s against 528,000-535,000).
//!
//! Invariant: `index`, where there is one, holds the same entries as `ordered`.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;

/// One entry of the diff, its key and its operation in one shared allocation:
/// `[op: u8, 1 put / 0 removal][key length: u64 LE][key][value]`. Shared rather than
/// inline or owned: a put beside a snapshot copies the nodes on its path in both halves,
/// each with every entry in it, and copying an entry must then cost one reference count,
/// not an allocation (measured under load: with owned keys such a put cost 9-13 us, with
/// inline ones up to 47 us where keys spilled past the inline bytes). One allocation for
/// key and value, not two: a copied node touches half the reference counts, a dropped one
/// half the frees, and a get reads the value next to the key it compared.
///
/// Compared, ordered and hashed as its key alone (as the `[u8]` it borrows as), so the
/// halves find an entry by key bytes and an insert replaces the entry of an equal key.
#[derive(Clone)]
pub(crate) struct Entry(Arc<[u8]>);

/// Bytes before an entry's key.
const ENTRY_HEAD: usize = 9;

/// Capacity of the buffer an entry is built in that a thread keeps between entries.
const SCRATCH_KEPT_BYTES: usize = 64 << 10;

impl Entry {
    fn new(key: &[u8], value: Option<&[u8]>) -> Entry {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let op = u8::from(value.is_some());
        let value = value.unwrap_or_default();
        let fill = |buf: &mut Vec<u8>| {
            buf.clear();
            buf.push(op);
            buf.extend_from_slice(&(key.len() as u64).to_le_bytes());
            buf.extend_from_slice(key);
            buf.extend_from_slice(value);
            let bytes = Arc::<[u8]>::from(buf.as_slice());
            // A big document's buffer is not kept for the thread's lifetime.
            if buf.capacity() > SCRATCH_KEPT_BYTES {
                *buf = Vec::new();
            }
            bytes
        };
        // Built in a reused buffer, then copied whole into its one allocation: collecting
        // the bytes through an iterator copies them one by one, which a writer would pay on
        // every put of a big document (github-webhooks' are 10 KB).
        let bytes = SCRATCH
            .with(|s| s.try_borrow_mut().map(|mut b| fill(&mut b)).ok())
            .unwrap_or_else(|| fill(&mut Vec::new()));
        let entry = Entry(bytes);
        debug_assert!(entry.key() == key && entry.value().is_none_or(|v| v == value));
        entry
    }

    fn key_len(&self) -> usize {
        let mut len = [0u8; 8];
        if let Some(b) = self.0.get(1..ENTRY_HEAD) {
            len.copy_from_slice(b);
        }
        usize::try_from(u64::from_le_bytes(len)).unwrap_or(usize::MAX)
    }

    /// The key.
    pub(crate) fn key(&self) -> &[u8] {
        self.0
            .get(ENTRY_HEAD..ENTRY_HEAD.saturating_add(self.key_len()))
            .unwrap_or_default()
    }

    /// The value put, or `None` for a removal.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        (self.0.first() == Some(&1))
            .then(|| self.0.get(ENTRY_HEAD.saturating_add(self.key_len())..))
            .flatten()
    }
}

impl Borrow<[u8]> for Entry {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(other.key())
    }
}

impl Hash for Entry {
    /// As the key's bytes hash (the `Borrow` contract: lookups hash a `[u8]`).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} => {:?}", self.key(), self.value())
    }
}

/// An entry of the ordered half: the entry beside the first [`HEAD_BYTES`] of its key.
///
/// Why: inserting into the ordered half searches a B-tree, about 17 comparisons at 100,000
/// entries, and comparing two entries by their keys follows both pointers, each a cache
/// miss on a large diff: in a reader's refresh those searches were 35% of its time once
/// nodes were no longer copied (`perf` of `examples/refresh_cost.rs`). The heads decide
/// most comparisons without touching either allocation (ids of up to 16 bytes, or that
/// differ in their first 16, entirely); equal heads fall back to the keys.
///
/// Ordered exactly as the keys: heads are the keys' first bytes padded with zeroes, and
/// where two heads differ, the keys differ at the same place in the same direction (a
/// padding zero sits where the shorter key has ended, and a key that ends first sorts
/// first). So a search by key bytes (through `Borrow<[u8]>`) finds what one by entry does.
#[derive(Clone)]
struct Ordered {
    head: [u8; HEAD_BYTES],
    entry: Entry,
}

/// Bytes of a key kept beside its entry in the ordered half.
const HEAD_BYTES: usize = 16;

impl Ordered {
    fn new(entry: Entry) -> Ordered {
        let mut head = [0u8; HEAD_BYTES];
        let key = entry.key();
        let n = key.len().min(HEAD_BYTES);
        if let (Some(h), Some(k)) = (head.get_mut(..n), key.get(..n)) {
            h.copy_from_slice(k);
        }
        Ordered { head, entry }
    }
}

impl Borrow<[u8]> for Ordered {
    fn borrow(&self) -> &[u8] {
        self.entry.key()
    }
}

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.head == other.head && self.entry == other.entry
    }
}

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // As big-endian numbers: one comparison, in the bytes' order.
        u128::from_be_bytes(self.head)
            .cmp(&u128::from_be_bytes(other.head))
            .then_with(|| self.entry.cmp(&other.entry))
    }
}

impl std::fmt::Debug for Ordered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.entry.fmt(f)
    }
}

/// The entries of a range of the diff, in key order (both ends).
pub(crate) struct MemRange<'a>(
    imbl::ordset::RangedIter<'a, Ordered, imbl::shared_ptr::DefaultSharedPtr>,
);

impl<'a> Iterator for MemRange<'a> {
    type Item = &'a Entry;

    fn next(&mut self) -> Option<&'a Entry> {
        self.0.next().map(|o| &o.entry)
    }
}

impl DoubleEndedIterator for MemRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|o| &o.entry)
    }
}

/// The in-memory diff of a map (see the module documentation).
pub(crate) struct MemDiff {
    ordered: imbl::OrdSet<Ordered>,
    index: Option<imbl::HashMap<Entry, ()>>,
    /// While changes are recorded to be taken back (`DurableMap::start_undo`).
    undo: Option<Box<Journal>>,
}

impl Clone for MemDiff {
    /// The entries only: a copy (a snapshot) does not record the original's changes.
    fn clone(&self) -> Self {
        MemDiff {
            ordered: self.ordered.clone(),
            index: self.index.clone(),
            undo: None,
        }
    }
}

/// What takes back the changes made to a diff since its recording started.
#[derive(Debug)]
pub(crate) struct Journal {
    /// The map's length then (the diff does not count it; the map gives it).
    pub(crate) len: u64,
    /// One step per change, oldest first; taken back newest first.
    steps: Vec<Undo>,
}

/// How to take back one change: the entries are shared with the halves, so recording
/// costs a reference count, not a copy.
#[derive(Debug)]
enum Undo {
    /// The change replaced or removed this entry: put it back.
    PutBack(Entry),
    /// The change added an entry of this key where there was none: remove it.
    Remove(Entry),
}

impl std::fmt::Debug for MemDiff {
    /// The ordered half only: the index holds the same entries.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.ordered.fmt(f)
    }
}

impl MemDiff {
    /// An empty diff; `indexed`: with the hash half (see the module documentation).
    pub(crate) fn new(indexed: bool) -> MemDiff {
        MemDiff {
            ordered: imbl::OrdSet::default(),
            index: indexed.then(imbl::HashMap::default),
            undo: None,
        }
    }

    /// The operation for `key`, if the diff has one: `Some(None)` is a removal.
    pub(crate) fn get(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        let Some(index) = &self.index else {
            return self.ordered.get(key).map(|o| o.entry.value());
        };
        let found = index.get_key_value(key).map(|(e, ())| e.value());
        debug_assert_eq!(
            found,
            self.ordered.get(key).map(|o| o.entry.value()),
            "the two halves disagree on {key:?}"
        );
        found
    }

    /// Puts `value` for `key` (`None`: a removal mark). Returns the operation it replaced:
    /// `Some(true)` a put, `Some(false)` a removal mark, `None` if the diff had no entry of
    /// `key` (so a caller counting keys needs no lookup of its own first).
    pub(crate) fn insert(&mut self, key: &[u8], value: Option<&[u8]>) -> Option<bool> {
        let entry = Entry::new(key, value);
        let added = self.undo.is_some().then(|| entry.clone());
        let previous = self.put_entry(entry);
        let was = previous.as_ref().map(|e| e.value().is_some());
        if let Some(journal) = &mut self.undo {
            journal.steps.extend(match previous {
                Some(e) => Some(Undo::PutBack(e)),
                None => added.map(Undo::Remove),
            });
        }
        was
    }

    pub(crate) fn remove(&mut self, key: &[u8]) {
        let removed = self.take_entry(key);
        if let (Some(journal), Some(e)) = (&mut self.undo, removed) {
            journal.steps.push(Undo::PutBack(e));
        }
    }

    /// Puts `entry` in both halves; returns the entry of its key it replaced.
    fn put_entry(&mut self, entry: Entry) -> Option<Entry> {
        if let Some(index) = &mut self.index {
            index.insert(entry.clone(), ());
        }
        let previous = self.ordered.insert(Ordered::new(entry)).map(|o| o.entry);
        debug_assert!(
            self.index
                .as_ref()
                .is_none_or(|i| i.len() == self.ordered.len())
        );
        previous
    }

    /// Removes the entry of `key` from both halves and returns it.
    fn take_entry(&mut self, key: &[u8]) -> Option<Entry> {
        if let Some(index) = &mut self.index {
            index.remove(key);
        }
        let removed = self.ordered.remove(key).map(|o| o.entry);
        debug_assert!(
            self.index
                .as_ref()
                .is_none_or(|i| i.len() == self.ordered.len())
        );
        removed
    }

    /// Starts recording changes so that [`undo`](Self::undo) can take them back (a
    /// recording already under way starts over); `len`: the map's length now.
    pub(crate) fn start_undo(&mut self, len: u64) {
        self.undo = Some(Box::new(Journal {
            len,
            steps: Vec::new(),
        }));
    }

    /// Stops recording, keeping the changes.
    pub(crate) fn end_undo(&mut self) {
        self.undo = None;
    }

    /// Takes back every change made since the recording started and stops recording;
    /// returns the journal's map length, or `None` (nothing changed) if none was under way.
    pub(crate) fn undo(&mut self) -> Option<u64> {
        let journal = self.undo.take()?;
        for step in journal.steps.into_iter().rev() {
            match step {
                Undo::PutBack(e) => {
                    self.put_entry(e);
                }
                Undo::Remove(e) => {
                    self.take_entry(e.key());
                }
            }
        }
        Some(journal.len)
    }

    pub(crate) fn len(&self) -> usize {
        self.ordered.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }

    /// The entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.ordered.iter().map(|o| &o.entry)
    }

    /// The entries whose keys lie in `bounds`, in key order (both ends).
    pub(crate) fn range(&self, bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> MemRange<'_> {
        MemRange(self.ordered.range::<_, [u8]>(bounds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Keys of several lengths sharing prefixes, so that keys differ at any position,
    /// among them on both sides of the ordered half's heads (16 bytes).
    fn key() -> impl Strategy<Value = Vec<u8>> {
        (
            0usize..7,
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0u8)], 0..4),
        )
            .prop_map(|(n, tail)| [vec![b'k'; [0, 13, 14, 15, 16, 22, 24][n]], tail].concat())
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

    /// Entries of every size keep their key and value, big ones (past the buffer a thread
    /// keeps) and small ones after them, and a removal mark has no value.
    #[test]
    fn entries_keep_their_key_and_value() {
        let big = vec![7u8; SCRATCH_KEPT_BYTES + 1];
        for (key, value) in [
            (&b"k"[..], Some(&big[..])),
            (b"", Some(&b"v"[..])),
            (b"key", Some(&b""[..])),
            (b"key", None),
        ] {
            let e = Entry::new(key, value);
            assert_eq!((e.key(), e.value()), (key, value));
        }
    }

    proptest! {
        /// Entries of the ordered half compare as their keys do (heads decide where they
        /// differ, keys where they do not).
        #[test]
        fn ordered_entries_compare_as_their_keys(a in key(), b in key()) {
            let (x, y) = (Ordered::new(Entry::new(&a, None)), Ordered::new(Entry::new(&b, Some(b"v"))));
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(x == y, a == b);
        }

        /// Every get, the order and every range agree with a `BTreeMap` after any sequence of
        /// puts, removal marks and removals, and a clone taken midway keeps its contents.
        #[test]
        fn agrees_with_a_btreemap(
            ops in proptest::collection::vec((key(), 0u8..3, any::<u8>()), 1..80),
            probes in proptest::collection::vec(key(), 1..20),
            indexed in any::<bool>(),
        ) {
            let mut diff = MemDiff::new(indexed);
            let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            let mut frozen = None;
            for (i, (k, op, byte)) in ops.iter().enumerate() {
                match op {
                    0 => {
                        let was = diff.insert(k, Some(&[*byte][..]));
                        let had = model.insert(k.clone(), Some(vec![*byte]));
                        prop_assert_eq!(was, had.map(|v| v.is_some()));
                    }
                    1 => {
                        let was = diff.insert(k, None);
                        let had = model.insert(k.clone(), None);
                        prop_assert_eq!(was, had.map(|v| v.is_some()));
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
                    prop_assert_eq!(diff.get(p), model.get(p).map(Option::as_deref));
                }
                let all: Vec<_> = diff.iter().map(|e| (e.key().to_vec(), e.value().map(<[u8]>::to_vec))).collect();
                let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(all, want);
                for p in &probes {
                    let from = (Bound::Included(p.as_slice()), Bound::Unbounded);
                    let got: Vec<Vec<u8>> = diff.range(from).map(|e| e.key().to_vec()).collect();
                    let want: Vec<Vec<u8>> = model.range::<[u8], _>(from).map(|(k, _)| k.clone()).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
    }
}
