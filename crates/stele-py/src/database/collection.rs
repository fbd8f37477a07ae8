//! `stele.Collection`: the mapping of ids to documents (reads, single writes, iteration,
//! statistics) and its iterator. Bulk writes are in `import.rs`, queries and indexes in
//! `query.rs` (each adds its own `#[pymethods]` block: pyo3's `multiple-pymethods`).

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use stele::{Database, Snapshot};

use super::{DocOptions, Payload, PyDatabase, PyId, id_arg, py_id, readable_id, stats_dict};
use crate::errors::{Kind, db_err, new_err, type_err};
use crate::handle::same_process;

/// A snapshot and the process that took it: the only one that may read through it (its
/// block cache's lock may have been held by another thread when a child was forked).
#[derive(Debug, Clone)]
pub(super) struct Taken {
    snap: Snapshot,
    /// The database's folder, for messages.
    path: PathBuf,
    pid: u32,
}

impl Taken {
    /// A snapshot taken in this process.
    pub(super) fn now(snap: Snapshot, path: PathBuf) -> Taken {
        Taken {
            snap,
            path,
            pid: std::process::id(),
        }
    }

    /// The snapshot's commit number: a plain field, readable in any process (no lock).
    pub(super) fn seq(&self) -> u64 {
        self.snap.seq()
    }

    /// The snapshot, in the process that took it.
    pub(super) fn snap(&self, py: Python<'_>) -> PyResult<&Snapshot> {
        same_process(py, self.pid, || {
            format!("a snapshot of database {}", self.path.display())
        })?;
        Ok(&self.snap)
    }
}

/// Where a collection reads from.
#[derive(Debug)]
pub(super) enum Reader {
    /// The database: a fresh snapshot per call; writes allowed.
    Live(Py<PyDatabase>),
    /// One snapshot: read-only, in the process that took it.
    Frozen(Taken),
}

/// The documents of one collection by id: a mapping of str to `Document`.
#[pyclass(module = "stele", name = "Collection", frozen, mapping)]
#[derive(Debug)]
pub(crate) struct PyCollection {
    pub(super) reader: Reader,
    pub(super) name: String,
    pub(super) opts: DocOptions,
}

