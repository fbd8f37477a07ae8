//! Untrusted bytes as a document: validation must reject them or everything must read back
//! consistently. Never a panic, never an out-of-bounds read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele_doc::{Document, Value};

fn walk(v: Value<'_>) -> usize {
    match v {
        Value::Object(o) => o
            .iter_original()
            .map(|(k, child)| {
                assert!(o.get(k).is_some());
                walk(child) + k.len()
            })
            .sum(),
        Value::Array(a) => a.iter().map(walk).sum(),
        Value::String(s) => s.to_cow().len(),
        _ => 1,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = Document::new(data) else { return };
    walk(doc.root());
    let text = doc.to_json();
    let again = stele_doc::from_json(text.as_bytes()).expect("a valid document prints valid JSON");
    assert_eq!(
        Document::new(again)
            .expect("written documents validate")
            .to_json(),
        text
    );
});
