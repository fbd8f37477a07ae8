//! The values every view shares: the document's bytes and number policy, and scalars and
//! whole values turned into Python objects.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString,
};
use stele_doc::Value;

use crate::errors::{Kind, choice, new_err, type_err};

/// Inputs at least this large are converted, validated or printed with the GIL released; for
/// smaller ones releasing and taking it back costs more than it lets other threads do.
pub(crate) const DETACH_BYTES: usize = 64 << 10;

/// How numbers with a fraction or an exponent come back to Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decimals {
    /// `float`, the nearest one (what `json.loads` gives).
    Float,
    /// `decimal.Decimal` of the exact text (what `json.loads(parse_float=Decimal)` gives).
    Decimal,
}

impl Decimals {
    pub(crate) fn parse(py: Python<'_>, name: &str) -> PyResult<Decimals> {
        choice(
            py,
            "decimals",
            name,
            &[("float", Decimals::Float), ("decimal", Decimals::Decimal)],
        )
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Decimals::Float => "float",
            Decimals::Decimal => "decimal",
        }
    }
}

/// What every view of one document shares: the validated bytes and the number policy.
#[derive(Debug)]
pub(crate) struct Owner {
    pub(super) doc: stele_doc::Document<Box<[u8]>>,
    pub(super) decimals: Decimals,
}

pub(super) static DECIMAL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn decimal<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    DECIMAL
        .get_or_try_init(py, || {
            py.import("decimal")?.getattr("Decimal").map(Bound::unbind)
        })?
        .bind(py)
        .call1((text,))
}

/// A JSON number kept as text is an integer if it has no fraction and no exponent.
fn is_integer_text(text: &str) -> bool {
    !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// A scalar value as a Python object.
pub(super) fn scalar<'py>(
    py: Python<'py>,
    v: Value<'_>,
    decimals: Decimals,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::Float(f) => match decimals {
            Decimals::Float => PyFloat::new(py, f).into_any(),
            Decimals::Decimal => decimal(py, &v.to_json())?,
        },
        Value::Scaled(d) => match decimals {
            Decimals::Float => PyFloat::new(py, d.to_f64()).into_any(),
            Decimals::Decimal => decimal(py, &d.to_string())?,
        },
        Value::Decimal(text) if is_integer_text(text) => py.get_type::<PyInt>().call1((text,))?,
        Value::Decimal(text) => match decimals {
            // Rust's parse rounds correctly, like Python's float(): 1e400 becomes inf.
            Decimals::Float => PyFloat::new(py, text.parse::<f64>().unwrap_or(f64::NAN)).into_any(),
            Decimals::Decimal => decimal(py, text)?,
        },
        Value::String(s) => PyString::new(py, &s.to_cow()).into_any(),
        other => {
            return Err(new_err(
                py,
                Kind::Stele,
                format!("cannot convert a document {} value", other.type_name()),
            ));
        }
    })
}

/// A whole value as plain Python objects (dicts in input key order, lists, scalars). Recursion
/// is bounded by the format's nesting limit (1024), which documents were validated against.
pub(super) fn to_python<'py>(
    py: Python<'py>,
    v: Value<'_>,
    decimals: Decimals,
) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Value::Object(o) => {
            let dict = PyDict::new(py);
            for (k, v) in o.iter_original() {
                dict.set_item(PyString::new(py, k), to_python(py, v, decimals)?)?;
            }
            Ok(dict.into_any())
        }
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|v| to_python(py, v, decimals))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any())
        }
        _ => scalar(py, v, decimals),
    }
}

/// Bytes given as `bytes`, or copied from `bytearray` / `memoryview` / other buffers.
pub(super) fn with_bytes<R>(
    data: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(&[u8]) -> PyResult<R>,
) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    if data.is_instance_of::<PyByteArray>() || data.is_instance_of::<PyMemoryView>() {
        let copy = data.py().get_type::<PyBytes>().call1((data,))?;
        return f(copy.cast::<PyBytes>()?.as_bytes());
    }
    Err(type_err(what, data))
}
