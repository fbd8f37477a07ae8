//! The stream of batches: the columns planned (given or inferred), then documents read in
//! id order, a batch at a time, each batch from where the last one stopped.

use super::ArrowOptions;
use super::build::Col;
use super::kind::{Kind, PlaceGuess};
use super::state::{
    ArrowReader, DOC_ID, Failed, ID, Layout, Rows, Running, Source, fill_row, finish_batch,
    for_each_in, misfit,
};
use crate::error::{Error, Result};
use crate::query::Filter;
use crate::snapshot::Snapshot;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use stele_doc::{Document, Path, PathSet};

impl ArrowReader {
    pub(crate) fn new(snap: Snapshot, collection: &str, opts: ArrowOptions) -> Result<Self> {
        Self::over(snap, collection, opts, None)
    }

    /// A reader of `rows` when given (see [`super::rows`]), else of the collection.
    pub(super) fn over(
        snap: Snapshot,
        collection: &str,
        opts: ArrowOptions,
        rows: Option<Rows>,
    ) -> Result<Self> {
        // Rows without ids (an aggregation's output) have no id column: `_id` is then a
        // property like the others.
        let with_id = rows.as_ref().is_none_or(Rows::has_ids);
        let named: Option<Vec<String>> = match (&opts.schema, &opts.fields) {
            (Some(s), _) => Some(s.fields().iter().map(|f| f.name().clone()).collect()),
            (None, Some(f)) => Some(f.clone()),
            (None, None) => None,
        };
        let mut sources = Vec::new();
        let mut layout = Layout::Keys {
            columns: HashMap::new(),
            filled: Vec::new(),
            keys: Vec::new(),
            guess: PlaceGuess::default(),
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
            running: Running::default(),
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
        let with_id = self.rows.as_ref().is_none_or(Rows::has_ids);
        let (mut names, mut columns, mut keys) = (Vec::new(), HashMap::new(), Vec::new());
        (self.sources, self.kinds) = (Vec::new(), Vec::new());
        if with_id {
            names.push(ID.to_owned());
            keys.push(String::new());
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
            keys.push(key.clone());
            columns.insert(key, self.sources.len() - 1);
            self.kinds.push(s.kind());
        }
        self.layout = Layout::Keys {
            columns,
            filled: vec![false; self.sources.len()],
            keys,
            guess: PlaceGuess::default(),
        };
        Ok(names)
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
        fresh.running = Running::default();
        fresh
    }

    pub(super) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
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

/// The kind of the id column of a collection of ids of kind `ids`: Int64 for integer ids,
/// else Utf8.
fn id_column(ids: crate::IdKind) -> Kind {
    match ids {
        crate::IdKind::Int => Kind::Int64,
        _ => Kind::Utf8,
    }
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
