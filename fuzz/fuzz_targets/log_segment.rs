//! Untrusted bytes as a write-ahead log segment (`wal/<seq>.log`), as opening a database reads
//! it: the whole records at its start, then a clean end, zeroes, or the reason it stops. The
//! records read must be exactly what the log writer writes for their batches. The bytes are
//! read as they are, and again with every record's checksum made right (so that the fuzzer
//! reaches the payload decoder, which a 64-bit checksum would otherwise keep it from).
//! Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::fuzzing::{read_log_segment, with_log_checksums};

fn check(bytes: &[u8]) {
    let seg = read_log_segment(bytes).expect("batches read from a log write again");
    assert!(seg.valid <= bytes.len());
    assert_eq!(
        seg.reencoded.as_slice(),
        &bytes[..seg.valid],
        "the records read are the writer's bytes for their batches"
    );
    if seg.stopped.is_none() {
        assert!(bytes[seg.valid..].iter().all(|&b| b == 0), "a clean end is zeroes");
    }
    let again = read_log_segment(&seg.reencoded).expect("a written log reads");
    assert_eq!(
        (again.batches, again.valid, again.stopped),
        (seg.batches, seg.reencoded.len(), None)
    );
}

fuzz_target!(|data: &[u8]| {
    check(data);
    check(&with_log_checksums(data));
});
