//! Expressions of a pipeline: field paths (`"$a.b"`), literals, and objects of expressions.
//!
//! A path reaching one value gives that value; reaching several (through an array of
//! objects) gives the array of them; reaching none gives nothing (missing), which a group
//! key or an object expression treats as `null` / leaves out.

use crate::error::{Error, Result};
use crate::index::encode::encode_any;
use crate::index::path::ReachCache;
use crate::query::path::{DocPath, Reached};
use crate::query::project::json_string;
use stele_doc::{Document, JsonOptions, Value};

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Path(DocPath),
    /// A literal, as a document of its own (so it reads like any value).
    Literal(Vec<u8>),
    Object(Vec<(String, Expr)>),
}

/// An evaluated expression.
pub(crate) enum Out<'a> {
    Missing,
    One(Value<'a>),
    /// A value built from several (JSON text).
    Json(String),
}

impl Out<'_> {
    /// The value as JSON text (`null` when missing).
    pub(crate) fn json(&self) -> String {
        match self {
            Out::Missing => "null".to_owned(),
            Out::One(v) => v.to_json(),
            Out::Json(s) => s.clone(),
        }
    }

    /// Appends [`Out::json`] to `out` (a `$group`'s arena of keys: no string of its own,
    /// where one per group, grown from empty, was a tenth of a group-by with a group per
    /// document, `docs/notes/2026-12-02-small-scans.md`).
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Out::Missing => out.extend_from_slice(b"null"),
            Out::One(v) => v.write_json(out, &JsonOptions::new()),
            Out::Json(s) => out.extend_from_slice(s.as_bytes()),
        }
    }

    /// The value's order encoding (null's when missing).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Out::Missing => out.push(0x10),
            Out::One(v) => encode_any(v, out),
            Out::Json(s) => match stele_doc::from_json(s.as_bytes()) {
                Ok(bytes) => match Document::new(&bytes[..]) {
                    Ok(doc) => encode_any(&doc.root(), out),
                    Err(_) => out.push(0x10),
                },
                Err(_) => out.push(0x10),
            },
        }
    }
}

/// What a field path reached, as an expression's value. No vector while no array is on
/// the way (one per document otherwise).
fn reached_out(reached: Reached<'_>) -> Out<'_> {
    let mut reached = match reached {
        Reached::One([v]) => return Out::One(v),
        Reached::Many(values) => values,
    };
    match reached.len() {
        0 => Out::Missing,
        1 => reached.pop().map_or(Out::Missing, Out::One),
        _ => {
            let parts: Vec<String> = reached.iter().map(json_of).collect();
            Out::Json(format!("[{}]", parts.join(",")))
        }
    }
}

/// JSON text of a value, for output.
pub(crate) fn json_of(v: &Value<'_>) -> String {
    let mut out = Vec::new();
    v.write_json(&mut out, &JsonOptions::new());
    String::from_utf8(out).unwrap_or_default()
}

/// A document's id as a scan hands it on: its stored key, and whether the collection holds
/// integer ids (then `_id` is the integer the key stands for, `crate::ids`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdRef<'a> {
    pub(crate) key: &'a str,
    pub(crate) int: bool,
}

impl Expr {
    pub(crate) fn parse(v: Value<'_>, at: &str) -> Result<Expr> {
        let bad = |reason: String| Error::InvalidFilter {
            at: at.to_owned(),
            reason,
        };
        match v {
            Value::String(s) if s.to_cow().starts_with('$') => {
                let text = s.to_cow();
                if text.starts_with("$$") {
                    return Err(bad(format!(
                        "{text} is a variable; variables are not supported"
                    )));
                }
                let path = DocPath::parse(&text[1..]).map_err(|e| bad(e.to_string()))?;
                Ok(Expr::Path(path))
            }
            Value::Object(o) => {
                let mut fields = Vec::new();
                for (k, child) in o.iter_original() {
                    if k.starts_with('$') {
                        return Err(bad(format!(
                            "{k} is not supported: expressions are field paths (\"$a.b\"), literals and objects of them"
                        )));
                    }
                    fields.push((k.to_owned(), Expr::parse(child, &format!("{at}.{k}"))?));
                }
                Ok(Expr::Object(fields))
            }
            other => {
                let bytes = stele_doc::from_json(json_of(&other).as_bytes())
                    .map_err(|e| bad(e.to_string()))?;
                Ok(Expr::Literal(bytes))
            }
        }
    }

    /// [`Expr::eval`], a field path's lookups through `cache` (made by [`Expr::cache`] of
    /// this expression), remembered from one document to the next.
    #[inline]
    pub(crate) fn eval_cached<'a>(
        &'a self,
        root: Value<'a>,
        id: Option<IdRef<'_>>,
        cache: &mut ReachCache,
    ) -> Out<'a> {
        match self {
            Expr::Path(p) if !(p.as_str() == "_id" && id.is_some()) => {
                reached_out(p.reach_cached(root, cache))
            }
            _ => self.eval(root, id),
        }
    }

    /// The lookup cache of [`Expr::eval_cached`]: a field path's, else an empty one.
    pub(crate) fn cache(&self) -> ReachCache {
        match self {
            Expr::Path(p) => p.cache(),
            _ => ReachCache::default(),
        }
    }

    /// Evaluates against the document `root` (whose `_id` is `id` when given).
    pub(crate) fn eval<'a>(&'a self, root: Value<'a>, id: Option<IdRef<'_>>) -> Out<'a> {
        match self {
            Expr::Path(p) if p.as_str() == "_id" && id.is_some() => {
                let id = id.unwrap_or(IdRef {
                    key: "",
                    int: false,
                });
                // An integer id is the number its key stands for.
                if let Some(n) = id
                    .int
                    .then(|| crate::ids::int_from_key(id.key.as_bytes()))
                    .flatten()
                {
                    return Out::One(Value::Int(n));
                }
                let mut s = Vec::new();
                json_string(id.key, &mut s);
                Out::Json(String::from_utf8(s).unwrap_or_default())
            }
            Expr::Path(p) => reached_out(p.reach_fast(root)),
            // The literal's value borrows `doc`, a local: copied out as JSON.
            Expr::Literal(bytes) => match Document::new(&bytes[..]) {
                Ok(doc) => Out::Json(json_of(&doc.root())),
                Err(_) => Out::Missing,
            },
            Expr::Object(fields) => {
                let mut out = Vec::from(&b"{"[..]);
                let mut first = true;
                for (k, e) in fields {
                    let v = e.eval(root, id);
                    if matches!(v, Out::Missing) {
                        continue;
                    }
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    json_string(k, &mut out);
                    out.push(b':');
                    out.extend_from_slice(v.json().as_bytes());
                }
                out.push(b'}');
                Out::Json(String::from_utf8(out).unwrap_or_default())
            }
        }
    }
}
