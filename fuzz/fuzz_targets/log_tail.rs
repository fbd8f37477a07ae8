//! A write-ahead log segment as a reader process tails it while the writer appends: the
//! bytes written so far read after every few more bytes (the step is the input's first
//! byte plus one), so that each read ends in a torn record, or in garbage the fuzzer made.
//! A torn or garbage tail is "not written yet": the reader takes exactly the whole records
//! that opening the database reads from the whole segment, in order, nothing from the tail
//! and nothing twice; the header it keeps of its last record (to notice the writer cutting
//! the log back) is that record's. As read, and with every checksum made right (so that the
//! payload decoder is reached). Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::fuzzing::{read_log_segment, tail_log_segment, with_log_checksums};

fn check(step_bytes: usize, bytes: &[u8]) {
    let whole = read_log_segment(bytes).expect("batches read from a log write again");
    let tailed = tail_log_segment(bytes, step_bytes).expect("batches tailed write again");
    assert_eq!(tailed.read_bytes, whole.valid, "the reader stops where opening does");
    assert_eq!(tailed.batches, whole.batches);
    assert_eq!(tailed.reencoded, whole.reencoded, "the same batches, in order");
    assert!(tailed.last_header_matches);
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, bytes)) = data.split_first() else {
        return;
    };
    let step_bytes = usize::from(step) + 1;
    check(step_bytes, bytes);
    check(step_bytes, &with_log_checksums(bytes));
});
