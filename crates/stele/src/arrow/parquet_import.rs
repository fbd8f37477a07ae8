//! [`import_parquet_file`]: a Parquet file imported as [`import_arrow`](super::import_arrow)
//! imports its rows, packed while it is read when its ids ascend.
//!
//! A sorted import holds every document in the sorter until the last row is read, then
//! trains the dictionary and packs (zstd 6 with the dictionary: a third to half of the
//! CPU) at the end. A Parquet file can be read at any row, so, as the JSON Lines import
//! does with windows of its file (`crate::import`'s `presample`), a sample of rows from
//! [`SAMPLE_PLACES`] places spread over the file is read and written into documents first;
//! if the ids ascend in it (a file that `stele export` wrote, sorted by id) and the import
//! is big enough for a dictionary, the dictionary trains on it and each block is packed as
//! soon as it is full, while the rest of the file is read (`BulkImport::streaming`). An id
//! that then does not sort after the one before fails that attempt (nothing of it lands:
//! its tables go with the next checkpoint) and the import starts again from the file's
//! first row, sorted ([`ImportReport::restarted_sorted`]).

use super::import::{Built, Import, Late, Plan, Prepared, build, malformed, prepare};
use super::parquet_groups::GroupBatches;
use crate::ids::IdKind;
use crate::import::{
    BulkImport, ImportError, ImportOptions, ImportProgress, ImportReport, Presample,
};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::file::metadata::PageIndexPolicy;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Places the sample is read from, evenly spread over the file's rows (as the JSON Lines
/// presample's 64 windows): each gives at most 1/64 of the sample's documents and bytes.
const SAMPLE_PLACES: u64 = 64;

/// Rows read at the first place, to learn how big the documents are before choosing how
/// many rows the other places give.
const FIRST_PLACE_ROWS: u64 = 128;

/// Rows per batch of the import (the reader's default is 1,024): the import writes a
/// batch's rows on every core while the next batch is decoded.
const BATCH_ROWS: usize = 8192;

/// Threads decoding the file's row groups (each every `DECODERS`-th one) while the import
/// writes the rows decoded before. One: decoding is a tenth to a sixth of an import's CPU,
/// so one thread keeps ahead; two took 1.05-1.2x the CPU in paired runs and about 20 MB
/// more memory on debian-packages, for no wall time this machine could show
/// (`docs/notes/2026-12-02-parquet-decode-ahead.md`).
const DECODERS: usize = 1;

/// Rows per batch the decoders hand out (the file's writer puts 8,192 in a row group):
/// smaller slices let the packing of one overlap the writing of the next sooner.
const DECODE_BATCH_ROWS: usize = 4096;

/// Imports every row of the Parquet file at `path` into `collection`, as
/// [`import_arrow`](super::import_arrow) imports a stream of record batches (the same ids,
/// documents, errors and all or nothing), calling `progress` along the way. When the ids
/// ascend in a sample of rows read from across the file first and the import is big
/// enough for a dictionary, blocks are packed while the file is read
/// ([`ImportReport::packed_while_reading`]); an id out of order after all starts the
/// import again, sorted ([`ImportReport::restarted_sorted`]). The report's
/// [`ImportReport::bytes_read`] is the file's size: it is read whole.
pub fn import_parquet_file(
    db: &crate::Database,
    collection: &str,
    path: impl AsRef<Path>,
    opts: &ImportOptions,
    progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    let path = path.as_ref();
    let (file, meta) = open(path)?;
    let file_bytes = file
        .metadata()
        .map_err(|error| ImportError::Read {
            file: path.display().to_string(),
            error,
        })?
        .len();
    let report = import_opened(db, collection, path, file, meta, opts, progress)?;
    Ok(ImportReport {
        bytes_read: file_bytes,
        ..report
    })
}

