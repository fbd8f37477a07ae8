//! `/c/NAME`: a collection's documents in id order, a page at a time by cursor
//! (`?after=ID`: the page starts after that id; never an offset, so a page costs the same
//! anywhere in the collection), `?jump=ID` (the page starting at the first id at or after
//! it), and a schema summary sampled from the collection's first documents.

use super::{Ctx, Reply, collection_href, count_param, document_href, twin_href};
use crate::error::ServeError;
use crate::html::{self, escape, link};
use crate::route::Format;
use serde_json::Value;
use std::fmt::Write;
use std::io::Write as _;
use std::ops::Bound;
use std::sync::Arc;
use stele::Doc;
use stele_doc::JsonOptions;

/// Largest `?limit=`.
pub(crate) const MAX_PAGE: usize = 1000;
/// Columns of the listing (the most common top-level fields).
const COLUMNS: usize = 6;
/// Characters of a value shown in a cell.
const CELL_CHARS: usize = 60;

/// One page of a collection: what both the HTML page and its JSON twin are drawn from.
/// The documents stay in their stored form: the twin writes each one's JSON text straight
/// from it, the page reads only its columns' values (no JSON text parsed back).
struct Listing<'a> {
    name: &'a str,
    total: u64,
    limit: usize,
    limit_asked: &'a str,
    after: &'a str,
    jump: &'a str,
    docs: Vec<(String, Doc<'a>)>,
    /// The page's last id when another page follows.
    next: Option<String>,
    schema: Arc<Value>,
}

pub(crate) fn page(ctx: &Ctx<'_>, name: &str) -> Result<Reply, ServeError> {
    let limit = count_param(ctx, "limit", ctx.opts.page_size, MAX_PAGE)?;
    let after = ctx.req.param("after");
    let jump = ctx.req.param("jump");
    let lower = if !jump.is_empty() {
        Bound::Included(jump)
    } else if !after.is_empty() {
        Bound::Excluded(after)
    } else {
        Bound::Unbounded
    };
    let mut docs = Vec::with_capacity(limit);
    let mut next = None;
    for (i, entry) in ctx.snap.range(name, (lower, Bound::Unbounded)).enumerate() {
        if i % 16 == 0 {
            ctx.deadline.check()?;
        }
        let (id, doc) = entry?;
        if i == limit {
            // One more than the page: there is a next page, after the page's last id.
            next = docs.last().map(|(id, _): &(String, Doc<'_>)| id.clone());
            break;
        }
        docs.push((id, doc));
    }
    let listing = Listing {
        name,
        total: ctx.snap.count(name),
        limit,
        limit_asked: ctx.req.param("limit"),
        after,
        jump,
        docs,
        next,
        schema: ctx.schemas.summary(&ctx.snap, name, &ctx.deadline)?,
    };
    match ctx.req.format {
        Format::Json => Ok(Reply::Json(200, to_json(&listing)?)),
        Format::Html => {
            let crumbs = [(collection_href(name), name.to_owned())];
            let body = draw(&listing)?;
            Ok(Reply::Html(
                200,
                html::page(name, &crumbs, &twin_href(ctx), &body),
            ))
        }
        // Exports are dispatched before this page.
        Format::Jsonl | Format::Csv => {
            super::reply(ctx, name, &[], &Value::Null, |_| String::new())
        }
    }
}

/// The JSON twin: `{"collection", "documents_total", "limit", "limit_asked", "after",
/// "jump", "documents": [{"id", "stored_bytes", "document"}], "next", "schema"}`.
fn to_json(l: &Listing<'_>) -> Result<String, ServeError> {
    let mut out = Vec::with_capacity(
        1024 + l
            .docs
            .iter()
            .map(|(_, d)| 64 + 2 * d.bytes().len())
            .sum::<usize>(),
    );
    let text = |out: &mut Vec<u8>, s: &str| serde_json::to_writer(out, s);
    let written = (|| -> Result<(), Box<dyn std::error::Error>> {
        out.extend_from_slice(b"{\"collection\":");
        text(&mut out, l.name)?;
        write!(
            out,
            ",\"documents_total\":{},\"limit\":{},\"limit_asked\":",
            l.total, l.limit
        )?;
        text(&mut out, l.limit_asked)?;
        out.extend_from_slice(b",\"after\":");
        text(&mut out, l.after)?;
        out.extend_from_slice(b",\"jump\":");
        text(&mut out, l.jump)?;
        out.extend_from_slice(b",\"documents\":[");
        for (i, (id, doc)) in l.docs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"id\":");
            text(&mut out, id)?;
            write!(out, ",\"stored_bytes\":{},\"document\":", doc.bytes().len())?;
            doc.document()?
                .write_json(&mut out, &JsonOptions::default());
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"next\":");
        match &l.next {
            Some(id) => text(&mut out, id)?,
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"schema\":");
        serde_json::to_writer(&mut out, &*l.schema)?;
        out.push(b'}');
        Ok(())
    })();
    // Only a document that fails its validation gets here: the writes go to memory.
    written.map_err(|e| {
        ServeError::Store(stele::Error::InvalidQuery {
            reason: format!("a stored document did not read back as JSON: {e}"),
        })
    })?;
    String::from_utf8(out).map_err(|e| {
        ServeError::Store(stele::Error::InvalidQuery {
            reason: format!("a stored document did not read back as UTF-8 JSON: {e}"),
        })
    })
}

