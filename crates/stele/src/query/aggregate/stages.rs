//! Running a pipeline: its leading stages as a query over the collection, the rest over the
//! documents that query produced (see the [module documentation](super)).

use super::grouper::Grouper;
use super::{AggregateOutput, Pipeline, Stage};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::index::encode::encode_any;
use crate::query::collect::Collector;
use crate::query::path::DocPath;
use crate::query::project::{Projection, json_string};
use crate::query::run::Run;
use crate::query::sort::sort_key;
use crate::query::{Filter, Query};
use crate::snapshot::Snapshot;
use std::any::Any;
use std::collections::BTreeMap;
use stele_doc::{Document, JsonOptions, Value};

/// The documents a query produced, each as JSON with its `_id` first.
struct WithIds(Vec<String>, IdKind);

/// A document's JSON with its id as the `_id` property, first: the integer `int` when the
/// id is one (a collection of integer ids), else the text `id`.
fn with_id(id: &str, int: Option<i64>, doc: &Document<&[u8]>) -> String {
    let mut out = Vec::with_capacity(doc.as_bytes().len() + id.len() + 16);
    out.extend_from_slice(b"{\"_id\":");
    match int {
        Some(n) => out.extend_from_slice(n.to_string().as_bytes()),
        None => json_string(id, &mut out),
    }
    let mut body = Vec::new();
    doc.write_json(&mut body, &JsonOptions::new());
    match body.get(1..) {
        Some(rest) if body.first() == Some(&b'{') => {
            if rest != b"}" {
                out.push(b',');
            }
            out.extend_from_slice(rest);
        }
        _ => {
            out.extend_from_slice(b",\"value\":");
            out.extend_from_slice(&body);
            out.push(b'}');
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

impl Collector for WithIds {
    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool> {
        // Fed stored keys.
        let int = (self.1 == IdKind::Int)
            .then(|| crate::ids::int_from_key(id.as_bytes()))
            .flatten();
        self.0.push(with_id(id, int, doc));
        Ok(true)
    }
    fn fork(&self) -> Box<dyn Collector> {
        Box::new(WithIds(Vec::new(), self.1))
    }
    fn absorb(&mut self, other: Box<dyn Collector>) {
        if let Ok(o) = other.into_any().downcast::<WithIds>() {
            self.0.extend(o.0);
        }
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// The document a `$count` stage makes: `{name: n}`.
fn count_doc(name: &str, n: u64) -> Result<Vec<u8>> {
    let mut json = Vec::from(&b"{"[..]);
    json_string(name, &mut json);
    json.extend_from_slice(format!(":{n}}}").as_bytes());
    parsed(&String::from_utf8_lossy(&json))
}

thread_local! {
    /// A writer reused for the documents a pipeline makes from JSON: a new one allocates
    /// its buffers (`stele_doc::from_json`), which was a quarter of a group-by of a few
    /// hundred groups (`docs/notes/2026-12-01-query-costs.md`).
    static WRITER: std::cell::RefCell<stele_doc::DocumentWriter> =
        std::cell::RefCell::new(stele_doc::DocumentWriter::new());
}

/// [`stele_doc::from_json`] through this thread's reused writer (a fresh one when it is in
/// use).
fn from_json(json: &str) -> stele_doc::Result<Vec<u8>> {
    WRITER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut w) => w.from_json(json.as_bytes()),
        Err(_) => stele_doc::from_json(json.as_bytes()),
    })
}

fn parsed(json: &str) -> Result<Vec<u8>> {
    from_json(json).map_err(|e| Error::InvalidQuery {
        reason: format!("a pipeline stage made a document that does not convert: {e}"),
    })
}

/// Rebuilds `v` with the value at `steps` replaced by `replacement` (JSON text).
fn replace_at(v: Value<'_>, steps: &[&str], replacement: &str, out: &mut Vec<u8>) {
    let opts = JsonOptions::new();
    let (Some(first), Value::Object(o)) = (steps.first(), v) else {
        out.extend_from_slice(replacement.as_bytes());
        return;
    };
    out.push(b'{');
    for (i, (k, child)) in o.iter_original().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_string(k, out);
        out.push(b':');
        if k == *first {
            replace_at(child, steps.get(1..).unwrap_or_default(), replacement, out);
        } else {
            child.write_json(out, &opts);
        }
    }
    out.push(b'}');
}

fn unwind(docs: Vec<Vec<u8>>, path: &DocPath, keep_empty: bool) -> Result<Vec<Vec<u8>>> {
    let steps: Vec<&str> = path.steps().collect();
    let mut out = Vec::new();
    for bytes in docs {
        let doc = Document::new(&bytes[..])?;
        let reached = path.reach(doc.root());
        match reached.as_slice() {
            [Value::Array(a)] if !a.is_empty() => {
                for e in a.iter() {
                    let mut json = Vec::new();
                    replace_at(doc.root(), &steps, &super::expr::json_of(&e), &mut json);
                    out.push(parsed(&String::from_utf8_lossy(&json))?);
                }
            }
            [Value::Array(_)] | [Value::Null] | [] => {
                if keep_empty {
                    out.push(bytes.clone());
                }
            }
            _ => out.push(bytes.clone()),
        }
    }
    Ok(out)
}

/// Runs the stages from `stages` over `docs` (documents with their `_id` inside).
fn run_stages(mut docs: Vec<Vec<u8>>, stages: &[Stage], run: &Run) -> Result<Vec<Vec<u8>>> {
    for stage in stages {
        run.check()?;
        docs = match stage {
            Stage::Match(filter) => {
                let mut kept = Vec::new();
                for bytes in docs {
                    let hit = filter.test_doc(Document::new(&bytes[..])?.root());
                    if hit {
                        kept.push(bytes);
                    }
                }
                kept
            }
            Stage::Group(group) => {
                let mut g = Grouper::new(group.clone());
                for bytes in &docs {
                    g.add(Document::new(&bytes[..])?.root(), None);
                }
                g.finish(run)?
                    .iter()
                    .map(|j| parsed(j))
                    .collect::<Result<_>>()?
            }
            Stage::Sort(sort) => {
                let mut keyed = Vec::with_capacity(docs.len());
                for (i, bytes) in docs.into_iter().enumerate() {
                    let mut key = Vec::new();
                    let doc = Document::new(&bytes[..])?;
                    sort_key(sort, doc.root(), None, &mut key);
                    keyed.push((key, i, bytes));
                }
                keyed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                keyed.into_iter().map(|(_, _, b)| b).collect()
            }
            Stage::Limit(n) => {
                docs.truncate(*n);
                docs
            }
            Stage::Skip(n) => docs.into_iter().skip(*n).collect(),
            Stage::Project { include, paths } => {
                let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
                let p = Projection::of(*include, &refs)?;
                docs.iter()
                    .map(|b| parsed(&p.apply(Document::new(&b[..])?.root())))
                    .collect::<Result<_>>()?
            }
            Stage::Count(name) => vec![count_doc(name, docs.len() as u64)?],
            Stage::Unwind { path, keep_empty } => unwind(docs, path, *keep_empty)?,
        };
    }
    Ok(docs)
}

/// A pipeline's answer: its rows, the plan of the query that read the collection and what
/// that query examined.
fn output(
    rows: Vec<String>,
    plan: crate::query::Plan,
    stats: crate::query::QueryStats,
) -> AggregateOutput {
    AggregateOutput {
        stats: crate::query::QueryStats {
            rows: rows.len() as u64,
            ..stats
        },
        rows,
        plan,
    }
}

impl Snapshot {
    /// Runs an aggregation pipeline over `collection`. See [`Pipeline`].
    pub fn aggregate(&self, collection: &str, pipeline: &Pipeline) -> Result<AggregateOutput> {
        // The leading $match, $sort, $skip and $limit stages, as a query.
        let mut query = Query::new(collection);
        let mut at = 0;
        while let Some(Stage::Match(f)) = pipeline.stages.get(at) {
            query = query.filter(f.clone());
            at += 1;
        }
        if let Some(Stage::Sort(sort)) = pipeline.stages.get(at) {
            query.sort = sort.clone();
            at += 1;
        }
        if let Some(Stage::Skip(n)) = pipeline.stages.get(at) {
            query.skip = *n;
            at += 1;
        }
        if let Some(Stage::Limit(n)) = pipeline.stages.get(at) {
            query.limit = Some(*n);
            at += 1;
        }
        // What `plan` and `feed` run: conditions on `_id` of integer ids as conditions on
        // keys (`query::int_ids`; `query` and `count_matching` do that themselves).
        let keyed = crate::query::int_ids::for_state(&self.state, &query).into_owned();
        let rest = pipeline.stages.get(at..).unwrap_or_default();
        let plain = query.sort.is_empty() && query.skip == 0 && query.limit.is_none();
        let run = Run::new(None);
        // A $count or $group right after: counted or grouped while the collection is read.
        let (docs, plan, stats) = match rest.first() {
            Some(Stage::Count(name)) if query.sort.is_empty() => {
                let out = self.count_matching(&query)?;
                let docs = vec![count_doc(name, out.count)?];
                let rest = run_stages(docs, rest.get(1..).unwrap_or_default(), &run)?;
                (rest, out.plan, out.stats)
            }
            Some(Stage::Group(group)) if plain => {
                let (chosen, plan) = self.plan(&keyed);
                let int_ids = self.state.marked_kind(collection) == IdKind::Int;
                let mut g = Grouper::new(group.clone()).with_int_ids(int_ids);
                self.feed(&keyed, &chosen, &run, &mut g)?;
                // Each group becomes a document as it comes (one copy held, not two); a
                // `$count` right after only counts them.
                let mut docs = Vec::new();
                let mut after = 1;
                if let Some(Stage::Count(name)) = rest.get(1) {
                    let mut n = 0u64;
                    g.finish_each(&run, |_, _| {
                        n += 1;
                        Ok(())
                    })?;
                    docs.push(count_doc(name, n)?);
                    after = 2;
                } else if rest.len() == 1 {
                    // The last stage: each row is the answer as rendered when that is what
                    // the document round trip below would print (`Render::canonical`), a
                    // parse and a print per group saved (most of a group-by with a group
                    // per document, `docs/notes/2026-12-02-small-scans.md`).
                    let mut rows = Vec::new();
                    g.finish_each(&run, |json, canonical| {
                        rows.push(if canonical {
                            json.to_owned()
                        } else {
                            Document::new(&parsed(json)?[..])?.to_json()
                        });
                        Ok(())
                    })?;
                    return Ok(output(rows, plan, run.stats(0)));
                } else {
                    g.finish_each(&run, |json, _| {
                        docs.push(parsed(json)?);
                        Ok(())
                    })?;
                }
                // After `finish`: what it spilled is counted.
                let stats = run.stats(0);
                let rest = run_stages(docs, rest.get(after..).unwrap_or_default(), &run)?;
                (rest, plan, stats)
            }
            _ => {
                query.check()?;
                let (chosen, plan) = self.plan(&keyed);
                let in_order = chosen.sorted(&query.sort);
                let docs = if plain && in_order {
                    let mut w = WithIds(Vec::new(), self.state.marked_kind(collection));
                    self.feed(&keyed, &chosen, &run, &mut w)?;
                    w.0
                } else {
                    // Sorted, skipped or limited: through the query's own collector.
                    let out = self.query(&query)?;
                    out.rows
                        .iter()
                        .map(|r| {
                            let bytes = from_json(&r.json)?;
                            // Rows give ids as people write them.
                            let int = (self.state.marked_kind(collection) == IdKind::Int)
                                .then(|| crate::ids::parse_int_id(&r.id))
                                .flatten();
                            Ok(with_id(&r.id, int, &Document::new(&bytes[..])?))
                        })
                        .collect::<Result<Vec<_>>>()?
                };
                let stats = run.stats(0);
                let docs = docs.iter().map(|j| parsed(j)).collect::<Result<Vec<_>>>()?;
                (run_stages(docs, rest, &run)?, plan, stats)
            }
        };
        let rows: Vec<String> = docs
            .iter()
            .map(|b| Ok(Document::new(&b[..])?.to_json()))
            .collect::<Result<_>>()?;
        Ok(output(rows, plan, stats))
    }

    /// The distinct values of `path` among the documents `query` matches (an array's
    /// elements counted one by one), as JSON text in value order.
    pub fn distinct(&self, query: &Query, path: &str) -> Result<Vec<String>> {
        query.check()?;
        let path = DocPath::parse(path)?;
        let run = Run::new(query.time_budget);
        let q = Query {
            sort: Vec::new(),
            ..crate::query::int_ids::for_state(&self.state, query).into_owned()
        };
        let (chosen, _) = self.plan(&q);
        let mut d = Distinct {
            path,
            values: BTreeMap::new(),
        };
        self.feed(&q, &chosen, &run, &mut d)?;
        Ok(d.values.into_values().collect())
    }
}

/// Distinct values by their order encoding.
struct Distinct {
    path: DocPath,
    values: BTreeMap<Vec<u8>, String>,
}

impl Collector for Distinct {
    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool> {
        let mut add = |v: &Value<'_>| {
            let mut enc = Vec::new();
            encode_any(v, &mut enc);
            self.values
                .entry(enc)
                .or_insert_with(|| super::expr::json_of(v));
        };
        if self.path.as_str() == "_id" {
            let mut enc = Vec::new();
            crate::index::encode::encode_str(id, &mut enc);
            let mut json = Vec::new();
            json_string(id, &mut json);
            self.values
                .entry(enc)
                .or_insert_with(|| String::from_utf8_lossy(&json).into_owned());
            return Ok(true);
        }
        for v in self.path.reach(doc.root()) {
            match v {
                Value::Array(a) => a.iter().for_each(|e| add(&e)),
                other => add(&other),
            }
        }
        Ok(true)
    }
    fn fork(&self) -> Box<dyn Collector> {
        Box::new(Distinct {
            path: self.path.clone(),
            values: BTreeMap::new(),
        })
    }
    fn absorb(&mut self, other: Box<dyn Collector>) {
        if let Ok(o) = other.into_any().downcast::<Distinct>() {
            for (k, v) in o.values {
                self.values.entry(k).or_insert(v);
            }
        }
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl Filter {
    /// Whether a document (whose `_id`, if any, is inside it) passes.
    pub(crate) fn test_doc(&self, root: Value<'_>) -> bool {
        self.matches_opt(root, None)
    }
}
