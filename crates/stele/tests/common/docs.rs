//! Kinds of JSON documents that compress differently, for tests of dictionary training and
//! removal: shared by the integration tests (through `common`) and the database's unit tests
//! (`src/db_dict_tests.rs`, by path). No dependency on the crate, so both can include it.

/// JSON text of order `i`. Minified, so that it equals the stored document's JSON output.
pub fn order_json(i: u32) -> String {
    format!(
        r#"{{"order":"o-{i}","customer":"c-{}","total":{}.{},"status":"shipped","items":[{{"sku":"s-{}","qty":{}}}]}}"#,
        i % 97,
        i % 500,
        i % 100,
        i % 31,
        i % 5
    )
}

/// JSON text of log line `i`: compresses badly with a dictionary of orders, and orders
/// with one of log lines. Minified.
pub fn log_json(i: u32) -> String {
    format!(
        r#"{{"level":"warn","logger":"net.http.client","message":"retry {} of request {i} to host-{}.example.org timed out","at":{}}}"#,
        i % 4,
        i % 17,
        1_700_000_000 + u64::from(i)
    )
}
