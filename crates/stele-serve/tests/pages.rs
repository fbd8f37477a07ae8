//! Every page and its JSON twin, over loopback, on the sample database.

use crate::common;

use common::{PEOPLE, enc, get, get_json, sample, serve};
use serde_json::Value;

/// The element of the array `list` whose `name` is `name` (null if none).
fn named(list: &Value, name: &str) -> Value {
    list.as_array()
        .into_iter()
        .flatten()
        .find(|x| x["name"] == name)
        .cloned()
        .unwrap_or_default()
}

fn setup() -> (tempfile::TempDir, stele_serve::Server) {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    if let Err(e) = sample(dir.path()) {
        panic!("sample database: {e}");
    }
    let server = serve(dir.path());
    (dir, server)
}

#[test]
fn database_page_lists_collections_indexes_and_tables() {
    let (_dir, s) = setup();
    let html = get(&s, "/");
    assert_eq!(html.status, 200);
    assert!(html.content_type.starts_with("text/html"));
    assert!(html.body.contains("href=\"/c/people\""), "{}", html.body);
    assert!(html.body.contains("by_age"));
    assert!(html.body.contains(".stt"));
    let j = get(&s, "/.json").json();
    let people = named(&j["collections"], "people");
    assert_eq!(people["documents"], PEOPLE);
    assert!(people["bytes_at_rest"].as_u64().unwrap_or(0) > 0);
    assert!(people["ratio_to_json"].as_f64().unwrap_or(0.0) > 0.0);
    assert_eq!(people["indexes"][0]["name"], "by_age");
    // No document holds an array at `age`: a sort the filter also tests is served.
    assert_eq!(people["indexes"][0]["array_fields"], serde_json::json!([]));
    assert!(!html.body.contains("arrays at"), "{}", html.body);
    assert_eq!(j["tables"][0]["entries"], 30);
    // The Accept header asks for the same twin.
    assert_eq!(get_json(&s, "/").json(), j);
}

#[test]
fn collection_pages_follow_the_cursor_through_every_document() {
    let (_dir, s) = setup();
    let mut ids = Vec::new();
    let mut url = "/c/people.json".to_owned();
    let mut pages = 0;
    loop {
        let j = get(&s, &url).json();
        pages += 1;
        for d in j["documents"].as_array().into_iter().flatten() {
            ids.push(d["id"].as_str().unwrap_or("").to_owned());
        }
        match j["next"].as_str() {
            Some(next) => url = format!("/c/people.json?after={}", enc(next)),
            None => break,
        }
    }
    let want: Vec<String> = (0..PEOPLE).map(|i| format!("p{i:03}")).collect();
    assert_eq!(ids, want);
    assert_eq!(pages, PEOPLE.div_ceil(50));
    // The HTML page links its next page by cursor, never by offset.
    let html = get(&s, "/c/people");
    assert!(
        html.body
            .contains("<a rel=\"next\" class=\"next\" href=\"/c/people?after=p049\">"),
        "{}",
        html.body
    );
    let small = get(&s, "/c/people.json?limit=7&after=p010").json();
    assert_eq!(small["documents"][0]["id"], "p011");
    assert_eq!(small["next"], "p017");
}

#[test]
fn jump_to_an_id_and_the_schema_summary() {
    let (_dir, s) = setup();
    let j = get(&s, "/c/people.json?jump=p05").json();
    assert_eq!(j["documents"][0]["id"], "p050");
    let fields = j["schema"]["fields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let find = |p: &str| fields.iter().find(|f| f["path"] == p).cloned();
    assert_eq!(find("name").map(|f| f["share"].clone()), Some(1.0.into()));
    assert_eq!(
        find("age").map(|f| f["types"]["integer"].clone()),
        Some(100.into())
    );
    assert!(find("address.zip").is_some());
    assert_eq!(j["schema"]["sampled"], 100);
    let html = get(&s, "/c/people?jump=p05");
    assert!(html.body.contains("<h2>Schema</h2>"));
    assert!(html.body.contains("address.zip"));
}

#[test]
fn document_page_shows_the_exact_document_and_its_sizes() {
    let (_dir, s) = setup();
    let j = get(&s, "/c/exact/d/n.json").json();
    assert_eq!(j["id"], "n");
    assert!(j["stored_bytes"].as_u64().unwrap_or(0) > 0);
    let text = serde_json::to_string(&j["document"]).unwrap_or_default();
    // Numbers keep their exact text (stele writes 1.5e300 as 1.5e+300).
    assert_eq!(
        text,
        r#"{"big":123456789012345678901234567890,"dec":12.50,"f":1.5e+300}"#
    );
    let html = get(&s, "/c/people/d/p007");
    assert_eq!(html.status, 200);
    assert!(html.body.contains("person 7"));
    assert!(html.body.contains("<details class=\"j\" open>"));
    assert!(html.body.contains("href=\"/c/people/d/p007\""));
    let missing = get(&s, "/c/people/d/nobody");
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("no document"));
}

