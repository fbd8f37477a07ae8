//! `/c/NAME/query`: a query in the store's query language (a MongoDB-style filter, a sort,
//! a limit, a projection), the plan it ran with, and facets (`facet=a,b`: the top values of
//! each field among the matching documents, array fields counted per element).
//!
//! Parameters: `filter` (`{"a": {"$gt": 1}}`), `sort` (`{"a": -1}` or `a,-b`), `limit`
//! (1-1000, default 50), `projection` (`{"a": 1}`), `facet` (field paths, comma-separated).

use super::{Ctx, Reply, collection_href, count_param, document_href, facets, parse_json, reply};
use crate::error::ServeError;
use crate::html::{self, escape, link};
use serde_json::{Value, json};
use std::fmt::Write;
use stele::{Filter, Query};

/// Largest `?limit=`.
const MAX_LIMIT: usize = 1000;

/// The query the parameters describe, without limit (exports read the whole result).
pub(crate) fn build(ctx: &Ctx<'_>, name: &str) -> Result<Query, ServeError> {
    let mut q = Query::new(name);
    let filter = ctx.req.param("filter").trim();
    if !filter.is_empty() {
        q = q.filter(Filter::parse(filter)?);
    }
    for (path, descending) in parse_sort(ctx.req.param("sort"))? {
        q = q.sort(&path, descending);
    }
    let projection = ctx.req.param("projection").trim();
    if !projection.is_empty() {
        q = q.projection_json(projection)?;
    }
    Ok(q)
}

/// `{"a": -1, "b": 1}` or `a,-b`: paths and whether each is descending.
fn parse_sort(raw: &str) -> Result<Vec<(String, bool)>, ServeError> {
    let raw = raw.trim();
    let bad = |reason: String| ServeError::BadParameter {
        name: "sort".into(),
        reason,
    };
    if raw.starts_with('{') {
        let v: serde_json::Map<String, Value> = serde_json::from_str(raw)
            .map_err(|e| bad(format!("not a JSON object of paths and 1 or -1: {e}")))?;
        return v
            .into_iter()
            .map(|(k, d)| match d.as_i64() {
                Some(1) => Ok((k, false)),
                Some(-1) => Ok((k, true)),
                _ => Err(bad(format!("{k:?} takes 1 (ascending) or -1 (descending)"))),
            })
            .collect();
    }
    Ok(raw
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.strip_prefix('-') {
            Some(p) => (p.to_owned(), true),
            None => (p.to_owned(), false),
        })
        .collect())
}

pub(crate) fn page(ctx: &Ctx<'_>, name: &str) -> Result<Reply, ServeError> {
    if matches!(
        ctx.req.format,
        crate::route::Format::Jsonl | crate::route::Format::Csv
    ) {
        return super::export::page(ctx, name, Some(build(ctx, name)?));
    }
    let limit = count_param(ctx, "limit", 50, MAX_LIMIT)?;
    let q = build(ctx, name)?;
    let out = ctx
        .snap
        .query(&q.clone().limit(limit).time_budget(ctx.deadline.remaining()))?;
    let rows = out
        .rows
        .iter()
        .map(|r| Ok(json!({"id": r.id, "document": parse_json(&r.json)?})))
        .collect::<Result<Vec<_>, ServeError>>()?;
    let facet_list = facets::compute(ctx, &q, ctx.req.param("facet"))?;
    let model = json!({
        "collection": name,
        "filter": ctx.req.param("filter"),
        "sort": ctx.req.param("sort"),
        "limit": limit,
        "projection": ctx.req.param("projection"),
        "facet": ctx.req.param("facet"),
        "plan": out.plan.to_string(),
        "stats": {
            "keys_examined": out.stats.keys_examined,
            "docs_examined": out.stats.docs_examined,
            "rows": out.stats.rows,
            "elapsed_us": out.stats.elapsed_us,
        },
        "rows": rows,
        "facets": facet_list,
    });
    let crumbs = [
        (collection_href(name), name.to_owned()),
        (format!("{}/query", collection_href(name)), "query".into()),
    ];
    reply(ctx, &format!("query {name}"), &crumbs, &model, |m| {
        draw(m, name, &ctx.req.params)
    })
}

fn draw(m: &Value, name: &str, params: &[(String, String)]) -> String {
    let base = format!("{}/query", collection_href(name));
    let s = |k: &str| escape(m[k].as_str().unwrap_or(""));
    let mut out = String::new();
    let _ = write!(out, "<h1>Query {}</h1>", escape(name));
    let _ = write!(
        out,
        "<form class=\"query\" method=\"get\" action=\"{}\">\
<label>filter <textarea name=\"filter\" rows=\"3\" placeholder=\"{{&quot;field&quot;: {{&quot;$gte&quot;: 10}}}}\">{}</textarea></label>\
<label>sort <input name=\"sort\" value=\"{}\" placeholder=\"field,-other\"></label>\
<label>limit <input name=\"limit\" value=\"{}\" size=\"5\"></label>\
<label>projection <input name=\"projection\" value=\"{}\" placeholder=\"{{&quot;field&quot;: 1}}\"></label>\
<label>facets <input name=\"facet\" value=\"{}\" placeholder=\"field,other\"></label>\
<button type=\"submit\">run</button></form>",
        escape(&base),
        s("filter"),
        s("sort"),
        m["limit"],
        s("projection"),
        s("facet"),
    );
    let pairs: Vec<(&str, &str)> = params
        .iter()
        .filter(|(k, _)| k != "limit")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let q = html::encode_query(&pairs);
    let _ = write!(
        out,
        "<p class=\"plan\">plan: <code>{}</code> &middot; {} rows shown, {} documents examined, {} index keys, {} µs &middot; whole result as {} {}</p>",
        s("plan"),
        m["stats"]["rows"],
        m["stats"]["docs_examined"],
        m["stats"]["keys_examined"],
        m["stats"]["elapsed_us"],
        link(&format!("{base}.jsonl{q}"), "JSON Lines"),
        link(&format!("{base}.csv{q}"), "CSV"),
    );
    facets::draw(&m["facets"], &base, params, &mut out);
    out.push_str(
        "<table class=\"grid rows\"><thead><tr><th>id</th><th>document</th></tr></thead><tbody>",
    );
    for r in m["rows"].as_array().into_iter().flatten() {
        let id = r["id"].as_str().unwrap_or("");
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            link(&document_href(name, id), id),
            html::cell(&r["document"], 300)
        );
    }
    out.push_str("</tbody></table>");
    if m["rows"].as_array().is_none_or(Vec::is_empty) {
        out.push_str("<p class=\"muted\">no documents match.</p>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse_sort;

    #[test]
    fn sorts_in_both_forms() {
        assert_eq!(
            parse_sort("a, -b").ok(),
            Some(vec![("a".into(), false), ("b".into(), true)])
        );
        assert_eq!(
            parse_sort(r#"{"b": -1, "a": 1}"#).ok(),
            Some(vec![("b".into(), true), ("a".into(), false)])
        );
        assert!(parse_sort(r#"{"a": 2}"#).is_err());
        assert_eq!(parse_sort("").ok(), Some(vec![]));
    }
}
