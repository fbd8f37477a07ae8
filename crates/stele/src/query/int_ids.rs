//! Queries of a collection of integer ids (`crate::ids`). The engine compares `_id` as the
//! stored key, whose byte order is the numbers' order: a condition on `_id` becomes the
//! same condition on keys before the query runs (so filters, `_id` ranges and sorts by
//! `_id` are numeric, and `_id` behaves as a field holding the integer would), and the
//! rows' ids become the integers' text after.

/// The class byte of numbers in the order encoding (`crate::index::encode`).
const NUMBERS: u8 = 0x30;

use super::filter::{Cond, Fast, Filter, JsonType, Node, Operand};
use super::{Query, Row};
use crate::ids::{IdKind, int_key};
use crate::index::encode::{class_of, encode_str};
use crate::state::State;
use std::borrow::Cow;

/// `query` as it runs on `state`: when its collection holds integer ids, with its
/// conditions on `_id` as the same conditions on stored keys (each operand the key of the
/// integer it is, or the condition decided when no integer is: `{"_id": "x"}` holds for no
/// document, `{"_id": {"$type": "number"}}` for all, as they would on a field holding the
/// id); as it is otherwise.
pub(crate) fn for_state<'q>(state: &State, query: &'q Query) -> Cow<'q, Query> {
    if state.marked_kind(&query.collection) != IdKind::Int {
        return Cow::Borrowed(query);
    }
    Cow::Owned(Query {
        filter: keyed(&query.filter),
        ..query.clone()
    })
}

/// The rows' ids (stored keys) as the ids people use, for a collection of integer ids.
pub(crate) fn rows_for(state: &State, collection: &str, rows: &mut [Row]) {
    let kind = state.marked_kind(collection);
    rows.iter_mut().for_each(|row| row_for(kind, row));
}

/// A row's id (its stored key) as the id people use, in a collection of ids of `kind`.
pub(crate) fn row_for(kind: IdKind, row: &mut Row) {
    if kind == IdKind::Int {
        row.id = crate::ids::id_text(kind, std::mem::take(&mut row.id).into_bytes());
    }
}

/// `filter` as it runs on `collection` of `state`: for a collection of integer ids, with its
/// conditions on `_id` on stored keys (as [`for_state`] does for a query).
#[cfg(feature = "arrow")]
pub(crate) fn filter_for(state: &State, collection: &str, filter: &Filter) -> Filter {
    if state.marked_kind(collection) == IdKind::Int {
        keyed(filter)
    } else {
        filter.clone()
    }
}

/// `filter` with every condition on `_id` as the same condition on stored keys.
fn keyed(filter: &Filter) -> Filter {
    let all = |parts: &[Filter]| parts.iter().map(keyed).collect();
    match &filter.node {
        Node::And(parts) => Filter::and(all(parts)),
        Node::Or(parts) => Filter::or(all(parts)),
        Node::Nor(parts) => Filter {
            node: Node::Nor(all(parts)),
        },
        Node::Field(field) if field.0.as_str() == "_id" => {
            Filter::field(field.0.clone(), keyed_cond(&field.1))
        }
        Node::Field(_) => filter.clone(),
    }
}

fn keyed_cond(cond: &Cond) -> Cond {
    // What a condition on an integer id is when no operand can hold: never (an id always
    // exists), or always.
    let never = || Cond::Exists(false);
    let always = || Cond::Exists(true);
    let keys = |os: &[Operand]| os.iter().filter_map(eq_key).collect::<Vec<_>>();
    match cond {
        Cond::Eq(o) => eq_key(o).map_or_else(never, Cond::Eq),
        Cond::Ne(o) => eq_key(o).map_or_else(always, Cond::Ne),
        Cond::In(os) => Cond::In(keys(os)),
        Cond::Nin(os) => Cond::Nin(keys(os)),
        Cond::All(os) => {
            let all = keys(os);
            if all.len() == os.len() {
                Cond::All(all)
            } else {
                never()
            }
        }
        Cond::Range { lo, hi } => keyed_range(lo.as_ref(), hi.as_ref()),
        Cond::Not(conds) => Cond::Not(conds.iter().map(keyed_cond).collect()),
        // An id is a number: of types "number" and "integer" only.
        Cond::Type(types) => Cond::Exists(
            types
                .iter()
                .any(|t| matches!(t, JsonType::Number | JsonType::Integer)),
        ),
        // No string, no array: never a prefix, a size or an element.
        Cond::Prefix(_) | Cond::Size(_) | Cond::ElemMatchDoc(_) | Cond::ElemMatchValue(_) => {
            never()
        }
        Cond::Exists(_) => cond.clone(),
    }
}

