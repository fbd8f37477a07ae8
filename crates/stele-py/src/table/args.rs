//! The arguments tables and durable maps share: keys, values, duplicate policies, bounds,
//! positions.

use std::ops::Bound as KeyBound;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use stele_table::{DuplicatePolicy, Entry};

use crate::document::PyDocument;
use crate::errors::{choice, type_err};

/// A key given as `bytes` or `str` (UTF-8), borrowed from the immutable Python object.
pub(crate) fn key_arg<'a>(key: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(b) = key.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    if let Ok(s) = key.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    Err(type_err("table keys are bytes or str", key))
}

/// A value given as `bytes`, `str` (UTF-8) or a `Document` (its bytes).
pub(crate) fn value_arg<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(d) = value.cast::<PyDocument>() {
        return Ok(crate::document::document_bytes(d));
    }
    key_arg(value).map_err(|_| type_err("table values are bytes, str or Document", value))
}

/// The `duplicates=` keyword of tables: "reject", "keep_last" or "keep_first".
pub(crate) fn duplicate_policy(py: Python<'_>, duplicates: &str) -> PyResult<DuplicatePolicy> {
    choice(
        py,
        "duplicates",
        duplicates,
        &[
            ("reject", DuplicatePolicy::Reject),
            ("keep_last", DuplicatePolicy::KeepLast),
            ("keep_first", DuplicatePolicy::KeepFirst),
        ],
    )
}

/// Lower and upper bounds of keys to visit.
pub(crate) type KeyBounds = (KeyBound<Vec<u8>>, KeyBound<Vec<u8>>);

/// Bounds `start <= key < end` (None: unbounded).
pub(crate) fn range_bounds(
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
) -> PyResult<KeyBounds> {
    let lo = match start {
        Some(k) => KeyBound::Included(key_arg(k)?.to_vec()),
        None => KeyBound::Unbounded,
    };
    let hi = match end {
        Some(k) => KeyBound::Excluded(key_arg(k)?.to_vec()),
        None => KeyBound::Unbounded,
    };
    Ok((lo, hi))
}

/// Bounds of the keys starting with `prefix`.
pub(crate) fn prefix_bounds(prefix: &Bound<'_, PyAny>) -> PyResult<KeyBounds> {
    let p = key_arg(prefix)?;
    let hi = stele_table::prefix_successor(p).map_or(KeyBound::Unbounded, KeyBound::Excluded);
    Ok((KeyBound::Included(p.to_vec()), hi))
}

/// Position `i` (negative counts from the end) among `len` entries; `None` before the start.
pub(crate) fn position(i: i64, len: u64) -> Option<u64> {
    if i < 0 {
        len.checked_sub(i.unsigned_abs())
    } else {
        Some(i as u64)
    }
}

/// `IndexError` for position `i` among `len` entries.
pub(crate) fn out_of_range(i: i64, len: u64) -> PyErr {
    PyIndexError::new_err(format!("position {i} out of range for {len} entries"))
}

/// An entry as a `(key, value)` tuple of bytes.
pub(crate) fn entry_tuple<'py>(
    py: Python<'py>,
    entry: Option<Entry<'_>>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    entry
        .map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k.as_bytes()), PyBytes::new(py, v)]))
        .transpose()
}
