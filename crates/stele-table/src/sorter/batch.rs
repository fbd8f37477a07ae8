//! The in-memory batch: pairs in an arena, sorted by a parallel MSD radix pass on the first
//! two key bytes followed by comparison sorts of the buckets.

use crate::builder::DuplicatePolicy;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::cmp::Ordering;

/// Arena chunk size: big enough that chunk switches are rare, small enough that the last,
/// partly used chunk wastes little of the budget.
const CHUNK_BYTES: usize = 4 << 20;
/// Below this many entries a plain sort beats the radix pass.
const RADIX_MIN_ENTRIES: usize = 1 << 16;

/// One pair: the first 8 key bytes (big-endian, so integer order is byte order), where the
/// key and value are, and their lengths.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rec {
    prefix: u64,
    /// Chunk number in the high 32 bits, offset in the chunk in the low 32: also the
    /// insertion order, which breaks ties between equal keys.
    loc: u64,
    key_len: u32,
    value_len: u32,
}

#[derive(Debug)]
pub(crate) struct Batch {
    chunk_bytes: usize,
    chunks: Vec<Vec<u8>>,
    recs: Vec<Rec>,
    arena_bytes: usize,
}

fn key_prefix(key: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let n = key.len().min(8);
    p[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(p)
}

impl Batch {
    /// A batch whose arena grows in chunks of about 1/16 of the budget (4 KiB to 4 MiB).
    pub(crate) fn new(budget_bytes: usize) -> Self {
        Batch {
            chunk_bytes: (budget_bytes / 16).clamp(4 << 10, CHUNK_BYTES),
            chunks: Vec::new(),
            recs: Vec::new(),
            arena_bytes: 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Memory held, as counted against the budget.
    pub(crate) fn memory_bytes(&self) -> usize {
        // The scatter copy needs one more record per entry while sorting.
        self.arena_bytes + (self.recs.capacity() + self.recs.len()) * std::mem::size_of::<Rec>()
    }

    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        let need = key.len() + value.len();
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= need);
        if !fits {
            let cap = need.max(self.chunk_bytes);
            self.chunks.push(Vec::with_capacity(cap));
            self.arena_bytes += cap;
        }
        let chunk_no = self.chunks.len() - 1;
        let chunk = &mut self.chunks[chunk_no];
        let offset = chunk.len();
        chunk.extend_from_slice(key);
        chunk.extend_from_slice(value);
        self.recs.push(Rec {
            prefix: key_prefix(key),
            loc: ((chunk_no as u64) << 32) | offset as u64,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
        });
    }

    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.recs.clear();
        self.arena_bytes = 0;
    }

    fn key<'a>(chunks: &'a [Vec<u8>], r: &Rec) -> &'a [u8] {
        let chunk = &chunks[(r.loc >> 32) as usize];
        let off = (r.loc & 0xffff_ffff) as usize;
        &chunk[off..off + r.key_len as usize]
    }

    fn value<'a>(chunks: &'a [Vec<u8>], r: &Rec) -> &'a [u8] {
        let chunk = &chunks[(r.loc >> 32) as usize];
        let off = (r.loc & 0xffff_ffff) as usize + r.key_len as usize;
        &chunk[off..off + r.value_len as usize]
    }

    fn cmp(chunks: &[Vec<u8>], a: &Rec, b: &Rec) -> Ordering {
        a.prefix
            .cmp(&b.prefix)
            .then_with(|| Self::key(chunks, a).cmp(Self::key(chunks, b)))
            .then(a.loc.cmp(&b.loc))
    }

    /// Sorts by key, equal keys in insertion order, using the rayon thread pool.
    pub(crate) fn sort(&mut self) {
        let chunks = &self.chunks;
        let n = self.recs.len();
        if n < RADIX_MIN_ENTRIES {
            self.recs
                .par_sort_unstable_by(|a, b| Self::cmp(chunks, a, b));
            return;
        }
        // MSD radix pass on the top 16 bits: a histogram, a scatter into 65536 buckets, then
        // independent comparison sorts of the buckets in parallel. It replaces the top
        // levels of a comparison sort (the slowest ones, full of cache misses) by two
        // sequential passes, and gives rayon many independent pieces of work.
        let mut counts = vec![0usize; 1 << 16];
        for r in &self.recs {
            counts[(r.prefix >> 48) as usize] += 1;
        }
        let mut next = Vec::with_capacity(counts.len());
        let mut sum = 0;
        for &c in &counts {
            next.push(sum);
            sum += c;
        }
        let mut out = vec![Rec::default(); n];
        for r in &self.recs {
            let slot = &mut next[(r.prefix >> 48) as usize];
            out[*slot] = *r;
            *slot += 1;
        }
        let mut buckets: Vec<&mut [Rec]> = Vec::new();
        let mut rest = out.as_mut_slice();
        for &c in &counts {
            if c > 0 {
                let (bucket, tail) = rest.split_at_mut(c);
                buckets.push(bucket);
                rest = tail;
            }
        }
        let big = n / 8;
        buckets.par_iter_mut().for_each(|bucket| {
            if bucket.len() > big {
                bucket.par_sort_unstable_by(|a, b| Self::cmp(chunks, a, b));
            } else {
                bucket.sort_unstable_by(|a, b| Self::cmp(chunks, a, b));
            }
        });
        self.recs = out;
    }

    /// Calls `f` for each distinct key of the sorted batch, resolving duplicates.
    pub(crate) fn for_each_unique(
        &self,
        policy: DuplicatePolicy,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let chunks = &self.chunks;
        let mut i = 0;
        let n = self.recs.len();
        while i < n {
            let first = &self.recs[i];
            let key = Self::key(chunks, first);
            let mut j = i + 1;
            while j < n {
                let r = &self.recs[j];
                if r.prefix != first.prefix || Self::key(chunks, r) != key {
                    break;
                }
                j += 1;
            }
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
