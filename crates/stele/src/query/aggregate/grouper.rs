//! The map of a `$group`'s groups, fed the documents of a collection (or of the stages
//! before it), spilling through the table sorter past its memory budget.
//!
//! Every group's key (its order encoding, then its JSON) lies in one byte arena, and every
//! group's accumulator states in one vector, so that a new group costs no allocation of its
//! own: with a group per document, three allocations per group (the key's encoding, its
//! JSON, the states' vector) and their frees were a fifth to a third of a group-by
//! (`docs/notes/2026-12-02-small-scans.md`). A slot of the map holds where they lie and
//! the key's hash (hashed once; the table's growth hashes nothing again).

use super::expr::IdRef;
use super::group::{Group, accumulate, merge_states};
use super::hash::KeyHash;
use super::render::Render;
use super::spill_state::{self, GroupState, State};
use crate::error::{Error, Result};
use crate::index::path::ReachCache;
use crate::query::collect::Collector;
use crate::query::run::Run;
use crate::query::spill;
use hashbrown::HashTable;
use std::any::Any;
use std::hash::BuildHasher;
use stele_doc::{Document, Value};
use stele_table::Sorter;

/// A group in the map: where its key lies in the [`Arena`], the key's hash by the map's
/// [`KeyHash`], and where its states start.
#[derive(Debug, Clone, Copy)]
struct Slot {
    hash: u64,
    /// Where the key's order encoding starts in [`Arena::bytes`]; its JSON follows it.
    at: usize,
    key_len: usize,
    json_len: usize,
    /// Where its states start in [`Arena::states`] (one per accumulator).
    states: usize,
}

/// The groups' keys and states, one after another (see the module documentation).
#[derive(Default)]
struct Arena {
    bytes: Vec<u8>,
    states: Vec<State>,
}

impl Arena {
    fn key(&self, s: &Slot) -> &[u8] {
        self.bytes.get(s.at..s.at + s.key_len).unwrap_or_default()
    }

    /// The key's JSON (the document writer's, which emits only UTF-8).
    fn json(&self, s: &Slot) -> &str {
        let start = s.at + s.key_len;
        let bytes = self
            .bytes
            .get(start..start + s.json_len)
            .unwrap_or_default();
        std::str::from_utf8(bytes).unwrap_or("null")
    }

    fn states(&self, s: &Slot, accs: usize) -> &[State] {
        self.states
            .get(s.states..s.states + accs)
            .unwrap_or_default()
    }

    fn states_mut(&mut self, s: &Slot, accs: usize) -> &mut [State] {
        self.states
            .get_mut(s.states..s.states + accs)
            .unwrap_or_default()
    }

    /// Moves a group's states out (a fork's, merged into its parent), leaving counts.
    fn take_states(&mut self, s: &Slot, accs: usize) -> impl Iterator<Item = State> + '_ {
        self.states_mut(s, accs)
            .iter_mut()
            .map(|st| std::mem::replace(st, State::Count(0)))
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.states.clear();
    }
}

/// The memory of a group besides its key, JSON and states: the map's slot (40 bytes and a
/// control byte, with as many again free since the table doubles as it grows, at a load
/// of 7/8). The arena's bytes and states are counted twice (a vector doubles as it grows).
/// The old count (192 bytes and the key's bytes, a slot of 80 bytes and three allocations
/// each) let a group per document over 1M documents reach 65.7 MiB for a budget of 64.
const GROUP_OVERHEAD: usize = 2 * (std::mem::size_of::<Slot>() + 1) * 8 / 7;
/// One accumulator's state (the enum's size).
const STATE_BYTES: usize = std::mem::size_of::<State>();

/// A collection of fewer documents is grouped on the caller's thread
/// ([`Collector::serial_docs`]; other scans go to the pool from 4,096). The forks of a
/// parallel scan each make the groups of their stretch, which the caller then merges: with
/// groups met all over the collection, most groups are made once per fork and merged
/// again (covers, 5,071 documents in 663 groups: see
/// `docs/notes/2026-12-02-group-arena.md`).
const SERIAL_GROUP_DOCS: u64 = 8_192;

