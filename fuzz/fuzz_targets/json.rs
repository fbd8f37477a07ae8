//! Arbitrary bytes as JSON text: an error, or a document that validates and prints JSON that
//! converts to a document printing the same JSON. (Not the same bytes: a duplicate key's dropped
//! value stays behind as unreachable bytes in the first document.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(bytes) = stele_doc::from_json(data) else {
        return;
    };
    let doc = stele_doc::Document::new(bytes.as_slice()).expect("written documents validate");
    let text = doc.to_json();
    let again = stele_doc::from_json(text.as_bytes()).expect("output is valid JSON");
    let again = stele_doc::Document::new(again).expect("written documents validate");
    assert_eq!(
        again.to_json(),
        text,
        "output converts to an equal document"
    );
});
