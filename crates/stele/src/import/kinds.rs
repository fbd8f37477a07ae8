//! The kind of an import's ids: all integers or all text. The collection's kind decides
//! when it holds documents, else the first record's id; a record whose id is of the other
//! kind is a bad record (stopping the import, or skipped with `skip_bad`).

use crate::ids::{IdKind, id_text};

/// The kind an import's ids must have, and what decided it.
pub(super) struct ImportKind {
    kind: Option<IdKind>,
    /// The line of the record that decided; `None`: the collection (or nothing yet).
    line: Option<u64>,
    collection: String,
}

impl ImportKind {
    /// The kind of the ids of an import into `collection` as `snap` holds it.
    pub(super) fn of(snap: &crate::Snapshot, collection: &str) -> ImportKind {
        ImportKind {
            kind: snap.id_kind(collection),
            line: None,
            collection: collection.to_owned(),
        }
    }

    /// The kind, once decided.
    pub(super) fn kind(&self) -> Option<IdKind> {
        self.kind
    }

    /// Checks the id `key` (as stored) of kind `kind` of the record on line `line`; the
    /// reason it is bad if its kind is not the import's.
    pub(super) fn check(&mut self, key: &str, kind: IdKind, line: u64) -> Result<(), String> {
        let Some(want) = self.kind else {
            self.kind = Some(kind);
            self.line = Some(line);
            return Ok(());
        };
        if want == kind {
            return Ok(());
        }
        let id = id_text(kind, key.as_bytes().to_vec());
        let shown = match kind {
            IdKind::Int => id,
            _ => format!("{id:?}"),
        };
        let decided = match self.line {
            Some(line) => format!(
                "the import's ids are {} ids (line {line}'s was)",
                want.name()
            ),
            None => format!("collection {:?} holds {} ids", self.collection, want.name()),
        };
        Err(format!(
            "id {shown} is {}, but {decided}: a collection's ids are all integers or all strings",
            match kind {
                IdKind::Int => "an integer",
                _ => "a string",
            }
        ))
    }
}
