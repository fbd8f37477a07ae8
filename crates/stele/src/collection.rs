//! What a collection holds: its map (documents written since the last packing, and marks of
//! removed ones) over its packed blocks (`crate::pack`). Every read of documents goes
//! through here.

use crate::compress::{Header, parse_header};
use crate::error::{Error, Result};
use crate::pack::{self, DecodedBlock, PackedIter};
use crate::state::State;
use crate::stored::{self, DocBytes};
use std::cmp::Ordering;
use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;
use stele_durable::MapIter;

/// The visible document `id` of `collection`.
pub(crate) fn get<'a>(
    state: &'a State,
    collection: &str,
    id: &[u8],
) -> Result<Option<DocBytes<'a>>> {
    get_near(state, collection, id, &mut Near::default())
}

/// The packed block the last lookup of a run of them landed in ([`get_near`]): the next
/// lookup of an id between its first and its last id reads the block directly, without
/// finding it in the packs map again (a table search) or in the block cache (a lock). The
/// block comes from the same state, whose blocks never change.
#[derive(Default)]
pub(crate) struct Near {
    block: Option<Arc<DecodedBlock>>,
}

impl Near {
    /// Whether `id` lies within the held block's ids: then the block alone says whether
    /// the collection packs `id` (blocks hold disjoint, ascending ranges of ids).
    fn covers(&self, id: &[u8]) -> Option<&Arc<DecodedBlock>> {
        let block = self.block.as_ref()?;
        let last = block.len().checked_sub(1)?;
        (block.id(0) <= id && id <= block.id(last)).then_some(block)
    }
}

/// [`get`], reusing the block of the previous lookup through `near` (lookups in id order
/// find most ids in the block of the one before).
pub(crate) fn get_near<'a>(
    state: &'a State,
    collection: &str,
    id: &[u8],
    near: &mut Near,
) -> Result<Option<DocBytes<'a>>> {
    if let Some(map) = state.collections.get(collection)
        && let (Some(stored), origin) = map.get_and_origin(id)?
    {
        if pack::is_removed(stored) {
            return Ok(None);
        }
        let doc = stored::decode(state, collection, id, stored)?;
        // A document in the in-memory diff was validated when put, raw or decoded
        // (`apply::put_doc`, user collections only); one read from a table file is
        // checked when read.
        if origin != stele_durable::Origin::Memory || crate::internal::is_internal(collection) {
            return Ok(Some(doc));
        }
        return Ok(Some(match doc {
            DocBytes::Borrowed(doc) => DocBytes::Validated(doc),
            DocBytes::Owned(doc) => DocBytes::ValidatedOwned(doc),
            other => other,
        }));
    }
    if let Some(block) = near.covers(id) {
        return match block.find(id) {
            Ok(i) => DocBytes::in_block(state, collection, Arc::clone(block), i).map(Some),
            Err(_) => Ok(None),
        };
    }
    let Some((block, found)) =
        stored::with_decoder(|decoder| pack::lookup_block(state, collection, id, decoder))?
    else {
        return Ok(None);
    };
    near.block = Some(Arc::clone(&block));
    found
        .map(|i| DocBytes::in_block(state, collection, block, i))
        .transpose()
}

/// Documents of `collection` spread evenly over it: every n-th in id order, n chosen for at
/// most `max_docs` of them, and doubled (dropping every other one taken) whenever the
/// documents taken exceed `budget_bytes` (a single document bigger than that is kept
/// alone). Reads the ids, then only the chosen documents.
pub(crate) fn spread_sample(
    state: &State,
    collection: &str,
    max_docs: usize,
    budget_bytes: usize,
) -> Result<Vec<Vec<u8>>> {
    let count = count(state, collection);
    let mut stride = count.div_ceil(max_docs.max(1) as u64).max(1);
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0usize;
    let ids = Entries::new(state, collection, Bound::Unbounded, Bound::Unbounded, false)?;
    for (i, entry) in ids.enumerate() {
        let (id, _) = entry?;
        if !(i as u64).is_multiple_of(stride) {
            continue;
        }
        let Some(doc) = get(state, collection, &id)? else {
            continue;
        };
        bytes += doc.len();
        samples.push(doc.to_vec());
        // Samples sit at multiples of `stride`; those at even positions are the multiples
        // of twice the stride.
        while bytes > budget_bytes && samples.len() > 1 {
            let mut position = 0usize;
            samples.retain(|_| {
                position += 1;
                position % 2 == 1
            });
            bytes = samples.iter().map(Vec::len).sum();
            stride = stride.saturating_mul(2);
        }
    }
    Ok(samples)
}

/// Whether `collection` has a visible document `id`. Reads no document unless the id falls
/// into a packed block (which is then decoded, or found in the cache).
pub(crate) fn contains(state: &State, collection: &str, id: &[u8]) -> Result<bool> {
    if let Some(map) = state.collections.get(collection)
        && let Some(stored) = map.get(id)?
    {
        return Ok(!pack::is_removed(stored));
    }
    stored::with_decoder(|decoder| Ok(pack::lookup(state, collection, id, decoder)?.is_some()))
}

