//! `Collection.aggregate` and `Collection.distinct`: results as plain Python values.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use stele::{Pipeline, Query};
use stele_doc::DocumentWriter;

use super::collection::PyCollection;
use super::find::filter_arg;
use crate::document::{PyDocument, python_to_json};
use crate::errors::db_err;

/// Document bytes of JSON texts (the engine's output), converted without the GIL.
fn to_documents(texts: Vec<String>) -> stele::Result<Vec<Vec<u8>>> {
    let mut writer = DocumentWriter::new();
    texts
        .iter()
        .map(|t| Ok(writer.from_json(t.as_bytes())?))
        .collect()
}

/// A pipeline given as a list of stage dicts or as its JSON text.
pub(super) fn pipeline_arg(py: Python<'_>, pipeline: &Bound<'_, PyAny>) -> PyResult<Pipeline> {
    let text = match pipeline.cast::<PyString>() {
        Ok(s) => s.to_str()?.to_owned(),
        Err(_) => python_to_json(py, pipeline)?,
    };
    Pipeline::parse(&text).map_err(|e| db_err(py, e))
}

impl PyCollection {
    /// A list of the plain Python values (dict, list, str, int, ...) of `docs`.
    fn plain_list<'py>(&self, py: Python<'py>, docs: Vec<Vec<u8>>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for bytes in docs {
            let doc = Bound::new(py, PyDocument::from_written(bytes, self.opts.decimals))?;
            list.append(doc.call_method0("to_python")?)?;
        }
        Ok(list)
    }
}

#[pymethods]
impl PyCollection {
    /// aggregate(pipeline) -> list
    ///
    /// Runs an aggregation pipeline in MongoDB's form (a list of stage dicts, or its JSON
    /// text): $match $group $sort $limit $skip $project $count $unwind, with the $group
    /// accumulators $sum $min $max $avg $count $first $last $push. The leading $match,
    /// $sort, $skip and $limit use indexes; a $group right after them groups while the
    /// collection is read, on all cores. Runs without the GIL; returns the output documents
    /// as dicts. A stage that is not acceptable raises InvalidInput with `at` (`$[1].$group`).
    fn aggregate<'py>(
        &self,
        py: Python<'py>,
        pipeline: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let pipeline = pipeline_arg(py, pipeline)?;
        let snap = self.queried(py)?;
        let name = self.name.as_str();
        let docs = py
            .detach(|| to_documents(snap.aggregate(name, &pipeline)?.rows))
            .map_err(|e| db_err(py, e))?;
        self.plain_list(py, docs)
    }

    /// distinct(field, filter=None) -> list
    ///
    /// The distinct values of `field` (a dotted path; an array contributes its elements)
    /// among the documents matching `filter`, in value order (None < False < True <
    /// numbers < str < dicts < lists). Runs without the GIL.
    #[pyo3(signature = (field, filter = None))]
    fn distinct<'py>(
        &self,
        py: Python<'py>,
        field: &str,
        filter: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let q = Query::new(&self.name).filter(filter_arg(py, filter.as_ref())?);
        let snap = self.queried(py)?;
        let docs = py
            .detach(|| to_documents(snap.distinct(&q, field)?))
            .map_err(|e| db_err(py, e))?;
        self.plain_list(py, docs)
    }
}
