//! What a logged batch does to a state: the same on replay at open and on commit. Keeps
//! indexes, counts and the in-memory dictionaries in step with the maps.

use crate::error::{Error, Result};
use crate::index::{ArrayFields, IndexDef};
use crate::internal::{META, MetaKey, is_internal, packs_name};
use crate::state::{IndexState, State};
use crate::wal::{LoggedBatch, LoggedOp};
use std::sync::Arc;
use stele_durable::Store;

/// Keeps the in-memory dictionary sets in step with a removal from the meta collection.
pub(super) fn note_meta_removal(state: &mut State, key: &[u8]) {
    match MetaKey::parse(key) {
        Ok(MetaKey::Dict { collection, id }) => {
            if let Some(dicts) = state.dicts.get_mut(&collection) {
                dicts.remove(id);
            }
        }
        Ok(MetaKey::IntIds(collection)) => {
            state.int_ids.remove(&collection);
        }
        _ => {}
    }
}

/// Keeps the in-memory dictionary sets in step with puts to the meta collection.
pub(super) fn note_meta(state: &mut State, key: &[u8], value: &[u8]) -> Result<()> {
    match MetaKey::parse(key)? {
        MetaKey::Dict { collection, id } => {
            state
                .dicts
                .entry(collection)
                .or_default()
                .insert(id, &crate::compress::dictionary_from_stored(value)?)?;
        }
        // Only `int` is written; anything else reads as text ids.
        MetaKey::IntIds(collection) if value == crate::ids::INT_MARK => {
            state.int_ids.insert(collection);
        }
        MetaKey::IntIds(collection) => {
            state.int_ids.remove(&collection);
        }
        MetaKey::Compress(_) => {}
    }
    Ok(())
}

/// The index keys of a document, per index of its collection (in `indexes_of` order), each
/// with the fields whose path reached an array in it (`crate::index::arrays`).
pub(super) fn doc_keys(
    defs: &[Arc<IndexDef>],
    doc: Option<&[u8]>,
    id: &[u8],
) -> Result<Vec<(Vec<Vec<u8>>, ArrayFields)>> {
    let Some(doc) = doc else {
        return Ok(vec![(Vec::new(), ArrayFields::NONE); defs.len()]);
    };
    let doc = stele_doc::Document::new(doc)?;
    Ok(defs
        .iter()
        .map(|d| {
            let mut arrays = ArrayFields::NONE;
            (d.keys_noting(&doc, id, &mut arrays), arrays)
        })
        .collect())
}

/// Moves the index entries of document `id` from its visible version to its new version,
/// the document `new` (decoded from its stored value; `None`: removed).
pub(super) fn reindex(
    state: &mut State,
    collection: &str,
    id: &[u8],
    new: Option<&[u8]>,
) -> Result<()> {
    let defs: Vec<Arc<IndexDef>> = state
        .indexes_of(collection)
        .map(|ix| Arc::clone(&ix.def))
        .collect();
    if defs.is_empty() {
        return Ok(());
    }
    let old = crate::collection::get(state, collection, id)?.map(|d| d.into_owned());
    let old_keys = doc_keys(&defs, old.as_deref(), id)?;
    let new_keys = doc_keys(&defs, new, id)?;
    for ((def, (old, _)), (new, arrays)) in defs.iter().zip(old_keys).zip(new_keys) {
        let Some(ix) = state
            .indexes
            .get_mut(&(collection.to_owned(), def.name.clone()))
        else {
            continue;
        };
        // Before the entries: the state that holds them says what they may hold.
        ix.arrays = ix.arrays.union(arrays);
        for k in old.iter().filter(|k| !new.contains(k)) {
            crate::index::packed::remove(&mut ix.map, k)?;
        }
        for k in new.iter().filter(|k| !old.contains(k)) {
            crate::index::packed::insert(&mut ix.map, k)?;
        }
    }
    Ok(())
}

