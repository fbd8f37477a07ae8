//! Sorting a batch's records: an MSD radix sort on 8-byte digits kept in the records, LSD
//! passes and comparison sorts for the runs below it.

use super::arena::{self, Chunk, Rec};
use crate::block::common_prefix;

/// Records ahead whose keys are prefetched in passes over the arena in sorted order.
pub(crate) const PREFETCH_AHEAD: usize = 16;

/// Key bytes sorted digit by digit before falling back to comparisons.
const MAX_RADIX_DEPTH: usize = 256;

/// Sorts `recs`, whose keys share their first `depth` bytes and whose `prefix` holds key
/// bytes `depth..depth + 8`, by key and then insertion order, and sets `lcps[1..]` to the
/// common prefix lengths of neighbours (`lcps[0]` belongs to the caller).
pub(super) fn sort_level(chunks: &[Chunk], recs: &mut [Rec], lcps: &mut [u32], depth: usize) {
    if depth >= MAX_RADIX_DEPTH {
        // Keys sharing this long a prefix are rare: compare the rest directly rather than
        // recurse further (which could exhaust the stack for huge keys).
        sort_by_comparison(chunks, recs, lcps, depth);
        return;
    }
    // A key that ends within this digit sorts before longer keys with the same digit (it is
    // their prefix), and equal to keys of its own length: so lengths are capped at
    // `depth + 9`, meaning "continues past this digit".
    let cap = |r: &Rec| (r.key_len as usize).min(depth + 9) as u32;
    if recs.len() <= LSD_MIN_ENTRIES {
        recs.sort_unstable_by_key(|r| (r.prefix, cap(r), r.order()));
    } else {
        lsd_sort(recs, depth);
    }
    for i in 1..recs.len() {
        let (a, b) = (&recs[i - 1], &recs[i]);
        // Equal digits give 8 here; runs that continue past the digit are refined below.
        let digit_common = ((a.prefix ^ b.prefix).leading_zeros() / 8) as usize;
        lcps[i] = (depth + digit_common)
            .min(a.key_len as usize)
            .min(b.key_len as usize) as u32;
    }
    let mut i = 0;
    // Keys of the records ahead are prefetched up to here, for the small runs.
    let mut fetched = 0;
    while i < recs.len() {
        let (p, c) = (recs[i].prefix, cap(&recs[i]));
        let mut j = i + 1;
        while j < recs.len() && recs[j].prefix == p && cap(&recs[j]) == c {
            j += 1;
        }
        while fetched < (j + PREFETCH_AHEAD).min(recs.len()) {
            crate::prefetch::prefetch(arena::key(chunks, &recs[fetched]));
            fetched += 1;
        }
        if j - i > 1 && j - i <= SMALL_RUN && c as usize == depth + 9 {
            // Few keys share this digit: sorting them by their remaining bytes touches each
            // key once, where going on digit by digit would load it again at every level.
            sort_by_comparison(chunks, &mut recs[i..j], &mut lcps[i..j], depth + 8);
        } else if j - i > 1 && c as usize == depth + 9 {
            let run = &mut recs[i..j];
            for k in 0..run.len() {
                if let Some(ahead) = run.get(k + PREFETCH_AHEAD) {
                    crate::prefetch::prefetch(arena::key(chunks, ahead));
                }
                let r = &mut run[k];
                r.prefix = key_prefix(arena::key(chunks, r).get(depth + 8..).unwrap_or_default());
            }
            sort_level(chunks, run, &mut lcps[i..j], depth + 8);
        }
        i = j;
    }
}

/// Runs of up to this many keys sharing a digit are sorted by comparing their remaining
/// bytes rather than digit by digit.
const SMALL_RUN: usize = 16;

/// Sorts `recs`, whose keys share their first `from` bytes, by key and then insertion order,
/// comparing the keys from byte `from`, and sets `lcps[1..]` as `sort_level` does.
fn sort_by_comparison(chunks: &[Chunk], recs: &mut [Rec], lcps: &mut [u32], from: usize) {
    recs.sort_unstable_by(|a, b| {
        let ka = arena::key(chunks, a).get(from..).unwrap_or_default();
        let kb = arena::key(chunks, b).get(from..).unwrap_or_default();
        ka.cmp(kb).then(a.order().cmp(&b.order()))
    });
    for i in 1..recs.len() {
        let a = arena::key(chunks, &recs[i - 1]);
        let b = arena::key(chunks, &recs[i]);
        let lcp = from
            + common_prefix(
                a.get(from..).unwrap_or_default(),
                b.get(from..).unwrap_or_default(),
            );
        lcps[i] = lcp as u32;
    }
}

/// Above this many records a run is sorted by `lsd_sort` rather than by comparisons.
const LSD_MIN_ENTRIES: usize = 256;
/// Scratch buffers of up to this many records stay with their thread between runs.
const LSD_SCRATCH_KEEP: usize = 1 << 16;

thread_local! {
    /// Scratch space for `lsd_sort`, kept per thread so that sorting thousands of buckets
    /// does not allocate (and page-fault) a buffer for each.
    static LSD_SCRATCH: std::cell::RefCell<Vec<Rec>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sorts `recs` by `(prefix, capped length)` as `sort_level` does, with a stable LSD radix
/// sort on bytes: records must come in insertion order (as the scatter and every level leave
/// them), which stability keeps for equal keys, so the order is the same as sorting by
/// `(prefix, capped length, insertion order)`. Passes whose digit is the same for all records (such as
/// the leading bytes the scatter already split on, or the zero padding of short keys) are
/// skipped.
fn lsd_sort(recs: &mut [Rec], depth: usize) {
    // Digit 0 is the capped length relative to `depth` (0..=9), digits 1..=8 the prefix
    // bytes from least to most significant.
    let digit = |r: &Rec, d: usize| -> usize {
        if d == 0 {
            (r.key_len as usize).min(depth + 9) - depth.min(r.key_len as usize)
        } else {
            ((r.prefix >> (8 * (d - 1))) & 0xff) as usize
        }
    };
    let mut counts = [[0usize; 256]; 9];
    for r in recs.iter() {
        for (d, c) in counts.iter_mut().enumerate() {
            c[digit(r, d)] += 1;
        }
    }
    let n = recs.len();
    let passes: Vec<usize> = (0..9).filter(|&d| !counts[d].contains(&n)).collect();
    if passes.is_empty() {
        return;
    }
    LSD_SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        scratch.clear();
        scratch.resize(n, Rec::default());
        let (mut src, mut dst): (&mut [Rec], &mut [Rec]) = (recs, &mut scratch[..n]);
        let mut in_scratch = false;
        for &d in &passes {
            let mut offsets = [0usize; 256];
            let mut at = 0;
            for (o, &c) in offsets.iter_mut().zip(counts[d].iter()) {
                *o = at;
                at += c;
            }
            for r in src.iter() {
                let b = digit(r, d);
                dst[offsets[b]] = *r;
                offsets[b] += 1;
            }
            std::mem::swap(&mut src, &mut dst);
            in_scratch = !in_scratch;
        }
        if in_scratch {
            // `src` is the scratch holding the result, `dst` the caller's records.
            dst.copy_from_slice(src);
        }
        if scratch.capacity() > LSD_SCRATCH_KEEP {
            // Do not hold a large buffer in the thread after the sort.
            *scratch = Vec::new();
        }
    });
}

pub(super) fn key_prefix(key: &[u8]) -> u64 {
    crate::prefix::prefix8(key)
}
