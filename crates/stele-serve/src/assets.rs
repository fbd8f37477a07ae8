//! The stylesheet and script, compiled into the binary: no CDN, no install step.

/// `(content type, bytes)` of the asset `name`, if there is one.
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
    match name {
        "style.css" => Some((
            "text/css; charset=utf-8",
            include_str!("../assets/style.css"),
        )),
        "app.js" => Some((
            "text/javascript; charset=utf-8",
            include_str!("../assets/app.js"),
        )),
        "icon.svg" => Some(("image/svg+xml", include_str!("../assets/icon.svg"))),
        _ => None,
    }
}
