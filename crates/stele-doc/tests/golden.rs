//! Golden files: exact bytes for known inputs (so any change of the format is deliberate and
//! bumps `FORMAT_VERSION`), and corrupt documents with the error each must produce.
//!
//! Regenerate `valid.txt` after a deliberate format change with `STELE_BLESS=1 cargo test --test golden`.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use std::fmt::Write as _;

const INPUTS: &[&str] = &[
    "null",
    "true",
    "-7",
    r#""hi""#,
    "[]",
    "{}",
    r#"{"b":1,"a":[true,null,"x"]}"#,
    r#"{"a":{"a":1.5},"c":18446744073709551615,"b":1E400}"#,
    r#"[[1,2],[3,4]]"#,
    r#"{"a":1,"b":{"b":2,"a":3}}"#,
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn golden_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
fn valid_documents_have_their_golden_bytes() {
    let path = golden_path("valid.txt");
    if std::env::var_os("STELE_BLESS").is_some() {
        let mut out = String::new();
        for input in INPUTS {
            let bytes = stele_doc::from_json(input.as_bytes()).unwrap();
            writeln!(out, "{input}\t{}", hex(&bytes)).unwrap();
        }
        std::fs::write(&path, out).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let mut seen = 0;
    for line in text.lines() {
        let (json, want) = line.split_once('\t').unwrap();
        let bytes = stele_doc::from_json(json.as_bytes()).unwrap();
        assert_eq!(hex(&bytes), want, "{json}");
        let doc = stele_doc::Document::new(unhex(want)).unwrap();
        assert_eq!(doc.to_json(), json);
        seen += 1;
    }
    assert_eq!(seen, INPUTS.len());
}

#[test]
fn corrupt_documents_fail_with_their_golden_error() {
    let text = std::fs::read_to_string(golden_path("corrupt.txt")).unwrap();
    let mut seen = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (bytes, want) = line.split_once('\t').unwrap();
        let err = stele_doc::validate(&unhex(bytes)).unwrap_err().to_string();
        assert!(err.contains(want), "{bytes}: got {err:?}, want {want:?}");
        seen += 1;
    }
    assert!(seen >= 10);
}
