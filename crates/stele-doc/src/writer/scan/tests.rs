//! Every scanner against the portable one, on inputs built to hit block edges: specials and
//! whitespace ends at each position of a 16- and 32-byte block, non-ASCII before and after them.

use proptest::prelude::*;

use super::*;

/// Runs `check` with every scanner this CPU has.
fn each_scanner(
    mut check: impl FnMut(&str, &dyn Fn(&[u8], usize) -> (usize, bool), &dyn Fn(&[u8], usize) -> usize),
) {
    check("portable", &|b, i| Portable.find_special(b, i), &|b, i| {
        Portable.skip_ws(b, i)
    });
    #[cfg(target_arch = "x86_64")]
    {
        let sse2 = x86::Sse2;
        check("sse2", &|b, i| sse2.find_special(b, i), &|b, i| {
            sse2.skip_ws(b, i)
        });
        if let Some(avx2) = x86::Avx2::new() {
            check("avx2", &|b, i| avx2.find_special(b, i), &|b, i| {
                avx2.skip_ws(b, i)
            });
        }
    }
}

/// The answers by definition, one byte at a time.
fn reference(input: &[u8], i: usize) -> ((usize, bool), usize) {
    (find_special_bytewise(input, i), skip_ws_bytewise(input, i))
}

fn agree(input: &[u8]) {
    each_scanner(|name, find, skip| {
        for i in 0..=input.len() {
            let (want_find, want_skip) = reference(input, i);
            assert_eq!(
                find(input, i),
                want_find,
                "{name} find_special at {i} of {input:?}"
            );
            assert_eq!(
                skip(input, i),
                want_skip,
                "{name} skip_ws at {i} of {input:?}"
            );
        }
    });
}

#[test]
fn block_edges() {
    for len in [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 65, 100] {
        for at in 0..len {
            for special in [b'"', b'\\', 0x00, 0x1F, b'\n'] {
                let mut plain = vec![b'a'; len];
                plain[at] = special;
                agree(&plain);
                let mut ws = vec![b' '; len];
                ws[at] = special;
                agree(&ws);
            }
            let mut high = vec![b'x'; len];
            high[at] = 0xC3;
            agree(&high);
            if at + 1 < len {
                high[at + 1] = b'"';
                agree(&high);
            }
        }
    }
    // Bytes just around the classes' limits.
    let edges: Vec<u8> = (0u8..=255).collect();
    agree(&edges);
    agree(&edges.iter().rev().copied().collect::<Vec<_>>());
}

proptest! {
    #[test]
    fn scanners_agree(input in prop::collection::vec(
        prop_oneof![
            Just(b' '), Just(b'\t'), Just(b'\n'), Just(b'\r'), Just(b'"'), Just(b'\\'),
            Just(0x1Fu8), Just(0x20u8), Just(0x7Fu8), Just(0x80u8), Just(0xFFu8), any::<u8>(),
            b'a'..=b'z',
        ],
        0..200,
    )) {
        agree(&input);
    }

    #[test]
    fn fused_numbers_match_two_passes(text in "-?[0-9]{0,25}(\\.[0-9]{0,25})?([eE][+-]?[0-9]{0,3})?[,x0-9]?") {
        let bytes = text.as_bytes();
        let fused = number::parse_number(bytes);
        let two_pass = Portable.number(bytes);
        prop_assert_eq!(fused, two_pass, "{}", text);
    }
}

#[test]
fn fused_numbers_at_digit_count_limits() {
    let mut texts = vec![
        "0".to_owned(),
        "-0".to_owned(),
        "-0.0".to_owned(),
        "01".to_owned(),
        "-".to_owned(),
        "1.".to_owned(),
        "1e".to_owned(),
        "1e+".to_owned(),
        "9223372036854775807".to_owned(),
        "9223372036854775808".to_owned(),
        "-9223372036854775808".to_owned(),
        "-9223372036854775809".to_owned(),
        "18446744073709551615".to_owned(),
        "18446744073709551616".to_owned(),
        "-9999999999999999999".to_owned(),
        "0.0000000000000000000000001".to_owned(),
        "12345678.12345678".to_owned(),
    ];
    for digits in 1..=22 {
        for lead in ["1", "9", "0."] {
            let body = format!("{lead}{}", "9".repeat(digits));
            texts.push(body.clone());
            texts.push(format!("-{body}"));
            texts.push(format!("{body}e5"));
            texts.push(format!("1.{}", "7".repeat(digits)));
        }
    }
    for text in texts {
        let bytes = text.as_bytes();
        assert_eq!(
            number::parse_number(bytes),
            Portable.number(bytes),
            "{text}"
        );
    }
}
