//! Python bindings of Stele (`import stele`): lazy JSON documents, sorted tables, the
//! document store (databases, collections, batches, snapshots, queries) and durable maps.
//!
//! The native module is `stele._stele`; the Python package `stele` (in `python/stele/`)
//! re-exports it with the exception classes, type stubs and `collections.abc` registrations.
//! Build with maturin (`pyproject.toml` turns on the `extension-module` feature).

mod backup;
mod columns;
mod database;
mod document;
mod durable;
mod errors;
mod handle;
mod import;
mod serve;
mod table;
mod table_set;

use pyo3::prelude::*;

/// The native part of the `stele` package.
#[pymodule]
fn _stele(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<document::PyView>()?;
    m.add_class::<document::PyDocument>()?;
    m.add_class::<document::PyObjectView>()?;
    m.add_class::<document::PyArrayView>()?;
    m.add_class::<document::PyArrayIter>()?;
    m.add_class::<table::PyTable>()?;
    m.add_class::<table::PyTableIter>()?;
    m.add_class::<table_set::PyTableSet>()?;
    m.add_class::<durable::PyDurableMap>()?;
    m.add_class::<database::PyDatabase>()?;
    m.add_class::<database::PyArrowReader>()?;
    m.add_class::<database::PySnapshot>()?;
    m.add_class::<database::PyCollection>()?;
    m.add_class::<database::PyIdIter>()?;
    m.add_class::<database::PyQueryResult>()?;
    m.add_class::<database::PyCursor>()?;
    m.add_class::<database::PyBatch>()?;
    m.add_class::<serve::PyServer>()?;
    m.add_function(wrap_pyfunction!(backup::verify, m)?)?;
    m.add_function(wrap_pyfunction!(backup::restore, m)?)?;
    m.add_function(wrap_pyfunction!(serve::serve, m)?)?;
    m.add_function(wrap_pyfunction!(columns::build_columns, m)?)?;
    m.add_function(wrap_pyfunction!(document::dumps, m)?)?;
    m.add_function(wrap_pyfunction!(document::loads, m)?)?;
    m.add_function(wrap_pyfunction!(document::json_to_document, m)?)?;
    m.add_function(wrap_pyfunction!(document::document_to_json, m)?)?;
    m.add("DETACH_BYTES", document::DETACH_BYTES)?;
    Ok(())
}
