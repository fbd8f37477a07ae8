//! The document store: databases, collections, batches, snapshots and queries.
//!
//! Lifetimes: a [`PyDatabase`] holds `Mutex<Option<stele::Database>>`; `close()` takes the
//! database out. Every operation clones the `stele::Database` (an `Arc`) under the lock and
//! releases the lock at once, so the lock is never held across Python code or a release of
//! the GIL; an operation in flight in another thread when `close()` runs finishes, and the
//! folder lock goes when it does. Reads go through a `stele::Snapshot` (an `Arc` of one
//! committed state): a live `Collection` takes a fresh one per call, `db.snapshot()` keeps
//! one. Documents are copied out of the snapshot into a `stele.Document`, which owns its bytes
//! (a copy of a few hundred bytes, far less than the Python objects around it), so nothing
//! handed to Python borrows the database's files.
//!
//! The GIL is released for opening (recovery), every commit (it waits for the fsync), JSON
//! conversion and validation of batches, imports (a batch at a time, checking for Ctrl-C
//! between batches), queries, index creation, checkpoints and compaction.
//!
//! One file per part of the API: this one `stele.Database`, `collection.rs` the mapping
//! of a collection, `import.rs` its bulk writes, `query.rs` its queries and indexes,
//! `snapshot.rs` and `batch.rs`. A class's methods are spread over several
//! `#[pymethods]` blocks (pyo3's `multiple-pymethods` feature).

mod aggregate;
mod arrow;
mod arrow_import;
mod batch;
mod collection;
mod find;
mod import;
mod parquet;
mod query;
mod snapshot;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyString};
use stele::{Batch, CollectionStats, Database, DatabaseOptions, Snapshot};

pub(crate) use arrow::PyArrowReader;
pub(crate) use batch::PyBatch;
pub(crate) use collection::{PyCollection, PyIdIter};
pub(crate) use find::PyCursor;
pub(crate) use import::at_least_one;
pub(crate) use query::PyQueryResult;
pub(crate) use snapshot::PySnapshot;

use crate::document::{Decimals, PyDocument, document_bytes, python_to_bytes_with};
use crate::errors::{Kind, db_err, new_err, type_err};
use crate::handle::{Handle, Opened};
use collection::Reader;

/// How documents read from a database come back to Python.
#[derive(Debug, Clone, Copy)]
struct DocOptions {
    decimals: Decimals,
    /// The user promised the files were written by Stele only: skip validation.
    trusted: bool,
}

impl DocOptions {
    fn document<'py>(self, py: Python<'py>, bytes: Vec<u8>) -> PyResult<Bound<'py, PyAny>> {
        let init = PyDocument::from_stored(py, bytes, self.decimals, self.trusted)?;
        Ok(Bound::new(py, init)?.into_any())
    }
}

/// A value to store: JSON text (str, bytes) or document bytes (a `Document`, or any other
/// Python value written as a document).
enum Payload<'a> {
    Json(&'a [u8]),
    Doc(Cow<'a, [u8]>),
}

impl<'a> Payload<'a> {
    fn of(py: Python<'_>, value: &'a Bound<'_, PyAny>) -> PyResult<Payload<'a>> {
        if let Ok(d) = value.cast::<PyDocument>() {
            return Ok(Payload::Doc(Cow::Borrowed(document_bytes(d))));
        }
        if let Ok(s) = value.cast::<PyString>() {
            return Ok(Payload::Json(s.to_str()?.as_bytes()));
        }
        if let Ok(b) = value.cast::<PyBytes>() {
            return Ok(Payload::Json(b.as_bytes()));
        }
        // As the database writes JSON text: long strings plain, for the collection's zstd.
        let bytes = python_to_bytes_with(py, value, stele::write_options())?;
        Ok(Payload::Doc(Cow::Owned(bytes)))
    }

    /// Adds the put to `batch` (converts JSON text, validates document bytes).
    fn add(&self, batch: &mut Batch, collection: &str, id: &PyId) -> stele::Result<()> {
        match (self, id) {
            (Payload::Json(text), PyId::Text(id)) => batch.put_json(collection, id, text),
            (Payload::Json(text), PyId::Int(n)) => batch.put_json_int(collection, *n, text),
            (Payload::Doc(bytes), PyId::Text(id)) => batch.put_document(collection, id, bytes),
            (Payload::Doc(bytes), PyId::Int(n)) => batch.put_document_int(collection, *n, bytes),
        }
    }
}

/// A document id given by Python: a `str`, or an `int` (an integer id: a collection whose
/// first documents have integer ids keeps them as integers, in numeric order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PyId {
    Text(String),
    Int(i64),
}

impl PyId {
    /// The id as the store's reads take it: an integer as its decimal text.
    pub(super) fn text(&self) -> Cow<'_, str> {
        match self {
            PyId::Text(s) => Cow::Borrowed(s),
            PyId::Int(n) => Cow::Owned(n.to_string()),
        }
    }
}

