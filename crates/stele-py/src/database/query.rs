//! Queries and indexes of a `stele.Collection` (`query`, `create_index`, `drop_index`,
//! `indexes`, `index_stats`) and `stele.QueryResult`.

use std::ops::Bound as ValueBound;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use stele::Query;

use super::collection::PyCollection;
use crate::document::{PyDocument, python_to_json};
use crate::errors::{Kind, db_err, new_err, type_err};

/// A query condition given as `{field: value}` (one item) or `(field, value)`.
fn condition<'py>(arg: &Bound<'py, PyAny>, what: &str) -> PyResult<(String, Bound<'py, PyAny>)> {
    let py = arg.py();
    if let Ok(d) = arg.cast::<PyDict>() {
        if d.len() == 1
            && let Some((k, v)) = d.iter().next()
        {
            return Ok((k.extract()?, v));
        }
    } else if let Ok(t) = arg.cast::<PyTuple>()
        && t.len() == 2
    {
        return Ok((t.get_item(0)?.extract()?, t.get_item(1)?));
    }
    Err(new_err(
        py,
        Kind::InvalidInput,
        format!("{what}= takes {{field: value}} with one field, or (field, value)"),
    ))
}

/// A bound of a range condition: None is unbounded.
fn range_bound(
    py: Python<'_>,
    v: &Bound<'_, PyAny>,
    included: bool,
) -> PyResult<ValueBound<String>> {
    if v.is_none() {
        return Ok(ValueBound::Unbounded);
    }
    let json = python_to_json(py, v)?;
    Ok(if included {
        ValueBound::Included(json)
    } else {
        ValueBound::Excluded(json)
    })
}

#[pymethods]
impl PyCollection {
    /// query(*, eq=None, range=None, prefix=None, order_by=None, desc=False, limit=None,
    /// select=None) -> QueryResult
    ///
    /// Documents matching at most one condition on one field (a dotted path, `[]` for every
    /// element of an array): `eq={"field": value}`, `range={"field": (lo, hi)}` with
    /// `lo <= value < hi` (None: open; a range with one open side stays within the type of
    /// the other bound), `prefix={"field": "text"}`. Uses an index whose first field is the
    /// filtered one, else scans the collection (`plan` says which). `order_by` a field
    /// (`desc=True` for descending), at most `limit` rows, `select` only these fields (the
    /// rows are then objects keyed by the paths). Runs without the GIL.
    #[pyo3(signature = (*, eq = None, range = None, prefix = None, order_by = None, desc = false, limit = None, select = None))]
    #[allow(clippy::too_many_arguments)]
    fn query(
        &self,
        py: Python<'_>,
        eq: Option<Bound<'_, PyAny>>,
        range: Option<Bound<'_, PyAny>>,
        prefix: Option<Bound<'_, PyAny>>,
        order_by: Option<&str>,
        desc: bool,
        limit: Option<usize>,
        select: Option<Vec<String>>,
    ) -> PyResult<PyQueryResult> {
        let conditions = [&eq, &range, &prefix]
            .iter()
            .filter(|c| c.is_some())
            .count();
        if conditions > 1 {
            return Err(new_err(
                py,
                Kind::InvalidInput,
                "a query takes one condition: eq=, range= or prefix=".into(),
            ));
        }
        let mut q = Query::new(&self.name);
        if let Some(eq) = &eq {
            let (field, value) = condition(eq, "eq")?;
            q = q.eq(&field, &python_to_json(py, &value)?);
        }
        if let Some(range) = &range {
            let (field, bounds) = condition(range, "range")?;
            let bad = || {
                new_err(
                    py,
                    Kind::InvalidInput,
                    "range= takes {field: (lo, hi)}, lo <= value < hi, None for an open side"
                        .into(),
                )
            };
            let bounds = bounds.cast::<PyTuple>().map_err(|_| bad())?;
            if bounds.len() != 2 {
                return Err(bad());
            }
            let lo = range_bound(py, &bounds.get_item(0)?, true)?;
            let hi = range_bound(py, &bounds.get_item(1)?, false)?;
            q = q.range(
                &field,
                lo.as_ref().map(String::as_str),
                hi.as_ref().map(String::as_str),
            );
        }
        if let Some(prefix) = &prefix {
            let (field, text) = condition(prefix, "prefix")?;
            let text = text
                .cast::<PyString>()
                .map_err(|_| type_err("prefix= takes a str", &text))?;
            q = q.prefix(&field, text.to_str()?);
        }
        if let Some(field) = order_by {
            q = q.order_by(field, desc);
        }
        if let Some(n) = limit {
            q = q.limit(n);
        }
        if let Some(fields) = &select {
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            q = q.select(&fields);
        }
        let snap = self.queried(py)?;
        let (rows, plan, _) = py
            .detach(|| super::find::run(&snap, &q))
            .map_err(|e| db_err(py, e))?;
        let list = PyList::empty(py);
        let kind = snap.id_kind(&self.name);
        for (id, bytes) in rows {
            let doc = Bound::new(py, PyDocument::from_written(bytes, self.opts.decimals))?;
            list.append(PyTuple::new(
                py,
                [super::py_id(py, kind, &id)?, doc.into_any()],
            )?)?;
        }
        let index = plan.index().map(str::to_owned);
        Ok(PyQueryResult {
            plan: plan.to_string(),
            index,
            rows: list.unbind(),
        })
    }

