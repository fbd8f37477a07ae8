//! The in-memory batch: pairs in an arena ([`super::arena`]), sorted by a parallel MSD
//! radix pass on the first two key bytes followed by the sorts of [`super::radix`] on the
//! buckets.

use super::arena::{self, CHUNK_BYTES, Chunk, ChunkSupply, Rec};
use super::radix::{PREFETCH_AHEAD, key_prefix, sort_level};
use crate::block::common_prefix;
use crate::builder::DuplicatePolicy;
use crate::error::{Error, Result};
use crate::memory::{HUGE_PAGE_BYTES, advise_huge_pages};
use rayon::prelude::*;

/// Below this many entries a plain sort beats the radix pass.
const RADIX_MIN_ENTRIES: usize = 1 << 16;

#[derive(Debug)]
pub(crate) struct Batch {
    chunk_bytes: usize,
    /// Started when a batch of huge-page-sized chunks (budgets of 32 MiB and more) needs
    /// its second chunk: sorts smaller than one chunk never start the thread.
    supply: Option<ChunkSupply>,
    chunks: Vec<Chunk>,
    /// Chunks of `chunk_bytes` of batches spilled before, emptied, taken before any new
    /// chunk: a sort that spills many batches maps, faults in and zeroes its arena once
    /// instead of once per batch (`clear_page_erms` of fresh chunks was 4 % of the CPU of
    /// a 4.5M-record import that spilled 348 MB, `docs/notes/2026-12-02-id-field-import.md`
    /// in the `stele` crate's repository). Counted in [`Batch::memory_bytes`]: a batch
    /// filling up takes them one by one, so what is held stays what the last batch held
    /// until this one holds more.
    spare: Vec<Chunk>,
    recs: Vec<Rec>,
    /// After `sort`: `lcps[i]` is the common prefix length of keys `i - 1` and `i`
    /// (`lcps[0]` is 0), computed from the radix digits without touching the arena.
    lcps: Vec<u32>,
    /// True while every key added was `>=` the one before: then `lcps` is kept up to date
    /// by `push` and `sort` has nothing to do (input that arrives sorted is not re-sorted).
    presorted: bool,
    arena_bytes: usize,
}

impl Batch {
    /// A batch whose arena grows in chunks of about 1/16 of the budget (4 KiB to 4 MiB).
    pub(crate) fn new(budget_bytes: usize) -> Self {
        Batch {
            chunk_bytes: (budget_bytes / 16).clamp(4 << 10, CHUNK_BYTES),
            supply: None,
            chunks: Vec::new(),
            spare: Vec::new(),
            recs: Vec::new(),
            lcps: Vec::new(),
            presorted: true,
            arena_bytes: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }

    /// Key of the `i`-th record (in sorted order after `sort`).
    #[inline]
    pub(crate) fn key_at(&self, i: usize) -> &[u8] {
        arena::key(&self.chunks, &self.recs[i])
    }

    /// Value of the `i`-th record.
    #[inline]
    pub(crate) fn value_at(&self, i: usize) -> &[u8] {
        arena::value(&self.chunks, &self.recs[i])
    }

    /// Starts loading the key of the `i`-th record into the cache (if `i` exists).
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(r) = self.recs.get(i) {
            crate::prefetch::prefetch(arena::key(&self.chunks, r));
        }
    }

    /// Common prefix length of keys `i - 1` and `i` (0 for `i == 0`), after `sort`.
    #[inline]
    pub(crate) fn lcp_at(&self, i: usize) -> usize {
        self.lcps.get(i).map_or(0, |&l| l as usize)
    }

    /// True if key `i` equals key `i - 1` (after `sort`), without touching the arena.
    #[inline]
    pub(crate) fn same_as_previous(&self, i: usize) -> bool {
        i > 0 && {
            let l = self.lcp_at(i);
            l == self.recs[i].key_len as usize && l == self.recs[i - 1].key_len as usize
        }
    }

