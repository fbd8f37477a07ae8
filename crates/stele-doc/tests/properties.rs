//! Property tests against `serde_json::Value` as the model.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use proptest::prelude::*;
use serde_json::{Map, Value as J};
use stele_doc::{Document, DocumentWriter, JsonOptions, KeyOrder, Value, WriteOptions};

/// Number texts of every storage class: small and large integers, u64 beyond i64, shortest
/// floats, and texts that only a decimal keeps (`1.50`, `1E5`, `-0`, huge).
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| ryu::Buffer::new().format_finite(f).to_owned()),
        (any::<i32>(), 0u32..40, any::<bool>())
            .prop_map(|(m, e, upper)| format!("{m}.{e:02}0{}{e}", if upper { "E" } else { "e-" })),
        Just("-0".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("0.30000000000000004441".to_owned()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-e]{1,3}",
        any::<String>(),
        Just(String::new()),
        "[a-z]{1,12}",
    ]
}

fn json() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        number().prop_map(|t| serde_json::from_str::<J>(&t).unwrap()),
        any::<String>().prop_map(J::String),
        "[ -~]{100,400}".prop_map(J::String),
    ];
    leaf.prop_recursive(6, 200, 12, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(J::Array),
            prop::collection::vec((key(), inner), 0..12)
                .prop_map(|kv| J::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Checks every accessor of `v` against the model `m`.
fn check(v: Value<'_>, m: &J) {
    match (v, m) {
        (Value::Null, J::Null) => {}
        (Value::Bool(a), J::Bool(b)) => assert_eq!(a, *b),
        (Value::Object(o), J::Object(map)) => {
            assert_eq!(o.len(), map.len());
            for (k, child) in map {
                check(o.get(k).unwrap_or_else(|| panic!("missing {k:?}")), child);
            }
            let original: Vec<&str> = o.iter_original().map(|(k, _)| k).collect();
            let want: Vec<&str> = map.keys().map(String::as_str).collect();
            assert_eq!(original, want);
            let sorted: Vec<&str> = o.iter().map(|(k, _)| k).collect();
            let mut want_sorted = want.clone();
            want_sorted.sort();
            assert_eq!(sorted, want_sorted);
            assert!(
                o.get("\u{10FFFF}not-a-key").is_none() || map.contains_key("\u{10FFFF}not-a-key")
            );
        }
        (Value::Array(a), J::Array(items)) => {
            assert_eq!(a.len(), items.len());
            for (i, child) in items.iter().enumerate() {
                check(a.get(i).unwrap(), child);
            }
            assert!(a.get(items.len()).is_none());
        }
        (Value::String(s), J::String(t)) => {
            assert_eq!(s.to_cow(), t.as_str());
            assert!(s.eq_str(t));
            assert_eq!(s.len(), t.len());
        }
        (v, J::Number(n)) => {
            let text = n.to_string();
            match v {
                Value::Int(i) => assert_eq!(i.to_string(), text),
                Value::UInt(u) => assert_eq!(u.to_string(), text),
                Value::Float(f) => assert_eq!(ryu::Buffer::new().format_finite(f), text),
                Value::Decimal(d) => assert_eq!(d, text),
                Value::Scaled(d) => {
                    assert_eq!(d.to_string(), text);
                    assert_eq!(Some(d.to_f64()), text.parse::<f64>().ok());
                }
                other => panic!("{other:?} for number {text}"),
            }
        }
        (v, m) => panic!("{v:?} read for {m}"),
    }
}

fn sorted_model(m: &J) -> J {
    match m {
        J::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            J::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted_model(v)))
                    .collect(),
            )
        }
        J::Array(items) => J::Array(items.iter().map(sorted_model).collect()),
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if std::env::var_os("CI").is_some() { 256 } else { 512 }))]

    #[test]
    fn json_round_trips_exactly(m in json()) {
        let text = serde_json::to_string(&m).unwrap();
        let bytes = stele_doc::from_json(text.as_bytes()).unwrap();
        let doc = Document::new(bytes.as_slice()).unwrap();
        prop_assert_eq!(doc.to_json(), text.clone());
        prop_assert_eq!(
            doc.to_json_with(&JsonOptions::new().pretty(true)),
            serde_json::to_string_pretty(&m).unwrap()
        );
        check(doc.root(), &m);
        // Sorted output equals the model with sorted keys.
        let sorted = serde_json::to_string(&sorted_model(&m)).unwrap();
        prop_assert_eq!(doc.to_json_with(&JsonOptions::new().sorted_keys(true)), sorted.clone());
        // A document written with sorted keys only prints them sorted, and is never larger.
        let opts = WriteOptions::default().key_order(KeyOrder::Sorted);
        let small = stele_doc::from_json_with(text.as_bytes(), opts).unwrap();
        prop_assert!(small.len() <= bytes.len());
        prop_assert_eq!(Document::new(small).unwrap().to_json(), sorted);
    }

    #[test]
    fn builder_matches_converter(m in json()) {
        fn build(w: &mut DocumentWriter, m: &J) {
            match m {
                J::Null => w.null().unwrap(),
                J::Bool(b) => w.bool(*b).unwrap(),
                J::Number(n) => w.number_text(&n.to_string()).unwrap(),
                J::String(s) => w.string(s).unwrap(),
                J::Array(items) => {
                    w.begin_array().unwrap();
                    for i in items { build(w, i); }
                    w.end_array().unwrap();
                }
                J::Object(map) => {
                    w.begin_object().unwrap();
                    for (k, v) in map { w.key(k).unwrap(); build(w, v); }
                    w.end_object().unwrap();
                }
            }
        }
        let mut w = DocumentWriter::new();
        build(&mut w, &m);
        let built = w.finish().unwrap();
        let converted = stele_doc::from_json(serde_json::to_string(&m).unwrap().as_bytes()).unwrap();
        prop_assert_eq!(built, converted);
    }

    /// Every document the database writes (input order, no LZ4 strings) has a stream form
    /// that rebuilds it byte for byte; with LZ4 strings, a stream is refused or exact.
    #[test]
    fn stream_forms_rebuild_documents_exactly(m in json()) {
        use stele_doc::stream;
        let text = serde_json::to_string(&m).unwrap();
        let mut w = DocumentWriter::with_options(stream::write_options());
        for (opts, must) in [(stream::write_options(), true), (WriteOptions::default(), false)] {
            let bytes = stele_doc::from_json_with(text.as_bytes(), opts).unwrap();
            let doc = Document::new(bytes.as_slice()).unwrap();
            let mut s = vec![0xEE];
            let exact = stream::encode(&doc, &mut w, &mut s);
            if exact {
                prop_assert!(stream::is_stream(&s[1..]));
                prop_assert_eq!(stream::decode(&s[1..], &mut w).unwrap(), bytes.clone());
            } else {
                prop_assert_eq!(&s, &[0xEE]);
            }
            prop_assert!(exact || !must, "{}", text);
        }
    }

    /// Arbitrary bytes as a stream: an error, or a valid document whose own stream rebuilds it.
    #[test]
    fn arbitrary_streams_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        use stele_doc::stream;
        let mut w = DocumentWriter::with_options(stream::write_options());
        if let Ok(doc) = stream::decode(&bytes, &mut w) {
            let d = Document::new(doc.as_slice()).unwrap();
            let mut s = Vec::new();
            prop_assert!(stream::encode(&d, &mut w, &mut s));
            prop_assert_eq!(stream::decode(&s, &mut w).unwrap(), doc);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(doc) = Document::new(bytes.as_slice()) {
            let text = doc.to_json();
            let again = stele_doc::from_json(text.as_bytes()).unwrap();
            prop_assert_eq!(Document::new(again).unwrap().to_json(), text);
        }
        // Arbitrary bytes as JSON: either an error or a valid document.
        if let Ok(doc) = stele_doc::from_json(&bytes) {
            prop_assert!(stele_doc::validate(&doc).is_ok());
        }
    }
}
