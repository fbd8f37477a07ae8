//! `CachedPath` against `Path` (no cache) over sequences of documents whose shapes overlap: the
//! remembered slot of one document is tried on the next, so every way a slot can be stale (other
//! key at the index, other name at the key id, other widths, names longer than a word) occurs.
//! Every leaf names its key, so a hit that returned another field's value fails the comparison.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use proptest::prelude::*;
use serde_json::{Map, Value as J};
use stele_doc::{CachedPath, Document, Path};

/// Keys whose name entries (length byte + bytes) take 2, 3, 16 (one full word), 17 and more
/// bytes, and non-ASCII ones.
const KEYS: [&str; 10] = [
    "a",
    "b",
    "y",
    "z",
    "ab",
    "fifteen_bytes_k",
    "sixteen_bytes_ke",
    "a_key_longer_than_one_word",
    "ключ",
    "🔑",
];

/// An object over a random subset of [`KEYS`] in random order; values are strings naming their
/// key and a serial, or (at depth) nested objects of the same kind.
fn object(depth: u32) -> BoxedStrategy<J> {
    let value = if depth == 0 {
        (0usize..KEYS.len(), 0u32..4)
            .prop_map(|(k, n)| J::String(format!("{}#{n}", KEYS.get(k).copied().unwrap_or("?"))))
            .boxed()
    } else {
        prop_oneof![
            3 => (0u32..4).prop_map(|n| J::String(format!("leaf#{n}"))),
            1 => object(depth - 1),
            1 => prop::collection::vec(object(depth - 1), 0..3).prop_map(J::Array),
        ]
        .boxed()
    };
    prop::collection::vec((0usize..KEYS.len(), value), 0..KEYS.len())
        .prop_map(|kv| {
            let mut m = Map::new();
            for (k, v) in kv {
                let key = KEYS.get(k).copied().unwrap_or("?");
                // The value names its key: a wrong slot cannot return an equal value.
                let v = match v {
                    J::String(s) => J::String(format!("{key}={s}")),
                    other => other,
                };
                m.insert(key.to_owned(), v);
            }
            J::Object(m)
        })
        .boxed()
}

/// Paths of 1 to 3 steps over [`KEYS`], some through arrays.
fn path() -> impl Strategy<Value = String> {
    let key = (0usize..KEYS.len()).prop_map(|k| {
        let key = KEYS.get(k).copied().unwrap_or("?");
        format!("[\"{key}\"]")
    });
    prop::collection::vec(
        prop_oneof![4 => key, 1 => (0usize..3).prop_map(|i| format!("[{i}]"))],
        1..4,
    )
    .prop_map(|steps| steps.concat())
}

