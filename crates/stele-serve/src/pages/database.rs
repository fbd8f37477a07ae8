//! `/`: the database's collections (documents, bytes at rest, estimated ratio to their JSON,
//! indexes) and the tables and table sets lying in its folder.

use super::{Ctx, Reply, collection_href, reply};
use crate::error::ServeError;
use crate::html::{self, escape, link};
use serde_json::{Value, json};
use std::fmt::Write;

/// Documents read per collection to estimate its JSON size.
const JSON_SAMPLE: usize = 100;

pub(crate) fn page(ctx: &Ctx<'_>) -> Result<Reply, ServeError> {
    let snap = &ctx.snap;
    let mut collections = Vec::new();
    for name in snap.collections() {
        ctx.deadline.check()?;
        let stats = snap.stats(name);
        let at_rest = stats.table_bytes + stats.index_bytes;
        let json_bytes = estimate_json_bytes(ctx, name, stats.documents)?;
        let indexes: Vec<Value> = snap
            .index_stats(name)
            .iter()
            .map(|ix| {
                json!({"name": ix.name, "fields": ix.fields, "entries": ix.entries,
                    "array_fields": ix.array_fields})
            })
            .collect();
        collections.push(json!({
            "name": name,
            "documents": stats.documents,
            "bytes_at_rest": at_rest,
            "json_bytes_estimate": json_bytes,
            "ratio_to_json": if json_bytes > 0 { at_rest as f64 / json_bytes as f64 } else { 0.0 },
            "indexes": indexes,
        }));
    }
    let tables = super::table::list(ctx.dir)?;
    let model = json!({
        "database": ctx.dir.display().to_string(),
        "seq": snap.seq(),
        "collections": collections,
        "tables": tables,
    });
    let title = ctx
        .dir
        .file_name()
        .map_or_else(|| "database".into(), |n| n.to_string_lossy().into_owned());
    reply(ctx, &title, &[], &model, draw)
}

/// The JSON size of the collection, estimated from its first documents: their mean JSON
/// length times the count. Exact for collections of at most [`JSON_SAMPLE`] documents.
fn estimate_json_bytes(ctx: &Ctx<'_>, name: &str, count: u64) -> Result<u64, ServeError> {
    let (mut n, mut bytes) = (0u64, 0u64);
    for entry in ctx.snap.iter(name).take(JSON_SAMPLE) {
        let (_, doc) = entry?;
        bytes += doc.to_json()?.len() as u64;
        n += 1;
    }
    Ok((bytes * count).checked_div(n).unwrap_or(0))
}

fn draw(m: &Value) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1>{}</h1><p class=\"muted\">read-only view, as of commit {}</p>",
        escape(m["database"].as_str().unwrap_or("")),
        m["seq"]
    );
    out.push_str("<h2>Collections</h2><table class=\"grid\"><thead><tr><th>collection</th><th>documents</th><th>bytes at rest</th><th>of its JSON</th><th>indexes</th></tr></thead><tbody>");
    for c in m["collections"].as_array().into_iter().flatten() {
        let name = c["name"].as_str().unwrap_or("");
        let indexes: Vec<String> = c["indexes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|ix| {
                let fields: Vec<&str> = ix["fields"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                // Fields some document held an array at: a sort the filter also tests is
                // done in memory there (`stele::IndexStats::array_fields`).
                let arrays: Vec<&str> = ix["array_fields"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let arrays = if arrays.is_empty() {
                    String::new()
                } else {
                    format!(
                        " <span class=\"muted\">arrays at {}</span>",
                        escape(&arrays.join(", "))
                    )
                };
                format!(
                    "{} ({}){arrays}",
                    escape(ix["name"].as_str().unwrap_or("")),
                    escape(&fields.join(", "))
                )
            })
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{:.2}</td><td>{}</td></tr>",
            link(&collection_href(name), name),
            c["documents"],
            html::bytes(c["bytes_at_rest"].as_u64().unwrap_or(0)),
            c["ratio_to_json"].as_f64().unwrap_or(0.0),
            indexes.join("<br>")
        );
    }
    out.push_str("</tbody></table><p class=\"muted\">\"of its JSON\": bytes at rest (documents and indexes) over the collection's JSON size, estimated from its first documents.</p>");
    let tables = m["tables"].as_array().map_or(&[][..], Vec::as_slice);
    if !tables.is_empty() {
        out.push_str("<h2>Tables</h2><table class=\"grid\"><thead><tr><th>table</th><th>kind</th><th>entries</th><th>bytes</th></tr></thead><tbody>");
        for t in tables {
            let name = t["name"].as_str().unwrap_or("");
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td></tr>",
                link(&format!("/t/{}", html::encode_segment(name)), name),
                escape(t["kind"].as_str().unwrap_or("")),
                t["entries"],
                html::bytes(t["file_bytes"].as_u64().unwrap_or(0)),
            );
        }
        out.push_str("</tbody></table>");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// An index whose fields held arrays says so beside its fields (the reason a sort it
    /// would serve may be done in memory).
    #[test]
    fn indexes_name_the_fields_that_held_arrays() {
        let index = |arrays: serde_json::Value| {
            json!({"database": "d", "seq": 1, "tables": [], "collections": [{
                "name": "orders", "documents": 2, "bytes_at_rest": 10, "ratio_to_json": 0.5,
                "indexes": [{"name": "by_tags", "fields": ["status", "tags"], "entries": 3,
                             "array_fields": arrays}],
            }]})
        };
        let with = super::draw(&index(json!(["tags"])));
        assert!(
            with.contains("by_tags (status, tags) <span class=\"muted\">arrays at tags</span>"),
            "{with}"
        );
        let without = super::draw(&index(json!([])));
        assert!(without.contains("by_tags (status, tags)<"), "{without}");
        assert!(!without.contains("arrays at"), "{without}");
    }
}
