//! Parallel merge of sorted runs.
//!
//! The key space is cut into ranges at keys sampled from the runs, so each range holds
//! about the same number of bytes; rayon threads merge several ranges at once (each a
//! small k-way merge reading every run from the range's start), and one more thread feeds
//! the merged ranges, in order, to the table builder. No single thread merges everything
//! through one heap, and memory stays bounded: ranges are sized from the budget and only a
//! few are in flight.

use super::pipeline::produce_in_order;
use super::run::{MAX_READ_BUFFER_BYTES, MIN_IO_BUFFER_BYTES, Run, RunReader, SAMPLE_EVERY_BYTES};
use crate::builder::{DuplicatePolicy, WRITE_BUFFER_BYTES};
use crate::error::{Error, Result};
use crate::varint;

const MIN_RANGE_BYTES: u64 = 1 << 20;

/// `lo <= key < hi`; `None` is unbounded.
type KeyRange<'k> = (Option<&'k [u8]>, Option<&'k [u8]>);

/// How the memory budget is shared out while merging.
#[derive(Debug, Clone, Copy)]
struct MergePlan {
    /// Read buffer of each run reader (each merging range reads every run).
    read_buffer_bytes: usize,
    /// Merged bytes a range should hold: `2 * threads + 1` such buffers are alive at once
    /// (`threads` being merged, `threads` queued for the table writer, one being written).
    range_bytes: u64,
}

impl MergePlan {
    fn new(budget_bytes: usize, threads: usize, runs: usize, total_bytes: u64) -> Self {
        let readers = threads * runs.max(1);
        // Readers get at most an eighth of the budget: buffers beyond a few hundred KiB
        // save few system calls.
        let read_buffer_bytes =
            (budget_bytes / 8 / readers).clamp(MIN_IO_BUFFER_BYTES, MAX_READ_BUFFER_BYTES);
        // The table writer's buffer (it may hold up to twice its nominal size between
        // aligned writes) and its index, which grows to about 1/256 of the table and
        // doubles as a vector does.
        let writer_bytes = 2 * WRITE_BUFFER_BYTES as u64 + total_bytes / 128;
        let fixed_bytes = (readers * read_buffer_bytes) as u64 + writer_bytes;
        let in_flight = 2 * threads as u64 + 1;
        let range_bytes =
            ((budget_bytes as u64).saturating_sub(fixed_bytes) / in_flight).max(MIN_RANGE_BYTES);
        MergePlan {
            read_buffer_bytes,
            range_bytes,
        }
    }
}

/// Offset in `run` from which to read to see every key `>= lo`: the last sample below it.
fn start_offset(run: &Run, lo: Option<&[u8]>) -> u64 {
    let Some(lo) = lo else { return 0 };
    let i = run.samples.partition_point(|(k, _)| k.as_slice() < lo);
    i.checked_sub(1)
        .and_then(|i| run.samples.get(i))
        .map_or(0, |(_, off)| *off)
}

/// An upper bound of the merged bytes of `lo <= key < hi`: in each run, the bytes from
/// `start_offset` to the first sample at or above `hi` (whose entry and all after it are
/// `>= hi`). Merged entries are framed as in runs, so they take no more.
fn range_bound_bytes(runs: &[Run], lo: Option<&[u8]>, hi: Option<&[u8]>) -> u64 {
    runs.iter()
        .map(|run| {
            let end = hi.map_or(run.bytes, |hi| {
                let i = run.samples.partition_point(|(k, _)| k.as_slice() < hi);
                run.samples.get(i).map_or(run.bytes, |(_, off)| *off)
            });
            end.saturating_sub(start_offset(run, lo))
        })
        .sum()
}

/// A receiver of merged pairs, in key order (a table builder's `add`, or a caller's own).
pub(crate) type Sink<'s> = super::SortedSink<'s>;

