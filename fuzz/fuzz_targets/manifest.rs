//! Untrusted bytes as a `MANIFEST` file (versions 1 to 3), read as it is and again with its
//! checksum made right (so that the fuzzer gets past it). A manifest that reads writes
//! bytes that read back to the same manifest; a version 3 manifest (the version written)
//! writes exactly its own bytes. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::fuzzing::reencode_manifest;

fn check(bytes: &[u8]) {
    let Ok(again) = reencode_manifest(bytes) else {
        return;
    };
    let third = reencode_manifest(&again).expect("a written manifest reads");
    assert_eq!(third, again, "writing a manifest read back changes nothing");
    if bytes.get(8..12) == Some(&3u32.to_le_bytes()[..]) {
        assert_eq!(again, bytes, "a version 3 manifest has one encoding");
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
