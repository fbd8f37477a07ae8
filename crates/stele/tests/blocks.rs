//! Blocks of documents (codec 3), keyed blocks (codec 5, counted keys too) and stream blocks (codec 6, what
//! the database packs documents into): round trips, and decoded frames whose tables do not
//! fit or whose stream forms do not decode.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use proptest::prelude::*;
use stele::Error;
use stele::compress::{BlockPacker, Codec, Decoder, Dictionaries, MAX_KEY_BYTES, parse_header};

/// A value of `codec` around `frame` (the decoded frame: its tables, then the values) as the
/// codec writes it: no dictionary, `count` documents (or keys).
fn block_value(codec: Codec, count: u64, frame: &[u8]) -> Vec<u8> {
    use zstd::zstd_safe::{CParameter, FrameFormat};
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    for p in [
        CParameter::Format(FrameFormat::Magicless),
        CParameter::ChecksumFlag(false),
        CParameter::DictIdFlag(false),
        CParameter::ContentSizeFlag(false),
    ] {
        c.set_parameter(p).unwrap();
    }
    let z = c.compress(frame).unwrap();
    let mut v = vec![codec as u8, 0];
    for x in [count, frame.len() as u64] {
        let mut x = x;
        while x >= 0x80 {
            v.push((x as u8) | 0x80);
            x >>= 7;
        }
        v.push(x as u8);
    }
    v.extend_from_slice(&z);
    v
}

/// `dec` refuses each `(count, frame)` as a `codec` value with a corrupt-value error naming
/// the problem, and still decodes `good` afterwards.
fn assert_refused(codec: Codec, cases: &[(u64, &[u8], &str)], good: &[u8]) {
    let dicts = Dictionaries::new();
    let mut dec = Decoder::new().unwrap();
    for &(count, frame, expect) in cases {
        let v = block_value(codec, count, frame);
        let err = dec.decode_block(&v, &dicts).unwrap_err();
        assert!(
            matches!(err, Error::CorruptValue { .. }) && err.to_string().contains(expect),
            "{codec:?} {count} {frame:?}: {err}"
        );
    }
    assert!(dec.decode_block(good, &dicts).is_ok());
}

/// The length table inside a block's frame is untrusted too: it must cover the documents
/// exactly, and a count the decoded size cannot hold is refused before decoding.
#[test]
fn block_length_tables_that_do_not_fit_are_refused() {
    let dicts = Dictionaries::new();
    // Well formed: lengths 3 and 2, then "abcde".
    let good = block_value(Codec::Block, 2, b"\x03\x02abcde");
    let b = Decoder::new().unwrap().decode_block(&good, &dicts).unwrap();
    assert_eq!(b.iter().collect::<Vec<_>>(), [&b"abc"[..], b"de"]);
    assert_eq!(parse_header(&good).unwrap().docs, 2);
    assert_refused(
        Codec::Block,
        &[
            // Lengths add up to more than the frame holds.
            (2, b"\x03\x09abcde", "add up to"),
            // And to less.
            (2, b"\x01\x01abcde", "add up to"),
            // The table ends inside a varint.
            (2, b"\x03\x82", "cut short"),
            // More documents than the frame has bytes.
            (9, b"\x01\x01ab", "claims 9 documents"),
        ],
        &good,
    );
}

/// Keys "ab" and "ac" (the second shares "a") with values "xyz" and "w".
const GOOD_KEYED: &[u8] = b"\x00\x02ab\x01\x01c\x03\x01xyzw";

