//! The stream of batches: the columns planned (given or inferred), then documents read in
//! id order, a batch at a time, each batch from where the last one stopped.

use super::ArrowOptions;
use super::build::{Col, Misfit};
use super::kind::{Kind, Seen, SeenObject};
use super::parallel::Failed;
use crate::collection::Entries;
use crate::error::{Error, Result};
use crate::query::Filter;
use crate::query::scan::Stretch;
use crate::snapshot::Snapshot;
use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use stele_doc::{Document, Path, PathSet};

/// The column the document id goes in.
const ID: &str = "_id";
/// The column a root property named like the id column goes in.
const DOC_ID: &str = "doc._id";

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
    /// Every field: the column of each root property, and which were filled (scratch).
    Keys {
        columns: HashMap<String, usize>,
        filled: Vec<bool>,
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
    after: Option<Vec<u8>>,
    /// Documents kept by the filter to pass over first, and how many were.
    skip: usize,
    skipped: usize,
    /// Rows to return at most, and how many were.
    limit: usize,
    pub(super) rows_read: usize,
    pub(super) done: bool,
    /// Rows the query engine computes (a sorted or projected query, an aggregation's
    /// output) instead of the collection's documents; `None`: the collection is read.
    pub(super) rows: Option<super::rows::Rows>,
    /// Those rows as they are read (empty in a restarted reader).
    pub(super) running: super::rows::Running,
}

impl ArrowReader {
    pub(crate) fn new(snap: Snapshot, collection: &str, opts: ArrowOptions) -> Result<Self> {
        Self::over(snap, collection, opts, None)
    }

    /// A reader of `rows` when given (see [`super::rows`]), else of the collection.
    pub(super) fn over(
        snap: Snapshot,
        collection: &str,
        opts: ArrowOptions,
        rows: Option<super::rows::Rows>,
    ) -> Result<Self> {
        // Rows without ids (an aggregation's output) have no id column: `_id` is then a
        // property like the others.
        let with_id = rows.as_ref().is_none_or(super::rows::Rows::has_ids);
        let named: Option<Vec<String>> = match (&opts.schema, &opts.fields) {
            (Some(s), _) => Some(s.fields().iter().map(|f| f.name().clone()).collect()),
            (None, Some(f)) => Some(f.clone()),
            (None, None) => None,
        };
        let mut sources = Vec::new();
        let mut layout = Layout::Keys {
            columns: HashMap::new(),
            filled: Vec::new(),
        };
        if let Some(named) = &named {
            let mut parsed = Vec::new();
            let mut columns = Vec::new();
            for (col, name) in named.iter().enumerate() {
                if name == ID && with_id {
                    sources.push(Source::Id);
                } else {
                    sources.push(Source::Path);
                    parsed.push(Path::parse(name)?);
                    columns.push(col);
                }
            }
            layout = Layout::Paths {
                set: PathSet::from_paths(parsed),
                columns,
            };
        }
        // A collection of integer ids: its id column is Int64, and conditions on `_id` are
        // on the stored keys (`query::int_ids`).
        let ids = snap.state.marked_kind(collection);
        let int_ids = ids == crate::IdKind::Int;
        let id_kind = id_column(ids);
        let filter = crate::query::int_ids::filter_for(&snap.state, collection, &opts.filter);
        let stretches = if rows.is_none() && opts.skip == 0 && opts.limit == usize::MAX {
            Some(crate::query::scan::stretches_of(
                &snap,
                collection,
                super::parallel::MAX_BLOCKS_PER_STRETCH,
            )?)
            .filter(|s| s.len() > 1)
            .map(Arc::new)
        } else {
            None
        };
        let mut reader = ArrowReader {
            snap,
            collection: collection.to_owned(),
            filter,
            ids,
            schema: Arc::new(Schema::empty()),
            sources,
            kinds: Vec::new(),
            layout,
            batch_rows: opts.batch_rows,
            lenient: opts.misfits_as_null,
            after: None,
            skip: opts.skip,
            skipped: 0,
            limit: opts.limit,
            rows_read: 0,
            done: false,
            stretches,
            next_stretch: 0,
            ready: VecDeque::new(),
            failed: Failed::default(),
            rows,
            running: super::rows::Running::default(),
        };
        let names = match &opts.schema {
            Some(schema) => {
                for f in schema.fields() {
                    let kind = Kind::of_field(f, f.name())?;
                    if f.name() == ID && with_id && kind != id_kind {
                        let want = if int_ids {
                            "Int64 (the collection holds integer ids)"
                        } else {
                            "Utf8"
                        };
                        return Err(Error::ArrowSchema {
                            field: ID.to_owned(),
                            reason: format!(
                                "the id column is {want}, not {}: give it as that, or leave it out",
                                f.data_type()
                            ),
                        });
                    }
                    reader.kinds.push(kind);
                }
                named.unwrap_or_default()
            }
            None => {
                let names = reader.infer(opts.sample_rows, named)?;
                if opts.nested_as_json {
                    for kind in &mut reader.kinds {
                        if matches!(kind, Kind::Struct(_) | Kind::List(_)) {
                            *kind = Kind::Json;
                        }
                    }
                }
                names
            }
        };
        let fields: Vec<_> = names
            .iter()
            .zip(&reader.kinds)
            .zip(&reader.sources)
            .map(|((name, kind), source)| match source {
                Source::Id => arrow_schema::Field::new(
                    name,
                    if int_ids {
                        arrow_schema::DataType::Int64
                    } else {
                        arrow_schema::DataType::Utf8
                    },
                    false,
                ),
                _ => kind.field(name),
            })
            .collect();
        reader.schema = Arc::new(Schema::new(fields));
        Ok(reader)
    }

