//! Table sets: shards with disjoint key ranges read as one table, and the steps a
//! distributed build takes (plan split points, partition keys, commit the manifest).
//!
//! `TableSet` is a subclass of `Table`: every read (`t[k]`, iteration, range, prefix, nth,
//! rank, stats, verify) is the table's, dispatched on [`Reader`]. The engines' helpers
//! (`stele.dask`, `stele.spark`) are Python code on top of these.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use stele_table::TableSet;

use crate::errors::table_err;
use crate::table::{PyTable, Reader, key_arg};

/// A table set: many tables (shards) with disjoint key ranges, read as one sorted table
/// through its manifest (`.sts`). A `Table` in every read (keys and values come back as
/// `bytes`); shards are opened when first read.
///
/// ```python
/// s = stele.TableSet("out/set.sts")
/// s["react"], "react" in s, len(s), list(s.prefix("@babel/")), s.nth(-1), s.rank("lodash")
/// ```
#[pyclass(module = "stele", name = "TableSet", frozen, extends = PyTable)]
#[derive(Debug)]
pub(crate) struct PyTableSet;

/// A `TableSet` object for `set`.
fn new_set(py: Python<'_>, set: TableSet) -> PyResult<Py<PyTableSet>> {
    let init = PyClassInitializer::from(PyTable {
        table: Reader::Set(Arc::new(set)),
    })
    .add_subclass(PyTableSet);
    Py::new(py, init)
}

/// The set a `TableSet` object reads.
fn set_of(obj: &Bound<'_, PyTableSet>) -> PyResult<Arc<TableSet>> {
    match &obj.as_super().get().table {
        Reader::Set(s) => Ok(Arc::clone(s)),
        Reader::Table(_) => Err(pyo3::exceptions::PyTypeError::new_err("not a table set")),
    }
}

#[pymethods]
impl PyTableSet {
    /// TableSet(path): opens the set whose manifest is `path` (same as `TableSet.open`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<PyClassInitializer<PyTableSet>> {
        let set = py
            .detach(|| TableSet::open(&path))
            .map_err(|e| table_err(py, e))?;
        Ok(PyClassInitializer::from(PyTable {
            table: Reader::Set(Arc::new(set)),
        })
        .add_subclass(PyTableSet))
    }

    /// TableSet.open(path): opens a set's manifest; its shards are read from its folder
    /// when first needed (`CorruptError` if the manifest is damaged).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyTableSet>> {
        let set = py
            .detach(|| TableSet::open(&path))
            .map_err(|e| table_err(py, e))?;
        new_set(py, set)
    }

    /// TableSet.plan(sample, shards) -> list[bytes]: split points for `shards` partitions,
    /// the quantiles of a sample of the keys (str or bytes); at most `shards - 1` of them.
    #[staticmethod]
    fn plan(py: Python<'_>, sample: &Bound<'_, PyAny>, shards: usize) -> PyResult<Py<PyList>> {
        let mut keys = Vec::new();
        for k in sample.try_iter()? {
            keys.push(key_arg(&k?)?.to_vec());
        }
        let splits = py.detach(|| TableSet::plan(keys, shards));
        let list = PyList::empty(py);
        for s in splits {
            list.append(PyBytes::new(py, &s))?;
        }
        Ok(list.unbind())
    }

    /// TableSet.partition(splits, key) -> int: the partition (0 to len(splits)) of `key`.
    #[staticmethod]
    fn partition(splits: Vec<Vec<u8>>, key: &Bound<'_, PyAny>) -> PyResult<usize> {
        Ok(TableSet::partition(&splits, key_arg(key)?))
    }

    /// TableSet.commit(manifest, shards, splits=()) -> TableSet: checks the shard tables
    /// (content-named `.stt` files in the manifest's folder, ranges disjoint, each within one
    /// partition of `splits` if given) and writes the manifest atomically. Committing the
    /// same shards again writes the same bytes.
    #[staticmethod]
    #[pyo3(signature = (manifest, shards, splits = Vec::new()))]
    fn commit(
        py: Python<'_>,
        manifest: PathBuf,
        shards: Vec<PathBuf>,
        splits: Vec<Vec<u8>>,
    ) -> PyResult<Py<PyTableSet>> {
        let set = py
            .detach(|| TableSet::commit(&manifest, &shards, &splits))
            .map_err(|e| table_err(py, e))?;
        new_set(py, set)
    }

    /// TableSet.merge(sets, manifest, shards, *, duplicates="keep_last") -> TableSet: one
    /// new set of about `shards` equal shards from several sets (k-way); a key in several
    /// sets keeps the last set's value ("keep_last"), the first's, or fails ("reject").
    #[staticmethod]
    #[pyo3(signature = (sets, manifest, shards, *, duplicates = "keep_last"))]
    fn merge(
        py: Python<'_>,
        sets: Vec<Bound<'_, PyTableSet>>,
        manifest: PathBuf,
        shards: usize,
        duplicates: &str,
    ) -> PyResult<Py<PyTableSet>> {
        let policy = crate::table::duplicate_policy(py, duplicates)?;
        let inner = sets.iter().map(set_of).collect::<PyResult<Vec<_>>>()?;
        let set = py
            .detach(|| {
                let refs: Vec<&TableSet> = inner.iter().map(|s| s.as_ref()).collect();
                TableSet::merge(&refs, &manifest, shards, policy)
            })
            .map_err(|e| table_err(py, e))?;
        new_set(py, set)
    }

    /// The shards in key order: dicts of id, path, entries, file_bytes, first_key, last_key.
    fn shards<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        let py = slf.py();
        let set = set_of(slf)?;
        let list = PyList::empty(py);
        for (i, s) in set.shards().iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("id", s.id.to_string())?;
            d.set_item("path", set.shard_path(i))?;
            d.set_item("entries", s.entries)?;
            d.set_item("file_bytes", s.file_bytes)?;
            d.set_item("first_key", PyBytes::new(py, &s.first_key))?;
            d.set_item("last_key", PyBytes::new(py, &s.last_key))?;
            list.append(d)?;
        }
        Ok(list)
    }
}
