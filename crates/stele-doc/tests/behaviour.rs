//! Policies, builder errors, widths and compression: the documented behaviour, one case each.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use stele_doc::{
    Document, DocumentWriter, DuplicateKeys, Error, JsonOptions, Value, WriteOptions, from_json,
    from_json_with,
};

fn doc(json: &str) -> Document<Vec<u8>> {
    Document::new(from_json(json.as_bytes()).unwrap()).unwrap()
}

#[test]
fn duplicate_key_policies() {
    let input = br#"{"a":1,"b":2,"a":3}"#;
    let last = from_json(input).unwrap();
    assert_eq!(Document::new(last).unwrap().to_json(), r#"{"a":3,"b":2}"#);
    let opts = WriteOptions::default().duplicate_keys(DuplicateKeys::FirstWins);
    let first = from_json_with(input, opts).unwrap();
    assert_eq!(Document::new(first).unwrap().to_json(), r#"{"a":1,"b":2}"#);
    let opts = WriteOptions::default().duplicate_keys(DuplicateKeys::Reject);
    let err = from_json_with(input, opts).unwrap_err();
    assert_eq!(err, Error::DuplicateKey { key: "a".into() });
    assert!(err.to_string().contains("LastWins"), "{err}");
}

#[test]
fn json_errors_say_where() {
    let err = from_json(b"{\n  \"a\": [1, 2,,]\n}").unwrap_err();
    match err {
        Error::Json {
            line,
            column,
            offset,
            ..
        } => {
            assert_eq!((line, column, offset), (2, 14, 15));
        }
        other => panic!("{other}"),
    }
    let msg = from_json(b"\"\\ud800\"").unwrap_err().to_string();
    assert!(msg.contains("lone surrogate"), "{msg}");
    let msg = from_json(b"[1] x").unwrap_err().to_string();
    assert!(msg.contains("trailing characters"), "{msg}");
    let msg = from_json(b"\"\xff\"").unwrap_err().to_string();
    assert!(msg.contains("UTF-8"), "{msg}");
    let msg = from_json(b"").unwrap_err().to_string();
    assert!(msg.contains("end of input"), "{msg}");
}

#[test]
fn builder_rejects_misuse_and_recovers() {
    let mut w = DocumentWriter::new();
    w.begin_object().unwrap();
    assert!(matches!(
        w.i64(1),
        Err(Error::Builder {
            expected: "a key",
            ..
        })
    ));
    w.key("k").unwrap();
    assert!(matches!(w.key("again"), Err(Error::Builder { .. })));
    assert!(matches!(w.end_array(), Err(Error::Builder { .. })));
    assert!(matches!(w.end_object(), Err(Error::Builder { .. })));
    assert!(matches!(w.finish(), Err(Error::Builder { .. })));
    w.reset();
    assert!(matches!(
        w.finish(),
        Err(Error::Builder {
            expected: "a root value",
            ..
        })
    ));
    w.i64(5).unwrap();
    assert!(matches!(w.i64(6), Err(Error::Builder { .. })));
    assert_eq!(Document::new(w.finish().unwrap()).unwrap().to_json(), "5");
    assert!(matches!(w.f64(f64::NAN), Err(Error::NonFiniteFloat { .. })));
    assert!(matches!(
        w.number_text("01"),
        Err(Error::InvalidNumber { .. })
    ));
    assert!(matches!(w.key("x"), Err(Error::Builder { .. })));
}

#[test]
fn scalars_keep_their_exact_form() {
    let d = doc(
        r#"[0,-1,127,128,-129,32768,2147483648,-9223372036854775808,18446744073709551615,1.5,-0,1E2,1e400,"é"]"#,
    );
    let a = d.root().as_array().unwrap();
    assert!(matches!(a.get(7), Some(Value::Int(i64::MIN))));
    assert!(matches!(a.get(8), Some(Value::UInt(u64::MAX))));
    assert!(matches!(a.get(9), Some(Value::Scaled(d)) if d.to_f64() == 1.5 && d.scale() == 1));
    assert!(matches!(a.get(10), Some(Value::Decimal("-0"))));
    assert!(matches!(a.get(12), Some(Value::Decimal("1e400"))));
    assert_eq!(a.get(11).unwrap().as_f64(), Some(100.0));
    assert_eq!(
        d.to_json(),
        r#"[0,-1,127,128,-129,32768,2147483648,-9223372036854775808,18446744073709551615,1.5,-0,1E2,1e400,"é"]"#
    );
}

#[test]
fn wide_objects_stay_fast_and_correct() {
    let n = 10_000;
    let json = format!(
        "{{{}}}",
        (0..n)
            .map(|i| format!("\"key{}\":{i}", (i * 7919) % n))
            .collect::<Vec<_>>()
            .join(",")
    );
    let d = doc(&json);
    let o = d.root().as_object().unwrap();
    assert_eq!(o.len(), n);
    assert_eq!(
        o.widths().0,
        4,
        "names area beyond 64 KiB needs 4-byte key ids"
    );
    for i in 0..n {
        let k = (i * 7919) % n;
        assert_eq!(o.get(&format!("key{k}")).unwrap().as_i64(), Some(i as i64));
    }
    assert_eq!(d.to_json(), json);
}

#[test]
fn offsets_widen_with_the_document() {
    for size in [200, 70_000, 5_000_000] {
        let big = "x".repeat(size);
        let json = format!(r#"{{"a":"{big}","b":[1,"{big}",true],"c":null}}"#);
        let bytes = from_json_with(
            json.as_bytes(),
            WriteOptions::default().compress_strings(None),
        )
        .unwrap();
        let d = Document::new(bytes.as_slice()).unwrap();
        let (_, wo, _) = d.root().as_object().unwrap().widths();
        // The object header sits after both copies of the string: its offsets need 2 bytes for
        // a 200-byte string (distance > 255) and 4 beyond 64 KiB.
        let want = if size < 60_000 { 2 } else { 4 };
        assert_eq!(wo, want, "size {size}");
        assert_eq!(d.to_json(), json);
        assert_eq!(
            d.path("b[1]").unwrap().unwrap().as_str().unwrap().len(),
            size
        );
    }
}

#[test]
fn long_strings_compress_when_it_pays() {
    let text = "the quick brown fox jumps over the lazy dog ".repeat(20);
    let json = format!(r#"{{"t":"{text}","short":"abc"}}"#);
    let compressed = from_json(json.as_bytes()).unwrap();
    let plain = from_json_with(
        json.as_bytes(),
        WriteOptions::default().compress_strings(None),
    )
    .unwrap();
    assert!(
        compressed.len() * 3 < plain.len(),
        "{} vs {}",
        compressed.len(),
        plain.len()
    );
    let d = Document::new(compressed).unwrap();
    let s = d.get("t").unwrap().as_string().unwrap();
    assert!(s.is_compressed());
    assert_eq!(s.to_cow(), text);
    assert!(s.as_borrowed().is_none());
    assert!(
        d.get("short")
            .unwrap()
            .as_string()
            .unwrap()
            .as_borrowed()
            .is_some()
    );
    assert_eq!(d.to_json(), json);
    // Incompressible long strings stay plain.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let noise: String = (0..400)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'!' + (state % 90) as u8)
        })
        .collect();
    let d = doc(&format!(
        r#"["{}"]"#,
        noise.replace('\\', "/").replace('"', "'")
    ));
    assert!(
        !d.root()
            .index(0)
            .unwrap()
            .as_string()
            .unwrap()
            .is_compressed()
    );
}

#[test]
fn paths_and_cached_paths() {
    let d = doc(r#"{"a":{"b":[{"c":1},{"c":2,"d.e":3}]},"x":true}"#);
    assert_eq!(d.path("a.b[1].c").unwrap().unwrap().as_i64(), Some(2));
    assert_eq!(
        d.path(r#"a.b[1]["d.e"]"#).unwrap().unwrap().as_i64(),
        Some(3)
    );
    assert!(d.path("a.b[2]").unwrap().is_none());
    assert!(d.path("x.y").unwrap().is_none());
    assert!(d.path("a..b").is_err());
    let mut cached = stele_doc::CachedPath::new("a.b[0].c").unwrap();
    for _ in 0..3 {
        assert_eq!(cached.get(d.root()).unwrap().as_i64(), Some(1));
    }
    // A different shape invalidates the hint, not the answer.
    let other = doc(r#"{"0":0,"a":{"a":0,"b":[{"b":0,"c":9}]}}"#);
    assert_eq!(cached.get(other.root()).unwrap().as_i64(), Some(9));
    assert_eq!(cached.get(d.root()).unwrap().as_i64(), Some(1));
}

#[test]
fn pretty_output_matches_serde_json() {
    let json = r#"{"a":[],"b":{},"c":[1,{"d":null}],"e":"\u0001\n"}"#;
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(
        doc(json).to_json_with(&JsonOptions::new().pretty(true)),
        serde_json::to_string_pretty(&v).unwrap()
    );
}

#[test]
fn inspect_accounts_for_every_byte() {
    let d = doc(r#"{"name":"Ada","tags":["a","b"],"n":{"name":1.5}}"#);
    let l = stele_doc::inspect(&d);
    assert_eq!(l.objects, 2);
    assert_eq!(l.arrays, 1);
    assert_eq!(l.names, 3, "name is stored once");
    assert_eq!(
        l.names_bytes
            + l.object_header_bytes
            + l.array_header_bytes
            + l.string_bytes
            + l.number_bytes
            + l.framing_bytes,
        l.total_bytes
    );
    assert!(l.to_string().contains("names area"));
}

#[test]
fn the_deepest_documents_need_little_stack() {
    // Validation and printing use explicit stacks: 1024 levels on a 128 KiB thread stack
    // (the compact writer recurses over the first 32 levels only). An unoptimized build's
    // frames are several times larger: it gets 512 KiB, still far under 1024 levels' worth.
    let input = "[{\"a\":".repeat(512) + "1" + &"}]".repeat(512);
    let opts = WriteOptions::default().max_depth(1024);
    let bytes = from_json_with(input.as_bytes(), opts).unwrap();
    let stack_bytes = if cfg!(debug_assertions) {
        512 << 10
    } else {
        128 << 10
    };
    let handle = std::thread::Builder::new()
        .stack_size(stack_bytes)
        .spawn(move || {
            let doc = Document::new(bytes.as_slice()).unwrap();
            let pretty = doc.to_json_with(&JsonOptions::new().pretty(true));
            (doc.to_json(), pretty.lines().count())
        })
        .unwrap();
    let (json, lines) = handle.join().unwrap();
    assert_eq!(json, input);
    assert_eq!(lines, 2 * 1024 + 1);
    let too_deep = "[".repeat(1025) + &"]".repeat(1025);
    let opts = WriteOptions::default().max_depth(5000);
    assert!(matches!(
        from_json_with(too_deep.as_bytes(), opts),
        Err(Error::TooDeep { limit: 1024 })
    ));
}

/// Key names are told apart by their bytes, not only by their first 8 bytes and length: names
/// that share a prefix, end in NUL bytes or differ past byte 8, and the same names again (one
/// writer for many documents).
#[test]
fn names_that_look_alike_stay_apart() {
    let input = r#"{"abcdefgh1":1,"abcdefgh2":2,"a":3,"a\u0000":4,"":5,"abcdefgh":6,"abcdefgh\u0000":7,"abcdefgh1":8,"a\u0000":9}"#;
    let expected =
        r#"{"abcdefgh1":8,"abcdefgh2":2,"a":3,"a\u0000":9,"":5,"abcdefgh":6,"abcdefgh\u0000":7}"#;
    let mut w = DocumentWriter::new();
    for _ in 0..3 {
        let d = Document::new(w.from_json(input.as_bytes()).unwrap()).unwrap();
        assert_eq!(d.to_json(), expected);
        assert_eq!(d.get("abcdefgh2").and_then(|v| v.as_i64()), Some(2));
        assert_eq!(d.get("a\0").and_then(|v| v.as_i64()), Some(9));
        assert_eq!(d.get("abcdefgh\0").and_then(|v| v.as_i64()), Some(7));
        assert_eq!(d.get("").and_then(|v| v.as_i64()), Some(5));
        assert_eq!(d.root().as_object().unwrap().len(), 7);
    }
    // Many names of one length and prefix: their hashes meet in the index's probes.
    let wide: Vec<String> = (0..2000)
        .map(|i| format!("\"abcdefgh{i:04}\":{i}"))
        .collect();
    let wide = format!("{{{}}}", wide.join(","));
    let d = Document::new(w.from_json(wide.as_bytes()).unwrap()).unwrap();
    assert_eq!(d.root().as_object().unwrap().len(), 2000);
    assert_eq!(d.get("abcdefgh1234").and_then(|v| v.as_i64()), Some(1234));
    let opts = WriteOptions::default().duplicate_keys(DuplicateKeys::Reject);
    let err = from_json_with(br#"{"abcdefgh1":1,"abcdefgh2":2,"abcdefgh1":3}"#, opts).unwrap_err();
    assert_eq!(
        err,
        Error::DuplicateKey {
            key: "abcdefgh1".into()
        }
    );
}
