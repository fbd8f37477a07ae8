//! `Collection.to_arrow` and `stele.ArrowReader`: a collection streamed as Arrow record
//! batches through the Arrow PyCapsule interface (`__arrow_c_stream__`), which pyarrow,
//! DuckDB, Polars and pandas read without JSON in between and without pyarrow installed
//! here. Each call of `__arrow_c_stream__` is a new stream over the same snapshot, so a
//! reader can be read any number of times (DuckDB reads a capsule once per query).

use std::ffi::CString;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatchReader, ffi::FFI_ArrowSchema};
use arrow_schema::Schema;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyList, PyString};
use stele::arrow::{ArrowOptions, ArrowReader, DEFAULT_BATCH_ROWS, DEFAULT_SAMPLE_ROWS};

use super::PyCursor;
use super::collection::PyCollection;
use super::find::filter_arg;
use crate::errors::{Kind, db_err, new_err, type_err};

/// A collection (or the documents a filter keeps) as Arrow record batches; see
/// `Collection.to_arrow`.
#[pyclass(module = "stele", name = "ArrowReader", frozen)]
pub(crate) struct PyArrowReader {
    /// The stream as planned: its schema fixed, positioned at the start; each consumer
    /// reads a restarted copy.
    plan: ArrowReader,
}

/// The names of the capsules, as the Arrow PyCapsule interface requires.
fn capsule_name(name: &str) -> PyResult<CString> {
    CString::new(name).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// The schema of an object with `__arrow_c_schema__` (a pyarrow schema, a Polars schema...).
fn schema_arg(py: Python<'_>, schema: &Bound<'_, PyAny>) -> PyResult<Schema> {
    if !schema.hasattr("__arrow_c_schema__")? {
        return Err(type_err(
            "schema must have __arrow_c_schema__ (a pyarrow.Schema)",
            schema,
        ));
    }
    let capsule = schema.call_method0("__arrow_c_schema__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let name = capsule_name("arrow_schema")?;
    let ptr = capsule.pointer_checked(Some(&name))?;
    // SAFETY: a capsule named "arrow_schema" holds an `ArrowSchema` C struct (the Arrow
    // PyCapsule interface); the capsule stays alive (borrowed) while it is read, and
    // reading does not move or release it (the capsule's destructor does).
    let ffi = unsafe { ptr.cast::<FFI_ArrowSchema>().as_ref() };
    Schema::try_from(ffi).map_err(|e| {
        new_err(
            py,
            Kind::InvalidInput,
            format!("the schema given cannot be read: {e}"),
        )
    })
}

/// The module `name`, which the helper `what` needs; a clear error when it is not installed.
fn optional<'py>(py: Python<'py>, name: &str, what: &str) -> PyResult<Bound<'py, PyModule>> {
    py.import(name).map_err(|e| {
        pyo3::exceptions::PyImportError::new_err(format!(
            "ArrowReader.{what}() needs the package {name} (pip install {name}); {e}. Without it, any reader of the Arrow PyCapsule interface reads the reader itself (duckdb, polars.DataFrame(reader))"
        ))
    })
}

/// `base` with the keyword arguments `to_arrow` takes.
pub(super) fn reader_options(
    py: Python<'_>,
    base: ArrowOptions,
    fields: Option<Bound<'_, PyAny>>,
    schema: Option<Bound<'_, PyAny>>,
    batch_rows: usize,
    sample_rows: Option<usize>,
    misfits: &str,
) -> PyResult<ArrowOptions> {
    let mut opts = base
        .batch_rows(batch_rows)
        .sample_rows(sample_rows.unwrap_or(DEFAULT_SAMPLE_ROWS));
    opts = match misfits {
        "error" => opts,
        "null" => opts.misfits_as_null(true),
        other => {
            return Err(new_err(
                py,
                Kind::InvalidInput,
                format!("misfits is \"error\" or \"null\", not {other:?}"),
            ));
        }
    };
    if let Some(f) = fields.filter(|f| !f.is_none()) {
        let paths: Vec<String> = if let Ok(s) = f.cast::<PyString>() {
            s.to_str()?
                .split(',')
                .map(|p| p.trim().to_owned())
                .collect()
        } else if let Ok(list) = f.extract::<Vec<String>>() {
            list
        } else {
            return Err(type_err("fields must be a list of paths", &f));
        };
        opts = opts.fields(&paths);
    }
    if let Some(s) = schema.filter(|s| !s.is_none()) {
        opts = opts.schema(std::sync::Arc::new(schema_arg(py, &s)?));
    }
    Ok(opts)
}

