//! Corrupt valid documents byte by byte: `validate` must reject the bytes or accept bytes that
//! read back consistently. Also every truncation. Never a panic.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use crate::common;

use stele_doc::{Document, Value};

/// Documents covering every tag, width, flag and the input-order index.
fn samples() -> Vec<Vec<u8>> {
    let long = "abcabcabc ".repeat(30);
    let texts = [
        format!(
            r#"{{"z":null,"b":[true,false,1,-300,70000,-5000000000,18446744073709551615,1.25,1E5,"s","{long}"],"a":{{"y":[],"x":{{}}}},"é":[1,2,3]}}"#
        ),
        r#"[[1],[2,[3,[4]]],{"k":"v","j":[null,null]}]"#.to_owned(),
        r#""just a string""#.to_owned(),
        "12345".to_owned(),
        "null".to_owned(),
    ];
    let mut docs: Vec<Vec<u8>> = texts
        .iter()
        .map(|t| stele_doc::from_json(t.as_bytes()).unwrap())
        .collect();
    let path = common::data_dir().join("collections/mongodb-samples/books.jsonl.zst");
    for line in common::zst_lines(&path, 3) {
        docs.push(stele_doc::from_json(line.as_bytes()).unwrap());
    }
    docs
}

/// Reads everything in `v`; returns a count so the work cannot be skipped.
fn walk(v: Value<'_>) -> usize {
    match v {
        Value::Object(o) => {
            let mut n = o.len();
            for (k, child) in o.iter_original() {
                assert!(o.get(k).is_some(), "key {k:?} listed but not found");
                n += walk(child);
            }
            n
        }
        Value::Array(a) => a.iter().map(walk).sum::<usize>() + a.len(),
        Value::String(s) => s.to_cow().len(),
        other => other.as_f64().map_or(1, |_| 2),
    }
}

fn check_consistent(bytes: &[u8]) {
    if stele_doc::validate(bytes).is_err() {
        assert!(Document::new(bytes).is_err());
        return;
    }
    let doc = Document::new(bytes).unwrap();
    walk(doc.root());
    let text = doc.to_json();
    let again = stele_doc::from_json(text.as_bytes())
        .unwrap_or_else(|e| panic!("accepted document printed invalid JSON {text:?}: {e}"));
    assert_eq!(Document::new(again).unwrap().to_json(), text);
}

#[test]
fn every_flipped_byte_is_rejected_or_reads_consistently() {
    let mut accepted = 0usize;
    let mut total = 0usize;
    // The structure-heavy synthetic samples come first: count only those, real documents are
    // mostly string bytes, where a flipped bit is just another valid value.
    for (n, doc) in samples().into_iter().enumerate() {
        for i in 0..doc.len() {
            for flip in [0x01u8, 0x02, 0x10, 0x80, 0xFF] {
                let mut bad = doc.clone();
                bad[i] ^= flip;
                if n < 5 {
                    total += 1;
                    accepted += usize::from(stele_doc::validate(&bad).is_ok());
                }
                check_consistent(&bad);
            }
        }
    }
    // Most corruptions must be caught; the rest (a changed digit, a changed letter) are values.
    eprintln!("{accepted} of {total} corrupted synthetic documents accepted");
    assert!(
        accepted * 2 < total,
        "{accepted} of {total} corrupted documents accepted"
    );
}

#[test]
fn every_truncation_and_extension_is_rejected() {
    for doc in samples() {
        for len in 0..doc.len() {
            assert!(
                stele_doc::validate(&doc[..len]).is_err(),
                "prefix of {len} of {} bytes accepted",
                doc.len()
            );
        }
        let mut longer = doc.clone();
        longer.push(0);
        check_consistent(&longer);
    }
}
