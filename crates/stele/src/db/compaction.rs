//! Compaction: merging a map's layers into one table (packing a compressed user
//! collection into blocks), in line or on the background thread, and swapping a merge done
//! on the side into the state.

use super::{DatabaseOptions, Inner, lock_poisoned};
use crate::error::Result;
use crate::internal::{is_internal, packs_name};
use crate::state::{MapRef, State};
use std::sync::{Weak, mpsc};
use stele_durable::{DurableMap, Store};
use stele_table::TableId;

/// A compaction done on the side: the map, the layers it covers, the new base, and for a
/// packed collection its new packs map (the base is then empty: the packs map holds
/// everything the covered layers held).
#[derive(Debug)]
pub(super) struct SideCompaction {
    pub(super) map: MapRef,
    pub(super) covered: Vec<TableId>,
    pub(super) base: DurableMap,
    pub(super) packs: Option<DurableMap>,
}

/// Whether compaction packs `collection` (see [`DatabaseOptions::pack_block_bytes`]): a
/// user collection with compression on, with packing enabled.
pub(super) fn packs_collection(
    opts: &DatabaseOptions,
    state: &State,
    collection: &str,
) -> Result<bool> {
    Ok(opts.pack_block_bytes > 0 && !is_internal(collection) && state.compression(collection)?)
}

pub(super) fn pack_settings(opts: &DatabaseOptions) -> crate::pack::PackSettings {
    crate::pack::PackSettings {
        block_bytes: opts.pack_block_bytes,
        level: opts.pack_level,
        streams: opts.pack_streams,
    }
}

/// Whether a compaction that is not full merges only the layers above the base of user
/// collection `c` (whose map is `map`; `packed`: its documents are packed in blocks, and its
/// map holds only what changed since): those layers hold under 1/`compact_base_ratio` of the
/// bytes below them (see [`DatabaseOptions::compact_base_ratio`]).
fn merges_above_base_only(
    opts: &DatabaseOptions,
    state: &State,
    c: &str,
    map: &DurableMap,
    packed: bool,
) -> bool {
    let bytes = |stats: &[(TableId, stele_table::TableStats)]| -> u64 {
        stats.iter().map(|(_, s)| s.file_bytes).sum()
    };
    let stats = map.table_stats();
    let (above, below) = if packed {
        // Everything the map holds is above the blocks.
        let packs = state
            .collections
            .get(&packs_name(c))
            .map_or(0, |p| bytes(&p.table_stats()));
        (bytes(&stats), packs)
    } else {
        // A base and at least two diffs: one diff on the base is merged already.
        let [(_, base), diffs @ ..] = stats.as_slice() else {
            return false;
        };
        if diffs.len() < 2 {
            return false;
        }
        (bytes(diffs), base.file_bytes)
    };
    opts.compact_base_ratio > 0 && above.saturating_mul(opts.compact_base_ratio) < below
}

/// The size-tiered compaction of user collection `c` (whose map is `map`), leaving what is
/// below its layers as it is: for a packed collection, its map merged into one table beside
/// the blocks; else the diffs above its base merged into one diff on the base.
fn merge_above_base(
    store: &Store,
    state: &State,
    c: &str,
    map: &DurableMap,
    packed: bool,
) -> Result<DurableMap> {
    if packed {
        return merge_plain(store, state, c, &map.sequential()?);
    }
    let mut merged = map.clone();
    merged.merge_diffs()?;
    Ok(merged)
}

/// Rewrites the map of user collection `collection` (`source`: its layers, read
/// sequentially) as one table, dropping removal marks that hide no packed document.
pub(super) fn merge_plain(
    store: &Store,
    state: &State,
    collection: &str,
    source: &DurableMap,
) -> Result<DurableMap> {
    let packed = state.collections.contains_key(&packs_name(collection));
    let mut out = store.map_builder()?;
    crate::stored::with_decoder(|decoder| {
        for entry in source.iter() {
            let (id, stored) = entry?;
            if crate::pack::is_removed(stored)
                && (!packed || crate::pack::lookup(state, collection, &id, decoder)?.is_none())
            {
                continue;
            }
            out.add(&id, stored)?;
        }
        Ok(())
    })?;
    Ok(out.finish()?)
}

