//! Full scans on all cores: the collection's packed blocks are cut into stretches of
//! consecutive blocks (their last ids, read from the packs map without decompressing
//! anything), and each stretch is read, filtered and collected on the thread pool. The
//! stretches go in waves, in id order, so a scan whose rows arrive in order stops once it
//! has enough. Documents are read in place: a filter reaches only the fields it names.

use super::Query;
use super::collect::Collector;
use super::filter::id_text;
use super::run::Run;
use crate::collection::Entries;
use crate::error::Result;
use crate::snapshot::Snapshot;
use rayon::prelude::*;
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// Blocks per stretch, at most: small enough that a wave of stretches keeps every core busy
/// and a scan in order stops soon after its limit.
const MAX_BLOCKS_PER_STRETCH: usize = 64;

/// The id ranges of the stretches, in order; together they cover every id.
/// An id range: its lower and upper bounds.
pub(crate) type Stretch = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The stretches of `collection`, of at most `max_blocks` blocks each (the Arrow reader's;
/// a full scan cuts its own as it goes, [`full_scan`]).
#[cfg_attr(not(feature = "arrow"), allow(dead_code))]
pub(crate) fn stretches_of(
    snap: &Snapshot,
    collection: &str,
    max_blocks: usize,
) -> Result<Vec<Stretch>> {
    let Some(packs) = snap.state.packs(collection) else {
        return Ok(vec![(Bound::Unbounded, Bound::Unbounded)]);
    };
    let lasts = block_lasts(packs)?;
    let per = blocks_per_stretch(lasts.len(), max_blocks);
    let mut next = Stretches::new(&lasts);
    Ok(std::iter::from_fn(|| next.take(per)).collect())
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
    let mut filter = query.filter.matcher();
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
        let d = doc.document()?;
        if filter.matches(&d, &id) && !out.take(&id_text(&id), &d)? {
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
    let mut filter = query.filter.matcher();
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
            let d = crate::stored::document_in_block(state, collection, &block, i)?;
            if filter.matches(&d, id) && !out.take(&id_text(id), &d)? {
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
    let docs = crate::collection::count(&snap.state, &query.collection);
    let lasts = match snap.state.packs(&query.collection) {
        Some(packs) if docs >= out.serial_docs() => block_lasts(packs)?,
        _ => Vec::new(),
    };
    if lasts.len() <= 1 {
        return scan_stretch(snap, query, run, &(Bound::Unbounded, Bound::Unbounded), out);
    }
    let wave = crate::cores::cores().max(1) * 2;
    let per_default = blocks_per_stretch(lasts.len(), MAX_BLOCKS_PER_STRETCH);
    let docs_per_block = (docs / lasts.len() as u64).max(1);
    let mut next = Stretches::new(&lasts);
    if out.any_order() {
        // What it keeps does not depend on the order documents come in (counts, sorts):
        // every stretch in one pass, the pool taking the next as a thread frees up, not
        // waves that each wait for their slowest stretch (on a shared machine, one whose
        // thread was descheduled: `docs/notes/2026-12-02-scan-costs.md`).
        let parts: Vec<Stretch> = std::iter::from_fn(|| next.take(per_default)).collect();
        let forks: Vec<Box<dyn Collector>> = parts.iter().map(|_| out.fork()).collect();
        let forks = forks
            .into_par_iter()
            .zip(parts.par_iter())
            .map(|(mut fork, part)| {
                scan_stretch(snap, query, run, part, fork.as_mut())?;
                Ok(fork)
            })
            .collect::<Vec<Result<Box<dyn Collector>>>>();
        for fork in forks {
            out.absorb(fork?);
        }
        return Ok(());
    }
    while !next.done() {
        // A collector whose forks hold what they collect until they are absorbed (groups)
        // says how many documents each may take; the wave's stretches are cut to that.
        let per = match out.fork_docs(wave - 1) {
            None => per_default,
            Some(d) => usize::try_from(d / docs_per_block)
                .unwrap_or(usize::MAX)
                .clamp(1, per_default),
        };
        let group: Vec<Stretch> = (0..wave).map_while(|_| next.take(per)).collect();
        let Some((first, rest)) = group.split_first() else {
            break;
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

/// The last id of each packed block, in order (read from the packs map, nothing
/// decompressed).
fn block_lasts(packs: &stele_durable::DurableMap) -> Result<Vec<Vec<u8>>> {
    let mut lasts = Vec::new();
    for entry in packs.iter() {
        let (last_id, _) = entry?;
        lasts.push(last_id.to_vec());
    }
    Ok(lasts)
}

/// Blocks per stretch for `blocks` blocks: about 8 stretches per core, at most `max`.
fn blocks_per_stretch(blocks: usize, max: usize) -> usize {
    let threads = crate::cores::cores().max(1);
    blocks.div_ceil(threads * 8).clamp(1, max.max(1))
}

/// Cuts a collection's blocks into stretches of consecutive blocks, in id order, as they
/// are asked for; the last one reaches past the last block (documents written since the
/// last packing may lie there).
struct Stretches<'a> {
    lasts: &'a [Vec<u8>],
    lo: Option<Bound<Vec<u8>>>,
}

impl<'a> Stretches<'a> {
    fn new(lasts: &'a [Vec<u8>]) -> Stretches<'a> {
        Stretches {
            lasts,
            lo: Some(Bound::Unbounded),
        }
    }

    fn done(&self) -> bool {
        self.lo.is_none()
    }

    /// The next stretch, of at most `blocks` blocks (at least one).
    fn take(&mut self, blocks: usize) -> Option<Stretch> {
        let lo = self.lo.take()?;
        let n = blocks.clamp(1, self.lasts.len().max(1));
        match self.lasts.get(..n).and_then(<[Vec<u8>]>::last) {
            Some(last) => {
                self.lasts = self.lasts.get(n..).unwrap_or_default();
                self.lo = Some(Bound::Excluded(last.clone()));
                Some((lo, Bound::Included(last.clone())))
            }
            None => Some((lo, Bound::Unbounded)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lasts(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("id{i:04}").into_bytes()).collect()
    }

    /// Whatever sizes are asked for, the stretches follow one another with no gap and no
    /// overlap, each of the asked number of blocks (while there are enough), and the last
    /// reaches past the last block.
    #[test]
    fn stretches_cover_every_block_once_whatever_their_sizes() {
        for n in [0, 1, 2, 7, 64] {
            for sizes in [vec![1], vec![3], vec![0, 5, 2], vec![100]] {
                let lasts = lasts(n);
                let mut next = Stretches::new(&lasts);
                let mut got = Vec::new();
                let mut i = 0;
                while !next.done() {
                    let want = sizes[i % sizes.len()];
                    i += 1;
                    got.push((want, next.take(want).unwrap()));
                }
                assert!(next.take(1).is_none());
                let mut lo: Bound<Vec<u8>> = Bound::Unbounded;
                let mut covered = 0;
                for (k, (want, (l, h))) in got.iter().enumerate() {
                    assert_eq!(*l, lo, "n {n} sizes {sizes:?}");
                    match h {
                        Bound::Included(h) => {
                            let at = lasts.iter().position(|x| x == h).unwrap();
                            assert_eq!(at + 1 - covered, (*want).clamp(1, n - covered));
                            covered = at + 1;
                            lo = Bound::Excluded(h.clone());
                        }
                        Bound::Unbounded => assert_eq!(k, got.len() - 1),
                        Bound::Excluded(_) => panic!("an upper bound is a block's last id"),
                    }
                }
                assert_eq!(covered, n);
                assert_eq!(
                    got.last().map(|(_, (_, h))| h.clone()),
                    Some(Bound::Unbounded)
                );
            }
        }
    }
}
