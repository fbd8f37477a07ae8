//! Planning: which access path answers a query.
//!
//! - `_id` conditions use the collection's own key order: equality and `$in` read those
//!   documents, ranges and prefixes read that stretch of ids.
//! - Otherwise each index (made by this version's rules) is a candidate: its leading fields
//!   with an equality (`$eq`, `$in`, `$all`'s first value) give key prefixes, the next field
//!   with a range (`$gt..$lte`, `$prefix`, `$exists`) narrows them, and it serves the sort
//!   when the sort's paths follow the equality fields in index order (equality, then sort,
//!   then range), all in the index's directions or all reversed. The one with the most
//!   equality fields, then a range, then a served sort wins; every candidate appears in
//!   [`Plan::candidates`](crate::Plan::candidates) with why it was or was not taken.
//! - A filter whose top is an `$or` may use one index per branch; the ids are merged.
//! - Else every document is read (a full scan, in parallel over the packed blocks).
//!
//! Whatever the access path, each document it yields is tested against the whole filter,
//! so an index only narrows what is read, never the answer.

use crate::index::encode::{MISSING, class_end, class_of, string_prefix};
use crate::query::explain::{Access, Considered, Why};
use crate::query::filter::{Cond, Fast, Filter, Node, Operand};
use crate::query::path::DocPath;
use crate::state::IndexState;
use std::sync::Arc;
use stele_table::prefix_successor;

/// Key range `[lo, hi)` of an index (`hi` `None`: to the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyRange {
    pub lo: Vec<u8>,
    pub hi: Option<Vec<u8>>,
}

impl KeyRange {
    fn point(enc: &[u8]) -> KeyRange {
        KeyRange {
            lo: enc.to_vec(),
            hi: prefix_successor(enc),
        }
    }

    /// This range with `prefix` in front (the key prefix of the fields before).
    fn after(&self, prefix: &[u8]) -> KeyRange {
        KeyRange {
            lo: [prefix, &self.lo].concat(),
            hi: match &self.hi {
                Some(h) => Some([prefix, h].concat()),
                None => prefix_successor(prefix),
            },
        }
    }

    /// This range narrowed by `next`, a range of the next field: `next` after this range's
    /// start (the key prefix of the fields before), in place. A range with nothing before
    /// it becomes `next` itself (moved, not copied).
    fn narrow(&mut self, next: KeyRange) {
        if self.lo.is_empty() {
            *self = next;
            return;
        }
        self.hi = match &next.hi {
            Some(h) => {
                let mut hi = Vec::with_capacity(self.lo.len() + h.len());
                hi.extend_from_slice(&self.lo);
                hi.extend_from_slice(h);
                Some(hi)
            }
            None => prefix_successor(&self.lo),
        };
        self.lo.extend_from_slice(&next.lo);
    }
}

/// `r` for a descending field: a point is a whole encoding, and complemented it is the
/// descending key's prefix.
fn flipped(r: &KeyRange) -> KeyRange {
    let enc: Vec<u8> = r.lo.iter().map(|b| !b).collect();
    KeyRange::point(&enc)
}

/// A chosen index access with everything execution needs.
#[derive(Debug, Clone)]
pub(crate) struct IndexAccess<'s> {
    pub ix: &'s IndexState,
    pub ranges: Vec<KeyRange>,
    pub reverse: bool,
    /// Rows come out in the sort's order (ties, equal in every sort path, in any order).
    pub sorted: bool,
    /// The leading index fields each key range fixes to one value: when `sorted` over
    /// several ranges, entries are merged by the fields after these.
    pub fixed_fields: usize,
    /// When `sorted`: the index fields up to the last sort path (the fixed fields, then the
    /// sort paths). A document comes out at its first entry in the scan's direction, whose
    /// values of the sort paths are the extremes that make its sort key (an index's entries
    /// are every combination of its fields' values), so two rows tie on the sort exactly
    /// when the sort paths' values of their entries are equal.
    pub sort_fields: usize,
}

/// The access chosen for a filter.
#[derive(Debug, Clone)]
pub(crate) enum Chosen<'s> {
    Full,
    Ids(Vec<String>),
    IdRange(Option<String>, Option<(String, bool)>),
    Index(IndexAccess<'s>),
    Union(Vec<Chosen<'s>>),
}

impl Chosen<'_> {
    pub(crate) fn access(&self) -> Access {
        match self {
            Chosen::Full => Access::FullScan,
            Chosen::Ids(ids) => Access::Ids(ids.clone()),
            Chosen::IdRange(lo, hi) => Access::IdRange {
                lo: lo.clone(),
                hi: hi.clone(),
            },
            Chosen::Index(a) => Access::Index {
                index: a.ix.def.name.clone(),
                ranges: a.ranges.len(),
                reverse: a.reverse,
                covered: false,
            },
            Chosen::Union(parts) => Access::Union(parts.iter().map(Chosen::access).collect()),
        }
    }

    /// Rows come out in the sort's order: an index serving it, or id order for a query
    /// sorted by id ascending or not at all.
    pub(crate) fn sorted(&self, sort: &[(DocPath, bool)]) -> bool {
        let by_id = match sort {
            [] => true,
            [(p, false)] => p.as_str() == "_id",
            _ => false,
        };
        match self {
            Chosen::Full | Chosen::IdRange(..) => by_id,
            Chosen::Index(a) => a.sorted,
            Chosen::Ids(_) | Chosen::Union(_) => false,
        }
    }
}

