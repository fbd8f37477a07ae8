//! `stele.serve(path, port=...)`: the database in a web page (crate `stele-serve`), from
//! Python. Blocking by default (Ctrl-C stops it, as a KeyboardInterrupt); `block=False`
//! returns a `Server` to stop later, for notebooks and tests.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::{Kind, db_err, new_err};

/// A running `stele serve`. Stops on `stop()`, at the end of a `with` block, or when
/// garbage-collected.
#[pyclass(name = "Server", module = "stele")]
pub(crate) struct PyServer {
    server: Option<stele_serve::Server>,
    url: String,
    port: u16,
}

#[pymethods]
impl PyServer {
    /// The URL of the database page: `http://127.0.0.1:8080/`.
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// The port listened on (the one chosen, when 0 was asked).
    #[getter]
    fn port(&self) -> u16 {
        self.port
    }

    /// Stops answering (the requests being answered finish first). Idempotent.
    fn stop(&mut self, py: Python<'_>) {
        if let Some(s) = self.server.take() {
            py.detach(|| s.stop());
        }
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        _ty: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) {
        self.stop(py);
    }

    fn __repr__(&self) -> String {
        let state = if self.server.is_some() {
            "running"
        } else {
            "stopped"
        };
        format!("<stele.Server {} ({state})>", self.url)
    }
}

/// Serves the database in folder `path` read-only at `http://host:port/` (see the README's
/// "Look at a database in a web page"). With `block=True` (the default) answers until
/// Ctrl-C; with `block=False` returns the running `Server`.
#[pyfunction]
#[pyo3(signature = (path, *, port = 8080, host = "127.0.0.1", workers = 4, time_limit = 1.0, block = true))]
pub(crate) fn serve(
    py: Python<'_>,
    path: PathBuf,
    port: u16,
    host: &str,
    workers: usize,
    time_limit: f64,
    block: bool,
) -> PyResult<Option<PyServer>> {
    if !(time_limit.is_finite() && time_limit >= 0.0) {
        return Err(new_err(
            py,
            Kind::InvalidInput,
            format!("time_limit must be a number of seconds of 0 or more, not {time_limit}"),
        ));
    }
    let opts = stele_serve::Options::default()
        .host(host)
        .port(port)
        .workers(workers)
        .time_limit(Duration::from_secs_f64(time_limit));
    let server = py
        .detach(|| stele_serve::Server::start(&path, opts))
        .map_err(|e| match e {
            stele_serve::ServeError::Store(e) => db_err(py, e),
            e => new_err(py, Kind::InvalidInput, e.to_string()),
        })?;
    if let Some(w) = server.warning() {
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            &std::ffi::CString::new(w).unwrap_or_default(),
            1,
        )?;
    }
    let (url, port) = (server.url(), server.addr().port());
    if !block {
        return Ok(Some(PyServer {
            server: Some(server),
            url,
            port,
        }));
    }
    println!(
        "serving {} at {url} (read-only; Ctrl-C stops)",
        path.display()
    );
    // Python runs signal handlers only between bytecodes on the main thread: look for a
    // pending Ctrl-C every 100 ms, sleeping without the GIL in between.
    let stopped = loop {
        py.detach(|| std::thread::sleep(Duration::from_millis(100)));
        if let Err(e) = py.check_signals() {
            break e;
        }
        if let Some(reason) = server.failure() {
            let e = stele_serve::ServeError::Listener { reason };
            break new_err(py, Kind::Stele, e.to_string());
        }
    };
    py.detach(|| server.stop());
    if stopped.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        Ok(None)
    } else {
        Err(stopped)
    }
}