/// Puts stored value `value` as document `id` of `collection`, keeping indexes and the count.
/// `valid`: the caller knows the document in `value` (raw, or once decoded) to be valid.
pub(super) fn put_doc(
    store: &Store,
    state: &mut State,
    collection: &str,
    id: &[u8],
    value: &[u8],
    valid: bool,
) -> Result<()> {
    // Invariant (relied on by `collection::get`): every value in a user collection's
    // in-memory diff is a valid document, raw or once decoded: made or checked by a batch
    // of this process (compressed there from valid documents), or checked here (log replay
    // at open, readers' refreshes, merges of staged tables), once per put instead of on
    // every read of it. A compressed value is decoded here once for the check: a reader
    // beside a busy writer reads each rewritten document several times before it changes.
    //
    // A reader (whose diff is never saved) keeps such a document decoded, as a raw value,
    // while its allowance lasts: every get of it then reads it in place instead of running
    // zstd again (a fifth of a reader's get beside a busy writer, `readers_bench`).
    let existed = crate::collection::contains(state, collection, id)?;
    let check = !valid && !is_internal(collection);
    let indexed = state.indexes_of(collection).next().is_some();
    let mut decoded = None;
    // The document, decoded once for both the check and the indexes (a raw one borrowed).
    if check || indexed {
        let doc = crate::stored::decode(state, collection, id, value)?;
        if check {
            stele_doc::validate(&doc)
                .map_err(|e| Error::corrupt_document(collection, id, e.to_string()))?;
            if crate::stored::raw(value).is_none() && state.packing.keep_decoded(doc.len()) {
                decoded = Some(crate::stored::encode(&doc));
            }
        }
        reindex(state, collection, id, Some(&doc))?;
    }
    state
        .collections
        .entry(collection.to_owned())
        .or_insert_with(|| crate::internal::fit_map(collection, store.new_map()))
        .put(id, decoded.as_deref().unwrap_or(value))?;
    if !existed {
        *state.counts.entry(collection.to_owned()).or_default() += 1;
    }
    Ok(())
}

/// Where the operations given to [`apply`] come from, which says whether their documents
/// are known to be valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ops {
    /// A batch built in this process: its raw documents were converted by this crate's
    /// writer or validated by `Batch::put_document`.
    Batch,
    /// Read back from a log file (replay at open, a reader's refresh): documents are
    /// validated as they are put (compressed ones once decoded).
    Log,
}

/// Applies the operations of one logged batch to `state`, in order: on replay at open and
/// on commit alike, so a batch does the same before and after a crash. An error leaves
/// `state` partly changed: a commit applies to a copy and drops it, an open fails.
pub(crate) fn apply(store: &Store, state: &mut State, ops: &[LoggedOp], from: Ops) -> Result<()> {
    for op in ops {
        match op {
            LoggedOp::Put {
                collection,
                id,
                value,
            } => {
                // The dictionaries first: a meta key that does not parse fails the batch
                // before this document is put.
                if collection == META {
                    note_meta(state, id, value)?;
                }
                put_doc(store, state, collection, id, value, from == Ops::Batch)?;
            }
            LoggedOp::Delete { collection, id } => delete_doc(state, collection, id)?,
            LoggedOp::CreateIndex(def) => create_index(store, state, def)?,
            LoggedOp::DropIndex { collection, name } => drop_index(state, collection, name)?,
            LoggedOp::DropCollection { collection } => drop_collection(state, collection),
            LoggedOp::MergeCollection { collection, into } => {
                merge_collection(store, state, collection, into)?;
            }
        }
    }
    Ok(())
}

/// Applies the batches after `state`'s sequence number; `false` on a gap (the reader's
/// view and the log disagree: load again).
pub(super) fn apply_batches(
    store: &Store,
    state: &mut State,
    batches: &[LoggedBatch],
) -> Result<bool> {
    for batch in batches {
        if batch.seq <= state.seq {
            continue;
        }
        if batch.seq != state.seq + 1 {
            return Ok(false);
        }
        apply(store, state, &batch.ops, Ops::Log)?;
        state.seq = batch.seq;
    }
    Ok(true)
}