#[pymethods]
impl PyCursor {
    /// to_arrow(fields=None, *, schema=None, batch_rows=65536, sample_rows=None,
    /// misfits="error") -> ArrowReader
    ///
    /// The rows this `find` returns as Arrow record batches: its filter, skip and limit,
    /// in its sort's order and its projection's shape (`deep.b` kept: a `deep` struct
    /// column holding `b`). Without a sort or a projection the documents are read as
    /// `Collection.to_arrow` reads them; with one, the rows come from the query (indexes,
    /// a spilling sort), the types are inferred from the rows, and the query runs once
    /// more to infer them unless `schema` is given. `fields` names paths into the rows.
    #[pyo3(signature = (fields = None, *, schema = None, batch_rows = DEFAULT_BATCH_ROWS, sample_rows = None, misfits = "error"))]
    fn to_arrow(
        &self,
        py: Python<'_>,
        fields: Option<Bound<'_, PyAny>>,
        schema: Option<Bound<'_, PyAny>>,
        batch_rows: usize,
        sample_rows: Option<usize>,
        misfits: &str,
    ) -> PyResult<PyArrowReader> {
        let base = ArrowOptions::new();
        let opts = reader_options(py, base, fields, schema, batch_rows, sample_rows, misfits)?;
        let plan = py
            .detach(|| self.snap.query_arrow(&self.query, opts))
            .map_err(|e| db_err(py, e))?;
        Ok(PyArrowReader { plan })
    }

    /// The Arrow PyCapsule interface: `to_arrow()`'s stream, so DuckDB, Polars and pyarrow
    /// read a `find` result directly.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let reader = self.to_arrow(py, None, None, DEFAULT_BATCH_ROWS, None, "error")?;
        reader.__arrow_c_stream__(py, requested_schema)
    }
}

