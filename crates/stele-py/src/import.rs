//! `Collection.import_file` / `import_jsonl`: the store's own import (`stele::import`), the
//! one `stele import` runs, so a file gives the same documents, ids and errors either way.
//!
//! The import runs without the GIL. Its progress callback takes the GIL back every few
//! thousand records to check for Ctrl-C; a pending signal sets the import's cancel flag, the
//! import stops all or nothing, and the signal's exception is raised.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use stele::Database;
use stele::import::{
    ImportError, ImportFormat, ImportOptions, ImportProgress, ImportReport, import_path,
};
use stele_doc::DuplicateKeys;

use crate::database::at_least_one;
use crate::errors::{Kind, choice, db_err, new_err};

/// The keyword arguments of an import.
pub(crate) struct ImportArgs<'a> {
    pub(crate) format: Option<&'a str>,
    pub(crate) id_field: Option<&'a str>,
    pub(crate) skip_bad: bool,
    pub(crate) wrap_non_objects: Option<&'a str>,
    pub(crate) duplicates: &'a str,
    pub(crate) batch: usize,
}

fn options(py: Python<'_>, args: &ImportArgs<'_>) -> PyResult<ImportOptions> {
    let duplicates = choice(
        py,
        "duplicates",
        args.duplicates,
        &[
            ("last_wins", DuplicateKeys::LastWins),
            ("first_wins", DuplicateKeys::FirstWins),
            ("reject", DuplicateKeys::Reject),
        ],
    )?;
    let mut opts = ImportOptions::new()
        .skip_bad(args.skip_bad)
        .batch_docs(at_least_one(py, "batch", args.batch)?)
        .write_options(stele::write_options().duplicate_keys(duplicates));
    if let Some(f) = args.format {
        opts = opts.format(choice(
            py,
            "format",
            f,
            &[
                ("json", ImportFormat::Json),
                ("jsonl", ImportFormat::JsonLines),
                ("dir", ImportFormat::Dir),
            ],
        )?);
    }
    if let Some(field) = args.id_field {
        opts = opts.id_field(field);
    }
    if let Some(field) = args.wrap_non_objects {
        opts = opts.wrap_non_objects(field);
    }
    Ok(opts)
}

/// Imports `path` into `collection` of `db`; the report as a dict.
pub(crate) fn import_file<'py>(
    py: Python<'py>,
    db: &Database,
    collection: &str,
    path: &Path,
    args: &ImportArgs<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let what = format!("no file or folder {}: check the path", path.display());
    run_import(py, args, &what, |opts, progress| {
        import_path(db, collection, path, opts, progress)
    })
}

/// Runs `import` (given the options and a progress callback) without the GIL, Ctrl-C
/// cancelling it, and maps its report or error; `missing` is the message of a NotFound.
pub(crate) fn run_import<'py>(
    py: Python<'py>,
    args: &ImportArgs<'_>,
    missing: &str,
    import: impl Send
    + FnOnce(
        &ImportOptions,
        &mut dyn FnMut(ImportProgress),
    ) -> Result<ImportReport, ImportError>,
) -> PyResult<Bound<'py, PyDict>> {
    let cancel = Arc::new(AtomicBool::new(false));
    let opts = options(py, args)?.cancel_flag(Arc::clone(&cancel));
    let mut interrupt: Option<PyErr> = None;
    let result = py.detach(|| {
        import(&opts, &mut |_| {
            if interrupt.is_none()
                && let Err(e) = Python::attach(|py| py.check_signals())
            {
                interrupt = Some(e);
                cancel.store(true, Ordering::Relaxed);
            }
        })
    });
    let report = match result {
        Ok(report) => report,
        Err(ImportError::Cancelled) => {
            return Err(interrupt
                .unwrap_or_else(|| new_err(py, Kind::Stele, "the import was cancelled".into())));
        }
        Err(ImportError::BadRecord(bad)) => {
            let err = new_err(
                py,
                Kind::InvalidInput,
                format!(
                    "{bad} (nothing was imported: fix the record, or pass skip_bad=True to skip \
                     bad records)"
                ),
            );
            // Attributes are a convenience: failing to set them must not hide the error.
            let value = err.value(py);
            let _ = value.setattr("line", bad.line);
            let _ = value.setattr("column", bad.column);
            let _ = value.setattr("record", bad.record);
            let _ = value.setattr("source", &bad.source);
            return Err(err);
        }
        Err(ImportError::Database(e)) => return Err(db_err(py, e)),
        Err(ImportError::Read { error, .. } | ImportError::Spool { error, .. })
            if error.kind() == std::io::ErrorKind::NotFound =>
        {
            return Err(PyErr::from(std::io::Error::new(
                error.kind(),
                missing.to_owned(),
            )));
        }
        Err(e @ ImportError::Malformed { .. }) => {
            return Err(new_err(py, Kind::InvalidInput, e.to_string()));
        }
        Err(e) => return Err(new_err(py, Kind::Stele, e.to_string())),
    };
    let d = PyDict::new(py);
    d.set_item("imported", report.documents)?;
    d.set_item("skipped", report.skipped)?;
    let bad = PyList::empty(py);
    for b in &report.bad {
        let item = PyDict::new(py);
        item.set_item("source", &b.source)?;
        item.set_item("line", b.line)?;
        item.set_item("column", b.column)?;
        item.set_item("record", b.record)?;
        item.set_item("reason", &b.reason)?;
        bad.append(item)?;
    }
    d.set_item("bad", bad)?;
    d.set_item("bytes_read", report.bytes_read)?;
    d.set_item("batches", report.batches)?;
    Ok(d)
}
