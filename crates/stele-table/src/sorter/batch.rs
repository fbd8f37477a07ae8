//! The in-memory batch: pairs in an arena, sorted by a parallel MSD radix pass on the first
//! two key bytes followed by comparison sorts of the buckets.

use crate::block::common_prefix;
use crate::builder::DuplicatePolicy;
use crate::error::{Error, Result};
use crate::memory::{HUGE_PAGE_BYTES, advise_huge_pages};
use memmap2::{Advice, MmapMut};
use rayon::prelude::*;

/// Arena chunk size: big enough that chunk switches are rare, small enough that the last,
/// partly used chunk wastes little of the budget.
const CHUNK_BYTES: usize = 4 << 20;
/// Page size assumed when touching fresh memory (a smaller real page only leaves some
/// pages to be faulted in later).
const PAGE_BYTES: usize = 4096;
/// Records ahead whose keys are prefetched in passes over the arena in sorted order.
pub(crate) const PREFETCH_AHEAD: usize = 16;
/// Key bytes sorted digit by digit before falling back to comparisons.
const MAX_RADIX_DEPTH: usize = 256;
/// Below this many entries a plain sort beats the radix pass.
const RADIX_MIN_ENTRIES: usize = 1 << 16;

/// One pair: the first 8 key bytes (big-endian, so integer order is byte order), where the
/// key and value are, and their lengths.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rec {
    prefix: u64,
    /// Chunk number in the high 32 bits, offset in the chunk in the low 32. With the
    /// length, also the insertion order, which breaks ties between equal keys (see
    /// [`Rec::order`]).
    loc: u64,
    key_len: u32,
    value_len: u32,
}

impl Rec {
    /// The insertion order of records, as a sort key. `loc` alone is not unique: a pair
    /// with an empty key and an empty value takes no arena bytes, so the next pair starts
    /// at the same place. All the pairs at one `loc` but the last are such empty pairs
    /// (each later one starts where they did), so among them the lengths order them as
    /// they came: the empty pairs (identical, in any order) before the one that has bytes.
    /// Comparing `loc` alone let a sort put an empty value after a later duplicate of its
    /// empty key, and `KeepFirst` then kept the later value.
    fn order(&self) -> (u64, u64) {
        (
            self.loc,
            u64::from(self.key_len) + u64::from(self.value_len),
        )
    }
}

/// One arena chunk: an anonymous map and how much of it is used. A map rather than a
/// vector so that the kernel places it on a 2 MiB boundary (for lengths that are multiples
/// of 2 MiB) and backs it with huge pages, and so that freeing it returns the memory.
#[derive(Debug)]
struct Chunk {
    map: MmapMut,
    len: usize,
}

impl Chunk {
    fn new(bytes: usize) -> Result<Self> {
        let map =
            MmapMut::map_anon(bytes).map_err(|e| Error::io("allocating sort memory", "", e))?;
        if bytes >= HUGE_PAGE_BYTES {
            // Only a hint: without huge pages the sort is slower, not wrong.
            let _ = map.advise(Advice::HugePage);
        }
        Ok(Chunk { map, len: 0 })
    }

    fn spare_bytes(&self) -> usize {
        self.map.len() - self.len
    }

    /// Writes one byte of every page, so that the kernel faults in (and zeroes) the whole
    /// chunk now rather than while pairs are copied into it.
    fn touch(&mut self) {
        for b in self.map.iter_mut().step_by(PAGE_BYTES) {
            *b = 0;
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(dst) = self.map.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
        }
    }
}

impl std::ops::Deref for Chunk {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.map.get(..self.len).unwrap_or_default()
    }
}

