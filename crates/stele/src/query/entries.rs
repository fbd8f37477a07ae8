//! The entries of an index access: each tested against the filter's key conditions, each
//! document once, the key ranges read in turn or, for a sort they serve over several ranges,
//! merged.

use super::filter::Cond;
use super::plan::IndexAccess;
use super::run::Run;
use crate::error::{Error, Result};
use crate::index::cache::KeyBlockCache;
use crate::index::encode::encoded_len_flipped;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// The ids an index scan has yielded, so that a document with several entries (an array
/// field) comes out once. The ids are copied into one buffer and a map from their XXH3
/// hash to where they lie (another id of the same hash goes to a short list): a `Vec` per
/// id, and the standard SipHash, were 6 % of a selective query (and 14 % of a covered
/// count of 386,000 entries). The ids are the collection's own, not an attacker's choice of
/// colliding keys; a flood of collisions would only slow the query.
#[derive(Default)]
struct SeenIds {
    bytes: Vec<u8>,
    /// Hash to the id's `(start, end)` in `bytes`.
    first: HashMap<u64, (usize, usize), Hashed>,
    /// Further ids whose hash another id had: `(hash, start, end)`.
    more: Vec<(u64, usize, usize)>,
}

impl SeenIds {
    /// Adds `id`; false if it was there already.
    fn insert(&mut self, id: &[u8]) -> bool {
        let h = xxhash_rust::xxh3::xxh3_64(id);
        let start = self.bytes.len();
        let range = (start, start + id.len());
        match self.first.entry(h) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(range);
            }
            std::collections::hash_map::Entry::Occupied(o) => {
                let bytes = &self.bytes;
                let same = |&(a, b): &(usize, usize)| bytes.get(a..b) == Some(id);
                if same(o.get()) || self.more.iter().any(|&(mh, a, b)| mh == h && same(&(a, b))) {
                    return false;
                }
                self.more.push((h, range.0, range.1));
            }
        }
        self.bytes.extend_from_slice(id);
        true
    }
}

/// Passes a hash on as it is (the keys of [`SeenIds`] are XXH3 hashes already).
#[derive(Default)]
struct PassHasher(u64);

impl std::hash::Hasher for PassHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the key is a u64); any other input still hashes.
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Hashed = std::hash::BuildHasherDefault<PassHasher>;

/// Where an index entry's parts lie: the key's value tuple ends at `tuple_end` (the document
/// id follows), its fixed fields ([`IndexAccess::fixed_fields`]) at `fixed_end`, its sort
/// fields ([`IndexAccess::sort_fields`]) at `sort_end`.
#[derive(Clone, Copy)]
struct Parts {
    tuple_end: usize,
    fixed_end: usize,
    sort_end: usize,
}

impl Parts {
    /// The document id of `key`.
    fn id(self, key: &[u8]) -> &[u8] {
        key.get(self.tuple_end..).unwrap_or_default()
    }

    /// The values of the sort fields of `key`: equal for two entries exactly when their
    /// documents tie on the sort (the fixed fields left out, as they differ between merged
    /// ranges).
    fn sort<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        key.get(self.fixed_end..self.sort_end).unwrap_or_default()
    }
}

/// Reads index entry `key` of `access`: its parts if it meets the key conditions `conds`,
/// `None` if it does not; an error if it does not decode.
fn read_entry(
    access: &IndexAccess<'_>,
    conds: &[Option<&Cond>],
    key: &[u8],
    value: &mut Vec<u8>,
) -> Result<Option<Parts>> {
    let def = &access.ix.def;
    let Some((tuple, _)) = def.split_key(key) else {
        return Err(Error::InvalidQuery {
            reason: format!(
                "index {:?} holds a key that does not decode (drop the index and create it again)",
                def.name
            ),
        });
    };
    // Test the entry's values against the key conditions, field by field.
    let mut at = 0;
    let mut fixed_end = 0;
    let mut sort_end = 0;
    for (i, &desc) in def.descending.iter().enumerate() {
        if i == access.fixed_fields {
            fixed_end = at;
        }
        if i == access.sort_fields {
            sort_end = at;
        }
        let flip = if desc { 0xff } else { 0 };
        let Some(len) = tuple.get(at..).and_then(|t| encoded_len_flipped(t, flip)) else {
            return Ok(None);
        };
        if let Some(Some(cond)) = conds.get(i) {
            value.clear();
            value.extend(
                tuple
                    .get(at..at + len)
                    .unwrap_or_default()
                    .iter()
                    .map(|b| b ^ flip),
            );
            if !super::keys::key_holds(cond, value) {
                return Ok(None);
            }
        }
        at += len;
    }
    let fields = def.descending.len();
    if access.fixed_fields >= fields {
        fixed_end = at;
    }
    if access.sort_fields >= fields {
        sort_end = at;
    }
    // Unsorted, `sort_fields` is 0: the sort values are empty (`Parts::sort`).
    Ok(Some(Parts {
        tuple_end: tuple.len(),
        fixed_end,
        sort_end,
    }))
}

