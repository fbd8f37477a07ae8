//! Sorted tables: build from pairs in any order, read through mmap.
//!
//! A [`PyTable`] holds an `Arc<stele_table::Table>`. Reads copy keys and values into `bytes`
//! objects, so nothing handed to Python borrows the mapping. Iterators hold a clone of the
//! `Arc` and the key bounds still to visit; they decode a chunk of entries at a time with the
//! table's streaming iterator and resume after the last key they returned (one seek per chunk),
//! so no iterator state borrows the table across Python calls.

mod args;
mod iter;
mod reader;

use std::ops::Bound as KeyBound;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use stele_table::{Sorter, SorterOptions, Table};

use crate::errors::{table_err, type_err};

pub(crate) use args::{
    duplicate_policy, entry_tuple, key_arg, out_of_range, position, prefix_bounds, range_bounds,
    value_arg,
};
pub(crate) use iter::{PyTableIter, Source, Yield};
pub(crate) use reader::Reader;

/// Pairs handed to the sorter per release of the GIL, at most.
const BATCH_PAIRS: usize = 4096;
/// Bytes of keys and values handed to the sorter per release of the GIL, at most.
const BATCH_BYTES: usize = 4 << 20;
/// A sorted, immutable table of byte-string keys and values, read through mmap.
///
/// A read-only mapping: `t[key]`, `key in t`, `len(t)`, iteration over keys in order. Keys
/// may be given as `bytes` or `str` (encoded as UTF-8), but a table stores bytes: keys and
/// values always come back as `bytes`, whatever was given when it was built. Decode them
/// where text is wanted:
///
/// ```python
/// t = stele.Table.build([("react", "19.1.0")], "tables/")
/// t["react"]                 # b'19.1.0'  (looked up with a str key)
/// t["react"].decode()        # '19.1.0'
/// list(t)                    # [b'react']
/// [k.decode() for k in t]    # ['react']
/// ```
#[pyclass(module = "stele", name = "Table", frozen, mapping, subclass)]
#[derive(Debug)]
pub(crate) struct PyTable {
    /// A table, or for the subclass `TableSet` a set read as one table.
    pub(crate) table: Reader,
}

impl PyTable {
    fn iter(
        &self,
        lo: KeyBound<Vec<u8>>,
        hi: KeyBound<Vec<u8>>,
        reverse: bool,
        what: Yield,
    ) -> PyTableIter {
        PyTableIter::new(self.table.source(), lo, hi, reverse, what)
    }
}

