//! From a request's URL to a page: the path's segments decoded and checked, the format
//! (HTML, or a twin: `.json`, `.jsonl`, `.csv`) and the query parameters.
//!
//! Invariants: a segment is percent-decoded once, after the URL is split at `/`, so an
//! encoded slash never makes a new segment; names (collections, tables) reject `/`, `\`,
//! `..`, NUL and control characters; ids reject NUL and lengths past the store's limit.
//! No name from the URL ever becomes a path by itself: tables are found by matching the
//! name against the files the database folder lists (`pages::table`).

use crate::error::ServeError;
use percent_encoding::percent_decode_str;

/// Longest URL served (the path and the query string); longer ones get 414.
pub const MAX_URL_BYTES: usize = 16 * 1024;
/// Longest collection or table name in a URL.
pub const MAX_NAME_BYTES: usize = 255;

/// The answer's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A web page.
    Html,
    /// The page's JSON twin.
    Json,
    /// The whole result as JSON Lines, streamed.
    Jsonl,
    /// The whole result as CSV, streamed.
    Csv,
}

impl Format {
    /// The suffix that asks for this format (`""` for HTML).
    pub fn suffix(self) -> &'static str {
        match self {
            Format::Html => "",
            Format::Json => ".json",
            Format::Jsonl => ".jsonl",
            Format::Csv => ".csv",
        }
    }
}

/// A page the server has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`: the database.
    Database,
    /// `/c/NAME`: a collection's documents.
    Collection(String),
    /// `/c/NAME/d/ID`: one document.
    Document(String, String),
    /// `/c/NAME/query`: a query over a collection.
    Query(String),
    /// `/t/NAME`: a table or table set.
    Table(String),
    /// `/assets/NAME`: the compiled-in stylesheet and script.
    Asset(String),
}

/// A request, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The page.
    pub route: Route,
    /// The form asked for (a suffix, else the Accept header).
    pub format: Format,
    /// The query parameters, decoded, in order.
    pub params: Vec<(String, String)>,
}

impl Parsed {
    /// The value of parameter `name` (the first one given), `""` if absent.
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Parses `url` (path and query string, as the request line has it). `accepts_json` is
/// whether the Accept header asks for `application/json` (used when no suffix is given).
pub fn parse(url: &str, accepts_json: bool) -> Result<Parsed, ServeError> {
    if url.len() > MAX_URL_BYTES {
        return Err(ServeError::TooLarge {
            what: "URL",
            bytes: url.len(),
            limit: MAX_URL_BYTES,
        });
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let Some(path) = path.strip_prefix('/') else {
        return Err(ServeError::BadUrl {
            part: "path",
            reason: "it must start with /".into(),
        });
    };
    let mut raw: Vec<&str> = path.split('/').collect();
    // A trailing slash names the same page.
    if raw.len() > 1 && raw.last() == Some(&"") {
        raw.pop();
    }
    let format = format_of(url, accepts_json);
    if let Some(last) = raw.last_mut() {
        *last = last.strip_suffix(format.suffix()).unwrap_or(last);
    }
    let params = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect::<Vec<_>>();
    if let Some((k, _)) = params
        .iter()
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
    {
        return Err(ServeError::BadParameter {
            name: k.replace('\0', "\\0"),
            reason: "it holds a NUL character".into(),
        });
    }
    let route = match raw.as_slice() {
        [""] => Route::Database,
        ["c", name] => Route::Collection(name_segment(name, "collection name")?),
        ["c", name, "query"] => Route::Query(name_segment(name, "collection name")?),
        ["c", name, "d", id] => {
            Route::Document(name_segment(name, "collection name")?, id_segment(id)?)
        }
        ["t", name] => Route::Table(name_segment(name, "table name")?),
        ["assets", name] => Route::Asset(name_segment(name, "asset name")?),
        _ => {
            return Err(ServeError::NoRoute {
                path: format!("/{path}"),
            });
        }
    };
    Ok(Parsed {
        route,
        format,
        params,
    })
}

/// The format a URL asks for: its suffix, else JSON if `accepts_json`, else HTML. Read on
/// the raw (still encoded) path: a name or id that ends in ".json" is linked with its dot
/// encoded (`%2E`), so it is never taken for a suffix. Errors answer in this format too.
pub fn format_of(url: &str, accepts_json: bool) -> Format {
    let path = url.split_once('?').map_or(url, |(p, _)| p);
    let path = path.strip_suffix('/').unwrap_or(path);
    [Format::Jsonl, Format::Json, Format::Csv]
        .into_iter()
        .find(|f| path.ends_with(f.suffix()))
        .unwrap_or(if accepts_json {
            Format::Json
        } else {
            Format::Html
        })
}

/// Decodes one segment into text: valid UTF-8, no NUL.
fn decode(raw: &str, part: &'static str) -> Result<String, ServeError> {
    let text = percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| ServeError::BadUrl {
            part,
            reason: "its percent-encoded bytes are not UTF-8".into(),
        })?;
    if text.contains('\0') {
        return Err(ServeError::BadUrl {
            part,
            reason: "it holds a NUL character (%00)".into(),
        });
    }
    Ok(text.into_owned())
}

/// A collection or table name: not empty, at most [`MAX_NAME_BYTES`], no `/`, `\`, `..`,
/// NUL or control characters.
fn name_segment(raw: &str, part: &'static str) -> Result<String, ServeError> {
    let name = decode(raw, part)?;
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > MAX_NAME_BYTES {
        Some(format!(
            "it is {} bytes long, more than {MAX_NAME_BYTES}",
            name.len()
        ))
    } else if name.contains('/') || name.contains('\\') {
        Some("it holds a slash (names never do; an encoded %2F is refused too)".to_owned())
    } else if name == "." || name.contains("..") {
        Some("it holds \"..\"".to_owned())
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character".to_owned())
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ServeError::BadUrl { part, reason }),
        None => Ok(name),
    }
}