    /// Key and value lengths of the `i`-th record, without touching the arena.
    #[inline]
    pub(crate) fn lens_at(&self, i: usize) -> (usize, usize) {
        let r = &self.recs[i];
        (r.key_len as usize, r.value_len as usize)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Memory held, as counted against the budget.
    pub(crate) fn memory_bytes(&self) -> usize {
        // The scatter copy needs one more record per entry while sorting, and the common
        // prefix lengths 4 bytes.
        let ready_chunk_bytes = if self.supply.is_some() {
            self.chunk_bytes
        } else {
            0
        };
        self.arena_bytes
            + self.spare.len() * self.chunk_bytes
            + ready_chunk_bytes
            + (self.recs.capacity() + self.recs.len()) * std::mem::size_of::<Rec>()
            + self.recs.len() * 4
    }

    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.presorted {
            self.track_order(key);
        }
        let need = key.len() + value.len();
        let fits = self.chunks.last().is_some_and(|c| c.spare_bytes() >= need);
        if !fits {
            let chunk = if need > self.chunk_bytes {
                None
            } else if let Some(spare) = self.spare.pop() {
                Some(Ok(spare))
            } else {
                self.supply.as_ref().and_then(ChunkSupply::take)
            };
            let chunk = match chunk {
                Some(chunk) => chunk?,
                None => Chunk::new(need.max(self.chunk_bytes))?,
            };
            if self.supply.is_none()
                && !self.chunks.is_empty()
                && self.chunk_bytes >= HUGE_PAGE_BYTES
            {
                self.supply = ChunkSupply::start(self.chunk_bytes);
            }
            self.arena_bytes += chunk.map.len();
            self.chunks.push(chunk);
        }
        let chunk_no = self.chunks.len() - 1;
        let chunk = &mut self.chunks[chunk_no];
        let offset = chunk.len;
        chunk.append(key);
        chunk.append(value);
        self.recs.push(Rec {
            prefix: key_prefix(key),
            loc: ((chunk_no as u64) << 32) | offset as u64,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
        });
        Ok(())
    }

    pub(crate) fn clear(&mut self) {
        // Chunks of the usual size are kept for the next batch; bigger ones (made for one
        // large pair) are freed.
        let chunk_bytes = self.chunk_bytes;
        for mut chunk in self.chunks.drain(..) {
            if chunk.map.len() == chunk_bytes {
                chunk.len = 0;
                self.spare.push(chunk);
            }
        }
        self.recs.clear();
        self.lcps = Vec::new();
        self.presorted = true;
        self.arena_bytes = 0;
    }

    /// Checks that `key` (about to be pushed) is `>=` the last key and records their common
    /// prefix length; on the first key out of order, stops tracking (one comparison per key
    /// for sorted input, almost nothing for shuffled input).
    fn track_order(&mut self, key: &[u8]) {
        let Some(prev) = self.recs.last() else {
            self.lcps.push(0);
            return;
        };
        let prev = arena::key(&self.chunks, prev);
        let lcp = common_prefix(prev, key);
        let in_order = match (prev.get(lcp), key.get(lcp)) {
            (Some(a), Some(b)) => a < b,
            // `prev` is a prefix of `key`, or they are equal (duplicates keep their order).
            (None, _) => true,
            (Some(_), None) => false,
        };
        if in_order {
            self.lcps.push(lcp as u32);
        } else {
            self.presorted = false;
            self.lcps = Vec::new();
        }
    }

