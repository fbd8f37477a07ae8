//! Durable maps: a sorted map of bytes on a stack of tables, with saves, compaction and roots.
//!
//! A [`PyDurableMap`] holds its map as `Mutex<Arc<DurableMap>>`, and the mutex is only ever
//! held for a moment, never across a call into Python or a release of the GIL:
//!
//! - reads clone the `Arc` and read from it, so a Python allocation (which may run any
//!   finalizer, even one that touches this map) never happens under the lock;
//! - `put` and `remove` change the map in place through `Arc::make_mut`; when an iterator or a
//!   read in another thread still holds the `Arc`, this copies the map first, which is O(1)
//!   (`DurableMap::clone` shares the tables and the persistent in-memory diff), so iterators
//!   keep the state they started from;
//! - `save`, `compact` and `commit` write files without the GIL: they work on an O(1) copy
//!   taken under the lock and install the result if the map did not change in the meantime
//!   (otherwise the call raises and can be repeated; the files it wrote are left to
//!   `collect_garbage`).

use std::ops::Bound as KeyBound;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyTuple};
use stele_durable::{DurableMap, Store, TableId};

use crate::errors::{Kind, durable_err, new_err, type_err};
use crate::table::{
    PyTableIter, Source, Yield, entry_tuple, key_arg, out_of_range, position, prefix_bounds,
    range_bounds, value_arg,
};

/// Pairs pulled from Python per return to the GIL while a map is built.
const BUILD_CHUNK: usize = 4096;

/// A sorted, durable map of byte strings: a base table, diff tables saved on top of it, and
/// unsaved changes in memory.
#[pyclass(module = "stele", name = "DurableMap", frozen, mapping)]
#[derive(Debug)]
pub(crate) struct PyDurableMap {
    map: Mutex<Arc<DurableMap>>,
}

fn poisoned(py: Python<'_>) -> PyErr {
    new_err(
        py,
        Kind::Stele,
        "durable map unusable: a thread panicked while changing it".into(),
    )
}

fn table_id(py: Python<'_>, text: &str) -> PyResult<TableId> {
    text.parse().map_err(|e| {
        new_err(
            py,
            Kind::InvalidInput,
            format!("invalid table id {text:?}: {e}"),
        )
    })
}

fn open_store(py: Python<'_>, dir: &std::path::Path) -> PyResult<Store> {
    py.detach(|| Store::open(dir))
        .map_err(|e| durable_err(py, e))
}

/// Pairs of a Python iterable, pulled a chunk at a time with the GIL taken back, for a
/// builder running without it. The first Python error ends the iteration and is kept.
struct PythonPairs {
    iter: Py<PyIterator>,
    buffered: std::vec::IntoIter<(Vec<u8>, Vec<u8>)>,
    error: Option<PyErr>,
    done: bool,
}

impl PythonPairs {
    fn pull(&mut self) {
        let pulled = Python::attach(|py| -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
            let mut out = Vec::with_capacity(BUILD_CHUNK);
            let mut iter = self.iter.bind(py).clone();
            for _ in 0..BUILD_CHUNK {
                let Some(pair) = iter.next() else {
                    self.done = true;
                    break;
                };
                let pair = pair?;
                if pair.len().ok() != Some(2) {
                    return Err(type_err("DurableMap.build takes (key, value) pairs", &pair));
                }
                let (k, v) = (pair.get_item(0)?, pair.get_item(1)?);
                out.push((key_arg(&k)?.to_vec(), value_arg(&v)?.to_vec()));
            }
            Ok(out)
        });
        match pulled {
            Ok(pairs) => self.buffered = pairs.into_iter(),
            Err(e) => {
                self.error = Some(e);
                self.done = true;
            }
        }
    }
}

impl Iterator for PythonPairs {
    type Item = (Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(pair) = self.buffered.next() {
                return Some(pair);
            }
            if self.done {
                return None;
            }
            self.pull();
        }
    }
}