impl PyCollection {
    pub(super) fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        match &self.reader {
            Reader::Live(db) => Ok(db.get().snap(py)?),
            Reader::Frozen(taken) => Ok(taken.snap(py)?.clone()),
        }
    }

    pub(super) fn writer(&self, py: Python<'_>) -> PyResult<Database> {
        match &self.reader {
            Reader::Live(db) => db.get().db(py),
            Reader::Frozen(_) => Err(PyTypeError::new_err(format!(
                "collection {:?} of a snapshot is read-only",
                self.name
            ))),
        }
    }

    /// The document `id`, or None.
    fn fetch<'py>(&self, py: Python<'py>, id: &PyId) -> PyResult<Option<Bound<'py, PyAny>>> {
        let snap = self.snapshot(py)?;
        readable_id(&snap, &self.name, id)?;
        let doc = snap
            .get(&self.name, &id.text())
            .map_err(|e| db_err(py, e))?;
        match doc {
            Some(doc) => Ok(Some(self.opts.document(py, doc.into_bytes())?)),
            None => Ok(None),
        }
    }

    /// Deletes `ids` (which must exist) in one commit, without the GIL.
    fn delete_ids(&self, py: Python<'_>, db: &Database, ids: &[String]) -> PyResult<()> {
        let name = self.name.as_str();
        py.detach(|| {
            let mut batch = db.batch();
            for id in ids {
                batch.delete(name, id)?;
            }
            db.commit(batch)
        })
        .map_err(|e| db_err(py, e))
    }

    /// Commits puts of `(id, value)` in one batch, converting and committing without the GIL.
    pub(super) fn commit_puts(
        &self,
        py: Python<'_>,
        db: &Database,
        items: &[(PyId, Payload<'_>)],
    ) -> PyResult<()> {
        self.puts_into(py, db, items, None)
    }
}

#[pymethods]
impl PyCollection {
    /// The collection's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// True for a collection of a snapshot.
    #[getter]
    fn read_only(&self) -> bool {
        matches!(self.reader, Reader::Frozen(_))
    }

    /// Number of documents.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let n = self.snapshot(py)?.count(&self.name);
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn __contains__(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(id) = id_arg(id) else {
            return Ok(false);
        };
        let snap = self.snapshot(py)?;
        // An id of the other kind is in no collection (but "42" is 42 where ints are held,
        // as for every read).
        let other = match (&id, snap.id_kind(&self.name)) {
            (PyId::Int(_), Some(stele::IdKind::Text)) => true,
            (PyId::Text(t), Some(stele::IdKind::Int)) => stele::parse_int_id(t).is_none(),
            _ => false,
        };
        if other {
            return Ok(false);
        }
        snap.contains(&self.name, &id.text())
            .map_err(|e| db_err(py, e))
    }

    /// `coll[id]`: the document (a lazy `stele.Document`); `KeyError` if absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.fetch(py, &id_arg(id)?)?
            .ok_or_else(|| PyKeyError::new_err(id.clone().unbind()))
    }

    /// get(id, default=None): the document, `default` if absent.
    #[pyo3(signature = (id, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(self
            .fetch(py, &id_arg(id)?)?
            .or(default)
            .unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// Iterates over the ids in order (byte order of their UTF-8; numeric order of
    /// integer ids, which come as `int`), as of the call.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIdIter> {
        self.keys(py)
    }

    /// The ids in order, as of the call (collected at once, without the GIL).
    fn keys(&self, py: Python<'_>) -> PyResult<PyIdIter> {
        self.id_iter(py, Yields::Ids)
    }

    /// The documents in id order, from one snapshot taken at the call.
    fn values(&self, py: Python<'_>) -> PyResult<PyIdIter> {
        self.id_iter(py, Yields::Documents)
    }

    /// (id, Document) pairs in id order, from one snapshot taken at the call.
    fn items(&self, py: Python<'_>) -> PyResult<PyIdIter> {
        self.id_iter(py, Yields::Items)
    }

    /// `coll[id] = value`: inserts or replaces the document, committed at once (durable when
    /// this returns). `value` is a dict (or any JSON-like Python value), JSON text as str or
    /// bytes, or a `Document`.
    fn __setitem__(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let db = self.writer(py)?;
        let id = id_arg(id)?;
        let payload = Payload::of(py, value)?;
        self.commit_puts(py, &db, &[(id, payload)])
    }

    /// `del coll[id]`: deletes the document, committed at once; `KeyError` if absent.
    fn __delitem__(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<()> {
        let db = self.writer(py)?;
        let key = id_arg(id)?;
        let snap = db.snapshot();
        readable_id(&snap, &self.name, &key)?;
        let exists = snap
            .contains(&self.name, &key.text())
            .map_err(|e| db_err(py, e))?;
        if !exists {
            return Err(PyKeyError::new_err(id.clone().unbind()));
        }
        self.delete_ids(py, &db, &[key.text().into_owned()])
    }

    /// pop(id[, default]) -> Document: removes the document and returns it, committed at
    /// once; if absent, returns `default`, or raises `KeyError` without one (as `dict.pop`).
    #[pyo3(signature = (id, *default))]
    fn pop<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if default.len() > 1 {
            return Err(PyTypeError::new_err(format!(
                "pop expected at most 2 arguments, got {}",
                default.len() + 1
            )));
        }
        let db = self.writer(py)?;
        let key = id_arg(id)?;
        match self.fetch(py, &key)? {
            Some(doc) => {
                self.delete_ids(py, &db, &[key.text().into_owned()])?;
                Ok(doc)
            }
            None if default.len() == 1 => default.get_item(0),
            None => Err(PyKeyError::new_err(id.clone().unbind())),
        }
    }

    /// popitem() -> (id, Document): removes and returns the document with the smallest id,
    /// committed at once; `KeyError` if the collection is empty.
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let db = self.writer(py)?;
        let first = db
            .snapshot()
            .ids(&self.name)
            .next()
            .transpose()
            .map_err(|e| db_err(py, e))?;
        let Some(id) = first else {
            return Err(PyKeyError::new_err(format!(
                "popitem(): collection {:?} is empty",
                self.name
            )));
        };
        let doc = self
            .fetch(py, &PyId::Text(id.clone()))?
            .ok_or_else(|| PyKeyError::new_err(id.clone()))?;
        self.delete_ids(py, &db, std::slice::from_ref(&id))?;
        let kind = db.snapshot().id_kind(&self.name);
        PyTuple::new(py, [py_id(py, kind, &id)?, doc])
    }

    /// setdefault(id, default=None) -> Document: the document `id`; if absent, stores
    /// `default` under it first (committed at once; None stores the JSON value null).
    #[pyo3(signature = (id, default = None))]
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        default: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let db = self.writer(py)?;
        let key = id_arg(id)?;
        if let Some(doc) = self.fetch(py, &key)? {
            return Ok(doc);
        }
        let none = py.None().into_bound(py);
        let payload = Payload::of(py, default.unwrap_or(&none))?;
        self.commit_puts(py, &db, &[(key.clone(), payload)])?;
        self.fetch(py, &key)?
            .ok_or_else(|| PyKeyError::new_err(id.clone().unbind()))
    }

    /// update(other=(), /, **kwargs): stores every (id, value) of a mapping, of an iterable
    /// of pairs, and of the keyword arguments, in ONE atomic, durable commit (all or none);
    /// for more documents than one batch should hold, use `put_many`.
    #[pyo3(signature = (other = None, /, **kwargs))]
    fn update(
        &self,
        py: Python<'_>,
        other: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let db = self.writer(py)?;
        let mut held: Vec<(PyId, Bound<'_, PyAny>)> = Vec::new();
        if let Some(other) = other {
            if other.hasattr("keys")? {
                for key in other.call_method0("keys")?.try_iter()? {
                    let key = key?;
                    let value = other.get_item(&key)?;
                    held.push((id_arg(&key)?, value));
                }
            } else {
                for item in other.try_iter()? {
                    let item = item?;
                    if item.is_instance_of::<PyString>() || item.len().ok() != Some(2) {
                        return Err(type_err(
                            "update takes a mapping or (id, value) pairs",
                            &item,
                        ));
                    }
                    let id = item.get_item(0)?;
                    held.push((id_arg(&id)?, item.get_item(1)?));
                }
            }
        }
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                held.push((id_arg(&key)?, value));
            }
        }
        let payloads = held
            .iter()
            .map(|(id, v)| Ok((id.clone(), Payload::of(py, v)?)))
            .collect::<PyResult<Vec<_>>>()?;
        self.commit_puts(py, &db, &payloads)
    }

    /// clear(): deletes every document of the collection (its indexes stay). Commits every
    /// 10,000 deletions, so a failure part way leaves the rest of the documents.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.writer(py)?;
        let name = self.name.as_str();
        let ids = py
            .detach(|| db.snapshot().ids(name).collect::<stele::Result<Vec<_>>>())
            .map_err(|e| db_err(py, e))?;
        for chunk in ids.chunks(10_000) {
            self.delete_ids(py, &db, chunk)?;
        }
        Ok(())
    }

    /// {documents, layers, table_bytes, stored_bytes, unsaved_changes, packed_blocks,
    /// pack_bytes, dictionaries}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.snapshot(py)?, &self.name)
    }

    /// {raw_bytes, stored_bytes, ratio}: the bytes of this collection's stored values before
    /// and after compression (one pass over their headers, without the GIL; no
    /// decompression), and their ratio.
    fn compression_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let snap = self.snapshot(py)?;
        let name = self.name.as_str();
        let c = py
            .detach(|| snap.compression_stats(name))
            .map_err(|e| db_err(py, e))?;
        let d = PyDict::new(py);
        d.set_item("raw_bytes", c.raw_bytes)?;
        d.set_item("stored_bytes", c.stored_bytes)?;
        d.set_item("ratio", c.ratio())?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let ro = if self.read_only() { " (snapshot)" } else { "" };
        format!("<stele.Collection {:?}{ro}>", self.name)
    }
}