    /// Sorts by key, equal keys in insertion order, using the rayon thread pool (nothing to
    /// do if the keys were added in order).
    ///
    /// An MSD radix sort with 8-byte digits that keeps the digit in the record: records are
    /// compared as integers `(digit, capped length, insertion order)` without touching the
    /// arena, and only runs of records sharing a whole digit load their next 8 key bytes
    /// (one arena access per record per level, instead of one per comparison, which is what
    /// made a plain comparison sort slow: each is a cache miss). The first level starts
    /// with a scatter into 65536 buckets on the top 16 bits, which rayon sorts in parallel.
    pub(crate) fn sort(&mut self) {
        if self.presorted && self.lcps.len() == self.recs.len() {
            return;
        }
        self.presorted = false;
        let chunks = &self.chunks;
        let n = self.recs.len();
        let mut lcps = vec![0u32; n];
        if n < RADIX_MIN_ENTRIES {
            sort_level(chunks, &mut self.recs, &mut lcps, 0);
            self.lcps = lcps;
            return;
        }
        // Parallel scatter: each piece of the input counts its own histogram and copies its
        // records into its own sub-slice of every bucket (pieces in input order, so equal
        // digits keep their order, which the sort does not rely on anyway).
        let pieces = rayon::current_num_threads().clamp(1, 8);
        let piece_len = n.div_ceil(pieces);
        let histograms: Vec<Vec<usize>> = self
            .recs
            .par_chunks(piece_len)
            .map(|piece| {
                let mut h = vec![0usize; 1 << 16];
                for r in piece {
                    h[(r.prefix >> 48) as usize] += 1;
                }
                h
            })
            .collect();
        let counts: Vec<usize> = (0..1usize << 16)
            .map(|b| histograms.iter().map(|h| h[b]).sum())
            .collect();
        // Written at random places by the scatter: huge pages spare most TLB misses.
        let mut out = Vec::with_capacity(n);
        advise_huge_pages(&mut out);
        out.resize(n, Rec::default());
        {
            // Cut `out` into (bucket, piece) slices, then hand each piece its 65536 slices.
            let mut per_piece: Vec<Vec<&mut [Rec]>> = (0..histograms.len())
                .map(|_| Vec::with_capacity(1 << 16))
                .collect();
            let mut rest = out.as_mut_slice();
            for b in 0..1usize << 16 {
                for (p, h) in histograms.iter().enumerate() {
                    let (slice, tail) = rest.split_at_mut(h[b]);
                    per_piece[p].push(slice);
                    rest = tail;
                }
            }
            self.recs
                .par_chunks(piece_len)
                .zip(per_piece.into_par_iter())
                .for_each(|(piece, mut slots)| {
                    let mut fill = vec![0usize; 1 << 16];
                    for r in piece {
                        let b = (r.prefix >> 48) as usize;
                        slots[b][fill[b]] = *r;
                        fill[b] += 1;
                    }
                });
        }
        // Free the unsorted copy before the recursion allocates nothing more.
        self.recs = Vec::new();
        let mut buckets: Vec<(&mut [Rec], &mut [u32])> = Vec::new();
        let mut starts: Vec<(usize, u16)> = Vec::new();
        let (mut rest, mut rest_lcps) = (out.as_mut_slice(), lcps.as_mut_slice());
        let mut at = 0;
        for (id, &c) in counts.iter().enumerate() {
            if c > 0 {
                let (bucket, tail) = rest.split_at_mut(c);
                let (bucket_lcps, lcp_tail) = rest_lcps.split_at_mut(c);
                buckets.push((bucket, bucket_lcps));
                starts.push((at, id as u16));
                (rest, rest_lcps) = (tail, lcp_tail);
                at += c;
            }
        }
        buckets
            .into_par_iter()
            .with_max_len(1)
            .for_each(|(bucket, bucket_lcps)| sort_level(chunks, bucket, bucket_lcps, 0));
        // Neighbours across buckets differ in their first two bytes: they share 0 or 1 byte.
        for w in starts.windows(2) {
            let [(_, prev_id), (start, id)] = [w[0], w[1]];
            let common = ((prev_id ^ id).leading_zeros() / 8) as usize;
            let (a, b) = (&out[start - 1], &out[start]);
            lcps[start] = common.min(a.key_len as usize).min(b.key_len as usize) as u32;
        }
        self.recs = out;
        self.lcps = lcps;
    }

    /// Calls `f` for each distinct key of part of the sorted batch, resolving duplicates.
    /// `pieces + 1` positions cutting the sorted batch into about equal parts, never
    /// between equal keys (after `sort`).
    pub(crate) fn cuts(&self, pieces: usize) -> Vec<usize> {
        let n = self.recs.len();
        let mut cuts: Vec<usize> = (0..pieces).map(|p| p * n / pieces).collect();
        for c in cuts.iter_mut().skip(1) {
            while *c < n && self.same_as_previous(*c) {
                *c += 1;
            }
        }
        cuts.push(n);
        cuts.dedup();
        cuts
    }

