//! `Collection.find`, `find_one` and `count` in MongoDB's form, and `stele.Cursor`, the lazy
//! result of `find`. The arguments (filter, sort, projection, time budget) become a
//! `stele::Query` here; the query runs in Rust without the GIL.

use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use stele::{Access, CountOutput, Filter, Plan, Query, QueryStats, RowStream, Snapshot};
use stele_doc::DocumentWriter;

use super::DocOptions;
use super::collection::PyCollection;
use crate::document::{PyDocument, python_to_json};
use crate::errors::{Kind, db_err, new_err, type_err};

/// A filter given as None (every document), JSON text, or a Python value (a dict).
pub(super) fn filter_arg(py: Python<'_>, filter: Option<&Bound<'_, PyAny>>) -> PyResult<Filter> {
    let Some(f) = filter.filter(|f| !f.is_none()) else {
        return Ok(Filter::all());
    };
    let text = match f.cast::<PyString>() {
        Ok(s) => s.to_str()?.to_owned(),
        Err(_) => python_to_json(py, f)?,
    };
    Filter::parse(&text).map_err(|e| db_err(py, e))
}

/// A sort direction: 1 / -1, or "asc" / "desc".
fn direction(py: Python<'_>, field: &str, d: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(n) = d.extract::<i64>() {
        match n {
            1 => return Ok(false),
            -1 => return Ok(true),
            _ => {}
        }
    } else if let Ok(s) = d.extract::<String>() {
        match s.as_str() {
            "asc" => return Ok(false),
            "desc" => return Ok(true),
            _ => {}
        }
    }
    Err(new_err(
        py,
        Kind::InvalidInput,
        format!(
            "the direction of {field:?} must be 1 (ascending) or -1 (descending), got {}",
            d.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string())
        ),
    ))
}

/// A field name with an optional `:desc` / `:asc` (as the command line takes it).
fn field_with_direction(text: &str) -> (String, bool) {
    match text.rsplit_once(':') {
        Some((f, "desc" | "-1")) => (f.to_owned(), true),
        Some((f, "asc" | "1")) => (f.to_owned(), false),
        _ => (text.to_owned(), false),
    }
}

/// Fields with directions: "a", "a:desc", {"a": 1, "b": -1}, or a list of "a" and
/// ("b", -1). `what` names the argument in errors.
pub(super) fn fields_arg(
    py: Python<'_>,
    arg: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<Vec<(String, bool)>> {
    if let Ok(s) = arg.cast::<PyString>() {
        return Ok(vec![field_with_direction(s.to_str()?)]);
    }
    if let Ok(d) = arg.cast::<PyDict>() {
        return d
            .iter()
            .map(|(k, v)| {
                let field: String = k.extract()?;
                let desc = direction(py, &field, &v)?;
                Ok((field, desc))
            })
            .collect();
    }
    let bad = || {
        type_err(
            &format!(
                "{what} takes a field, a list of fields and (field, 1 or -1) pairs, or a dict"
            ),
            arg,
        )
    };
    let mut out = Vec::new();
    for item in arg.try_iter().map_err(|_| bad())? {
        let item = item?;
        if let Ok(s) = item.cast::<PyString>() {
            out.push(field_with_direction(s.to_str()?));
        } else if let Ok(t) = item.cast::<PyTuple>()
            && t.len() == 2
        {
            let field: String = t.get_item(0)?.extract()?;
            let desc = direction(py, &field, &t.get_item(1)?)?;
            out.push((field, desc));
        } else {
            return Err(type_err(
                &format!("each field of {what} is a str or a (field, 1 or -1) pair"),
                &item,
            ));
        }
    }
    Ok(out)
}

/// A time budget in seconds (int or float) or a `datetime.timedelta`.
fn budget_arg(py: Python<'_>, b: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let secs: f64 = match b.call_method0("total_seconds") {
        Ok(s) => s.extract()?,
        Err(_) => b
            .extract()
            .map_err(|_| type_err("time_budget takes seconds or a timedelta", b))?,
    };
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            new_err(
                py,
                Kind::InvalidInput,
                format!("time_budget must be a positive number of seconds, got {secs}"),
            )
        })
}