    /// Infers the kinds from the first `sample` documents kept; returns the column names
    /// (and, in every-field mode, sets the sources).
    fn infer(&mut self, sample: usize, named: Option<Vec<String>>) -> Result<Vec<String>> {
        let (roots, seen, wide) = match self.stretches.clone() {
            _ if self.rows.is_some() => super::rows::infer(self, sample)?,
            Some(parts) if sample == usize::MAX => super::parallel::infer(self, &parts)?,
            _ => self.infer_in(&(Bound::Unbounded, Bound::Unbounded), sample)?,
        };
        if let Some(names) = named {
            for (i, s) in seen.into_iter().enumerate() {
                let kind = match self.sources.get(i) {
                    Some(Source::Id) => self.id_kind(),
                    _ => s.kind(),
                };
                self.kinds.push(kind);
            }
            return Ok(names);
        }
        if wide {
            return Err(Error::ArrowSchema {
                field: "(root)".to_owned(),
                reason: format!(
                    "the documents have more than {} distinct root properties: name the fields to read, or give a schema",
                    super::kind::MAX_STRUCT_FIELDS
                ),
            });
        }
        let with_id = self.rows.as_ref().is_none_or(super::rows::Rows::has_ids);
        let (mut names, mut columns) = (Vec::new(), HashMap::new());
        (self.sources, self.kinds) = (Vec::new(), Vec::new());
        if with_id {
            names.push(ID.to_owned());
            self.sources.push(Source::Id);
            self.kinds.push(self.id_kind());
        }
        for (key, s) in roots.into_keys() {
            names.push(if key == ID && with_id {
                DOC_ID.to_owned()
            } else {
                key.clone()
            });
            self.sources.push(Source::Key);
            columns.insert(key, self.sources.len() - 1);
            self.kinds.push(s.kind());
        }
        self.layout = Layout::Keys {
            columns,
            filled: vec![false; self.sources.len()],
        };
        Ok(names)
    }

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

    /// The kind of the id column.
    fn id_kind(&self) -> Kind {
        id_column(self.ids)
    }

    /// A new stream over the same snapshot with the same columns, from the first document
    /// (the schema is not inferred again).
    pub fn restart(&self) -> ArrowReader {
        let mut fresh = self.clone();
        fresh.after = None;
        fresh.done = false;
        fresh.skipped = 0;
        fresh.rows_read = 0;
        fresh.next_stretch = 0;
        fresh.ready.clear();
        fresh.failed = Failed::default();
        fresh.running = super::rows::Running::default();
        fresh
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.rows.is_some() {
            return super::rows::next_batch(self);
        }
        if self.stretches.is_some() {
            return super::parallel::next_batch(self);
        }
        let wanted = self
            .batch_rows
            .min(self.limit.saturating_sub(self.rows_read));
        if self.done || wanted == 0 {
            self.done = true;
            return Ok(None);
        }
        let capacity = self.batch_rows.min(8192);
        let mut cols: Vec<Col> = self.kinds.iter().map(|k| Col::new(k, capacity)).collect();
        let mut rows = 0;
        let schema = self.schema.clone();
        let Self {
            snap,
            collection,
            filter,
            sources,
            layout,
            lenient,
            after,
            skipped,
            skip,
            ids,
            ..
        } = &mut *self;
        let lenient = *lenient;
        let kind = *ids;
        let (last, ended) = for_each_kept(
            snap,
            collection,
            filter,
            after.as_deref(),
            wanted,
            |id, doc| {
                if *skipped < *skip {
                    *skipped += 1;
                    return Ok(false);
                }
                rows += 1;
                fill_row(id, doc, sources, layout, &mut cols, lenient)
                    .map_err(|(col, m)| misfit(collection, kind, id, &schema, col, m))?;
                Ok(true)
            },
        )?;
        self.after = last.or(self.after.take());
        self.done = ended;
        self.rows_read += rows;
        if rows == 0 {
            self.done = true;
            return Ok(None);
        }
        finish_batch(&self.schema, &mut cols, rows).map(Some)
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

/// The kind of the id column of a collection of ids of kind `ids`: Int64 for integer ids,
/// else Utf8.
fn id_column(ids: crate::IdKind) -> Kind {
    match ids {
        crate::IdKind::Int => Kind::Int64,
        _ => Kind::Utf8,
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
        Layout::Keys { columns, filled } => {
            // The document's own properties, each to its column (a hash lookup each, where
            // a lookup per column would search every document for keys it rarely has);
            // then a null in each column the document did not fill.
            filled.fill(false);
            for (key, v) in doc.root_object().iter().flat_map(|o| o.iter()) {
                match columns.get(key) {
                    Some(&c) => {
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

/// Calls `f` on the documents after `after` that `filter` keeps, in id order, until `limit`
/// of them counted (`f` says whether each one did); returns the last id read and whether
/// the collection ended.
fn for_each_kept(
    snap: &Snapshot,
    collection: &str,
    filter: &Filter,
    after: Option<&[u8]>,
    limit: usize,
    f: impl FnMut(&str, &Document<&[u8]>) -> Result<bool>,
) -> Result<(Option<Vec<u8>>, bool)> {
    let lo = after.map_or(Bound::Unbounded, Bound::Excluded);
    for_each_in(snap, collection, filter, (lo, Bound::Unbounded), limit, f)
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

impl Iterator for ArrowReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
        }
    }
}

impl RecordBatchReader for ArrowReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
