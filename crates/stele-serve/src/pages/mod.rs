//! The pages: each module builds its page's model as JSON (the JSON twin) and draws the
//! HTML from that model, so the two never disagree.

mod collection;
mod database;
mod document;
mod export;
mod facets;
mod query;
pub(crate) mod schema;
mod table;

use crate::error::ServeError;
use crate::html;
use crate::options::{Deadline, Options};
use crate::route::{Format, Parsed, Route};
use serde_json::{Value, json};
use std::io::Read;
use std::path::Path;
use stele::Snapshot;

/// What a page needs to answer one request.
pub(crate) struct Ctx<'a> {
    pub snap: Snapshot,
    pub dir: &'a Path,
    pub opts: &'a Options,
    pub deadline: Deadline,
    pub req: Parsed,
    /// The collections' schema summaries, kept between requests.
    pub schemas: &'a schema::SchemaCache,
}

/// A page's answer.
pub(crate) enum Reply {
    Html(u16, String),
    Json(u16, String),
    Asset(&'static str, &'static str),
    Stream(&'static str, Box<dyn Read + Send>),
}

pub(crate) fn dispatch(ctx: &Ctx<'_>) -> Result<Reply, ServeError> {
    match &ctx.req.route {
        Route::Database => database::page(ctx),
        Route::Collection(name) => {
            known_collection(ctx, name)?;
            match ctx.req.format {
                Format::Jsonl | Format::Csv => export::page(ctx, name, None),
                _ => collection::page(ctx, name),
            }
        }
        Route::Document(name, id) => {
            known_collection(ctx, name)?;
            document::page(ctx, name, id)
        }
        Route::Query(name) => {
            known_collection(ctx, name)?;
            query::page(ctx, name)
        }
        Route::Table(name) => table::page(ctx, name),
        Route::Asset(name) => crate::assets::get(name)
            .map(|(ct, body)| Reply::Asset(ct, body))
            .ok_or_else(|| ServeError::NoRoute {
                path: format!("/assets/{name}"),
            }),
    }
}

fn known_collection(ctx: &Ctx<'_>, name: &str) -> Result<(), ServeError> {
    if ctx.snap.has_collection(name) {
        Ok(())
    } else {
        Err(ServeError::NoCollection {
            name: name.to_owned(),
        })
    }
}

/// The answer in the format asked: the model as JSON, or `draw(model)` in the page frame.
pub(crate) fn reply(
    ctx: &Ctx<'_>,
    title: &str,
    crumbs: &[(String, String)],
    model: &Value,
    draw: impl FnOnce(&Value) -> String,
) -> Result<Reply, ServeError> {
    match ctx.req.format {
        Format::Html => {
            let body = draw(model);
            Ok(Reply::Html(
                200,
                html::page(title, crumbs, &twin_href(ctx), &body),
            ))
        }
        Format::Json => Ok(Reply::Json(200, model.to_string())),
        Format::Jsonl | Format::Csv => Err(ServeError::BadUrl {
            part: "format suffix",
            reason: "JSON Lines and CSV exports are offered for /c/NAME and /c/NAME/query only"
                .into(),
        }),
    }
}

/// This page's URL with `.json` added: the link to its JSON twin.
pub(crate) fn twin_href(ctx: &Ctx<'_>) -> String {
    let path = self_path(&ctx.req.route);
    let path = if path == "/" {
        "/.json".into()
    } else {
        format!("{path}.json")
    };
    let pairs: Vec<(&str, &str)> = ctx
        .req
        .params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    format!("{path}{}", html::encode_query(&pairs))
}

/// The path of a page (encoded).
pub(crate) fn self_path(route: &Route) -> String {
    match route {
        Route::Database => "/".into(),
        Route::Collection(c) => collection_href(c),
        Route::Document(c, id) => document_href(c, id),
        Route::Query(c) => format!("{}/query", collection_href(c)),
        Route::Table(t) => format!("/t/{}", html::encode_segment(t)),
        Route::Asset(a) => format!("/assets/{}", html::encode_segment(a)),
    }
}

pub(crate) fn collection_href(c: &str) -> String {
    format!("/c/{}", html::encode_segment(c))
}

pub(crate) fn document_href(c: &str, id: &str) -> String {
    format!(
        "/c/{}/d/{}",
        html::encode_segment(c),
        html::encode_segment(id)
    )
}

/// A whole-number parameter between 1 and `max`, or `default` when absent.
pub(crate) fn count_param(
    ctx: &Ctx<'_>,
    name: &str,
    default: usize,
    max: usize,
) -> Result<usize, ServeError> {
    let raw = ctx.req.param(name);
    if raw.is_empty() {
        return Ok(default);
    }
    match raw.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ServeError::BadParameter {
            name: name.to_owned(),
            reason: format!("{raw:?} is not a whole number from 1 to {max}"),
        }),
    }
}

/// Parses a document's JSON text into a model value (numbers keep their exact text, keys
/// their order: serde_json's `arbitrary_precision` and `preserve_order`).
pub(crate) fn parse_json(text: &str) -> Result<Value, ServeError> {
    serde_json::from_str(text).map_err(|e| {
        ServeError::Store(stele::Error::InvalidQuery {
            reason: format!("a stored document did not read back as JSON: {e}"),
        })
    })
}

/// The error's answer, in the format the request asked for.
pub(crate) fn error_page(e: &ServeError, format: Format) -> Reply {
    let status = e.status();
    match format {
        Format::Html => {
            let body = format!(
                "<h1>{status} {}</h1><p class=\"error\">{}</p>",
                html::escape(e.kind()),
                html::escape(&e.to_string())
            );
            Reply::Html(status, html::page("error", &[], "/.json", &body))
        }
        _ => Reply::Json(
            status,
            json!({"error": e.kind(), "status": status, "message": e.to_string()}).to_string(),
        ),
    }
}
