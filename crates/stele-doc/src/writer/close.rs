//! Closing a container: its children are sorted (objects), deduplicated per policy, and its
//! header (key ids, offsets, tags, input order) is written after them, in the narrowest widths.

use super::{DocumentWriter, DuplicateKeys, Entry, Frame, KeyOrder, name_at, sort_cache};
use crate::error::{Error, Result};
use crate::format::{
    ARR_UNIFORM, OBJ_HAS_ORDER, OBJ_ORDER_BY_ID, put_uint, put_varint, width_bytes, width_code_for,
};

impl DocumentWriter {
    /// Largest distance from `header_pos` back to a child payload, for the offset width.
    fn max_offset(entries: &[Entry], header_pos: usize) -> u64 {
        entries
            .iter()
            .filter(|e| e.tag.has_payload())
            .map(|e| (header_pos - e.pos) as u64)
            .max()
            .unwrap_or(0)
    }

    fn put_offsets(out: &mut Vec<u8>, entries: &[Entry], header_pos: usize, width: usize) {
        for e in entries {
            let off = if e.tag.has_payload() {
                header_pos - e.pos
            } else {
                0
            };
            put_uint(out, off as u64, width);
        }
    }

    pub(super) fn write_array_header(&mut self, start: usize, header_pos: usize) {
        let entries = self.entries.get(start..).unwrap_or_default();
        // Not with the portable scanner: the tests' reference keeps the general path.
        if !self.opts.portable_scanner
            && let Some((header, len)) = small_array_header(entries, header_pos)
        {
            // One fixed-size copy cut to length: a copy of runtime length calls `memcpy`.
            let end = self.out.len() + len;
            self.out.extend_from_slice(&header);
            self.out.truncate(end);
            return;
        }
        let wo = width_code_for(Self::max_offset(entries, header_pos));
        let uniform = entries
            .split_first()
            .is_some_and(|(first, rest)| rest.iter().all(|e| e.tag == first.tag));
        self.out.push(wo | if uniform { ARR_UNIFORM } else { 0 });
        put_varint(&mut self.out, entries.len() as u64);
        Self::put_offsets(&mut self.out, entries, header_pos, width_bytes(wo));
        match entries.first() {
            Some(first) if uniform => self.out.push(first.tag as u8),
            _ => self.out.extend(entries.iter().map(|e| e.tag as u8)),
        }
    }

    pub(super) fn write_object_header(&mut self, frame: &Frame, header_pos: usize) -> Result<()> {
        let (start, ids_ascending) = (frame.start, frame.ids_ascending);
        let n = self.entries.len() - start;
        // The root object is the only one of its kind in its document: never cached.
        let nested = self.frames.len() > 1;
        // Every key matched the shape recorded for the first one (see `shapes`): the same key
        // ids in the same order as an object sorted earlier without repeated keys.
        let matched = n > 0 && frame.shape.len as usize == n && frame.hits as usize == n;
        // Objects of a shape seen before in this document: their sorted order is known.
        // `cached`: the order was applied; `self.shape_hash`: to remember it once sorted.
        let mut cached = false;
        self.shape_hash = None;
        if matched {
            let input = self.entries.get(start..).unwrap_or_default();
            self.sorted.clear();
            self.sorted.extend_from_slice(input);
            if let Some(dst) = self.entries.get_mut(start..) {
                for (slot, i) in dst.iter_mut().zip(self.shapes.order(frame.shape)) {
                    if let Some(e) = self.sorted.get(i as usize) {
                        *slot = *e;
                    }
                }
                cached = true;
            }
        } else if n >= sort_cache::MIN_KEYS && nested {
            self.shape_ids.clear();
            let input = self.entries.get(start..).unwrap_or_default();
            self.shape_ids.extend(input.iter().map(|e| e.key));
            let hash = self.sort_cache.hash(&self.shape_ids);
            match self.sort_cache.get(hash, &self.shape_ids) {
                Some(order) if order.len() == input.len() => {
                    // A permutation of `input` (the cache stores one per shape of this many
                    // keys): written in place through a copy, without a push per entry.
                    self.sorted.clear();
                    self.sorted.extend_from_slice(input);
                    if let Some(dst) = self.entries.get_mut(start..) {
                        for (slot, &i) in dst.iter_mut().zip(order) {
                            if let Some(e) = self.sorted.get(i as usize) {
                                *slot = *e;
                            }
                        }
                        cached = true;
                    }
                }
                Some(_) => {}
                None => self.shape_hash = Some(hash),
            }
        }
        let names = &self.names.bytes;
        let entries = self.entries.get_mut(start..).unwrap_or_default();
        if !cached && entries.len() > 1 {
            sort_by_name(entries, names);
        }
        // A cached order has no repeated keys: deduplication would keep every entry.
        let kept = match cached {
            true => n,
            false => dedup_sorted(entries, self.opts.duplicate_keys, names)?,
        };
        if let Some(hash) = self.shape_hash.take()
            && kept == n
        {
            let order = entries.iter().map(|e| e.seq);
            self.sort_cache.insert(hash, &self.shape_ids, order);
        }
        // Shapes are recorded from the second object of a first key on (see `Shapes`), in
        // nested objects, while keys are not predicted from the previous document (then they
        // are interned without hashing anyway): `hits` is above 0 only then.
        if frame.hits > 0 && !matched && kept == n {
            self.shapes
                .record(entries.iter().map(|e| (e.key, e.prefix, e.seq)));
        }
        self.entries.truncate(start + kept);
        let entries = self.entries.get(start..).unwrap_or_default();

        // Sorted order is kept for lookups; input order only if asked for and different.
        let in_order = entries.windows(2).all(|w| match w {
            [a, b] => a.seq < b.seq,
            _ => true,
        });
        let keep_order = self.opts.key_order == KeyOrder::Original && !in_order;
        // Names are interned in first-use order, so objects whose keys arrived in ascending id
        // order (all fresh keys, or the same shape as an earlier object) need no stored order.
        let by_id = keep_order && ids_ascending;
        let explicit = keep_order && !by_id;

        let wo = width_code_for(Self::max_offset(entries, header_pos));
        let max_key = entries.iter().map(|e| e.key).max().unwrap_or(0);
        let wk = width_code_for(u64::from(max_key));
        let flags = wo
            | (wk << 2)
            | if explicit { OBJ_HAS_ORDER } else { 0 }
            | if by_id { OBJ_ORDER_BY_ID } else { 0 };
        self.out.push(flags);
        put_varint(&mut self.out, entries.len() as u64);
        for e in entries {
            put_uint(&mut self.out, u64::from(e.key), width_bytes(wk));
        }
        Self::put_offsets(&mut self.out, entries, header_pos, width_bytes(wo));
        self.out.extend(entries.iter().map(|e| e.tag as u8));
        if explicit {
            // order[i] = sorted index of the i-th property in input order.
            self.order.clear();
            self.order.extend(0..entries.len() as u32);
            if kept == n {
                // Input positions are 0..n: the inverse permutation, without sorting.
                for (i, e) in entries.iter().enumerate() {
                    if let Some(slot) = self.order.get_mut(e.seq as usize) {
                        *slot = i as u32;
                    }
                }
            } else {
                self.order
                    .sort_unstable_by_key(|&i| entries.get(i as usize).map_or(0, |e| e.seq));
            }
            let wp = width_bytes(width_code_for(entries.len().saturating_sub(1) as u64));
            for &i in &self.order {
                put_uint(&mut self.out, u64::from(i), wp);
            }
        }
        Ok(())
    }
}

