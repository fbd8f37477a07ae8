//! serde support: derive round trips, equality with `serde_json`, errors, and a property test
//! over arbitrary `serde_json::Value`s.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use stele_doc::{
    Document, DocumentWriter, Error, KeyOrder, Value, WriteOptions, from_document, from_value,
    to_document, to_document_with,
};

fn json_of<T: Serialize + ?Sized>(v: &T) -> String {
    Document::new(to_document(v).unwrap()).unwrap().to_json()
}

/// Our JSON equals `serde_json::to_string`'s, up to one known difference: floats with a positive
/// exponent print as `1e16` here (ryu, the crate's float printer) and `1e+16` in serde_json
/// (1.0.154 prints with zmij). The numbers are the same.
fn assert_same_json<T: Serialize + ?Sized>(ours: &str, v: &T) {
    let theirs = serde_json::to_string(v).unwrap();
    if ours != theirs {
        assert_eq!(ours, theirs.replace("e+", "e"));
        let a: serde_json::Value = serde_json::from_str(ours).unwrap();
        let b: serde_json::Value = serde_json::from_str(&theirs).unwrap();
        assert_eq!(
            a.to_string().replace("e+", "e"),
            b.to_string().replace("e+", "e")
        );
    }
}

/// Serializes, checks the JSON equals `serde_json`'s, deserializes and compares.
fn round_trip<T>(v: &T)
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let doc = Document::new(to_document(v).unwrap()).unwrap();
    assert_same_json(&doc.to_json(), v);
    let back: T = from_document(&doc).unwrap();
    assert_eq!(&back, v);
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
enum Shape {
    Empty,
    Circle(f64),
    Point(i32, i32),
    Rect { w: u32, h: u32 },
    Nested(Box<Shape>),
    Many(Vec<Shape>),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy, PartialOrd, Ord, Eq, Hash)]
enum Color {
    Red,
    Green,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Unit;

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Meters(f64);

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Pair(i8, String);

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Everything {
    name: String,
    id: u64,
    neg: i64,
    ratio: f64,
    small: f32,
    flag: bool,
    ch: char,
    nothing: Option<u8>,
    something: Option<Option<String>>,
    unit: (),
    unit_struct: Unit,
    meters: Meters,
    pair: Pair,
    tuple: (u8, String, Vec<bool>),
    shapes: Vec<Shape>,
    by_name: BTreeMap<String, Shape>,
    by_int: BTreeMap<i32, Vec<u16>>,
    by_u64: BTreeMap<u64, bool>,
    by_bool: BTreeMap<bool, String>,
    by_char: BTreeMap<char, i8>,
    by_color: BTreeMap<Color, u8>,
    colors: Vec<Color>,
    nested: Vec<Vec<Option<i64>>>,
    bytes: Vec<u8>,
    empty_vec: Vec<u8>,
    empty_map: BTreeMap<String, u8>,
    big: i128,
    bigger: u128,
}

fn everything() -> Everything {
    Everything {
        name: "Ada \"Countess\" Lovelace\n\u{1F600}".into(),
        id: u64::MAX,
        neg: i64::MIN,
        ratio: -1.5e-300,
        small: 0.1,
        flag: true,
        ch: 'λ',
        nothing: None,
        something: Some(Some("inner".into())),
        unit: (),
        unit_struct: Unit,
        meters: Meters(3.25),
        pair: Pair(-7, "seven".into()),
        tuple: (255, "t".into(), vec![true, false]),
        shapes: vec![
            Shape::Empty,
            Shape::Circle(1.0),
            Shape::Point(-1, 2),
            Shape::Rect { w: 3, h: 4 },
            Shape::Nested(Box::new(Shape::Many(vec![
                Shape::Empty,
                Shape::Circle(0.5),
            ]))),
        ],
        by_name: [
            ("zeta".to_owned(), Shape::Empty),
            ("alpha".to_owned(), Shape::Point(0, 0)),
        ]
        .into_iter()
        .collect(),
        by_int: [(-5, vec![1, 2]), (0, vec![]), (70000, vec![u16::MAX])]
            .into_iter()
            .collect(),
        by_u64: [(u64::MAX, true), (1, false)].into_iter().collect(),
        by_bool: [(true, "yes".into()), (false, "no".into())]
            .into_iter()
            .collect(),
        by_char: [('a', 1), ('é', -1)].into_iter().collect(),
        by_color: [(Color::Red, 1), (Color::Green, 2)].into_iter().collect(),
        colors: vec![Color::Green, Color::Red],
        nested: vec![vec![], vec![Some(1), None, Some(i64::MAX)]],
        bytes: vec![0, 1, 254, 255],
        empty_vec: vec![],
        empty_map: BTreeMap::new(),
        big: -170141183460469231731687303715884105728,
        bigger: u128::MAX,
    }
}

#[test]
fn derive_round_trip_matches_serde_json() {
    round_trip(&everything());
}

#[test]
fn hash_maps_with_string_and_integer_keys() {
    let by_str: HashMap<String, Vec<i32>> = [("a".into(), vec![1]), ("b".into(), vec![-2, 3])]
        .into_iter()
        .collect();
    let doc = Document::new(to_document(&by_str).unwrap()).unwrap();
    let back: HashMap<String, Vec<i32>> = from_document(&doc).unwrap();
    assert_eq!(back, by_str);

    let by_int: HashMap<i64, String> = [(i64::MIN, "min".into()), (42, "x".into())]
        .into_iter()
        .collect();
    let doc = Document::new(to_document(&by_int).unwrap()).unwrap();
    assert_eq!(
        doc.get("-9223372036854775808").unwrap().as_str().unwrap(),
        "min"
    );
    let back: HashMap<i64, String> = from_document(&doc).unwrap();
    assert_eq!(back, by_int);

    // Float keys, as serde_json writes them, and read back.
    let float_keys = SerializeAsMap(&[(0.5f64, 1u8), (-2.0, 2), (1e21, 3)]);
    let doc = Document::new(to_document(&float_keys).unwrap()).unwrap();
    assert_eq!(doc.to_json(), r#"{"0.5":1,"-2.0":2,"1e21":3}"#);
    assert_same_json(&doc.to_json(), &float_keys);
    let back: Vec<(f64, u8)> = from_document::<BTreeMap<String, u8>, _>(&doc)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.parse().unwrap(), v))
        .collect();
    assert_eq!(back.len(), 3);
    let f32_keys = SerializeAsMap(&[(0.1f32, 1u8)]);
    assert_eq!(
        json_of(&f32_keys),
        serde_json::to_string(&f32_keys).unwrap()
    );
}