/// Groups documents as they come; a collector of the query that reads the collection, and
/// of the stages after it. Past its budget, the groups held go to a sorter keyed by the
/// group's key and the spill's number (so the partial states of one group come back
/// together, in input order, and merge as forks do), and the map starts again.
pub(crate) struct Grouper {
    group: Group,
    /// Distinct keys; each slot's `hash` is `hasher`'s of its key (forks share `hasher`,
    /// so an absorbed slot keeps its hash).
    groups: HashTable<Slot>,
    arena: Arena,
    hasher: KeyHash,
    /// The key's lookups remembered across documents ([`super::expr::Expr::eval_cached`]).
    key_cache: ReachCache,
    /// About the memory `groups` holds.
    bytes: usize,
    /// Whether it spills (the forks of a parallel scan hold their stretch's groups).
    spills: bool,
    sorter: Option<Sorter>,
    /// Spills so far.
    spilled: u32,
    /// An error while absorbing a fork (which cannot return one), reported at the end.
    failed: Option<Error>,
    /// The collection holds integer ids (the keys it is fed stand for integers).
    int_ids: bool,
    /// Documents taken, its forks' included.
    docs: u64,
    /// What `bytes` grew by in all (not reset by a spill), its forks' included: with
    /// `docs`, what a document adds on average.
    grown: u64,
    /// It has forks in a parallel scan: it and they hold a quarter of its limit each.
    shared: bool,
}

impl Grouper {
    pub(crate) fn new(group: Group) -> Grouper {
        Grouper {
            key_cache: group.key.cache(),
            group,
            groups: HashTable::new(),
            arena: Arena::default(),
            hasher: KeyHash::new(),
            bytes: 0,
            spills: true,
            sorter: None,
            spilled: 0,
            failed: None,
            int_ids: false,
            docs: 0,
            grown: 0,
            shared: false,
        }
    }

    /// The same, fed the documents of a collection of integer ids when `int_ids`.
    pub(crate) fn with_int_ids(mut self, int_ids: bool) -> Grouper {
        self.int_ids = int_ids;
        self
    }

    /// What the groups held may take before they spill: [`spill::held_limit`] of the
    /// budget; in a parallel scan a quarter of it, and its forks another quarter between
    /// them ([`Collector::fork_docs`]). Half of the limit each let a group per document
    /// over 1M documents peak at 65.7 MiB for a budget of 64 (what the counts miss: the
    /// map's spare slots, the allocator's rounding, memory freed but not returned).
    fn limit(&self) -> usize {
        let limit = spill::held_limit(self.group.budget);
        if self.shared { limit / 4 } else { limit }
    }

    /// Moves the groups held to the sorter once they pass the budget.
    fn settle(&mut self) -> Result<()> {
        if !self.spills || self.bytes <= self.limit() {
            return Ok(());
        }
        let sorter = match &mut self.sorter {
            Some(s) => s,
            None => self.sorter.insert(spill::sorter(self.group.budget)?),
        };
        let accs = self.group.accs.len();
        let mut key = Vec::new();
        let mut value = Vec::new();
        for slot in self.groups.drain() {
            key.clear();
            key.extend_from_slice(self.arena.key(&slot));
            key.extend_from_slice(&self.spilled.to_be_bytes());
            let states = self.arena.states(&slot, accs);
            spill_state::encode(self.arena.json(&slot), states, &mut value);
            sorter.add(&key, &value)?;
        }
        self.arena.clear();
        self.spilled += 1;
        self.bytes = 0;
        Ok(())
    }

