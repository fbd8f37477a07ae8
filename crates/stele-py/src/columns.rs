//! Building a table from columns of keys and values in Arrow's layout (offsets and data
//! buffers of string or binary arrays), as Dask and Spark hand them out: no Python object per
//! row. The Python side (`stele/arrow.py`) turns pyarrow arrays into the tuples read here.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors::table_err;
use crate::table::{PyTable, finish_sorter, new_sorter};

/// A column as Python passes it: `(offset, length, offsets, data, wide)`.
type Parts<'py> = (usize, usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>, bool);

/// One column: `len` values starting at entry `offset` of an Arrow offsets buffer (i32, or
/// i64 when `wide`) over a data buffer.
struct Column<'a> {
    offsets: &'a [u8],
    data: &'a [u8],
    wide: bool,
    offset: usize,
    len: usize,
}

impl<'a> Column<'a> {
    /// The column of `parts`, `(offset, length, offsets, data, wide)`, after checking the
    /// offsets buffer covers its entries (the data is checked value by value in `get`).
    fn of(parts: &'a Parts<'_>, what: &str) -> PyResult<Column<'a>> {
        let (offset, len, offsets, data, wide) = parts;
        let (offsets, data) = (offsets.as_bytes(), data.as_bytes());
        let width = if *wide { 8 } else { 4 };
        let needed = offset
            .checked_add(*len)
            .and_then(|n| n.checked_add(1))
            .and_then(|n| n.checked_mul(width));
        if needed.is_none_or(|n| n > offsets.len()) {
            return Err(PyValueError::new_err(format!(
                "{what} column: the offsets buffer is shorter than its entries"
            )));
        }
        Ok(Column {
            offsets,
            data,
            wide: *wide,
            offset: *offset,
            len: *len,
        })
    }

    /// Offset number `i` of the buffer.
    fn at(&self, i: usize) -> Option<usize> {
        if self.wide {
            let b = self.offsets.get(i * 8..i * 8 + 8)?;
            usize::try_from(i64::from_le_bytes(b.try_into().ok()?)).ok()
        } else {
            let b = self.offsets.get(i * 4..i * 4 + 4)?;
            usize::try_from(i32::from_le_bytes(b.try_into().ok()?)).ok()
        }
    }

    /// Value `i` of the column.
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        let (start, end) = (self.at(self.offset + i)?, self.at(self.offset + i + 1)?);
        self.data.get(start..end)
    }
}

/// Table._build_columns(batches, path, *, memory, duplicates, temp_dir): builds a table from
/// batches of `(keys, values)` columns, each `(offset, length, offsets, data, wide)` as
/// `stele.arrow` makes them, and opens it. Rows are added without the GIL.
#[pyfunction(name = "_build_columns")]
#[pyo3(signature = (batches, path, *, memory = 256 << 20, duplicates = "reject", temp_dir = None))]
pub(crate) fn build_columns(
    py: Python<'_>,
    batches: &Bound<'_, PyAny>,
    path: PathBuf,
    memory: usize,
    duplicates: &str,
    temp_dir: Option<PathBuf>,
) -> PyResult<PyTable> {
    let mut sorter = new_sorter(py, memory, duplicates, temp_dir)?;
    for batch in batches.try_iter()? {
        let batch = batch?;
        let pair = batch.cast::<PyTuple>()?;
        if pair.len() != 2 {
            return Err(PyValueError::new_err(
                "a batch is a (keys, values) pair of columns",
            ));
        }
        let (k, v): (Parts<'_>, Parts<'_>) =
            (pair.get_item(0)?.extract()?, pair.get_item(1)?.extract()?);
        let keys = Column::of(&k, "key")?;
        let values = Column::of(&v, "value")?;
        if keys.len != values.len {
            return Err(PyValueError::new_err(format!(
                "a batch has {} keys and {} values",
                keys.len, values.len
            )));
        }
        // The buffers are `bytes` objects the batch tuple holds: immutable, alive while the
        // sorter copies from them without the GIL.
        let added = py.detach(|| -> Result<(), Option<stele_table::Error>> {
            for i in 0..keys.len {
                let (Some(key), Some(value)) = (keys.get(i), values.get(i)) else {
                    return Err(None);
                };
                sorter.add(key, value).map_err(Some)?;
            }
            Ok(())
        });
        match added {
            Ok(()) => {}
            Err(Some(e)) => return Err(table_err(py, e)),
            Err(None) => {
                return Err(PyValueError::new_err(
                    "a column's offsets point outside its data buffer: not an Arrow string or binary array",
                ));
            }
        }
    }
    finish_sorter(py, sorter, path)
}
