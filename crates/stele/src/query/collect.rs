//! Collectors: what a query keeps of the documents that pass its filter.
//!
//! - rows arriving in the order asked (an index serving the sort, or id order) are kept as
//!   they come, ties on the sort key put in id order, and the access stops once skip +
//!   limit rows are in;
//! - rows arriving in another order with a limit: the skip + limit smallest sort keys in a
//!   heap (a document is rendered only if it enters it);
//! - otherwise every row with its key, sorted at the end.
//!
//! The parallel scan gives each stretch of the collection a collector of its own
//! ([`Collector::fork`]) and merges them in order ([`Collector::absorb`]).

use super::Query;
use super::project::Projection;
use super::sort::sort_fields;
use crate::error::Result;
use crate::index::encode::encode_str;
use crate::index::path::ReachCache;
use crate::query::path::DocPath;
use crate::query::{Row, run::Run};
use std::any::Any;
use std::collections::BinaryHeap;
use stele_doc::Document;

/// Collections of fewer documents are scanned on the caller's thread, in one stretch: on
/// a collection of a few hundred documents (tens of microseconds to read from the block
/// cache), handing stretches to the pool and merging their collectors cost more than the
/// reading (a top-20 sort of 248 documents: 1.7 ms over 10 stretches, see
/// `docs/notes/2026-12-01-query-costs.md`).
pub(crate) const SERIAL_SCAN_DOCS: u64 = 4_096;

/// The memory of a kept row besides its bytes: the tuple, the key's and strings' headers.
const ROW_OVERHEAD: usize = 80;