/// Arena chunks made ready on a thread of their own: mapped, advised and with every page
/// touched. Why: faulting in and zeroing fresh memory was about a tenth of the CPU time of
/// an in-memory build (`perf` on 14M pairs: `clear_page_erms` under the arena copies), all
/// of it on the thread that adds pairs, one at a time, while the other cores wait for the
/// sort. One chunk is kept ready (a rendezvous channel: the thread makes the next chunk only
/// once the previous one is taken); it is counted in the batch's memory.
#[derive(Debug)]
struct ChunkSupply {
    /// In a mutex only so that a batch stays `Sync` (sorting shares it between threads);
    /// only the adding thread takes chunks, once per chunk.
    ready: std::sync::Mutex<std::sync::mpsc::Receiver<Result<Chunk>>>,
}

impl ChunkSupply {
    /// Starts the thread; `None` if it cannot be started (chunks are then made in line).
    fn start(chunk_bytes: usize) -> Option<Self> {
        let (tx, ready) = std::sync::mpsc::sync_channel(0);
        std::thread::Builder::new()
            .name("stele-sort-arena".into())
            .spawn(move || {
                loop {
                    let chunk = Chunk::new(chunk_bytes).map(|mut c| {
                        c.touch();
                        c
                    });
                    // Fails once the batch is gone: the thread ends, freeing its chunk.
                    if tx.send(chunk).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(ChunkSupply {
            ready: std::sync::Mutex::new(ready),
        })
    }

    fn take(&self) -> Option<Result<Chunk>> {
        self.ready.lock().ok()?.recv().ok()
    }
}

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

/// Sorts `recs`, whose keys share their first `depth` bytes and whose `prefix` holds key
/// bytes `depth..depth + 8`, by key and then insertion order, and sets `lcps[1..]` to the
/// common prefix lengths of neighbours (`lcps[0]` belongs to the caller).
fn sort_level(chunks: &[Chunk], recs: &mut [Rec], lcps: &mut [u32], depth: usize) {
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
            crate::prefetch::prefetch(Batch::key(chunks, &recs[fetched]));
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
                    crate::prefetch::prefetch(Batch::key(chunks, ahead));
                }
                let r = &mut run[k];
                r.prefix = key_prefix(Batch::key(chunks, r).get(depth + 8..).unwrap_or_default());
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
        let ka = Batch::key(chunks, a).get(from..).unwrap_or_default();
        let kb = Batch::key(chunks, b).get(from..).unwrap_or_default();
        ka.cmp(kb).then(a.order().cmp(&b.order()))
    });
    for i in 1..recs.len() {
        let a = Batch::key(chunks, &recs[i - 1]);
        let b = Batch::key(chunks, &recs[i]);
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

fn key_prefix(key: &[u8]) -> u64 {
    crate::prefix::prefix8(key)
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
        Self::key(&self.chunks, &self.recs[i])
    }

    /// Value of the `i`-th record.
    #[inline]
    pub(crate) fn value_at(&self, i: usize) -> &[u8] {
        Self::value(&self.chunks, &self.recs[i])
    }

    /// Starts loading the key of the `i`-th record into the cache (if `i` exists).
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(r) = self.recs.get(i) {
            crate::prefetch::prefetch(Self::key(&self.chunks, r));
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
        let prev = Self::key(&self.chunks, prev);
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

    fn key<'a>(chunks: &'a [Chunk], r: &Rec) -> &'a [u8] {
        let chunk = &chunks[(r.loc >> 32) as usize];
        let off = (r.loc & 0xffff_ffff) as usize;
        &chunk[off..off + r.key_len as usize]
    }

    fn value<'a>(chunks: &'a [Chunk], r: &Rec) -> &'a [u8] {
        let chunk = &chunks[(r.loc >> 32) as usize];
        let off = (r.loc & 0xffff_ffff) as usize + r.key_len as usize;
        &chunk[off..off + r.value_len as usize]
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
            let key = Self::key(chunks, first);
            let chosen = match policy {
                DuplicatePolicy::Reject if j - i > 1 => {
                    return Err(Error::DuplicateKey { key: key.to_vec() });
                }
                DuplicatePolicy::KeepLast => &self.recs[j - 1],
                _ => first,
            };
            f(key, Self::value(chunks, chosen))?;
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
