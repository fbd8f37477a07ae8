//! Full scans on all cores: the collection's packed blocks are cut into stretches of
//! consecutive blocks (their last ids, read from the packs map without decompressing
//! anything), and each stretch is read, filtered and collected on the thread pool. The
//! stretches go in waves, in id order, so a scan whose rows arrive in order stops once it
//! has enough. Documents are read in place: a filter reaches only the fields it names.

use super::Query;
use super::collect::Collector;
use super::execute::Run;
use crate::collection::Entries;
use crate::error::Result;
use crate::snapshot::Snapshot;
use rayon::prelude::*;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Blocks per stretch, at most: small enough that a wave of stretches keeps every core busy
/// and a scan in order stops soon after its limit.
const MAX_BLOCKS_PER_STRETCH: usize = 64;

/// Collections of fewer documents are scanned on the caller's thread, in one stretch: on
/// a collection of a few hundred documents (tens of microseconds to read from the block
/// cache), handing stretches to the pool and merging their collectors cost more than the
/// reading (a top-20 sort of 248 documents: 1.7 ms over 10 stretches, see
/// `docs/notes/2026-12-01-query-costs.md`).
pub(crate) const SERIAL_SCAN_DOCS: u64 = 4_096;

/// The id ranges of the stretches, in order; together they cover every id.
/// An id range: its lower and upper bounds.
pub(crate) type Stretch = (Bound<Vec<u8>>, Bound<Vec<u8>>);

pub(crate) fn stretches(snap: &Snapshot, collection: &str) -> Result<Vec<Stretch>> {
    stretches_of(snap, collection, MAX_BLOCKS_PER_STRETCH)
}

