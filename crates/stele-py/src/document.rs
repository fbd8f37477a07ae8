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

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PySlice, PyString,
    PyTuple,
};
use stele_doc::{DocumentWriter, DuplicateKeys, JsonOptions, KeyOrder, Path, Value, WriteOptions};
use yoke::{Yoke, Yokeable};

use crate::errors::{Kind, choice, doc_err, new_err, type_err};

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

    fn name(self) -> &'static str {
        match self {
            Decimals::Float => "float",
            Decimals::Decimal => "decimal",
        }
    }
}

/// What every view of one document shares: the validated bytes and the number policy.
#[derive(Debug)]
pub(crate) struct Owner {
    doc: stele_doc::Document<Box<[u8]>>,
    decimals: Decimals,
}

/// A value borrowed from an [`Owner`], in the form `yoke` needs.
#[derive(Clone, Yokeable)]
struct Borrowed<'a>(Value<'a>);

/// A value of a document yoked to the `Arc` that keeps the document's bytes alive.
struct Node(Yoke<Borrowed<'static>, Arc<Owner>>);

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Node")
            .field(&self.value().type_name())
            .finish()
    }
}

/// Steps from a value to one of its children.
trait Step: for<'a> Fn(Value<'a>) -> Option<Value<'a>> {}
impl<F: for<'a> Fn(Value<'a>) -> Option<Value<'a>>> Step for F {}

fn prop_at(i: usize) -> impl Step {
    move |v: Value<'_>| v.as_object()?.value_at(i)
}

fn elem_at(i: usize) -> impl Step {
    move |v: Value<'_>| v.as_array()?.get(i)
}

impl Node {
    fn root(owner: Arc<Owner>) -> Node {
        Node(Yoke::attach_to_cart(owner, |o: &Owner| {
            Borrowed(o.doc.root())
        }))
    }

    fn owner(&self) -> &Owner {
        self.0.backing_cart()
    }

