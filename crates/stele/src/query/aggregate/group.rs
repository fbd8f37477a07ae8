//! `$group`: documents by the value of a key expression, with accumulators per group.
//!
//! Groups are kept by their key's order encoding (numbers by value, objects by content) and
//! come out in key order. `$sum` and `$avg` take numbers and skip other values (integers are
//! summed exactly, then as floats once a float or a decimal joins); `$min` and `$max` use
//! the total order and skip missing values and nulls; `$first` and `$last` follow the order
//! of the input (id order for a collection); `$push` keeps every value but missing ones.

use super::expr::{Expr, IdRef, Out};
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccOp {
    Sum,
    Avg,
    Min,
    Max,
    Count,
    First,
    Last,
    Push,
}

/// One accumulator: an output field, an operator and its expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Acc {
    name: String,
    op: AccOp,
    expr: Expr,
    /// A numeric literal operand (`{"$sum": 1}`), read once.
    constant: Option<i64>,
}

/// A `$group` stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    key: Expr,
    accs: Vec<Acc>,
    /// Memory the groups may hold before they spill (`Pipeline::memory_budget`).
    pub(super) budget: usize,
}

impl Group {
    pub(crate) fn parse(v: Value<'_>, at: &str) -> Result<Group> {
        let bad = |at: &str, reason: &str| Error::InvalidFilter {
            at: at.to_owned(),
            reason: reason.to_owned(),
        };
        let Value::Object(o) = v else {
            return Err(bad(
                at,
                "takes an object: {\"_id\": \"$field\", \"n\": {\"$sum\": 1}}",
            ));
        };
        let mut key = None;
        let mut accs = Vec::new();
        for (name, spec) in o.iter_original() {
            let here = format!("{at}.{name}");
            if name == "_id" {
                key = Some(Expr::parse(spec, &here)?);
                continue;
            }
            if name.starts_with('$') || name.contains('.') {
                return Err(bad(
                    &here,
                    "an output field's name may not start with $ or hold a dot",
                ));
            }
            let Value::Object(a) = spec else {
                return Err(bad(&here, "takes an accumulator: {\"$sum\": 1}"));
            };
            let mut it = a.iter_original();
            let (Some((op_name, arg)), None) = (it.next(), it.next()) else {
                return Err(bad(&here, "takes one accumulator: {\"$sum\": \"$n\"}"));
            };
            let at_op = format!("{here}.{op_name}");
            let op = match op_name {
                "$sum" => AccOp::Sum,
                "$avg" => AccOp::Avg,
                "$min" => AccOp::Min,
                "$max" => AccOp::Max,
                "$count" => AccOp::Count,
                "$first" => AccOp::First,
                "$last" => AccOp::Last,
                "$push" => AccOp::Push,
                other => {
                    return Err(bad(
                        &at_op,
                        &format!(
                            "{other} is not a supported accumulator; use $sum $min $max $avg $count $first $last $push"
                        ),
                    ));
                }
            };
            if op == AccOp::Count && !matches!(arg, Value::Object(c) if c.is_empty()) {
                return Err(bad(&at_op, "takes an empty object: {\"$count\": {}}"));
            }
            let constant = match arg {
                Value::Int(n) => Some(n),
                _ => None,
            };
            accs.push(Acc {
                name: name.to_owned(),
                op,
                expr: Expr::parse(arg, &at_op)?,
                constant,
            });
        }
        let Some(key) = key else {
            return Err(bad(
                at,
                "needs an _id: the group key (\"$field\", or null for one group)",
            ));
        };
        Ok(Group {
            key,
            accs,
            budget: crate::query::DEFAULT_MEMORY_BUDGET_BYTES,
        })
    }

    fn new_states(&self) -> Vec<State> {
        self.accs
            .iter()
            .map(|a| match a.op {
                AccOp::Sum => State::Sum {
                    int: 0,
                    float: 0.0,
                    floats: false,
                },
                AccOp::Avg => State::Avg { sum: 0.0, n: 0 },
                AccOp::Min | AccOp::Max => State::Extreme(None),
                AccOp::Count => State::Count(0),
                AccOp::First | AccOp::Last => State::Value(None),
                AccOp::Push => State::Push(Vec::new()),
            })
            .collect()
    }
}

