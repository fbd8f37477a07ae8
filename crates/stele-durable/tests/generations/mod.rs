//! Generations of a map written by the crash tests (SIGKILL and power loss): each one a
//! whole, recognisable content, so that a mix of two is seen.

use std::collections::BTreeMap;
use stele_durable::DurableMap;

/// Keys of a generation.
pub const KEYS: u64 = 300;

/// The content of generation `g`: which keys exist and their values.
pub fn model(g: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for k in 0..KEYS {
        if !(k * 31 + g * 7).is_multiple_of(11) {
            let v = format!("{k}:{}", g - g % (k % 4 + 1));
            m.insert(format!("key{k:04}").into_bytes(), v.into_bytes());
        }
    }
    m.insert(b"gen".to_vec(), g.to_string().into_bytes());
    m
}

/// Changes `map` (holding any generation) into generation `g`, unsaved.
pub fn write(map: &mut DurableMap, g: u64) -> stele_durable::Result<()> {
    let want = model(g);
    for k in 0..KEYS {
        let key = format!("key{k:04}").into_bytes();
        match want.get(&key) {
            Some(v) => map.put(&key, v)?,
            None => {
                map.remove(&key)?;
            }
        }
    }
    map.put(b"gen", g.to_string().as_bytes())
}
