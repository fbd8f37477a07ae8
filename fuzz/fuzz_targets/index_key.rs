//! Untrusted bytes as a key of an index (encoded values, then the document id), as queries
//! split them: byte 0 picks the number of fields (1 to 16), the rest is the key. A key that
//! splits is its encoded values, each exactly one encoding long, then the id. The same
//! bytes as JSON, when they are a document: every index key the database writes for it splits
//! back into its values and its id. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele::fuzzing::{index_keys, index_value_len, split_index_key};

/// The encoded values of `tuple`, one by one; `None` if they do not cut it exactly.
fn values(mut tuple: &[u8]) -> Option<usize> {
    let mut n = 0;
    while !tuple.is_empty() {
        let len = index_value_len(tuple)?;
        assert!((1..=tuple.len()).contains(&len));
        tuple = &tuple[len..];
        n += 1;
    }
    Some(n)
}

fuzz_target!(|data: &[u8]| {
    if let Some(len) = index_value_len(data) {
        assert!((1..=data.len()).contains(&len));
    }
    if let Some((&first, key)) = data.split_first() {
        let fields = usize::from(first % 16) + 1;
        if let Some((tuple, id)) = split_index_key(fields, key) {
            assert_eq!([tuple, id].concat(), key);
            assert_eq!(values(tuple), Some(fields), "one encoded value per field");
        }
    }
    let Ok(doc) = stele_doc::from_json(data) else {
        return;
    };
    for fields in [&["a"][..], &["a[]", "b"], &["b.c", "a[]", "a"]] {
        let keys = index_keys(fields, &doc, b"some id").expect("an index of a document");
        for key in keys {
            let (tuple, id) = split_index_key(fields.len(), &key).expect("written keys split");
            assert_eq!(id, b"some id");
            assert_eq!(values(tuple), Some(fields.len()));
        }
    }
});