#[test]
fn scalars_and_edges() {
    round_trip(&u64::MAX);
    round_trip(&i64::MIN);
    round_trip(&i64::MAX);
    round_trip(&0u8);
    round_trip(&-1i8);
    round_trip(&true);
    round_trip(&());
    round_trip(&Some(5u8));
    round_trip(&None::<u8>);
    // As in JSON: `Some(None)` is `null`, which reads back as `None`.
    let doc = Document::new(to_document(&Some(None::<u8>)).unwrap()).unwrap();
    assert_eq!(doc.to_json(), "null");
    assert_eq!(from_document::<Option<Option<u8>>, _>(&doc).unwrap(), None);
    round_trip(&"plain".to_owned());
    round_trip(&'x');
    round_trip(&(1u8, -2i16, 3.5f64));
    round_trip(&vec![Color::Red]);
    for f in [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        1.0 / 3.0,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        1e21,
        1e-7,
        123456789.0,
        9007199254740993.0,
    ] {
        round_trip(&f);
        let back: f64 = from_document(&Document::new(to_document(&f).unwrap()).unwrap()).unwrap();
        assert_eq!(back.to_bits(), f.to_bits(), "{f:e}");
    }
    for f in [0.1f32, f32::MAX, f32::MIN_POSITIVE, 1e-45, -3.5, 16777217.0] {
        round_trip(&f);
    }
    // i128 and u128 beyond 64 bits are kept as decimal text and read back exactly.
    for v in [i128::MIN, i128::MAX, i128::from(i64::MIN) - 1, -1] {
        round_trip(&v);
    }
    for v in [u128::MAX, u128::from(u64::MAX) + 1, 0] {
        round_trip(&v);
    }
    let doc = Document::new(to_document(&u128::MAX).unwrap()).unwrap();
    assert!(matches!(doc.root(), Value::Decimal(_)));
}