impl PyDurableMap {
    fn wrap(map: DurableMap) -> PyDurableMap {
        PyDurableMap {
            map: Mutex::new(Arc::new(map)),
        }
    }

    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Arc<DurableMap>>> {
        self.map.lock().map_err(|_| poisoned(py))
    }

    /// The map as it is now (an `Arc` clone; the lock is released at once).
    fn current(&self, py: Python<'_>) -> PyResult<Arc<DurableMap>> {
        Ok(Arc::clone(&*self.lock(py)?))
    }

    fn iter(
        &self,
        py: Python<'_>,
        lo: KeyBound<Vec<u8>>,
        hi: KeyBound<Vec<u8>>,
        reverse: bool,
        what: Yield,
    ) -> PyResult<PyTableIter> {
        Ok(PyTableIter::new(
            Source::Map(self.current(py)?),
            lo,
            hi,
            reverse,
            what,
        ))
    }

    /// Runs a writing operation (`save`, `compact`, `commit`) on a copy without the GIL and
    /// installs the copy if the map did not change meanwhile.
    fn write_files(
        &self,
        py: Python<'_>,
        what: &str,
        op: impl FnOnce(&mut DurableMap) -> stele_durable::Result<TableId> + Send,
    ) -> PyResult<String> {
        let before = self.current(py)?;
        let mut copy = (*before).clone();
        let id = py
            .detach(|| op(&mut copy))
            .map_err(|e| durable_err(py, e))?;
        let mut guard = self.lock(py)?;
        if !Arc::ptr_eq(&guard, &before) {
            return Err(new_err(
                py,
                Kind::Stele,
                format!(
                    "the map changed during {what} (another thread wrote to it); call {what}() again"
                ),
            ));
        }
        *guard = Arc::new(copy);
        Ok(id.to_string())
    }
}

#[pymethods]
impl PyDurableMap {
    /// DurableMap.build(pairs, dir): builds a map in the store folder `dir` (created if
    /// needed) from (key, value) pairs in any order and of any number (sorted within a memory
    /// budget, spilling to disk beyond it); a key given twice keeps its last value. Keys are
    /// bytes or str, values bytes, str or Document. Runs without the GIL, taking it back to
    /// pull pairs 4,096 at a time. The map's first table is saved; `id` names it.
    #[staticmethod]
    fn build(py: Python<'_>, pairs: &Bound<'_, PyAny>, dir: PathBuf) -> PyResult<PyDurableMap> {
        let store = open_store(py, &dir)?;
        let mut source = PythonPairs {
            iter: pairs.try_iter()?.unbind(),
            buffered: Vec::new().into_iter(),
            error: None,
            done: false,
        };
        let built = py.detach(|| store.build_map(&mut source));
        if let Some(e) = source.error {
            return Err(e);
        }
        Ok(PyDurableMap::wrap(built.map_err(|e| durable_err(py, e))?))
    }

    /// DurableMap.new(dir): a new, empty map in the store folder `dir`; its first `save()`
    /// writes its first table.
    #[staticmethod]
    fn new(py: Python<'_>, dir: PathBuf) -> PyResult<PyDurableMap> {
        Ok(PyDurableMap::wrap(open_store(py, &dir)?.new_map()))
    }

    /// DurableMap.open(dir, table_id): the map whose top table is `table_id` (the hex id
    /// `save()` returned). `FileNotFoundError` names a missing table of the stack.
    #[staticmethod]
    fn open(py: Python<'_>, dir: PathBuf, table_id: &str) -> PyResult<PyDurableMap> {
        let id = self::table_id(py, table_id)?;
        let store = open_store(py, &dir)?;
        let map = py
            .detach(|| store.open_map(id))
            .map_err(|e| durable_err(py, e))?;
        Ok(PyDurableMap::wrap(map))
    }

