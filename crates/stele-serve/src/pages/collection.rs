//! `/c/NAME`: a collection's documents in id order, a page at a time by cursor
//! (`?after=ID`: the page starts after that id; never an offset, so a page costs the same
//! anywhere in the collection), `?jump=ID` (the page starting at the first id at or after
//! it), and a schema summary sampled from the collection's first documents.

use super::{Ctx, Reply, collection_href, count_param, document_href, parse_json, reply, schema};
use crate::error::ServeError;
use crate::html::{self, escape, link};
use serde_json::{Value, json};
use std::fmt::Write;
use std::ops::Bound;

/// Largest `?limit=`.
pub(crate) const MAX_PAGE: usize = 1000;
/// Documents sampled for the schema summary.
const SCHEMA_SAMPLE: usize = 100;
/// Columns of the listing (the most common top-level fields).
const COLUMNS: usize = 6;

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
    let mut next = Value::Null;
    for (i, entry) in ctx.snap.range(name, (lower, Bound::Unbounded)).enumerate() {
        if i % 16 == 0 {
            ctx.deadline.check()?;
        }
        let (id, doc) = entry?;
        if i == limit {
            // One more than the page: there is a next page, after the page's last id.
            next = docs.last().map_or(Value::Null, |d: &Value| d["id"].clone());
            break;
        }
        let stored = doc.bytes().len();
        docs.push(
            json!({"id": id, "stored_bytes": stored, "document": parse_json(&doc.to_json()?)?}),
        );
    }
    let sample: Vec<Value> = if after.is_empty() && jump.is_empty() && docs.len() >= SCHEMA_SAMPLE {
        docs.iter().map(|d| d["document"].clone()).collect()
    } else {
        let mut sample = Vec::with_capacity(SCHEMA_SAMPLE);
        for entry in ctx.snap.iter(name).take(SCHEMA_SAMPLE) {
            ctx.deadline.check()?;
            sample.push(parse_json(&entry?.1.to_json()?)?);
        }
        sample
    };
    let model = json!({
        "collection": name,
        "documents_total": ctx.snap.count(name),
        "limit": limit,
        "limit_asked": ctx.req.param("limit"),
        "after": after,
        "jump": jump,
        "documents": docs,
        "next": next,
        "schema": schema::summarize(sample.iter()),
    });
    let crumbs = [(collection_href(name), name.to_owned())];
    reply(ctx, name, &crumbs, &model, |m| draw(m, name))
}

fn draw(m: &Value, name: &str) -> String {
    let base = collection_href(name);
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1>{}</h1><p>{} documents &middot; {} &middot; export {} {}</p>",
        escape(name),
        m["documents_total"],
        link(&format!("{base}/query"), "query"),
        link(&format!("{base}.jsonl"), "JSON Lines"),
        link(&format!("{base}.csv"), "CSV"),
    );
    let _ = write!(
        out,
        "<form class=\"bar\" method=\"get\" action=\"{}\"><label>jump to id <input name=\"jump\" value=\"{}\"></label> <button type=\"submit\">go</button></form>",
        escape(&base),
        escape(m["jump"].as_str().unwrap_or(""))
    );
    let columns: Vec<String> = m["schema"]["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str())
        .filter(|p| !p.contains('.'))
        .take(COLUMNS)
        .map(str::to_owned)
        .collect();
    out.push_str("<table class=\"grid docs\"><thead><tr><th>id</th>");
    for c in &columns {
        let _ = write!(out, "<th>{}</th>", escape(c));
    }
    out.push_str("</tr></thead><tbody>");
    let docs = m["documents"].as_array().map_or(&[][..], Vec::as_slice);
    for d in docs {
        let id = d["id"].as_str().unwrap_or("");
        let _ = write!(out, "<tr><td>{}</td>", link(&document_href(name, id), id));
        for c in &columns {
            let v = d["document"].get(c.as_str());
            let _ = write!(
                out,
                "<td>{}</td>",
                v.map_or_else(String::new, |v| html::cell(v, 60))
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    if docs.is_empty() {
        out.push_str("<p class=\"muted\">no documents here.</p>");
    }
    out.push_str("<p class=\"pager\">");
    if !m["after"].as_str().unwrap_or("").is_empty() || !m["jump"].as_str().unwrap_or("").is_empty()
    {
        let _ = write!(out, "{} ", link(&base, "first page"));
    }
    if let Some(next) = m["next"].as_str() {
        let pairs = [
            ("after", next),
            ("limit", m["limit_asked"].as_str().unwrap_or("")),
        ];
        let href = format!("{base}{}", html::encode_query(&pairs));
        let _ = write!(
            out,
            "<a rel=\"next\" class=\"next\" href=\"{}\">next page</a>",
            escape(&href)
        );
    }
    out.push_str("</p>");
    draw_schema(&m["schema"], &mut out);
    out
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