/// A number's value: exact for integers.
fn number(out: &Out<'_>) -> Option<(i128, f64, bool)> {
    let Out::One(v) = out else { return None };
    match v {
        Value::Int(i) => Some((i128::from(*i), *i as f64, false)),
        Value::UInt(u) => Some((i128::from(*u), *u as f64, false)),
        Value::Float(_) | Value::Decimal(_) | Value::Scaled(_) => v.as_f64().map(|f| (0, f, true)),
        _ => None,
    }
}

/// Whether `enc` beats the best so far of a `$min` (smaller) or `$max` (larger).
fn better(op: AccOp, enc: &[u8], best: Option<&(Vec<u8>, String)>) -> bool {
    best.is_none_or(|(b, _)| {
        if op == AccOp::Min {
            enc < b.as_slice()
        } else {
            enc > b.as_slice()
        }
    })
}

/// A group in the map: its key's order encoding, the key's hash by the map's [`KeyHash`]
/// (kept, so that a lookup hashes once and the table's growth hashes nothing again), its
/// key's JSON and states.
struct Slot {
    hash: u64,
    key: Vec<u8>,
    state: GroupState,
}

/// The memory of a group besides its key and JSON: the map's slot (80 bytes, and as many
/// again free, since the table doubles as it grows), the three allocations' rounding.
/// Counting 64 instead let a group per document reach 109 MiB for a budget of 64.
const GROUP_OVERHEAD: usize = 192;
/// One accumulator's state (the enum's size).
const STATE_BYTES: usize = std::mem::size_of::<State>();

