//! Untrusted bytes as a document's stream form (`stele_doc::stream`), as a damaged stream
//! block would hand them to the reader: an error, or a valid document whose own stream form
//! rebuilds it. Never a panic, never an invalid document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele_doc::{Document, DocumentWriter, stream};

fuzz_target!(|data: &[u8]| {
    let mut w = DocumentWriter::with_options(stream::write_options());
    let Ok(doc) = stream::decode(data, &mut w) else {
        return;
    };
    let d = Document::new(doc.as_slice()).expect("a rebuilt document validates");
    let mut again = Vec::new();
    assert!(stream::encode(&d, &mut w, &mut again), "a rebuilt document has a stream");
    assert_eq!(stream::decode(&again, &mut w).expect("its stream decodes"), doc);
});
