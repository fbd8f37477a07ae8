//! `/t/NAME`: a sorted table (`.stt`) or table set (`.sts`) lying in the database folder:
//! its stats, a get by key (`?key=`), and a browse by prefix (`?prefix=`) or range
//! (`?from=` inclusive, `?to=` exclusive), a page at a time by cursor (`?after=KEY`).
//!
//! Only files the folder lists (its top level, with those extensions) are reachable: the
//! name from the URL is matched against that list, never joined to a path as it is.

use super::{Ctx, Reply, count_param, reply};
use crate::error::ServeError;
use crate::html::{self, escape};
use serde_json::{Value, json};
use std::fmt::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use stele_table::{Entry, SET_EXTENSION, TABLE_EXTENSION, Table, TableSet};

/// Largest `?limit=`.
const MAX_PAGE: usize = 1000;
/// Characters of a value shown in a listing.
const VALUE_CHARS: usize = 200;

enum Source {
    Table(Box<Table>),
    Set(TableSet),
}

type Entries<'s> = Box<dyn Iterator<Item = stele_table::Result<Entry<'s>>> + 's>;

impl Source {
    fn get(&self, key: &[u8]) -> stele_table::Result<Option<&[u8]>> {
        match self {
            Source::Table(t) => t.get(key),
            Source::Set(s) => s.get(key),
        }
    }

    fn range<'s>(&'s self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Entries<'s> {
        match self {
            Source::Table(t) => Box::new(t.range((lo, hi))),
            Source::Set(s) => Box::new(s.range::<&[u8], _>((lo, hi))),
        }
    }
}

/// The tables and table sets at the top of `dir`, by file name.
fn files(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, ServeError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| {
        ServeError::Store(stele::Error::Io {
            op: "listing the database folder",
            path: dir.to_path_buf(),
            source: e,
        })
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        let is_set = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e == SET_EXTENSION => true,
            Some(e) if e == TABLE_EXTENSION => false,
            _ => continue,
        };
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            out.push((name.to_owned(), path.clone(), is_set));
        }
    }
    out.sort();
    Ok(out)
}

fn open(path: &Path, is_set: bool) -> Result<Source, ServeError> {
    Ok(if is_set {
        Source::Set(TableSet::open(path)?)
    } else {
        Source::Table(Box::new(Table::open(path)?))
    })
}

/// The database page's list: name, kind, entries and bytes of each table and set.
pub(crate) fn list(dir: &Path) -> Result<Vec<Value>, ServeError> {
    let mut out = Vec::new();
    for (name, path, is_set) in files(dir)? {
        // A file that does not open as a table is listed with its error, not hidden.
        let v = match open(&path, is_set) {
            Ok(src) => {
                let (entries, bytes) = sizes(&src);
                json!({"name": name, "kind": if is_set { "table set" } else { "table" }, "entries": entries, "file_bytes": bytes})
            }
            Err(e) => {
                json!({"name": name, "kind": "unreadable", "entries": 0, "file_bytes": 0, "error": e.to_string()})
            }
        };
        out.push(v);
    }
    Ok(out)
}

