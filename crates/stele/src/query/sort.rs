//! Sort keys: the bytes whose order is a query's sort order.
//!
//! Per sort path, a document's value is its smallest index entry ascending and its largest
//! descending (`crate::index::query_entries`: an array's elements, a missing field as the
//! lowest marker), complemented for a descending path; then the id, so ties keep id order.
//! The same entries make an index's order, so a sort served by an index and one done in
//! memory agree.

use crate::index::encode::{encode_any, encode_str};
use crate::index::path::{ReachCache, Reached};
use crate::index::query_entries;
use crate::query::path::DocPath;
use stele_doc::Value;

/// Appends the sort key of the document `root` with id `id` to `out` (`None`: the id is
/// the document's own `_id` property, and ties keep their order). Returns the length of
/// `out` before the id: the key of the sort paths alone.
pub(crate) fn sort_key(
    sort: &[(DocPath, bool)],
    root: Value<'_>,
    id: Option<&str>,
    out: &mut Vec<u8>,
) -> usize {
    let fields_len = sort_fields(sort, &mut [], root, id, out);
    if let Some(id) = id {
        encode_str(id, out);
    }
    fields_len
}

/// [`sort_key`] without the id: the sort paths' part alone (its length returned), each
/// path's lookups through `caches` (one per sort path, from [`DocPath::cache`]; the paths
/// without one looked up afresh).
pub(crate) fn sort_fields(
    sort: &[(DocPath, bool)],
    caches: &mut [ReachCache],
    root: Value<'_>,
    id: Option<&str>,
    out: &mut Vec<u8>,
) -> usize {
    for (k, (path, descending)) in sort.iter().enumerate() {
        let start = out.len();
        let mut reached = || match caches.get_mut(k) {
            Some(cache) => path.reach_cached(root, cache),
            None => path.reach_fast(root),
        };
        if let (Some(id), "_id") = (id, path.as_str()) {
            encode_str(id, out);
        } else if let Reached::One([v]) = reached()
            && !matches!(v, Value::Array(_))
        {
            // One value, not an array: its own encoding (what `query_entries` would give).
            encode_any(&v, out);
        } else {
            let entries = query_entries(path, root);
            let pick = if *descending {
                entries.into_iter().max()
            } else {
                entries.into_iter().min()
            };
            out.extend_from_slice(&pick.unwrap_or_default());
        }
        if *descending {
            out.get_mut(start..)
                .unwrap_or_default()
                .iter_mut()
                .for_each(|b| *b = !*b);
        }
    }
    out.len()
}
