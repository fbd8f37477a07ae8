//! Lazy views of a document: `View`, `Object`, `Array` and the array iterator. Each holds a
//! [`Node`], a value yoked to the `Arc` that keeps the document's bytes alive.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice, PyString, PyTuple};
use stele_doc::{JsonOptions, Path, Value};
use yoke::{Yoke, Yokeable};

use super::values::{DETACH_BYTES, Owner, scalar, to_python};
use crate::errors::{Kind, doc_err, new_err, type_err};

/// A value borrowed from an [`Owner`], in the form `yoke` needs.
#[derive(Clone, Yokeable)]
struct Borrowed<'a>(Value<'a>);

/// A value of a document yoked to the `Arc` that keeps the document's bytes alive.
pub(super) struct Node(Yoke<Borrowed<'static>, Arc<Owner>>);

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
    /// Another node of the same value, sharing its bytes.
    pub(super) fn share(&self) -> Node {
        Node(self.0.clone())
    }

    pub(super) fn root(owner: Arc<Owner>) -> Node {
        Node(Yoke::attach_to_cart(owner, |o: &Owner| {
            Borrowed(o.doc.root())
        }))
    }

    pub(super) fn owner(&self) -> &Owner {
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
    pub(super) fn into_py_view(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
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

    pub(super) fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, self.value(), self.owner().decimals)
    }

    pub(super) fn json(&self, py: Python<'_>, pretty: bool, sorted: bool) -> String {
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
pub(super) fn plain<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = obj.py();
    match obj.cast::<PyView>() {
        Ok(v) => v.get().node.to_python(py).map(Some),
        Err(_) => Ok(None),
    }
}

/// Base class of `Document`, `Object` and `Array`: a JSON value read in place.
#[pyclass(module = "stele", name = "View", frozen, subclass)]
#[derive(Debug)]
pub(crate) struct PyView {
    pub(super) node: Node,
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
    pub(super) node: Node,
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