    /// create_index(fields, *, name=None) -> str
    ///
    /// Indexes the collection on `fields` ("a", "a:desc", ["a", ("b", -1)] or
    /// {"a": 1, "b": -1}: dotted paths, each ascending or descending) and builds it for the
    /// documents already there, without the GIL; every write keeps it current. The name
    /// defaults to the fields and directions joined (`a_1_b_-1`); returns it. The form of
    /// earlier versions, create_index(name, fields), still works.
    #[pyo3(signature = (fields, old_fields = None, *, name = None))]
    fn create_index(
        &self,
        py: Python<'_>,
        fields: &Bound<'_, PyAny>,
        old_fields: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<String> {
        let (name, fields) = match old_fields {
            // create_index(name, fields): the form of earlier versions.
            Some(old) => {
                let Ok(given) = fields.extract::<String>() else {
                    return Err(type_err(
                        "create_index takes (fields, name=...) or (name, fields); the first of two arguments is the name",
                        fields,
                    ));
                };
                if name.is_some() {
                    return Err(new_err(
                        py,
                        Kind::InvalidInput,
                        format!(
                            "create_index got the name twice ({given:?} and name=): give create_index(fields, name=...)"
                        ),
                    ));
                }
                (Some(given), super::find::fields_arg(py, old, "fields")?)
            }
            None => (name, super::find::fields_arg(py, fields, "fields")?),
        };
        let specs: Vec<String> = fields
            .iter()
            .map(|(f, desc)| {
                if *desc {
                    format!("{f}:desc")
                } else {
                    f.clone()
                }
            })
            .collect();
        let name = name.unwrap_or_else(|| {
            let parts: Vec<String> = fields
                .iter()
                .map(|(f, desc)| format!("{f}_{}", if *desc { "-1" } else { "1" }))
                .collect();
            parts.join("_")
        });
        let db = self.writer(py)?;
        let refs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let coll = self.name.as_str();
        py.detach(|| db.create_index(coll, &name, &refs))
            .map_err(|e| db_err(py, e))?;
        Ok(name)
    }

    /// drop_index(name): drops index `name` (`InvalidInput` if there is none).
    fn drop_index(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.writer(py)?;
        let coll = self.name.as_str();
        py.detach(|| db.drop_index(coll, name))
            .map_err(|e| db_err(py, e))
    }

    /// {index name: [field paths]} of this collection, a descending field as "path:desc".
    fn indexes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for def in self.snapshot(py)?.indexes(&self.name) {
            d.set_item(&def.name, def.field_specs())?;
        }
        Ok(d)
    }

    /// {index name: {fields, entries, layers, table_bytes, key_bytes, array_fields}}:
    /// `array_fields` lists the fields some document has held an array at, where a sort
    /// the filter also tests is done in memory rather than by the index.
    fn index_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for ix in self.snapshot(py)?.index_stats(&self.name) {
            let s = PyDict::new(py);
            s.set_item("fields", &ix.fields)?;
            s.set_item("entries", ix.entries)?;
            s.set_item("layers", ix.layers)?;
            s.set_item("table_bytes", ix.table_bytes)?;
            s.set_item("key_bytes", ix.key_bytes)?;
            s.set_item("array_fields", &ix.array_fields)?;
            d.set_item(&ix.name, s)?;
        }
        Ok(d)
    }
}

/// The rows of a query and how it ran.
#[pyclass(module = "stele", name = "QueryResult", frozen, sequence)]
#[derive(Debug)]
pub(crate) struct PyQueryResult {
    plan: String,
    index: Option<String>,
    rows: Py<PyList>,
}

#[pymethods]
impl PyQueryResult {
    /// How the query ran, e.g. 'index scan of "by_country" on country, in index order' or
    /// 'full scan filtering on country (no index has it first)'.
    #[getter]
    fn plan(&self) -> &str {
        &self.plan
    }

    /// The index the query used, or None for a full scan.
    #[getter]
    fn index(&self) -> Option<&str> {
        self.index.as_deref()
    }

    /// The rows: a list of (id, Document).
    #[getter]
    fn rows(&self, py: Python<'_>) -> Py<PyList> {
        self.rows.clone_ref(py)
    }

    /// The ids of the rows, in order.
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.rows
            .bind(py)
            .iter()
            .map(|row| row.get_item(0))
            .collect()
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.rows.bind(py).len()
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        i: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.rows.bind(py).as_any().get_item(i)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.rows.bind(py).try_iter()?.into_any())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<stele.QueryResult rows={} plan={:?}>",
            self.rows.bind(py).len(),
            self.plan
        )
    }
}
