//! HTML output: escaping, the page frame, and JSON values drawn as collapsible trees.
//!
//! Invariant: every string that comes from a document, an id, a name or the URL reaches the
//! page through [`escape`] (text and attribute values alike, always in double quotes) or
//! [`encode_segment`] / [`encode_query`] (inside a URL, then escaped). Nothing from outside is
//! ever placed in a `<script>` or `<style>` element or an event attribute.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use std::fmt::Write;

/// Characters left as they are in a URL path segment: letters, digits and `-_~`. Everything
/// else is percent-encoded, `.` and `/` included, so an id ending in `.json` or holding `/`
/// does not read as a format suffix or as two segments.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

/// Escapes text for HTML element content and double-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    escape_into(text, &mut out);
    out
}

/// [`escape`], appending to `out`.
pub fn escape_into(text: &str, out: &mut String) {
    // The characters escaped are ASCII, so the text between two of them is whole UTF-8:
    // copied a run at a time.
    let mut from = 0;
    for (i, b) in text.bytes().enumerate() {
        let entity = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(text.get(from..i).unwrap_or_default());
        out.push_str(entity);
        from = i + 1;
    }
    out.push_str(text.get(from..).unwrap_or_default());
}

/// Percent-encodes one path segment (a collection name, an id, a table name).
pub fn encode_segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// A query string from pairs: `?a=1&b=x%20y` (empty pairs left out; `""` if none remain).
pub fn encode_query(pairs: &[(&str, &str)]) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for (k, v) in pairs {
        if !v.is_empty() {
            ser.append_pair(k, v);
            any = true;
        }
    }
    if any {
        format!("?{}", ser.finish())
    } else {
        String::new()
    }
}

/// A link: `<a href="HREF">TEXT</a>`, both escaped.
pub fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

/// The whole page: head (the compiled-in stylesheet and script), a breadcrumb line and the
/// body. `crumbs` are (href, text) pairs; `json_href` links the page's JSON twin.
pub fn page(title: &str, crumbs: &[(String, String)], json_href: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = write!(out, "<title>{} - stele</title>", escape(title));
    out.push_str("<link rel=\"stylesheet\" href=\"/assets/style.css\">");
    // Named here so that browsers do not ask for /favicon.ico (a 404 in their console).
    out.push_str("<link rel=\"icon\" href=\"/assets/icon.svg\" type=\"image/svg+xml\">");
    out.push_str("<script src=\"/assets/app.js\" defer></script></head><body>");
    out.push_str("<nav class=\"crumbs\"><a href=\"/\">stele</a>");
    for (href, text) in crumbs {
        let _ = write!(out, " / {}", link(href, text));
    }
    let _ = write!(
        out,
        "<span class=\"twin\">{}</span></nav><main>",
        link(json_href, "JSON")
    );
    out.push_str(body);
    out.push_str("</main></body></html>\n");
    out
}

/// Draws a JSON value: scalars as escaped text with a class per type, objects and arrays
/// as `<details>` elements (collapsible without script; open down to `open_depth`).
pub fn json_tree(value: &Value, open_depth: usize, out: &mut String) {
    tree(value, 0, open_depth, out);
}

fn tree(value: &Value, depth: usize, open_depth: usize, out: &mut String) {
    let open = if depth < open_depth { " open" } else { "" };
    match value {
        Value::Object(map) if !map.is_empty() => {
            let _ = write!(
                out,
                "<details class=\"j\"{open}><summary>{{ {} keys }}</summary><ul>",
                map.len()
            );
            for (k, v) in map {
                out.push_str("<li><span class=\"k\">");
                escape_into(k, out);
                out.push_str("</span>: ");
                tree(v, depth + 1, open_depth, out);
                out.push_str("</li>");
            }
            out.push_str("</ul></details>");
        }
        Value::Array(items) if !items.is_empty() => {
            let _ = write!(
                out,
                "<details class=\"j\"{open}><summary>[ {} items ]</summary><ol start=\"0\">",
                items.len()
            );
            for v in items {
                out.push_str("<li>");
                tree(v, depth + 1, open_depth, out);
                out.push_str("</li>");
            }
            out.push_str("</ol></details>");
        }
        _ => scalar(value, out),
    }
}

/// One value on one line (objects and arrays as their compact JSON), escaped.
pub fn scalar(value: &Value, out: &mut String) {
    let class = match value {
        Value::Null => "n",
        Value::Bool(_) => "b",
        Value::Number(_) => "num",
        Value::String(_) => "s",
        Value::Array(_) | Value::Object(_) => "c",
    };
    let _ = write!(out, "<span class=\"{class}\">");
    escape_into(&value.to_string(), out);
    out.push_str("</span>");
}

/// A value shortened for a table cell: its compact JSON cut at `max` characters.
pub fn cell(value: &Value, max: usize) -> String {
    let mut out = String::new();
    match value {
        Value::String(s) => cell_into(s, max, &mut out),
        v => cell_into(&v.to_string(), max, &mut out),
    }
    out
}

/// A cell's text (a string's content, or another value's compact JSON) cut at `max`
/// characters and escaped, appended to `out`.
pub fn cell_into(text: &str, max: usize, out: &mut String) {
    let cut = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    escape_into(text.get(..cut).unwrap_or(text), out);
    if cut < text.len() {
        out.push('…');
    }
}

/// `1234567` as `1.2 MB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    match (unit, UNITS.get(unit)) {
        (0, _) => format!("{n} B"),
        (_, Some(u)) => format!("{v:.1} {u}"),
        (_, None) => format!("{n} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_turns_markup_into_text() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(
            escape("\"><img src=x onerror=alert(1)>"),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(escape("plain é 日本"), "plain é 日本");
    }

    #[test]
    fn segments_encode_dots_slashes_and_specials() {
        assert_eq!(encode_segment("a.json"), "a%2Ejson");
        assert_eq!(encode_segment("../x/y"), "%2E%2E%2Fx%2Fy");
        assert_eq!(encode_segment("ok-_~1"), "ok-_~1");
        assert_eq!(encode_segment("é \""), "%C3%A9%20%22");
    }

    #[test]
    fn query_strings_skip_empty_values() {
        assert_eq!(
            encode_query(&[("a", "1"), ("b", ""), ("c", "x y&")]),
            "?a=1&c=x+y%26"
        );
        assert_eq!(encode_query(&[("a", "")]), "");
    }

    #[test]
    fn json_tree_escapes_keys_and_values() {
        let v: Value =
            serde_json::from_str(r#"{"<b>": "<script>x</script>", "n": [1, {"q": "\"'"}]}"#)
                .unwrap_or(Value::Null);
        let mut out = String::new();
        json_tree(&v, 1, &mut out);
        assert!(!out.contains("<script>"), "{out}");
        assert!(!out.contains("<b>"), "{out}");
        assert!(out.contains("&lt;b&gt;"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(out.contains("<details class=\"j\" open>"), "{out}");
    }

    #[test]
    fn cells_are_cut_and_escaped() {
        let v = Value::String("<i>abcdef".into());
        assert_eq!(cell(&v, 4), "&lt;i&gt;a…");
        assert_eq!(cell(&v, 9), "&lt;i&gt;abcdef");
        let mut out = String::new();
        cell_into("日本語&x", 2, &mut out);
        assert_eq!(out, "日本…");
        out.clear();
        cell_into("a&'\"b", 10, &mut out);
        assert_eq!(out, "a&amp;&#39;&quot;b");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500_000), "1.5 MB");
    }
}