#[test]
fn integers_are_range_checked() {
    let doc = Document::new(to_document(&300u32).unwrap()).unwrap();
    let err = from_document::<u8, _>(&doc).unwrap_err();
    assert!(matches!(err, Error::Serde(_)), "{err}");
    assert_eq!(from_document::<u16, _>(&doc).unwrap(), 300);
    let doc = Document::new(to_document(&-1i32).unwrap()).unwrap();
    assert!(from_document::<u64, _>(&doc).is_err());
    let doc = Document::new(to_document(&u64::MAX).unwrap()).unwrap();
    assert!(from_document::<i64, _>(&doc).is_err());
    assert_eq!(from_document::<f64, _>(&doc).unwrap(), u64::MAX as f64);
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Borrowed<'a> {
    name: &'a str,
    #[serde(borrow)]
    tags: Vec<&'a str>,
    #[serde(borrow)]
    note: Cow<'a, str>,
    #[serde(borrow)]
    by_key: BTreeMap<&'a str, &'a str>,
}

#[test]
fn zero_copy_strings() {
    let long = "long text that repeats ".repeat(20);
    let value = Borrowed {
        name: "Ada",
        tags: vec!["math", "engines"],
        note: Cow::Owned(long.clone()),
        by_key: [("k", "v")].into_iter().collect(),
    };
    let bytes = to_document_with(&value, WriteOptions::default().compress_strings(None)).unwrap();
    let doc = Document::new(bytes).unwrap();
    let back: Borrowed<'_> = from_document(&doc).unwrap();
    assert_eq!(back, value);
    let range = doc.as_bytes().as_ptr_range();
    for s in [back.name, back.tags[0], back.tags[1], back.by_key["k"]] {
        assert!(range.contains(&s.as_ptr()), "{s:?} was copied");
    }
    assert!(matches!(back.note, Cow::Borrowed(_)));

    // Compressed: the long string is decompressed into an owned value.
    let doc = Document::new(to_document(&value).unwrap()).unwrap();
    assert!(
        doc.get("note")
            .unwrap()
            .as_string()
            .unwrap()
            .is_compressed()
    );
    #[derive(Deserialize)]
    struct Owned<'a> {
        #[serde(borrow)]
        note: Cow<'a, str>,
        name: &'a str,
    }
    let owned: Owned<'_> = from_document(&doc).unwrap();
    assert_eq!(owned.note, long);
    assert!(matches!(owned.note, Cow::Owned(_)));
    assert_eq!(owned.name, "Ada");
    // A `&str` cannot borrow a compressed string.
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct MustBorrow<'a> {
        note: &'a str,
    }
    assert!(from_document::<MustBorrow<'_>, _>(&doc).is_err());
}

#[test]
fn from_value_and_unknown_fields() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Small {
        b: Vec<u8>,
    }
    let big = serde_json::json!({"a": {"deep": [1, {"x": null}]}, "b": [1, 2], "c": "skip"});
    let doc = Document::new(to_document(&big).unwrap()).unwrap();
    let small: Small = from_document(&doc).unwrap();
    assert_eq!(small, Small { b: vec![1, 2] });
    let b: Vec<u8> = from_value(doc.get("b").unwrap()).unwrap();
    assert_eq!(b, [1, 2]);
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        b: Vec<u8>,
    }
    assert!(from_document::<Strict, _>(&doc).is_err());
}

