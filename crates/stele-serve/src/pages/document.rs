//! `/c/NAME/d/ID`: one document, as a collapsible tree (HTML `<details>`, so it folds
//! without script; the script adds "expand all" / "collapse all"), its stored size and the
//! size of its JSON, and a link to itself.

use super::{Ctx, Reply, collection_href, document_href, parse_json, reply};
use crate::error::ServeError;
use crate::html::{self, escape, link};
use serde_json::{Value, json};
use std::fmt::Write;

pub(crate) fn page(ctx: &Ctx<'_>, name: &str, id: &str) -> Result<Reply, ServeError> {
    let doc = ctx
        .snap
        .get(name, id)?
        .ok_or_else(|| ServeError::NoDocument {
            collection: name.to_owned(),
            id: id.to_owned(),
        })?;
    let text = doc.to_json()?;
    let model = json!({
        "collection": name,
        "id": id,
        "href": document_href(name, id),
        "stored_bytes": doc.bytes().len(),
        "json_bytes": text.len(),
        "document": parse_json(&text)?,
    });
    let crumbs = [
        (collection_href(name), name.to_owned()),
        (document_href(name, id), id.to_owned()),
    ];
    reply(ctx, id, &crumbs, &model, draw)
}

fn draw(m: &Value) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1 class=\"docid\">{}</h1><p>{} stored &middot; {} as JSON &middot; link: {}</p>",
        escape(m["id"].as_str().unwrap_or("")),
        html::bytes(m["stored_bytes"].as_u64().unwrap_or(0)),
        html::bytes(m["json_bytes"].as_u64().unwrap_or(0)),
        link(
            m["href"].as_str().unwrap_or(""),
            m["href"].as_str().unwrap_or("")
        ),
    );
    out.push_str("<p class=\"tools\"><button type=\"button\" data-tree=\"open\">expand all</button> <button type=\"button\" data-tree=\"close\">collapse all</button></p><div class=\"tree\">");
    html::json_tree(&m["document"], 2, &mut out);
    out.push_str("</div>");
    out
}