#[pymethods]
impl PyCollection {
    /// to_arrow(fields=None, filter=None, *, schema=None, batch_rows=65536,
    /// sample_rows=None, misfits="error") -> ArrowReader
    ///
    /// The collection as Arrow record batches of at most `batch_rows` rows, read from this
    /// moment's snapshot. Columns: `_id` and every root property, or the paths in `fields`
    /// (`["_id", "name", "address.city"]`); types inferred from every document (or the first
    /// `sample_rows`: faster, a later misfit possible) (objects to structs, arrays to lists, mixed types and integers beyond 64
    /// bits to JSON text) or given as a pyarrow `schema`. `filter` is a query filter. A value
    /// that does not fit its column stops the stream with an error naming the document and
    /// the field, or reads as null with `misfits="null"`.
    #[pyo3(signature = (fields = None, filter = None, *, schema = None, batch_rows = DEFAULT_BATCH_ROWS, sample_rows = None, misfits = "error"))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python keyword arguments of to_arrow, one each"
    )]
    fn to_arrow(
        &self,
        py: Python<'_>,
        fields: Option<Bound<'_, PyAny>>,
        filter: Option<Bound<'_, PyAny>>,
        schema: Option<Bound<'_, PyAny>>,
        batch_rows: usize,
        sample_rows: Option<usize>,
        misfits: &str,
    ) -> PyResult<PyArrowReader> {
        let base = ArrowOptions::new().filter(filter_arg(py, filter.as_ref())?);
        let opts = reader_options(py, base, fields, schema, batch_rows, sample_rows, misfits)?;
        let snap = self.snapshot(py)?;
        let name = self.name.clone();
        let plan = py
            .detach(|| snap.scan_arrow(&name, opts))
            .map_err(|e| db_err(py, e))?;
        Ok(PyArrowReader { plan })
    }

    /// aggregate_arrow(pipeline, fields=None, *, schema=None, batch_rows=65536,
    /// sample_rows=None, misfits="error") -> ArrowReader
    ///
    /// The output of `aggregate(pipeline)` as Arrow record batches: a column per property
    /// of the output documents (a `$group`'s `_id` is its key, not a document id), types
    /// inferred from every output document unless `schema` is given, or the paths in
    /// `fields`. The pipeline runs once, now (its output held, as `aggregate` holds it);
    /// the reader can be read any number of times. A misfit names the output row.
    #[pyo3(signature = (pipeline, fields = None, *, schema = None, batch_rows = DEFAULT_BATCH_ROWS, sample_rows = None, misfits = "error"))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python keyword arguments of aggregate_arrow, one each"
    )]
    fn aggregate_arrow(
        &self,
        py: Python<'_>,
        pipeline: &Bound<'_, PyAny>,
        fields: Option<Bound<'_, PyAny>>,
        schema: Option<Bound<'_, PyAny>>,
        batch_rows: usize,
        sample_rows: Option<usize>,
        misfits: &str,
    ) -> PyResult<PyArrowReader> {
        let pipeline = super::aggregate::pipeline_arg(py, pipeline)?;
        let opts = reader_options(
            py,
            ArrowOptions::new(),
            fields,
            schema,
            batch_rows,
            sample_rows,
            misfits,
        )?;
        let snap = self.queried(py)?;
        let name = self.name.clone();
        let plan = py
            .detach(|| snap.aggregate_arrow(&name, &pipeline, opts))
            .map_err(|e| db_err(py, e))?;
        Ok(PyArrowReader { plan })
    }
}

#[pymethods]
impl PyArrowReader {
    /// The Arrow PyCapsule interface: a new stream from the first document, each call.
    /// `requested_schema` is accepted and not applied (the interface makes it a hint); give
    /// `schema=` to `to_arrow` for other types.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(self.plan.restart());
        let stream = FFI_ArrowArrayStream::new(reader);
        // The consumer moves the stream out of the capsule (leaving it released); a capsule
        // never consumed drops it, which releases the reader.
        PyCapsule::new(py, stream, Some(capsule_name("arrow_array_stream")?))
    }

    /// The schema, through the Arrow PyCapsule interface (`pyarrow.schema(reader)`).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = self.plan.schema();
        let ffi = FFI_ArrowSchema::try_from(schema.as_ref())
            .map_err(|e| new_err(py, Kind::Stele, e.to_string()))?;
        PyCapsule::new(py, ffi, Some(capsule_name("arrow_schema")?))
    }

    /// read_all() -> pyarrow.Table: every batch, in one table (needs pyarrow).
    fn read_all<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        optional(slf.py(), "pyarrow", "read_all")?.call_method1("table", (slf,))
    }

    /// to_pandas() -> pandas.DataFrame (needs pyarrow and pandas).
    fn to_pandas<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        optional(slf.py(), "pandas", "to_pandas")?;
        Self::read_all(slf)?.call_method0("to_pandas")
    }

    /// to_polars() -> polars.DataFrame (needs polars, not pyarrow).
    fn to_polars<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        optional(slf.py(), "polars", "to_polars")?.call_method1("DataFrame", (slf,))
    }

    /// The column names, `_id` first when it is read.
    #[getter]
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let schema = self.plan.schema();
        PyList::new(py, schema.fields().iter().map(|f| f.name().as_str()))
    }

    fn __repr__(&self) -> String {
        let schema = self.plan.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        format!("<stele.ArrowReader columns={names:?}>")
    }
}
