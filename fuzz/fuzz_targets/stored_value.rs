//! Untrusted bytes as a stored document value (`stele::compress`: raw, zstd, zstd with a
//! dictionary, a block of documents, a keyed block, a removal mark): decoding must return an error or
//! exactly what the header promises. Never a panic, never an allocation the value's size
//! cannot justify.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::compress::{Codec, Decoder, Dictionaries, parse_header};

/// A raw-content dictionary under id 1, so that values naming it reach the decompressor
/// (the seeds were compressed with it).
const DICTIONARY: &[u8] = b"{\"id\":1,\"name\":\"user number\",\"email\":\"user@example.com\",\"tags\":[\"a\",\"b\"]}";

fuzz_target!(|data: &[u8]| {
    let mut dicts = Dictionaries::new();
    dicts.insert(1, DICTIONARY).expect("a raw-content dictionary loads");
    let mut dec = Decoder::new().expect("a decoder");
    let header = parse_header(data);
    if let Ok(doc) = dec.decode(data, &dicts) {
        let h = header.as_ref().expect("a value that decodes has a header");
        assert_eq!(doc.len() as u64, h.raw_len);
        assert!(!matches!(h.codec, Codec::Block | Codec::KeyedBlock));
    }
    if let Ok(block) = dec.decode_block(data, &dicts) {
        let h = header.as_ref().expect("a value that decodes has a header");
        assert_eq!(block.len(), h.docs as usize);
        let docs_len: u64 = block.iter().map(|d| d.len() as u64).sum();
        if h.codec == Codec::Block {
            assert!(docs_len < h.raw_len, "the length table is part of raw_len");
        } else if h.codec == Codec::KeyedBlock {
            // Keys then values: the keys strictly ascending (front coding rebuilt them), the
            // values inside the frame with their lengths.
            let n = block.len() / 2;
            let keys: Vec<&[u8]> = block.iter().take(n).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys ascend");
            let values_len: u64 = block.iter().skip(n).map(|d| d.len() as u64).sum();
            assert!(values_len < h.raw_len, "the tables are part of raw_len");
        } else {
            assert_eq!(docs_len, h.raw_len);
        }
    }
});
