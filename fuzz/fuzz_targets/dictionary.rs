//! Untrusted bytes as a compression dictionary as the database stores it: a key of the
//! meta collection (`dict/<collection>/<id, 10 digits>`; byte 0 is its length) and the
//! dictionary as stored (the rest: compressed, or its bytes as they are). A key that parses
//! names the same collection and id when written canonically; a stored value that loads
//! stores again as a value that loads to the same dictionary; a dictionary that loads for
//! decoding compresses a block that decodes back with it. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::compress::{
    BlockPacker, Decoder, Dictionaries, dictionary_from_stored, dictionary_to_stored,
};
use stele::fuzzing::parse_dictionary_key;

const DOCS: [&[u8]; 3] = [
    b"{\"id\":1,\"name\":\"user number one\"}",
    b"{\"id\":2,\"name\":\"user number two\"}",
    b"{\"id\":3,\"name\":\"user number three\",\"tags\":[\"a\"]}",
];

fuzz_target!(|data: &[u8]| {
    let Some((&key_len, rest)) = data.split_first() else {
        return;
    };
    let Some((key, bytes)) = rest.split_at_checked(usize::from(key_len)) else {
        return;
    };
    let id = match parse_dictionary_key(key) {
        Some((collection, id)) => {
            let canonical = format!("dict/{collection}/{id:010}");
            assert_eq!(
                parse_dictionary_key(canonical.as_bytes()),
                Some((collection, id)),
                "a canonical key parses to what it was written from"
            );
            id
        }
        None => 1,
    };
    let Ok(bytes) = dictionary_from_stored(bytes) else {
        return;
    };
    let again = dictionary_to_stored(&bytes).expect("a dictionary stores");
    assert_eq!(
        dictionary_from_stored(&again).expect("a stored dictionary loads"),
        bytes,
        "a dictionary stored again loads as itself"
    );
    let bytes = &bytes[..];
    let mut dicts = Dictionaries::new();
    if dicts.insert(id, bytes).is_err() {
        return;
    }
    let Ok(mut packer) = BlockPacker::new(1, Some((id, bytes))) else {
        return;
    };
    let mut block = Vec::new();
    packer.pack(&DOCS, &mut block).expect("a block packs");
    let decoded = Decoder::new()
        .expect("a decoder")
        .decode_block(&block, &dicts)
        .expect("a block packed with a dictionary decodes with it");
    assert_eq!(decoded.iter().collect::<Vec<_>>(), DOCS);
});