/// Removes document `id` of `collection` if it is visible (else nothing changes): index
/// entries first (they are found from the visible version), then the map, then the count.
fn delete_doc(state: &mut State, collection: &str, id: &[u8]) -> Result<()> {
    if !crate::collection::contains(state, collection, id)? {
        return Ok(());
    }
    if collection == META {
        note_meta_removal(state, id);
    }
    reindex(state, collection, id, None)?;
    let Some(map) = state.collections.get_mut(collection) else {
        return Ok(());
    };
    // A user collection marks the removal: a packed version may sit below, or end up
    // there when a compaction running now lands.
    if is_internal(collection) {
        map.remove(id)?;
    } else {
        map.put(id, &crate::pack::REMOVED)?;
    }
    if let Some(n) = state.counts.get_mut(collection) {
        *n = n.saturating_sub(1);
    }
    Ok(())
}

/// Creates index `def` and builds it over the documents already there; an index of that
/// name on the collection is an error.
fn create_index(store: &Store, state: &mut State, def: &IndexDef) -> Result<()> {
    let key = (def.collection.clone(), def.name.clone());
    if state.indexes.contains_key(&key) {
        return Err(Error::InvalidIndex {
            index: def.name.clone(),
            reason: "an index of this name already exists on the collection (drop it first)",
        });
    }
    let (map, arrays) = crate::index::build::build(store, state, def)?;
    state.indexes.insert(
        key,
        IndexState {
            def: Arc::new(def.clone()),
            map,
            arrays,
        },
    );
    Ok(())
}

/// Drops index `name` of `collection`; an index that is not there is an error.
fn drop_index(state: &mut State, collection: &str, name: &str) -> Result<()> {
    if state
        .indexes
        .remove(&(collection.to_owned(), name.to_owned()))
        .is_none()
    {
        return Err(Error::InvalidIndex {
            index: name.to_owned(),
            reason: "no index of this name on the collection",
        });
    }
    Ok(())
}

/// Drops `collection` with its count, its packed blocks and its indexes (a collection
/// that is not there: nothing changes).
fn drop_collection(state: &mut State, collection: &str) {
    state.collections.remove(collection);
    state.counts.remove(collection);
    state.collections.remove(&packs_name(collection));
    state.indexes.retain(|(c, _), _| c != collection);
}