/// Where a number operand lies among the integers.
#[derive(Clone, Copy)]
enum Place {
    /// On integer `n`.
    On(i128),
    /// Strictly between `n` and `n + 1`.
    After(i128),
}

/// The place of operand `o` among the integers, if it is a number.
fn place(o: &Operand) -> Option<Place> {
    if class_of(*o.enc.first()?) != NUMBERS {
        return None;
    }
    let f = match &o.fast {
        Fast::Int(i) => return Some(Place::On(*i)),
        Fast::Float(f) => *f,
        // Decimals and numbers beyond every integer type: by their value as a float, which
        // places them exactly among integers this far from the `i64` range's ends.
        _ => o.json.parse::<f64>().ok()?,
    };
    // Past ±2^100 stands for beyond every id.
    let f = f.clamp(-(2f64.powi(100)), 2f64.powi(100));
    Some(if f.fract() == 0.0 {
        Place::On(f as i128)
    } else {
        Place::After(f.floor() as i128)
    })
}

/// The key operand of `o` for an equality: `None` when no integer id equals it.
fn eq_key(o: &Operand) -> Option<Operand> {
    match place(o)? {
        Place::On(n) => i64::try_from(n).ok().map(key_operand),
        Place::After(_) => None,
    }
}

/// A range condition on an integer id (`Cond::Range`'s bounds, as the filter semantics
/// compare across classes: a bound of another class than numbers holds for no number
/// unless the two bounds are of different classes, which span the classes between them).
fn keyed_range(lo: Option<&(Operand, bool)>, hi: Option<&(Operand, bool)>) -> Cond {
    let class = |o: &Operand| o.enc.first().map_or(0, |&b| class_of(b));
    let spans = matches!((lo, hi), (Some((a, _)), Some((b, _))) if class(a) != class(b));
    // The least and greatest ids the bounds let through; `None` inside: unbounded.
    let mut least: Option<i128> = None;
    let mut most: Option<i128> = None;
    if let Some((o, incl)) = lo {
        match place(o) {
            Some(Place::On(n)) => least = Some(if *incl { n } else { n + 1 }),
            Some(Place::After(n)) => least = Some(n + 1),
            // Below the numbers (null, booleans) and spanning: no lower bound.
            None if spans && class(o) < NUMBERS => {}
            None => return Cond::Exists(false),
        }
    }
    if let Some((o, incl)) = hi {
        match place(o) {
            Some(Place::On(n)) => most = Some(if *incl { n } else { n - 1 }),
            Some(Place::After(n)) => most = Some(n),
            None if spans && class(o) > NUMBERS => {}
            None => return Cond::Exists(false),
        }
    }
    let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    let least = least.filter(|&l| l > min);
    let most = most.filter(|&m| m < max);
    if least.is_some_and(|l| l > max)
        || most.is_some_and(|m| m < min)
        || matches!((least, most), (Some(l), Some(m)) if l > m)
    {
        return Cond::Exists(false);
    }
    let bound = |n: Option<i128>| {
        n.and_then(|n| i64::try_from(n).ok())
            .map(|n| (key_operand(n), true))
    };
    match (bound(least), bound(most)) {
        (None, None) => Cond::Exists(true),
        (lo, hi) => Cond::Range { lo, hi },
    }
}

/// The operand of integer id `n`: the string of its stored key.
fn key_operand(n: i64) -> Operand {
    let key = int_key(n);
    let mut enc = Vec::new();
    encode_str(&key, &mut enc);
    Operand {
        enc,
        json: n.to_string(),
        fast: Fast::Str(key),
    }
}
