//! Queries: equality, range and prefix on one field, with order, limit and projection.
//!
//! A query uses an index whose first field is the filtered field when one exists (an index
//! scan over just the matching keys), and otherwise reads every document of the collection
//! and keeps those that match (a full scan). [`QueryOutput::plan`] says which.
//!
//! Comparisons follow the index order: null < false < true < numbers < strings; a range
//! with one open side stays within the type of its other bound (`> 5` matches numbers
//! only). A field holding an array matches when any element reached through `[]` does.

use crate::error::{Error, Result};
use crate::index::encode::{encode_value, string_prefix};
use crate::index::{FieldPath, IndexDef};
use crate::snapshot::Snapshot;
use std::collections::HashSet;
use std::fmt;
use std::ops::Bound;
use stele_doc::{Document, JsonOptions};
use stele_table::prefix_successor;

/// The condition of a query, on one field.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Condition {
    /// The field equals this JSON value (numbers compare by value: `1` equals `1.0`).
    Eq(String),
    /// The field lies between these JSON values.
    Range(Bound<String>, Bound<String>),
    /// The field is a string starting with this text.
    Prefix(String),
}

/// A query over one collection. Build it with the methods, run it with
/// [`Snapshot::query`].
///
/// ```no_run
/// # fn main() -> stele::Result<()> {
/// # let db = stele::Database::open("/tmp/q")?;
/// use stele::Query;
/// let q = Query::new("companies").eq("address.city", r#""London""#).select(&["Name", "Overview"]).limit(10);
/// let out = db.snapshot().query(&q)?;
/// println!("{}", out.plan);
/// for row in out.rows { println!("{} {}", row.id, row.json); }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    collection: String,
    filter: Option<(String, Condition)>,
    order_by: Option<(String, bool)>,
    limit: Option<usize>,
    select: Option<Vec<String>>,
}

/// How a query ran.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Plan {
    /// Read the keys of an index in the matching range.
    IndexScan {
        /// The index used.
        index: String,
        /// The filtered field.
        field: String,
        /// Results come in index order (no sort needed).
        ordered: bool,
    },
    /// Read every document and kept the matching ones.
    FullScan {
        /// The field filtered on, if any.
        filter: Option<String>,
        /// Whether results were sorted in memory afterwards.
        sorted: bool,
    },
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Plan::IndexScan {
                index,
                field,
                ordered,
            } => write!(
                f,
                "index scan of {index:?} on {field}{}",
                if *ordered {
                    ", in index order"
                } else {
                    ", then sorted"
                }
            ),
            Plan::FullScan { filter, sorted } => {
                write!(f, "full scan")?;
                match filter {
                    Some(field) => write!(f, " filtering on {field} (no index has it first)")?,
                    None => write!(f, " (no filter)")?,
                }
                if *sorted {
                    write!(f, ", then sorted")?;
                }
                Ok(())
            }
        }
    }
}

/// One result: the document id and its JSON (whole, or only the selected fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The document id.
    pub id: String,
    /// The document, or the projection, as JSON text.
    pub json: String,
}

/// The results of a query and how it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueryOutput {
    /// Which plan ran.
    pub plan: Plan,
    /// The rows, in the order asked for; without [`Query::order_by`] in the plan's own
    /// order (index order for an index scan, id order for a full scan).
    pub rows: Vec<Row>,
}

impl Query {
    /// A query returning every document of `collection`.
    pub fn new(collection: &str) -> Query {
        Query {
            collection: collection.to_owned(),
            filter: None,
            order_by: None,
            limit: None,
            select: None,
        }
    }

    /// Keeps documents whose `field` equals the JSON value `json` (e.g. `"\"London\""`, `42`).
    #[must_use]
    pub fn eq(mut self, field: &str, json: &str) -> Query {
        self.filter = Some((field.to_owned(), Condition::Eq(json.to_owned())));
        self
    }

    /// Keeps documents whose `field` lies between two JSON values.
    #[must_use]
    pub fn range(mut self, field: &str, lo: Bound<&str>, hi: Bound<&str>) -> Query {
        let own = |b: Bound<&str>| b.map(str::to_owned);
        self.filter = Some((field.to_owned(), Condition::Range(own(lo), own(hi))));
        self
    }

    /// Keeps documents whose `field` is a string starting with `prefix`.
    #[must_use]
    pub fn prefix(mut self, field: &str, prefix: &str) -> Query {
        self.filter = Some((field.to_owned(), Condition::Prefix(prefix.to_owned())));
        self
    }

    /// Orders by `field` (documents without it come last), descending if asked.
    #[must_use]
    pub fn order_by(mut self, field: &str, descending: bool) -> Query {
        self.order_by = Some((field.to_owned(), descending));
        self
    }

    /// Returns at most `n` rows; `n` must be at least 1 ([`Snapshot::query`] rejects 0,
    /// which can only be a mistake).
    #[must_use]
    pub fn limit(mut self, n: usize) -> Query {
        self.limit = Some(n);
        self
    }