/// Each path read on each document (twice: the second read is a hit on the same document) by
/// the three ways of a cached path, each with its own remembered slots, against `Path::get`.
fn check_sequence(docs: &[Vec<u8>], paths: &[String]) {
    let new = || -> Vec<CachedPath> { paths.iter().map(|p| CachedPath::new(p).unwrap()).collect() };
    let (mut by_get, mut by_read, mut by_read_doc) = (new(), new(), new());
    let plain: Vec<Path> = paths.iter().map(|p| Path::parse(p).unwrap()).collect();
    for (i, bytes) in docs.iter().enumerate() {
        let doc = Document::new(bytes.as_slice()).unwrap();
        for _ in 0..2 {
            for (j, p) in plain.iter().enumerate() {
                let want = p.get(doc.root()).map(|v| v.to_json());
                let get = by_get[j].get(doc.root()).map(|v| v.to_json());
                let read = by_read[j].read(doc.root(), |v| v.to_json());
                let read_doc = by_read_doc[j].read_doc(&doc, |v| v.to_json());
                let at = format!("document {i}, path {}", p.as_str());
                assert_eq!(get, want, "get: {at}");
                assert_eq!(read, want, "read: {at}");
                assert_eq!(read_doc, want, "read_doc: {at}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn cached_paths_read_what_plain_paths_read(
        docs in prop::collection::vec(object(2), 1..12),
        paths in prop::collection::vec(path(), 1..6),
    ) {
        let docs: Vec<Vec<u8>> = docs
            .iter()
            .map(|d| stele_doc::from_json(d.to_string().as_bytes()).unwrap())
            .collect();
        check_sequence(&docs, &paths);
    }
}

fn docs(texts: &[&str]) -> Vec<Vec<u8>> {
    texts
        .iter()
        .map(|t| stele_doc::from_json(t.as_bytes()).unwrap())
        .collect()
}

/// The remembered key id still holds a name, but not at the remembered index: the key id at the
/// index must be checked.
#[test]
fn a_slot_whose_index_holds_another_key_is_a_miss() {
    // `y` is sorted index 1, key id 2 in the first; in the second key id 2 is still `y` but
    // sorted index 1 is `b` (key id 4).
    // The second pair has the same count and flags (widths, order by key id): the fixed-place
    // check reads the key id.
    for pair in [
        [r#"{"x":"x1","y":"y1"}"#, r#"{"a":"a2","y":"y2","b":"b2"}"#],
        [
            r#"{"z":"z1","y":"y1","a":"a1"}"#,
            r#"{"a":"a2","y":"y2","b":"b2"}"#,
        ],
    ] {
        let d = docs(&pair);
        check_sequence(&d, &["y".to_owned()]);
        let mut y = CachedPath::new("y").unwrap();
        for (bytes, want) in d.iter().zip(["y1", "y2"]) {
            let doc = Document::new(bytes.as_slice()).unwrap();
            assert_eq!(
                y.read_doc(&doc, |v| v.to_json()).as_deref(),
                Some(format!("\"{want}\"").as_str())
            );
        }
    }
}

/// The same key id at the same index, but another name there: the name must be compared.
#[test]
fn a_slot_whose_key_id_names_another_key_is_a_miss() {
    for (first, second) in [
        // One-byte names: the word compare.
        (r#"{"x":"x1","y":"y1"}"#, r#"{"a":"a2","z":"z2"}"#),
        // Names of one word and more: the long compare.
        (
            r#"{"a":"a1","sixteen_bytes_ke":"y1"}"#,
            r#"{"a":"a2","sixteen_bytes_kf":"z2"}"#,
        ),
        (
            r#"{"a":"a1","a_key_longer_than_one_word":"y1"}"#,
            r#"{"a":"a2","a_key_longer_than_one_worx":"z2"}"#,
        ),
        // The last name of the names area: the 16 bytes that end with it.
        (
            r#"{"a_long_first_key_0123":"k1","abc":"y1"}"#,
            r#"{"a_long_first_key_0123":"k2","abd":"z2"}"#,
        ),
        // A longer name that starts with the key: only the length byte differs, at both loads.
        (
            r#"{"a":"a1","ab":"y1","zzzzzzzzzzzzzzzzzz":0}"#,
            r#"{"a":"a2","abc":"z2","zzzzzzzzzzzzzzzzzz":0}"#,
        ),
        (
            r#"{"a_long_first_key_0123":"k1","ab":"y1"}"#,
            r#"{"a_long_first_key_0123":"k2","abc":"z2"}"#,
        ),
        // A names area shorter than a word: the byte compare.
        (r#"{"k":"k1","abc":"y1"}"#, r#"{"k":"k2","abd":"z2"}"#),
    ] {
        let d = docs(&[first, second]);
        let key: String = serde_json::from_str::<Map<String, J>>(first)
            .unwrap()
            .keys()
            .nth(1)
            .unwrap()
            .clone();
        let mut p = CachedPath::new(&format!("[\"{key}\"]")).unwrap();
        let doc = Document::new(d[0].as_slice()).unwrap();
        assert_eq!(p.get(doc.root()).unwrap().as_str().as_deref(), Some("y1"));
        let doc = Document::new(d[1].as_slice()).unwrap();
        assert!(p.get(doc.root()).is_none(), "{key} found in {second}");
        check_sequence(&d, &[format!("[\"{key}\"]")]);
    }
}

/// The trusted open (`new_unchecked`) finds the same root and names as the validated one, for
/// every trailer width a test can build (1, 2 and 4 bytes), short and long documents.
#[test]
fn trusted_open_reads_what_validated_open_reads() {
    let mut texts: Vec<String> = [
        "{}",
        "[]",
        "1",
        "\"s\"",
        "null",
        r#"{"a":1}"#,
        r#"{"a":"bc"}"#,
        r#"{"a":"bcdefgh"}"#,
        r#"{"ab":[1,2,{"c":null}]}"#,
        "[1,2,3,4,5,6,7,8,9,10]",
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect();
    for n in [200, 300, 70_000] {
        texts.push(format!(r#"{{"k":"{}","z":[1,"x"]}}"#, "v".repeat(n)));
        texts.push(format!(r#"["{}",{{"k":2}}]"#, "w".repeat(n)));
    }
    for text in &texts {
        let bytes = stele_doc::from_json(text.as_bytes()).unwrap();
        let checked = Document::new(bytes.as_slice()).unwrap();
        // SAFETY: just written by the converter and validated above.
        let trusted = unsafe { Document::new_unchecked(bytes.as_slice()) };
        assert_eq!(
            trusted.to_json(),
            checked.to_json(),
            "{}",
            &text[..text.len().min(40)]
        );
        assert_eq!(trusted.names_bytes(), checked.names_bytes());
        assert_eq!(
            trusted.root_object().map(|o| o.len()),
            checked.root_object().map(|o| o.len())
        );
        assert_eq!(trusted.to_json(), *text);
    }
}