/// Sorts an object's entries by name, then input position (`seq`): by the 8-byte name prefix
/// (a sort by an integer key, no comparison closure reading names), then each run of entries
/// whose prefixes tie by their whole names and input positions.
fn sort_by_name(entries: &mut [Entry], names: &[u8]) {
    entries.sort_unstable_by_key(|e| e.prefix);
    // Runs of equal prefixes (names sharing their first 8 bytes): sorted by the whole name,
    // then input position (a total order: the unstable sort above leaves runs in any order).
    let mut start = 0;
    while start < entries.len() {
        let Some(prefix) = entries.get(start).map(|e| e.prefix) else {
            break;
        };
        let mut end = start + 1;
        while entries.get(end).is_some_and(|e| e.prefix == prefix) {
            end += 1;
        }
        if end - start > 1
            && let Some(run) = entries.get_mut(start..end)
        {
            run.sort_unstable_by(|a, b| {
                if a.key == b.key {
                    a.seq.cmp(&b.seq)
                } else {
                    name_at(names, a.key).cmp(name_at(names, b.key))
                }
            });
        }
        start = end;
    }
}

/// Removes repeated keys from entries sorted by (name, seq) per `policy`; returns how many remain
/// at the front. A kept entry takes the input position (`seq`) of the key's first occurrence.
fn dedup_sorted(entries: &mut [Entry], policy: DuplicateKeys, names: &[u8]) -> Result<usize> {
    let n = entries.len();
    // Nearly every object has no repeated key: one read-only pass, and no entry rewritten.
    if !entries.windows(2).any(|w| match w {
        [a, b] => a.key == b.key,
        _ => false,
    }) {
        return Ok(n);
    }
    let mut kept = 0;
    let mut i = 0;
    while i < n {
        let Some(&first) = entries.get(i) else { break };
        let mut j = i + 1;
        while entries.get(j).is_some_and(|e| e.key == first.key) {
            j += 1;
        }
        let chosen = if j - i == 1 {
            first
        } else {
            match policy {
                DuplicateKeys::Reject => {
                    return Err(Error::DuplicateKey {
                        key: String::from_utf8_lossy(name_at(names, first.key)).into_owned(),
                    });
                }
                DuplicateKeys::FirstWins => first,
                DuplicateKeys::LastWins => Entry {
                    seq: first.seq,
                    ..entries.get(j - 1).copied().unwrap_or(first)
                },
            }
        };
        if let Some(slot) = entries.get_mut(kept) {
            *slot = chosen;
        }
        kept += 1;
        i = j;
    }
    Ok(kept)
}

