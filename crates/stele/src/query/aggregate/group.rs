//! `$group`: documents by the value of a key expression, with accumulators per group.
//!
//! Groups are kept by their key's order encoding (numbers by value, objects by content) and
//! come out in key order. `$sum` and `$avg` take numbers and skip other values (integers are
//! summed exactly, then as floats once a float or a decimal joins); `$min` and `$max` use
//! the total order and skip missing values and nulls; `$first` and `$last` follow the order
//! of the input (id order for a collection); `$push` keeps every value but missing ones.
//!
//! This file holds the stage and its accumulators; the map of groups that runs it over a
//! collection, and spills past the budget, is `grouper.rs`.

use super::expr::{Expr, IdRef, Out};
use super::spill_state::State;
use crate::error::{Error, Result};
use stele_doc::Value;

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
    pub(super) name: String,
    op: AccOp,
    expr: Expr,
    /// A numeric literal operand (`{"$sum": 1}`), read once.
    constant: Option<i64>,
}

/// A `$group` stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub(super) key: Expr,
    pub(super) accs: Vec<Acc>,
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

    /// Appends a new group's states, one per accumulator, to `out`.
    pub(super) fn push_states(&self, out: &mut Vec<State>) {
        out.extend(self.accs.iter().map(|a| match a.op {
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
        }));
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

/// Adds the document `root` to one group's `states`; `bytes` counts what they grew by.
pub(super) fn accumulate(
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
pub(super) fn merge_states(
    accs: &[Acc],
    ours: &mut [State],
    theirs: impl IntoIterator<Item = State>,
) {
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