/// The conditions of a filter's top-level conjunction, by path, and the rest.
pub(super) fn conjuncts<'f>(
    filter: &'f Filter,
    fields: &mut Vec<(&'f DocPath, &'f Cond)>,
    rest: &mut Vec<&'f Filter>,
) {
    match &filter.node {
        Node::And(parts) => parts.iter().for_each(|p| conjuncts(p, fields, rest)),
        Node::Field(field) => fields.push((&field.0, &field.1)),
        _ => rest.push(filter),
    }
}

/// Key ranges of the entries a condition can hold for (ascending encodings), and whether it
/// is a set of points (equalities). `None`: the condition does not narrow an index.
fn cond_ranges(cond: &Cond) -> Option<(Vec<KeyRange>, bool)> {
    let point = |op: &Operand| -> Option<KeyRange> {
        if !op.is_scalar() && op.enc.first() != Some(&0x50) {
            return None; // arrays are not index entries as a whole
        }
        Some(if op.is_null() {
            // null also matches a missing field: the missing marker and null, together.
            KeyRange {
                lo: vec![MISSING],
                hi: Some(vec![0x11]),
            }
        } else {
            KeyRange::point(&op.enc)
        })
    };
    match cond {
        Cond::Eq(op) => Some((vec![point(op)?], !op.is_null())),
        Cond::In(ops) if !ops.is_empty() => {
            let mut r = ops.iter().map(point).collect::<Option<Vec<_>>>()?;
            r.sort_by(|a, b| a.lo.cmp(&b.lo));
            r.dedup();
            let points = !ops.iter().any(Operand::is_null);
            Some((r, points))
        }
        // As `Eq` of the first value: `null`'s range holds two keys (the missing marker and
        // null), so it is not a point (on a descending field, whose ranges are flipped as
        // points, it was taken for one and found nothing: the property test's
        // `{"a": {"$all": [null]}}` over `{"a": null}`).
        Cond::All(ops) => {
            let first = ops.first()?;
            Some((vec![point(first)?], !first.is_null()))
        }
        Cond::Range { lo, hi } => {
            // A bound that is an array lets whole arrays match, and index entries hold an
            // array's elements, not the array.
            if [lo, hi]
                .into_iter()
                .flatten()
                .any(|(op, _)| op.enc.first() == Some(&0x60))
            {
                return None;
            }
            let class = |op: &Operand| op.enc.first().map(|&b| class_of(b));
            let lo_class = lo.as_ref().map(|(op, _)| class(op));
            let hi_class = hi.as_ref().map(|(op, _)| class(op));
            let start = match lo {
                Some((op, true)) => op.enc.clone(),
                Some((op, false)) => prefix_successor(&op.enc)?,
                None => vec![hi_class.flatten()?],
            };
            let end = match hi {
                Some((op, true)) => prefix_successor(&op.enc),
                Some((op, false)) => Some(op.enc.clone()),
                None => Some(vec![class_end(lo_class.flatten()?)]),
            };
            // No end is above every key (compared without building one).
            if end.as_ref().is_some_and(|e| start >= *e) {
                return Some((Vec::new(), false)); // nothing can match
            }
            Some((vec![KeyRange { lo: start, hi: end }], false))
        }
        Cond::Prefix(p) => Some((vec![KeyRange::point(&string_prefix(p))], false)),
        Cond::Exists(true) => Some((
            vec![KeyRange {
                lo: vec![MISSING + 1],
                hi: None,
            }],
            false,
        )),
        Cond::Exists(false) => Some((vec![KeyRange::point(&[MISSING])], true)),
        _ => None,
    }
}

/// At most this many key ranges merged to serve a sort (`$in` lists on the fixed fields):
/// the scan holds the next entry of each.
pub(crate) const MAX_MERGED_RANGES: usize = 64;

/// At most this many key ranges (products of `$in` lists): beyond, the last field's list
/// is left to the filter.
const MAX_RANGES: usize = 4096;