/// Arrays of at most this many elements may take [`small_array_header`]: its header then fits
/// 16 bytes.
const SMALL_ARRAY: usize = 7;

/// The header of a non-empty array of at most [`SMALL_ARRAY`] elements whose offsets fit one
/// byte, built in one pass in a register: `(bytes, length)`, the bytes the general path writes
/// (flags with width code 0 and the uniform bit, the count as a one-byte varint, one-byte
/// offsets, then one tag if uniform or every tag). `None` for other arrays. Most arrays are
/// short (coordinates, tags, small lists); canada.json closes 56,000 pairs. (A header built
/// byte by byte on the stack and then copied stalled on the copy's load.)
#[inline]
fn small_array_header(entries: &[Entry], header_pos: usize) -> Option<([u8; 16], usize)> {
    let n = entries.len();
    let first = entries.first()?.tag;
    if n > SMALL_ARRAY {
        return None;
    }
    let (mut offsets, mut tags, mut uniform) = (0u64, 0u64, true);
    for (i, e) in entries.iter().enumerate() {
        let distance = if e.tag.has_payload() {
            header_pos - e.pos
        } else {
            0
        };
        offsets |= u64::from(u8::try_from(distance).ok()?) << (8 * i);
        tags |= u64::from(e.tag as u8) << (8 * i);
        uniform &= e.tag == first;
    }
    let (flags, tags, tags_len) = if uniform {
        (ARR_UNIFORM, u64::from(first as u8), 1)
    } else {
        (0, tags, n)
    };
    // Width code 0 (one-byte offsets) in the flags' low bits; the count is under 128.
    let header = u128::from(flags)
        | (n as u128) << 8
        | u128::from(offsets) << 16
        | u128::from(tags) << (16 + 8 * n);
    Some((header.to_le_bytes(), 2 + n + tags_len))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use crate::format::Tag;
    use crate::writer::names::{Names, name_prefix};
    use proptest::prelude::*;

    /// Names tying on their first 8 bytes, zero bytes against a shorter name, a two-byte
    /// length, the empty name.
    const POOL: [&[u8]; 9] = [
        b"in_reply_to_status_id",
        b"in_reply_to_status_id_str",
        b"in_reply_to_user_id",
        b"ab",
        b"ab\0",
        b"ab\0\0\0\0\0\0\0",
        b"",
        b"z",
        &[b'q'; 130],
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The one-pass header of small arrays is the general path's, byte for byte: tags with
        /// and without payload, uniform or not, offsets around the one-byte limit, arrays
        /// around the size limit.
        #[test]
        fn small_array_headers_match_the_general_path(
            children in prop::collection::vec(
                (prop::sample::select(vec![Tag::Null, Tag::True, Tag::I8, Tag::String, Tag::Scaled]), 0usize..140),
                1..=SMALL_ARRAY + 2,
            ),
            first_uniform in any::<bool>(),
        ) {
            let mut headers = Vec::new();
            for portable in [false, true] {
                let mut w = DocumentWriter::with_options(
                    crate::WriteOptions::default().portable_scanner(portable),
                );
                w.out = vec![0; 1];
                w.entries.clear();
                for (i, &(tag, len)) in children.iter().enumerate() {
                    let tag = if first_uniform { children[0].0 } else { tag };
                    let pos = w.out.len();
                    w.out.resize(pos + len, 0);
                    let pos = if tag.has_payload() { pos } else { 0 };
                    w.entries.push(Entry { pos, key: 0, seq: i as u32, tag, prefix: 0 });
                }
                let header_pos = w.out.len();
                w.write_array_header(0, header_pos);
                headers.push(w.out.split_off(header_pos));
            }
            prop_assert_eq!(&headers[0], &headers[1]);
        }


        /// The integer-key sort with tie runs gives the order of a comparison sort by (name,
        /// input position), repeated keys included.
        #[test]
        fn sort_by_name_matches_a_comparison_sort(picks in prop::collection::vec(0..POOL.len(), 0..40)) {
            let mut names = Names::new();
            names.clear();
            let mut entries: Vec<Entry> = picks
                .iter()
                .enumerate()
                .map(|(i, &p)| {
                    let prefix = name_prefix(POOL[p]);
                    Entry {
                        pos: i,
                        key: names.intern(POOL[p], prefix).unwrap(),
                        seq: i as u32,
                        tag: Tag::Null,
                        prefix,
                    }
                })
                .collect();
            let mut want = entries.clone();
            want.sort_by(|a, b| {
                name_at(&names.bytes, a.key)
                    .cmp(name_at(&names.bytes, b.key))
                    .then(a.seq.cmp(&b.seq))
            });
            sort_by_name(&mut entries, &names.bytes);
            let got: Vec<u32> = entries.iter().map(|e| e.seq).collect();
            let want: Vec<u32> = want.iter().map(|e| e.seq).collect();
            prop_assert_eq!(got, want);
        }
    }
}
