//! The converter as used (the SIMD scanner of this CPU; one writer per option set, reused across
//! inputs so that it predicts key names from its previous document) against the reference (the
//! portable scanner, the converter before SIMD, with a fresh writer): the same document bytes or
//! the same error (reason, line, column) on any input.
//!
//! Input: one byte choosing the options, then documents separated by 0xFF (never valid in JSON
//! text), converted in order so that runs of similar documents exercise the prediction.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use stele_doc::{DocumentWriter, DuplicateKeys, KeyOrder, WriteOptions};

const OPTION_SETS: usize = 8;

fn options(selector: usize) -> WriteOptions {
    let mut o = WriteOptions::default();
    if selector & 1 != 0 {
        o = o.key_order(KeyOrder::Sorted);
    }
    if selector & 2 != 0 {
        o = o.duplicate_keys(DuplicateKeys::Reject).max_depth(6);
    }
    if selector & 4 != 0 {
        o = o.compress_strings(Some(16)).duplicate_keys(DuplicateKeys::FirstWins);
    }
    o
}

thread_local! {
    static FAST: RefCell<Vec<DocumentWriter>> = RefCell::new(
        (0..OPTION_SETS).map(|s| DocumentWriter::with_options(options(s))).collect(),
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let selector = usize::from(selector) % OPTION_SETS;
    let opts = options(selector);
    FAST.with(|writers| {
        let mut writers = writers.borrow_mut();
        let Some(fast) = writers.get_mut(selector) else {
            return;
        };
        for json in rest.split(|&b| b == 0xFF) {
            let got = fast.from_json(json);
            let want = DocumentWriter::with_options(opts.clone().portable_scanner(true)).from_json(json);
            assert_eq!(got, want, "options {selector}, input {:?}", String::from_utf8_lossy(json));
        }
    });
});
