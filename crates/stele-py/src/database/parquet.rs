//! `Collection.to_parquet`: a collection written as a Parquet file in this process
//! (`Snapshot::export_parquet`), without pyarrow; `Collection.import_parquet`: a Parquet
//! file read back in this process (`stele::arrow::import_parquet_file`, the import
//! `stele import` runs), without pyarrow.

use std::path::PathBuf;

use pyo3::prelude::*;
use stele::arrow::{ArrowOptions, PARQUET_ROW_GROUP_ROWS};

use super::arrow::reader_options;
use super::collection::PyCollection;
use super::find::filter_arg;
use crate::errors::db_err;
use crate::import::{ImportArgs, run_import};

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
    /// The file is written beside `path`, synced, and renamed into place once whole
    /// (`Snapshot::export_parquet_file`): when this returns it is durable, and after an
    /// error a file already at `path` is left as it was.
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
        py.detach(|| snap.export_parquet_file(&name, opts, &path))
            .map_err(|e| db_err(py, e))
    }

    /// import_parquet(path, *, id=None, skip_bad=False, batch=10000) -> dict
    ///
    /// Imports every row of the Parquet file `path` as one document, as `import_arrow`
    /// imports Arrow data (the same columns, ids and errors), reading the file in this
    /// process without pyarrow (the import `stele import` runs): all or nothing. Ids from
    /// the column `id` (`_id`, the column `to_parquet` writes, when there is one), else
    /// numbered from 1. A file whose ids ascend (one `to_parquet` wrote) is packed while it
    /// is read. Returns the same dict as `import_file`.
    #[pyo3(signature = (path, *, id = None, skip_bad = false, batch = 10_000))]
    fn import_parquet<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        id: Option<&str>,
        skip_bad: bool,
        batch: usize,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let db = self.writer(py)?;
        let args = ImportArgs {
            format: None,
            id_field: id,
            skip_bad,
            wrap_non_objects: None,
            duplicates: "last_wins",
            batch,
        };
        let name = self.name.clone();
        let missing = format!("no file {}: check the path", path.display());
        run_import(py, &args, &missing, move |opts, progress| {
            stele::arrow::import_parquet_file(&db, &name, &path, opts, progress)
        })
    }
}
