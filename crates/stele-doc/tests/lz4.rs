//! The document writer's LZ4 encoder (`stele_doc::lz4`) against `lz4_flex`, whose bytes the
//! documents store: the same compressed bytes for every input, and a limit that fails exactly
//! when `lz4_flex`'s output is longer.

use proptest::prelude::*;
use stele_doc::lz4::{Lz4Encoder, MAX_INPUT_BYTES};
use stele_doc::{DocumentWriter, WriteOptions};

/// Text with repeats at every distance: pieces drawn from a small set, so that matches of
/// all lengths (under 4, 4 to 18, long ones with length continuations) and literal runs of
/// all lengths occur, mixed with random bytes.
fn text() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => prop::sample::select(vec![
            &b"a"[..], b"ab", b"abc", b"abcd", b"the ", b"name\":\"", b"0123456789abcdef",
            b"\xC3\xA9t\xC3\xA9", b" lorem ipsum dolor sit amet, ",
        ])
        .prop_map(<[u8]>::to_vec),
        2 => prop::collection::vec(any::<u8>(), 0..40),
        1 => (any::<u8>(), 0..400usize).prop_map(|(b, n)| vec![b; n]),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

fn compress(enc: &mut Lz4Encoder, input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = vec![0; limit];
    let n = enc.compress_within(input, &mut out)?;
    out.truncate(n);
    Some(out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// One encoder for a sequence of inputs (entries of earlier inputs must read as empty);
    /// each with a limit around `lz4_flex`'s length.
    #[test]
    fn same_bytes_as_lz4_flex(
        inputs in prop::collection::vec((text(), -3i64..40), 1..6),
    ) {
        let mut enc = Lz4Encoder::new();
        for (input, slack) in &inputs {
            let want = lz4_flex::block::compress(input);
            let limit = usize::try_from(want.len() as i64 + slack).unwrap_or(0);
            let got = compress(&mut enc, input, limit);
            if want.len() <= limit {
                prop_assert_eq!(got, Some(want));
            } else {
                prop_assert_eq!(got, None);
            }
        }
    }
}

#[test]
fn inputs_near_the_table_limit() {
    let mut enc = Lz4Encoder::new();
    let base: Vec<u8> = (0..MAX_INPUT_BYTES + 10)
        .map(|i| (i * 7 % 251) as u8 ^ (i / 1000) as u8)
        .collect();
    for len in [MAX_INPUT_BYTES - 1, MAX_INPUT_BYTES] {
        let input = &base[..len];
        let want = lz4_flex::block::compress(input);
        assert_eq!(
            compress(&mut enc, input, want.len()),
            Some(want),
            "len {len}"
        );
    }
    assert_eq!(
        compress(&mut enc, &base[..MAX_INPUT_BYTES + 1], 1 << 20),
        None
    );
}

/// A string of 64 KiB or more (compressed by `lz4_flex` with its large table) must not change
/// how the writer compresses later strings: a writer's documents are the same bytes as a
/// fresh writer's, whatever it converted before.
#[test]
fn a_long_string_does_not_change_later_documents() {
    let long: String = (0..20_000).map(|i| format!("{} ", i % 977)).collect();
    assert!(long.len() >= usize::from(u16::MAX));
    let first = format!("{{\"long\":\"{long}\"}}");
    let later: Vec<String> = (0..40)
        .map(|k| {
            let words: String = (0..60)
                .map(|i| format!("w{} ", (i * k + i / 3) % 23))
                .collect();
            format!("{{\"text\":\"{words}\"}}")
        })
        .collect();
    for portable in [false, true] {
        let opts = WriteOptions::default().portable_scanner(portable);
        let mut used = DocumentWriter::with_options(opts.clone());
        used.from_json(first.as_bytes()).unwrap();
        for json in &later {
            let fresh = DocumentWriter::with_options(opts.clone()).from_json(json.as_bytes());
            assert_eq!(
                used.from_json(json.as_bytes()).unwrap(),
                fresh.unwrap(),
                "{json}"
            );
        }
    }
}
