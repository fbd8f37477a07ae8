//! Untrusted bytes as a durable-map root file (`roots/<name>`, 48 bytes), read as they are
//! and again with the checksum made right: an error, or a root whose encoding is exactly
//! these bytes (of an older version, should one be read: a root that reads back the same).
//! Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use stele_durable::{ROOT_VERSION, RootInfo};

fn check(bytes: &[u8]) {
    if let Ok(root) = RootInfo::decode(bytes, Path::new("roots/fuzz")) {
        let again = root.encode();
        if bytes.get(8..12) == Some(&ROOT_VERSION.to_le_bytes()[..]) {
            assert_eq!(
                again.as_slice(),
                bytes,
                "a root of the current version has one encoding"
            );
        } else {
            // A root of an older version (none is read yet) is written as the current one:
            // the same root, not the same bytes.
            let read =
                RootInfo::decode(&again, Path::new("roots/fuzz")).expect("a written root reads");
            assert_eq!(read, root, "an older root written again says the same");
        }
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
