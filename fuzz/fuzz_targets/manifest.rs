//! Untrusted bytes as a `MANIFEST` file (versions 1 to the current one), read as it is and
//! again with its checksum made right (so that the fuzzer gets past it). A manifest that
//! reads writes bytes (as the current version) that read back to the same manifest; a
//! manifest of the current version writes exactly its own bytes, one of an older version
//! bytes that say the same (`manifest_meaning`: a version 3 manifest is written again as
//! the current version, never byte for byte). Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::fuzzing::{MANIFEST_VERSION, manifest_meaning, manifest_version, reencode_manifest};

fn check(bytes: &[u8]) {
    let Ok(again) = reencode_manifest(bytes) else {
        return;
    };
    let third = reencode_manifest(&again).expect("a written manifest reads");
    assert_eq!(third, again, "writing a manifest read back changes nothing");
    assert_eq!(manifest_version(&again), Some(MANIFEST_VERSION));
    if manifest_version(bytes) == Some(MANIFEST_VERSION) {
        assert_eq!(
            again, bytes,
            "a manifest of the current version has one encoding"
        );
    } else {
        assert_eq!(
            manifest_meaning(&again).ok(),
            manifest_meaning(bytes).ok(),
            "an older manifest written again says the same"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Some(body_len) = data.len().checked_sub(8) {
        let mut fixed = data.to_vec();
        let sum = stele_table::checksum(&data[..body_len]).to_le_bytes();
        fixed[body_len..].copy_from_slice(&sum);
        check(&fixed);
    }
});