fn draw(l: &Listing<'_>) -> Result<String, ServeError> {
    let name = l.name;
    let base = collection_href(name);
    let mut out = String::with_capacity(4096 + l.docs.len() * 512);
    let _ = write!(
        out,
        "<h1>{}</h1><p>{} documents &middot; {} &middot; export {} {}</p>",
        escape(name),
        l.total,
        link(&format!("{base}/query"), "query"),
        link(&format!("{base}.jsonl"), "JSON Lines"),
        link(&format!("{base}.csv"), "CSV"),
    );
    let _ = write!(
        out,
        "<form class=\"bar\" method=\"get\" action=\"{}\"><label>jump to id <input name=\"jump\" value=\"{}\"></label> <button type=\"submit\">go</button></form>",
        escape(&base),
        escape(l.jump)
    );
    let columns: Vec<&str> = l.schema["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str())
        .filter(|p| !p.contains('.'))
        .take(COLUMNS)
        .collect();
    out.push_str("<table class=\"grid docs\"><thead><tr><th>id</th>");
    for c in &columns {
        let _ = write!(out, "<th>{}</th>", escape(c));
    }
    out.push_str("</tr></thead><tbody>");
    let json = JsonOptions::default();
    for (id, doc) in &l.docs {
        let _ = write!(out, "<tr><td>{}</td>", link(&document_href(name, id), id));
        let doc = doc.document()?;
        for c in &columns {
            out.push_str("<td>");
            match doc.get(c) {
                Some(stele_doc::Value::String(s)) => {
                    html::cell_into(&s.to_cow(), CELL_CHARS, &mut out)
                }
                Some(v) => html::cell_into(&v.to_json_with(&json), CELL_CHARS, &mut out),
                None => {}
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    if l.docs.is_empty() {
        out.push_str("<p class=\"muted\">no documents here.</p>");
    }
    out.push_str("<p class=\"pager\">");
    if !l.after.is_empty() || !l.jump.is_empty() {
        let _ = write!(out, "{} ", link(&base, "first page"));
    }
    if let Some(next) = &l.next {
        let pairs = [("after", next.as_str()), ("limit", l.limit_asked)];
        let href = format!("{base}{}", html::encode_query(&pairs));
        let _ = write!(
            out,
            "<a rel=\"next\" class=\"next\" href=\"{}\">next page</a>",
            escape(&href)
        );
    }
    out.push_str("</p>");
    draw_schema(&l.schema, &mut out);
    Ok(out)
}

fn draw_schema(s: &Value, out: &mut String) {
    let _ = write!(
        out,
        "<h2>Schema</h2><p class=\"muted\">fields of the first {} documents</p><table class=\"grid\"><thead><tr><th>field</th><th>present</th><th>types</th></tr></thead><tbody>",
        s["sampled"]
    );
    for f in s["fields"].as_array().into_iter().flatten() {
        let types: Vec<String> = f["types"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(t, n)| format!("{} {}", escape(t), n))
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"r\">{:.0}%</td><td>{}</td></tr>",
            escape(f["path"].as_str().unwrap_or("")),
            f["share"].as_f64().unwrap_or(0.0) * 100.0,
            types.join(", ")
        );
    }
    out.push_str("</tbody></table>");
}