/// The id `id` given by Python: a `str` or an `int` of 64 bits (not a `bool`).
fn id_arg(id: &Bound<'_, PyAny>) -> PyResult<PyId> {
    if let Ok(s) = id.cast::<PyString>() {
        return Ok(PyId::Text(s.to_str()?.to_owned()));
    }
    if id.is_instance_of::<PyInt>() && !id.is_instance_of::<PyBool>() {
        return id.extract::<i64>().map(PyId::Int).map_err(|_| {
            pyo3::exceptions::PyOverflowError::new_err(format!(
                "integer id {} is beyond the range of integer ids ({} to {}): use a str",
                id.str().map(|s| s.to_string()).unwrap_or_default(),
                i64::MIN,
                i64::MAX
            ))
        });
    }
    Err(type_err("document ids are str or int", id))
}

/// Checks an integer id `id` against collection `name` of `snap` before a read: a
/// collection of text ids raises `TypeError`, naming the numbered record's id it may mean
/// (`c[42]`: `c["0000000042"]`).
fn readable_id(snap: &Snapshot, name: &str, id: &PyId) -> PyResult<()> {
    let PyId::Int(n) = id else {
        return Ok(());
    };
    if snap.id_kind(name) != Some(stele::IdKind::Text) {
        return Ok(());
    }
    let hint = match u64::try_from(*n)
        .ok()
        .and_then(|n| stele::import::numbered_id_for(&n.to_string()))
    {
        Some(numbered) => format!(
            "; records imported without an id field are numbered in 10 digits: use {numbered:?}"
        ),
        None => String::new(),
    };
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "collection {name:?} holds text ids, not int{hint}"
    )))
}

/// Id `id` (as the store gives it) of a collection of ids of kind `kind`, for Python: an
/// `int` in a collection of integer ids, else a `str`.
pub(super) fn py_id<'py>(
    py: Python<'py>,
    kind: Option<stele::IdKind>,
    id: &str,
) -> PyResult<Bound<'py, PyAny>> {
    match (kind, stele::parse_int_id(id)) {
        (Some(stele::IdKind::Int), Some(n)) => Ok(n.into_pyobject(py)?.into_any()),
        _ => Ok(PyString::new(py, id).into_any()),
    }
}

fn closed(py: Python<'_>, path: &std::path::Path) -> PyErr {
    new_err(
        py,
        Kind::Stele,
        format!("database {} is closed", path.display()),
    )
}

fn stats_dict<'py>(py: Python<'py>, snap: &Snapshot, name: &str) -> PyResult<Bound<'py, PyDict>> {
    let s: CollectionStats = snap.stats(name);
    let d = PyDict::new(py);
    d.set_item("documents", s.documents)?;
    d.set_item("layers", s.layers)?;
    d.set_item("table_bytes", s.table_bytes)?;
    d.set_item("stored_bytes", s.stored_bytes)?;
    d.set_item("unsaved_changes", s.unsaved_changes)?;
    d.set_item("packed_blocks", s.packed_blocks)?;
    d.set_item("pack_bytes", s.pack_bytes)?;
    d.set_item("index_bytes", s.index_bytes)?;
    d.set_item("dictionaries", snap.dictionaries(name))?;
    Ok(d)
}

fn all_stats<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for name in snap.collections() {
        d.set_item(name, stats_dict(py, snap, name)?)?;
    }
    Ok(d)
}

/// A database: a folder of collections of JSON documents by id.
#[pyclass(module = "stele", name = "Database", frozen)]
#[derive(Debug)]
pub(crate) struct PyDatabase {
    db: Mutex<Option<Opened>>,
    path: PathBuf,
    opts: DocOptions,
}

impl PyDatabase {
    /// The open database (an `Arc` clone); `SteleError` once closed, in another process
    /// than the one that opened it, or if it was opened read-only.
    fn db(&self, py: Python<'_>) -> PyResult<Database> {
        self.handle(py)?.writer(py, &self.path)
    }

    /// The open database, for writing or reading only; `SteleError` once closed or in
    /// another process than the one that opened it.
    fn handle(&self, py: Python<'_>) -> PyResult<Handle> {
        let opened = match self.db.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        opened
            .ok_or_else(|| closed(py, &self.path))?
            .checked(py, &self.path)
    }