#[test]
fn query_with_filter_sort_limit_projection_and_plan() {
    let (_dir, s) = setup();
    let filter = enc(r#"{"age": {"$gte": 60}, "city": "Oslo"}"#);
    let j = get(
        &s,
        &format!(
            "/c/people/query.json?filter={filter}&sort=-age,name&limit=3&projection={}",
            enc(r#"{"age": 1}"#)
        ),
    )
    .json();
    let rows = j["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 3);
    let ages: Vec<u64> = rows
        .iter()
        .filter_map(|r| r["document"]["age"].as_u64())
        .collect();
    assert!(ages.windows(2).all(|w| w[0] >= w[1]), "{ages:?}");
    assert!(ages.iter().all(|&a| a >= 60));
    assert!(rows.iter().all(|r| r["document"].get("name").is_none()));
    assert!(j["plan"].as_str().unwrap_or("").contains("by_age"), "{j}");
    let html = get(&s, &format!("/c/people/query?filter={filter}"));
    assert!(html.body.contains("plan: <code>"));
    let bad = get(&s, "/c/people/query?filter=%7Bnope");
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("filter"), "{}", bad.body);
}

#[test]
fn facets_count_array_fields_per_element() {
    let (_dir, s) = setup();
    let j = get(&s, "/c/people/query.json?facet=tags,city").json();
    let tags = &j["facets"][0];
    assert_eq!(tags["field"], "tags");
    let count = |v: &str| {
        tags["values"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|x| x["value"] == v)
            .map(|x| x["count"].as_u64().unwrap_or(0))
    };
    // i % 2 == 0 -> red, i % 3 == 0 -> green, i % 4 == 0 -> blue.
    assert_eq!(count("red"), Some(60));
    assert_eq!(count("green"), Some(40));
    assert_eq!(count("blue"), Some(30));
    assert_eq!(j["facets"][1]["values"][0]["count"], 40);
    let html = get(&s, "/c/people/query?facet=tags");
    assert!(html.body.contains("class=\"facet\""));
    // Each value links to the query narrowed to it.
    assert!(
        html.body.contains("filter=%7B%22tags%22%3A%22red%22%7D"),
        "{}",
        html.body
    );
}

#[test]
fn exports_stream_the_whole_result() {
    let (_dir, s) = setup();
    let lines = get(&s, "/c/people.jsonl");
    assert_eq!(lines.status, 200);
    assert_eq!(lines.content_type, "application/x-ndjson");
    let docs: Vec<Value> = lines
        .body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(docs.len(), PEOPLE);
    assert_eq!(docs[3]["_id"], "p003");
    assert_eq!(docs[3]["name"], "person 3");
    let csv = get(&s, "/c/people.csv");
    let mut rows = csv.body.lines();
    assert_eq!(rows.next(), Some("_id,name,age,city,tags,price,address"));
    assert_eq!(csv.body.lines().count(), PEOPLE + 1);
    assert!(
        csv.body
            .contains("p002,person 2,22,Pune,\"[\"\"red\"\"]\",12.50,")
    );
    let q = get(
        &s,
        &format!(
            "/c/people/query.jsonl?filter={}",
            enc(r#"{"city": "Lima"}"#)
        ),
    );
    assert_eq!(q.body.lines().count(), PEOPLE / 3);
    let sorted = get(
        &s,
        "/c/people/query.csv?sort=-age&projection=%7B%22age%22%3A1%7D",
    );
    let second = sorted.body.lines().nth(1).unwrap_or("");
    assert!(second.ends_with(",69"), "{second}");
}

#[test]
fn table_page_gets_and_browses_by_prefix_and_range() {
    let (dir, s) = setup();
    let name = std::fs::read_dir(dir.path())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .find(|n| n.ends_with(".stt"))
        .unwrap_or_default();
    let base = format!("/t/{}", enc(&name));
    let j = get(&s, &format!("{base}.json?key=key07")).json();
    assert_eq!(j["entries"], 30);
    assert_eq!(j["get"]["value"]["text"], "value 7");
    let p = get(&s, &format!("{base}.json?prefix=key1&limit=4")).json();
    let keys: Vec<&str> = p["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(keys, ["key10", "key11", "key12", "key13"]);
    assert_eq!(p["next"], "key13");
    let rest = get(&s, &format!("{base}.json?prefix=key1&limit=4&after=key13")).json();
    assert_eq!(rest["rows"][0]["key"], "key14");
    let r = get(&s, &format!("{base}.json?from=key28&to=key29")).json();
    assert_eq!(r["rows"].as_array().map(Vec::len), Some(1));
    let html = get(&s, &format!("{base}?prefix=key2"));
    assert!(html.body.contains("value 25"));
}

#[test]
fn new_commits_of_a_live_writer_show_on_the_next_request() {
    let (dir, s) = setup();
    let db = match stele::Database::open(dir.path()) {
        Ok(db) => db,
        Err(e) => panic!("writer: {e}"),
    };
    assert_eq!(get(&s, "/c/people/d/p999").status, 404);
    let mut b = db.batch();
    if let Err(e) = b.put_json("people", "p999", br#"{"name": "late"}"#) {
        panic!("{e}");
    }
    if let Err(e) = db.commit(b) {
        panic!("{e}");
    }
    let j = get(&s, "/c/people/d/p999.json").json();
    assert_eq!(j["document"]["name"], "late");
    let db_page = get(&s, "/.json").json();
    assert_eq!(
        named(&db_page["collections"], "people")["documents"],
        PEOPLE + 1
    );
}

#[test]
fn the_schema_summary_follows_commits_to_the_sampled_documents() {
    let (dir, s) = setup();
    let db = match stele::Database::open(dir.path()) {
        Ok(db) => db,
        Err(e) => panic!("writer: {e}"),
    };
    let field = |j: &Value, p: &str| {
        j["schema"]["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["path"] == p).cloned())
    };
    // Kept between requests: the same summary, on every page.
    let first = get(&s, "/c/people.json?after=p100").json();
    assert_eq!(first["schema"], get(&s, "/c/people.json").json()["schema"]);
    assert!(field(&first, "vip").is_none());
    // A commit outside the sample changes no summary, but the page's documents.
    let mut b = db.batch();
    for (id, doc) in [("p110", r#"{"name": "outside", "vip": true}"#)] {
        if let Err(e) = b.put_json("people", id, doc.as_bytes()) {
            panic!("{e}");
        }
    }
    if let Err(e) = db.commit(b) {
        panic!("{e}");
    }
    let j = get(&s, "/c/people.json?after=p100").json();
    assert_eq!(j["documents"][9]["document"]["name"], "outside");
    assert_eq!(j["schema"], first["schema"]);
    // A commit to a sampled document shows in the summary on the next request.
    let mut b = db.batch();
    if let Err(e) = b.put_json("people", "p007", br#"{"name": "seven", "vip": "yes"}"#) {
        panic!("{e}");
    }
    if let Err(e) = db.commit(b) {
        panic!("{e}");
    }
    let j = get(&s, "/c/people.json?after=p100").json();
    let vip = field(&j, "vip");
    assert_eq!(
        vip.map(|f| f["types"].clone()),
        Some(serde_json::json!({"string": 1}))
    );
    assert_eq!(
        field(&j, "age").map(|f| f["present"].clone()),
        Some(99.into())
    );
    let html = get(&s, "/c/people?after=p100");
    assert!(html.body.contains("<td>vip</td>"), "{}", html.body);
}

#[test]
fn a_collection_page_keeps_each_document_exactly() {
    let (_dir, s) = setup();
    let listing = get(&s, "/c/exact.json").json();
    let doc = get(&s, "/c/exact/d/n.json").json();
    assert_eq!(listing["documents"][0]["document"], doc["document"]);
    assert_eq!(
        listing["documents"][0]["document"]["big"].to_string(),
        "123456789012345678901234567890"
    );
    assert_eq!(
        listing["documents"][0]["document"]["dec"].to_string(),
        "12.50"
    );
    assert_eq!(listing["next"], Value::Null);
    let html = get(&s, "/c/exact");
    assert!(
        html.body
            .contains("<td>123456789012345678901234567890</td>"),
        "{}",
        html.body
    );
    assert!(html.body.contains("<td>12.50</td>"), "{}", html.body);
}

#[test]
fn assets_are_compiled_in() {
    let (_dir, s) = setup();
    let css = get(&s, "/assets/style.css");
    assert_eq!(css.status, 200);
    assert!(css.content_type.starts_with("text/css"));
    assert!(get(&s, "/assets/app.js").body.contains("data-tree"));
    assert_eq!(get(&s, "/assets/other.js").status, 404);
}

#[test]
fn a_table_set_in_the_folder_reads_as_one_table() {
    let (dir, s) = setup();
    let mut shards = Vec::new();
    for prefix in ["a", "b"] {
        let built =
            stele_table::TableBuilder::new(dir.path(), stele_table::TableOptions::default())
                .and_then(|mut t| {
                    for i in 0..10 {
                        t.add(
                            format!("{prefix}{i:02}").as_bytes(),
                            format!("{prefix} {i}").as_bytes(),
                        )?;
                    }
                    t.finish()
                });
        match built {
            Ok(info) => shards.push(info.path),
            Err(e) => panic!("{e}"),
        }
    }
    if let Err(e) = stele_table::TableSet::commit(dir.path().join("lookup.sts"), &shards, &[b"b"]) {
        panic!("{e}");
    }
    let db = get(&s, "/.json").json();
    let set = named(&db["tables"], "lookup.sts");
    assert_eq!(set["kind"], "table set");
    assert_eq!(set["entries"], 20);
    let j = get(&s, "/t/lookup%2Ests.json?from=a08&limit=3&key=b05").json();
    let keys: Vec<&str> = j["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(keys, ["a08", "a09", "b00"]);
    assert_eq!(j["next"], "b00");
    assert_eq!(j["get"]["value"]["text"], "b 5");
}
