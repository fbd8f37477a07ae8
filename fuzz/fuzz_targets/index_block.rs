//! Untrusted bytes as a block of a packed index (`stele::index::packed`: a format byte, the
//! key count, the raw length, a zstd frame of prefix-coded keys), as a scan reads it. A block
//! that reads holds its count of keys, strictly increasing, each starting with a byte above
//! 0x01; written again, it reads back to the same keys. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::fuzzing::{read_index_block, write_index_block};

fuzz_target!(|data: &[u8]| {
    let Ok(keys) = read_index_block(data) else {
        return;
    };
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys increase");
    assert!(keys.iter().all(|k| k.first().is_some_and(|&b| b > 1)));
    if keys.is_empty() {
        return;
    }
    let again = write_index_block(&keys).expect("a block of keys that read writes");
    assert_eq!(read_index_block(&again).expect("a written block reads"), keys);
});
