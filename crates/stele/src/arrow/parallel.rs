//! Reading on every core: a packed collection's ids are cut into stretches of consecutive
//! blocks (as the query engine's full scans cut them, `crate::query::scan::stretches_of`:
//! their bounds come from the packs map, nothing decompressed), and each stretch is read on
//! the thread pool, for the inference pass (what each saw, joined in id order: the schema one
//! pass in order infers) and for the batches (a wave of stretches at a time, their batches
//! returned in id order). A batch ends at the end of its stretch, so batches may hold fewer
//! than `batch_rows` rows; memory is one wave's batches, whatever the collection's size:
//! stretches of at most [`MAX_BLOCKS_PER_STRETCH`] blocks, 2 x cores of them.

use super::build::Col;
use super::kind::{Seen, SeenObject};
use super::state::{ArrowReader, as_ref, fill_row, finish_batch, for_each_in, misfit};
use crate::error::{Error, Result};
use crate::query::scan::Stretch;
use arrow_array::RecordBatch;
use rayon::prelude::*;

/// Blocks per stretch, at most: 16 blocks of 32 KiB are 512 KiB of documents, so a wave on
/// 2 cores reads 2 MiB of them. With the query engine's 64, the peak memory of a Parquet
/// export of debian-packages grew with the collection (119 MB for 53 MB of JSON, 167 MB for
/// six copies of it) until the stretches reached 64 blocks.
pub(super) const MAX_BLOCKS_PER_STRETCH: usize = 16;

/// The inference pass over `parts` on every core: what each stretch saw, joined in order.
pub(super) fn infer(
    reader: &ArrowReader,
    parts: &[Stretch],
) -> Result<(SeenObject, Vec<Seen>, bool)> {
    let seen: Vec<Result<(SeenObject, Vec<Seen>, bool)>> = parts
        .par_iter()
        .map(|part| reader.infer_in(part, usize::MAX))
        .collect();
    let mut out: Option<(SeenObject, Vec<Seen>, bool)> = None;
    for part in seen {
        let (roots, cols, wide) = part?;
        out = Some(match out {
            None => (roots, cols, wide),
            Some((mut all, all_cols, all_wide)) => {
                let fits = all.join(roots);
                let joined = all_cols.into_iter().zip(cols).map(|(a, b)| a.join(b));
                (all, joined.collect(), all_wide || wide || !fits)
            }
        });
    }
    Ok(out.unwrap_or_default())
}

/// The next batch of a reader that reads its stretches on every core: from the last wave
/// read, or a new wave's.
pub(super) fn next_batch(reader: &mut ArrowReader) -> Result<Option<RecordBatch>> {
    loop {
        if let Some(batch) = reader.ready.pop_front() {
            return Ok(Some(batch));
        }
        if let Some(e) = reader.failed.0.take() {
            reader.done = true;
            return Err(e);
        }
        let Some(parts) = reader.stretches.clone() else {
            return Ok(None);
        };
        if reader.done || reader.next_stretch >= parts.len() {
            reader.done = true;
            return Ok(None);
        }
        let wave = crate::cores::cores().max(1) * 2;
        let end = (reader.next_stretch + wave).min(parts.len());
        let read: Vec<(Vec<RecordBatch>, Option<Error>)> = parts
            .get(reader.next_stretch..end)
            .unwrap_or_default()
            .par_iter()
            .map(|part| batches_of(reader, part))
            .collect();
        reader.next_stretch = end;
        for (batches, failed) in read {
            reader.rows_read += batches.iter().map(RecordBatch::num_rows).sum::<usize>();
            reader.ready.extend(batches);
            if let Some(e) = failed {
                // The batches before it are returned first, as one thread reading in
                // order would have.
                reader.failed.0 = Some(e);
                reader.next_stretch = parts.len();
                break;
            }
        }
    }
}

/// The documents the filter keeps in one stretch, as batches of at most `batch_rows` rows;
/// after an error, the batches before it and the error.
fn batches_of(reader: &ArrowReader, (lo, hi): &Stretch) -> (Vec<RecordBatch>, Option<Error>) {
    // Builders start small and grow: a stretch may hold a few hundred rows, and 8,192 rows'
    // room in each of debian's ~100 columns, for each stretch of a wave, was most of an
    // export's memory (anonymous peak 107 MB for one copy of debian, 152 MB for six; with
    // 1,024: 93 and 116 MB).
    let capacity = reader.batch_rows.min(1024);
    let mut cols: Vec<Col> = reader.kinds.iter().map(|k| Col::new(k, capacity)).collect();
    let mut layout = reader.layout.clone();
    let mut out = Vec::new();
    let mut rows = 0;
    let (collection, schema, kind) = (&reader.collection, &reader.schema, reader.ids);
    let read = for_each_in(
        &reader.snap,
        collection,
        &reader.filter,
        (as_ref(lo), as_ref(hi)),
        usize::MAX,
        |id, doc| {
            fill_row(
                id,
                doc,
                &reader.sources,
                &mut layout,
                &mut cols,
                reader.lenient,
            )
            .map_err(|(col, m)| misfit(collection, kind, id, schema, col, m))?;
            rows += 1;
            if rows == reader.batch_rows {
                out.push(finish_batch(schema, &mut cols, rows)?);
                rows = 0;
            }
            Ok(true)
        },
    );
    if let Err(e) = read {
        return (out, Some(e));
    }
    if rows > 0 {
        match finish_batch(schema, &mut cols, rows) {
            Ok(b) => out.push(b),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}
