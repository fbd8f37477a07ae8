//! Untrusted bytes as a stored document value (`stele::compress`: raw, zstd, zstd with a
//! dictionary, a block of documents, a keyed block, a stream block, a removal mark): decoding
//! must return an error or exactly what the header promises, and a stream block's entries an
//! error or a valid document. Never a panic, never an allocation the value's size cannot
//! justify.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::compress::{Codec, Decoder, Dictionaries, parse_header};

/// A raw-content dictionary under id 1, so that values naming it reach the decompressor
/// (the seeds were compressed with it).
const DICTIONARY: &[u8] = stele::fuzzing::SEED_DICTIONARY;

fuzz_target!(|data: &[u8]| {
    let mut dicts = Dictionaries::new();
    dicts.insert(1, DICTIONARY).expect("a raw-content dictionary loads");
    let mut dec = Decoder::new().expect("a decoder");
    let header = parse_header(data);
    if let Ok(doc) = dec.decode(data, &dicts) {
        let h = header.as_ref().expect("a value that decodes has a header");
        assert_eq!(doc.len() as u64, h.raw_len);
        assert!(!matches!(
            h.codec,
            Codec::Block | Codec::KeyedBlock | Codec::StreamBlock | Codec::TextBlock
        ));
    }
    if let Ok(block) = dec.decode_block(data, &dicts) {
        let h = header.as_ref().expect("a value that decodes has a header");
        assert_eq!(block.len(), h.docs as usize);
        let docs_len: u64 = block.iter().map(|d| d.len() as u64).sum();
        if h.codec == Codec::Block {
            assert!(docs_len < h.raw_len, "the length table is part of raw_len");
        } else if matches!(
            h.codec,
            Codec::KeyedBlock | Codec::StreamBlock | Codec::TextBlock
        ) {
            // Keys then values: the keys strictly ascending (front coding or counting rebuilt
            // them), the values inside the frame with their lengths.
            let n = block.len() / 2;
            let keys: Vec<&[u8]> = block.iter().take(n).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys ascend");
            let values_len: u64 = block.iter().skip(n).map(|d| d.len() as u64).sum();
            assert!(values_len < h.raw_len, "the tables are part of raw_len");
            for i in n..block.len() {
                let doc = block.document(i).expect("an entry in range");
                if h.codec == Codec::KeyedBlock {
                    assert_eq!(doc.as_deref().ok(), block.get(i), "documents as stored");
                } else if let Ok(doc) = doc {
                    let stored = block.get(i).expect("an entry in range");
                    // Stream and text forms are rebuilt (in either codec: a reader goes by
                    // the entry's first byte).
                    let rebuilt = stele_doc::stream::is_stream(stored)
                        || stele::compress::is_text_form(stored);
                    if rebuilt {
                        stele_doc::validate(&doc).expect("a rebuilt document is valid");
                    } else {
                        assert_eq!(&*doc, stored, "documents stored as such come back as such");
                    }
                }
            }
        } else {
            assert_eq!(docs_len, h.raw_len);
        }
    }
});
