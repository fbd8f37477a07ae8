//! The document writer's LZ4 encoder (`stele_doc::lz4`) against `lz4_flex`, whose blocks the
//! documents store: the same bytes for any input, and a limit that fails exactly when
//! `lz4_flex`'s block is longer.
//!
//! Input: one byte giving the limit's distance from `lz4_flex`'s length (-8 to +7), then the
//! bytes to compress. One encoder serves every input of a run, as in the writer.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use stele_doc::lz4::{Lz4Encoder, MAX_INPUT_BYTES};

thread_local! {
    static ENCODER: RefCell<Lz4Encoder> = RefCell::new(Lz4Encoder::new());
}

fuzz_target!(|data: &[u8]| {
    let Some((&slack, input)) = data.split_first() else {
        return;
    };
    if input.len() > MAX_INPUT_BYTES {
        return;
    }
    let want = lz4_flex::block::compress(input);
    let limit = (want.len() + 8).saturating_sub(usize::from(slack % 16));
    let mut out = vec![0; limit];
    let got = ENCODER.with(|enc| enc.borrow_mut().compress_within(input, &mut out));
    if want.len() <= limit {
        assert_eq!(got, Some(want.len()), "length, input {input:?}");
        assert_eq!(out.get(..want.len()), Some(&want[..]), "bytes, input {input:?}");
    } else {
        assert_eq!(got, None, "limit {limit} under {}", want.len());
    }
});