/// Merges `runs` (in insertion order: later runs hold later additions) into `sink`,
/// keeping the readers' buffers, the merged ranges in flight and the table writer within
/// about `budget_bytes`.
pub(crate) fn merge_runs(
    runs: &[Run],
    policy: DuplicatePolicy,
    budget_bytes: usize,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let threads = rayon::current_num_threads().max(1);
    let total_bytes: u64 = runs.iter().map(|r| r.bytes).sum();
    let plan = MergePlan::new(budget_bytes, threads, runs.len(), total_bytes);
    // A range's bytes can exceed its share of samples by up to a sample interval at each
    // end in every run: aim below `range_bytes` by that much.
    let edge_bytes = 2 * SAMPLE_EVERY_BYTES * runs.len() as u64;
    let range_bytes = plan
        .range_bytes
        .saturating_sub(edge_bytes)
        .max(MIN_RANGE_BYTES);
    let mut samples: Vec<&[u8]> = runs
        .iter()
        .flat_map(|r| r.samples.iter().map(|(k, _)| k.as_slice()))
        .collect();
    samples.sort_unstable();
    samples.dedup();
    let wanted = total_bytes.div_ceil(range_bytes).max(2 * threads as u64) as usize;
    let ranges = wanted.min(samples.len()).max(1);
    // Lower bounds of the ranges: None for the first (unbounded below).
    let mut lowers: Vec<Option<&[u8]>> = vec![None];
    for r in 1..ranges {
        let s = samples.get(r * samples.len() / ranges).copied();
        if s.is_some() && s > lowers.last().copied().flatten() {
            lowers.push(s);
        }
    }
    let bounds: Vec<KeyRange<'_>> = lowers
        .iter()
        .enumerate()
        .map(|(i, &lo)| (lo, lowers.get(i + 1).copied().flatten()))
        .collect();

    produce_in_order(
        &bounds,
        threads,
        |&(lo, hi)| merge_range(runs, lo, hi, policy, plan.read_buffer_bytes),
        sink,
        |sink, buf| feed(&buf, sink),
    )?;
    Ok(())
}

/// Decodes a merged range buffer into the sink.
fn feed(buf: &[u8], sink: &mut Sink<'_>) -> Result<()> {
    let mut pos = 0usize;
    let broken = || {
        Error::io(
            "merging",
            "",
            std::io::Error::other("merge buffer inconsistent"),
        )
    };
    while pos < buf.len() {
        let k = varint::get(buf, &mut pos).ok_or_else(broken)? as usize;
        let v = varint::get(buf, &mut pos).ok_or_else(broken)? as usize;
        let key = buf.get(pos..pos + k).ok_or_else(broken)?;
        let value = buf.get(pos + k..pos + k + v).ok_or_else(broken)?;
        pos += k + v;
        sink(key, value)?;
    }
    Ok(())
}

fn key_of(heads: &[Option<RunReader>], i: usize) -> Option<&[u8]> {
    heads
        .get(i)
        .and_then(Option::as_ref)
        .map(|r| r.key.as_slice())
}

/// Merges the entries with `lo <= key < hi` of every run into one buffer of
/// `varint key_len, varint value_len, key, value`, resolving duplicates across runs.
fn merge_range(
    runs: &[Run],
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    policy: DuplicatePolicy,
    read_buffer_bytes: usize,
) -> Result<Vec<u8>> {
    let mut heads: Vec<Option<RunReader>> = Vec::with_capacity(runs.len());
    for run in runs {
        let mut reader = RunReader::open(run, start_offset(run, lo), read_buffer_bytes)?;
        let mut live = reader.advance()?;
        if let Some(lo) = lo {
            while live && reader.key.as_slice() < lo {
                live = reader.advance()?;
            }
        }
        let live = live && hi.is_none_or(|hi| reader.key.as_slice() < hi);
        heads.push(live.then_some(reader));
    }
    // Sized once from the samples: growing by doubling would copy, and hold two buffers.
    let bound = usize::try_from(range_bound_bytes(runs, lo, hi)).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    out.try_reserve_exact(bound)
        .map_err(|_| Error::Internal("merge range too large for memory"))?;
    let mut equal: Vec<usize> = Vec::with_capacity(runs.len());
    loop {
        // Indices of the heads holding the smallest key (in run order).
        equal.clear();
        for i in 0..heads.len() {
            let Some(k) = key_of(&heads, i) else { continue };
            match equal.first().and_then(|&m| key_of(&heads, m)) {
                Some(m) if k > m => {}
                Some(m) if k == m => equal.push(i),
                _ => {
                    equal.clear();
                    equal.push(i);
                }
            }
        }
        let Some(&first) = equal.first() else { break };
        if equal.len() > 1 && policy == DuplicatePolicy::Reject {
            let key = key_of(&heads, first).unwrap_or_default().to_vec();
            return Err(Error::DuplicateKey { key });
        }
        let winner = match policy {
            DuplicatePolicy::KeepLast => equal.last().copied().unwrap_or(first),
            DuplicatePolicy::KeepFirst | DuplicatePolicy::Reject => first,
        };
        if let Some(Some(r)) = heads.get(winner) {
            varint::put(&mut out, r.key.len() as u64);
            varint::put(&mut out, r.value.len() as u64);
            out.extend_from_slice(&r.key);
            out.extend_from_slice(&r.value);
        }
        for &i in &equal {
            if let Some(slot) = heads.get_mut(i) {
                let keep = match slot.as_mut() {
                    Some(r) => r.advance()? && hi.is_none_or(|hi| r.key.as_slice() < hi),
                    None => false,
                };
                if !keep {
                    *slot = None;
                }
            }
        }
    }
    Ok(out)
}