/// Compacts map `r` of `state` in line: a user collection with compression on is packed
/// (`full`: every block rewritten, else only those its map's entries fall into), an index
/// repacked into compressed blocks (`crate::index::packed`), any other map merged.
pub(super) fn compact_in_line(
    store: &Store,
    opts: &DatabaseOptions,
    state: &mut State,
    r: &MapRef,
    full: bool,
) -> Result<()> {
    let MapRef::Collection(c) = r else {
        // An index: its keys rewritten in compressed blocks.
        if let Some(map) = state.map_mut(r) {
            *map = crate::index::packed::repack(store, map)?;
        }
        return Ok(());
    };
    let Some(map) = state.collections.get(c) else {
        return Ok(());
    };
    if is_internal(c) {
        let mut map = map.clone();
        map.compact()?;
        state.collections.insert(c.clone(), map);
        return Ok(());
    }
    let packed = packs_collection(opts, state, c)?;
    if !full && merges_above_base_only(opts, state, c, map, packed) {
        let merged = merge_above_base(store, state, c, map, packed)?;
        state.collections.insert(c.clone(), merged);
        return Ok(());
    }
    let source = map.sequential()?;
    if packed {
        let (packs, docs) = crate::pack::pack(store, state, c, &source, full, pack_settings(opts))?;
        drop(source);
        // Everything the map held went into the blocks.
        debug_assert_eq!(docs, crate::collection::count(state, c));
        state.collections.insert(c.clone(), store.new_map());
        let name = packs_name(c);
        if docs == 0 {
            state.collections.remove(&name);
        } else {
            state.collections.insert(name, packs);
        }
        return Ok(());
    }
    let base = merge_plain(store, state, c, &source)?;
    drop(source);
    state.collections.insert(c.clone(), base);
    Ok(())
}

/// Swaps a compaction done on the side into `state`: `false`, changing nothing, when the
/// map was compacted another way meanwhile (its bottom layers are no longer the ones the
/// compaction covered). An error leaves the map as it was. A packed base goes in only with
/// its packs map, which replaces the old one: the base points into it, and the diffs above
/// the base hold whole documents.
pub(super) fn swap_in(state: &mut State, side: SideCompaction) -> Result<bool> {
    let Some(map) = state.map_mut(&side.map) else {
        return Ok(false);
    };
    let Some(id) = side.base.id() else {
        return Ok(false);
    };
    let swapped = map.rebase(&side.covered, id)?;
    if let (true, MapRef::Collection(c), Some(packs)) = (swapped, &side.map, side.packs) {
        state.collections.insert(packs_name(c), packs);
    }
    Ok(swapped)
}

/// The background compactor: merges the saved layers of one map at a time without any
/// lock and leaves the result for the next checkpoint to swap in with `rebase`. It holds
/// the database only for an instant at either end, so closing is never delayed by a merge;
/// a merge finished after the database closed is dropped (its table collected later).
pub(super) fn compactor(weak: &Weak<Inner>, queue: &mpsc::Receiver<MapRef>) {
    while let Ok(r) = queue.recv() {
        // Errors leave the map as it was; a later checkpoint queues it again.
        let done = compact_on_the_side(weak, &r, false).ok().flatten();
        let Some(inner) = weak.upgrade() else { return };
        if let Some(side) = done
            && let Ok(mut ready) = inner.ready.lock()
        {
            ready.push(side);
        }
        if let Ok(mut queued) = inner.compacting.lock() {
            queued.remove(&r);
        }
    }
}

/// Compacts what map `r` has saved now into a new base (for a user collection with
/// compression on: packs it, leaving an empty base; `full`: rewriting every block, even of a
/// collection of one layer); returns what is to be swapped in ([`swap_in`]), or nothing if
/// the map is compact already.
pub(super) fn compact_on_the_side(
    weak: &Weak<Inner>,
    r: &MapRef,
    full: bool,
) -> Result<Option<SideCompaction>> {
    let (state, store, opts) = {
        let Some(inner) = weak.upgrade() else {
            return Ok(None);
        };
        let w = inner.writer.lock().map_err(lock_poisoned)?;
        let state = w.state.clone();
        drop(w);
        (state, inner.store.clone(), inner.opts.clone())
    };
    let Some(map) = state.map_refs().find(|(m, _)| m == r).map(|(_, m)| m) else {
        return Ok(None);
    };
    let mut side = map.saved_only();
    let covered = side.layer_ids();
    let packed = match r {
        MapRef::Collection(c) if !is_internal(c) => packs_collection(&opts, &state, c)?,
        _ => false,
    };
    // An index of one layer is compact once it holds blocks only.
    let loose_index = matches!(r, MapRef::Index(..)) && crate::index::packed::has_loose(&side);
    if covered.is_empty() || (covered.len() == 1 && !(full && packed) && !loose_index) {
        return Ok(None);
    }
    let side_of = |base: DurableMap, packs: Option<DurableMap>| SideCompaction {
        map: r.clone(),
        covered: covered.clone(),
        base,
        packs,
    };
    match r {
        MapRef::Collection(c) if !is_internal(c) => {
            if !full && merges_above_base_only(&opts, &state, c, &side, packed) {
                let merged = merge_above_base(&store, &state, c, &side, packed)?;
                return Ok(Some(side_of(merged, None)));
            }
            let source = side.sequential()?;
            if packed {
                let (packs, _) =
                    crate::pack::pack(&store, &state, c, &source, full, pack_settings(&opts))?;
                let empty = store.map_builder()?.finish()?;
                Ok(Some(side_of(empty, Some(packs))))
            } else {
                let base = merge_plain(&store, &state, c, &source)?;
                Ok(Some(side_of(base, None)))
            }
        }
        MapRef::Index(..) => {
            let base = crate::index::packed::repack(&store, &side)?;
            Ok(Some(side_of(base, None)))
        }
        _ => {
            side.compact()?;
            Ok(Some(side_of(side, None)))
        }
    }
}