    /// DurableMap.at_root(dir, name, *, create=False): the map root `name` points at, bound
    /// to the root so that `commit()` moves it forward. A missing root raises
    /// `FileNotFoundError`, or with `create=True` gives an empty map whose first commit
    /// creates the root.
    #[staticmethod]
    #[pyo3(signature = (dir, name, *, create = false))]
    fn at_root(py: Python<'_>, dir: PathBuf, name: &str, create: bool) -> PyResult<PyDurableMap> {
        let store = open_store(py, &dir)?;
        let map = py
            .detach(|| {
                if create {
                    store.map_at_root_or_new(name)
                } else {
                    store.map_at_root(name)
                }
            })
            .map_err(|e| durable_err(py, e))?;
        Ok(PyDurableMap::wrap(map))
    }

    /// The store folder.
    #[getter]
    fn dir(&self, py: Python<'_>) -> PyResult<PathBuf> {
        Ok(self.current(py)?.store().dir().to_path_buf())
    }

    /// The top table's id (hex), what `DurableMap.open` reopens; None before the first save.
    /// Unsaved changes are not part of it.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.current(py)?.id().map(|id| id.to_string()))
    }

    /// The ids (hex) of the tables of the stack, base first.
    #[getter]
    fn layers(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self
            .current(py)?
            .layer_ids()
            .iter()
            .map(ToString::to_string)
            .collect())
    }

    /// Number of unsaved changes (keys changed in memory since the last save).
    #[getter]
    fn unsaved_changes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.current(py)?.unsaved_changes())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(usize::try_from(self.current(py)?.len()).unwrap_or(usize::MAX))
    }

    /// `m[key]`: the value (bytes); `KeyError` if absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let map = self.current(py)?;
        match map.get(key_arg(key)?).map_err(|e| durable_err(py, e))? {
            Some(v) => Ok(PyBytes::new(py, v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// get(key, default=None): the value (bytes), `default` if absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let map = self.current(py)?;
        Ok(
            match map.get(key_arg(key)?).map_err(|e| durable_err(py, e))? {
                Some(v) => PyBytes::new(py, v).into_any(),
                None => default.unwrap_or_else(|| py.None().into_bound(py)),
            },
        )
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(key) = key_arg(key) else {
            return Ok(false);
        };
        self.current(py)?
            .contains(key)
            .map_err(|e| durable_err(py, e))
    }

    /// put(key, value): sets `key` (bytes or str) to `value` (bytes, str or Document), in
    /// memory until `save()` or `commit()`.
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (key, value) = (key_arg(key)?, value_arg(value)?);
        let mut guard = self.lock(py)?;
        Arc::make_mut(&mut guard)
            .put(key, value)
            .map_err(|e| durable_err(py, e))
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value)
    }

    /// remove(key) -> bool: removes `key`; returns whether it was there.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_arg(key)?;
        let mut guard = self.lock(py)?;
        Arc::make_mut(&mut guard)
            .remove(key)
            .map_err(|e| durable_err(py, e))
    }

    /// `del m[key]`: `KeyError` if absent.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.remove(py, key)? {
            Ok(())
        } else {
            Err(PyKeyError::new_err(key.clone().unbind()))
        }
    }

    /// Iterates over the keys in order, as they are when iteration starts.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyTableIter> {
        self.keys(py)
    }

    /// Keys in order (an iterator over the map as it is now).
    fn keys(&self, py: Python<'_>) -> PyResult<PyTableIter> {
        self.iter(
            py,
            KeyBound::Unbounded,
            KeyBound::Unbounded,
            false,
            Yield::Keys,
        )
    }

    /// Values in key order (an iterator).
    fn values(&self, py: Python<'_>) -> PyResult<PyTableIter> {
        self.iter(
            py,
            KeyBound::Unbounded,
            KeyBound::Unbounded,
            false,
            Yield::Values,
        )
    }

    /// (key, value) pairs in key order (an iterator).
    fn items(&self, py: Python<'_>) -> PyResult<PyTableIter> {
        self.iter(
            py,
            KeyBound::Unbounded,
            KeyBound::Unbounded,
            false,
            Yield::Items,
        )
    }

    /// range(start=None, end=None, *, reverse=False): (key, value) pairs with
    /// `start <= key < end` (None: unbounded), in key order or reversed.
    #[pyo3(signature = (start = None, end = None, *, reverse = false))]
    fn range(
        &self,
        py: Python<'_>,
        start: Option<Bound<'_, PyAny>>,
        end: Option<Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyTableIter> {
        let (lo, hi) = range_bounds(start.as_ref(), end.as_ref())?;
        self.iter(py, lo, hi, reverse, Yield::Items)
    }

    /// prefix(prefix, *, reverse=False): (key, value) pairs whose key starts with `prefix`.
    #[pyo3(signature = (prefix, *, reverse = false))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
    ) -> PyResult<PyTableIter> {
        let (lo, hi) = prefix_bounds(prefix)?;
        self.iter(py, lo, hi, reverse, Yield::Items)
    }

    /// nth(i): the (key, value) pair at position `i` in key order (negative counts from the
    /// end); `IndexError` past the end.
    fn nth<'py>(&self, py: Python<'py>, i: i64) -> PyResult<Bound<'py, PyTuple>> {
        let map = self.current(py)?;
        let len = map.len();
        let entry = match position(i, len) {
            Some(p) => map.nth(p).map_err(|e| durable_err(py, e))?,
            None => None,
        };
        entry_tuple(py, entry)?.ok_or_else(|| out_of_range(i, len))
    }

    /// rank(key): the number of keys smaller than `key` (its position, present or not).
    fn rank(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.current(py)?
            .rank(key_arg(key)?)
            .map_err(|e| durable_err(py, e))
    }

    /// The (key, value) pair with the smallest key, or None if the map is empty.
    fn first<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let map = self.current(py)?;
        let entry = map.first().map_err(|e| durable_err(py, e))?;
        entry_tuple(py, entry)
    }

    /// The (key, value) pair with the largest key, or None if the map is empty.
    fn last<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let map = self.current(py)?;
        let entry = map.last().map_err(|e| durable_err(py, e))?;
        entry_tuple(py, entry)
    }

    /// save() -> str: writes the unsaved changes as a small diff table on top of the stack
    /// (the first table of a new map) and returns the new top id. Without the GIL.
    fn save(&self, py: Python<'_>) -> PyResult<String> {
        self.write_files(py, "save", DurableMap::save)
    }

    /// compact() -> str: merges every layer and the unsaved changes into one new base table
    /// and returns its id. Old tables stay until `collect_garbage()` finds them unused.
    /// Without the GIL.
    fn compact(&self, py: Python<'_>) -> PyResult<String> {
        self.write_files(py, "compact", DurableMap::compact)
    }

    /// commit() -> str: saves, then points the root this map was opened from (`at_root`) at
    /// the new top table, if nobody moved the root since (`SteleError` otherwise). Without
    /// the GIL.
    fn commit(&self, py: Python<'_>) -> PyResult<String> {
        self.write_files(py, "commit", DurableMap::commit)
    }

    /// snapshot() -> DurableMap: an independent copy of the map as it is now, in O(1). It
    /// keeps reading its own tables (they stay on disk while it lives) whatever happens to
    /// this map; changes to either are not seen by the other.
    fn snapshot(&self, py: Python<'_>) -> PyResult<PyDurableMap> {
        Ok(PyDurableMap::wrap((*self.current(py)?).clone()))
    }

    /// collect_garbage() -> dict: removes the store's tables that no root reaches and no
    /// process has open (tables of maps not committed to a root count as garbage once no
    /// one has them open). Returns `removed` and `in_use` (lists of ids) and
    /// `partials_removed`. Without the GIL.
    fn collect_garbage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let map = self.current(py)?;
        let report = py
            .detach(|| map.store().collect_garbage())
            .map_err(|e| durable_err(py, e))?;
        let ids = |v: &[TableId]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        let d = PyDict::new(py);
        d.set_item("removed", ids(&report.removed))?;
        d.set_item("in_use", ids(&report.in_use))?;
        d.set_item("partials_removed", report.partials_removed)?;
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let map = self.current(py)?;
        Ok(format!(
            "<stele.DurableMap {:?} entries={} layers={} unsaved={}>",
            map.store().dir(),
            map.len(),
            map.layer_ids().len(),
            map.unsaved_changes()
        ))
    }
}
