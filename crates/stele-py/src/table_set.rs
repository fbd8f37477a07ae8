//! Table sets: shards with disjoint key ranges read as one table, and the steps a
//! distributed build takes (plan split points, partition keys, commit the manifest).
//!
//! Reads behave as those of [`crate::table::PyTable`]: keys and values come back as `bytes`.
//! The engines' helpers (`stele.dask`, `stele.spark`) are Python code on top of these.

use std::ops::Bound as KeyBound;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use stele_table::{DuplicatePolicy, TableSet};

use crate::errors::{choice, table_err};
use crate::table::{
    PyTableIter, Source, Yield, entry_tuple, key_arg, out_of_range, position, prefix_bounds,
    range_bounds,
};

/// A table set: many tables (shards) with disjoint key ranges, read as one sorted table
/// through its manifest (`.sts`). A read-only mapping of bytes to bytes like `Table`; shards
/// are opened when first read.
///
/// ```python
/// s = stele.TableSet("out/set.sts")
/// s["react"], "react" in s, len(s), list(s.prefix("@babel/")), s.nth(-1), s.rank("lodash")
/// ```
#[pyclass(module = "stele", name = "TableSet", frozen, mapping)]
#[derive(Debug)]
pub(crate) struct PyTableSet {
    set: Arc<TableSet>,
}

impl PyTableSet {
    fn iter(
        &self,
        lo: KeyBound<Vec<u8>>,
        hi: KeyBound<Vec<u8>>,
        reverse: bool,
        what: Yield,
    ) -> PyTableIter {
        PyTableIter::new(Source::Set(Arc::clone(&self.set)), lo, hi, reverse, what)
    }
}