    /// Returns only these fields of each document (dotted paths), read in place without
    /// materialising the rest; the JSON object has the paths as keys.
    #[must_use]
    pub fn select(mut self, fields: &[&str]) -> Query {
        self.select = Some(fields.iter().map(|f| (*f).to_owned()).collect());
        self
    }

    /// The collection queried.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The same query on another collection.
    #[must_use]
    pub fn on(mut self, collection: &str) -> Query {
        self.collection = collection.to_owned();
        self
    }
}

/// Key range of the matching encoded values: `[lo, hi)`, `None` for unbounded.
struct KeyRange {
    lo: Vec<u8>,
    hi: Option<Vec<u8>>,
}

impl KeyRange {
    fn contains(&self, enc: &[u8]) -> bool {
        enc >= self.lo.as_slice() && self.hi.as_deref().is_none_or(|hi| enc < hi)
    }
}

fn encode_json(field: &str, json: &str) -> Result<Vec<u8>> {
    let bad = |why: &str| Error::InvalidQuery {
        reason: format!(
            "the value for {field} must be a JSON scalar (a string needs quotes: '\"text\"'): {why}"
        ),
    };
    let doc = stele_doc::from_json(json.as_bytes()).map_err(|e| bad(&e.to_string()))?;
    let doc = Document::new(&doc[..]).map_err(|e| bad(&e.to_string()))?;
    let mut out = Vec::new();
    if !encode_value(&doc.root(), &mut out) {
        return Err(bad("objects and arrays cannot be compared"));
    }
    Ok(out)
}

/// The encodings of values of the same type as `enc` lie in `[class_lo, class_hi)`.
fn type_class(enc: &[u8]) -> (Vec<u8>, Vec<u8>) {
    match enc.first().copied().unwrap_or(0) {
        0x30..=0x32 => (vec![0x30], vec![0x33]),
        0x20..=0x21 => (vec![0x20], vec![0x22]),
        b => (vec![b], vec![b.saturating_add(1)]),
    }
}

fn key_range(field: &str, cond: &Condition) -> Result<KeyRange> {
    Ok(match cond {
        Condition::Eq(v) => {
            let lo = encode_json(field, v)?;
            let hi = prefix_successor(&lo);
            KeyRange { lo, hi }
        }
        Condition::Prefix(p) => {
            let lo = string_prefix(p);
            let hi = prefix_successor(&lo);
            KeyRange { lo, hi }
        }
        Condition::Range(lo, hi) => {
            let lo_enc = match lo {
                Bound::Included(v) | Bound::Excluded(v) => Some(encode_json(field, v)?),
                Bound::Unbounded => None,
            };
            let hi_enc = match hi {
                Bound::Included(v) | Bound::Excluded(v) => Some(encode_json(field, v)?),
                Bound::Unbounded => None,
            };
            let class = lo_enc.as_deref().or(hi_enc.as_deref()).map(type_class);
            let start = match (lo, &lo_enc) {
                (Bound::Included(_), Some(e)) => e.clone(),
                (Bound::Excluded(_), Some(e)) => {
                    prefix_successor(e).unwrap_or_else(|| vec![0xff; e.len() + 1])
                }
                _ => class.as_ref().map_or_else(Vec::new, |c| c.0.clone()),
            };
            let end = match (hi, &hi_enc) {
                (Bound::Included(_), Some(e)) => prefix_successor(e),
                (Bound::Excluded(_), Some(e)) => Some(e.clone()),
                _ => class.map(|c| c.1),
            };
            if let (Some(lo_enc), Some(hi_enc)) = (&lo_enc, &hi_enc)
                && lo_enc > hi_enc
            {
                return Err(Error::InvalidQuery {
                    reason: format!(
                        "the range on {field} ends ({}) before it starts ({}): swap the bounds",
                        bound_text(hi),
                        bound_text(lo)
                    ),
                });
            }
            KeyRange { lo: start, hi: end }
        }
    })
}

/// The value of a bound as given (for messages).
fn bound_text(bound: &Bound<String>) -> &str {
    match bound {
        Bound::Included(v) | Bound::Excluded(v) => v,
        Bound::Unbounded => "",
    }
}

