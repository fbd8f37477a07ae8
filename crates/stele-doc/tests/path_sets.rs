//! `PathSet` against `Path` (no cache) over sequences of documents drawn from a few shapes, so
//! that the remembered root shape is often the same (the shared check's hit) and often not quite
//! (other key order, a key missing or added, other names at the same key ids, other widths).
//! Every leaf names its key, so a hit that handed over another field's value fails.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use proptest::prelude::*;
use serde_json::{Map, Value as J};
use stele_doc::{Document, Path, PathSet};

/// Keys whose name entries take 2, 3, 16 (one word), 17 and more bytes, non-ASCII ones, and
/// names that share a prefix.
const KEYS: [&str; 9] = [
    "a",
    "b",
    "ab",
    "ba",
    "fifteen_bytes_k",
    "sixteen_bytes_ke",
    "a_key_longer_than_one_word",
    "ключ",
    "🔑",
];

fn key(k: usize) -> &'static str {
    KEYS.get(k % KEYS.len()).copied().unwrap_or("?")
}

/// A value for key `k`: a string naming the key (its length varies, so offsets move), an integer
/// of varying width (so tags and widths change), or a nested object / array over `shape`.
fn value(k: usize, kind: u8, n: u32, shape: &[usize], depth: u32) -> J {
    let name = key(k);
    match kind % 6 {
        0 | 1 => J::String(format!("{name}={}", "x".repeat(n as usize % 40))),
        2 => {
            J::from(i64::from(n) * 1_000_003 * if n.is_multiple_of(2) { 1 } else { -1 } + k as i64)
        }
        3 if depth > 0 => object(shape, shape, n, depth - 1),
        4 if depth > 0 => J::Array(vec![
            object(shape, shape, n + 1, depth - 1),
            J::String(format!("{name}[1]")),
        ]),
        _ => J::Bool(n.is_multiple_of(2)),
    }
}

/// An object with the keys of `shape` in that order (values drawn from `n`), nested values over
/// `inner`.
fn object(shape: &[usize], inner: &[usize], n: u32, depth: u32) -> J {
    let mut m = Map::new();
    for (j, &k) in shape.iter().enumerate() {
        let seed = n.wrapping_mul(2_654_435_761).rotate_left(j as u32 * 5);
        let v = value(k, (seed >> 3) as u8, seed >> 8, inner, depth);
        m.insert(key(k).to_owned(), v);
    }
    J::Object(m)
}

/// 1 to 3 shapes (key lists, possibly with repeats removed by the map), then documents that
/// each pick a shape and values; now and then a root that is not an object.
fn documents() -> impl Strategy<Value = Vec<J>> {
    let shape = prop::collection::vec(0..KEYS.len(), 0..7);
    (
        prop::collection::vec(shape, 1..4),
        prop::collection::vec((0usize..3, any::<u32>(), 0u8..20), 1..100),
    )
        .prop_map(|(shapes, picks)| {
            picks
                .into_iter()
                .map(|(s, n, odd)| {
                    let shape = shapes.get(s % shapes.len()).cloned().unwrap_or_default();
                    let inner = shapes
                        .get((s + n as usize) % shapes.len())
                        .map_or(&[][..], |s| s);
                    match odd {
                        0 => J::Array(vec![object(&shape, &shape, n, 1)]),
                        1 => J::String("not an object".into()),
                        // Nested objects over another shape of the pool: names of
                        // nested keys land between the root's in the names area.
                        _ => object(&shape, inner, n, 2),
                    }
                })
                .collect()
        })
}

/// Paths of 1 to 3 steps: keys, and indexes now and then (the first step too).
fn paths() -> impl Strategy<Value = Vec<String>> {
    let step = prop_oneof![
        5 => (0..KEYS.len()).prop_map(|k| format!("[\"{}\"]", key(k))),
        1 => (0usize..2).prop_map(|i| format!("[{i}]")),
    ];
    prop::collection::vec(
        prop::collection::vec(step, 0..4).prop_map(|s| s.concat()),
        1..6,
    )
}

/// Reads `docs` in order with one path set, each document twice (the second read is the
/// same-shape check on the same document), and again with a new set, each document once (runs
/// of other shapes, read path by path after a few), and checks every value against `Path::get`.
fn check_sequence(docs: &[Vec<u8>], paths: &[String]) {
    check_reads(docs, paths, 2);
    check_reads(docs, paths, 1);
}

