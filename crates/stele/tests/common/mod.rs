//! Test data shared by the test files (each test file is its own crate and includes this).

#[allow(
    dead_code,
    reason = "each test file is its own crate, and not all of them write orders or log lines"
)]
mod docs;
#[allow(
    unused_imports,
    reason = "each test file is its own crate, and not all of them write orders or log lines"
)]
pub use docs::{log_json, order_json};

/// Slices of the shared data sets.
#[allow(
    dead_code,
    reason = "each test file is its own crate, and not all of them read the shared data"
)]
pub mod data;

/// What the Arrow tests share.
#[cfg(feature = "arrow")]
#[allow(
    dead_code,
    reason = "each test file is its own crate, and uses some of the helpers"
)]
pub mod arrow;

/// JSON text of sensor reading `i`: a second kind of document next to the order and customer
/// documents of the tests, to make the compression ratio drift. Minified, so that it equals
/// the stored document's JSON output.
#[allow(
    dead_code,
    reason = "each test file is its own crate, and not all of them write sensor documents"
)]
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

/// Every document of `collection` in `snap`, as minified JSON by id.
#[allow(
    dead_code,
    reason = "each test file is its own crate, and not all of them read whole collections"
)]
pub fn content(
    snap: &stele::Snapshot,
    collection: &str,
) -> std::collections::BTreeMap<String, String> {
    snap.iter(collection)
        .map(|e| {
            let (id, d) = e.unwrap();
            (id, d.to_json().unwrap())
        })
        .collect()
}

/// Batches numbered 1, 2, 3 ... for the backup tests (`tests/backup.rs`, `backup_faults.rs`).
#[allow(
    dead_code,
    reason = "each test file is its own crate, and only the backup tests use these"
)]
pub mod backups;
