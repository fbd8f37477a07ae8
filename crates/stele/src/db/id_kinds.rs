//! The kind of ids a batch's writes give each collection, settled under the writer lock
//! against the state they apply to (`crate::ids`).
//!
//! The rule: a collection holds text ids or integer ids. While it holds no documents its
//! next writes decide; a write of an integer id ([`crate::Batch::put_json_int`]) makes it
//! a collection of integer ids. Once it holds documents, a text id that writes an integer
//! as people do (`"42"`, `"-7"`) is taken as that integer in a collection of integer ids,
//! and any other text id is refused there; an integer id is refused in a collection of
//! text ids. The kind is a meta key written in the same batch, so it is as durable as the
//! documents and replays with them.

use crate::error::{Error, Result};
use crate::ids::{INT_MARK, IdKind, int_key, parse_int_id};
use crate::internal::{META, MetaKey};
use crate::state::State;
use crate::wal::LoggedOp;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The collection and the id (as stored so far) of a put or a delete.
fn target(op: &mut LoggedOp) -> Option<(&str, &mut Vec<u8>)> {
    match op {
        LoggedOp::Put { collection, id, .. } | LoggedOp::Delete { collection, id } => {
            Some((collection.as_str(), id))
        }
        _ => None,
    }
}

/// Checks the writes of `ops` whose id kinds `kinds` gives (the last `kinds.len()` of
/// `ops`: operations put before them carry no kind, e.g. new dictionaries) against
/// `state`: rewrites the text ids that are integers of collections of integer ids into
/// their keys, and appends the meta writes that mark (or unmark) a collection whose kind
/// this batch decides. An id of the wrong kind fails the whole batch.
pub(super) fn settle(state: &State, ops: &mut Vec<LoggedOp>, kinds: &[IdKind]) -> Result<()> {
    // The common case: text ids, and no collection marked for integers.
    if state.int_ids.is_empty() && kinds.iter().all(|k| *k == IdKind::Text) {
        return Ok(());
    }
    let start = ops.len().saturating_sub(kinds.len());
    // Per collection: whether this batch writes an integer id, and its first text id.
    let mut wants: BTreeMap<String, (bool, Option<String>)> = BTreeMap::new();
    for (op, kind) in ops.iter_mut().skip(start).zip(kinds) {
        let Some((collection, id)) = target(op) else {
            continue;
        };
        // One name allocated per collection, not per operation.
        if !wants.contains_key(collection) {
            wants.insert(collection.to_owned(), (false, None));
        }
        let Some(want) = wants.get_mut(collection) else {
            continue;
        };
        match kind {
            IdKind::Int => want.0 = true,
            _ => {
                want.1
                    .get_or_insert_with(|| String::from_utf8_lossy(id).into_owned());
            }
        }
    }
    let mut marks = Vec::new();
    for (collection, (int, first_text)) in &wants {
        let kind = match (state.id_kind(collection), *int) {
            (Some(IdKind::Text), true) => {
                let id = ops
                    .iter_mut()
                    .skip(start)
                    .zip(kinds)
                    .filter(|(_, k)| **k == IdKind::Int)
                    .find_map(|(op, _)| target(op).filter(|(c, _)| c == collection))
                    .and_then(|(_, id)| crate::ids::int_from_key(id))
                    .unwrap_or_default();
                return Err(Error::IdKindMismatch {
                    collection: collection.clone(),
                    holds: IdKind::Text,
                    id: id.to_string(),
                });
            }
            (Some(IdKind::Int), _) | (None, true) => IdKind::Int,
            _ => IdKind::Text,
        };
        if kind == IdKind::Int && first_text.is_some() {
            for (op, k) in ops.iter_mut().skip(start).zip(kinds) {
                let Some((c, id)) = target(op).filter(|(c, _)| c == collection) else {
                    continue;
                };
                if *k == IdKind::Int {
                    continue;
                }
                let text = std::str::from_utf8(id).ok();
                let Some(n) = text.and_then(parse_int_id) else {
                    return Err(Error::IdKindMismatch {
                        collection: c.to_owned(),
                        holds: IdKind::Int,
                        id: String::from_utf8_lossy(id).chars().take(80).collect(),
                    });
                };
                *id = int_key(n).into_bytes();
            }
        }
        let marked = state.int_ids.contains(collection);
        match (kind, marked) {
            (IdKind::Int, false) => marks.push(LoggedOp::Put {
                collection: META.to_owned(),
                id: MetaKey::int_ids(collection),
                value: Arc::from(INT_MARK),
            }),
            (IdKind::Text, true) => marks.push(LoggedOp::Delete {
                collection: META.to_owned(),
                id: MetaKey::int_ids(collection),
            }),
            _ => {}
        }
    }
    ops.extend(marks);
    Ok(())
}

impl super::Database {
    /// Marks `collection` as holding ids of kind `kind` before a write that bypasses
    /// batches lands (a bulk or staged import, which checked each id's kind against the
    /// collection's). The mark is a write of its own: if the import then fails, it is left
    /// on a collection that holds no documents of the other kind, and the collection's
    /// next documents decide again ([`State::id_kind`]).
    pub(crate) fn claim_id_kind(&self, collection: &str, kind: IdKind) -> Result<()> {
        let marked = self.snapshot_state().int_ids.contains(collection);
        let key = MetaKey::int_ids(collection);
        let op = match (kind, marked) {
            (IdKind::Int, false) => LoggedOp::Put {
                collection: META.to_owned(),
                id: key,
                value: Arc::from(INT_MARK),
            },
            (IdKind::Text, true) => LoggedOp::Delete {
                collection: META.to_owned(),
                id: key,
            },
            _ => return Ok(()),
        };
        self.commit_ops(vec![op])
    }
}