fn check_reads(docs: &[Vec<u8>], paths: &[String], reads: usize) {
    let mut set = PathSet::new(paths.iter().map(String::as_str)).unwrap();
    let plain: Vec<Path> = paths.iter().map(|p| Path::parse(p).unwrap()).collect();
    assert_eq!(set.len(), plain.len());
    assert_eq!(set.paths(), &plain[..]);
    for (d, bytes) in docs.iter().enumerate() {
        let doc = Document::new(bytes.as_slice()).unwrap();
        let want: Vec<Option<String>> = plain
            .iter()
            .map(|p| p.get(doc.root()).map(|v| v.to_json()))
            .collect();
        for round in 0..reads {
            // Hints (no effect on what is read; any bytes are fine): the next document, a cut
            // one, a shifted one, none.
            let next = docs.get(d + 1).map_or(&[][..], Vec::as_slice);
            for hint in [next, &bytes[..bytes.len() / 2], &bytes[1..], &[]] {
                set.prefetch(hint);
            }
            let mut got = vec![None; plain.len()];
            let mut last = None;
            set.read_doc(&doc, |i, v| {
                assert!(last < Some(i), "index {i} after {last:?}");
                last = Some(i);
                got[i] = Some(v.to_json());
            });
            assert_eq!(
                got,
                want,
                "document {d} ({}), read {round}, paths {paths:?}",
                doc.to_json()
            );
        }
    }
}

fn encode(docs: &[J]) -> Vec<Vec<u8>> {
    docs.iter()
        .map(|d| stele_doc::from_json(d.to_string().as_bytes()).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn path_sets_read_what_plain_paths_read(docs in documents(), paths in paths()) {
        check_sequence(&encode(&docs), &paths);
    }
}

fn texts(texts: &[&str]) -> Vec<Vec<u8>> {
    texts
        .iter()
        .map(|t| stele_doc::from_json(t.as_bytes()).unwrap())
        .collect()
}

fn paths_of(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| (*s).to_owned()).collect()
}

/// Same count, flags and key ids; the name at a key id the set uses differs.
#[test]
fn another_name_at_the_same_key_id_is_another_shape() {
    let d = texts(&[r#"{"a":"a1","b":"b1"}"#, r#"{"a":"a2","c":"c2"}"#]);
    check_sequence(&d, &paths_of(&["b"]));
    check_sequence(&d, &paths_of(&["a", "b"]));
    // Names that differ only in their length byte, and a name longer than a word.
    let d = texts(&[r#"{"ab":1,"z":2}"#, r#"{"a":1,"bz":2}"#]);
    check_sequence(&d, &paths_of(&["ab", "z"]));
    let d = texts(&[
        r#"{"a_key_longer_than_one_word":1,"sixteen_bytes_ke":2}"#,
        r#"{"a_key_longer_than_one_wore":1,"sixteen_bytes_ke":2}"#,
    ]);
    check_sequence(
        &d,
        &paths_of(&["a_key_longer_than_one_word", "sixteen_bytes_ke"]),
    );
}

/// A key absent from the remembered document: a document of the same count, flags and key ids
/// that has it must not be taken for the same shape, even when the names the set found agree.
#[test]
fn an_absent_key_is_checked_against_all_names() {
    let d = texts(&[r#"{"a":1,"b":2}"#, r#"{"a":3,"x":4}"#, r#"{"a":5,"b":6}"#]);
    check_sequence(&d, &paths_of(&["a", "x"]));
    check_sequence(&d, &paths_of(&["x", "a"]));
}

/// The same names area (a nested key in one is a root key in the other), the same count and
/// flags, other root key ids.
#[test]
fn the_same_names_with_other_root_key_ids_are_another_shape() {
    let d = texts(&[
        r#"{"a":{"b":1},"c":"c1"}"#,
        r#"{"a":"a2","b":{"c":2}}"#,
        r#"{"a":{"b":3},"c":"c3"}"#,
    ]);
    for p in [&["c"][..], &["b"], &["a", "b", "c"], &["c", "a.b", "b.c"]] {
        check_sequence(&d, &paths_of(p));
    }
}

/// The same names, the keys in another sorted place (other key ids at each index).
#[test]
fn other_key_ids_are_another_shape() {
    let d = texts(&[
        r#"{"a":1,"b":2,"ab":3}"#,
        r#"{"b":4,"a":5,"ab":6}"#,
        r#"{"ab":7,"b":8,"a":9}"#,
    ]);
    check_sequence(&d, &paths_of(&["a", "b", "ab"]));
}

/// The same keys with values of other widths: the offsets' width changes the header layout.
#[test]
fn other_offset_widths_are_another_shape() {
    let long = "y".repeat(300);
    let wide = format!(r#"{{"a":"{long}","b":2,"c":"c"}}"#);
    let d = texts(&[
        r#"{"a":"a","b":2,"c":"c"}"#,
        &wide,
        r#"{"a":"a","b":3,"c":"d"}"#,
    ]);
    check_sequence(&d, &paths_of(&["a", "b", "c"]));
}
