//! Bulk writes into a `stele.Collection`: `put_many`, `import_file` and `import_jsonl`
//! (the file formats themselves are read by `crate::import`).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};
use stele::Database;

use super::collection::PyCollection;
use super::{Payload, PyId, id_arg};
use crate::errors::{Kind, db_err, new_err, type_err};

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
fn id_of(value: &Bound<'_, PyAny>, id_field: &str, n: usize) -> PyResult<PyId> {
    let py = value.py();
    let field = value.get_item(id_field).map_err(|_| {
        new_err(
            py,
            Kind::InvalidInput,
            format!("item {n} has no field {id_field:?} to take its id from"),
        )
    })?;
    if field.is_instance_of::<PyString>()
        || (field.is_instance_of::<PyInt>() && !field.is_instance_of::<PyBool>())
    {
        return id_arg(&field);
    }
    Err(type_err(
        &format!("the id field {id_field:?} of item {n} must be a str or an int"),
        &field,
    ))
}

impl PyCollection {
    /// Puts `items` in one batch, committed, or (with `bulk`) added to a bulk write.
    pub(super) fn puts_into(
        &self,
        py: Python<'_>,
        db: &Database,
        items: &[(PyId, Payload<'_>)],
        bulk: Option<&mut stele::import::BulkImport>,
    ) -> PyResult<()> {
        let name = self.name.as_str();
        // The payloads borrow the buffers of `str`, `bytes` and `Document` objects that the
        // caller holds; those objects are immutable, so reading them without the GIL is sound.
        py.detach(|| -> Result<(), PutError> {
            let mut batch = db.batch();
            // Runs of JSON text are converted on all cores (text ids and integer ids apart:
            // they never share a collection, so their order between them does not matter).
            let mut json: Vec<(&str, &[u8])> = Vec::new();
            let mut json_int: Vec<(i64, &[u8])> = Vec::new();
            for (id, payload) in items {
                match (payload, id) {
                    (Payload::Json(text), PyId::Text(id)) => json.push((id, text)),
                    (Payload::Json(text), PyId::Int(n)) => json_int.push((*n, text)),
                    (Payload::Doc(_), _) => {
                        batch.put_json_many(name, &json)?;
                        batch.put_json_many_int(name, &json_int)?;
                        json.clear();
                        json_int.clear();
                        payload.add(&mut batch, name, id)?;
                    }
                }
            }
            batch.put_json_many(name, &json)?;
            batch.put_json_many_int(name, &json_int)?;
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

#[pymethods]
impl PyCollection {
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
        let mut held: Vec<(PyId, Bound<'_, PyAny>)> = Vec::with_capacity(batch);
        let mut stored = 0;
        // Started when a second batch comes: a put_many of one batch stays one commit.
        let mut bulk: Option<stele::import::BulkImport> = None;
        let mut bulk_asked = false;
        let mut flush = |held: &mut Vec<(PyId, Bound<'_, PyAny>)>, more: bool| -> PyResult<usize> {
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
                    (id_arg(&id)?, item.get_item(1)?)
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
    /// wrap_non_objects=None, duplicates="last_wins", batch=10000) -> dict
    ///
    /// Imports a JSON array, JSON Lines or a folder of `.json` files with the store's own
    /// import (as `stele import` does): all or nothing, even if the process is killed; same
    /// ids (`id_field`, a path such as "id" or "meta.key", else records numbered from 1,
    /// zero-padded to 10 digits, "0000000001"; folders: file names). `format` is "json",
    /// "jsonl" or "dir" (default: detected). A bad record raises `InvalidInput` with `line`,
    /// `column` and `record` (nothing is imported), or with `skip_bad=True` is counted and
    /// listed. A record that is not a JSON object (a number, string, array, ...) is bad,
    /// unless `wrap_non_objects="field"` stores it as `{"field": record}`. An import of no
    /// document makes no collection. Runs without the GIL; Ctrl-C cancels it (nothing is imported). Returns
    /// {"imported", "skipped", "bad": [first 100 bad records], "bytes_read", "batches"}.
    #[pyo3(signature = (path, *, format = None, id_field = None, skip_bad = false, wrap_non_objects = None, duplicates = "last_wins", batch = 10_000))]
    #[allow(clippy::too_many_arguments)]
    fn import_file<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: Option<&str>,
        id_field: Option<&str>,
        skip_bad: bool,
        wrap_non_objects: Option<&str>,
        duplicates: &str,
        batch: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = self.writer(py)?;
        let opts = crate::import::ImportArgs {
            format,
            id_field,
            skip_bad,
            wrap_non_objects,
            duplicates,
            batch,
        };
        crate::import::import_file(py, &db, &self.name, &path, &opts)
    }

    /// import_jsonl(path, *, id_field=None, skip_bad=False, wrap_non_objects=None,
    /// duplicates="last_wins", batch=10000) -> dict: `import_file` of a JSON Lines file.
    #[pyo3(signature = (path, *, id_field = None, skip_bad = false, wrap_non_objects = None, duplicates = "last_wins", batch = 10_000))]
    #[allow(clippy::too_many_arguments)]
    fn import_jsonl<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        id_field: Option<&str>,
        skip_bad: bool,
        wrap_non_objects: Option<&str>,
        duplicates: &str,
        batch: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.import_file(
            py,
            path,
            Some("jsonl"),
            id_field,
            skip_bad,
            wrap_non_objects,
            duplicates,
            batch,
        )
    }
}