#[test]
fn enums_from_strings_and_single_key_objects() {
    let doc = Document::new(stele_doc::from_json(br#"["Empty", {"Empty": null}, {"Circle": 2}, {"Point": [1, 2]}, {"Rect": {"h": 2, "w": 1}}]"#).unwrap()).unwrap();
    let shapes: Vec<Shape> = from_document(&doc).unwrap();
    assert_eq!(
        shapes,
        [
            Shape::Empty,
            Shape::Empty,
            Shape::Circle(2.0),
            Shape::Point(1, 2),
            Shape::Rect { w: 1, h: 2 }
        ]
    );
    for bad in [
        r#"{"Circle": 1, "Empty": null}"#,
        r#"{}"#,
        r#"5"#,
        r#""Nope""#,
        r#""Circle""#,
        r#"{"Point": [1, 2, 3]}"#,
        r#"{"Point": [1]}"#,
    ] {
        let doc = Document::new(stele_doc::from_json(bad.as_bytes()).unwrap()).unwrap();
        let err = from_document::<Shape, _>(&doc).unwrap_err();
        assert!(matches!(err, Error::Serde(_)), "{bad}: {err}");
    }
}

#[test]
fn struct_from_array_and_tuple_length_checks() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct P {
        x: i32,
        y: i32,
    }
    let doc = Document::new(stele_doc::from_json(b"[1, 2]").unwrap()).unwrap();
    assert_eq!(from_document::<P, _>(&doc).unwrap(), P { x: 1, y: 2 });
    assert_eq!(from_document::<(u8, u8), _>(&doc).unwrap(), (1, 2));
    assert!(from_document::<(u8,), _>(&doc).is_err());
    assert!(from_document::<(u8, u8, u8), _>(&doc).is_err());
}

#[test]
fn decimals_deserialize_as_numbers() {
    let doc = Document::new(
        stele_doc::from_json(
            br#"[1E2, -0, 123456789012345678901234567890, 1.00000000000000000001, 1e400]"#,
        )
        .unwrap(),
    )
    .unwrap();
    let a = doc.root().as_array().unwrap();
    assert!(a.iter().all(|v| matches!(v, Value::Decimal(_))));
    assert_eq!(from_value::<f64>(a.get(0).unwrap()).unwrap(), 100.0);
    let neg_zero: f64 = from_value(a.get(1).unwrap()).unwrap();
    assert!(neg_zero == 0.0 && neg_zero.is_sign_negative());
    assert_eq!(from_value::<i64>(a.get(1).unwrap()).unwrap(), 0);
    assert_eq!(
        from_value::<u128>(a.get(2).unwrap()).unwrap(),
        123456789012345678901234567890
    );
    assert_eq!(
        from_value::<f64>(a.get(2).unwrap()).unwrap(),
        1.2345678901234568e29
    );
    assert!(from_value::<u64>(a.get(2).unwrap()).is_err());
    assert_eq!(from_value::<f64>(a.get(3).unwrap()).unwrap(), 1.0);
    assert!(from_value::<f64>(a.get(4).unwrap()).is_err());
    // Exact fractions read as the nearest f64.
    let doc =
        Document::new(stele_doc::from_json(b"[10.50, -65.613616999999977]").unwrap()).unwrap();
    assert_eq!(doc.to_json(), "[10.50,-65.613616999999977]");
    assert_eq!(
        from_document::<Vec<f64>, _>(&doc).unwrap(),
        [10.5, -65.613_616_999_999_98]
    );
    assert_eq!(
        from_document::<serde_json::Value, _>(&doc).unwrap(),
        serde_json::json!([10.5, -65.613_616_999_999_98])
    );
    assert!(from_document::<Vec<u32>, _>(&doc).is_err());
    // Through deserialize_any (serde_json::Value): integer if it fits, else f64.
    let any: serde_json::Value = from_value(a.get(1).unwrap()).unwrap();
    assert_eq!(any, serde_json::json!(0));
}

#[test]
fn bytes_read_from_arrays_and_strings() {
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct B {
        #[serde(with = "serde_bytes_like")]
        data: Vec<u8>,
    }
    mod serde_bytes_like {
        pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(v)
        }
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Vec<u8>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                    Ok(v.to_vec())
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut a: A,
                ) -> Result<Vec<u8>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(b) = a.next_element()? {
                        out.push(b);
                    }
                    Ok(out)
                }
            }
            d.deserialize_bytes(V)
        }
    }
    round_trip(&B {
        data: vec![0, 7, 255],
    });
    let doc = Document::new(stele_doc::from_json(br#"{"data":"hi"}"#).unwrap()).unwrap();
    assert_eq!(
        from_document::<B, _>(&doc).unwrap(),
        B {
            data: b"hi".to_vec()
        }
    );
}

#[test]
fn errors() {
    assert!(matches!(
        to_document(&f64::NAN),
        Err(Error::NonFiniteFloat { .. })
    ));
    assert!(matches!(
        to_document(&vec![1.0, f64::INFINITY]),
        Err(Error::NonFiniteFloat { .. })
    ));
    assert!(matches!(
        to_document(&f32::NEG_INFINITY),
        Err(Error::NonFiniteFloat { .. })
    ));

    let tuple_keys: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
    let err = to_document(&tuple_keys).unwrap_err();
    assert!(
        matches!(&err, Error::Serde(m) if m.contains("map key") && m.contains("tuple")),
        "{err}"
    );
    let vec_keys: HashMap<Vec<u8>, u8> = [(vec![1], 3)].into_iter().collect();
    assert!(matches!(to_document(&vec_keys), Err(Error::Serde(_))));
    let shape_keys: BTreeMap<String, u8> = BTreeMap::new();
    assert!(to_document(&shape_keys).is_ok());
    #[derive(Serialize)]
    struct S {
        a: u8,
    }
    let struct_keys: Vec<(S, u8)> = vec![(S { a: 1 }, 1)];
    let as_map = SerializeAsMap(&struct_keys);
    assert!(matches!(to_document(&as_map), Err(Error::Serde(_))));
    let nan_keys = SerializeAsMap(&[(f64::NAN, 1u8)]);
    assert!(matches!(
        to_document(&nan_keys),
        Err(Error::NonFiniteFloat { .. })
    ));

    // Custom errors of Serialize impls come through as Error::Serde.
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("nope"))
        }
    }
    assert_eq!(to_document(&Fails), Err(Error::Serde("nope".into())));

    // Wrong types name what was found and what was expected.
    let doc = Document::new(to_document("text").unwrap()).unwrap();
    let err = from_document::<u32, _>(&doc).unwrap_err();
    assert_eq!(
        err,
        Error::Serde(r#"invalid type: string "text", expected u32"#.into())
    );
    let doc = Document::new(to_document(&everything()).unwrap()).unwrap();
    assert!(from_document::<Vec<u8>, _>(&doc).is_err());
}