/// A candidate index's offer.
struct Offer<'s> {
    access: IndexAccess<'s>,
    eq_fields: usize,
    /// Leading fields that narrow the key ranges.
    bounded: usize,
    range: bool,
    /// The sorted path it would serve but for arrays held there (see [`offer`]).
    sort_over_arrays: Option<String>,
}

fn offer<'s>(
    ix: &'s IndexState,
    fields: &[(&DocPath, &Cond)],
    sort: &[(DocPath, bool)],
) -> Result<Offer<'s>, Why> {
    if !ix.def.query_keys {
        return Err(Why::OldKeys);
    }
    let paths = ix.def.doc_paths();
    let mut ranges = vec![KeyRange {
        lo: Vec::new(),
        hi: None,
    }];
    let mut eq_fields = 0; // leading fields fixed to one value
    let mut point_fields = 0; // leading fields fixed to one value in each key range
    let mut single = true; // still one key range
    let mut range = false;
    let mut bounded = 0;
    for (i, path) in paths.iter().enumerate() {
        let desc = ix.def.descending.get(i).copied().unwrap_or(false);
        let best = fields
            .iter()
            .filter(|(p, _)| *p == path)
            .filter_map(|(_, c)| cond_ranges(c))
            .max_by_key(|(r, points)| (*points, r.len() == 1));
        let Some((field_ranges, points)) = best else {
            break;
        };
        if desc && !points {
            break; // ranges over descending fields are left to the filter
        }
        if ranges.len() * field_ranges.len() > MAX_RANGES {
            break;
        }
        let one = field_ranges.len() == 1;
        if let ([only], [fr]) = (ranges.as_mut_slice(), field_ranges.as_slice()) {
            // One range by one (the common case): narrowed in place, no product built.
            only.narrow(if desc { flipped(fr) } else { fr.clone() });
        } else {
            let mut next = Vec::with_capacity(ranges.len() * field_ranges.len());
            for r in &ranges {
                for fr in &field_ranges {
                    let fr = if desc { flipped(fr) } else { fr.clone() };
                    next.push(fr.after(&r.lo));
                }
            }
            ranges = next;
        }
        bounded += 1;
        if points {
            point_fields += 1;
        }
        if points && one && single {
            eq_fields += 1;
            continue;
        }
        single = single && one;
        if !points {
            range = true;
            break;
        }
    }
    // The sort: its paths must be the index fields right after the fields fixed to one
    // value in each key range, in order, all in the index's directions or all reversed.
    // Over several key ranges (`$in` on a fixed field: "paid or shipped orders, newest
    // first") each range is in the sort's order, and the scan merges them (at most
    // [`MAX_MERGED_RANGES`]; `execute::index_entries`). A path
    // fixed by an equality still counts: an array holding the value sorts by its smallest
    // (largest) element, which may be another. Nor does a sorted path the filter has any
    // condition on (a range, or one that narrows nothing, as `null` or `$ne`) once a
    // document has held an array there (`crate::index::arrays`): entries that fail the
    // condition are passed over, and an array's elements that fail it still set its sort
    // key, so its document would come at the place of an element that passed rather than
    // at its own (found by the property test: `{"a": null}` sorted by `a` descending put
    // `[false, null]` after `null`). While no document has, each has one entry there, its
    // own value: the scan meets it at its place or not at all.
    let mut sorted = (1..=MAX_MERGED_RANGES).contains(&ranges.len()) && !sort.is_empty();
    let mut reverse = None;
    let mut sort_over_arrays = None;
    for (k, (p, desc)) in sort.iter().enumerate() {
        let at = point_fields + k;
        let ok = paths.get(at) == Some(p) && p.as_str() != "_id";
        let flip = ix.def.descending.get(at).copied().unwrap_or(false) != *desc;
        if !ok || reverse.is_some_and(|r| r != flip) {
            sorted = false;
            break;
        }
        if sorted && ix.arrays.has(at) && has_condition(fields, p) {
            sorted = false;
            sort_over_arrays = Some(p.as_str().to_owned());
            break;
        }
        reverse = Some(flip);
    }
    if bounded == 0 && !sorted {
        return Err(Why::NoFirstField {
            sort: !sort.is_empty(),
        });
    }
    Ok(Offer {
        access: IndexAccess {
            ix,
            ranges,
            reverse: sorted && reverse.unwrap_or(false),
            sorted,
            fixed_fields: point_fields,
            sort_fields: if sorted { point_fields + sort.len() } else { 0 },
        },
        eq_fields,
        bounded,
        range,
        sort_over_arrays,
    })
}

/// Whether the filter's top-level conjunction (`fields`, from [`conjuncts`]) has a
/// condition on `path`.
fn has_condition(fields: &[(&DocPath, &Cond)], path: &DocPath) -> bool {
    fields.iter().any(|(f, _)| *f == path)
}