    /// Adds the document `root` (with id `id` when it has one outside it).
    pub(crate) fn add(&mut self, root: Value<'_>, id: Option<IdRef<'_>>) {
        let key = self.group.key.eval_cached(root, id, &mut self.key_cache);
        let accs = self.group.accs.len();
        let arena = &mut self.arena;
        // The key is encoded at the arena's end: kept there for a new group, cut off again
        // for one seen before.
        let at = arena.bytes.len();
        key.encode(&mut arena.bytes);
        let enc = arena.bytes.get(at..).unwrap_or_default();
        // One hash and one lookup for a group seen before (the common case), the same
        // hash for a new one.
        let hash = self.hasher.hash_one(enc);
        let found = self.groups.find(hash, |s| arena.key(s) == enc).copied();
        if let Some(slot) = found {
            arena.bytes.truncate(at);
            let states = arena.states_mut(&slot, accs);
            accumulate(&self.group.accs, states, &mut self.bytes, root, id);
            return;
        }
        let key_len = arena.bytes.len() - at;
        key.write_json(&mut arena.bytes);
        let slot = Slot {
            hash,
            at,
            key_len,
            json_len: arena.bytes.len() - at - key_len,
            states: arena.states.len(),
        };
        self.group.push_states(&mut arena.states);
        self.bytes += GROUP_OVERHEAD + 2 * (key_len + slot.json_len) + 2 * STATE_BYTES * accs;
        let states = arena.states_mut(&slot, accs);
        accumulate(&self.group.accs, states, &mut self.bytes, root, id);
        self.groups.insert_unique(hash, slot, |s| s.hash);
    }

    fn merge(&mut self, mut other: Grouper) {
        self.bytes += other.bytes;
        self.docs += other.docs;
        self.grown += other.grown;
        let accs = self.group.accs.len();
        // A fork hashes with this map's `hasher` (`fork`): its slots' hashes hold here.
        for slot in other.groups.drain() {
            let key = other.arena.key(&slot);
            let ours = &mut self.arena;
            match self.groups.find(slot.hash, |s| ours.key(s) == key).copied() {
                Some(mine) => merge_states(
                    &self.group.accs,
                    ours.states_mut(&mine, accs),
                    other.arena.take_states(&slot, accs),
                ),
                None => {
                    let at = ours.bytes.len();
                    let end = slot.at + slot.key_len + slot.json_len;
                    let bytes = other.arena.bytes.get(slot.at..end).unwrap_or_default();
                    ours.bytes.extend_from_slice(bytes);
                    let states = ours.states.len();
                    ours.states.extend(other.arena.take_states(&slot, accs));
                    let mine = Slot { at, states, ..slot };
                    self.groups.insert_unique(slot.hash, mine, |s| s.hash);
                }
            }
        }
    }

    /// The groups as JSON documents, in key order.
    pub(crate) fn finish(self, run: &Run) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.finish_each(run, |json, _| {
            out.push(json.to_owned());
            Ok(())
        })?;
        Ok(out)
    }

    /// Hands the groups as JSON documents, in key order, to `each` (which may keep them in
    /// another form: a spilled group is rendered as it is merged, not listed first). Each
    /// is rendered into one reused buffer. With each row comes whether it is already what
    /// the document writer makes of it and prints back ([`Render::canonical`]).
    pub(crate) fn finish_each(
        mut self,
        run: &Run,
        mut each: impl FnMut(&str, bool) -> Result<()> + Send,
    ) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let mut render = Render::new(self.group.accs.iter().map(|a| a.name.as_str()));
        let Some(sorter) = self.sorter.take() else {
            let (arena, accs) = (&self.arena, self.group.accs.len());
            for (_, slot) in &in_key_order(arena, self.groups) {
                let states = arena.states(slot, accs);
                let (row, canonical) = render.checked_row(arena.json(slot), states);
                each(row, canonical)?;
            }
            return Ok(());
        };
        // The rest goes to the sorter too; then each group's partial states, in spill
        // order, are merged as they come.
        self.sorter = Some(sorter);
        self.bytes = usize::MAX;
        self.group.budget = 0;
        self.settle()?;
        let Some(sorter) = self.sorter.take() else {
            return Ok(());
        };
        let accs = std::mem::take(&mut self.group.accs);
        let mut current: Option<(Vec<u8>, GroupState)> = None;
        spill::drain_sorted(sorter, run, |key, value| {
            // The group's key, without the spill's number.
            let key = key.get(..key.len().saturating_sub(4)).unwrap_or_default();
            let (json, states) = spill_state::decode(value, accs.len())?;
            match &mut current {
                Some((k, (_, ours))) if k.as_slice() == key => merge_states(&accs, ours, states),
                _ => {
                    if let Some((_, (j, done))) = current.replace((key.to_vec(), (json, states))) {
                        let (row, canonical) = render.checked_row(&j, &done);
                        each(row, canonical)?;
                    }
                }
            }
            Ok(true)
        })?;
        if let Some((_, (j, done))) = current {
            let (row, canonical) = render.checked_row(&j, &done);
            each(row, canonical)?;
        }
        Ok(())
    }
}