/// Walks the entries of an index access, testing each against `conds` (the filter's key
/// conditions on the index's fields, `keys::key_conditions`), and calls `f` with each
/// document id once (its first entry that passes; the stored key's bytes, left to `f` to
/// read as text: a count never does) and the values of that entry's sort fields (see
/// [`Parts::sort`]); `f` returns false to stop. A sorted access over several key ranges
/// merges them by those values ([`merge_ranges`]); otherwise the ranges are read one after
/// the other. Blocks are decoded through `cache`.
pub(crate) fn index_entries(
    access: &IndexAccess<'_>,
    conds: &[Option<&Cond>],
    run: &Run,
    cache: &KeyBlockCache,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
) -> Result<()> {
    let def = &access.ix.def;
    // A document has a second entry only if a field of the index holds an array there; while
    // none has held one, each document has one entry and nothing is repeated.
    let one_entry_each = !access.ix.arrays.any(def.fields.len());
    let mut seen = SeenIds::default();
    // With arrays about, a second entry is still rare: the id is copied and inserted at once
    // (one hash) rather than looked up first.
    let mut first_time = |id: &[u8]| one_entry_each || seen.insert(id);
    if access.sorted && access.ranges.len() > 1 {
        return merge_ranges(access, conds, run, cache, &mut first_time, &mut f);
    }
    let mut value = Vec::new();
    let ranges_len = access.ranges.len();
    // The ranges in the scan's direction (by position: no boxed iterator to allocate).
    let in_order = (0..ranges_len).map(|k| {
        if access.reverse {
            ranges_len - 1 - k
        } else {
            k
        }
    });
    let mut n = 0usize;
    for range in in_order.filter_map(|k| access.ranges.get(k)) {
        let mut scan = range_scan(access, range, cache);
        while let Some(entry) = scan.next_key() {
            if n.is_multiple_of(256) {
                run.check()?;
            }
            n += 1;
            let key = entry?;
            run.keys.fetch_add(1, Ordering::Relaxed);
            let Some(parts) = read_entry(access, conds, key, &mut value)? else {
                continue;
            };
            if !first_time(parts.id(key)) {
                continue;
            }
            if !f(parts.id(key), parts.sort(key))? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The scan of one key range of `access`, in its direction.
fn range_scan<'a>(
    access: &'a IndexAccess<'_>,
    range: &'a super::plan::KeyRange,
    cache: &'a KeyBlockCache,
) -> crate::index::packed::Scan<'a> {
    let hi = range
        .hi
        .as_deref()
        .map_or(Bound::Unbounded, Bound::Excluded);
    let lo = Bound::Included(range.lo.as_slice());
    crate::index::packed::scan(&access.ix.map, lo, hi, access.reverse, Some(cache))
}

/// What [`index_entries`] hands each document to: its id and its entry's sort values;
/// false to stop.
type EntryFn<'f> = dyn FnMut(&[u8], &[u8]) -> Result<bool> + 'f;

/// [`index_entries`] of a sorted access over several key ranges (`$in` on a fixed field):
/// each range is in the sort's order after its fixed fields, so the entry with the least
/// sort values (the greatest, reversed) among the ranges' next ones comes next. Ties
/// come out in any order; the collector puts them in id order.
fn merge_ranges(
    access: &IndexAccess<'_>,
    conds: &[Option<&Cond>],
    run: &Run,
    cache: &KeyBlockCache,
    first_time: &mut dyn FnMut(&[u8]) -> bool,
    f: &mut EntryFn<'_>,
) -> Result<()> {
    let mut value = Vec::new();
    let mut n = 0usize;
    let mut scans: Vec<_> = access
        .ranges
        .iter()
        .map(|r| range_scan(access, r, cache))
        .collect();
    // The next entry of each range that meets the conditions, copied: (key, its parts).
    let mut heads: Vec<Option<(Vec<u8>, Parts)>> = Vec::with_capacity(scans.len());
    let advance = |scan: &mut crate::index::packed::Scan<'_>,
                   n: &mut usize,
                   value: &mut Vec<u8>|
     -> Result<Option<(Vec<u8>, Parts)>> {
        while let Some(entry) = scan.next_key() {
            if n.is_multiple_of(256) {
                run.check()?;
            }
            *n += 1;
            let key = entry?;
            run.keys.fetch_add(1, Ordering::Relaxed);
            if let Some(parts) = read_entry(access, conds, key, value)? {
                return Ok(Some((key.to_vec(), parts)));
            }
        }
        Ok(None)
    };
    for scan in &mut scans {
        heads.push(advance(scan, &mut n, &mut value)?);
    }
    loop {
        // The head to take: the least sort values, or the greatest for a reversed scan.
        let mut best: Option<usize> = None;
        for (i, head) in heads.iter().enumerate() {
            let Some((key, parts)) = head else { continue };
            let better = match best.and_then(|b| heads.get(b)).and_then(Option::as_ref) {
                None => true,
                Some((bkey, bparts)) => {
                    let order = parts.sort(key).cmp(bparts.sort(bkey));
                    if access.reverse {
                        order.is_gt()
                    } else {
                        order.is_lt()
                    }
                }
            };
            if better {
                best = Some(i);
            }
        }
        let Some(i) = best else {
            return Ok(());
        };
        let (Some(slot), Some(scan)) = (heads.get_mut(i), scans.get_mut(i)) else {
            return Ok(());
        };
        let taken = std::mem::replace(slot, advance(scan, &mut n, &mut value)?);
        if let Some((key, parts)) = taken
            && first_time(parts.id(&key))
            && !f(parts.id(&key), parts.sort(&key))?
        {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SeenIds;

    #[test]
    fn seen_ids_take_each_id_once() {
        let mut seen = SeenIds::default();
        let ids: Vec<String> = (0..5_000).map(|i| format!("id{i}")).collect();
        for id in &ids {
            assert!(seen.insert(id.as_bytes()), "{id}");
        }
        for id in ids.iter().rev() {
            assert!(!seen.insert(id.as_bytes()), "{id}");
        }
        // The empty id and prefixes of others are ids of their own.
        assert!(seen.insert(b""));
        assert!(!seen.insert(b""));
        assert!(seen.insert(b"id"));
        assert!(seen.insert(b"id1234x"));
    }
}