    fn value(&self) -> Value<'_> {
        self.0.get().0
    }

    fn is_large(&self) -> bool {
        self.owner().doc.as_bytes().len() >= DETACH_BYTES
    }

    /// The child `step` finds, as a Python value: scalars converted, containers as views that
    /// share this node's bytes. `None` if there is no such child.
    fn child<'py>(&self, py: Python<'py>, step: impl Step) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(v) = step(self.value()) else {
            return Ok(None);
        };
        match v {
            Value::Object(_) | Value::Array(_) => {
                let node = self
                    .0
                    .try_map_project_cloned(|b, _| step(b.0).map(Borrowed).ok_or(()))
                    .map_err(|()| new_err(py, Kind::Stele, "view lost its value".into()))?;
                Node(node).into_py_view(py).map(Some)
            }
            _ => scalar(py, v, self.owner().decimals).map(Some),
        }
    }

    /// This node as a Python object: a view for containers, a Python value for scalars.
    fn into_py_view(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        match self.value() {
            Value::Object(_) => {
                let init = PyClassInitializer::from(PyView { node: self });
                Ok(Bound::new(py, init.add_subclass(PyObjectView {}))?.into_any())
            }
            Value::Array(_) => {
                let init = PyClassInitializer::from(PyView { node: self });
                Ok(Bound::new(py, init.add_subclass(PyArrayView {}))?.into_any())
            }
            v => scalar(py, v, self.owner().decimals),
        }
    }

    fn not_container(&self, what: &str) -> PyErr {
        PyTypeError::new_err(format!(
            "a document {} value {what}",
            self.value().type_name()
        ))
    }

    fn getitem<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.value() {
            Value::Object(o) => {
                let name = key
                    .cast::<PyString>()
                    .map_err(|_| PyKeyError::new_err(key.clone().unbind()))?;
                let Some(i) = o.find(name.to_str()?) else {
                    return Err(PyKeyError::new_err(key.clone().unbind()));
                };
                self.child(py, prop_at(i))?
                    .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
            }
            Value::Array(a) => {
                if let Ok(slice) = key.cast::<PySlice>() {
                    let ix = slice.indices(isize::try_from(a.len()).unwrap_or(isize::MAX))?;
                    let out = PyList::empty(py);
                    let mut i = ix.start;
                    for _ in 0..ix.slicelength {
                        if let Some(v) = self.child(py, elem_at(i as usize))? {
                            out.append(v)?;
                        }
                        i += ix.step;
                    }
                    return Ok(out.into_any());
                }
                let i: isize = key
                    .extract()
                    .map_err(|_| type_err("array indices must be integers or slices", key))?;
                let len = a.len() as isize;
                let j = if i < 0 { i + len } else { i };
                if j < 0 || j >= len {
                    return Err(PyIndexError::new_err(format!(
                        "array index {i} out of range for length {len}"
                    )));
                }
                self.child(py, elem_at(j as usize))?
                    .ok_or_else(|| PyIndexError::new_err("array index out of range"))
            }
            _ => Err(self.not_container("is not subscriptable")),
        }
    }

    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let missing = |default: Option<Bound<'py, PyAny>>| {
            Ok(default.unwrap_or_else(|| py.None().into_bound(py)))
        };
        match self.getitem(py, key) {
            Err(e)
                if e.is_instance_of::<PyKeyError>(py) || e.is_instance_of::<PyIndexError>(py) =>
            {
                missing(default)
            }
            Err(e)
                if matches!(self.value(), Value::Object(_))
                    && e.is_instance_of::<PyTypeError>(py) =>
            {
                missing(default)
            }
            other => other,
        }
    }

    fn len(&self) -> PyResult<usize> {
        match self.value() {
            Value::Object(o) => Ok(o.len()),
            Value::Array(a) => Ok(a.len()),
            _ => Err(self.not_container("has no len()")),
        }
    }

    fn contains(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        match self.value() {
            Value::Object(o) => Ok(match item.cast::<PyString>() {
                Ok(s) => o.contains_key(s.to_str()?),
                Err(_) => false,
            }),
            Value::Array(a) => {
                for i in 0..a.len() {
                    if let Some(v) = self.child(py, elem_at(i))?
                        && v.eq(item)?
                    {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            _ => Err(self.not_container("does not support `in`")),
        }
    }

    /// Keys of an object (in input order), elements of an array.
    fn iter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.value() {
            Value::Object(_) => Ok(self.keys(py)?.try_iter()?.into_any()),
            Value::Array(_) => {
                let node = Node(self.0.clone());
                Ok(Bound::new(
                    py,
                    PyArrayIter {
                        node,
                        next: AtomicUsize::new(0),
                    },
                )?
                .into_any())
            }
            _ => Err(self.not_container("is not iterable")),
        }
    }

    fn object(&self) -> PyResult<stele_doc::Object<'_>> {
        self.value()
            .as_object()
            .ok_or_else(|| self.not_container("is not an object"))
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.object()?.iter_original().map(|(k, _)| k))
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (k, _) in self.object()?.iter_original() {
            if let Some(v) = self.child(py, move |v: Value<'_>| v.get(k))? {
                out.append(v)?;
            }
        }
        Ok(out)
    }

    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (k, _) in self.object()?.iter_original() {
            if let Some(v) = self.child(py, move |v: Value<'_>| v.get(k))? {
                out.append(PyTuple::new(py, [PyString::new(py, k).into_any(), v])?)?;
            }
        }
        Ok(out)
    }

    fn path<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let path = Path::parse(path).map_err(|e| doc_err(py, e))?;
        Ok(self
            .child(py, |v: Value<'_>| path.get(v))?
            .or(default)
            .unwrap_or_else(|| py.None().into_bound(py)))
    }

    fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, self.value(), self.owner().decimals)
    }

    fn json(&self, py: Python<'_>, pretty: bool, sorted: bool) -> String {
        let opts = JsonOptions::new().pretty(pretty).sorted_keys(sorted);
        let v = self.value();
        if self.is_large() {
            py.detach(|| v.to_json_with(&opts))
        } else {
            v.to_json_with(&opts)
        }
    }

    fn repr(&self, class: &str) -> String {
        const MAX: usize = 72;
        let mut text = self.value().to_json();
        if text.len() > MAX {
            let mut end = MAX;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str("...");
        }
        format!("<stele.{class} {text}>")
    }

    /// `==` against views, documents or plain Python values, by Python value.
    fn eq(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let other = match plain(other)? {
            Some(v) => v,
            None => other.clone(),
        };
        self.to_python(py)?.eq(other)
    }
}

