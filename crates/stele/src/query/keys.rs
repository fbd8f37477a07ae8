//! Index entries tested alone: which conditions of a filter one index entry decides, and
//! whether an entry meets them. They let a scan skip entries before reading documents, and
//! a count be answered from the keys alone (`Snapshot::count_matching`).

use super::filter::{Cond, Filter, Operand};
use super::plan::conjuncts;
use crate::index::encode::{MISSING, string_prefix};
use crate::state::IndexState;

/// Whether a condition can be decided from one index entry (its value in ascending form),
/// so entries can be tested before their documents are read, or counted alone.
fn key_decidable(cond: &Cond) -> bool {
    let no_arrays = |op: &Operand| op.enc.first() != Some(&0x60);
    match cond {
        Cond::Eq(op) => no_arrays(op),
        Cond::In(ops) => ops.iter().all(no_arrays),
        Cond::Range { lo, hi } => [lo, hi].into_iter().flatten().all(|(op, _)| no_arrays(op)),
        Cond::Prefix(_) | Cond::Exists(_) => true,
        _ => false,
    }
}

/// Whether the entry value `enc` (ascending form) meets `cond` (a [`key_decidable`] one).
pub(crate) fn key_holds(cond: &Cond, enc: &[u8]) -> bool {
    let eq = |op: &Operand| {
        if op.is_null() {
            enc == [MISSING] || enc == [0x10]
        } else {
            enc == op.enc.as_slice()
        }
    };
    match cond {
        Cond::Eq(op) => eq(op),
        Cond::In(ops) => ops.iter().any(eq),
        Cond::Range { lo, hi } => crate::query::filter::in_range(enc, lo.as_ref(), hi.as_ref()),
        Cond::Prefix(p) => enc.starts_with(&string_prefix(p)),
        Cond::Exists(want) => (enc != [MISSING]) == *want,
        _ => false,
    }
}

/// The conditions of `filter` each index field's entries can be tested with: per field, the
/// one key-decidable condition on it (a field with two conditions gets none: two values of
/// an array may meet one each). The bool says the conditions are the whole filter, so
/// matching entries decide matching documents (a count from the index alone).
pub(crate) fn key_conditions<'f>(
    filter: &'f Filter,
    ix: &IndexState,
) -> (Vec<Option<&'f Cond>>, bool) {
    let mut fields = Vec::new();
    let mut rest = Vec::new();
    conjuncts(filter, &mut fields, &mut rest);
    let paths = ix.def.doc_paths();
    let mut per: Vec<Option<&Cond>> = vec![None; paths.len()];
    let mut whole = rest.is_empty();
    for (i, path) in paths.iter().enumerate() {
        // The one condition on `path`, if exactly one (found without collecting them: this
        // runs on every index query, and the `Vec` was a few percent of a small count).
        let mut on = fields.iter().filter(|(p, _)| *p == path).map(|(_, c)| *c);
        if let (Some(c), None) = (on.next(), on.next())
            && key_decidable(c)
            && let Some(slot) = per.get_mut(i)
        {
            *slot = Some(c);
        }
    }
    for (path, cond) in &fields {
        let used = paths
            .iter()
            .position(|p| p == *path)
            .and_then(|i| per.get(i).copied().flatten())
            .is_some_and(|c| std::ptr::eq(c, *cond));
        whole &= used;
    }
    (per, whole)
}