/// Groups documents as they come; a collector of the query that reads the collection, and
/// of the stages after it. Past its budget, the groups held go to a sorter keyed by the
/// group's key and the spill's number (so the partial states of one group come back
/// together, in input order, and merge as forks do), and the map starts again.
pub(crate) struct Grouper {
    group: Group,
    /// Distinct keys; each slot's `hash` is `hasher`'s of its key (forks share `hasher`,
    /// so an absorbed slot keeps its hash).
    groups: HashTable<Slot>,
    hasher: KeyHash,
    /// The key's lookups remembered across documents ([`Expr::eval_cached`]).
    key_cache: ReachCache,
    scratch: Vec<u8>,
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
            hasher: KeyHash::new(),
            scratch: Vec::new(),
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
        let mut key = Vec::new();
        let mut value = Vec::new();
        for slot in self.groups.drain() {
            key.clear();
            key.extend_from_slice(&slot.key);
            key.extend_from_slice(&self.spilled.to_be_bytes());
            spill_state::encode(&slot.state, &mut value);
            sorter.add(&key, &value)?;
        }
        self.spilled += 1;
        self.bytes = 0;
        Ok(())
    }

    /// Adds the document `root` (with id `id` when it has one outside it).
    pub(crate) fn add(&mut self, root: Value<'_>, id: Option<IdRef<'_>>) {
        let key = self.group.key.eval_cached(root, id, &mut self.key_cache);
        self.scratch.clear();
        key.encode(&mut self.scratch);
        // One hash and one lookup for a group seen before (the common case), the same
        // hash for a new one.
        let hash = self.hasher.hash_one(self.scratch.as_slice());
        let scratch = &self.scratch;
        if let Some(slot) = self.groups.find_mut(hash, |s| s.key == *scratch) {
            accumulate(
                &self.group.accs,
                &mut slot.state.1,
                &mut self.bytes,
                root,
                id,
            );
            return;
        }
        let mut states = self.group.new_states();
        // A string's encoding is its bytes and 3 more; its JSON, the bytes, 2 quotes and
        // any escapes.
        let json = key.json_with_capacity(self.scratch.len() + 8);
        self.bytes +=
            GROUP_OVERHEAD + 2 * self.scratch.len() + json.len() + STATE_BYTES * states.len();
        accumulate(&self.group.accs, &mut states, &mut self.bytes, root, id);
        let slot = Slot {
            hash,
            key: self.scratch.clone(),
            state: (json, states),
        };
        self.groups.insert_unique(hash, slot, |s| s.hash);
    }

    fn merge(&mut self, other: Grouper) {
        self.bytes += other.bytes;
        self.docs += other.docs;
        self.grown += other.grown;
        // A fork hashes with this map's `hasher` (`fork`): its slots' hashes hold here.
        for slot in other.groups {
            match self.groups.find_mut(slot.hash, |s| s.key == slot.key) {
                None => {
                    self.groups.insert_unique(slot.hash, slot, |s| s.hash);
                }
                Some(ours) => merge_states(&self.group.accs, &mut ours.state.1, slot.state.1),
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
        let accs = std::mem::take(&mut self.group.accs);
        let mut render = Render::new(accs.iter().map(|a| a.name.as_str()));
        let Some(sorter) = self.sorter.take() else {
            let mut groups: Vec<Slot> = self.groups.into_iter().collect();
            // The keys are the map's, distinct: an unstable sort gives the one order.
            groups.sort_unstable_by(|a, b| a.key.cmp(&b.key));
            for Slot {
                state: (key, states),
                ..
            } in groups
            {
                let (row, canonical) = render.checked_row(&key, states);
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
        let mut current: Option<(Vec<u8>, GroupState)> = None;
        spill::drain_sorted(sorter, run, |key, value| {
            // The group's key, without the spill's number.
            let key = key.get(..key.len().saturating_sub(4)).unwrap_or_default();
            let (json, states) = spill_state::decode(value, accs.len())?;
            match &mut current {
                Some((k, (_, ours))) if k.as_slice() == key => merge_states(&accs, ours, states),
                _ => {
                    if let Some((_, (j, done))) = current.replace((key.to_vec(), (json, states))) {
                        let (row, canonical) = render.checked_row(&j, done);
                        each(row, canonical)?;
                    }
                }
            }
            Ok(true)
        })?;
        if let Some((_, (j, done))) = current {
            let (row, canonical) = render.checked_row(&j, done);
            each(row, canonical)?;
        }
        Ok(())
    }
}

/// Adds the document `root` to one group's `states`; `bytes` counts what they grew by.
fn accumulate(
    accs: &[Acc],
    states: &mut [State],
    bytes: &mut usize,
    root: Value<'_>,
    id: Option<IdRef<'_>>,
) {
    for (acc, state) in accs.iter().zip(states.iter_mut()) {
        let value = || acc.expr.eval(root, id);
        match state {
            State::Sum { int, float, floats } => {
                let n = match acc.constant {
                    Some(c) => Some((i128::from(c), c as f64, false)),
                    None => number(&value()),
                };
                if let Some((i, f, is_float)) = n {
                    *int = int.saturating_add(i);
                    *float += f;
                    *floats |= is_float;
                }
            }
            State::Avg { sum, n } => {
                let v = match acc.constant {
                    Some(c) => Some(c as f64),
                    None => number(&value()).map(|(_, f, _)| f),
                };
                if let Some(f) = v {
                    *sum += f;
                    *n += 1;
                }
            }
            State::Extreme(best) => {
                let v = value();
                if matches!(v, Out::Missing | Out::One(Value::Null)) {
                    continue;
                }
                let mut enc = Vec::new();
                v.encode(&mut enc);
                if better(acc.op, &enc, best.as_ref()) {
                    let json = v.json();
                    // Counted each time (an overestimate: the old value is freed).
                    *bytes += enc.len() + json.len();
                    *best = Some((enc, json));
                }
            }
            State::Count(n) => *n += 1,
            State::Value(slot) => {
                if acc.op == AccOp::Last || slot.is_none() {
                    let json = value().json();
                    *bytes += json.len();
                    *slot = Some(json);
                }
            }
            State::Push(list) => {
                let v = value();
                if !matches!(v, Out::Missing) {
                    let json = v.json();
                    *bytes += json.len() + 24;
                    list.push(json);
                }
            }
        }
    }
}

/// Merges `theirs` (a later part of the input) into `ours`, state by state.
fn merge_states(accs: &[Acc], ours: &mut [State], theirs: Vec<State>) {
    for ((acc, a), b) in accs.iter().zip(ours.iter_mut()).zip(theirs) {
        match (a, b) {
            (
                State::Sum { int, float, floats },
                State::Sum {
                    int: i,
                    float: f,
                    floats: fl,
                },
            ) => {
                *int = int.saturating_add(i);
                *float += f;
                *floats |= fl;
            }
            (State::Avg { sum, n }, State::Avg { sum: s, n: m }) => {
                *sum += s;
                *n += m;
            }
            (State::Extreme(best), State::Extreme(Some((enc, json))))
                if better(acc.op, &enc, best.as_ref()) =>
            {
                *best = Some((enc, json));
            }
            (State::Count(n), State::Count(m)) => *n += m,
            (State::Value(slot), State::Value(theirs))
                if acc.op == AccOp::Last && theirs.is_some() || slot.is_none() =>
            {
                *slot = theirs;
            }
            (State::Push(list), State::Push(more)) => list.extend(more),
            _ => {}
        }
    }
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