/// [`import_parquet_file`] of the file opened, its metadata read.
fn import_opened(
    db: &crate::Database,
    collection: &str,
    path: &Path,
    file: File,
    meta: ArrowReaderMetadata,
    opts: &ImportOptions,
    mut progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    let (bulk, plan) = match prepare(db, collection, meta.schema(), opts)? {
        Prepared::Bulk(bulk) => *bulk,
        Prepared::Text(text_opts) => {
            let rows = rows(path, file, &meta, None)?;
            return super::import_text::import_as_text(db, collection, rows, &text_opts, progress);
        }
    };
    // Decoding starts now, on a thread of its own, and the rows are written into
    // documents while the sample is read and the dictionary trains on another: they are
    // handed to the bulk write once it is made (`Late`).
    drop(file);
    let first = decoded(path, &meta)?;
    let out_of_order = Arc::new(AtomicBool::new(false));
    let attempt = std::thread::scope(|scope| {
        let (meta, plan_ref, flag) = (&meta, &plan, &out_of_order);
        let made = std::thread::Builder::new()
            .name("stele-import-sample".to_owned())
            .spawn_scoped(scope, move || {
                Ok(match presample(path, meta, plan_ref, &bulk, opts)? {
                    Some(s) => {
                        bulk.streaming(&s.sample, s.est_docs, s.est_doc_bytes, Arc::clone(flag))?
                    }
                    None => bulk,
                })
            })
            .map_err(|error| ImportError::Read {
                file: path.display().to_string(),
                error,
            })?;
        Import::new(Late::Coming(made), opts, plan.clone(), &mut progress).run(first)
    });
    match attempt {
        Err(_) if out_of_order.load(Ordering::Relaxed) => {
            // The ids ascended in the sample but not in the file: sorted after all, from
            // the first row (the failed attempt's tables go with the next checkpoint).
            // `import_arrow` of every row: the sorted import of a stream.
            let again =
                super::import_arrow(db, collection, decoded(path, &meta)?, opts, &mut progress);
            again.map(|report| ImportReport {
                restarted_sorted: true,
                ..report
            })
        }
        other => other,
    }
}

/// The file at `path` and its metadata (with its offset index where it has one, so that
/// a selection of rows skips the pages it does not need).
fn open(path: &Path) -> Result<(File, ArrowReaderMetadata), ImportError> {
    let file = File::open(path).map_err(|error| ImportError::Read {
        file: path.display().to_string(),
        error,
    })?;
    let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
    let meta = ArrowReaderMetadata::load(&file, options).map_err(|e| not_parquet(path, &e))?;
    Ok((file, meta))
}

fn not_parquet(path: &Path, e: &parquet::errors::ParquetError) -> ImportError {
    ImportError::Malformed {
        file: path.display().to_string(),
        line: 0,
        reason: format!("not a Parquet file this reader can read: {e}"),
    }
}

/// The rows of `file` (all of them, or those `selection` keeps), as record batches.
fn rows(
    path: &Path,
    file: File,
    meta: &ArrowReaderMetadata,
    selection: Option<RowSelection>,
) -> Result<ParquetRecordBatchReader, ImportError> {
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
        .with_batch_size(BATCH_ROWS);
    if let Some(selection) = selection {
        builder = builder.with_row_selection(selection);
    }
    builder.build().map_err(|e| not_parquet(path, &e))
}

/// Every row of the file, decoded ahead on [`DECODERS`] threads.
fn decoded(path: &Path, meta: &ArrowReaderMetadata) -> Result<GroupBatches, ImportError> {
    GroupBatches::start(path, meta, DECODE_BATCH_ROWS, DECODERS)
}

/// A sample for a streamed import, with what it says of the whole file.
struct FileSample {
    sample: Presample,
    est_docs: u64,
    est_doc_bytes: u64,
}