/// The Python value of a view or document (`None` for anything else).
fn plain<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = obj.py();
    match obj.cast::<PyView>() {
        Ok(v) => v.get().node.to_python(py).map(Some),
        Err(_) => Ok(None),
    }
}

static DECIMAL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

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
fn scalar<'py>(py: Python<'py>, v: Value<'_>, decimals: Decimals) -> PyResult<Bound<'py, PyAny>> {
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
fn to_python<'py>(
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
fn with_bytes<R>(
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

fn write_options(py: Python<'_>, duplicates: &str, sort_keys: bool) -> PyResult<WriteOptions> {
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
fn json_to_bytes(py: Python<'_>, text: &Bound<'_, PyAny>, opts: WriteOptions) -> PyResult<Vec<u8>> {
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

/// Base class of `Document`, `Object` and `Array`: a JSON value read in place.
#[pyclass(module = "stele", name = "View", frozen, subclass)]
#[derive(Debug)]
pub(crate) struct PyView {
    node: Node,
}

#[pymethods]
impl PyView {
    /// `v[key]` for an object, `v[i]` / `v[i:j]` for an array. Nested objects and arrays come
    /// back as views, scalars as Python values. `KeyError` / `IndexError` if absent.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.node.getitem(py, key)
    }

    /// get(key, default=None): like `v[key]`, `default` when absent.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.node.get(py, key, default)
    }

    /// Number of properties of an object or elements of an array.
    fn __len__(&self) -> PyResult<usize> {
        self.node.len()
    }

    /// A key of an object; an element of an array (compared as Python values).
    fn __contains__(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.node.contains(py, item)
    }

    /// The keys of an object in input order; the elements of an array.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.node.iter(py)
    }

    /// Keys of an object, in input order (`TypeError` for other values).
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.node.keys(py)
    }

    /// Values of an object, in input order (containers as views).
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.node.values(py)
    }

    /// (key, value) pairs of an object, in input order (containers as views).
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.node.items(py)
    }

    /// path(path, default=None): the value at `a.b[0]` or `a["key.with.dots"]`, relative to
    /// this value; `default` if a step does not exist. A malformed path raises `InvalidInput`.
    #[pyo3(signature = (path, default = None))]
    fn path<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.node.path(py, path, default)
    }

    /// The value as plain Python objects (dict in input key order, list, scalars), equal to
    /// what `json.loads` gives for the JSON text.
    fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.node.to_python(py)
    }

    /// Like `to_python()`, but the value must be an object (`TypeError` otherwise).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.node.object()?;
        self.node.to_python(py)
    }

    /// json(pretty=False, sorted=False): JSON text, exactly: numbers as written, keys in input
    /// order unless `sorted`. Values of large documents print without the GIL.
    #[pyo3(signature = (pretty = false, sorted = false))]
    fn json(&self, py: Python<'_>, pretty: bool, sorted: bool) -> String {
        self.node.json(py, pretty, sorted)
    }

    /// Equal to a view, a document or a plain Python value with the same Python value.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.node.eq(py, other)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(slf.get().node.repr(&slf.get_type().name()?.to_string()))
    }
}

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

/// JSON text of a Python value (for query conditions), through a document so that numbers
/// read as they would when stored.
pub(crate) fn python_to_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes = python_to_bytes(py, value, false)?;
    let doc = stele_doc::Document::new(bytes.as_slice()).map_err(|e| doc_err(py, e))?;
    Ok(doc.to_json())
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
        Node(slf.as_super().get().node.0.clone()).into_py_view(slf.py())
    }
}

/// A JSON object inside a document, read in place; keeps the document's bytes alive.
#[pyclass(module = "stele", name = "Object", frozen, extends = PyView, mapping)]
#[derive(Debug)]
pub(crate) struct PyObjectView {}

/// A JSON array inside a document, read in place (O(1) indexing); keeps the bytes alive.
#[pyclass(module = "stele", name = "Array", frozen, extends = PyView, sequence)]
#[derive(Debug)]
pub(crate) struct PyArrayView {}

/// Iterator over the elements of an `Array`.
#[pyclass(module = "stele", name = "ArrayIterator", frozen)]
#[derive(Debug)]
pub(crate) struct PyArrayIter {
    node: Node,
    next: AtomicUsize,
}

#[pymethods]
impl PyArrayIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.node.child(py, elem_at(i))
    }
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
