//! Untrusted bytes as a durable-map root file (`roots/<name>`, 48 bytes), read as they are
//! and again with the checksum made right: an error, or a root whose encoding is exactly
//! these bytes. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use stele_durable::RootInfo;

fn check(bytes: &[u8]) {
    if let Ok(root) = RootInfo::decode(bytes, Path::new("roots/fuzz")) {
        assert_eq!(root.encode().as_slice(), bytes, "a root has one encoding");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= 40 {
        let mut fixed = data.to_vec();
        let sum = stele_table::checksum(&data[..40]).to_le_bytes();
        fixed.truncate(40);
        fixed.extend_from_slice(&sum);
        check(&fixed);
    }
});
