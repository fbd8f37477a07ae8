//! What every way of reading a collection as Arrow shares: the reader's state (the columns
//! planned, where each column's values come from, how far the stream has gone), and the
//! steps of a row (what inference learns from a document, a document's row appended to the
//! columns, a batch finished, a misfit named). `reader.rs` plans a stream and reads it in
//! order on one thread, `parallel.rs` reads stretches of a packed collection on every
//! core, `rows.rs` reads rows the query engine computes; all three build on this file.

use super::build::{Col, Misfit};
use super::kind::{Kind, PlaceGuess, Seen, SeenObject};
use crate::collection::Entries;
use crate::error::{Error, Result};
use crate::query::scan::Stretch;
use crate::query::{Filter, Query, RowStream};
use crate::snapshot::Snapshot;
use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, SchemaRef};
use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use stele_doc::{Document, DocumentWriter, PathSet};

/// The column the document id goes in.
pub(super) const ID: &str = "_id";
/// The column a root property named like the id column goes in.
pub(super) const DOC_ID: &str = "doc._id";

/// Where a column's values come from.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// The document id.
    Id,
    /// A root property (every-field mode; [`Layout::Keys`] says which).
    Key,
    /// A path of the reader's path set (`fields` or a given schema).
    Path,
}

/// How the values of a document reach their columns.
#[derive(Debug, Clone)]
pub(super) enum Layout {
    /// `fields` or a given schema: the paths read, and the column of each path.
    Paths { set: PathSet, columns: Vec<usize> },
    /// Every field: the column of each root property, and which were filled (scratch);
    /// the property each column holds (by column; empty for the id's), and the column the
    /// property at each place of the last document went to (the guess for the next one).
    Keys {
        columns: HashMap<String, usize>,
        filled: Vec<bool>,
        keys: Vec<String>,
        guess: PlaceGuess,
    },
}

/// A stream of record batches over one snapshot of a collection; see [`crate::arrow`].
/// Ends after the first error.
#[derive(Debug, Clone)]
pub struct ArrowReader {
    pub(super) snap: Snapshot,
    pub(super) collection: String,
    pub(super) filter: Filter,
    /// The collection's kind of ids (integer ids: its stored keys stand for them).
    pub(super) ids: crate::IdKind,
    pub(super) schema: SchemaRef,
    pub(super) sources: Vec<Source>,
    pub(super) kinds: Vec<Kind>,
    pub(super) layout: Layout,
    pub(super) batch_rows: usize,
    pub(super) lenient: bool,
    /// The id ranges read on every core, a wave at a time, and the next one to read: for a
    /// read of every document the filter keeps (no skip, no limit) of a packed collection;
    /// `None`: one thread reads on from `after`.
    pub(super) stretches: Option<Arc<Vec<Stretch>>>,
    pub(super) next_stretch: usize,
    /// Batches of the last wave not returned yet, in order, and the error that ended it.
    pub(super) ready: VecDeque<RecordBatch>,
    pub(super) failed: Failed,
    /// The last id read (kept or not): the next batch starts after it.
    pub(super) after: Option<Vec<u8>>,
    /// Documents kept by the filter to pass over first, and how many were.
    pub(super) skip: usize,
    pub(super) skipped: usize,
    /// Rows to return at most, and how many were.
    pub(super) limit: usize,
    pub(super) rows_read: usize,
    pub(super) done: bool,
    /// Rows the query engine computes (a sorted or projected query, an aggregation's
    /// output) instead of the collection's documents; `None`: the collection is read.
    pub(super) rows: Option<Rows>,
    /// Those rows as they are read (empty in a restarted reader).
    pub(super) running: Running,
}

/// The error that ended a wave, returned once the batches before it are; a clone of the
/// reader starts without it (a reader is cloned to read again from the start).
#[derive(Debug, Default)]
pub(crate) struct Failed(pub(super) Option<Error>);

impl Clone for Failed {
    fn clone(&self) -> Self {
        Failed(None)
    }
}

