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

use std::borrow::Cow;
use std::ops::Bound as ValueBound;
use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};
use stele::{Batch, CollectionStats, Database, DatabaseOptions, Plan, Query, Snapshot};
use stele_doc::DocumentWriter;

use crate::document::{Decimals, PyDocument, document_bytes, python_to_bytes_with, python_to_json};
use crate::errors::{Kind, db_err, new_err, type_err};
use crate::handle::{Handle, Opened, same_process};

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
    fn add(&self, batch: &mut Batch, collection: &str, id: &str) -> stele::Result<()> {
        match self {
            Payload::Json(text) => batch.put_json(collection, id, text),
            Payload::Doc(bytes) => batch.put_document(collection, id, bytes),
        }
    }
}

/// A document id given by Python: a `str`. An `int` is refused with the id of the numbered
/// record it may mean (`c[42]`: use `c["0000000042"]`).
fn id_arg<'a>(id: &'a Bound<'_, PyAny>) -> PyResult<&'a str> {
    match id.cast::<PyString>() {
        Ok(s) => s.to_str(),
        Err(_) => {
            let numbered = id
                .extract::<u64>()
                .ok()
                .and_then(|n| stele::import::numbered_id_for(&n.to_string()));
            Err(match numbered {
                Some(n) => PyTypeError::new_err(format!(
                    "document ids are str, not int; records imported without an id field are numbered in 10 digits: use {n:?}"
                )),
                None => type_err("document ids are str", id),
            })
        }
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
    /// checkpoint_bytes=64 MiB, compact_layers=8, pack_block_bytes=32 KiB, pack_level=9,
    /// pack_streams=True, block_cache_bytes=64 MiB)
    ///
    /// Opens the database in folder `path`, creating it if needed, and recovers from its
    /// log (without the GIL). One writing process at a time: `InUseError` (with `pid`) if
    /// another has it open for writing, and a second open in this process fails the same
    /// way until the first is closed. `readonly=True` opens an existing database for
    /// reading beside its writer (any number of readers, in any processes): it writes
    /// nothing, sees the commits written when it opened, and `refresh()` catches up. A
    /// handle belongs to the process that opened it: after `fork()`, open the database
    /// again in the child (using the parent's handle raises `SteleError`). `decimals` is the number policy of the documents read (see `Document`).
    /// `trusted=True` skips validating documents read: only for databases that nothing but
    /// Stele wrote (a crafted file with valid checksums could otherwise crash the process).
    /// `pack_block_bytes`: size of the blocks compaction packs compressed collections into
    /// (0: no packing; blocks of big documents grow to hold 16 of them, up to 4 times the
    /// size); `pack_level`: their zstd level (higher: a few percent smaller,
    /// several times the compaction CPU); `pack_streams`: whether `compact()` may store
    /// packed documents in their stream form (smaller; each rebuilt on its first read);
    /// `block_cache_bytes`: memory for decoded blocks (see the Rust `DatabaseOptions`).
    #[new]
    #[pyo3(signature = (path, *, readonly = false, decimals = "float", trusted = false, checkpoint_bytes = None, compact_layers = None, pack_block_bytes = None, pack_level = None, pack_streams = true, block_cache_bytes = None))]
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
        pack_block_bytes: Option<usize>,
        pack_level: Option<i32>,
        pack_streams: bool,
        block_cache_bytes: Option<usize>,
    ) -> PyResult<PyDatabase> {
        let decimals = Decimals::parse(py, decimals)?;
        let mut opts = DatabaseOptions::default();
        if let Some(bytes) = checkpoint_bytes {
            opts = opts.checkpoint_bytes(bytes);
        }
        if let Some(layers) = compact_layers {
            opts = opts.compact_layers(layers);
        }
        if let Some(bytes) = pack_block_bytes {
            opts = opts.pack_block_bytes(bytes);
        }
        if let Some(level) = pack_level {
            opts = opts.pack_level(level);
        }
        opts = opts.pack_streams(pack_streams);
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
    /// it). `InvalidInput` for a bad name (1 to 100 of letters, digits, `_ - .`).
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
        Ok(PyBatch {
            db: slf.clone().unbind(),
            batch: Mutex::new(Some(db.batch())),
        })
    }

    /// snapshot() -> Snapshot: a consistent read-only view of every collection as of the
    /// last commit; later writes do not change it. Cheap (nothing is copied).
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        Ok(PySnapshot {
            taken: Taken {
                snap: self.snap(py)?,
                path: self.path.clone(),
                pid: std::process::id(),
            },
            opts: self.opts,
        })
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

/// A read-only view of every collection as of one commit.
#[pyclass(module = "stele", name = "Snapshot", frozen)]
#[derive(Debug)]
pub(crate) struct PySnapshot {
    taken: Taken,
    opts: DocOptions,
}

/// A snapshot and the process that took it: the only one that may read through it (its
/// block cache's lock may have been held by another thread when a child was forked).
#[derive(Debug, Clone)]
struct Taken {
    snap: Snapshot,
    /// The database's folder, for messages.
    path: PathBuf,
    pid: u32,
}

impl Taken {
    /// The snapshot, in the process that took it.
    fn snap(&self, py: Python<'_>) -> PyResult<&Snapshot> {
        same_process(py, self.pid, || {
            format!("a snapshot of database {}", self.path.display())
        })?;
        Ok(&self.snap)
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
        self.taken.snap.seq()
    }

    /// {collection: {documents, layers, table_bytes, stored_bytes, unsaved_changes,
    /// packed_blocks, pack_bytes, index_bytes, dictionaries}}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        all_stats(py, self.taken.snap(py)?)
    }

    fn __repr__(&self) -> String {
        format!("<stele.Snapshot seq={}>", self.taken.snap.seq())
    }
}