/// Projects `fields` of `doc` into a JSON object.
fn project(doc: &Document<&[u8]>, fields: &[FieldPath]) -> String {
    let mut out = Vec::with_capacity(64);
    out.push(b'{');
    let opts = JsonOptions::new();
    let mut first = true;
    for f in fields {
        let Some(v) = f.values(doc.root()).into_iter().next() else {
            continue;
        };
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        for c in f.as_str().chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        out.extend_from_slice(b"\":");
        v.write_json(&mut out, &opts);
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

impl Snapshot {
    /// Runs `query`. See the [module documentation](crate::query) for the semantics.
    pub fn query(&self, query: &Query) -> Result<QueryOutput> {
        let coll = query.collection.as_str();
        if query.limit == Some(0) {
            return Err(Error::InvalidQuery {
                reason: "a limit of 0 returns nothing: give a limit of at least 1, or none"
                    .to_owned(),
            });
        }
        let filter = match &query.filter {
            Some((field, cond)) => Some((FieldPath::parse(field)?, key_range(field, cond)?)),
            None => None,
        };
        let order = match &query.order_by {
            Some((field, desc)) => Some((FieldPath::parse(field)?, *desc)),
            None => None,
        };
        let select = match &query.select {
            Some(fields) => Some(
                fields
                    .iter()
                    .map(|f| FieldPath::parse(f))
                    .collect::<Result<Vec<_>>>()?,
            ),
            None => None,
        };
        let index = filter.as_ref().and_then(|(field, _)| {
            self.index_states(coll)
                .find(|ix| ix.def.fields.first().is_some_and(|f| f == field))
        });
        let render = |id: &str, doc: &Document<&[u8]>| Row {
            id: id.to_owned(),
            json: match &select {
                Some(fields) => project(doc, fields),
                None => doc.to_json(),
            },
        };
        let mut sort_keyed: Vec<(Option<Vec<u8>>, Row)> = Vec::new();
        let index_ordered = order
            .as_ref()
            .is_none_or(|(o, _)| filter.as_ref().is_some_and(|(f, _)| f == o));
        let early_limit = query.limit.filter(|_| index.is_some() && index_ordered);
        let plan;
        let mut rows: Vec<Row> = Vec::new();
        if let (Some(ix), Some((field, range))) = (index, &filter) {
            plan = Plan::IndexScan {
                index: ix.def.name.clone(),
                field: field.as_str().to_owned(),
                ordered: index_ordered,
            };
            let hi = range
                .hi
                .as_deref()
                .map_or(Bound::Unbounded, Bound::Excluded);
            let lo = Bound::Included(range.lo.as_slice());
            let descending = order.as_ref().is_some_and(|(_, d)| *d) && index_ordered;
            let mut seen = HashSet::new();
            for entry in crate::index::packed::scan(&ix.map, lo, hi, descending) {
                let key = entry?;
                let id = split_id(&ix.def, &key)?;
                if !seen.insert(id.to_vec()) {
                    continue;
                }
                let id = String::from_utf8_lossy(id).into_owned();
                let Some(doc) = self.get(coll, &id)? else {
                    return Err(Error::InvalidQuery {
                        reason: format!(
                            "index {:?} names document {id:?}, which does not exist (rebuild the index)",
                            ix.def.name
                        ),
                    });
                };
                let d = doc.document()?;
                let sort_key = order.as_ref().map(|(o, _)| first_enc(o, &d));
                let row = render(&id, &d);
                if index_ordered {
                    rows.push(row);
                    if early_limit.is_some_and(|n| rows.len() >= n) {
                        break;
                    }
                } else {
                    sort_keyed.push((sort_key.flatten(), row));
                }
            }
        } else {
            plan = Plan::FullScan {
                filter: filter.as_ref().map(|(f, _)| f.as_str().to_owned()),
                sorted: order.is_some(),
            };
            for entry in self.iter(coll) {
                let (id, doc) = entry?;
                let d = doc.document()?;
                if let Some((field, range)) = &filter {
                    let hit = field.values(d.root()).iter().any(|v| {
                        let mut e = Vec::new();
                        encode_value(v, &mut e) && range.contains(&e)
                    });
                    if !hit {
                        continue;
                    }
                }
                let row = render(&id, &d);
                match &order {
                    Some((o, _)) => sort_keyed.push((first_enc(o, &d), row)),
                    None => {
                        rows.push(row);
                        if query.limit.is_some_and(|n| rows.len() >= n) {
                            break;
                        }
                    }
                }
            }
        }
        if !sort_keyed.is_empty() || (order.is_some() && rows.is_empty()) {
            let desc = order.as_ref().is_some_and(|(_, d)| *d);
            // Documents without the field last (in id order), whatever the direction.
            sort_keyed.sort_by(|a, b| match (&a.0, &b.0) {
                // Order of (value, id), reversed for descending: what an index scan gives.
                (Some(x), Some(y)) if desc => (y, &b.1.id).cmp(&(x, &a.1.id)),
                (Some(x), Some(y)) => (x, &a.1.id).cmp(&(y, &b.1.id)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.1.id.cmp(&b.1.id),
            });
            rows.extend(sort_keyed.into_iter().map(|(_, r)| r));
        }
        if let Some(n) = query.limit {
            rows.truncate(n);
        }
        Ok(QueryOutput { plan, rows })
    }
}

/// The smallest encoded value of `field` in `doc`.
fn first_enc(field: &FieldPath, doc: &Document<&[u8]>) -> Option<Vec<u8>> {
    field
        .values(doc.root())
        .iter()
        .filter_map(|v| {
            let mut e = Vec::new();
            encode_value(v, &mut e).then_some(e)
        })
        .min()
}

fn split_id<'k>(def: &IndexDef, key: &'k [u8]) -> Result<&'k [u8]> {
    def.split_key(key)
        .map(|(_, id)| id)
        .ok_or_else(|| Error::InvalidQuery {
            reason: format!(
                "index {:?} holds a key that does not decode (rebuild the index)",
                def.name
            ),
        })
}