/// The groups in key order. Sorted by the 8 bytes of each key after the prefix all keys
/// share (a compare of two numbers), whole keys compared only when those tie: restaurant's
/// 1,911 URLs share their first 38 bytes, and comparing whole keys (`memcmp` over that
/// prefix each time) was a seventh of its group-by.
fn in_key_order(arena: &Arena, groups: HashTable<Slot>) -> Vec<(u64, Slot)> {
    let mut groups: Vec<(u64, Slot)> = groups.into_iter().map(|s| (0, s)).collect();
    let first = groups.first().map_or(&[][..], |(_, s)| arena.key(s));
    let shared = groups.iter().fold(first.len(), |n, (_, s)| {
        common_prefix(first.get(..n).unwrap_or_default(), arena.key(s))
    });
    for (abbrev, s) in &mut groups {
        let mut head = [0u8; 8];
        let rest = arena.key(s).get(shared..).unwrap_or_default();
        for (h, b) in head.iter_mut().zip(rest) {
            *h = *b;
        }
        // Zeros past a key's end: a key that ends there is a prefix of any other with
        // the same bytes, and sorts first either way.
        *abbrev = u64::from_be_bytes(head);
    }
    // The keys are the map's, distinct: an unstable sort gives the one order.
    groups.sort_unstable_by(|(x, a), (y, b)| x.cmp(y).then_with(|| arena.key(a).cmp(arena.key(b))));
    groups
}

/// The length of the prefix `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let words = a
        .chunks_exact(8)
        .zip(b.chunks_exact(8))
        .take_while(|(x, y)| x == y)
        .count()
        * 8;
    let (a, b) = (a.get(words..), b.get(words..));
    let tail = a.unwrap_or_default().iter().zip(b.unwrap_or_default());
    words + tail.take_while(|(x, y)| x == y).count()
}

impl Collector for Grouper {
    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool> {
        let int = self.int_ids;
        let before = self.bytes;
        self.add(doc.root(), Some(IdRef { key: id, int }));
        self.docs += 1;
        self.grown += self.bytes.saturating_sub(before) as u64;
        self.settle()?;
        Ok(true)
    }

    fn serial_docs(&self) -> u64 {
        SERIAL_GROUP_DOCS
    }

    fn fork_docs(&mut self, forks: usize) -> Option<u64> {
        self.shared = true;
        if self.docs == 0 {
            // Nothing to judge by yet: the smallest stretches (a block each).
            return Some(0);
        }
        let share = (spill::held_limit(self.group.budget) / 4 / forks.max(1)) as u64;
        Some(share / (self.grown / self.docs).max(1))
    }

    fn fork(&self) -> Box<dyn Collector> {
        Box::new(Grouper {
            spills: false,
            // The same seed: its slots' hashes hold in this map when it is absorbed.
            hasher: self.hasher,
            ..Grouper::new(self.group.clone()).with_int_ids(self.int_ids)
        })
    }

    fn absorb(&mut self, other: Box<dyn Collector>) {
        if let Ok(o) = other.into_any().downcast::<Grouper>() {
            self.merge(*o);
        }
        let settled = self.settle();
        spill::keep_error(&mut self.failed, settled);
    }

    fn full(&self) -> bool {
        self.failed.is_some()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
