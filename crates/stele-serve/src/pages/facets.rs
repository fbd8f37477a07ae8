//! Facets: the most frequent values of a field among the documents a query matches, with
//! their counts. An array counts once per element (a document tagged `["a", "b"]` counts
//! for `a` and for `b`), as Datasette's array facets do; a path through an array of objects
//! (`items.sku`) reaches every element's field, as the query language's paths do.

use super::Ctx;
use crate::error::ServeError;
use crate::html::{self, escape};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write;
use stele::Query;

/// Values shown per facet.
const TOP: usize = 10;
/// Facets per request.
const MAX_FACETS: usize = 5;

/// The facets named in `list` (comma-separated paths) over what `query` matches; within the
/// request's time budget.
pub(crate) fn compute(ctx: &Ctx<'_>, query: &Query, list: &str) -> Result<Value, ServeError> {
    let paths: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if paths.len() > MAX_FACETS {
        return Err(ServeError::BadParameter {
            name: "facet".into(),
            reason: format!("{} fields given, at most {MAX_FACETS}", paths.len()),
        });
    }
    let mut out = Vec::new();
    for path in paths {
        let q = query
            .clone()
            .select(&[path])
            .time_budget(ctx.deadline.remaining());
        let rows = ctx.snap.query(&q)?.rows;
        let mut counts: HashMap<String, (Value, u64)> = HashMap::new();
        let segments: Vec<&str> = path.split('.').collect();
        for (i, row) in rows.iter().enumerate() {
            if i % 1024 == 0 {
                ctx.deadline.check()?;
            }
            let doc: Value = super::parse_json(&row.json)?;
            let mut values = Vec::new();
            reach(&doc, &segments, &mut values);
            for v in values {
                let e = counts
                    .entry(v.to_string())
                    .or_insert_with(|| (v.clone(), 0));
                e.1 += 1;
            }
        }
        let distinct = counts.len();
        let mut top: Vec<(Value, u64)> = counts.into_values().collect();
        top.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| a.0.to_string().cmp(&b.0.to_string()))
        });
        top.truncate(TOP);
        let values: Vec<Value> = top
            .into_iter()
            .map(|(v, n)| json!({"value": v, "count": n}))
            .collect();
        out.push(
            json!({"field": path, "documents": rows.len(), "distinct": distinct, "values": values}),
        );
    }
    Ok(Value::Array(out))
}

/// The values `path` reaches in `v`: through objects by key, through arrays element by
/// element (or by index, for a numeric segment); a final array gives its elements.
fn reach<'a>(v: &'a Value, path: &[&str], out: &mut Vec<&'a Value>) {
    let Some((first, rest)) = path.split_first() else {
        match v {
            Value::Array(items) => out.extend(items.iter()),
            v => out.push(v),
        }
        return;
    };
    match v {
        Value::Object(m) => {
            if let Some(child) = m.get(*first) {
                reach(child, rest, out);
            }
        }
        Value::Array(items) => match first.parse::<usize>() {
            Ok(i) => {
                if let Some(child) = items.get(i) {
                    reach(child, rest, out);
                }
            }
            Err(_) => {
                for item in items {
                    reach(item, path, out);
                }
            }
        },
        _ => {}
    }
}

/// The facets as lists of values, each a link that narrows the query to it.
pub(crate) fn draw(facets: &Value, base: &str, params: &[(String, String)], out: &mut String) {
    let list = facets.as_array().map_or(&[][..], Vec::as_slice);
    if list.is_empty() {
        return;
    }
    let filter = params
        .iter()
        .find(|(k, _)| k == "filter")
        .map_or("", |(_, v)| v.trim());
    out.push_str("<div class=\"facets\">");
    for f in list {
        let field = f["field"].as_str().unwrap_or("");
        let _ = write!(
            out,
            "<section class=\"facet\"><h3>{}</h3><p class=\"muted\">{} distinct</p><ul>",
            escape(field),
            f["distinct"]
        );
        for v in f["values"].as_array().into_iter().flatten() {
            let eq = json!({ field: v["value"] }).to_string();
            let narrowed = if filter.is_empty() {
                eq
            } else {
                format!("{{\"$and\": [{filter}, {eq}]}}")
            };
            let pairs: Vec<(&str, &str)> = params
                .iter()
                .map(|(k, v)| {
                    if k == "filter" {
                        ("filter", narrowed.as_str())
                    } else {
                        (k.as_str(), v.as_str())
                    }
                })
                .chain(filter.is_empty().then_some(("filter", narrowed.as_str())))
                .collect();
            let href = format!("{base}{}", html::encode_query(&pairs));
            let _ = write!(
                out,
                "<li><a href=\"{}\">{}</a> <span class=\"count\">{}</span></li>",
                escape(&href),
                html::cell(&v["value"], 40),
                v["count"]
            );
        }
        out.push_str("</ul></section>");
    }
    out.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::reach;
    use serde_json::{Value, json};

    fn values(doc: Value, path: &str) -> Vec<Value> {
        let segs: Vec<&str> = path.split('.').collect();
        let mut out = Vec::new();
        reach(&doc, &segs, &mut out);
        out.into_iter().cloned().collect()
    }

    #[test]
    fn arrays_count_per_element() {
        assert_eq!(
            values(json!({"t": ["a", "b"]}), "t"),
            vec![json!("a"), json!("b")]
        );
        assert_eq!(
            values(json!({"i": [{"s": 1}, {"s": 2}, {"x": 3}]}), "i.s"),
            vec![json!(1), json!(2)]
        );
        assert_eq!(values(json!({"t": ["a", "b"]}), "t.1"), vec![json!("b")]);
        assert_eq!(values(json!({"a": {"b": null}}), "a.b"), vec![json!(null)]);
        assert!(values(json!({"a": 1}), "b").is_empty());
    }
}
