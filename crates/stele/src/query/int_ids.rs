//! Queries of a collection of integer ids (`crate::ids`). The engine compares `_id` as the
//! stored key, whose byte order is the numbers' order: an operand of a condition on `_id`
//! becomes the key of its integer before the query runs (so filters, `_id` ranges and
//! sorts by `_id` are numeric), and the rows' ids become the integers' text after.

use super::filter::{Cond, Fast, Filter, Node, Operand};
use super::{Query, Row};
use crate::error::{Error, Result};
use crate::ids::{IdKind, int_key, parse_int_id};
use crate::index::encode::encode_str;
use crate::state::State;
use std::borrow::Cow;

/// `query` as it runs on `state`: with the operands of its `_id` conditions as stored
/// keys when its collection holds integer ids (an operand that is no integer is an
/// [`Error::IdKindMismatch`]); as it is otherwise.
pub(crate) fn for_state<'q>(state: &State, query: &'q Query) -> Result<Cow<'q, Query>> {
    if state.marked_kind(&query.collection) != IdKind::Int {
        return Ok(Cow::Borrowed(query));
    }
    let filter = keyed(&query.filter, &query.collection)?;
    Ok(Cow::Owned(Query {
        filter,
        ..query.clone()
    }))
}

/// The rows' ids (stored keys) as the ids people use, for a collection of integer ids.
pub(crate) fn rows_for(state: &State, collection: &str, rows: &mut [Row]) {
    let kind = state.marked_kind(collection);
    if kind == IdKind::Int {
        for row in rows {
            row.id = crate::ids::id_text(kind, std::mem::take(&mut row.id).into_bytes());
        }
    }
}

fn keyed(filter: &Filter, collection: &str) -> Result<Filter> {
    let all = |parts: &[Filter]| -> Result<Vec<Filter>> {
        parts.iter().map(|f| keyed(f, collection)).collect()
    };
    Ok(match &filter.node {
        Node::And(parts) => Filter::and(all(parts)?),
        Node::Or(parts) => Filter::or(all(parts)?),
        Node::Nor(parts) => Filter {
            node: Node::Nor(all(parts)?),
        },
        Node::Field(field) if field.0.as_str() == "_id" => {
            Filter::field(field.0.clone(), keyed_cond(&field.1, collection)?)
        }
        Node::Field(_) => filter.clone(),
    })
}

fn keyed_cond(cond: &Cond, collection: &str) -> Result<Cond> {
    let one = |o: &Operand| key_operand(o, collection);
    let many = |os: &[Operand]| os.iter().map(one).collect::<Result<Vec<_>>>();
    let bound = |b: &Option<(Operand, bool)>| -> Result<Option<(Operand, bool)>> {
        b.as_ref().map(|(o, inc)| Ok((one(o)?, *inc))).transpose()
    };
    Ok(match cond {
        Cond::Eq(o) => Cond::Eq(one(o)?),
        Cond::Ne(o) => Cond::Ne(one(o)?),
        Cond::Range { lo, hi } => Cond::Range {
            lo: bound(lo)?,
            hi: bound(hi)?,
        },
        Cond::In(os) => Cond::In(many(os)?),
        Cond::Nin(os) => Cond::Nin(many(os)?),
        Cond::All(os) => Cond::All(many(os)?),
        Cond::Not(conds) => Cond::Not(
            conds
                .iter()
                .map(|c| keyed_cond(c, collection))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

/// The operand of an integer id: a JSON integer in the `i64` range (or a string or a
/// float that writes one), as the string of its stored key.
fn key_operand(o: &Operand, collection: &str) -> Result<Operand> {
    let n = match &o.fast {
        Fast::Int(i) => i64::try_from(*i).ok(),
        Fast::Str(s) => parse_int_id(s),
        // Exactly an integer of the range (2^63 itself is not).
        Fast::Float(f) if f.fract() == 0.0 && *f >= -(2f64.powi(63)) && *f < 2f64.powi(63) => {
            Some(*f as i64)
        }
        _ => None,
    };
    let Some(n) = n else {
        return Err(Error::IdKindMismatch {
            collection: collection.to_owned(),
            holds: IdKind::Int,
            id: o.json.chars().take(80).collect(),
        });
    };
    let key = int_key(n);
    let mut enc = Vec::new();
    encode_str(&key, &mut enc);
    Ok(Operand {
        enc,
        json: o.json.clone(),
        fast: Fast::Str(key),
    })
}
