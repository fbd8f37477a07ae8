//! Python values and JSON text written as document bytes.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use stele_doc::{DocumentWriter, DuplicateKeys, KeyOrder, WriteOptions};

use super::values::{DECIMAL, DETACH_BYTES, with_bytes};
use super::view::plain;
use crate::errors::{choice, doc_err, type_err};

pub(super) fn write_options(
    py: Python<'_>,
    duplicates: &str,
    sort_keys: bool,
) -> PyResult<WriteOptions> {
    let duplicates = choice(
        py,
        "duplicates",
        duplicates,
        &[
            ("last_wins", DuplicateKeys::LastWins),
            ("first_wins", DuplicateKeys::FirstWins),
            ("reject", DuplicateKeys::Reject),
        ],
    )?;
    let order = if sort_keys {
        KeyOrder::Sorted
    } else {
        KeyOrder::Original
    };
    Ok(WriteOptions::default()
        .duplicate_keys(duplicates)
        .key_order(order))
}

/// Converts JSON text (`str`, `bytes`, `bytearray`, `memoryview`) to document bytes; large
/// inputs with the GIL released.
pub(super) fn json_to_bytes(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    opts: WriteOptions,
) -> PyResult<Vec<u8>> {
    let convert = |json: &[u8]| {
        let result = if json.len() >= DETACH_BYTES {
            // `json` borrows an immutable `str`/`bytes` object that the caller keeps alive.
            py.detach(|| stele_doc::from_json_with(json, opts))
        } else {
            stele_doc::from_json_with(json, opts)
        };
        result.map_err(|e| doc_err(py, e))
    };
    match text.cast::<PyString>() {
        Ok(s) => convert(s.to_str()?.as_bytes()),
        Err(_) => with_bytes(
            text,
            "JSON text must be str, bytes, bytearray or memoryview",
            convert,
        ),
    }
}

/// Writes a Python value (dict, list, tuple, str, int, float, bool, None, Decimal, or a stele
/// document or view) through the writer's event API.
fn write_python(py: Python<'_>, w: &mut DocumentWriter, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    let e = |err| doc_err(py, err);
    if obj.is_none() {
        return w.null().map_err(e);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return w.bool(b.is_true()).map_err(e);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return w.string(s.to_str()?).map_err(e);
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        if let Ok(v) = i.extract::<i64>() {
            return w.i64(v).map_err(e);
        }
        if let Ok(v) = i.extract::<u64>() {
            return w.u64(v).map_err(e);
        }
        return w.number_text(i.str()?.to_str()?).map_err(e);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return w.f64(f.value()).map_err(e);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        w.begin_object().map_err(e)?;
        for (k, v) in d.iter() {
            let k = k
                .cast::<PyString>()
                .map_err(|_| type_err("document keys must be str", &k))?;
            w.key(k.to_str()?).map_err(e)?;
            write_python(py, w, &v)?;
        }
        return w.end_object().map_err(e);
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        w.begin_array().map_err(e)?;
        for v in obj.try_iter()? {
            write_python(py, w, &v?)?;
        }
        return w.end_array().map_err(e);
    }
    if let Some(v) = plain(obj)? {
        return write_python(py, w, &v);
    }
    let decimal_class = DECIMAL.get_or_try_init(py, || {
        py.import("decimal")?.getattr("Decimal").map(Bound::unbind)
    })?;
    if obj.is_instance(decimal_class.bind(py))? {
        return w.number_text(obj.str()?.to_str()?).map_err(e);
    }
    Err(type_err(
        "documents hold dict, list, tuple, str, int, float, bool, None and Decimal values",
        obj,
    ))
}

/// JSON text of a Python value (for query conditions), through a document so that numbers
/// read as they would when stored.
pub(crate) fn python_to_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes = python_to_bytes(py, value, false)?;
    let doc = stele_doc::Document::new(bytes.as_slice()).map_err(|e| doc_err(py, e))?;
    Ok(doc.to_json())
}

/// Python value to document bytes.
pub(crate) fn python_to_bytes(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    sort_keys: bool,
) -> PyResult<Vec<u8>> {
    python_to_bytes_with(py, value, write_options(py, "reject", sort_keys)?)
}

/// The document bytes of a Python value written with `options` (duplicate keys cannot
/// occur in a dict; the options' string compression and key order apply).
pub(crate) fn python_to_bytes_with(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    options: WriteOptions,
) -> PyResult<Vec<u8>> {
    let mut writer = DocumentWriter::with_options(options);
    write_python(py, &mut writer, value)?;
    writer.finish().map_err(|e| doc_err(py, e))
}