/// The arguments `find`, `find_one` and `count` share.
pub(super) struct FindArgs<'a, 'py> {
    pub filter: Option<&'a Bound<'py, PyAny>>,
    pub sort: Option<&'a Bound<'py, PyAny>>,
    pub skip: usize,
    pub limit: Option<usize>,
    pub projection: Option<&'a Bound<'py, PyAny>>,
    pub time_budget: Option<&'a Bound<'py, PyAny>>,
}

impl FindArgs<'_, '_> {
    pub(super) fn query(&self, py: Python<'_>, collection: &str) -> PyResult<Query> {
        let mut q = Query::new(collection).filter(filter_arg(py, self.filter)?);
        if let Some(sort) = self.sort.filter(|s| !s.is_none()) {
            for (field, desc) in fields_arg(py, sort, "sort")? {
                q = q.sort(&field, desc);
            }
        }
        q = q.skip(self.skip);
        if let Some(n) = self.limit {
            q = q.limit(n);
        }
        if let Some(p) = self.projection.filter(|p| !p.is_none()) {
            q = if let Ok(s) = p.cast::<PyString>() {
                q.projection_json(s.to_str()?)
            } else if p.is_instance_of::<PyDict>() {
                q.projection_json(&python_to_json(py, p)?)
            } else {
                let paths: Vec<String> = p.extract().map_err(|_| {
                    type_err(
                        "projection takes a list of paths or a dict such as {\"a\": 1}",
                        p,
                    )
                })?;
                let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
                Ok(q.select(&refs))
            }
            .map_err(|e| db_err(py, e))?;
        }
        if let Some(b) = self.time_budget.filter(|b| !b.is_none()) {
            q = q.time_budget(budget_arg(py, b)?);
        }
        Ok(q)
    }
}

/// Rows as (id, document bytes).
pub(super) type Rows = Vec<(String, Vec<u8>)>;

/// The rows of a query as (id, document bytes), converted without the GIL.
pub(super) fn run(snap: &Snapshot, q: &Query) -> stele::Result<(Rows, Plan, QueryStats)> {
    let out = snap.query(q)?;
    let mut writer = DocumentWriter::new();
    let rows = out
        .rows
        .into_iter()
        .map(|row| Ok((row.id, writer.from_json(row.json.as_bytes())?)))
        .collect::<stele::Result<Vec<_>>>()?;
    Ok((rows, out.plan, out.stats))
}

/// `(id, Document)` (the id an `int` in a collection of integer ids, `kind`).
fn pair<'py>(
    py: Python<'py>,
    (id, kind): (&str, Option<stele::IdKind>),
    bytes: Vec<u8>,
    opts: DocOptions,
) -> PyResult<Bound<'py, PyTuple>> {
    let doc = Bound::new(py, PyDocument::from_written(bytes, opts.decimals))?;
    PyTuple::new(py, [super::py_id(py, kind, id)?, doc.into_any()])
}

/// The plan and counters as a dict (what `explain()` returns).
pub(super) fn explain_dict<'py>(
    py: Python<'py>,
    plan: &Plan,
    stats: &QueryStats,
    count: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("plan", plan.to_string())?;
    d.set_item("index", plan.index())?;
    d.set_item("full_scan", plan.is_full_scan())?;
    d.set_item(
        "covered",
        matches!(plan.access, Access::Index { covered: true, .. }),
    )?;
    d.set_item("sorted_in_memory", plan.sorted_in_memory)?;
    let candidates = PyList::empty(py);
    for c in &plan.candidates() {
        let cd = PyDict::new(py);
        cd.set_item("index", &c.index)?;
        cd.set_item("chosen", c.chosen)?;
        cd.set_item("reason", &c.reason)?;
        candidates.append(cd)?;
    }
    d.set_item("candidates", candidates)?;
    set_stats(&d, stats)?;
    if let Some(n) = count {
        d.set_item("count", n)?;
    }
    Ok(d)
}

/// The counters of a query into `d`.
fn set_stats(d: &Bound<'_, PyDict>, stats: &QueryStats) -> PyResult<()> {
    d.set_item("keys_examined", stats.keys_examined)?;
    d.set_item("docs_examined", stats.docs_examined)?;
    d.set_item("rows", stats.rows)?;
    d.set_item("elapsed_us", stats.elapsed_us)
}

