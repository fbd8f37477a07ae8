//! Documents and their lazy views.
//!
//! A [`PyDocument`] owns its bytes in an `Arc<Owner>`. Nested objects and arrays come back as
//! [`PyObjectView`] / [`PyArrayView`]: each holds a `yoke::Yoke` of a `stele_doc::Value`
//! together with a clone of that `Arc`. `yoke` proves in the type system (higher-ranked closures,
//! no `unsafe` here) that the value borrows only from the cart it is yoked to, and the cart is
//! kept alive by the view itself: a view can outlive the `Document` object it came from, and the
//! bytes are freed when the last view goes. The bytes never move (they are behind the `Arc`), so
//! nothing is copied or re-parsed when a view is created.
//!
//! Scalars become Python values at once: `int` (all of `i64` and `u64`, and longer integers
//! written as JSON text), `float` or `decimal.Decimal` for fractions (the document's
//! `decimals` policy), `str`, `bool`, `None`.

mod values;
mod view;
mod write;

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::doc_err;
pub(crate) use values::{DETACH_BYTES, Decimals};
use values::{Owner, with_bytes};
use view::Node;
pub(crate) use view::{PyArrayIter, PyArrayView, PyObjectView, PyView};
use write::{json_to_bytes, write_options};
pub(crate) use write::{python_to_bytes, python_to_bytes_with, python_to_json};

/// A document: validated bytes read in place. Index it like the JSON value it holds.
#[pyclass(module = "stele", name = "Document", frozen, extends = PyView)]
#[derive(Debug)]
pub(crate) struct PyDocument {}

impl PyDocument {
    fn init(doc: stele_doc::Document<Box<[u8]>>, decimals: Decimals) -> PyClassInitializer<Self> {
        let node = Node::root(Arc::new(Owner { doc, decimals }));
        PyClassInitializer::from(PyView { node }).add_subclass(PyDocument {})
    }

    /// Wraps bytes the writer has just produced.
    pub(crate) fn from_written(bytes: Vec<u8>, decimals: Decimals) -> PyClassInitializer<Self> {
        // SAFETY: `bytes` come straight from `DocumentWriter`, which only writes valid documents
        // (the case `new_unchecked` documents); nothing else had access to them in between.
        let doc = unsafe { stele_doc::Document::new_unchecked(bytes.into_boxed_slice()) };
        PyDocument::init(doc, decimals)
    }

    /// Validates and opens document bytes.
    fn open(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        decimals: &str,
    ) -> PyResult<PyClassInitializer<Self>> {
        let decimals = Decimals::parse(py, decimals)?;
        if data.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "Document() takes the bytes of a document; use Document.from_json() for JSON text",
            ));
        }
        let bytes: Box<[u8]> = with_bytes(
            data,
            "Document() takes bytes, bytearray or memoryview",
            |b| Ok(b.into()),
        )?;
        let doc = if bytes.len() >= DETACH_BYTES {
            py.detach(|| stele_doc::Document::new(bytes))
        } else {
            stele_doc::Document::new(bytes)
        };
        Ok(PyDocument::init(doc.map_err(|e| doc_err(py, e))?, decimals))
    }
}

impl PyDocument {
    /// Wraps the bytes of a document read from a database: validated, unless the database
    /// was opened as trusted (large ones are validated without the GIL).
    pub(crate) fn from_stored(
        py: Python<'_>,
        bytes: Vec<u8>,
        decimals: Decimals,
        trusted: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let bytes = bytes.into_boxed_slice();
        let doc = if trusted {
            // SAFETY: `trusted` is the user's promise, made when opening the database
            // (`stele.open(path, trusted=True)`, documented as such), that its files were
            // written by Stele and altered by nothing else. Stele validated every document
            // when it was written and the log and tables are checksummed, which is
            // `Doc::document_unchecked`'s (and so `Document::new_unchecked`'s) requirement.
            // Without that promise (the default) the bytes are validated below.
            unsafe { stele_doc::Document::new_unchecked(bytes) }
        } else if bytes.len() >= DETACH_BYTES {
            py.detach(|| stele_doc::Document::new(bytes))
                .map_err(|e| doc_err(py, e))?
        } else {
            stele_doc::Document::new(bytes).map_err(|e| doc_err(py, e))?
        };
        Ok(PyDocument::init(doc, decimals))
    }
}

/// The bytes of a `Document` (for tables that store documents as values).
pub(crate) fn document_bytes<'a>(doc: &'a Bound<'_, PyDocument>) -> &'a [u8] {
    doc.as_super().get().node.owner().doc.as_bytes()
}

