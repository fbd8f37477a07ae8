//! `stele.Snapshot`: a read-only view of every collection as of one commit.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use stele::Snapshot;

use super::collection::{PyCollection, Reader, Taken};
use super::{DocOptions, all_stats};
use crate::errors::db_err;

/// A read-only view of every collection as of one commit.
#[pyclass(module = "stele", name = "Snapshot", frozen)]
#[derive(Debug)]
pub(crate) struct PySnapshot {
    taken: Taken,
    opts: DocOptions,
}

impl PySnapshot {
    /// A snapshot taken now, in this process, of the database in folder `path`.
    pub(super) fn new(snap: Snapshot, path: PathBuf, opts: DocOptions) -> Self {
        PySnapshot {
            taken: Taken::now(snap, path),
            opts,
        }
    }
}

#[pymethods]
impl PySnapshot {
    /// `snap[name]`: collection `name` as of this snapshot (read-only).
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<PyCollection> {
        stele::check_collection_name(name).map_err(|e| db_err(py, e))?;
        Ok(PyCollection {
            reader: Reader::Frozen(self.taken.clone()),
            name: name.to_owned(),
            opts: self.opts,
        })
    }

    fn __contains__(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        Ok(self.taken.snap(py)?.collections().contains(&name))
    }

    /// Names of the collections, sorted.
    fn collections(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self
            .taken
            .snap(py)?
            .collections()
            .into_iter()
            .map(str::to_owned)
            .collect())
    }

    /// Sequence number of the last batch this snapshot contains (0 for none).
    #[getter]
    fn seq(&self) -> u64 {
        self.taken.seq()
    }

    /// {collection: {documents, layers, table_bytes, stored_bytes, unsaved_changes,
    /// packed_blocks, pack_bytes, index_bytes, dictionaries}}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        all_stats(py, self.taken.snap(py)?)
    }

    fn __repr__(&self) -> String {
        format!("<stele.Snapshot seq={}>", self.taken.seq())
    }
}