/// The access for `_id` conditions, if any.
fn id_access(fields: &[(&DocPath, &Cond)]) -> Option<Chosen<'static>> {
    let id_conds = fields
        .iter()
        .filter(|(p, _)| p.as_str() == "_id")
        .map(|(_, c)| *c);
    let mut range = None;
    for c in id_conds {
        let text = |op: &Operand| match &op.fast {
            Fast::Str(s) => Some(s.clone()),
            _ => None,
        };
        match c {
            Cond::Eq(op) => return Some(Chosen::Ids(text(op).into_iter().collect())),
            Cond::In(ops) => return Some(Chosen::Ids(ops.iter().filter_map(text).collect())),
            Cond::Range { lo, hi } if range.is_none() => {
                let lo_s = match lo {
                    Some((op, incl)) => {
                        let s = text(op)?;
                        // An exclusive bound: the next id after it, byte-wise.
                        Some(if *incl { s } else { format!("{s}\0") })
                    }
                    None => None,
                };
                let hi_s = match hi {
                    Some((op, incl)) => Some((text(op)?, *incl)),
                    None => None,
                };
                range = Some(Chosen::IdRange(lo_s, hi_s));
            }
            Cond::Prefix(p) if range.is_none() => {
                let hi = prefix_successor(p.as_bytes())
                    .and_then(|h| String::from_utf8(h).ok())
                    .map(|h| (h, false));
                range = Some(Chosen::IdRange(Some(p.clone()), hi));
            }
            _ => {}
        }
    }
    range
}

/// How good an index's offer is: equality fields, a range, a served sort, conditions its
/// entries test, fewer fields.
type Score = (usize, bool, bool, usize, std::cmp::Reverse<usize>);

/// Chooses the access for `filter` and `sort` over `indexes`; records the candidates (as
/// [`Why`]: their text is written only if someone asks, `Plan::candidates`).
pub(crate) fn choose<'s>(
    filter: &Filter,
    sort: &[(DocPath, bool)],
    indexes: &[&'s IndexState],
    candidates: &mut Vec<Considered>,
) -> Chosen<'s> {
    let mut fields = Vec::new();
    let mut rest = Vec::new();
    conjuncts(filter, &mut fields, &mut rest);
    let considered = |ix: &IndexState, chosen: bool, why: Why| Considered {
        def: Arc::clone(&ix.def),
        chosen,
        why,
        or_branches: false,
    };
    if let Some(ids) = id_access(&fields) {
        candidates.extend(indexes.iter().map(|ix| considered(ix, false, Why::ById)));
        return ids;
    }
    let mut best: Option<(Offer<'s>, Score, usize)> = None;
    let first = candidates.len();
    for (n, ix) in indexes.iter().enumerate() {
        match offer(ix, &fields, sort) {
            Ok(o) => {
                // Between offers alike so far, the index whose entries can test more of
                // the filter's conditions: its scan passes over more entries without
                // reading their documents (`status, total:desc` over `status, created:desc`
                // for `{"status": "paid", "total": {"$lt": 250}}`).
                let tested = ix
                    .def
                    .doc_paths()
                    .iter()
                    .filter(|p| has_condition(&fields, p))
                    .count();
                let score = (
                    o.eq_fields,
                    o.range,
                    o.access.sorted,
                    tested,
                    std::cmp::Reverse(ix.def.fields.len()),
                );
                let why = Why::Offered {
                    bounded: o.bounded,
                    eq_fields: o.eq_fields,
                    range: o.range,
                    serves_sort: o.access.sorted && !sort.is_empty(),
                    sort_over_arrays: o.sort_over_arrays.clone(),
                    ranges: o.access.ranges.len(),
                };
                candidates.push(considered(ix, false, why));
                if best.as_ref().is_none_or(|(_, s, _)| score > *s) {
                    best = Some((o, score, n));
                }
            }
            Err(why) => candidates.push(considered(ix, false, why)),
        }
    }
    if let Some((o, _, n)) = best {
        if let Some(c) = candidates.get_mut(first + n) {
            c.chosen = true;
        }
        return Chosen::Index(o.access);
    }
    // One index (or id access) per branch of a top-level $or, when every branch has one.
    if let ([], [or]) = (fields.as_slice(), rest.as_slice())
        && let Node::Or(branches) = &or.node
    {
        let mut parts = Vec::new();
        for b in branches {
            let mut ignored = Vec::new();
            match choose(b, &[], indexes, &mut ignored) {
                Chosen::Full => return Chosen::Full,
                c => parts.push(c),
            }
        }
        for c in candidates.iter_mut().skip(first) {
            c.or_branches = true;
        }
        return Chosen::Union(parts);
    }
    Chosen::Full
}