/// Moves every document of (staging) collection `collection` into `into`, replacing
/// documents of the same id, and drops the source with its count and indexes. A source
/// that is not there: nothing changes.
fn merge_collection(store: &Store, state: &mut State, collection: &str, into: &str) -> Result<()> {
    let Some(from) = state.collections.remove(collection) else {
        return Ok(());
    };
    state.counts.remove(collection);
    state.indexes.retain(|(c, _), _| c != collection);
    // A snapshot of the source (staging collections are never packed and never see
    // removals): the puts below change only the target.
    for entry in from.iter() {
        let (id, value) = entry?;
        if !crate::pack::is_removed(value) {
            // Read from the staged tables' files: checked.
            put_doc(store, state, into, &id, value, false)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]
mod tests {
    use super::*;
    use crate::stored::DocBytes;

    fn put(collection: &str, doc: &[u8]) -> LoggedOp {
        LoggedOp::Put {
            collection: collection.to_owned(),
            id: b"x".to_vec(),
            value: crate::stored::encode(doc),
        }
    }

    /// A put of `doc` as `id` into "c", compressed by `compressor` (checked to be stored
    /// compressed, not raw).
    fn compressed_put(
        id: &[u8],
        doc: &[u8],
        compressor: &mut crate::compress::Compressor,
    ) -> LoggedOp {
        let value = compressor.compress(doc).unwrap();
        assert!(crate::stored::raw(&value).is_none(), "stored compressed");
        LoggedOp::Put {
            collection: "c".to_owned(),
            id: id.to_vec(),
            value: Arc::from(value),
        }
    }

    /// The invariant `collection::get` trusts: a raw document reaches a user collection's
    /// in-memory diff only once it validates, and is then read without a second check.
    #[test]
    fn raw_documents_are_validated_once_when_put() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut state = State::default();
        let good = stele_doc::from_json(br#"{"a":1}"#).unwrap();
        apply(&store, &mut state, &[put("c", &good)], Ops::Log).unwrap();
        let read = crate::collection::get(&state, "c", b"x").unwrap().unwrap();
        assert!(matches!(read, DocBytes::Validated(_)), "{read:?}");
        assert_eq!(read.document().unwrap().as_bytes(), good.as_slice());
        let mut bad = good.clone();
        bad[0] ^= 0xFF;
        assert!(stele_doc::validate(&bad).is_err());
        let e = apply(&store, &mut state, &[put("c", &bad)], Ops::Log).unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
        // The failed put left the document as it was.
        let read = crate::collection::get(&state, "c", b"x").unwrap().unwrap();
        assert_eq!(&*read, good.as_slice());
    }

    /// The same for a compressed value: decoded and checked once when put, then read
    /// without a second check; one that decodes to an invalid document is refused.
    #[test]
    fn compressed_documents_are_validated_once_when_put() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut state = State::default();
        // Short strings (long ones are compressed inside the document already), repeated.
        let items = vec![r#""a short string""#; 300].join(",");
        let json = format!(r#"{{"a":[{items}],"b":[1,2,3]}}"#);
        let good = stele_doc::from_json(json.as_bytes()).unwrap();
        let mut compressor =
            crate::compress::Compressor::new(crate::compress::CompressOptions::default()).unwrap();
        let op = compressed_put(b"x", &good, &mut compressor);
        apply(&store, &mut state, &[op], Ops::Log).unwrap();
        let read = crate::collection::get(&state, "c", b"x").unwrap().unwrap();
        assert!(matches!(read, DocBytes::ValidatedOwned(_)), "{read:?}");
        assert_eq!(read.document().unwrap().as_bytes(), good.as_slice());
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xFF;
        assert!(stele_doc::validate(&bad).is_err());
        let op = compressed_put(b"x", &bad, &mut compressor);
        let e = apply(&store, &mut state, &[op], Ops::Log).unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
        let read = crate::collection::get(&state, "c", b"x").unwrap().unwrap();
        assert_eq!(&*read, good.as_slice());
    }

    /// A reader keeps compressed documents of the log decoded while its allowance lasts
    /// (read in place afterwards), and compressed past it; a writer (no allowance) never.
    #[test]
    fn a_reader_keeps_log_documents_decoded_within_its_allowance() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let json = |i: usize| {
            format!(
                r#"{{"n":{i},"a":[{}]}}"#,
                vec![r#""repeated""#; 200].join(",")
            )
        };
        let mut compressor =
            crate::compress::Compressor::new(crate::compress::CompressOptions::default()).unwrap();
        let docs: Vec<Vec<u8>> = (0..3)
            .map(|i| stele_doc::from_json(json(i).as_bytes()).unwrap())
            .collect();
        let ops: Vec<LoggedOp> = docs
            .iter()
            .enumerate()
            .map(|(i, doc)| compressed_put(format!("d{i}").as_bytes(), doc, &mut compressor))
            .collect();
        // Room for two of the three documents.
        let room = docs[0].len() + docs[1].len() + docs[2].len() / 2;
        for (allowance, kept) in [(0, 0), (room, 2)] {
            let mut state = State::default();
            state.packing.allow_decoded(allowance);
            apply(&store, &mut state, &ops, Ops::Log).unwrap();
            for (i, doc) in docs.iter().enumerate() {
                let id = format!("d{i}");
                let read = crate::collection::get(&state, "c", id.as_bytes())
                    .unwrap()
                    .unwrap();
                assert_eq!(&*read, doc.as_slice());
                if i < kept {
                    assert!(matches!(read, DocBytes::Validated(_)), "{i}: {read:?}");
                } else {
                    assert!(matches!(read, DocBytes::ValidatedOwned(_)), "{i}: {read:?}");
                }
            }
        }
    }
}