#[pymethods]
impl PyCollection {
    /// find(filter=None, *, sort=None, skip=0, limit=None, projection=None, time_budget=None)
    /// -> Cursor
    ///
    /// The documents matching `filter` (MongoDB's JSON form, as a dict or JSON text; None
    /// for all), as a lazy Cursor of (id, Document) over the snapshot of this call: the query
    /// runs, without the GIL, when it is first iterated. `sort` is "a", "a:desc",
    /// {"a": 1, "b": -1} or [("a", 1), ("b", -1)]; `projection` a list of paths or
    /// {"a": 1} / {"a": 0}; `time_budget` seconds or a timedelta (QueryTimeout past it).
    /// A filter that is not acceptable raises InvalidInput (a ValueError) whose `at` names
    /// the place, e.g. "$.price.$gte".
    #[pyo3(signature = (filter = None, *, sort = None, skip = 0, limit = None, projection = None, time_budget = None))]
    #[allow(clippy::too_many_arguments)]
    fn find(
        &self,
        py: Python<'_>,
        filter: Option<Bound<'_, PyAny>>,
        sort: Option<Bound<'_, PyAny>>,
        skip: usize,
        limit: Option<usize>,
        projection: Option<Bound<'_, PyAny>>,
        time_budget: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyCursor> {
        let q = FindArgs {
            filter: filter.as_ref(),
            sort: sort.as_ref(),
            skip,
            limit,
            projection: projection.as_ref(),
            time_budget: time_budget.as_ref(),
        }
        .query(py, &self.name)?;
        let snap = self.queried(py)?;
        Ok(PyCursor {
            snap,
            query: q,
            opts: self.opts,
            state: Mutex::new(CursorState::Pending),
        })
    }

    /// find_one(filter=None, *, sort=None, skip=0, projection=None, time_budget=None)
    /// -> (id, Document) | None
    ///
    /// The first result of `find` with the same arguments, or None.
    #[pyo3(signature = (filter = None, *, sort = None, skip = 0, projection = None, time_budget = None))]
    fn find_one<'py>(
        &self,
        py: Python<'py>,
        filter: Option<Bound<'py, PyAny>>,
        sort: Option<Bound<'py, PyAny>>,
        skip: usize,
        projection: Option<Bound<'py, PyAny>>,
        time_budget: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let q = FindArgs {
            filter: filter.as_ref(),
            sort: sort.as_ref(),
            skip,
            limit: Some(1),
            projection: projection.as_ref(),
            time_budget: time_budget.as_ref(),
        }
        .query(py, &self.name)?;
        let snap = self.queried(py)?;
        let (rows, _, _) = py.detach(|| run(&snap, &q)).map_err(|e| db_err(py, e))?;
        let kind = snap.id_kind(&self.name);
        rows.into_iter()
            .next()
            .map(|(id, bytes)| pair(py, (&id, kind), bytes, self.opts))
            .transpose()
    }

    /// count(filter=None, *, skip=0, limit=None, time_budget=None) -> int
    ///
    /// How many documents match (after skip and limit), from an index's keys alone when they
    /// decide the filter (`find(...).explain()` and `count_explain` show it).
    #[pyo3(signature = (filter = None, *, skip = 0, limit = None, time_budget = None))]
    fn count(
        &self,
        py: Python<'_>,
        filter: Option<Bound<'_, PyAny>>,
        skip: usize,
        limit: Option<usize>,
        time_budget: Option<Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        Ok(self.counted(py, filter, skip, limit, time_budget)?.count)
    }

    /// count_explain(filter=None, *, skip=0, limit=None, time_budget=None) -> dict
    ///
    /// `count` with how it ran: the explain() dict plus "count"; "covered" is True when
    /// the count came from index keys alone (no document read).
    #[pyo3(signature = (filter = None, *, skip = 0, limit = None, time_budget = None))]
    fn count_explain<'py>(
        &self,
        py: Python<'py>,
        filter: Option<Bound<'py, PyAny>>,
        skip: usize,
        limit: Option<usize>,
        time_budget: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let out = self.counted(py, filter, skip, limit, time_budget)?;
        explain_dict(py, &out.plan, &out.stats, Some(out.count))
    }
}

impl PyCollection {
    /// Runs a count without the GIL.
    fn counted(
        &self,
        py: Python<'_>,
        filter: Option<Bound<'_, PyAny>>,
        skip: usize,
        limit: Option<usize>,
        time_budget: Option<Bound<'_, PyAny>>,
    ) -> PyResult<CountOutput> {
        let q = FindArgs {
            filter: filter.as_ref(),
            sort: None,
            skip,
            limit,
            projection: None,
            time_budget: time_budget.as_ref(),
        }
        .query(py, &self.name)?;
        let snap = self.queried(py)?;
        py.detach(|| snap.count_matching(&q))
            .map_err(|e| db_err(py, e))
    }