/// Number of visible documents of `collection`.
pub(crate) fn count(state: &State, collection: &str) -> u64 {
    state.counts.get(collection).copied().unwrap_or(0)
}

/// Calls `f` with the header and stored length of every value of map `map_name` in `state`
/// (a user collection, or an import staging collection into one), removal marks skipped.
/// Reads headers only, decompresses nothing.
pub(crate) fn for_each_value_header(
    state: &State,
    map_name: &str,
    mut f: impl FnMut(&Header, usize),
) -> Result<()> {
    let Some(map) = state.collections.get(map_name) else {
        return Ok(());
    };
    for entry in map.iter() {
        let (id, stored) = entry?;
        if pack::is_removed(stored) {
            continue;
        }
        let header = parse_header(stored)
            .map_err(|e| Error::corrupt_document(map_name, &id, e.to_string()))?;
        f(&header, stored.len());
    }
    Ok(())
}

/// Calls `f` with the header and stored length of every packed block of `collection`.
pub(crate) fn for_each_block_header(
    state: &State,
    collection: &str,
    mut f: impl FnMut(&Header, usize),
) -> Result<()> {
    let Some(packs) = state.packs(collection) else {
        return Ok(());
    };
    for entry in packs.iter() {
        let (last_id, value) = entry?;
        f(
            &pack::block_header(collection, &last_id, value)?,
            value.len(),
        );
    }
    Ok(())
}

/// The dictionary that the first packed block of `collection` names, if it has blocks
/// (and the block a dictionary).
pub(crate) fn first_block_dictionary(
    state: &State,
    collection: &str,
) -> Result<Option<crate::compress::DictionaryId>> {
    let Some(packs) = state.packs(collection) else {
        return Ok(None);
    };
    let Some(entry) = packs.iter().next() else {
        return Ok(None);
    };
    let (last_id, value) = entry?;
    Ok(pack::block_header(collection, &last_id, value)?.dictionary)
}

/// One visible document: its id, and its bytes unless only ids were asked for.
pub(crate) type Entry<'a> = Result<(Vec<u8>, Option<DocBytes<'a>>)>;

/// The visible documents of `collection` with ids in (`lo`, `hi`), in id order: the map's
/// entries merged with the packed blocks, the map winning on equal ids.
pub(crate) struct Entries<'a> {
    state: &'a State,
    collection: &'a str,
    map: Option<Peekable<MapIter<'a>>>,
    packed: Option<Peekable<PackedIter<'a>>>,
    hi: Bound<Vec<u8>>,
    /// Decode documents of the map (else only ids are wanted; packed ones come decoded).
    decode: bool,
    failed: bool,
}

impl<'a> Entries<'a> {
    pub(crate) fn new(
        state: &'a State,
        collection: &'a str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        decode: bool,
    ) -> Result<Self> {
        let map = state
            .collections
            .get(collection)
            .map(|m| m.range((lo, hi)).peekable());
        let packed = if state.packs(collection).is_some() {
            Some(PackedIter::new(state, collection, lo)?.peekable())
        } else {
            None
        };
        Ok(Entries {
            state,
            collection,
            map,
            packed,
            hi: hi.map(<[u8]>::to_vec),
            decode,
            failed: false,
        })
    }

    fn below_hi(&self, id: &[u8]) -> bool {
        match &self.hi {
            Bound::Included(h) => id <= &h[..],
            Bound::Excluded(h) => id < &h[..],
            Bound::Unbounded => true,
        }
    }

    /// Which source comes next: the map, the packed blocks, or both (equal ids).
    fn next_source(&mut self) -> Option<Ordering> {
        let m = self.map.as_mut().and_then(|m| m.peek());
        let p = self.packed.as_mut().and_then(|p| p.peek());
        match (m, p) {
            (None, None) => None,
            (Some(Err(_)), _) | (Some(_), None) => Some(Ordering::Less),
            (None, Some(_)) | (_, Some(Err(_))) => Some(Ordering::Greater),
            (Some(Ok((a, _))), Some(Ok((b, _)))) => Some(a.as_bytes().cmp(&b[..])),
        }
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let out = loop {
            let order = self.next_source()?;
            if order != Ordering::Less {
                // Packed next (or also next): its id may lie beyond the range.
                match self.packed.as_mut().and_then(Iterator::next) {
                    Some(Ok((id, doc))) => {
                        if !self.below_hi(&id) {
                            self.packed = None;
                            continue;
                        }
                        if order == Ordering::Greater {
                            break Ok((id, Some(doc)));
                        }
                        // Equal ids: the map's entry wins (below).
                    }
                    Some(Err(e)) => break Err(e),
                    None => continue,
                }
            }
            match self.map.as_mut().and_then(Iterator::next) {
                Some(Ok((id, stored))) => {
                    if pack::is_removed(stored) {
                        continue;
                    }
                    let id = id.into_owned();
                    if !self.decode {
                        break Ok((id, None));
                    }
                    match stored::decode(self.state, self.collection, &id, stored) {
                        Ok(doc) => break Ok((id, Some(doc))),
                        Err(e) => break Err(e),
                    }
                }
                Some(Err(e)) => break Err(e.into()),
                None => continue,
            }
        };
        self.failed = out.is_err();
        Some(out)
    }
}
