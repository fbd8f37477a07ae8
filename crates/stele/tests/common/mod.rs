//! Test data shared by the test files (each test file is its own crate and includes this).

/// JSON text of sensor reading `i`: a second kind of document next to the order and customer
/// documents of the tests, to make the compression ratio drift. Minified, so that it equals
/// the stored document's JSON output.
pub fn sensor_json(i: u32) -> String {
    format!(
        r#"{{"sensor":"probe-{}","reading":{{"celsius":{}.{},"humidity":{}}},"site":"north field {}","firmware":"v2.{}.7"}}"#,
        i % 13,
        i % 40,
        i % 10,
        i % 100,
        i % 7,
        i % 3
    )
}