#[pymethods]
impl PyDocument {
    /// Document(data, *, decimals="float")
    ///
    /// Opens the bytes of a document (from `to_bytes()`, a table, a file). The bytes are
    /// untrusted: they are validated completely first (`CorruptError` if they are not a valid
    /// document) and copied, so the source may change afterwards. `decimals` says how numbers
    /// with a fraction or exponent come back: "float" (like json.loads) or "decimal"
    /// (`decimal.Decimal` of the exact text).
    #[new]
    #[pyo3(signature = (data, *, decimals = "float"))]
    fn new(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        decimals: &str,
    ) -> PyResult<PyClassInitializer<Self>> {
        PyDocument::open(py, data, decimals)
    }

    /// Document.from_json(text, *, decimals="float", duplicates="last_wins", sort_keys=False)
    ///
    /// Converts JSON text (str or UTF-8 bytes) into a document. Malformed JSON raises
    /// `InvalidInput` with `line`, `column` and `offset`. `duplicates` is the policy for a key
    /// repeated in one object: "last_wins", "first_wins" or "reject". `sort_keys=True` keeps
    /// only the sorted key order (smaller documents). Large inputs convert without the GIL.
    #[staticmethod]
    #[pyo3(signature = (text, *, decimals = "float", duplicates = "last_wins", sort_keys = false))]
    fn from_json(
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        decimals: &str,
        duplicates: &str,
        sort_keys: bool,
    ) -> PyResult<Py<PyDocument>> {
        let decimals = Decimals::parse(py, decimals)?;
        let opts = write_options(py, duplicates, sort_keys)?;
        let bytes = json_to_bytes(py, text, opts)?;
        Py::new(py, PyDocument::from_written(bytes, decimals))
    }

    /// Document.from_python(value, *, decimals="float", sort_keys=False)
    ///
    /// Builds a document from Python values: dict (str keys), list, tuple, str, int (any size),
    /// float (finite), bool, None, decimal.Decimal, or stele documents and views.
    #[staticmethod]
    #[pyo3(signature = (value, *, decimals = "float", sort_keys = false))]
    fn from_python(
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        decimals: &str,
        sort_keys: bool,
    ) -> PyResult<Py<PyDocument>> {
        let decimals = Decimals::parse(py, decimals)?;
        let bytes = python_to_bytes(py, value, sort_keys)?;
        Py::new(py, PyDocument::from_written(bytes, decimals))
    }

    /// The document's bytes: store them anywhere, open them again with `Document(data)`.
    fn to_bytes<'py>(slf: &Bound<'py, Self>) -> Bound<'py, PyBytes> {
        PyBytes::new(slf.py(), document_bytes(slf))
    }

    fn __bytes__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, PyBytes> {
        PyDocument::to_bytes(slf)
    }

    /// Size of the document in bytes.
    #[getter]
    fn nbytes(slf: &Bound<'_, Self>) -> usize {
        document_bytes(slf).len()
    }

    /// The `decimals` policy of this document ("float" or "decimal").
    #[getter]
    fn decimals(slf: &Bound<'_, Self>) -> &'static str {
        slf.as_super().get().node.owner().decimals.name()
    }

    /// The root value: an `Object`, an `Array`, or a Python scalar.
    #[getter]
    fn root<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.as_super().get().node.share().into_py_view(slf.py())
    }
}

/// dumps(value, *, sort_keys=False) -> bytes
///
/// The document bytes of a Python value (see `Document.from_python`).
#[pyfunction]
#[pyo3(signature = (value, *, sort_keys = false))]
pub(crate) fn dumps<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    sort_keys: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &python_to_bytes(py, value, sort_keys)?))
}

/// loads(data, *, decimals="float")
///
/// The plain Python value of document bytes (validated first), like `json.loads` for JSON.
#[pyfunction]
#[pyo3(signature = (data, *, decimals = "float"))]
pub(crate) fn loads<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    decimals: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let doc = Bound::new(py, PyDocument::open(py, data, decimals)?)?;
    doc.as_super().get().node.to_python(py)
}

/// json_to_document(text, *, duplicates="last_wins", sort_keys=False) -> bytes
///
/// Converts JSON text to document bytes (large inputs without the GIL).
#[pyfunction]
#[pyo3(signature = (text, *, duplicates = "last_wins", sort_keys = false))]
pub(crate) fn json_to_document<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    duplicates: &str,
    sort_keys: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let opts = write_options(py, duplicates, sort_keys)?;
    Ok(PyBytes::new(py, &json_to_bytes(py, text, opts)?))
}

/// document_to_json(data, *, pretty=False, sorted=False) -> str
///
/// JSON text of document bytes (validated first).
#[pyfunction]
#[pyo3(signature = (data, *, pretty = false, sorted = false))]
pub(crate) fn document_to_json(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    pretty: bool,
    sorted: bool,
) -> PyResult<String> {
    let doc = Bound::new(py, PyDocument::open(py, data, "float")?)?;
    Ok(doc.as_super().get().node.json(py, pretty, sorted))
}