#[pymethods]
impl PyTableSet {
    /// TableSet(path): opens the set whose manifest is `path` (same as `TableSet.open`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<PyTableSet> {
        PyTableSet::open(py, path)
    }

    /// TableSet.open(path): opens a set's manifest; its shards are read from its folder
    /// when first needed (`CorruptError` if the manifest is damaged).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<PyTableSet> {
        let set = py
            .detach(|| TableSet::open(&path))
            .map_err(|e| table_err(py, e))?;
        Ok(PyTableSet { set: Arc::new(set) })
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
    ) -> PyResult<PyTableSet> {
        let set = py
            .detach(|| TableSet::commit(&manifest, &shards, &splits))
            .map_err(|e| table_err(py, e))?;
        Ok(PyTableSet { set: Arc::new(set) })
    }

    /// TableSet.merge(sets, manifest, shards, *, duplicates="keep_last") -> TableSet: one
    /// new set of about `shards` equal shards from several sets (k-way); a key in several
    /// sets keeps the last set's value ("keep_last"), the first's, or fails ("reject").
    #[staticmethod]
    #[pyo3(signature = (sets, manifest, shards, *, duplicates = "keep_last"))]
    fn merge(
        py: Python<'_>,
        sets: Vec<PyRef<'_, PyTableSet>>,
        manifest: PathBuf,
        shards: usize,
        duplicates: &str,
    ) -> PyResult<PyTableSet> {
        let policy = choice(
            py,
            "duplicates",
            duplicates,
            &[
                ("reject", DuplicatePolicy::Reject),
                ("keep_last", DuplicatePolicy::KeepLast),
                ("keep_first", DuplicatePolicy::KeepFirst),
            ],
        )?;
        let inner: Vec<Arc<TableSet>> = sets.iter().map(|s| Arc::clone(&s.set)).collect();
        let set = py
            .detach(|| {
                let refs: Vec<&TableSet> = inner.iter().map(|s| s.as_ref()).collect();
                TableSet::merge(&refs, &manifest, shards, policy)
            })
            .map_err(|e| table_err(py, e))?;
        Ok(PyTableSet { set: Arc::new(set) })
    }

    /// The manifest's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.set.path().to_path_buf()
    }

    /// The shards in key order: dicts of id, path, entries, file_bytes, first_key, last_key.
    fn shards<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for (i, s) in self.set.shards().iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("id", s.id.to_string())?;
            d.set_item("path", self.set.shard_path(i))?;
            d.set_item("entries", s.entries)?;
            d.set_item("file_bytes", s.file_bytes)?;
            d.set_item("first_key", PyBytes::new(py, &s.first_key))?;
            d.set_item("last_key", PyBytes::new(py, &s.last_key))?;
            list.append(d)?;
        }
        Ok(list)
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.set.len()).unwrap_or(usize::MAX)
    }

    /// `s[key]`: the value as bytes; `KeyError` if absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.set.get(key_arg(key)?).map_err(|e| table_err(py, e))? {
            Some(v) => Ok(PyBytes::new(py, v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// get(key, default=None): the value as bytes, `default` if absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(
            match self.set.get(key_arg(key)?).map_err(|e| table_err(py, e))? {
                Some(v) => PyBytes::new(py, v).into_any(),
                None => default.unwrap_or_else(|| py.None().into_bound(py)),
            },
        )
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(key) = key_arg(key) else {
            return Ok(false);
        };
        Ok(self.set.get(key).map_err(|e| table_err(py, e))?.is_some())
    }

    /// Iterates over the keys in order (bytes).
    fn __iter__(&self) -> PyTableIter {
        self.keys()
    }

    /// Keys in order (an iterator of bytes).
    fn keys(&self) -> PyTableIter {
        self.iter(KeyBound::Unbounded, KeyBound::Unbounded, false, Yield::Keys)
    }

    /// Values in key order (an iterator of bytes).
    fn values(&self) -> PyTableIter {
        self.iter(
            KeyBound::Unbounded,
            KeyBound::Unbounded,
            false,
            Yield::Values,
        )
    }

    /// (key, value) pairs in key order (an iterator of (bytes, bytes)).
    fn items(&self) -> PyTableIter {
        self.iter(
            KeyBound::Unbounded,
            KeyBound::Unbounded,
            false,
            Yield::Items,
        )
    }

    /// range(start=None, end=None, *, reverse=False): (key, value) pairs with
    /// `start <= key < end` (None: unbounded), across shards, in key order or reversed.
    #[pyo3(signature = (start = None, end = None, *, reverse = false))]
    fn range(
        &self,
        start: Option<Bound<'_, PyAny>>,
        end: Option<Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyTableIter> {
        let (lo, hi) = range_bounds(start.as_ref(), end.as_ref())?;
        Ok(self.iter(lo, hi, reverse, Yield::Items))
    }

    /// prefix(prefix, *, reverse=False): (key, value) pairs whose key starts with `prefix`.
    #[pyo3(signature = (prefix, *, reverse = false))]
    fn prefix(&self, prefix: &Bound<'_, PyAny>, reverse: bool) -> PyResult<PyTableIter> {
        let (lo, hi) = prefix_bounds(prefix)?;
        Ok(self.iter(lo, hi, reverse, Yield::Items))
    }

    /// nth(i): the (key, value) pair at position `i` over the whole set (negative counts
    /// from the end); `IndexError` past the end.
    fn nth<'py>(&self, py: Python<'py>, i: i64) -> PyResult<Bound<'py, PyTuple>> {
        let len = self.set.len();
        let entry = match position(i, len) {
            Some(p) => self.set.nth(p).map_err(|e| table_err(py, e))?,
            None => None,
        };
        entry_tuple(py, entry)?.ok_or_else(|| out_of_range(i, len))
    }

    /// rank(key): the number of keys smaller than `key` over the whole set.
    fn rank(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.set.rank(key_arg(key)?).map_err(|e| table_err(py, e))
    }

    /// The (key, value) pair with the smallest key, or None if the set is empty.
    fn first<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let entry = self.set.first().map_err(|e| table_err(py, e))?;
        entry_tuple(py, entry)
    }

    /// The (key, value) pair with the largest key, or None if the set is empty.
    fn last<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let entry = self.set.last().map_err(|e| table_err(py, e))?;
        entry_tuple(py, entry)
    }

    /// Checks every block checksum of every shard (without the GIL).
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let set = &self.set;
        py.detach(|| set.verify_all()).map_err(|e| table_err(py, e))
    }

    fn __repr__(&self) -> String {
        format!(
            "<stele.TableSet {:?} shards={} entries={}>",
            self.set.path(),
            self.set.shards().len(),
            self.set.len()
        )
    }
}
