//! Safe by default: hostile documents show as text, hostile URLs are refused, nothing
//! writes, the time budget stops work and says so, and a bounded load gets right answers.

use crate::common;

use common::{Answer, HOSTILE, enc, get, sample, serve, serve_with};
use std::time::{Duration, Instant};
use stele_serve::Options;

fn sample_dir() -> tempfile::TempDir {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    if let Err(e) = sample(dir.path()) {
        panic!("sample database: {e}");
    }
    dir
}

/// No hostile string appears as it is (as markup) in `page`.
fn assert_inert(page: &Answer, what: &str) {
    for h in HOSTILE {
        assert!(
            !page.body.contains(h),
            "{what} holds {h:?} as markup:\n{}",
            page.body
        );
    }
    assert!(!page.body.contains("<img"), "{what}");
    assert!(!page.body.contains("<svg"), "{what}");
    assert_eq!(
        page.body.matches("<script").count(),
        1,
        "{what}: only our own script tag"
    );
}

#[test]
fn hostile_documents_show_as_text_on_every_page() {
    let dir = sample_dir();
    let s = serve(dir.path());
    let listing = get(&s, "/c/evil");
    assert_eq!(listing.status, 200);
    assert_inert(&listing, "collection page");
    assert!(
        listing
            .body
            .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
    );
    assert!(listing.csp.contains("script-src 'self'"), "{}", listing.csp);
    for h in HOSTILE {
        let doc = get(&s, &format!("/c/evil/d/{}", enc(h)));
        assert_eq!(doc.status, 200, "{h}");
        assert_inert(&doc, "document page");
    }
    let q = get(
        &s,
        &format!(
            "/c/evil/query?facet=text,list&filter={}&sort={}",
            enc(&format!("{{\"text\": {{\"$ne\": {:?}}}}}", HOSTILE[2])),
            enc(HOSTILE[1])
        ),
    );
    // The sort is not a valid path list: whatever the answer, nothing is markup.
    assert_inert(&q, "query page");
    let q = get(
        &s,
        &format!(
            "/c/evil/query?facet=text,list&projection={}",
            enc(HOSTILE[0])
        ),
    );
    assert_inert(&q, "query page with a bad projection");
    let q = get(&s, "/c/evil/query?facet=text,list");
    assert_eq!(q.status, 200);
    assert_inert(&q, "facets");
    let missing = get(&s, &format!("/c/{}", enc(HOSTILE[1])));
    assert_eq!(missing.status, 404);
    assert_inert(&missing, "error page");
    let missing = get(&s, &format!("/c/evil/d/x{}", enc(HOSTILE[1])));
    assert_inert(&missing, "missing document page");
    // The JSON twin keeps the text exactly.
    let j = get(&s, &format!("/c/evil/d/{}.json", enc(HOSTILE[1]))).json();
    assert_eq!(j["document"]["text"], HOSTILE[1]);
}

#[test]
fn hostile_urls_are_refused_and_no_file_outside_is_reachable() {
    let dir = sample_dir();
    let s = serve(dir.path());
    for (url, status) in [
        ("/c/..", 400),
        ("/c/..%2F..%2Fetc", 400),
        ("/c/people%2F..", 400),
        ("/c/peo%00ple", 400),
        ("/c/people/d/p%00", 400),
        ("/c/people?after=%00", 400),
        ("/t/..%2Fmanifest", 400),
        ("/t/%2E%2E", 400),
        ("/t/MANIFEST", 404),
        ("/t/wal", 404),
        ("/assets/..%2F..%2FCargo.toml", 400),
        ("/assets/style.css%00", 400),
        ("/etc/passwd", 404),
        ("/c/people/d/..%2F..%2F..%2Fetc%2Fpasswd", 404),
    ] {
        let a = get(&s, url);
        assert_eq!(a.status, status, "{url}: {}", a.body);
        assert!(!a.body.contains("root:"), "{url}");
    }
    let long_name = format!("/c/{}", "a".repeat(300));
    assert_eq!(get(&s, &long_name).status, 400);
    let long_id = format!("/c/people/d/{}", "a".repeat(stele::MAX_ID_BYTES + 1));
    assert_eq!(get(&s, &long_id).status, 400);
    let long_url = format!("/c/people?x={}", "a".repeat(20_000));
    assert_eq!(get(&s, &long_url).status, 414);
    // The JSON twin of an error says what and why.
    let j = get(&s, "/c/..%2Fx.json").json();
    assert_eq!(j["error"], "bad-url");
    assert!(j["message"].as_str().unwrap_or("").contains("slash"), "{j}");
}

#[test]
fn nothing_writes_only_get_and_head_are_served() {
    let dir = sample_dir();
    let s = serve(dir.path());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("http://{}/c/people/d/p001", s.addr());
    let post = agent.post(&url).send("{\"name\": \"changed\"}");
    let put = agent.put(&url).send("{}");
    let delete = agent.delete(&url).call();
    for (what, r) in [("POST", post), ("PUT", put), ("DELETE", delete)] {
        match r {
            Ok(resp) => assert_eq!(resp.status().as_u16(), 405, "{what}"),
            Err(e) => panic!("{what}: {e}"),
        }
    }
    let head = agent.head(&url).call().map(|r| r.status().as_u16());
    assert_eq!(head.ok(), Some(200));
    let j = get(&s, "/c/people/d/p001.json").json();
    assert_eq!(j["document"]["name"], "person 1");
}

