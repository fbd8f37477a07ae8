//! Untrusted bytes as a table or a list: opening must reject them, or every read must
//! return data or an error. Never a panic, never an out-of-bounds read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stele_table::{Table, TableList};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Table::from_bytes(data.to_vec()) {
        let _ = t.verify_all();
        let mut keys = Vec::new();
        for e in t.iter().take(1000) {
            match e {
                Ok((k, _)) => keys.push(k.to_vec()),
                Err(_) => break,
            }
        }
        for k in &keys {
            let _ = t.get(k);
            let _ = t.rank(k);
            let _ = t.prefix(k).count();
        }
        let _ = t.iter().rev().take(1000).count();
        let _ = t.nth(t.len() / 2);
        let _ = t.get_many(&keys);
        let _ = t.diff_info();
        let mut c = t.cursor();
        while let Ok(Some(_)) = c.next_entry() {}
    }
    if let Ok(l) = TableList::from_bytes(data.to_vec()) {
        let _ = l.verify_all();
        let _ = l.iter().take(1000).count();
        let _ = l.get(l.len() / 2);
        let _ = l.iter().rev().take(1000).count();
    }
});