    /// A snapshot of the open database (see [`Handle::snapshot`]).
    fn snap(&self, py: Python<'_>) -> PyResult<Snapshot> {
        Ok(self.handle(py)?.snapshot())
    }

    fn collection(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyCollection> {
        stele::check_collection_name(name).map_err(|e| db_err(slf.py(), e))?;
        Ok(PyCollection {
            reader: Reader::Live(slf.clone().unbind()),
            name: name.to_owned(),
            opts: slf.get().opts,
        })
    }
}

#[pymethods]
impl PyDatabase {
    /// Database(path, *, readonly=False, decimals="float", trusted=False,
    /// checkpoint_bytes=64 MiB, compact_layers=8, compact_base_ratio=8, pack_block_bytes=32 KiB, pack_level=9,
    /// pack_streams=True, block_cache_bytes=64 MiB, create_here=False)
    ///
    /// Opens the database in folder `path` and recovers from its log (without the GIL).
    /// It is created if the folder does not exist or is empty; a folder that holds other
    /// files raises `InvalidInput` naming them (`create_here=True` creates the database
    /// beside them), and so does a path that is a file. One writing process at a time: `InUseError` (with `pid`) if
    /// another has it open for writing, and a second open in this process fails the same
    /// way until the first is closed. `readonly=True` opens an existing database for
    /// reading beside its writer (any number of readers, in any processes): it writes
    /// nothing, sees the commits written when it opened, and `refresh()` catches up. A
    /// handle belongs to the process that opened it: after `fork()`, open the database
    /// again in the child (using the parent's handle raises `SteleError`). `decimals` is the number policy of the documents read (see `Document`).
    /// `trusted=True` skips validating documents read: only for databases that nothing but
    /// Stele wrote (a crafted file with valid checksums could otherwise crash the process).
    /// `compact_base_ratio`: the compactions checkpoints start merge only the tables above a
    /// collection's base while they hold under 1/ratio of its bytes, so small changes do not
    /// rewrite a large collection (0: always rewrite it; `compact()` always does).
    /// `pack_block_bytes`: size of the blocks compaction packs compressed collections into
    /// (0: no packing; blocks of big documents grow to hold 16 of them, up to 4 times the
    /// size); `pack_level`: their zstd level (higher: a few percent smaller,
    /// several times the compaction CPU); `pack_streams`: whether `compact()` may store
    /// packed documents in their stream form (smaller; each rebuilt on its first read);
    /// `block_cache_bytes`: memory for decoded blocks (see the Rust `DatabaseOptions`).
    #[new]
    #[pyo3(signature = (path, *, readonly = false, decimals = "float", trusted = false, checkpoint_bytes = None, compact_layers = None, compact_base_ratio = None, pack_block_bytes = None, pack_level = None, pack_streams = true, block_cache_bytes = None, create_here = false))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the Python constructor's keyword arguments, one per option"
    )]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        readonly: bool,
        decimals: &str,
        trusted: bool,
        checkpoint_bytes: Option<u64>,
        compact_layers: Option<usize>,
        compact_base_ratio: Option<u64>,
        pack_block_bytes: Option<usize>,
        pack_level: Option<i32>,
        pack_streams: bool,
        block_cache_bytes: Option<usize>,
        create_here: bool,
    ) -> PyResult<PyDatabase> {
        let decimals = Decimals::parse(py, decimals)?;
        let mut opts = DatabaseOptions::default();
        if let Some(bytes) = checkpoint_bytes {
            opts = opts.checkpoint_bytes(bytes);
        }
        if let Some(layers) = compact_layers {
            opts = opts.compact_layers(layers);
        }
        if let Some(ratio) = compact_base_ratio {
            opts = opts.compact_base_ratio(ratio);
        }
        if let Some(bytes) = pack_block_bytes {
            opts = opts.pack_block_bytes(bytes);
        }
        if let Some(level) = pack_level {
            opts = opts.pack_level(level);
        }
        opts = opts.pack_streams(pack_streams).create_here(create_here);
        if let Some(bytes) = block_cache_bytes {
            opts = opts.block_cache_bytes(bytes);
        }
        let handle = py
            .detach(|| {
                if readonly {
                    Database::open_read_only_with(&path, opts).map(Handle::Reader)
                } else {
                    Database::open_with(&path, opts).map(Handle::Writer)
                }
            })
            .map_err(|e| db_err(py, e))?;
        Ok(PyDatabase {
            db: Mutex::new(Some(Opened::new(handle))),
            path,
            opts: DocOptions { decimals, trusted },
        })
    }

    /// Closes the database, leaving it compact at rest: what the log holds goes into
    /// tables (collections written mostly since their last packing are packed into
    /// compressed blocks) and the log is emptied, so the next open replays nothing. If an
    /// operation is in flight in another thread, that operation's end closes it instead (and
    /// the folder lock goes then). Snapshots taken before stay readable. Closing twice does
    /// nothing. Raises the error closing met (every change is still in the log then, and
    /// the next open recovers it).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let db = match self.db.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        match db {
            Some(db) => match db.checked(py, &self.path)? {
                Handle::Writer(db) => py.detach(|| db.close()).map_err(|e| db_err(py, e)),
                // A reader writes nothing: closing lets go of its files.
                Handle::Reader(reader) => {
                    drop(reader);
                    Ok(())
                }
            },
            None => Ok(()),
        }
    }

    /// refresh() -> int: catches a read-only database up with the process writing it
    /// (without the GIL): later reads and snapshots see every commit written before the
    /// call. Returns the number of the last commit now visible. Costs what changed since
    /// the last refresh. A database open for writing sees its own commits already.
    fn refresh(&self, py: Python<'_>) -> PyResult<u64> {
        let handle = self.handle(py)?;
        py.detach(|| handle.refresh()).map_err(|e| db_err(py, e))
    }

    /// True if the database was opened with `readonly=True`.
    #[getter]
    fn readonly(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(matches!(self.handle(py)?, Handle::Reader(_)))
    }

    /// True once `close()` ran.
    #[getter]
    fn closed(&self) -> bool {
        match self.db.lock() {
            Ok(g) => g.is_none(),
            Err(p) => p.into_inner().is_none(),
        }
    }

    /// The database folder.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes the database; exceptions propagate (an error closing is raised unless the
    /// block raised one already).
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let closed = self.close(py);
        if exc_type.is_none() {
            closed?;
        }
        Ok(false)
    }

    /// `db[name]`: the collection `name` (it need not exist yet: the first write creates
    /// it). `InvalidInput` for a bad name (1 to 100 of the ASCII letters and digits, `_ - .`,
    /// not starting with `.` or `_`; the message says which rule it breaks).
    fn __getitem__(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyCollection> {
        PyDatabase::collection(slf, name)
    }

    /// True if collection `name` has documents or indexes.
    fn __contains__(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        Ok(self.snap(py)?.collections().contains(&name))
    }

    /// Names of the collections, sorted.
    fn collections(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let snap = self.snap(py)?;
        Ok(snap.collections().into_iter().map(str::to_owned).collect())
    }

    /// batch() -> Batch: puts and deletes across collections, committed all or nothing.
    /// As a context manager it commits on normal exit and discards on an exception.
    fn batch(slf: &Bound<'_, Self>) -> PyResult<PyBatch> {
        let db = slf.get().db(slf.py())?;
        Ok(PyBatch::new(slf.clone().unbind(), db.batch()))
    }

    /// snapshot() -> Snapshot: a consistent read-only view of every collection as of the
    /// last commit; later writes do not change it. Cheap (nothing is copied).
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        Ok(PySnapshot::new(
            self.snap(py)?,
            self.path.clone(),
            self.opts,
        ))
    }

    /// Writes every collection's unsaved changes as tables, records them and starts a new
    /// log segment (without the GIL). Runs by itself as the log grows.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.checkpoint()).map_err(|e| db_err(py, e))
    }

    /// Merges every collection into one table each (packing compressed collections into
    /// blocks), then checkpoints and removes the compression dictionaries no document needs
    /// any more (without the GIL). Other threads' writes go on while it merges.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.compact()).map_err(|e| db_err(py, e))
    }

    /// {total_bytes, log_bytes, log_zeroes_bytes, index_bytes}: bytes the database's folder
    /// takes on disk now, how many of them are the write-ahead log's records, the zeroes the
    /// log keeps ahead of them (as many as its records, 16 KiB to 1 MiB, none once closed),
    /// and the indexes' tables (best effort while a compaction runs).
    fn disk_usage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let usage = self.handle(py)?.disk_usage();
        let d = PyDict::new(py);
        d.set_item("total_bytes", usage.total_bytes)?;
        d.set_item("log_bytes", usage.log_bytes)?;
        d.set_item("log_zeroes_bytes", usage.log_zeroes_bytes)?;
        d.set_item("index_bytes", usage.index_bytes)?;
        Ok(d)
    }

    /// {collection: {documents, layers, table_bytes, stored_bytes, unsaved_changes,
    /// packed_blocks, pack_bytes, index_bytes, dictionaries}}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        all_stats(py, &self.snap(py)?)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!("<stele.Database {:?}{state}>", self.path)
    }
}