/// Where the rows of a stream come from.
#[derive(Debug, Clone)]
pub(crate) enum Rows {
    /// The rows of a query (its ids, and its documents or their projections).
    Query(Box<Query>),
    /// Documents already computed (an aggregation's output, as document bytes): no ids.
    Docs(Arc<Vec<Vec<u8>>>),
}

impl Rows {
    /// Whether the rows carry document ids (an `_id` column).
    pub(crate) fn has_ids(&self) -> bool {
        matches!(self, Rows::Query(_))
    }
}

/// The rows of one stream as they are read. A clone (a restarted reader) starts again.
/// (In a mutex only so that a reader stays `Sync`, as the parallel read of a collection
/// shares it; a stream of rows reads through `&mut`, never locking.)
#[derive(Default)]
pub(crate) struct Running(std::sync::Mutex<Option<RowSource>>);

impl Running {
    pub(super) fn source(&mut self) -> &mut Option<RowSource> {
        // A poisoned lock only means a panic elsewhere left it: the rows are still whole.
        self.0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub(super) enum RowSource {
    /// A running query, and the writer that turns its JSON rows into documents.
    Query(Box<(RowStream, DocumentWriter)>),
    /// The index of the next document.
    Docs(usize),
}

impl Clone for Running {
    fn clone(&self) -> Self {
        Running::default()
    }
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Running")
    }
}

impl ArrowReader {
    /// What the first `sample` documents kept in the id range `part` show: the root objects'
    /// properties (every-field mode) or each named path's values, and whether the roots had
    /// too many properties for columns.
    pub(super) fn infer_in(
        &self,
        part: &Stretch,
        sample: usize,
    ) -> Result<(SeenObject, Vec<Seen>, bool)> {
        let mut roots = SeenObject::default();
        let mut seen = vec![Seen::Nothing; self.sources.len()];
        let mut wide = false;
        let mut layout = self.layout.clone();
        let (lo, hi) = (as_ref(&part.0), as_ref(&part.1));
        let (snap, collection, filter) = (&self.snap, &self.collection, &self.filter);
        for_each_in(snap, collection, filter, (lo, hi), sample, |_, doc| {
            wide |= !observe(&mut layout, &mut roots, &mut seen, doc);
            Ok(true)
        })?;
        Ok((roots, seen, wide))
    }
}

/// Merges what `doc` holds into the inference: its root properties (`roots`, every-field
/// layout) or its named paths' values (`seen`); false when the root has too many properties
/// for columns.
pub(super) fn observe(
    layout: &mut Layout,
    roots: &mut SeenObject,
    seen: &mut [Seen],
    doc: &Document<&[u8]>,
) -> bool {
    match layout {
        Layout::Paths { set, columns } => {
            set.read_doc(doc, |i, v| {
                if let Some(s) = columns.get(i).and_then(|&c| seen.get_mut(c)) {
                    s.merge(v);
                }
            });
            true
        }
        Layout::Keys { .. } => doc.root_object().is_none_or(|o| roots.merge(&o)),
    }
}

/// The batch of the `rows` rows in `cols` (left empty for the next batch).
pub(super) fn finish_batch(
    schema: &SchemaRef,
    cols: &mut [Col],
    rows: usize,
) -> Result<RecordBatch> {
    let arrays = cols
        .iter_mut()
        .map(Col::finish)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(arrow_error)?;
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &opts).map_err(arrow_error)
}

/// The error for a value of document `id` that does not fit column `col`.
pub(super) fn misfit(
    collection: &str,
    kind: crate::IdKind,
    id: &str,
    schema: &SchemaRef,
    col: usize,
    m: Misfit,
) -> Error {
    Error::ArrowMisfit {
        collection: collection.to_owned(),
        id: crate::ids::id_text(kind, id.as_bytes().to_vec()),
        field: format!("{}{}", schema.field(col).name(), m.below),
        expected: m.expected,
        found: m.found.to_owned(),
    }
}

