//! `stele.Batch`: puts and deletes across collections, committed all or nothing.

use std::sync::Mutex;

use pyo3::prelude::*;
use stele::Batch;

use super::{Payload, PyDatabase, id_arg};
use crate::errors::{Kind, db_err, new_err};

/// Puts and deletes across collections, committed all or nothing.
#[pyclass(module = "stele", name = "Batch", frozen)]
#[derive(Debug)]
pub(crate) struct PyBatch {
    db: Py<PyDatabase>,
    /// None once committed or discarded.
    batch: Mutex<Option<Batch>>,
}

impl PyBatch {
    /// An open batch of database `db`.
    pub(super) fn new(db: Py<PyDatabase>, batch: Batch) -> Self {
        PyBatch {
            db,
            batch: Mutex::new(Some(batch)),
        }
    }

    /// Runs `f` on the open batch; the lock is held only while `f` runs (pure Rust).
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Batch) -> stele::Result<T>,
    ) -> PyResult<T> {
        let mut guard = match self.batch.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let batch = guard.as_mut().ok_or_else(|| done(py))?;
        f(batch).map_err(|e| db_err(py, e))
    }

    fn take(&self) -> Option<Batch> {
        match self.batch.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        }
    }
}

fn done(py: Python<'_>) -> PyErr {
    new_err(
        py,
        Kind::Stele,
        "this batch was already committed or discarded; take a new one with db.batch()".into(),
    )
}

#[pymethods]
impl PyBatch {
    /// put(collection, id, value): inserts or replaces a document (a dict or other JSON-like
    /// value, JSON text as str or bytes, or a Document). Converted and checked now, so a bad
    /// document raises here; written at commit.
    fn put(
        &self,
        py: Python<'_>,
        collection: &str,
        id: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let id = id_arg(id)?;
        let payload = Payload::of(py, value)?;
        self.with(py, |b| payload.add(b, collection, &id))
    }

    /// delete(collection, id): deletes a document at commit (nothing if it does not exist).
    fn delete(&self, py: Python<'_>, collection: &str, id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = id_arg(id)?;
        self.with(py, |b| match id {
            super::PyId::Int(n) => b.delete_int(collection, n),
            super::PyId::Text(ref s) => b.delete(collection, s),
        })
    }

    /// Number of operations.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |b| Ok(b.len()))
    }

    /// commit(): applies every operation atomically and durably (without the GIL). The
    /// batch is done afterwards, whatever the outcome.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let batch = self.take().ok_or_else(|| done(py))?;
        let db = self.db.get().db(py)?;
        py.detach(|| db.commit(batch)).map_err(|e| db_err(py, e))
    }

    /// discard(): drops every operation; nothing is written.
    fn discard(&self) {
        drop(self.take());
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Commits on normal exit (unless already committed or discarded), discards on an
    /// exception, which then propagates.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if !exc_type.is_none() {
            self.discard();
            return Ok(false);
        }
        let Some(batch) = self.take() else {
            return Ok(false);
        };
        let db = self.db.get().db(py)?;
        py.detach(|| db.commit(batch)).map_err(|e| db_err(py, e))?;
        Ok(false)
    }
}
