//! Rust errors to Python exceptions.
//!
//! The exception classes live in `stele/_errors.py` (`InvalidInput` is also a `ValueError`, which
//! needs multiple inheritance); they are looked up once. Messages are the Rust error's text.

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The exception classes of `stele._errors`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Stele,
    Corrupt,
    Format,
    InvalidInput,
    InUse,
    Timeout,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::Stele => "SteleError",
            Kind::Corrupt => "CorruptError",
            Kind::Format => "FormatError",
            Kind::InvalidInput => "InvalidInput",
            Kind::InUse => "InUseError",
            Kind::Timeout => "QueryTimeout",
        }
    }
}

/// A new exception of `kind` with `message`.
/// `message` with the libraries' fixes worded in Rust API terms said in this package's
/// keyword arguments instead.
fn in_keywords(message: &str) -> String {
    message
        .replace(
            stele_doc::DUPLICATE_KEY_FIX,
            "pass duplicates=\"last_wins\" or duplicates=\"first_wins\" to accept such input",
        )
        .replace(
            stele_table::DUPLICATE_KEY_FIX,
            "pass duplicates=\"keep_last\" or duplicates=\"keep_first\" to allow duplicates",
        )
        .replace(
            stele_doc::MAX_DEPTH_FIX,
            "the Python package converts with this default limit: nest the input less deeply",
        )
        .replace(
            stele::import::NON_OBJECT_FIX,
            "pass wrap_non_objects=\"field\" to store such records as {\"field\": record}",
        )
        .replace(
            stele::CREATE_HERE_FIX,
            "pass create_here=True to create the database beside them",
        )
}

pub(crate) fn new_err(py: Python<'_>, kind: Kind, message: String) -> PyErr {
    let message = in_keywords(&message);
    let class = ERRORS
        .get_or_try_init(py, || py.import("stele._errors").map(Bound::unbind))
        .and_then(|m| m.bind(py).getattr(kind.class_name()))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    }
}

/// Maps an error of `stele-doc`.
pub(crate) fn doc_err(py: Python<'_>, e: stele_doc::Error) -> PyErr {
    use stele_doc::Error as E;
    let kind = match &e {
        E::Invalid { .. } => Kind::Corrupt,
        E::Json { .. }
        | E::DuplicateKey { .. }
        | E::TooDeep { .. }
        | E::NonFiniteFloat { .. }
        | E::InvalidNumber { .. }
        | E::Path { .. } => Kind::InvalidInput,
        _ => Kind::Stele,
    };
    let err = new_err(py, kind, e.to_string());
    let position = match e {
        E::Json {
            offset,
            line,
            column,
            ..
        } => Some((offset, Some((line, column)))),
        E::Invalid { offset, .. } => Some((offset, None)),
        _ => None,
    };
    if let Some((offset, line_column)) = position {
        let value = err.value(py);
        // Attributes are a convenience: failing to set them must not hide the error itself.
        let _ = value.setattr("offset", offset);
        if let Some((line, column)) = line_column {
            let _ = value.setattr("line", line);
            let _ = value.setattr("column", column);
        }
    }
    err
}

/// Maps an error of `stele-table`. I/O errors become the matching `OSError` subclass
/// (`FileNotFoundError`, `PermissionError`, ...) with the Rust message (operation and path).
pub(crate) fn table_err(py: Python<'_>, e: stele_table::Error) -> PyErr {
    use stele_table::Error as E;
    let kind = match &e {
        E::Io { source, .. } => {
            return PyErr::from(std::io::Error::new(source.kind(), e.to_string()));
        }
        E::MissingShard { .. } => {
            return PyErr::from(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                in_keywords(&e.to_string()),
            ));
        }
        E::ChecksumMismatch { .. } | E::Corrupt { .. } | E::CorruptSet { .. } => Kind::Corrupt,
        E::NotATable { .. } | E::UnsupportedVersion { .. } | E::WrongKind { .. } => Kind::Format,
        E::OutOfOrder { .. }
        | E::InvalidSet { .. }
        | E::DuplicateKey { .. }
        | E::TooLarge { .. }
        | E::InvalidOption { .. } => Kind::InvalidInput,
        _ => Kind::Stele,
    };
    new_err(py, kind, e.to_string())
}

