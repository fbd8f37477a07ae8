//! JSONTestSuite: every `y_` file accepted and round-tripped, every `n_` file rejected, and the
//! `i_` files decided as `docs/FORMAT.md` lists.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use crate::common;

use std::path::PathBuf;

fn suite() -> Vec<(String, Vec<u8>)> {
    let dir: PathBuf = common::data_dir().join("conformance/JSONTestSuite/test_parsing");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

#[test]
fn accepts_and_round_trips_every_y_file() {
    let mut count = 0;
    for (name, input) in suite().iter().filter(|(n, _)| n.starts_with("y_")) {
        let bytes = stele_doc::from_json(input).unwrap_or_else(|e| panic!("{name}: {e}"));
        let doc = stele_doc::Document::new(bytes.as_slice()).unwrap();
        let ours = common::exact(doc.to_json().as_bytes());
        assert_eq!(ours, common::exact(input), "{name}");
        count += 1;
    }
    assert!(count >= 90, "only {count} y_ files");
}

#[test]
fn rejects_every_n_file() {
    let mut count = 0;
    for (name, input) in suite().iter().filter(|(n, _)| n.starts_with("n_")) {
        let result = stele_doc::from_json(input);
        assert!(
            result.is_err(),
            "{name} accepted: {:?}",
            String::from_utf8_lossy(input)
        );
        count += 1;
    }
    assert!(count >= 180, "only {count} n_ files");
}

/// Our decision for each implementation-defined file; FORMAT.md lists the same table.
const I_CHOICES: &[(&str, bool)] = &[
    ("i_number_double_huge_neg_exp.json", true),
    ("i_number_huge_exp.json", true),
    ("i_number_neg_int_huge_exp.json", true),
    ("i_number_pos_double_huge_exp.json", true),
    ("i_number_real_neg_overflow.json", true),
    ("i_number_real_pos_overflow.json", true),
    ("i_number_real_underflow.json", true),
    ("i_number_too_big_neg_int.json", true),
    ("i_number_too_big_pos_int.json", true),
    ("i_number_very_big_negative_int.json", true),
    ("i_object_key_lone_2nd_surrogate.json", false),
    ("i_string_1st_surrogate_but_2nd_missing.json", false),
    ("i_string_1st_valid_surrogate_2nd_invalid.json", false),
    ("i_string_UTF-16LE_with_BOM.json", false),
    ("i_string_UTF-8_invalid_sequence.json", false),
    ("i_string_UTF8_surrogate_U+D800.json", false),
    ("i_string_incomplete_surrogate_and_escape_valid.json", false),
    ("i_string_incomplete_surrogate_pair.json", false),
    ("i_string_incomplete_surrogates_escape_valid.json", false),
    ("i_string_invalid_lonely_surrogate.json", false),
    ("i_string_invalid_surrogate.json", false),
    ("i_string_invalid_utf-8.json", false),
    ("i_string_inverted_surrogates_U+1D11E.json", false),
    ("i_string_iso_latin_1.json", false),
    ("i_string_lone_second_surrogate.json", false),
    ("i_string_lone_utf8_continuation_byte.json", false),
    ("i_string_not_in_unicode_range.json", false),
    ("i_string_overlong_sequence_2_bytes.json", false),
    ("i_string_overlong_sequence_6_bytes.json", false),
    ("i_string_overlong_sequence_6_bytes_null.json", false),
    ("i_string_truncated-utf-8.json", false),
    ("i_string_utf16BE_no_BOM.json", false),
    ("i_string_utf16LE_no_BOM.json", false),
    ("i_structure_500_nested_arrays.json", false),
    ("i_structure_UTF-8_BOM_empty_object.json", false),
];

#[test]
fn i_files_follow_the_documented_choices() {
    let files = suite();
    let i_files: Vec<_> = files.iter().filter(|(n, _)| n.starts_with("i_")).collect();
    assert_eq!(
        i_files.len(),
        I_CHOICES.len(),
        "an i_ file is missing from the table"
    );
    for (name, input) in i_files {
        let (_, accept) = I_CHOICES
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} not in the table"));
        let result = stele_doc::from_json(input);
        assert_eq!(result.is_ok(), *accept, "{name}: {result:?}");
        if *accept {
            // Accepted numbers come back exactly, digit for digit.
            let doc = stele_doc::Document::new(result.unwrap()).unwrap();
            let trimmed = String::from_utf8_lossy(input)
                .split_whitespace()
                .collect::<String>();
            assert_eq!(doc.to_json(), trimmed, "{name}");
        }
    }
}

#[test]
fn the_deep_file_is_accepted_with_a_higher_depth_limit() {
    let input = "[".repeat(500) + &"]".repeat(500);
    let err = stele_doc::from_json(input.as_bytes()).unwrap_err();
    assert!(
        matches!(err, stele_doc::Error::TooDeep { limit: 128 }),
        "{err}"
    );
    let opts = stele_doc::WriteOptions::default().max_depth(512);
    let bytes = stele_doc::from_json_with(input.as_bytes(), opts).unwrap();
    assert_eq!(stele_doc::Document::new(bytes).unwrap().to_json(), input);
}
