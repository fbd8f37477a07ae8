//! Parallel merge of sorted runs.
//!
//! The key space is cut into ranges at keys sampled from the runs, so each range holds
//! about the same number of bytes; rayon threads merge several ranges at once (each a
//! small k-way merge reading every run from the range's start), and one more thread feeds
//! the merged ranges, in order, to the table builder. No single thread merges everything
//! through one heap, and memory stays bounded: ranges are sized from the budget and only a
//! few are in flight.

use super::run::{Run, RunReader};
use crate::builder::{DuplicatePolicy, TableBuilder};
use crate::error::{Error, Result};
use crate::varint;
use rayon::prelude::*;
use std::sync::mpsc;

const MIN_RANGE_BYTES: u64 = 1 << 20;

/// `lo <= key < hi`; `None` is unbounded.
type KeyRange<'k> = (Option<&'k [u8]>, Option<&'k [u8]>);

/// Merges `runs` (in insertion order: later runs hold later additions) into `builder`.
pub(crate) fn merge_runs(
    runs: &[Run],
    policy: DuplicatePolicy,
    budget_bytes: usize,
    builder: &mut TableBuilder,
) -> Result<()> {
    let threads = rayon::current_num_threads().max(1);
    let total_bytes: u64 = runs.iter().map(|r| r.bytes).sum();
    let range_bytes = (budget_bytes as u64 / (4 * threads as u64)).max(MIN_RANGE_BYTES);
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

    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(threads);
    std::thread::scope(|scope| {
        let consumer = scope.spawn(move || -> Result<()> {
            for buf in rx {
                feed(&buf, builder)?;
            }
            Ok(())
        });
        let produced = (|| -> Result<()> {
            for group in bounds.chunks(threads) {
                let merged: Vec<Result<Vec<u8>>> = group
                    .par_iter()
                    .map(|&(lo, hi)| merge_range(runs, lo, hi, policy))
                    .collect();
                for buf in merged {
                    if tx.send(buf?).is_err() {
                        // The consumer stopped on an error; it reports it below.
                        return Ok(());
                    }
                }
            }
            Ok(())
        })();
        drop(tx);
        let consumed = consumer.join().unwrap_or_else(|_| {
            Err(Error::io(
                "merging",
                "",
                std::io::Error::other("table writer thread panicked"),
            ))
        });
        produced.and(consumed)
    })
}

/// Decodes a merged range buffer into the builder.
fn feed(buf: &[u8], builder: &mut TableBuilder) -> Result<()> {
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
        builder.add(key, value)?;
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
) -> Result<Vec<u8>> {
    let mut heads: Vec<Option<RunReader>> = Vec::with_capacity(runs.len());
    for run in runs {
        let offset = match lo {
            None => 0,
            Some(lo) => {
                let i = run.samples.partition_point(|(k, _)| k.as_slice() < lo);
                i.checked_sub(1)
                    .and_then(|i| run.samples.get(i))
                    .map_or(0, |(_, off)| *off)
            }
        };
        let mut reader = RunReader::open(run, offset)?;
        let mut live = reader.advance()?;
        if let Some(lo) = lo {
            while live && reader.key.as_slice() < lo {
                live = reader.advance()?;
            }
        }
        let live = live && hi.is_none_or(|hi| reader.key.as_slice() < hi);
        heads.push(live.then_some(reader));
    }
    let mut out = Vec::new();
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