/// Maps an error of `stele-durable`.
pub(crate) fn durable_err(py: Python<'_>, e: stele_durable::Error) -> PyErr {
    use stele_durable::Error as E;
    let kind = match e {
        E::Table(e) => return table_err(py, e),
        E::Io { ref source, .. } => {
            return PyErr::from(std::io::Error::new(source.kind(), e.to_string()));
        }
        E::MissingTable { .. } | E::NoSuchRoot { .. } => {
            return PyErr::from(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                e.to_string(),
            ));
        }
        E::OutOfRange { .. } => return PyIndexError::new_err(e.to_string()),
        E::CorruptDiff { .. } | E::BadStack { .. } | E::CorruptRoot { .. } => Kind::Corrupt,
        E::WrongKind { .. } => Kind::Format,
        E::InvalidRootName { .. } | E::NotBoundToRoot | E::TooLarge { .. } => Kind::InvalidInput,
        _ => Kind::Stele,
    };
    new_err(py, kind, e.to_string())
}

/// Maps an error of the document store (`stele`). `InUseError` carries `pid` and `path`.
pub(crate) fn db_err(py: Python<'_>, e: stele::Error) -> PyErr {
    use stele::Error as E;
    let kind = match e {
        E::Durable(e) => return durable_err(py, e),
        E::Table(e) => return table_err(py, e),
        E::Document(e) => return doc_err(py, e),
        // The same exception as `put_json` of that one document raises (its class and
        // attributes, such as a JSON error's line and column).
        E::InvalidDocument { source, .. } => return db_err(py, *source),
        E::Io { ref source, .. } => {
            return PyErr::from(std::io::Error::new(source.kind(), e.to_string()));
        }
        E::InUse { pid, ref path } => {
            let path = path.clone();
            let err = new_err(py, Kind::InUse, e.to_string());
            let value = err.value(py);
            // Attributes are a convenience: failing to set them must not hide the error.
            let _ = value.setattr("pid", pid);
            let _ = value.setattr("path", path);
            return err;
        }
        // A filter, sort, projection or pipeline: `at` says where in it (`$.price.$gte`).
        E::InvalidFilter { ref at, .. } => {
            let at = at.clone();
            let err = new_err(py, Kind::InvalidInput, e.to_string());
            // An attribute is a convenience: failing to set it must not hide the error.
            let _ = err.value(py).setattr("at", at);
            return err;
        }
        E::QueryTimeout { .. } => Kind::Timeout,
        E::InvalidCollectionName { .. }
        | E::NotAFolder { .. }
        | E::NotADatabase { .. }
        | E::InvalidId { .. }
        | E::IdKindMismatch { .. }
        | E::BatchTooLarge { .. }
        | E::InvalidFieldPath { .. }
        | E::InvalidIndex { .. }
        | E::InvalidQuery { .. }
        | E::ArrowMisfit { .. }
        | E::ArrowSchema { .. } => Kind::InvalidInput,
        E::CorruptLog { .. }
        | E::CorruptManifest { .. }
        | E::CorruptMetaKey { .. }
        | E::CorruptDocument { .. } => Kind::Corrupt,
        _ => Kind::Stele,
    };
    new_err(py, kind, e.to_string())
}

/// `TypeError` for an argument of the wrong type.
pub(crate) fn type_err(what: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let name = got
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    PyTypeError::new_err(format!("{what}, not {name}"))
}

/// The value of option `name` whose spelling is `got`; `InvalidInput` listing the choices if
/// there is none.
pub(crate) fn choice<T: Copy>(
    py: Python<'_>,
    name: &str,
    got: &str,
    choices: &[(&str, T)],
) -> PyResult<T> {
    if let Some(&(_, value)) = choices.iter().find(|(spelling, _)| *spelling == got) {
        return Ok(value);
    }
    let names = choices
        .iter()
        .map(|(spelling, _)| format!("{spelling:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(new_err(
        py,
        Kind::InvalidInput,
        format!("invalid {name} {got:?}: expected one of {names}"),
    ))
}
