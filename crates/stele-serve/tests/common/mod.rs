//! A sample database (people, hostile documents, a table beside them) and an HTTP client
//! for the tests over loopback.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;
use stele_serve::{Options, Server};

/// Documents of the `people` collection: ids `p000`..`p119`.
pub const PEOPLE: usize = 120;

/// Hostile text: each must reach a page as text, never as markup.
pub const HOSTILE: [&str; 3] = [
    "<script>alert('x')</script>",
    "\"><img src=x onerror=alert(1)>",
    "</textarea><svg onload=alert(2)>",
];

pub fn person(i: usize) -> String {
    let cities = ["Oslo", "Lima", "Pune"];
    let tags: Vec<&str> = ["red", "green", "blue"]
        .into_iter()
        .enumerate()
        .filter(|(k, _)| i.is_multiple_of(k + 2))
        .map(|(_, t)| t)
        .collect();
    serde_json::json!({
        "name": format!("person {i}"),
        "age": 20 + i % 50,
        "city": cities[i % 3],
        "tags": tags,
        "price": serde_json::from_str::<serde_json::Value>("12.50").unwrap_or_default(),
        "address": {"street": format!("{i} Main St"), "zip": format!("{:05}", i * 7)},
    })
    .to_string()
}

/// Creates the sample database in `dir`: `people`, `evil` (hostile keys, values and ids),
/// an index on people.age, and a table `*.stt` of 30 keys in the folder.
pub fn sample(dir: &Path) -> stele::Result<()> {
    let db = stele::Database::open(dir)?;
    let mut b = db.batch();
    for i in 0..PEOPLE {
        b.put_json("people", &format!("p{i:03}"), person(i).as_bytes())?;
    }
    for (i, h) in HOSTILE.iter().enumerate() {
        let doc = serde_json::json!({ "text": h, *h: i, "list": [h] }).to_string();
        b.put_json("evil", h, doc.as_bytes())?;
        b.put_json("evil", &format!("e{i}"), doc.as_bytes())?;
    }
    b.put_json(
        "exact",
        "n",
        br#"{"big": 123456789012345678901234567890, "dec": 12.50, "f": 1.5e300}"#,
    )?;
    db.commit(b)?;
    db.create_index("people", "by_age", &["age"])?;
    db.close()?;
    let mut t =
        stele_table::TableBuilder::new(dir, stele_table::TableOptions::default()).map_err(|e| {
            stele::Error::InvalidQuery {
                reason: e.to_string(),
            }
        })?;
    for i in 0..30 {
        let k = format!("key{i:02}");
        t.add(k.as_bytes(), format!("value {i}").as_bytes())
            .map_err(|e| stele::Error::InvalidQuery {
                reason: e.to_string(),
            })?;
    }
    t.finish().map_err(|e| stele::Error::InvalidQuery {
        reason: e.to_string(),
    })?;
    Ok(())
}

/// A server on a free loopback port.
pub fn serve(dir: &Path) -> Server {
    serve_with(dir, Options::default().port(0))
}

pub fn serve_with(dir: &Path, opts: Options) -> Server {
    match Server::start(dir, opts) {
        Ok(s) => s,
        Err(e) => panic!("server did not start: {e}"),
    }
}

/// An answer: status, content type, body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub csp: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        match serde_json::from_str(&self.body) {
            Ok(v) => v,
            Err(e) => panic!("not JSON ({e}): {}", self.body),
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// GET `path` (with its query string) from the server.
pub fn get(server: &Server, path: &str) -> Answer {
    request(server, path, None)
}

/// GET with `Accept: application/json`.
pub fn get_json(server: &Server, path: &str) -> Answer {
    request(server, path, Some("application/json"))
}

fn request(server: &Server, path: &str, accept: Option<&str>) -> Answer {
    let url = format!("http://{}{path}", server.addr());
    let mut req = agent().get(&url);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    match req.call() {
        Ok(resp) => answer(resp),
        Err(e) => panic!("GET {path}: {e}"),
    }
}

pub fn answer(mut resp: ureq::http::Response<ureq::Body>) -> Answer {
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (content_type, csp) = (header("content-type"), header("content-security-policy"));
    let status = resp.status().as_u16();
    let body = match resp
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_string()
    {
        Ok(b) => b,
        Err(e) => panic!("reading the body: {e}"),
    };
    Answer {
        status,
        content_type,
        csp,
        body,
    }
}

/// A URL-encoded query value.
pub fn enc(s: &str) -> String {
    stele_serve::html::encode_segment(s)
}