/// A document id: any UTF-8 text the store takes (ids are keys, never file names, so `/`
/// and `..` are plain characters in them), without NUL, at most [`stele::MAX_ID_BYTES`].
fn id_segment(raw: &str) -> Result<String, ServeError> {
    let id = decode(raw, "document id")?;
    if id.is_empty() {
        return Err(ServeError::BadUrl {
            part: "document id",
            reason: "it is empty".into(),
        });
    }
    if id.len() > stele::MAX_ID_BYTES {
        return Err(ServeError::BadUrl {
            part: "document id",
            reason: format!(
                "it is {} bytes long, more than the {} bytes an id may have",
                id.len(),
                stele::MAX_ID_BYTES
            ),
        });
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(url: &str) -> Result<(Route, Format), String> {
        parse(url, false)
            .map(|p| (p.route, p.format))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn pages_and_suffixes() {
        assert_eq!(route("/"), Ok((Route::Database, Format::Html)));
        assert_eq!(route("/.json"), Ok((Route::Database, Format::Json)));
        assert_eq!(
            route("/c/orders.csv"),
            Ok((Route::Collection("orders".into()), Format::Csv))
        );
        assert_eq!(
            route("/c/orders/query.jsonl?filter=%7B%7D"),
            Ok((Route::Query("orders".into()), Format::Jsonl))
        );
        assert_eq!(
            route("/c/o/d/a%2Ejson"),
            Ok((Route::Document("o".into(), "a.json".into()), Format::Html))
        );
        assert_eq!(
            route("/c/o/d/a%2Fb.json"),
            Ok((Route::Document("o".into(), "a/b".into()), Format::Json))
        );
        let p = parse("/c/o?after=x%20y&limit=5", true).map_err(|e| e.to_string());
        assert_eq!(p.as_ref().map(|p| p.param("after")), Ok("x y"));
        assert_eq!(p.as_ref().map(|p| p.format), Ok(Format::Json));
    }

    #[test]
    fn hostile_names_are_refused() {
        for url in [
            "/c/..",
            "/c/..%2F..%2Fetc",
            "/c/a%2Fb",
            "/c/a%5Cb",
            "/c/a%00b",
            "/t/..%2Fmanifest",
            "/t/%2E%2E",
            "/c/%FF",
        ] {
            let err = parse(url, false).err().map(|e| e.status());
            assert_eq!(err, Some(400), "{url}");
        }
        let long = format!("/c/{}", "a".repeat(MAX_NAME_BYTES + 1));
        assert_eq!(parse(&long, false).err().map(|e| e.status()), Some(400));
        let huge = format!("/c/a?x={}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(parse(&huge, false).err().map(|e| e.status()), Some(414));
        assert_eq!(
            parse("/c/o/d/a%00", false).err().map(|e| e.status()),
            Some(400)
        );
        assert_eq!(
            parse("/c/o?filter=%00", false).err().map(|e| e.status()),
            Some(400)
        );
        assert_eq!(
            parse("/etc/passwd", false).err().map(|e| e.status()),
            Some(404)
        );
    }
}