/// Documents from rows at [`SAMPLE_PLACES`] places spread over the file, written as the
/// import writes them, if the import may be packed while it is read: its ids ascend in
/// the sample and are all of the collection's kind, and it is big enough for a
/// dictionary. Else `None` (the import sorts).
fn presample(
    path: &Path,
    meta: &ArrowReaderMetadata,
    plan: &Plan,
    bulk: &BulkImport,
    opts: &ImportOptions,
) -> Result<Option<FileSample>, ImportError> {
    let total_rows = u64::try_from(meta.metadata().file_metadata().num_rows()).unwrap_or(0);
    // As many documents and bytes as the sorted write's reservoir holds (its most):
    // `BulkImport::streaming` takes the training share from them as the sorted write does.
    let Some((max_docs, max_bytes)) = bulk.sample_limits(u64::MAX) else {
        return Ok(None);
    };
    if total_rows < SAMPLE_PLACES {
        return Ok(None);
    }
    let docs_per_place = (max_docs as u64).div_ceil(SAMPLE_PLACES).max(1);
    let bytes_per_place = (max_bytes as u64).div_ceil(SAMPLE_PLACES).max(1);
    let write = opts.document_options();
    let read = |selection: RowSelection| -> Result<Vec<Built>, ImportError> {
        // A handle of its own (not a clone of `file`'s, which would share its offset): two
        // of these read at once.
        let own = File::open(path).map_err(|error| ImportError::Read {
            file: path.display().to_string(),
            error,
        })?;
        let mut built = Vec::new();
        for batch in rows(path, own, meta, Some(selection))? {
            let batch = batch.map_err(|e| malformed(0, format!("reading a sample: {e}")))?;
            built.extend(build(&batch, plan, 1, write, false)?);
        }
        Ok(built)
    };
    // The first place, alone: how many bytes a document takes says how many rows the
    // others should give.
    let first_rows = FIRST_PLACE_ROWS.min(total_rows / SAMPLE_PLACES).max(1);
    let first = read(selection(
        std::slice::from_ref(&(0..first_rows)),
        total_rows,
    ))?;
    let first_bytes: u64 = first.iter().flatten().map(|(_, _, d)| d.len() as u64).sum();
    let per_doc = first_bytes.div_ceil(first.len().max(1) as u64).max(1);
    let rows_per_place = bytes_per_place.div_ceil(per_doc).min(docs_per_place).max(1);
    // The other places, each at its share of the file, not before the one before ended.
    let mut places = Vec::new();
    let mut end = first_rows;
    for p in 1..SAMPLE_PLACES {
        let start = (total_rows / SAMPLE_PLACES * p).max(end);
        let stop = (start + rows_per_place).min(total_rows);
        if start >= stop {
            break;
        }
        places.push(start..stop);
        end = stop;
    }
    // Two halves decoded at once: the decoding (mostly zstd on every column chunk the
    // places touch, 6-7 % of an import's CPU) is on the calling thread, before anything
    // else can run, and would leave the other core idle.
    let (before, after) = places.split_at(places.len() / 2);
    let (before, after) = rayon::join(
        || read(selection(before, total_rows)),
        || read(selection(after, total_rows)),
    );
    let mut rest = before?;
    rest.extend(after?);
    // Each place's rows, the first place's first.
    let mut lens = vec![first.len()];
    lens.extend(
        places
            .iter()
            .map(|r| usize::try_from(r.end - r.start).unwrap_or(0)),
    );
    let mut built = first.into_iter().chain(rest);
    let mut docs = Vec::new();
    let mut ids: Vec<(String, IdKind)> = Vec::new();
    for len in lens {
        let mut bytes = 0u64;
        let mut taken = 0u64;
        for row in built.by_ref().take(len) {
            // Bad rows are the import's to report.
            let Ok((id, kind, doc)) = row else { continue };
            ids.push((id, kind));
            if taken < docs_per_place && bytes < bytes_per_place {
                bytes += doc.len() as u64;
                taken += 1;
                docs.push(doc);
            }
        }
    }
    if !ascending_ids(&ids, bulk.id_kind()) || docs.is_empty() {
        return Ok(None);
    }
    let sampled = docs.len() as u64;
    let sample_bytes: u64 = docs.iter().map(|d| d.len() as u64).sum();
    let est_doc_bytes =
        u64::try_from(u128::from(sample_bytes) * u128::from(total_rows) / u128::from(sampled))
            .unwrap_or(u64::MAX);
    if !bulk.streams(est_doc_bytes) {
        return Ok(None);
    }
    Ok(Some(FileSample {
        sample: Presample::of_documents(docs),
        est_docs: total_rows,
        est_doc_bytes,
    }))
}

/// The rows of `ranges` (ascending, apart) of a file of `total_rows` rows.
fn selection(ranges: &[std::ops::Range<u64>], total_rows: u64) -> RowSelection {
    let at = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    RowSelection::from_consecutive_ranges(
        ranges.iter().map(|r| at(r.start)..at(r.end)),
        at(total_rows),
    )
}

/// Whether `ids` (stored keys, in file order) strictly ascend and are all of one kind,
/// the collection's (`want`) when it has one: what a streamed import needs (a text id in
/// a collection of integer ids would be turned into a key, which may sort elsewhere).
fn ascending_ids(ids: &[(String, IdKind)], want: Option<IdKind>) -> bool {
    let Some((_, kind)) = ids.first() else {
        return false;
    };
    if want.is_some_and(|w| w != *kind) {
        return false;
    }
    ids.iter().all(|(_, k)| k == kind) && ids.iter().zip(ids.iter().skip(1)).all(|(a, b)| a.0 < b.0)
}
