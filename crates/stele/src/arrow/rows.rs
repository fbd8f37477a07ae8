//! Arrow streams of rows the query engine computes, rather than of the collection's stored
//! documents: a `find` with a sort or a projection ([`Snapshot::query_arrow`]), whose rows
//! come in the query's order and shape, and an aggregation's output
//! ([`Snapshot::aggregate_arrow`]).
//!
//! A query's rows come through [`Snapshot::query_iter`] (indexes, spilling sorts and the
//! time budget as for any query) as JSON text, which is written into documents again here:
//! these streams cost a parse per row that a plain read of the collection does not. The
//! schema is inferred from the rows themselves (all of them, or the first `sample_rows`),
//! so a query without a given schema runs twice: once to infer, once to stream. An
//! aggregation runs once; its output (held in memory, as [`Snapshot::aggregate`] returns
//! it) is read by every stream.

use super::ArrowOptions;
use super::kind::{Seen, SeenObject};
use super::state::{
    ArrowReader, RowSource, Rows, Running, fill_row, finish_batch, misfit, observe,
};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::query::{Pipeline, Query};
use crate::snapshot::Snapshot;
use arrow_array::RecordBatch;
use std::sync::Arc;
use stele_doc::{Document, DocumentWriter};

/// One row: its id as stored (empty without ids) and its document bytes.
type Row = (String, Vec<u8>);

impl RowSource {
    fn start(snap: &Snapshot, rows: &Rows) -> Result<RowSource> {
        Ok(match rows {
            Rows::Query(q) => {
                RowSource::Query(Box::new((snap.query_iter(q)?, DocumentWriter::new())))
            }
            Rows::Docs(_) => RowSource::Docs(0),
        })
    }

    /// The next row, or `None` after the last. `kind`: the collection's ids (a query's
    /// rows give integer ids as people write them; the id column wants them as stored).
    fn next(&mut self, rows: &Rows, kind: IdKind) -> Result<Option<Row>> {
        match (self, rows) {
            (RowSource::Query(running), _) => {
                let (stream, writer) = &mut **running;
                let Some(row) = stream.next().transpose()? else {
                    return Ok(None);
                };
                let bytes = writer.from_json(row.json.as_bytes())?;
                let key = match kind {
                    IdKind::Int => {
                        crate::ids::parse_int_id(&row.id).map_or(row.id, crate::ids::int_key)
                    }
                    _ => row.id,
                };
                Ok(Some((key, bytes)))
            }
            (RowSource::Docs(next), Rows::Docs(docs)) => {
                let Some(doc) = docs.get(*next) else {
                    return Ok(None);
                };
                *next += 1;
                Ok(Some((String::new(), doc.clone())))
            }
            (RowSource::Docs(_), Rows::Query(_)) => Err(Error::InvalidQuery {
                reason: "an Arrow stream of rows lost its query (a bug: please report it)"
                    .to_owned(),
            }),
        }
    }
}

/// What the first `sample` rows show, as [`ArrowReader::infer_in`] returns for documents.
pub(super) fn infer(r: &ArrowReader, sample: usize) -> Result<(SeenObject, Vec<Seen>, bool)> {
    let Some(rows) = &r.rows else {
        return Ok((SeenObject::default(), Vec::new(), false));
    };
    let mut roots = SeenObject::default();
    let mut seen = vec![Seen::Nothing; r.sources.len()];
    let mut wide = false;
    let mut layout = r.layout.clone();
    let mut source = RowSource::start(&r.snap, rows)?;
    let mut n = 0;
    while n < sample {
        let Some((_, bytes)) = source.next(rows, r.ids)? else {
            break;
        };
        wide |= !observe(
            &mut layout,
            &mut roots,
            &mut seen,
            &Document::new(&bytes[..])?,
        );
        n += 1;
    }
    Ok((roots, seen, wide))
}

/// The next batch of a reader of rows.
pub(super) fn next_batch(r: &mut ArrowReader) -> Result<Option<RecordBatch>> {
    let Some(rows) = r.rows.clone() else {
        return Ok(None);
    };
    if r.done {
        return Ok(None);
    }
    if r.running.source().is_none() {
        *r.running.source() = Some(RowSource::start(&r.snap, &rows)?);
    }
    let capacity = r.batch_rows.min(8192);
    let mut cols: Vec<_> = r
        .kinds
        .iter()
        .map(|k| super::build::Col::new(k, capacity))
        .collect();
    let mut n = 0;
    while n < r.batch_rows {
        let Some(source) = r.running.source().as_mut() else {
            break;
        };
        let Some((id, bytes)) = source.next(&rows, r.ids)? else {
            r.done = true;
            break;
        };
        let doc = Document::new(&bytes[..])?;
        fill_row(&id, &doc, &r.sources, &mut r.layout, &mut cols, r.lenient).map_err(
            |(col, m)| {
                let id = if rows.has_ids() {
                    id
                } else {
                    format!("(output row {})", r.rows_read + n + 1)
                };
                misfit(&r.collection, r.ids, &id, &r.schema, col, m)
            },
        )?;
        n += 1;
    }
    r.rows_read += n;
    if n == 0 {
        r.done = true;
        r.running = Running::default();
        return Ok(None);
    }
    finish_batch(&r.schema, &mut cols, n).map(Some)
}

impl Snapshot {
    /// The rows of `query` as Arrow record batches: in its order (`sort`), after its `skip`
    /// and `limit`, in its shape (a projection's documents: `b.c` kept gives a `b` struct
    /// column holding `c`). Without a sort or a projection, this is
    /// [`scan_arrow`](Snapshot::scan_arrow) with the query's filter, skip and limit (the
    /// stored documents read on every core, without JSON between). With one, the rows come
    /// from the query engine (indexes, a spilling sort, the time budget), the schema is
    /// inferred from them, and the query runs once more to infer it unless `options` gives
    /// a schema. `options`' filter is not used (the query's is).
    pub fn query_arrow(&self, query: &Query, options: ArrowOptions) -> Result<ArrowReader> {
        query.check()?;
        let collection = query.collection().to_owned();
        if query.sort.is_empty() && query.projection.is_none() {
            return self.scan_arrow(&collection, options.documents_of(query));
        }
        super::check_named(&options)?;
        let rows = Rows::Query(Box::new(query.clone()));
        ArrowReader::over(self.clone(), &collection, options, Some(rows))
    }

    /// The output of `pipeline` over `collection` as Arrow record batches: one column per
    /// root property of the output documents (a `$group`'s `_id` among them, named `_id`),
    /// or the paths in `options`' fields. The pipeline runs once, now; its output is held
    /// (as [`aggregate`](Snapshot::aggregate) holds it) and each stream reads it.
    pub fn aggregate_arrow(
        &self,
        collection: &str,
        pipeline: &Pipeline,
        options: ArrowOptions,
    ) -> Result<ArrowReader> {
        super::check_named(&options)?;
        let out = self.aggregate(collection, pipeline)?;
        let mut writer = DocumentWriter::new();
        let docs = out
            .rows
            .iter()
            .map(|json| Ok(writer.from_json(json.as_bytes())?))
            .collect::<Result<Vec<_>>>()?;
        let rows = Rows::Docs(Arc::new(docs));
        let mut reader = ArrowReader::over(self.clone(), collection, options, Some(rows))?;
        // The output's rows carry no ids: misfits name the row, as text.
        reader.ids = IdKind::Text;
        Ok(reader)
    }
}