/// Receives the documents that pass a query's filter.
pub(crate) trait Collector: Send {
    /// Takes one; returns false once it wants no more.
    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool>;
    /// [`Collector::take`] from an index serving the query's sort, with `tie`: bytes equal
    /// for two rows exactly when they tie on the sort (`IndexAccess::sort_fields`), which
    /// stand for the document's sort key when ties are grouped. Every row of the query
    /// comes this way, so keys of both kinds are never compared.
    fn take_sorted(&mut self, id: &str, doc: &Document<&[u8]>, tie: &[u8]) -> Result<bool> {
        let _ = tie;
        self.take(id, doc)
    }
    /// An empty collector of the same kind, for one stretch of a parallel scan.
    fn fork(&self) -> Box<dyn Collector>;
    /// Adds what a fork collected (forks are absorbed in collection order).
    fn absorb(&mut self, other: Box<dyn Collector>);
    /// Whether it wants no more (a limit reached in order).
    fn full(&self) -> bool {
        false
    }
    /// Asked by a parallel scan before each wave of `forks` forks: how many documents each
    /// fork may take, for collectors whose forks hold what they collect until they are
    /// absorbed and count against a memory budget (`$group`); `None` (the default) when
    /// what a fork holds is bounded otherwise.
    fn fork_docs(&mut self, forks: usize) -> Option<u64> {
        let _ = forks;
        None
    }
    /// Collections of fewer documents are read on the caller's thread, in one stretch
    /// ([`super::scan::full_scan`]).
    fn serial_docs(&self) -> u64 {
        SERIAL_SCAN_DOCS
    }
    /// Whether what it keeps is the same whatever order the documents come in (it sorts
    /// them itself, or counts them): an index access may then read them in id order.
    fn any_order(&self) -> bool {
        false
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Ids only (the branches of a union).
pub(crate) struct Ids(pub Vec<String>);

impl Collector for Ids {
    fn take(&mut self, id: &str, _: &Document<&[u8]>) -> Result<bool> {
        self.0.push(id.to_owned());
        Ok(true)
    }
    fn fork(&self) -> Box<dyn Collector> {
        Box::new(Ids(Vec::new()))
    }
    fn absorb(&mut self, other: Box<dyn Collector>) {
        if let Ok(o) = other.into_any().downcast::<Ids>() {
            self.0.extend(o.0);
        }
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[derive(Clone)]
enum Mode {
    Count,
    /// Rows arrive in order; `want` rows are enough.
    InOrder,
    /// The `k` smallest keys.
    TopK(usize),
    /// Every row, sorted at the end.
    All,
}

/// Rows of a query.
pub(crate) struct Rows {
    mode: Mode,
    sort: Vec<(DocPath, bool)>,
    projection: Option<Projection>,
    want: Option<usize>,
    count: u64,
    rows: Vec<Row>,
    /// Rows whose sort key equals `group_key`, waiting for the key to change.
    group: Vec<Row>,
    group_key: Vec<u8>,
    keyed: Vec<(Vec<u8>, Row)>,
    /// About the memory `keyed` holds (its keys, ids, JSON and their headers).
    keyed_bytes: usize,
    /// The `k` smallest keys' documents, not yet rendered (see [`Pending`]).
    heap: BinaryHeap<(Vec<u8>, Pending)>,
    scratch: Vec<u8>,
    /// The sort paths' lookups remembered across documents, one per path.
    sort_caches: Vec<ReachCache>,
}

/// A row of a top-k heap before it is rendered: the document's bytes, copied. Over a
/// collection read in id order a heap takes in about k ln(n / k) documents besides its k
/// (each fork of a parallel scan as many), most pushed out again; copying one costs a
/// fraction of rendering it as JSON, which was most of a top-20 sort of 248 documents
/// (`docs/notes/2026-12-01-query-costs.md`). Only the rows kept are rendered.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    id: String,
    doc: Vec<u8>,
}

impl Rows {
    pub(crate) fn new(query: &Query, in_order: bool) -> Rows {
        let want = query.limit.map(|l| l.saturating_add(query.skip));
        let mode = match (in_order, want) {
            (true, _) => Mode::InOrder,
            (false, Some(k)) => Mode::TopK(k),
            (false, None) => Mode::All,
        };
        Rows::empty(mode, query.sort.clone(), query.projection.clone(), want)
    }

    fn empty(
        mode: Mode,
        sort: Vec<(DocPath, bool)>,
        projection: Option<Projection>,
        want: Option<usize>,
    ) -> Rows {
        Rows {
            mode,
            projection,
            want,
            count: 0,
            rows: Vec::new(),
            group: Vec::new(),
            group_key: Vec::new(),
            keyed: Vec::new(),
            keyed_bytes: 0,
            heap: BinaryHeap::new(),
            scratch: Vec::new(),
            sort_caches: sort.iter().map(|(p, _)| p.cache()).collect(),
            sort,
        }
    }

    pub(crate) fn counting() -> Rows {
        Rows::empty(Mode::Count, Vec::new(), None, None)
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    fn render(&self, id: &str, doc: &Document<&[u8]>) -> Row {
        Row {
            id: id.to_owned(),
            json: match &self.projection {
                Some(p) => p.apply(doc.root()),
                None => {
                    // Sized from the document's bytes: growing from empty reallocated a
                    // few times per row (5 % of a selective query).
                    let n = doc.as_bytes().len();
                    let mut out = String::with_capacity(n + n / 4 + 16);
                    doc.root()
                        .write_json_string(&mut out, &stele_doc::JsonOptions::new());
                    out
                }
            },
        }
    }

    /// The sort key (or the id's encoding without a sort) into `scratch`; returns the
    /// length of its part before the id.
    fn key(&mut self, id: &str, doc: &Document<&[u8]>) -> usize {
        self.scratch.clear();
        if self.sort.is_empty() {
            encode_str(id, &mut self.scratch);
            0
        } else {
            let fields_len = self.fields_key(id, doc);
            encode_str(id, &mut self.scratch);
            fields_len
        }
    }

    /// The sort paths' part of the sort key (no id) into `scratch`; returns its length.
    fn fields_key(&mut self, id: &str, doc: &Document<&[u8]>) -> usize {
        self.scratch.clear();
        sort_fields(
            &self.sort,
            &mut self.sort_caches,
            doc.root(),
            Some(id),
            &mut self.scratch,
        )
    }

    /// A row arriving in sort order (`InOrder` with a sort), `tie` its sort key or what
    /// stands for it: ties come in index order, so they are held until the key changes,
    /// then put in id order.
    fn take_in_group(
        &mut self,
        id: &str,
        doc: &Document<&[u8]>,
        tie: Option<&[u8]>,
    ) -> Result<bool> {
        let tie = tie.unwrap_or_default();
        if tie != self.group_key.as_slice() {
            self.flush_group();
            if self.want.is_some_and(|w| self.rows.len() >= w) {
                return Ok(false);
            }
            self.group_key.clear();
            self.group_key.extend_from_slice(tie);
        }
        let row = self.render(id, doc);
        self.group.push(row);
        Ok(true)
    }

    fn flush_group(&mut self) {
        self.group.sort_by(|a, b| a.id.cmp(&b.id));
        self.rows.append(&mut self.group);
    }

    /// For a stream: the rows complete so far, in order, taken out (ties on a sort key are
    /// held back until the key changes).
    pub(crate) fn take_ready(&mut self) -> Vec<Row> {
        std::mem::take(&mut self.rows)
    }

    /// For a stream that has read everything: the rows held back too.
    pub(crate) fn take_rest(&mut self) -> Vec<Row> {
        self.flush_group();
        self.take_ready()
    }

    /// An empty collector of the same kind (what `fork` boxes).
    pub(crate) fn fork_rows(&self) -> Rows {
        Rows::empty(
            self.mode.clone(),
            self.sort.clone(),
            self.projection.clone(),
            self.want,
        )
    }

    /// About the memory the rows of a sort without a limit hold.
    pub(crate) fn keyed_bytes(&self) -> usize {
        self.keyed_bytes
    }

    /// The rows of a sort without a limit, with their keys, in no order, taken out.
    pub(crate) fn take_keyed(&mut self) -> Vec<(Vec<u8>, Row)> {
        self.keyed_bytes = 0;
        let mut keyed = std::mem::take(&mut self.keyed);
        if self.sort.is_empty() {
            // Left empty by `take`: the id's encoding.
            for (key, row) in &mut keyed {
                encode_str(&row.id, key);
            }
        }
        keyed
    }

    /// The rows, skipped and limited, in order.
    pub(crate) fn finish(mut self, query: &Query, run: &Run) -> Result<Vec<Row>> {
        run.check()?;
        let mut rows = match self.mode {
            Mode::Count => Vec::new(),
            Mode::InOrder => {
                self.flush_group();
                self.rows
            }
            Mode::TopK(_) => {
                let heap = std::mem::take(&mut self.heap);
                heap.into_sorted_vec()
                    .into_iter()
                    .map(|(_, p)| {
                        // SAFETY: `p.doc` is a copy of the bytes of a `Document` that `take`
                        // was handed, and every `Document` holds bytes that passed validation
                        // (`Document::new`, or `new_unchecked` over bytes that did before).
                        let doc = unsafe { Document::new_unchecked(p.doc.as_slice()) };
                        self.render(&p.id, &doc)
                    })
                    .collect()
            }
            Mode::All => {
                if self.sort.is_empty() {
                    // Keys left empty (see `take`): the id's encoding orders as the id does.
                    self.keyed.sort_by(|a, b| a.1.id.cmp(&b.1.id));
                } else {
                    self.keyed.sort_by(|a, b| a.0.cmp(&b.0));
                }
                self.keyed.into_iter().map(|(_, r)| r).collect()
            }
        };
        let skip = query.skip.min(rows.len());
        rows.drain(..skip);
        if let Some(limit) = query.limit {
            rows.truncate(limit);
        }
        Ok(rows)
    }
}

impl Collector for Rows {
    fn take_sorted(&mut self, id: &str, doc: &Document<&[u8]>, tie: &[u8]) -> Result<bool> {
        if !matches!(self.mode, Mode::InOrder) || self.sort.is_empty() {
            return self.take(id, doc);
        }
        self.count += 1;
        self.take_in_group(id, doc, Some(tie))
    }

    fn take(&mut self, id: &str, doc: &Document<&[u8]>) -> Result<bool> {
        self.count += 1;
        match self.mode {
            Mode::Count => {}
            Mode::InOrder => {
                if self.sort.is_empty() {
                    let row = self.render(id, doc);
                    self.rows.push(row);
                } else {
                    let fields_len = self.key(id, doc);
                    let key = std::mem::take(&mut self.scratch);
                    let more = self.take_in_group(id, doc, key.get(..fields_len));
                    self.scratch = key;
                    return more;
                }
                if self.want.is_some_and(|w| self.rows.len() >= w) {
                    return Ok(false);
                }
            }
            Mode::TopK(k) => {
                if self.sort.is_empty() {
                    self.key(id, doc);
                } else {
                    self.fields_key(id, doc);
                    // Past the heap's largest key on the sort paths alone, it is past it
                    // whatever its id (the first byte that differs lies before the id):
                    // most documents of a scan, their id not encoded (its `encode_string` was
                    // 4.5 % of a top 20 over covers).
                    let past = |(top, _): &(Vec<u8>, Pending)| {
                        let n = self.scratch.len().min(top.len());
                        self.scratch.as_slice() > top.get(..n).unwrap_or_default()
                    };
                    if self.heap.len() >= k && self.heap.peek().is_some_and(past) {
                        return Ok(true);
                    }
                    encode_str(id, &mut self.scratch);
                }
                if self.heap.len() >= k
                    && self
                        .heap
                        .peek()
                        .is_some_and(|(top, _)| self.scratch >= *top)
                {
                    return Ok(true);
                }
                let pending = Pending {
                    id: id.to_owned(),
                    doc: doc.as_bytes().to_vec(),
                };
                self.heap.push((self.scratch.clone(), pending));
                if self.heap.len() > k {
                    self.heap.pop();
                }
            }
            Mode::All => {
                // Without a sort the key is the id's encoding, whose order is the id's own:
                // it is left empty (no copy per row) and made only if the rows spill
                // (`take_keyed`); `finish` orders them by id.
                let key = if self.sort.is_empty() {
                    Vec::new()
                } else {
                    self.key(id, doc);
                    self.scratch.clone()
                };
                let row = self.render(id, doc);
                self.keyed_bytes += ROW_OVERHEAD + key.len() + row.id.len() + row.json.len();
                self.keyed.push((key, row));
            }
        }
        Ok(true)
    }

    fn fork(&self) -> Box<dyn Collector> {
        Box::new(self.fork_rows())
    }

    fn absorb(&mut self, other: Box<dyn Collector>) {
        let Ok(mut o) = other.into_any().downcast::<Rows>() else {
            return;
        };
        self.count += o.count;
        match self.mode {
            Mode::Count => {}
            Mode::InOrder => {
                o.flush_group();
                self.flush_group();
                self.rows.append(&mut o.rows);
                if let Some(w) = self.want {
                    self.rows.truncate(w);
                }
            }
            Mode::TopK(k) => {
                for item in o.heap {
                    self.heap.push(item);
                    if self.heap.len() > k {
                        self.heap.pop();
                    }
                }
            }
            Mode::All => {
                self.keyed_bytes += o.keyed_bytes;
                self.keyed.append(&mut o.keyed);
            }
        }
    }

    fn any_order(&self) -> bool {
        // Sort keys end with the id, so a heap or a final sort orders every row one way.
        !matches!(self.mode, Mode::InOrder)
    }

    fn full(&self) -> bool {
        matches!(self.mode, Mode::InOrder)
            && self.sort.is_empty()
            && self.want.is_some_and(|w| self.rows.len() >= w)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