impl PyCollection {
    fn id_iter(&self, py: Python<'_>, yields: Yields) -> PyResult<PyIdIter> {
        let snap = self.snapshot(py)?;
        let name = self.name.as_str();
        let ids = py
            .detach(|| {
                // Ids only: the documents are read when the iterator yields them.
                snap.ids(name).collect::<stele::Result<Vec<_>>>()
            })
            .map_err(|e| db_err(py, e))?;
        let snap_kind = snap.id_kind(name);
        Ok(PyIdIter {
            snap,
            pid: std::process::id(),
            name: self.name.clone(),
            opts: self.opts,
            yields,
            kind: snap_kind,
            ids: Mutex::new(ids.into_iter()),
        })
    }
}

/// What a collection iterator yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Yields {
    Ids,
    Documents,
    Items,
}

/// Iterator over the ids, documents or `(id, Document)` pairs of a collection, from one
/// snapshot.
#[pyclass(module = "stele", name = "CollectionIterator", frozen)]
#[derive(Debug)]
pub(crate) struct PyIdIter {
    snap: Snapshot,
    /// The process that made the iterator, the only one that may read through it (as
    /// [`PySnapshot`]).
    pid: u32,
    name: String,
    opts: DocOptions,
    yields: Yields,
    /// The kind of the collection's ids, as of the snapshot (integer ids come as `int`).
    kind: Option<stele::IdKind>,
    ids: Mutex<std::vec::IntoIter<String>>,
}

#[pymethods]
impl PyIdIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // Held only to take the next id: no Python code runs under it.
        let next = match self.ids.lock() {
            Ok(mut ids) => ids.next(),
            Err(p) => p.into_inner().next(),
        };
        let Some(id) = next else {
            return Ok(None);
        };
        if self.yields == Yields::Ids {
            return Ok(Some(py_id(py, self.kind, &id)?));
        }
        same_process(py, self.pid, || {
            format!("an iterator over collection {:?}", self.name)
        })?;
        let doc = self
            .snap
            .get(&self.name, &id)
            .map_err(|e| db_err(py, e))?
            .ok_or_else(|| {
                new_err(
                    py,
                    Kind::Corrupt,
                    format!("document {id:?} vanished from a snapshot"),
                )
            })?;
        let doc = self.opts.document(py, doc.into_bytes())?;
        if self.yields == Yields::Documents {
            return Ok(Some(doc));
        }
        Ok(Some(
            PyTuple::new(py, [py_id(py, self.kind, &id)?, doc])?.into_any(),
        ))
    }
}
