//! `Collection.to_parquet`: a collection written as a Parquet file in this process
//! (`Snapshot::export_parquet`), without pyarrow.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use stele::arrow::{ArrowOptions, PARQUET_ROW_GROUP_ROWS};

use super::arrow::reader_options;
use super::collection::PyCollection;
use super::find::filter_arg;
use crate::errors::db_err;

#[pymethods]
impl PyCollection {
    /// to_parquet(path, fields=None, filter=None, *, schema=None, sample_rows=None,
    /// misfits="error", row_group_rows=8192) -> int
    ///
    /// Writes the collection (the paths in `fields`, the documents `filter` keeps) to the
    /// Parquet file `path` (zstd; replaced if it exists), typed as `to_arrow` types it, and
    /// returns the rows written. Written in this process, on every core, without pyarrow;
    /// row groups of about `row_group_rows` rows (a group closes once its batches hold that
    /// many; 8,192 keeps memory bounded).
    /// The file is written beside `path` and renamed into place once whole: after an error,
    /// a file already at `path` is left as it was.
    #[pyo3(signature = (path, fields = None, filter = None, *, schema = None, sample_rows = None, misfits = "error", row_group_rows = PARQUET_ROW_GROUP_ROWS))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python keyword arguments of to_parquet, one each"
    )]
    fn to_parquet(
        &self,
        py: Python<'_>,
        path: PathBuf,
        fields: Option<Bound<'_, PyAny>>,
        filter: Option<Bound<'_, PyAny>>,
        schema: Option<Bound<'_, PyAny>>,
        sample_rows: Option<usize>,
        misfits: &str,
        row_group_rows: usize,
    ) -> PyResult<u64> {
        let base = ArrowOptions::new().filter(filter_arg(py, filter.as_ref())?);
        let opts = reader_options(
            py,
            base,
            fields,
            schema,
            row_group_rows,
            sample_rows,
            misfits,
        )?;
        let snap = self.snapshot(py)?;
        let name = self.name.clone();
        py.detach(|| write_file(&snap, &name, opts, &path))
            .map_err(|e| db_err(py, e))
    }
}

/// Writes the Parquet file beside `path` and renames it there once whole: a file already at
/// `path` stays as it was after an error, and no partial file is left.
fn write_file(
    snap: &stele::Snapshot,
    collection: &str,
    opts: ArrowOptions,
    path: &Path,
) -> stele::Result<u64> {
    let io = |op: &'static str, at: &Path| {
        let at = at.to_path_buf();
        move |source| stele::Error::Io {
            op,
            path: at,
            source,
        }
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = std::fs::File::create(&partial).map_err(io("creating", &partial))?;
    let mut out = BufWriter::new(file);
    let written = snap
        .export_parquet(collection, opts, &mut out)
        .and_then(|rows| {
            out.flush().map_err(io("writing", &partial))?;
            drop(out);
            std::fs::rename(&partial, path).map_err(io("renaming the Parquet file to", path))?;
            Ok(rows)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}