#[pymethods]
impl PyTable {
    /// Table(path): opens a table file (same as `Table.open`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<PyTable> {
        PyTable::open(py, path)
    }

    /// Table.open(path): opens a table file; checks its footer and index (`FormatError` if it
    /// is not a table, `CorruptError` if damaged, `FileNotFoundError` if missing).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<PyTable> {
        let table = py
            .detach(|| Table::open(&path))
            .map_err(|e| table_err(py, e))?;
        Ok(PyTable {
            table: Reader::Table(Arc::new(table)),
        })
    }

    /// Table.build(pairs, path, *, memory=256 MiB, duplicates="reject", temp_dir=None)
    ///
    /// Builds a table from an iterable of (key, value) pairs in any order and opens it. Keys are
    /// bytes or str; values bytes, str or Document. `path` is a folder (the file is named by the
    /// hash of its content) or a file path ending in `.stt`. `memory` is the budget in bytes for
    /// pairs held before sorting: beyond it sorted runs spill to `temp_dir` (default: the
    /// system's) and are merged. `duplicates`: "reject" (`InvalidInput`), "keep_last" or
    /// "keep_first". Sorting and writing run without the GIL.
    #[staticmethod]
    #[pyo3(signature = (pairs, path, *, memory = 256 << 20, duplicates = "reject", temp_dir = None))]
    fn build(
        py: Python<'_>,
        pairs: &Bound<'_, PyAny>,
        path: PathBuf,
        memory: usize,
        duplicates: &str,
        temp_dir: Option<PathBuf>,
    ) -> PyResult<PyTable> {
        let mut sorter = new_sorter(py, memory, duplicates, temp_dir)?;
        // Pairs are borrowed from the Python objects in `held`, which stay alive (and, being
        // bytes, str or documents, unchanged) while the sorter copies them without the GIL.
        let mut held: Vec<Bound<'_, PyAny>> = Vec::with_capacity(BATCH_PAIRS);
        let mut add_batch = |held: &mut Vec<Bound<'_, PyAny>>| -> PyResult<()> {
            let mut batch = Vec::with_capacity(held.len());
            for pair in held.iter() {
                let (k, v) = (pair.get_item(0)?, pair.get_item(1)?);
                batch.push((k, v));
            }
            let slices = batch
                .iter()
                .map(|(k, v)| Ok((key_arg(k)?, value_arg(v)?)))
                .collect::<PyResult<Vec<_>>>()?;
            py.detach(|| slices.iter().try_for_each(|(k, v)| sorter.add(k, v)))
                .map_err(|e| table_err(py, e))?;
            held.clear();
            Ok(())
        };
        let mut bytes = 0;
        for pair in pairs.try_iter()? {
            let pair = pair?;
            let n = pair.len().unwrap_or(0);
            if n != 2 {
                return Err(type_err("Table.build takes (key, value) pairs", &pair));
            }
            bytes += pair.get_item(0).map_or(0, |k| k.len().unwrap_or(0))
                + pair.get_item(1).map_or(0, |v| v.len().unwrap_or(0));
            held.push(pair);
            if held.len() >= BATCH_PAIRS || bytes >= BATCH_BYTES {
                add_batch(&mut held)?;
                bytes = 0;
            }
        }
        add_batch(&mut held)?;
        finish_sorter(py, sorter, path)
    }

    /// The path of the table file (of a set: its manifest).
    #[getter]
    fn path(&self) -> PathBuf {
        self.table.path()
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.table.len()).unwrap_or(usize::MAX)
    }

    /// `t[key]`: the value, as bytes (`t["react"]` gives `b"19.1.0"`; `.decode()` for a
    /// str); `KeyError` if absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self
            .table
            .get(key_arg(key)?)
            .map_err(|e| table_err(py, e))?
        {
            Some(v) => Ok(PyBytes::new(py, v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// get(key, default=None): the value as bytes (`.decode()` for a str), `default` if absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(
            match self
                .table
                .get(key_arg(key)?)
                .map_err(|e| table_err(py, e))?
            {
                Some(v) => PyBytes::new(py, v).into_any(),
                None => default.unwrap_or_else(|| py.None().into_bound(py)),
            },
        )
    }

    /// get_many(keys): the values of many keys (None where absent), looked up without the GIL;
    /// fastest when the keys are sorted.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let keys = keys
            .iter()
            .map(|k| key_arg(k))
            .collect::<PyResult<Vec<_>>>()?;
        let table = &self.table;
        let values = py
            .detach(|| table.get_many(&keys))
            .map_err(|e| table_err(py, e))?;
        Ok(values
            .into_iter()
            .map(|v| v.map(|v| PyBytes::new(py, v)))
            .collect())
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(key) = key_arg(key) else {
            return Ok(false);
        };
        Ok(self.table.get(key).map_err(|e| table_err(py, e))?.is_some())
    }

    /// Iterates over the keys in order.
    fn __iter__(&self) -> PyTableIter {
        self.keys()
    }

    /// Keys in order (an iterator of bytes, even if the table was built from str keys).
    fn keys(&self) -> PyTableIter {
        self.iter(KeyBound::Unbounded, KeyBound::Unbounded, false, Yield::Keys)
    }

    /// Values in key order (an iterator).
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
    /// `start <= key < end` (None: unbounded), in key order or reversed.
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

    /// nth(i): the (key, value) pair at position `i` in key order (negative counts from the
    /// end); `IndexError` past the end.
    fn nth<'py>(&self, py: Python<'py>, i: i64) -> PyResult<Bound<'py, PyTuple>> {
        let len = self.table.len();
        let entry = match position(i, len) {
            Some(p) => self.table.nth(p).map_err(|e| table_err(py, e))?,
            None => None,
        };
        entry_tuple(py, entry)?.ok_or_else(|| out_of_range(i, len))
    }

    /// rank(key): the number of keys smaller than `key` (its position, present or not).
    fn rank(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.table.rank(key_arg(key)?).map_err(|e| table_err(py, e))
    }

    /// The (key, value) pair with the smallest key, or None if the table is empty.
    fn first<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let entry = self.table.first().map_err(|e| table_err(py, e))?;
        entry_tuple(py, entry)
    }

    /// The (key, value) pair with the largest key, or None if the table is empty.
    fn last<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let entry = self.table.last().map_err(|e| table_err(py, e))?;
        entry_tuple(py, entry)
    }

    /// Counts and sizes: entries, blocks, block_size_bytes, restart_interval, file_bytes,
    /// index_bytes, raw_key_bytes, raw_value_bytes, path (of a set: entries, shards,
    /// file_bytes, path).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        match &self.table {
            Reader::Table(t) => {
                let s = t.stats();
                d.set_item("entries", s.entries)?;
                d.set_item("blocks", s.blocks)?;
                d.set_item("block_size_bytes", s.block_size_bytes)?;
                d.set_item("restart_interval", s.restart_interval)?;
                d.set_item("file_bytes", s.file_bytes)?;
                d.set_item("index_bytes", s.index_bytes)?;
                d.set_item("raw_key_bytes", s.raw_key_bytes)?;
                d.set_item("raw_value_bytes", s.raw_value_bytes)?;
            }
            Reader::Set(s) => {
                d.set_item("entries", s.len())?;
                d.set_item("shards", s.shards().len())?;
                let bytes: u64 = s.shards().iter().map(|x| x.file_bytes).sum();
                d.set_item("file_bytes", bytes)?;
            }
        }
        d.set_item("path", self.table.path())?;
        Ok(d)
    }

    /// Checks every block's checksum (reads the whole file, without the GIL); `CorruptError`
    /// names the damaged part.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let table = &self.table;
        py.detach(|| table.verify_all())
            .map_err(|e| table_err(py, e))
    }

    fn __repr__(&self) -> String {
        match &self.table {
            Reader::Table(t) => format!("<stele.Table {:?} entries={}>", t.path(), t.len()),
            Reader::Set(s) => format!(
                "<stele.TableSet {:?} shards={} entries={}>",
                s.path(),
                s.shards().len(),
                s.len()
            ),
        }
    }
}

