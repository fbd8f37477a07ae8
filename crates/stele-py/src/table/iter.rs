//! Iterators over tables, table sets and durable map snapshots: a chunk of entries decoded
//! at a time, resumed after the last key returned.

use std::collections::VecDeque;
use std::ops::Bound as KeyBound;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use stele_durable::DurableMap;
use stele_table::{Entry, Table};

use crate::errors::{Kind, durable_err, new_err, table_err};

/// What a table iterator yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Yield {
    Keys,
    Values,
    Items,
}

/// Where a table iterator is: the bounds not yet visited and the decoded chunk.
#[derive(Debug)]
struct IterState {
    lo: KeyBound<Vec<u8>>,
    hi: KeyBound<Vec<u8>>,
    reverse: bool,
    what: Yield,
    /// Entries to decode at the next refill: grows from 16 to 1024, so taking the first few
    /// entries stays cheap and long scans amortize the seek.
    chunk: usize,
    buffered: VecDeque<Py<PyAny>>,
    done: bool,
}

impl IterState {
    fn refill(&mut self, py: Python<'_>, source: &Source) -> PyResult<()> {
        let bounds = (as_ref(&self.lo), as_ref(&self.hi));
        let last = match source {
            Source::Table(t) => self.decode(py, t.range(bounds), |e| table_err(py, e))?,
            Source::Map(m) => self.decode(py, m.range(bounds), |e| durable_err(py, e))?,
            Source::Set(s) => self.decode(py, s.range::<&[u8], _>(bounds), |e| table_err(py, e))?,
        };
        if let Some(k) = last {
            if self.reverse {
                self.hi = KeyBound::Excluded(k);
            } else {
                self.lo = KeyBound::Excluded(k);
            }
        }
        self.chunk = (self.chunk * 4).min(1024);
        Ok(())
    }

    /// Buffers up to `chunk` entries of `it` (from the back if reversed); returns the last
    /// key buffered.
    fn decode<'t, E>(
        &mut self,
        py: Python<'_>,
        mut it: impl DoubleEndedIterator<Item = Result<Entry<'t>, E>>,
        err: impl Fn(E) -> PyErr,
    ) -> PyResult<Option<Vec<u8>>> {
        let mut last = None;
        for _ in 0..self.chunk {
            let next = if self.reverse {
                it.next_back()
            } else {
                it.next()
            };
            let Some(entry) = next else {
                self.done = true;
                break;
            };
            let (k, v) = entry.map_err(&err)?;
            let item = match self.what {
                Yield::Keys => PyBytes::new(py, k.as_bytes()).into_any(),
                Yield::Values => PyBytes::new(py, v).into_any(),
                Yield::Items => {
                    PyTuple::new(py, [PyBytes::new(py, k.as_bytes()), PyBytes::new(py, v)])?
                        .into_any()
                }
            };
            self.buffered.push_back(item.unbind());
            last = Some(k.into_owned());
        }
        Ok(last)
    }
}

fn as_ref(b: &KeyBound<Vec<u8>>) -> KeyBound<&[u8]> {
    match b {
        KeyBound::Included(k) => KeyBound::Included(k.as_slice()),
        KeyBound::Excluded(k) => KeyBound::Excluded(k.as_slice()),
        KeyBound::Unbounded => KeyBound::Unbounded,
    }
}

/// What an iterator reads: a table, a table set, or a snapshot of a durable map.
#[derive(Debug)]
pub(crate) enum Source {
    Table(Arc<Table>),
    Map(Arc<DurableMap>),
    Set(Arc<stele_table::TableSet>),
}

/// Iterator over the keys, values or (key, value) pairs of a table or a durable map (a
/// snapshot of it: later changes to the map are not seen); holds the files open.
#[pyclass(module = "stele", name = "TableIterator", frozen)]
#[derive(Debug)]
pub(crate) struct PyTableIter {
    source: Source,
    state: Mutex<IterState>,
}

impl PyTableIter {
    pub(crate) fn new(
        source: Source,
        lo: KeyBound<Vec<u8>>,
        hi: KeyBound<Vec<u8>>,
        reverse: bool,
        what: Yield,
    ) -> PyTableIter {
        PyTableIter {
            source,
            state: Mutex::new(IterState {
                lo,
                hi,
                reverse,
                what,
                chunk: 16,
                buffered: VecDeque::new(),
                done: false,
            }),
        }
    }
}

#[pymethods]
impl PyTableIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // `try_lock`: a thread that waited here would hold the GIL the owner needs to finish.
        let mut state = self.state.try_lock().map_err(|_| {
            new_err(
                py,
                Kind::Stele,
                "table iterator already in use (by another thread, or poisoned by a panic)".into(),
            )
        })?;
        if state.buffered.is_empty() && !state.done {
            state.refill(py, &self.source)?;
        }
        Ok(state.buffered.pop_front())
    }
}