fn sizes(src: &Source) -> (u64, u64) {
    match src {
        Source::Table(t) => (t.len(), t.stats().file_bytes),
        Source::Set(s) => (s.len(), s.shards().iter().map(|x| x.file_bytes).sum()),
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: no bound).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// A value as JSON for the model: a Stele document as its JSON, UTF-8 text as a string,
/// other bytes as hex.
fn shown(value: &[u8]) -> Value {
    if let Ok(doc) = stele_doc::Document::new(value)
        && let Ok(v) = serde_json::from_str::<Value>(&doc.to_json())
    {
        return json!({"document": v});
    }
    match std::str::from_utf8(value) {
        Ok(s) => json!({"text": s}),
        Err(_) => {
            let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
            json!({"hex": hex})
        }
    }
}

pub(crate) fn page(ctx: &Ctx<'_>, name: &str) -> Result<Reply, ServeError> {
    let (_, path, is_set) = files(ctx.dir)?
        .into_iter()
        .find(|(n, _, _)| n == name)
        .ok_or_else(|| ServeError::NoTable {
            name: name.to_owned(),
        })?;
    let src = open(&path, is_set)?;
    let (entries, bytes) = sizes(&src);
    let p = |k: &str| ctx.req.param(k).to_owned();
    let (key, prefix, from, to, after) = (p("key"), p("prefix"), p("from"), p("to"), p("after"));
    let limit = count_param(ctx, "limit", ctx.opts.page_size, MAX_PAGE)?;
    let got = if key.is_empty() {
        Value::Null
    } else {
        src.get(key.as_bytes())?.map_or(
            json!({"found": false}),
            |v| json!({"found": true, "value": shown(v)}),
        )
    };
    let hi_owned = if prefix.is_empty() {
        (!to.is_empty()).then(|| to.as_bytes().to_vec())
    } else {
        successor(prefix.as_bytes())
    };
    let lo = if !after.is_empty() {
        Bound::Excluded(after.as_bytes())
    } else if !prefix.is_empty() {
        Bound::Included(prefix.as_bytes())
    } else if !from.is_empty() {
        Bound::Included(from.as_bytes())
    } else {
        Bound::Unbounded
    };
    let hi = hi_owned
        .as_deref()
        .map_or(Bound::Unbounded, Bound::Excluded);
    let mut rows = Vec::new();
    let mut next = Value::Null;
    for (i, entry) in src.range(lo, hi).enumerate() {
        if i % 64 == 0 {
            ctx.deadline.check()?;
        }
        let (k, v) = entry?;
        if i == limit {
            next = rows
                .last()
                .map_or(Value::Null, |r: &Value| r["key"].clone());
            break;
        }
        rows.push(json!({"key": String::from_utf8_lossy(k.as_bytes()), "value_bytes": v.len(), "value": shown(v)}));
    }
    let model = json!({
        "table": name,
        "kind": if is_set { "table set" } else { "table" },
        "entries": entries,
        "file_bytes": bytes,
        "key": key, "prefix": prefix, "from": from, "to": to, "after": after,
        "limit_asked": ctx.req.param("limit"),
        "get": got,
        "rows": rows,
        "next": next,
    });
    let href = format!("/t/{}", html::encode_segment(name));
    let crumbs = [(href.clone(), name.to_owned())];
    reply(ctx, name, &crumbs, &model, |m| draw(m, &href))
}

fn value_cell(v: &Value) -> String {
    if let Some(d) = v.get("document") {
        html::cell(d, VALUE_CHARS)
    } else if let Some(t) = v.get("text") {
        html::cell(t, VALUE_CHARS)
    } else {
        format!("<code>{}</code>", html::cell(&v["hex"], VALUE_CHARS))
    }
}

fn draw(m: &Value, href: &str) -> String {
    let s = |k: &str| m[k].as_str().unwrap_or("").to_owned();
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1>{}</h1><p>{} &middot; {} entries &middot; {}</p>",
        escape(&s("table")),
        escape(&s("kind")),
        m["entries"],
        html::bytes(m["file_bytes"].as_u64().unwrap_or(0))
    );
    let _ = write!(
        out,
        "<form class=\"bar\" method=\"get\" action=\"{}\"><label>get key <input name=\"key\" value=\"{}\"></label> <button type=\"submit\">get</button></form>\
<form class=\"bar\" method=\"get\" action=\"{}\"><label>prefix <input name=\"prefix\" value=\"{}\"></label> <label>or from <input name=\"from\" value=\"{}\"></label> <label>to <input name=\"to\" value=\"{}\"></label> <button type=\"submit\">browse</button></form>",
        escape(href),
        escape(&s("key")),
        escape(href),
        escape(&s("prefix")),
        escape(&s("from")),
        escape(&s("to")),
    );
    if let Some(found) = m["get"]["found"].as_bool() {
        let _ = write!(
            out,
            "<p class=\"get\">key {}: {}</p>",
            escape(&s("key")),
            if found {
                value_cell(&m["get"]["value"])
            } else {
                "not found".into()
            }
        );
    }
    out.push_str("<table class=\"grid\"><thead><tr><th>key</th><th>bytes</th><th>value</th></tr></thead><tbody>");
    for r in m["rows"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"r\">{}</td><td>{}</td></tr>",
            escape(r["key"].as_str().unwrap_or("")),
            r["value_bytes"],
            value_cell(&r["value"])
        );
    }
    out.push_str("</tbody></table><p class=\"pager\">");
    if let Some(next) = m["next"].as_str() {
        let pairs = [
            ("prefix", s("prefix")),
            ("from", s("from")),
            ("to", s("to")),
            ("limit", s("limit_asked")),
            ("after", next.to_owned()),
        ];
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let _ = write!(
            out,
            "<a rel=\"next\" class=\"next\" href=\"{}\">next page</a>",
            escape(&format!("{href}{}", html::encode_query(&pairs)))
        );
    }
    out.push_str("</p>");
    out
}

#[cfg(test)]
mod tests {
    use super::successor;

    #[test]
    fn prefix_successors() {
        assert_eq!(successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
        assert_eq!(successor(b""), None);
    }
}