#[test]
fn keyed_block_tables_that_do_not_fit_are_refused() {
    let good = block_value(Codec::KeyedBlock, 2, GOOD_KEYED);
    let b = Decoder::new()
        .unwrap()
        .decode_block(&good, &Dictionaries::new())
        .unwrap();
    assert_eq!(
        b.iter().collect::<Vec<_>>(),
        [&b"ab"[..], b"ac", b"xyz", b"w"]
    );
    assert_eq!(parse_header(&good).unwrap().docs, 4);
    let too_long = {
        let mut f = vec![0x00];
        let n = MAX_KEY_BYTES + 1;
        f.extend_from_slice(&[(n as u8) | 0x80, ((n >> 7) as u8) | 0x80, (n >> 14) as u8]);
        f.extend(std::iter::repeat_n(b'k', n));
        f.extend_from_slice(b"\x00");
        f
    };
    assert_refused(
        Codec::KeyedBlock,
        &[
            // The second key shares 3 bytes with a key of 2.
            (2, b"\x00\x02ab\x03\x01c\x03\x01xyzw", "shares 3 bytes"),
            // The second key adds nothing: equal to the first.
            (2, b"\x00\x02ab\x02\x00\x03\x01xyzw", "adds 0"),
            // The second key is smaller than the first ("aa" after "ab").
            (2, b"\x00\x02ab\x01\x01a\x03\x01xyzw", "not greater"),
            // A first key cannot share anything (a first byte 1 says the keys are counted).
            (1, b"\x02\x01a\x01x", "shares 2 bytes"),
            // Counted keys: "a" has no number to count up, "9" none that keeps its width.
            (2, b"\x01\x01a\x01\x00x", "does not follow"),
            (2, b"\x01\x019\x01\x00x", "does not follow"),
            // A counted first key runs past the frame.
            (2, b"\x01\x09abcdefg", "cut short"),
            // A suffix runs past the frame.
            (1, b"\x00\x09ab", "cut short"),
            // Value lengths add up to more, and to less, than the frame holds.
            (2, b"\x00\x02ab\x01\x01c\x03\x05xyzw", "add up to"),
            (2, b"\x00\x02ab\x01\x01c\x01\x01xyzw", "add up to"),
            // The value lengths end inside a varint.
            (2, b"\x00\x02ab\x01\x01c\x83", "cut short"),
            // More keys than the decoded size can hold (three bytes each at least).
            (4, b"\x00\x01a\x01x", "claims 4 documents"),
            // A key longer than any key may be.
            (1, &too_long, "at most 65536"),
        ],
        &good,
    );
}

#[test]
fn every_damaged_byte_or_cut_of_a_keyed_block_is_an_error_or_a_valid_block() {
    let keys: Vec<String> = (0..200).map(|i| format!("user/{:04}", i * 7)).collect();
    let values: Vec<String> = (0..200)
        .map(|i| format!("{{\"n\":{i},\"name\":\"name {i}\"}}"))
        .collect();
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    let mut packer = BlockPacker::new(9, None).unwrap();
    let mut good = Vec::new();
    packer.pack_keyed(&keys, &values, &mut good).unwrap();
    let dicts = Dictionaries::new();
    let mut dec = Decoder::new().unwrap();
    for cut in 0..good.len() {
        assert!(
            dec.decode_block(&good[..cut], &dicts).is_err(),
            "cut at {cut}"
        );
    }
    for at in 0..good.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut v = good.clone();
            v[at] ^= flip;
            if let Ok(b) = dec.decode_block(&v, &dicts) {
                // Whatever decodes is a well-formed block: keys ascending, one value each.
                let h = parse_header(&v).unwrap();
                assert_eq!(b.len(), h.docs as usize);
            }
        }
    }
    assert!(dec.decode_block(&good, &dicts).is_ok());
}

/// Documents of several shapes, as the database writes them.
fn sample_documents(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let json = format!(
                r#"{{"id":{i},"name":"name {i}","tags":["t{}","u"],"price":{}.{:02},"nested":{{"ok":{},"note":null}}}}"#,
                i % 7,
                i * 3,
                i % 100,
                i % 2 == 0
            );
            stele_doc::from_json_with(json.as_bytes(), stele::write_options()).unwrap()
        })
        .collect()
}