/// Appends one document's row to every column; a misfit names the column.
pub(super) fn fill_row(
    id: &str,
    doc: &Document<&[u8]>,
    sources: &[Source],
    layout: &mut Layout,
    cols: &mut [Col],
    lenient: bool,
) -> std::result::Result<(), (usize, Misfit)> {
    for (source, col) in sources.iter().zip(cols.iter_mut()) {
        if matches!(source, Source::Id) {
            col.append_id(id);
        }
    }
    match layout {
        Layout::Paths { set, columns } => {
            // Paths arrive in index order, the missing ones skipped: those get a null.
            let mut next = 0;
            let mut failed = None;
            set.read_doc(doc, |i, v| {
                if failed.is_some() {
                    return;
                }
                for j in next..=i {
                    let c = columns.get(j).copied().unwrap_or(usize::MAX);
                    if let Some(col) = cols.get_mut(c) {
                        let value = if j == i { Some(v) } else { None };
                        if let Err(m) = col.append(value, lenient) {
                            failed = Some((c, m));
                            return;
                        }
                    }
                }
                next = i + 1;
            });
            if let Some(f) = failed {
                return Err(f);
            }
            for &c in columns.iter().skip(next) {
                if let Some(col) = cols.get_mut(c) {
                    col.append(None, lenient).map_err(|m| (c, m))?;
                }
            }
        }
        Layout::Keys {
            columns,
            filled,
            keys,
            guess,
        } => {
            // The document's own properties, each to its column (a hash lookup each, where
            // a lookup per column would search every document for keys it rarely has);
            // then a null in each column the document did not fill. Documents of one
            // shape put each property at the place the last one did: a comparison with the
            // column's name instead of hashing the key (5 % of an export's CPU).
            filled.fill(false);
            for (place, (key, v)) in doc.root_object().iter().flat_map(|o| o.iter()).enumerate() {
                let guessed = guess.get(place, |c| keys.get(c).is_some_and(|k| k == key));
                let found = guessed.or_else(|| {
                    let c = columns.get(key).copied()?;
                    guess.record(place, c);
                    Some(c)
                });
                match found {
                    Some(c) => {
                        if let (Some(col), Some(f)) = (cols.get_mut(c), filled.get_mut(c)) {
                            col.append(Some(v), lenient).map_err(|m| (c, m))?;
                            *f = true;
                        }
                    }
                    None if lenient => {}
                    None => {
                        return Err((
                            0,
                            Misfit {
                                below: format!(" (the property {key:?}, not among the columns)"),
                                expected: "a column per root property".to_owned(),
                                found: "a property",
                            },
                        ));
                    }
                }
            }
            for (c, (source, col)) in sources.iter().zip(cols.iter_mut()).enumerate() {
                if matches!(source, Source::Key) && !filled.get(c).copied().unwrap_or(true) {
                    col.append(None, lenient).map_err(|m| (c, m))?;
                }
            }
        }
    }
    Ok(())
}

/// [`for_each_kept`] over the ids within `bounds`.
pub(super) fn for_each_in(
    snap: &Snapshot,
    collection: &str,
    filter: &Filter,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
    limit: usize,
    mut f: impl FnMut(&str, &Document<&[u8]>) -> Result<bool>,
) -> Result<(Option<Vec<u8>>, bool)> {
    let entries = Entries::new(&snap.state, collection, lo, hi, true)?;
    let mut kept = 0;
    let mut last = None;
    for entry in entries {
        let (id, doc) = entry?;
        if let Some(doc) = doc {
            let d = doc.document()?;
            let text = String::from_utf8_lossy(&id);
            if filter.matches(d.root(), &text) && f(&text, &d)? {
                kept += 1;
            }
        }
        last = Some(id);
        if kept == limit {
            return Ok((last, false));
        }
    }
    Ok((last, true))
}

pub(super) fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

fn arrow_error(e: ArrowError) -> Error {
    Error::ArrowSchema {
        field: "(batch)".to_owned(),
        reason: e.to_string(),
    }
}