    /// A snapshot to query, failing (as the command line does) if the collection does not
    /// exist rather than answering nothing.
    pub(super) fn queried(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let snap = self.snapshot(py)?;
        if !snap.has_collection(&self.name) {
            let have = snap.collections().join(", ");
            return Err(new_err(
                py,
                Kind::InvalidInput,
                format!(
                    "no collection {:?} to query (the database has: {}); check the name",
                    self.name,
                    if have.is_empty() { "none yet" } else { &have }
                ),
            ));
        }
        Ok(snap)
    }
}

enum CursorState {
    /// Not run yet.
    Pending,
    /// Running: the query's stream (rows pulled one at a time as Python asks), and the
    /// writer that turns each row into a document.
    Running(Box<(RowStream, DocumentWriter)>),
    /// Every row yielded, or an error raised: what the query did.
    Done(QueryStats),
}

/// The lazy result of `Collection.find`: iterating starts the query and pulls its rows as
/// they are found (a full scan's first rows before it ends); a cursor dropped early stops it.
#[pyclass(module = "stele", name = "Cursor", frozen)]
pub(crate) struct PyCursor {
    pub(super) snap: Snapshot,
    pub(super) query: Query,
    opts: DocOptions,
    state: Mutex<CursorState>,
}

#[pymethods]
impl PyCursor {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        // The lock is taken without the GIL: a thread waiting for it must not hold the GIL
        // that the thread holding it needs to return.
        let next = py.detach(|| self.pull()).map_err(|e| db_err(py, e))?;
        let kind = self.snap.id_kind(self.query.collection());
        next.map(|(id, bytes)| pair(py, (&id, kind), bytes, self.opts))
            .transpose()
    }

    /// explain() -> dict
    ///
    /// Runs the query (without returning its rows) and says how: "plan" (text), "index"
    /// (None unless one was read), "full_scan", "covered", "sorted_in_memory",
    /// "candidates" (each {"index", "chosen", "reason"}), "keys_examined",
    /// "docs_examined", "rows", "elapsed_us".
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = py
            .detach(|| self.snap.explain(&self.query))
            .map_err(|e| db_err(py, e))?;
        explain_dict(py, &out.plan, &out.stats, None)
    }

    /// stats() -> dict
    ///
    /// What the query has done so far: "keys_examined", "docs_examined", "rows" (rows
    /// yielded), "elapsed_us"; all 0 before the first row is asked for. A full scan reads
    /// ahead of the rows yielded only as far as a bounded buffer allows.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = py.detach(|| match &*self.lock() {
            CursorState::Pending => QueryStats::default(),
            CursorState::Running(running) => running.0.stats(),
            CursorState::Done(stats) => stats.clone(),
        });
        let d = PyDict::new(py);
        set_stats(&d, &stats)?;
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = py.detach(|| match &*self.lock() {
            CursorState::Pending => "not run".to_owned(),
            CursorState::Running(running) => {
                format!("running, rows read: {}", running.0.stats().rows)
            }
            CursorState::Done(stats) => format!("done, rows read: {}", stats.rows),
        });
        format!("<stele.Cursor on {:?}, {state}>", self.query.collection())
    }
}

impl PyCursor {
    /// The next row as (id, document bytes), starting the query on the first call.
    fn pull(&self) -> stele::Result<Option<(String, Vec<u8>)>> {
        let mut state = self.lock();
        if matches!(*state, CursorState::Pending) {
            let stream = self.snap.query_iter(&self.query)?;
            *state = CursorState::Running(Box::new((stream, DocumentWriter::new())));
        }
        let CursorState::Running(running) = &mut *state else {
            return Ok(None);
        };
        let (stream, writer) = &mut **running;
        let row = match stream.next() {
            Some(Ok(row)) => row,
            Some(Err(e)) => {
                *state = CursorState::Done(stream.stats());
                return Err(e);
            }
            None => {
                *state = CursorState::Done(stream.stats());
                return Ok(None);
            }
        };
        Ok(Some((row.id, writer.from_json(row.json.as_bytes())?)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CursorState> {
        // A panic while holding the lock leaves plain data behind: keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