    /// `for_each_unique` over records `start..end` (cut by `cuts`).
    pub(crate) fn for_each_unique_in(
        &self,
        start: usize,
        end: usize,
        policy: DuplicatePolicy,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let chunks = &self.chunks;
        let mut i = start;
        let n = end.min(self.recs.len());
        while i < n {
            // Equal keys are found from the sort's common prefix lengths; the arena is read
            // only for the pair written, prefetched ahead since its order is random.
            let mut j = i + 1;
            while j < n && self.same_as_previous(j) {
                j += 1;
            }
            self.prefetch(j + PREFETCH_AHEAD);
            let first = &self.recs[i];
            let key = arena::key(chunks, first);
            let chosen = match policy {
                DuplicatePolicy::Reject if j - i > 1 => {
                    return Err(Error::DuplicateKey { key: key.to_vec() });
                }
                DuplicatePolicy::KeepLast => &self.recs[j - 1],
                _ => first,
            };
            f(key, arena::value(chunks, chosen))?;
            i = j;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys with long shared prefixes, prefix keys, zero bytes and duplicates, in insertion
    /// order `0..n` (the value): the sort must give key order, ties in insertion order, and
    /// exact common prefix lengths, on both the radix and the small path.
    #[test]
    fn sort_matches_a_stable_comparison_sort() {
        for n in [3_000usize, 90_000] {
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut batch = Batch::new(1 << 30);
            let mut want = Vec::new();
            for i in 0..n as u64 {
                let r = next();
                let stem: &[u8] = match r % 4 {
                    0 => b"@types/react",
                    1 => b"@types/re",
                    2 => b"ab\0\0\0\0\0\0\0",
                    _ => b"",
                };
                let mut key = stem[..(r >> 8) as usize % (stem.len() + 1)].to_vec();
                for _ in 0..(r >> 16) % 20 {
                    key.push(b"ab\0/"[(next() % 4) as usize]);
                }
                batch.push(&key, &i.to_le_bytes()).unwrap();
                want.push((key, i));
            }
            want.sort();
            batch.sort();
            assert_eq!(batch.len(), n);
            for (i, (key, at)) in want.iter().enumerate() {
                assert_eq!(batch.key_at(i), &key[..]);
                assert_eq!(batch.value_at(i), &at.to_le_bytes()[..]);
                let lcp = if i == 0 {
                    0
                } else {
                    common_prefix(&want[i - 1].0, key)
                };
                assert_eq!(batch.lcp_at(i), lcp, "record {i} of {n}");
            }
        }
    }

    /// Pairs of an empty key and an empty value take no arena bytes, so the pair after one
    /// starts at the same place: the sort must still keep duplicates in insertion order,
    /// on the comparison path (few records), the LSD path and the radix path.
    #[test]
    fn empty_pairs_keep_their_insertion_order() {
        for n in [2usize, 40, 300, RADIX_MIN_ENTRIES + 5] {
            let mut batch = Batch::new(1 << 30);
            // An out-of-order key first, so that the batch is sorted; then the empty key
            // with an empty value, then with values, each followed by empty pairs.
            batch.push(b"z", b"").unwrap();
            batch.push(b"", b"").unwrap();
            for i in 0..n as u32 {
                batch.push(b"", &i.to_le_bytes()).unwrap();
                batch.push(b"", b"").unwrap();
            }
            batch.sort();
            for policy in [DuplicatePolicy::KeepFirst, DuplicatePolicy::KeepLast] {
                let mut kept = None;
                batch
                    .for_each_unique_in(0, batch.len(), policy, |k, v| {
                        if k.is_empty() {
                            kept = Some(v.to_vec());
                        }
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(kept, Some(Vec::new()), "{n} pairs, {policy:?}");
            }
            // Without the empty pairs between them, the values keep their order too.
            let mut values = Vec::new();
            for i in 0..batch.len() {
                if batch.key_at(i).is_empty() && !batch.value_at(i).is_empty() {
                    values.push(batch.value_at(i).to_vec());
                }
            }
            let want: Vec<Vec<u8>> = (0..n as u32).map(|i| i.to_le_bytes().to_vec()).collect();
            assert_eq!(values, want, "{n} pairs");
        }
    }
}
