//! `Collection.put_arrow` / `import_arrow`: anything with the Arrow PyCapsule interface
//! (`__arrow_c_stream__`: pyarrow tables and readers, pandas and Polars frames, DuckDB
//! results; or `__arrow_c_array__`: a record batch) imported through the store's own
//! import (`stele::arrow::import_arrow`): all or nothing, the same bulk write as
//! `import_file`, without the GIL.

use std::ffi::CString;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader, StructArray};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use super::collection::PyCollection;
use crate::errors::{Kind, new_err, type_err};
use crate::import::{ImportArgs, run_import};

/// A capsule's pointer, checked against the name the interface gives it.
fn capsule_ptr(capsule: &Bound<'_, PyAny>, name: &str) -> PyResult<*mut std::ffi::c_void> {
    let capsule = capsule.cast::<PyCapsule>()?;
    let name =
        CString::new(name).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(capsule.pointer_checked(Some(&name))?.as_ptr())
}

/// The batches of `data`, moved out of its capsules.
fn batches(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Box<dyn RecordBatchReader + Send>> {
    let bad = |e: arrow_schema::ArrowError| {
        new_err(
            py,
            Kind::InvalidInput,
            format!("the Arrow data cannot be read: {e}"),
        )
    };
    if data.hasattr("__arrow_c_stream__")? {
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let ptr = capsule_ptr(&capsule, "arrow_array_stream")?.cast::<FFI_ArrowArrayStream>();
        // SAFETY: a capsule named "arrow_array_stream" holds an initialised, aligned
        // `ArrowArrayStream` (the Arrow PyCapsule interface), alive while `capsule` is;
        // `from_raw` moves it out and leaves it released, as the interface asks of a
        // consumer, so the capsule's destructor does not release it again.
        let reader = unsafe { RecordBatchStreamReader::from_raw(ptr) }.map_err(bad)?;
        return Ok(Box::new(reader));
    }
    if data.hasattr("__arrow_c_array__")? {
        let pair = data.call_method0("__arrow_c_array__")?;
        let pair = pair.cast::<PyTuple>()?;
        let (schema, array) = (pair.get_item(0)?, pair.get_item(1)?);
        let schema_ptr = capsule_ptr(&schema, "arrow_schema")?.cast::<FFI_ArrowSchema>();
        let array_ptr = capsule_ptr(&array, "arrow_array")?.cast::<FFI_ArrowArray>();
        // SAFETY: capsules named "arrow_schema" and "arrow_array" hold an initialised,
        // aligned `ArrowSchema` and `ArrowArray`, alive while `schema` and `array` are. The
        // schema is only borrowed (its capsule releases it); the array is moved out and
        // left released, as a consumer must, and `from_ffi` takes ownership of it.
        let data = unsafe {
            let ffi_array = FFI_ArrowArray::from_raw(array_ptr);
            from_ffi(ffi_array, &*schema_ptr)
        }
        .map_err(bad)?;
        let batch = RecordBatch::from(StructArray::from(data));
        let schema = batch.schema();
        return Ok(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)));
    }
    Err(type_err(
        "put_arrow takes Arrow data: an object with __arrow_c_stream__ or __arrow_c_array__ (a pyarrow Table or RecordBatch, a pandas or Polars DataFrame, a DuckDB result)",
        data,
    ))
}

#[pymethods]
impl PyCollection {
    /// put_arrow(data, *, id=None, batch=10000) -> dict
    ///
    /// Imports every row of Arrow `data` (anything with `__arrow_c_stream__` or
    /// `__arrow_c_array__`: pyarrow, pandas, Polars, DuckDB results) as one document each,
    /// the columns its properties (nulls left out), written straight into documents (no
    /// JSON in between) on every core and handed to the store's own bulk write: all or
    /// nothing, as `import_file`. Ids from the column `id` (default: `_id` when there is
    /// one), else numbered from 1. The column `_id` as the ids is not a property (as
    /// `to_arrow` gives it), and `doc._id` is then the property `_id`: a collection read
    /// with `to_arrow` imports back to the same documents; another id column stays in the
    /// documents. Columns
    /// JSON has no value for (dates, binary, ...) raise InvalidInput before anything is
    /// written: cast them to strings first. Returns the same dict as `import_file`.
    #[pyo3(signature = (data, *, id = None, batch = 10_000))]
    fn put_arrow<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        id: Option<&str>,
        batch: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = self.writer(py)?;
        let reader = batches(py, data)?;
        let schema = reader.schema();
        let id = match id {
            Some(col) if schema.field_with_name(col).is_err() => {
                return Err(new_err(
                    py,
                    Kind::InvalidInput,
                    format!(
                        "id={col:?} names no column; the columns are {:?}",
                        schema.fields().iter().map(|f| f.name()).collect::<Vec<_>>()
                    ),
                ));
            }
            Some(col) => Some(col.to_owned()),
            None => schema.field_with_name("_id").ok().map(|_| "_id".to_owned()),
        };
        let args = ImportArgs {
            format: None,
            id_field: id.as_deref(),
            skip_bad: false,
            wrap_non_objects: None,
            duplicates: "last_wins",
            batch,
        };
        let name = self.name.clone();
        run_import(py, &args, "the Arrow data", move |opts, progress| {
            stele::arrow::import_arrow(&db, &name, reader, opts, progress)
        })
    }

    /// import_arrow(data, *, id=None, batch=10000) -> dict: the same as `put_arrow`.
    #[pyo3(signature = (data, *, id = None, batch = 10_000))]
    fn import_arrow<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        id: Option<&str>,
        batch: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.put_arrow(py, data, id, batch)
    }
}