/// A sorter with the options of `Table.build`.
pub(crate) fn new_sorter(
    py: Python<'_>,
    memory: usize,
    duplicates: &str,
    temp_dir: Option<PathBuf>,
) -> PyResult<Sorter> {
    let policy = duplicate_policy(py, duplicates)?;
    let mut opts = SorterOptions::default()
        .memory_budget_bytes(memory)
        .duplicates(policy);
    if let Some(dir) = temp_dir {
        opts = opts.temp_dir(dir);
    }
    Sorter::new(opts).map_err(|e| table_err(py, e))
}

/// Writes the sorted table into folder `path` (named by its content), or as file `path` if
/// it ends in `.stt`, without the GIL, and opens it.
pub(crate) fn finish_sorter(py: Python<'_>, sorter: Sorter, path: PathBuf) -> PyResult<PyTable> {
    let is_file = path.extension().is_some_and(|e| e == "stt");
    let dir = if is_file {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    } else {
        path.clone()
    };
    let table = py.detach(|| -> stele_table::Result<Table> {
        std::fs::create_dir_all(&dir).map_err(|e| io_err("creating the table folder", &dir, e))?;
        let info = sorter.finish(&dir)?;
        let final_path = if is_file {
            std::fs::rename(&info.path, &path)
                .map_err(|e| io_err("renaming the table to", &path, e))?;
            path
        } else {
            info.path
        };
        Table::open(final_path)
    });
    Ok(PyTable {
        table: Reader::Table(Arc::new(table.map_err(|e| table_err(py, e))?)),
    })
}

fn io_err(op: &'static str, path: &std::path::Path, source: std::io::Error) -> stele_table::Error {
    stele_table::Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}