/// Where a collection reads from.
#[derive(Debug)]
enum Reader {
    /// The database: a fresh snapshot per call; writes allowed.
    Live(Py<PyDatabase>),
    /// One snapshot: read-only, in the process that took it.
    Frozen(Taken),
}

/// The documents of one collection by id: a mapping of str to `Document`.
#[pyclass(module = "stele", name = "Collection", frozen, mapping)]
#[derive(Debug)]
pub(crate) struct PyCollection {
    reader: Reader,
    name: String,
    opts: DocOptions,
}

impl PyCollection {
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        match &self.reader {
            Reader::Live(db) => Ok(db.get().snap(py)?),
            Reader::Frozen(taken) => Ok(taken.snap(py)?.clone()),
        }
    }

    fn writer(&self, py: Python<'_>) -> PyResult<Database> {
        match &self.reader {
            Reader::Live(db) => db.get().db(py),
            Reader::Frozen(_) => Err(PyTypeError::new_err(format!(
                "collection {:?} of a snapshot is read-only",
                self.name
            ))),
        }
    }

    /// The document `id`, or None.
    fn fetch<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let snap = self.snapshot(py)?;
        let doc = snap.get(&self.name, id).map_err(|e| db_err(py, e))?;
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
    fn commit_puts(
        &self,
        py: Python<'_>,
        db: &Database,
        items: &[(String, Payload<'_>)],
    ) -> PyResult<()> {
        self.puts_into(py, db, items, None)
    }

    /// Puts `items` in one batch, committed, or (with `bulk`) added to a bulk write.
    fn puts_into(
        &self,
        py: Python<'_>,
        db: &Database,
        items: &[(String, Payload<'_>)],
        bulk: Option<&mut stele::import::BulkImport>,
    ) -> PyResult<()> {
        let name = self.name.as_str();
        // The payloads borrow the buffers of `str`, `bytes` and `Document` objects that the
        // caller holds; those objects are immutable, so reading them without the GIL is sound.
        py.detach(|| -> Result<(), PutError> {
            let mut batch = db.batch();
            // Runs of JSON text are converted on all cores.
            let mut json: Vec<(&str, &[u8])> = Vec::new();
            for (id, payload) in items {
                match payload {
                    Payload::Json(text) => json.push((id, text)),
                    Payload::Doc(_) => {
                        batch.put_json_many(name, &json)?;
                        json.clear();
                        payload.add(&mut batch, name, id)?;
                    }
                }
            }
            batch.put_json_many(name, &json)?;
            match bulk {
                Some(bulk) => bulk.add(batch).map_err(PutError::Bulk),
                None => Ok(db.commit(batch)?),
            }
        })
        .map_err(|e| match e {
            PutError::Db(e) => db_err(py, e),
            PutError::Bulk(e) => import_err(py, e),
        })
    }
}

/// A bulk write's error as a Python exception.
fn import_err(py: Python<'_>, e: stele::import::ImportError) -> PyErr {
    match e {
        stele::import::ImportError::Database(e) => db_err(py, e),
        e => new_err(py, Kind::Stele, e.to_string()),
    }
}

/// Why puts failed: a commit, or a bulk write.
enum PutError {
    Db(stele::Error),
    Bulk(stele::import::ImportError),
}

impl From<stele::Error> for PutError {
    fn from(e: stele::Error) -> Self {
        PutError::Db(e)
    }
}

/// `value` of keyword argument `name`, which must be at least 1 (0 can only be a mistake).
pub(crate) fn at_least_one(py: Python<'_>, name: &str, value: usize) -> PyResult<usize> {
    if value == 0 {
        return Err(new_err(
            py,
            Kind::InvalidInput,
            format!("{name}=0: give {name} of at least 1"),
        ));
    }
    Ok(value)
}

/// The id of a value for `put_many(..., id_field=...)`: its field `id_field`, a str or int.
fn id_of(value: &Bound<'_, PyAny>, id_field: &str, n: usize) -> PyResult<String> {
    let py = value.py();
    let field = value.get_item(id_field).map_err(|_| {
        new_err(
            py,
            Kind::InvalidInput,
            format!("item {n} has no field {id_field:?} to take its id from"),
        )
    })?;
    if let Ok(s) = field.cast::<PyString>() {
        return Ok(s.to_str()?.to_owned());
    }
    if field.is_instance_of::<PyInt>() && !field.is_instance_of::<PyBool>() {
        return Ok(field.str()?.to_str()?.to_owned());
    }
    Err(type_err(
        &format!("the id field {id_field:?} of item {n} must be a str or an int"),
        &field,
    ))
}

/// A query condition given as `{field: value}` (one item) or `(field, value)`.
fn condition<'py>(arg: &Bound<'py, PyAny>, what: &str) -> PyResult<(String, Bound<'py, PyAny>)> {
    let py = arg.py();
    if let Ok(d) = arg.cast::<PyDict>() {
        if d.len() == 1
            && let Some((k, v)) = d.iter().next()
        {
            return Ok((k.extract()?, v));
        }
    } else if let Ok(t) = arg.cast::<PyTuple>()
        && t.len() == 2
    {
        return Ok((t.get_item(0)?.extract()?, t.get_item(1)?));
    }
    Err(new_err(
        py,
        Kind::InvalidInput,
        format!("{what}= takes {{field: value}} with one field, or (field, value)"),
    ))
}

/// A bound of a range condition: None is unbounded.
fn range_bound(
    py: Python<'_>,
    v: &Bound<'_, PyAny>,
    included: bool,
) -> PyResult<ValueBound<String>> {
    if v.is_none() {
        return Ok(ValueBound::Unbounded);
    }
    let json = python_to_json(py, v)?;
    Ok(if included {
        ValueBound::Included(json)
    } else {
        ValueBound::Excluded(json)
    })
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
        let Ok(id) = id.cast::<PyString>() else {
            return Ok(false);
        };
        self.snapshot(py)?
            .contains(&self.name, id.to_str()?)
            .map_err(|e| db_err(py, e))
    }

    /// `coll[id]`: the document (a lazy `stele.Document`); `KeyError` if absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.fetch(py, id_arg(id)?)?
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
            .fetch(py, id_arg(id)?)?
            .or(default)
            .unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// Iterates over the ids in order (byte order of their UTF-8), as of the call.
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
        let id = id_arg(id)?.to_owned();
        let payload = Payload::of(py, value)?;
        self.commit_puts(py, &db, &[(id, payload)])
    }

    /// `del coll[id]`: deletes the document, committed at once; `KeyError` if absent.
    fn __delitem__(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<()> {
        let db = self.writer(py)?;
        let key = id_arg(id)?;
        let exists = db
            .snapshot()
            .contains(&self.name, key)
            .map_err(|e| db_err(py, e))?;
        if !exists {
            return Err(PyKeyError::new_err(id.clone().unbind()));
        }
        self.delete_ids(py, &db, &[key.to_owned()])
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
        match self.fetch(py, key)? {
            Some(doc) => {
                self.delete_ids(py, &db, &[key.to_owned()])?;
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
            .fetch(py, &id)?
            .ok_or_else(|| PyKeyError::new_err(id.clone()))?;
        self.delete_ids(py, &db, std::slice::from_ref(&id))?;
        PyTuple::new(py, [id.into_pyobject(py)?.into_any(), doc])
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
        if let Some(doc) = self.fetch(py, key)? {
            return Ok(doc);
        }
        let none = py.None().into_bound(py);
        let payload = Payload::of(py, default.unwrap_or(&none))?;
        self.commit_puts(py, &db, &[(key.to_owned(), payload)])?;
        self.fetch(py, key)?
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
        let mut held: Vec<(String, Bound<'_, PyAny>)> = Vec::new();
        if let Some(other) = other {
            if other.hasattr("keys")? {
                for key in other.call_method0("keys")?.try_iter()? {
                    let key = key?;
                    let value = other.get_item(&key)?;
                    held.push((id_arg(&key)?.to_owned(), value));
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
                    held.push((id_arg(&id)?.to_owned(), item.get_item(1)?));
                }
            }
        }
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                held.push((id_arg(&key)?.to_owned(), value));
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

    /// put_many(items, *, id_field=None, batch=1000) -> int
    ///
    /// Stores many documents: `items` yields `(id, value)` pairs, or, with `id_field`,
    /// values (dicts or Documents) whose field `id_field` (a str or int) is the id,
    /// converting without the GIL, JSON text (str, bytes) on all cores. Up to `batch`
    /// documents are one atomic commit. More go in bulk into a collection with compression
    /// on (the default), as `import_file` writes: each document written once, sorted by id,
    /// packed into compressed blocks, all of them landing at the end, all or nothing (the
    /// last of equal ids wins); into a collection without compression they are committed
    /// every `batch` documents. Returns the number stored.
    #[pyo3(signature = (items, *, id_field = None, batch = 1000))]
    fn put_many(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        id_field: Option<&str>,
        batch: usize,
    ) -> PyResult<usize> {
        let db = self.writer(py)?;
        let batch = at_least_one(py, "batch", batch)?;
        let mut held: Vec<(String, Bound<'_, PyAny>)> = Vec::with_capacity(batch);
        let mut stored = 0;
        // Started when a second batch comes: a put_many of one batch stays one commit.
        let mut bulk: Option<stele::import::BulkImport> = None;
        let mut bulk_asked = false;
        let mut flush =
            |held: &mut Vec<(String, Bound<'_, PyAny>)>, more: bool| -> PyResult<usize> {
                if more && !bulk_asked {
                    bulk_asked = true;
                    let opts = stele::import::ImportOptions::new();
                    bulk = py
                        .detach(|| stele::import::BulkImport::new(&db, &self.name, &opts))
                        .map_err(|e| import_err(py, e))?;
                }
                let payloads = held
                    .iter()
                    .map(|(id, v)| Ok((id.clone(), Payload::of(py, v)?)))
                    .collect::<PyResult<Vec<_>>>()?;
                self.puts_into(py, &db, &payloads, bulk.as_mut())?;
                let n = held.len();
                held.clear();
                Ok(n)
            };
        for (n, item) in items.try_iter()?.enumerate() {
            let item = item?;
            let (id, value) = match id_field {
                Some(field) => (id_of(&item, field, n)?, item),
                None => {
                    if item.is_instance_of::<PyString>() || item.len().ok() != Some(2) {
                        return Err(type_err(
                            "put_many takes (id, value) pairs (or values with id_field=)",
                            &item,
                        ));
                    }
                    let id = item.get_item(0)?;
                    (id_arg(&id)?.to_owned(), item.get_item(1)?)
                }
            };
            // A full batch waits for the next item: whether more come decides its fate.
            if held.len() == batch {
                stored += flush(&mut held, true)?;
            }
            held.push((id, value));
        }
        stored += flush(&mut held, false)?;
        if let Some(bulk) = bulk {
            py.detach(|| bulk.finish()).map_err(|e| import_err(py, e))?;
        }
        Ok(stored)
    }

    /// import_file(path, *, format=None, id_field=None, skip_bad=False,
    /// duplicates="last_wins", batch=10000) -> dict
    ///
    /// Imports a JSON array, JSON Lines or a folder of `.json` files with the store's own
    /// import (as `stele import` does): all or nothing, even if the process is killed; same
    /// ids (`id_field`, a path such as "id" or "meta.key", else records numbered from 1,
    /// zero-padded to 10 digits, "0000000001"; folders: file names). `format` is "json",
    /// "jsonl" or "dir" (default: detected). A bad record raises `InvalidInput` with `line`,
    /// `column` and `record` (nothing is imported), or with `skip_bad=True` is counted and
    /// listed. Runs without the GIL; Ctrl-C cancels it (nothing is imported). Returns
    /// {"imported", "skipped", "bad": [first 100 bad records], "bytes_read", "batches"}.
    #[pyo3(signature = (path, *, format = None, id_field = None, skip_bad = false, duplicates = "last_wins", batch = 10_000))]
    #[allow(clippy::too_many_arguments)]
    fn import_file<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: Option<&str>,
        id_field: Option<&str>,
        skip_bad: bool,
        duplicates: &str,
        batch: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = self.writer(py)?;
        let opts = crate::import::ImportArgs {
            format,
            id_field,
            skip_bad,
            duplicates,
            batch,
        };
        crate::import::import_file(py, &db, &self.name, &path, &opts)
    }

    /// import_jsonl(path, *, id_field=None, skip_bad=False, duplicates="last_wins",
    /// batch=10000) -> dict: `import_file` of a JSON Lines file.
    #[pyo3(signature = (path, *, id_field = None, skip_bad = false, duplicates = "last_wins", batch = 10_000))]
    fn import_jsonl<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        id_field: Option<&str>,
        skip_bad: bool,
        duplicates: &str,
        batch: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.import_file(
            py,
            path,
            Some("jsonl"),
            id_field,
            skip_bad,
            duplicates,
            batch,
        )
    }

    /// query(*, eq=None, range=None, prefix=None, order_by=None, desc=False, limit=None,
    /// select=None) -> QueryResult
    ///
    /// Documents matching at most one condition on one field (a dotted path, `[]` for every
    /// element of an array): `eq={"field": value}`, `range={"field": (lo, hi)}` with
    /// `lo <= value < hi` (None: open; a range with one open side stays within the type of
    /// the other bound), `prefix={"field": "text"}`. Uses an index whose first field is the
    /// filtered one, else scans the collection (`plan` says which). `order_by` a field
    /// (`desc=True` for descending), at most `limit` rows, `select` only these fields (the
    /// rows are then objects keyed by the paths). Runs without the GIL.
    #[pyo3(signature = (*, eq = None, range = None, prefix = None, order_by = None, desc = false, limit = None, select = None))]
    #[allow(clippy::too_many_arguments)]
    fn query(
        &self,
        py: Python<'_>,
        eq: Option<Bound<'_, PyAny>>,
        range: Option<Bound<'_, PyAny>>,
        prefix: Option<Bound<'_, PyAny>>,
        order_by: Option<&str>,
        desc: bool,
        limit: Option<usize>,
        select: Option<Vec<String>>,
    ) -> PyResult<PyQueryResult> {
        let conditions = [&eq, &range, &prefix]
            .iter()
            .filter(|c| c.is_some())
            .count();
        if conditions > 1 {
            return Err(new_err(
                py,
                Kind::InvalidInput,
                "a query takes one condition: eq=, range= or prefix=".into(),
            ));
        }
        let mut q = Query::new(&self.name);
        if let Some(eq) = &eq {
            let (field, value) = condition(eq, "eq")?;
            q = q.eq(&field, &python_to_json(py, &value)?);
        }
        if let Some(range) = &range {
            let (field, bounds) = condition(range, "range")?;
            let bad = || {
                new_err(
                    py,
                    Kind::InvalidInput,
                    "range= takes {field: (lo, hi)}, lo <= value < hi, None for an open side"
                        .into(),
                )
            };
            let bounds = bounds.cast::<PyTuple>().map_err(|_| bad())?;
            if bounds.len() != 2 {
                return Err(bad());
            }
            let lo = range_bound(py, &bounds.get_item(0)?, true)?;
            let hi = range_bound(py, &bounds.get_item(1)?, false)?;
            q = q.range(
                &field,
                lo.as_ref().map(String::as_str),
                hi.as_ref().map(String::as_str),
            );
        }
        if let Some(prefix) = &prefix {
            let (field, text) = condition(prefix, "prefix")?;
            let text = text
                .cast::<PyString>()
                .map_err(|_| type_err("prefix= takes a str", &text))?;
            q = q.prefix(&field, text.to_str()?);
        }
        if let Some(field) = order_by {
            q = q.order_by(field, desc);
        }
        if let Some(n) = limit {
            q = q.limit(n);
        }
        if let Some(fields) = &select {
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            q = q.select(&fields);
        }
        let snap = self.snapshot(py)?;
        if !snap.has_collection(&self.name) {
            let have = snap.collections().join(", ");
            return Err(new_err(
                py,
                Kind::InvalidInput,
                format!(
                    "no collection {:?} to query (the database has: {}); check the name",
                    self.name,
                    if have.is_empty() { "none yet" } else { &have }
                ),
            ));
        }
        let (plan, rows) = py
            .detach(|| -> stele::Result<_> {
                let out = snap.query(&q)?;
                let mut writer = DocumentWriter::new();
                let rows = out
                    .rows
                    .into_iter()
                    .map(|row| Ok((row.id, writer.from_json(row.json.as_bytes())?)))
                    .collect::<stele::Result<Vec<_>>>()?;
                Ok((out.plan, rows))
            })
            .map_err(|e| db_err(py, e))?;
        let list = PyList::empty(py);
        for (id, bytes) in rows {
            let doc = Bound::new(py, PyDocument::from_written(bytes, self.opts.decimals))?;
            list.append(PyTuple::new(
                py,
                [PyString::new(py, &id).into_any(), doc.into_any()],
            )?)?;
        }
        let index = match &plan {
            Plan::IndexScan { index, .. } => Some(index.clone()),
            _ => None,
        };
        Ok(PyQueryResult {
            plan: plan.to_string(),
            index,
            rows: list.unbind(),
        })
    }

    /// create_index(name, fields): indexes the collection on `fields` (a field path or a
    /// list of them; the first is what queries filter on) and builds it for the documents
    /// already there, without the GIL; every write keeps it current.
    fn create_index(&self, py: Python<'_>, name: &str, fields: &Bound<'_, PyAny>) -> PyResult<()> {
        let db = self.writer(py)?;
        let fields: Vec<String> = if let Ok(s) = fields.cast::<PyString>() {
            vec![s.to_str()?.to_owned()]
        } else {
            fields.extract()?
        };
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        let coll = self.name.as_str();
        py.detach(|| db.create_index(coll, name, &fields))
            .map_err(|e| db_err(py, e))
    }

    /// drop_index(name): drops index `name` (`InvalidInput` if there is none).
    fn drop_index(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.writer(py)?;
        let coll = self.name.as_str();
        py.detach(|| db.drop_index(coll, name))
            .map_err(|e| db_err(py, e))
    }

    /// {index name: [field paths]} of this collection.
    fn indexes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for def in self.snapshot(py)?.indexes(&self.name) {
            let fields: Vec<&str> = def.fields.iter().map(|f| f.as_str()).collect();
            d.set_item(&def.name, fields)?;
        }
        Ok(d)
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
        Ok(PyIdIter {
            snap,
            pid: std::process::id(),
            name: self.name.clone(),
            opts: self.opts,
            yields,
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
            return Ok(Some(PyString::new(py, &id).into_any()));
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
            PyTuple::new(py, [PyString::new(py, &id).into_any(), doc])?.into_any(),
        ))
    }
}

/// The rows of a query and how it ran.
#[pyclass(module = "stele", name = "QueryResult", frozen, sequence)]
#[derive(Debug)]
pub(crate) struct PyQueryResult {
    plan: String,
    index: Option<String>,
    rows: Py<PyList>,
}

#[pymethods]
impl PyQueryResult {
    /// How the query ran, e.g. 'index scan of "by_country" on country, in index order' or
    /// 'full scan filtering on country (no index has it first)'.
    #[getter]
    fn plan(&self) -> &str {
        &self.plan
    }

    /// The index the query used, or None for a full scan.
    #[getter]
    fn index(&self) -> Option<&str> {
        self.index.as_deref()
    }

    /// The rows: a list of (id, Document).
    #[getter]
    fn rows(&self, py: Python<'_>) -> Py<PyList> {
        self.rows.clone_ref(py)
    }

    /// The ids of the rows, in order.
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.rows
            .bind(py)
            .iter()
            .map(|row| row.get_item(0))
            .collect()
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.rows.bind(py).len()
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        i: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.rows.bind(py).as_any().get_item(i)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.rows.bind(py).try_iter()?.into_any())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<stele.QueryResult rows={} plan={:?}>",
            self.rows.bind(py).len(),
            self.plan
        )
    }
}

/// Puts and deletes across collections, committed all or nothing.
#[pyclass(module = "stele", name = "Batch", frozen)]
#[derive(Debug)]
pub(crate) struct PyBatch {
    db: Py<PyDatabase>,
    /// None once committed or discarded.
    batch: Mutex<Option<Batch>>,
}

impl PyBatch {
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
        self.with(py, |b| payload.add(b, collection, id))
    }

    /// delete(collection, id): deletes a document at commit (nothing if it does not exist).
    fn delete(&self, py: Python<'_>, collection: &str, id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = id_arg(id)?;
        self.with(py, |b| b.delete(collection, id))
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