#[test]
fn the_time_budget_stops_the_work_and_says_so() {
    let dir = sample_dir();
    {
        let db = match stele::Database::open(dir.path()) {
            Ok(db) => db,
            Err(e) => panic!("{e}"),
        };
        let mut b = db.batch();
        for i in 0..30_000 {
            let doc = format!("{{\"n\": {i}, \"pad\": \"{}\"}}", "x".repeat(40));
            if let Err(e) = b.put_json("many", &format!("m{i:06}"), doc.as_bytes()) {
                panic!("{e}");
            }
        }
        if let Err(e) = db.commit(b).and_then(|()| db.close()) {
            panic!("{e}");
        }
    }
    let s = serve_with(
        dir.path(),
        Options::default()
            .port(0)
            .time_limit(Duration::from_millis(1)),
    );
    // A sort on an unindexed field reads all 30,000 documents: far past 1 ms.
    let started = Instant::now();
    let a = get(
        &s,
        "/c/many/query.json?sort=-n&filter=%7B%22n%22%3A%7B%22%24gte%22%3A0%7D%7D",
    );
    assert_eq!(a.status, 503, "{}", a.body);
    assert_eq!(a.json()["error"], "time-budget");
    assert!(a.body.contains("time budget"), "{}", a.body);
    assert!(started.elapsed() < Duration::from_secs(5));
    let html = get(&s, "/c/many/query?facet=n");
    assert_eq!(html.status, 503);
    assert!(html.body.contains("time budget"), "{}", html.body);
    // With no budget at all even a page of documents stops, saying so.
    let zero = serve_with(
        dir.path(),
        Options::default().port(0).time_limit(Duration::ZERO),
    );
    let page = get(&zero, "/c/many.json");
    assert_eq!(page.status, 503, "{}", page.body);
    assert_eq!(page.json()["error"], "time-budget");
}

#[test]
fn other_hosts_get_a_warning_and_loopback_none() {
    let dir = sample_dir();
    let local = serve(dir.path());
    assert!(local.warning().is_none());
    assert!(local.url().starts_with("http://127.0.0.1:"));
    let open = serve_with(dir.path(), Options::default().host("0.0.0.0").port(0));
    let w = open.warning().unwrap_or("");
    assert!(w.contains("reachable from other machines"), "{w}");
    let taken =
        stele_serve::Server::start(dir.path(), Options::default().port(local.addr().port()));
    assert_eq!(taken.err().map(|e| e.kind()), Some("bind"));
    let none = stele_serve::Server::start(dir.path().join("nothing"), Options::default().port(0));
    assert!(none.is_err());
}

/// 8 clients, 2 workers, 40 requests each: every answer right (checked against a direct
/// read of the database), none lost. Bounded in count; loopback only.
#[test]
fn bounded_load_gets_right_answers() {
    let dir = sample_dir();
    let s = serve_with(dir.path(), Options::default().port(0).workers(2));
    let db = match stele::Database::open_read_only(dir.path()) {
        Ok(db) => db,
        Err(e) => panic!("{e}"),
    };
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (s, db) = (&s, &db);
            scope.spawn(move || {
                let snap = db.snapshot();
                for k in 0..40 {
                    let i = (t * 41 + k * 7) % common::PEOPLE;
                    let id = format!("p{i:03}");
                    if k % 2 == 0 {
                        let j = get(s, &format!("/c/people/d/{id}.json")).json();
                        let direct = snap
                            .get("people", &id)
                            .ok()
                            .flatten()
                            .and_then(|d| d.to_json().ok())
                            .unwrap_or_default();
                        assert_eq!(serde_json::to_string(&j["document"]).ok(), Some(direct));
                    } else {
                        let j = get(s, &format!("/c/people.json?after={id}&limit=5")).json();
                        let want: Vec<String> = snap
                            .ids_in(
                                "people",
                                (
                                    std::ops::Bound::Excluded(id.as_str()),
                                    std::ops::Bound::Unbounded,
                                ),
                            )
                            .take(5)
                            .filter_map(Result::ok)
                            .collect();
                        let got: Vec<String> = j["documents"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|d| d["id"].as_str().map(str::to_owned))
                            .collect();
                        assert_eq!(got, want);
                    }
                }
            });
        }
    });
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// 16 keep-alive clients connecting at the same instant are all answered within 2 s, every
/// request, during a 3 s run: none waits for a thread of tiny_http's connection pool (the
/// lost wake-up `kick.rs` works around). The race did not show in this process in six runs without the
/// kicker (it did in `serve_bench`, whose server is a child process in release mode: 3-4 of
/// 8 clients waited the whole run), so this guards the symptom, not the exact race.
#[test]
fn simultaneous_keep_alive_clients_are_all_answered() {
    let dir = sample_dir();
    let s = serve(dir.path());
    // A stalled connection is answered only once the others close, at the end of the run:
    // a run longer than the bound tells a stall from a slow answer on a loaded machine.
    let run = Duration::from_secs(3);
    let start = std::sync::Barrier::new(16);
    let worst = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (s, start) = (&s, &start);
                scope.spawn(move || {
                    let agent: ureq::Agent = ureq::Agent::config_builder()
                        .timeout_global(Some(Duration::from_secs(10)))
                        .build()
                        .into();
                    let url = format!("http://{}/c/people/d/p001.json", s.addr());
                    start.wait();
                    let began = Instant::now();
                    let mut worst = Duration::ZERO;
                    while began.elapsed() < run {
                        let t = Instant::now();
                        let ok = agent.get(&url).call().map(|r| r.status().as_u16() == 200);
                        worst = worst.max(t.elapsed());
                        assert_eq!(ok.ok(), Some(true));
                    }
                    worst
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Duration::MAX))
            .max()
            .unwrap_or(Duration::MAX)
    });
    assert!(worst < Duration::from_secs(2), "a request waited {worst:?}");
}