#[test]
fn every_damaged_byte_or_cut_of_a_stream_block_is_an_error_or_valid_documents() {
    let keys: Vec<String> = (0..150).map(|i| format!("doc/{i:04}")).collect();
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let docs = sample_documents(150);
    let values: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let mut packer = BlockPacker::new(9, None).unwrap();
    let mut good = Vec::new();
    assert_eq!(
        packer.pack_documents(&keys, &values, &mut good).unwrap(),
        Codec::StreamBlock
    );
    let dicts = Dictionaries::new();
    let mut dec = Decoder::new().unwrap();
    let b = dec.decode_block(&good, &dicts).unwrap();
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(&*b.document(150 + i).unwrap().unwrap(), d.as_slice());
    }
    for cut in 0..good.len() {
        assert!(
            dec.decode_block(&good[..cut], &dicts).is_err(),
            "cut at {cut}"
        );
    }
    let mut rebuilt_damaged = 0;
    for at in 0..good.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut v = good.clone();
            v[at] ^= flip;
            let Ok(b) = dec.decode_block(&v, &dicts) else {
                continue;
            };
            // Whatever decodes is a well-formed block, and every entry reads as a valid
            // document or fails to with an error.
            assert_eq!(b.len(), parse_header(&v).unwrap().docs as usize);
            for i in 150..300 {
                if let Ok(doc) = b.document(i).unwrap()
                    && stele_doc::stream::is_stream(b.get(i).unwrap())
                {
                    stele_doc::validate(&doc).unwrap();
                    rebuilt_damaged += 1;
                }
            }
        }
    }
    assert!(
        rebuilt_damaged > 0,
        "some damage decodes (zstd frames carry no checksum)"
    );
}

#[test]
fn pack_keyed_refuses_unordered_keys_and_missing_values() {
    let mut packer = BlockPacker::new(3, None).unwrap();
    let mut out = Vec::new();
    let err = |r: stele::Result<()>| r.unwrap_err().to_string();
    assert!(err(packer.pack_keyed(&[b"b", b"a"], &[b"1", b"2"], &mut out)).contains("not greater"));
    assert!(err(packer.pack_keyed(&[b"a", b"a"], &[b"1", b"2"], &mut out)).contains("not greater"));
    assert!(err(packer.pack_keyed(&[b"a"], &[b"1", b"2"], &mut out)).contains("one value per key"));
    assert!(err(packer.pack_keyed(&[], &[], &mut out)).contains("1 to"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any ascending keys (short ones, so that prefixes repeat) and values come back as
    /// they went in, with and without a dictionary.
    #[test]
    fn keyed_blocks_round_trip(
        entries in proptest::collection::btree_map(
            proptest::collection::vec(0u8..4, 0..12),
            proptest::collection::vec(any::<u8>(), 0..40),
            1..300,
        ),
        level in 1i32..10,
    ) {
        let entries: BTreeMap<Vec<u8>, Vec<u8>> = entries;
        let keys: Vec<&[u8]> = entries.keys().map(Vec::as_slice).collect();
        let values: Vec<&[u8]> = entries.values().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        BlockPacker::new(level, None).unwrap().pack_keyed(&keys, &values, &mut out).unwrap();
        prop_assert_eq!(out[0], Codec::KeyedBlock as u8);
        let b = Decoder::new().unwrap().decode_block(&out, &Dictionaries::new()).unwrap();
        let got: Vec<&[u8]> = b.iter().collect();
        let want: Vec<&[u8]> = keys.iter().chain(values.iter()).copied().collect();
        prop_assert_eq!(got, want);
    }

    /// Documents of any JSON text, packed by `pack_documents` in whichever form, come back
    /// byte for byte through `Block::document`.
    #[test]
    fn documents_round_trip_through_either_form(
        texts in proptest::collection::vec(
            prop_oneof![
                "-?[1-9][0-9]{0,18}",
                r#"\{"a":[1-9][0-9]{0,3}(\.[0-9]{1,3})?,"b":"[a-z ]{0,30}"\}"#,
                r#"\[("[a-z]{0,5}",){0,6}null\]"#,
            ],
            1..120,
        ),
        level in 1i32..10,
    ) {
        let docs: Vec<Vec<u8>> = texts
            .iter()
            .map(|t| stele_doc::from_json_with(t.as_bytes(), stele::write_options()).unwrap())
            .collect();
        let keys: Vec<String> = (0..docs.len()).map(|i| format!("{i:06}")).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let values: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        let mut packer = BlockPacker::new(level, None).unwrap();
        let codec = packer.pack_documents(&keys, &values, &mut out).unwrap();
        prop_assert_eq!(out[0], codec as u8);
        let b = Decoder::new().unwrap().decode_block(&out, &Dictionaries::new()).unwrap();
        for (i, d) in docs.iter().enumerate() {
            prop_assert_eq!(b.get(i).unwrap(), keys[i]);
            prop_assert_eq!(&*b.document(docs.len() + i).unwrap().unwrap(), d.as_slice());
        }
    }
}