/// Serializes a list of pairs as a map, so any key type can be tried.
struct SerializeAsMap<'a, K, V>(&'a [(K, V)]);

impl<K: Serialize, V: Serialize> Serialize for SerializeAsMap<'_, K, V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[test]
fn depth_and_duplicate_keys() {
    let mut nested = serde_json::json!(1);
    for _ in 0..10 {
        nested = serde_json::json!([nested]);
    }
    assert!(to_document_with(&nested, WriteOptions::default().max_depth(10)).is_ok());
    assert_eq!(
        to_document_with(&nested, WriteOptions::default().max_depth(9)),
        Err(Error::TooDeep { limit: 9 })
    );
    let mut deep = serde_json::json!(null);
    for _ in 0..200 {
        deep = serde_json::json!({ "k": deep });
    }
    assert_eq!(to_document(&deep), Err(Error::TooDeep { limit: 128 }));

    // Repeated keys follow the writer's policy.
    let pairs = SerializeAsMap(&[("a", 1), ("b", 2), ("a", 3)]);
    assert_eq!(json_of(&pairs), r#"{"a":3,"b":2}"#);
    let reject = WriteOptions::default().duplicate_keys(stele_doc::DuplicateKeys::Reject);
    assert_eq!(
        to_document_with(&pairs, reject),
        Err(Error::DuplicateKey { key: "a".into() })
    );
    // Sorted key order.
    let sorted = to_document_with(
        &everything(),
        WriteOptions::default().key_order(KeyOrder::Sorted),
    )
    .unwrap();
    let json = Document::new(sorted).unwrap().to_json();
    let mut expected: serde_json::Value =
        serde_json::from_str(&serde_json::to_string(&everything()).unwrap()).unwrap();
    expected.sort_all_objects();
    assert_eq!(json, serde_json::to_string(&expected).unwrap());
}

#[test]
fn writer_is_reusable_after_errors() {
    let mut w = DocumentWriter::new();
    assert!(stele_doc::serde::write_document(&mut w, &vec![1.0, f64::NAN]).is_err());
    let bytes = stele_doc::serde::write_document(&mut w, &vec![1, 2]).unwrap();
    assert_eq!(Document::new(bytes).unwrap().to_json(), "[1,2]");

    // A Serializer can also write part of a document.
    w.begin_array().unwrap();
    for v in [Shape::Empty, Shape::Point(1, 2)] {
        v.serialize(&mut stele_doc::serde::Serializer::new(&mut w))
            .unwrap();
    }
    w.end_array().unwrap();
    let doc = Document::new(w.finish().unwrap()).unwrap();
    assert_eq!(doc.to_json(), r#"["Empty",{"Point":[1,2]}]"#);
}

#[test]
fn large_floats_print_without_exponent_plus() {
    // Stored as f64 either way; only the printed exponent differs from serde_json 1.0.154.
    let doc = Document::new(to_document(&1e21).unwrap()).unwrap();
    assert!(matches!(doc.root(), Value::Float(_)));
    assert_eq!(doc.to_json(), "1e21");
    assert_same_json(&doc.to_json(), &1e21);
    // A serde_json::Value keeps its number text exactly, whatever it is.
    let v = serde_json::json!([1e21, f64::MAX]);
    assert_eq!(json_of(&v), serde_json::to_string(&v).unwrap());
}

#[test]
fn equals_serde_json_for_many_values() {
    #[derive(Serialize)]
    struct Flat<'a> {
        #[serde(rename = "renamed key")]
        a: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        #[serde(flatten)]
        extra: BTreeMap<&'a str, i32>,
    }
    #[derive(Serialize)]
    #[serde(tag = "type")]
    enum Internal {
        A { x: u8 },
        B,
    }
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Untagged {
        N(u8),
        S(&'static str),
    }
    #[derive(Serialize)]
    #[serde(tag = "t", content = "c")]
    enum Adjacent {
        V(Vec<u8>),
    }
    macro_rules! same {
        ($($v:expr),* $(,)?) => {$(
            let v = $v;
            assert_same_json(&json_of(&v), &v);
        )*};
    }
    same!(
        everything(),
        Flat {
            a: "x",
            skipped: None,
            extra: [("z", 1), ("y", 2)].into_iter().collect()
        },
        vec![Internal::A { x: 1 }, Internal::B],
        (Untagged::N(1), Untagged::S("s")),
        Adjacent::V(vec![1, 2]),
        "control \u{0} \u{1f} \t \\ \" é 🦀",
        "x".repeat(1000),
        serde_json::json!({"b": [1, 2.5, "x", null, true], "a": {"nested": {}}, "": []}),
        serde_json::json!(u64::MAX),
        serde_json::from_str::<serde_json::Value>(
            "[1E400, -0, 0.1e1, 123456789012345678901234567890]"
        )
        .unwrap(),
        [Some(1.5f32), None],
        BTreeMap::<i8, ()>::from([(-1, ())]),
        Shape::Many(vec![Shape::Rect { w: 0, h: u32::MAX }]),
    );
}

/// Arbitrary JSON numbers as `serde_json::Number` (exact text with `arbitrary_precision`).
fn number() -> impl Strategy<Value = serde_json::Number> {
    prop_oneof![
        any::<i64>().prop_map(serde_json::Number::from),
        any::<u64>().prop_map(serde_json::Number::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::Number::from_f64(f).unwrap()),
        "-?(0|[1-9][0-9]{0,30})(\\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?"
            .prop_map(|t| serde_json::from_str::<serde_json::Number>(&t).unwrap()),
    ]
}

fn json_value(with_decimals: bool) -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value as J;
    let num: BoxedStrategy<serde_json::Number> = if with_decimals {
        number().boxed()
    } else {
        // Numbers whose text is that of an i64, u64 or f64: the ones that read back exactly.
        number()
            .prop_filter("i64, u64 or f64 text", |n| {
                let canonical = if let Some(i) = n.as_i64() {
                    Some(serde_json::Number::from(i))
                } else if let Some(u) = n.as_u64() {
                    Some(serde_json::Number::from(u))
                } else {
                    n.as_f64().and_then(serde_json::Number::from_f64)
                };
                canonical.is_some_and(|c| c.to_string() == n.to_string())
            })
            .boxed()
    };
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        num.prop_map(J::Number),
        ".{0,40}".prop_map(J::String),
        "[a-z]{100,300}".prop_map(J::String),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(J::Array),
            prop::collection::vec((".{0,12}", inner), 0..8)
                .prop_map(|kv| J::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_json_values_survive(v in json_value(true)) {
        let doc = Document::new(to_document(&v).unwrap()).unwrap();
        let json = doc.to_json();
        prop_assert_eq!(&json, &serde_json::to_string(&v).unwrap());
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, v);
    }

    #[test]
    fn arbitrary_json_values_deserialize_back(v in json_value(false)) {
        let doc = Document::new(to_document(&v).unwrap()).unwrap();
        let back: serde_json::Value = from_document(&doc).unwrap();
        prop_assert_eq!(back, v);
    }
}