/// [`stretches`] of at most `max_blocks` blocks each.
pub(crate) fn stretches_of(
    snap: &Snapshot,
    collection: &str,
    max_blocks: usize,
) -> Result<Vec<Stretch>> {
    let Some(packs) = snap.state.packs(collection) else {
        return Ok(vec![(Bound::Unbounded, Bound::Unbounded)]);
    };
    let mut lasts = Vec::new();
    for entry in packs.iter() {
        let (last_id, _) = entry?;
        lasts.push(last_id.to_vec());
    }
    let threads = crate::cores::cores().max(1);
    let per = lasts
        .len()
        .div_ceil(threads * 8)
        .clamp(1, max_blocks.max(1));
    let mut out = Vec::new();
    let mut lo = Bound::Unbounded;
    for chunk in lasts.chunks(per) {
        let Some(last) = chunk.last() else { continue };
        out.push((lo, Bound::Included(last.clone())));
        lo = Bound::Excluded(last.clone());
    }
    // Documents written since the last packing may lie past the last block.
    out.push((lo, Bound::Unbounded));
    Ok(out)
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

pub(crate) fn scan_stretch(
    snap: &Snapshot,
    query: &Query,
    run: &Run,
    (lo, hi): &Stretch,
    out: &mut dyn Collector,
) -> Result<()> {
    let unchanged = snap
        .state
        .collections
        .get(&query.collection)
        .is_none_or(stele_durable::DurableMap::is_empty);
    if unchanged && snap.state.packs(&query.collection).is_some() {
        return scan_blocks(snap, query, run, (lo, hi), out);
    }
    let entries = Entries::new(&snap.state, &query.collection, as_ref(lo), as_ref(hi), true)?;
    run.check()?;
    // Documents read since the counter was last updated: it is updated every 256, so a
    // stream's reader sees how far the scan has gone while it runs.
    let mut n = 0u64;
    for entry in entries {
        if n == 256 {
            run.docs.fetch_add(n, Ordering::Relaxed);
            n = 0;
            run.check()?;
        }
        n += 1;
        let (id, doc) = entry?;
        let Some(doc) = doc else { continue };
        let id = String::from_utf8_lossy(&id);
        let d = doc.document()?;
        if query.filter.matches(d.root(), &id) && !out.take(&id, &d)? {
            break;
        }
    }
    run.docs.fetch_add(n, Ordering::Relaxed);
    Ok(())
}

/// [`scan_stretch`] of a collection whose map holds nothing (every document is in its
/// packed blocks, as after a compaction): the blocks are read directly, each id borrowed
/// from its block, where the merge of map and blocks (`Entries`) copies every id into a
/// `Vec` of its own.
fn scan_blocks(
    snap: &Snapshot,
    query: &Query,
    run: &Run,
    (lo, hi): (&Bound<Vec<u8>>, &Bound<Vec<u8>>),
    out: &mut dyn Collector,
) -> Result<()> {
    let (state, collection) = (&snap.state, query.collection.as_str());
    let Some(packs) = state.packs(collection) else {
        return Ok(());
    };
    run.check()?;
    let below_hi = |id: &[u8]| match hi {
        Bound::Included(h) => id <= h.as_slice(),
        Bound::Excluded(h) => id < h.as_slice(),
        Bound::Unbounded => true,
    };
    let mut n = 0u64;
    'blocks: for entry in packs.range((as_ref(lo), Bound::Unbounded)) {
        let (last_id, value) = entry?;
        let block = crate::stored::with_decoder(|decoder| {
            crate::pack::load_block(state, collection, &last_id, value, decoder)
        })?;
        // The first block's ids may start below `lo`.
        let start = match lo {
            Bound::Included(k) => block.find(k).unwrap_or_else(|i| i),
            Bound::Excluded(k) => block.find(k).map_or_else(|i| i, |i| i + 1),
            Bound::Unbounded => 0,
        };
        for i in start..block.len() {
            let id = block.id(i);
            if !below_hi(id) {
                break 'blocks;
            }
            if n == 256 {
                run.docs.fetch_add(n, Ordering::Relaxed);
                n = 0;
                run.check()?;
            }
            n += 1;
            let doc = crate::stored::DocBytes::in_block(state, collection, Arc::clone(&block), i)?;
            let d = doc.document()?;
            let id = String::from_utf8_lossy(id);
            if query.filter.matches(d.root(), &id) && !out.take(&id, &d)? {
                break 'blocks;
            }
        }
    }
    run.docs.fetch_add(n, Ordering::Relaxed);
    Ok(())
}

/// Reads every document of the query's collection into `out`.
pub(crate) fn full_scan(
    snap: &Snapshot,
    query: &Query,
    run: &Run,
    out: &mut dyn Collector,
) -> Result<()> {
    let parts = if crate::collection::count(&snap.state, &query.collection) < SERIAL_SCAN_DOCS {
        vec![(Bound::Unbounded, Bound::Unbounded)]
    } else {
        stretches(snap, &query.collection)?
    };
    if parts.len() <= 1 {
        for part in &parts {
            scan_stretch(snap, query, run, part, out)?;
        }
        return Ok(());
    }
    let wave = crate::cores::cores().max(1) * 2;
    for group in parts.chunks(wave) {
        let Some((first, rest)) = group.split_first() else {
            continue;
        };
        // The first stretch of a wave goes straight into `out` (a stream sends its rows as
        // they are found); the others into forks, absorbed after it in order.
        let forks: Vec<Box<dyn Collector>> = rest.iter().map(|_| out.fork()).collect();
        let (head, forks) = rayon::join(
            || scan_stretch(snap, query, run, first, &mut *out),
            || {
                forks
                    .into_par_iter()
                    .zip(rest.par_iter())
                    .map(|(mut fork, part)| {
                        scan_stretch(snap, query, run, part, fork.as_mut())?;
                        Ok(fork)
                    })
                    .collect::<Vec<Result<Box<dyn Collector>>>>()
            },
        );
        head?;
        for fork in forks {
            out.absorb(fork?);
        }
        if out.full() {
            break;
        }
    }
    Ok(())
}
