//! Untrusted bytes as a value of a packs map (`_packs/<collection>`: `varint block number |
//! block`, a keyed block of documents or a stream block), stored under a key: byte 0 is the
//! key's length, then the key, then the value. Reading it must give an error, or the block
//! number and ids strictly ascending, the last one the key, each with its document; valid
//! documents packed again by the database's packer read back the same. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::compress::{BlockPacker, Dictionaries};
use stele::fuzzing::{SEED_DICTIONARY, read_packed_block};

fuzz_target!(|data: &[u8]| {
    let Some((&key_len, rest)) = data.split_first() else {
        return;
    };
    let Some((last_id, value)) = rest.split_at_checked(usize::from(key_len)) else {
        return;
    };
    let mut dicts = Dictionaries::new();
    dicts.insert(1, SEED_DICTIONARY).expect("a raw-content dictionary loads");
    let Ok((number, entries)) = read_packed_block(last_id, value, &dicts) else {
        return;
    };
    let ids: Vec<&[u8]> = entries.iter().map(|(id, _)| id.as_slice()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids ascend");
    assert_eq!(ids.last().copied(), Some(last_id), "the last id is the key");
    let docs: Vec<&[u8]> = entries.iter().map(|(_, d)| d.as_slice()).collect();
    // A keyed block hands out its values as stored: each is validated when read as a
    // document (a bad one is reported then). Only documents must pack again.
    if !docs.iter().all(|d| stele_doc::validate(d).is_ok()) {
        return;
    }
    let mut packer = BlockPacker::new(1, Some((1, SEED_DICTIONARY)))
        .expect("a packer")
        .streams(false);
    let mut block = Vec::new();
    packer
        .pack_documents(&ids, &docs, &mut block)
        .expect("what a block held packs again");
    let mut again = Vec::new();
    stele_table::varint::put(&mut again, number);
    again.extend_from_slice(&block);
    let read = read_packed_block(last_id, &again, &dicts).expect("a packed block reads");
    assert_eq!(read, (number, entries), "packed again, the block reads the same");
});
