//! Backups from Python: `db.backup(dest)`, `stele.verify(path)`, `stele.restore(...)`
//! (see `stele::backup` and `docs/BACKUPS.md`).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use stele::backup::{self, At, BackupOptions, Retention};

use crate::database::PyDatabase;
use crate::errors::db_err;

/// A rate limit as given: MB/s as a number, a text with a unit ("512KB/s"), or "none".
#[derive(FromPyObject)]
enum Rate {
    Mb(f64),
    Text(String),
}

fn options(
    py: Python<'_>,
    copy: bool,
    keep: Option<&str>,
    max_rate: Option<Rate>,
) -> PyResult<BackupOptions> {
    let keep = keep
        .map(Retention::parse)
        .transpose()
        .map_err(|e| db_err(py, e))?;
    let mut opts = BackupOptions::default().link(!copy).keep(keep);
    if let Some(rate) = max_rate {
        let text = match rate {
            Rate::Mb(mb) => format!("{mb}"),
            Rate::Text(t) => t,
        };
        opts = opts.max_rate(backup::parse_rate(&text).map_err(|e| db_err(py, e))?);
    }
    Ok(opts)
}

#[pymethods]
impl PyDatabase {
    /// Backs the database up into folder `dest` while writes go on (a new backup, or only
    /// what is new since one made before). `max_rate`: copy at most this many MB/s (or a
    /// text with a unit, or "none"). Returns what was shipped.
    #[pyo3(signature = (dest, *, copy = false, keep = None, max_rate = None))]
    fn backup<'py>(
        slf: &Bound<'py, Self>,
        dest: PathBuf,
        copy: bool,
        keep: Option<String>,
        max_rate: Option<Rate>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let path: PathBuf = slf.getattr("path")?.extract()?;
        let opts = options(py, copy, keep.as_deref(), max_rate)?;
        let s = py
            .detach(|| backup::backup_with(&path, &dest, &opts))
            .map_err(|e| db_err(py, e))?;
        let d = PyDict::new(py);
        d.set_item("version", s.seq)?;
        d.set_item("manifest_version", s.manifest_seq)?;
        d.set_item("tables_copied", s.tables_copied)?;
        d.set_item("tables_linked", s.tables_linked)?;
        d.set_item("tables_kept", s.tables_kept)?;
        d.set_item("log_bytes", s.log_bytes)?;
        d.set_item("bytes_written", s.bytes_written)?;
        Ok(d)
    }
}

/// Checks every file of the database or backup in `path`; returns `{"ok", "last_version",
/// "tables", "records", "problems": [{"path", "offset", "problem", "damage"}]}`.
#[pyfunction]
pub(crate) fn verify(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let r = py
        .detach(|| backup::verify(&path))
        .map_err(|e| db_err(py, e))?;
    let problems = r
        .findings
        .iter()
        .map(|f| {
            let d = PyDict::new(py);
            d.set_item("path", &f.path)?;
            d.set_item("offset", f.offset)?;
            d.set_item("problem", &f.problem)?;
            d.set_item("damage", f.damage)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let d = PyDict::new(py);
    d.set_item("ok", r.is_ok())?;
    d.set_item("last_version", r.last_seq)?;
    d.set_item("tables", r.tables)?;
    d.set_item("records", r.records)?;
    d.set_item("problems", problems)?;
    Ok(d)
}

/// Restores the backup in `backup_dir` into the new folder `out` at `at` (a version, a
/// time as text, or None for the latest); returns the version restored.
#[pyfunction]
#[pyo3(signature = (backup_dir, out, *, at = None))]
pub(crate) fn restore(
    py: Python<'_>,
    backup_dir: PathBuf,
    out: PathBuf,
    at: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let at = match at {
        None => At::Latest,
        Some(v) => match v.extract::<u64>() {
            Ok(n) => At::Version(n),
            Err(_) => At::parse(&v.extract::<String>()?).map_err(|e| db_err(py, e))?,
        },
    };
    let r = py
        .detach(|| backup::restore(&backup_dir, &out, at))
        .map_err(|e| db_err(py, e))?;
    Ok(r.seq)
}
