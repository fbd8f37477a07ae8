//! Glue for the peers: a plain serializer view of `serde_json::Value` (for MessagePack, BSON and
//! CBOR), value digests that make every reader really read what it found, and feature probes.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use sonic_rs::{JsonType, JsonValueTrait};

/// Serializes a `serde_json::Value` as plain data: numbers as i64/u64/f64 (not as
/// `arbitrary_precision`'s private struct), objects as maps with string keys, in input order.
#[derive(Debug, Clone, Copy)]
pub struct Plain<'a>(pub &'a serde_json::Value);

impl Serialize for Plain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde_json::Value as J;
        match self.0 {
            J::Null => s.serialize_unit(),
            J::Bool(b) => s.serialize_bool(*b),
            J::Number(n) => {
                if let Some(i) = n.as_i64() {
                    s.serialize_i64(i)
                } else if let Some(u) = n.as_u64() {
                    s.serialize_u64(u)
                } else {
                    s.serialize_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            J::String(t) => s.serialize_str(t),
            J::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for x in a {
                    seq.serialize_element(&Plain(x))?;
                }
                seq.end()
            }
            J::Object(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k.as_str(), &Plain(v))?;
                }
                map.end()
            }
        }
    }
}

// Digests: strings count their (unescaped) length, numbers their value (i64, else u64, else f64
// bits), other scalars a constant, containers 4. The same for every reader, so results can be
// compared for equality.

thread_local! {
    /// Where [`digest_ours`] decompresses strings.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Digest of one of our values.
#[inline]
pub fn digest_ours(v: &stele_doc::Value<'_>) -> u64 {
    use stele_doc::Value as V;
    match v {
        V::String(s) => match s.as_borrowed() {
            Some(text) => text.len() as u64,
            // Compressed: decompressed into a reused buffer, as a reader that keeps one does.
            None => SCRATCH.with_borrow_mut(|buf| {
                buf.clear();
                s.append_to(buf);
                buf.len() as u64
            }),
        },
        V::Int(i) => *i as u64,
        V::Null => 3,
        V::Bool(b) => 2 - u64::from(*b),
        V::Object(_) | V::Array(_) => 4,
        other => {
            if let Some(i) = other.as_i64() {
                i as u64
            } else if let Some(u) = other.as_u64() {
                u
            } else {
                other.as_f64().map_or(0, f64::to_bits)
            }
        }
    }
}

/// Digest of a `serde_json` value.
#[inline]
pub fn digest_serde(v: &serde_json::Value) -> u64 {
    use serde_json::Value as J;
    match v {
        J::String(s) => s.len() as u64,
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                i as u64
            } else if let Some(u) = n.as_u64() {
                u
            } else {
                n.as_f64().map_or(0, f64::to_bits)
            }
        }
        J::Null => 3,
        J::Bool(b) => 2 - u64::from(*b),
        J::Object(_) | J::Array(_) => 4,
    }
}

/// Digest of a sonic-rs lazy value (parses the scalar it points at).
#[inline]
pub fn digest_sonic(v: &sonic_rs::LazyValue<'_>) -> u64 {
    match v.get_type() {
        JsonType::String => v.as_str().map_or(0, |s| s.len() as u64),
        JsonType::Number => {
            if let Some(i) = v.as_i64() {
                i as u64
            } else if let Some(u) = v.as_u64() {
                u
            } else {
                v.as_f64().map_or(0, f64::to_bits)
            }
        }
        JsonType::Null => 3,
        JsonType::Boolean => 2 - u64::from(v.as_bool() == Some(true)),
        JsonType::Object | JsonType::Array => 4,
    }
}

/// Which serde_json features are on in this build (they unify per crate): probed, not assumed.
pub fn serde_json_features() -> String {
    let arbitrary = serde_json::from_str::<serde_json::Value>("1e400").is_ok();
    let ordered = serde_json::from_str::<serde_json::Value>(r#"{"b":1,"a":2}"#)
        .ok()
        .and_then(|v| v.as_object().and_then(|m| m.keys().next().cloned()))
        .is_some_and(|k| k == "b");
    let mut on = Vec::new();
    if arbitrary {
        on.push("arbitrary_precision");
    }
    if ordered {
        on.push("preserve_order");
    }
    if on.is_empty() {
        "default features".to_owned()
    } else {
        on.join(" + ")
    }
}

/// Target features this binary was compiled with (tells whether `target-cpu=native` was on).
pub fn target_features() -> String {
    let mut v = Vec::new();
    if cfg!(target_feature = "sse4.2") {
        v.push("sse4.2");
    }
    if cfg!(target_feature = "avx2") {
        v.push("avx2");
    }
    if cfg!(target_feature = "bmi2") {
        v.push("bmi2");
    }
    if cfg!(target_feature = "pclmulqdq") {
        v.push("pclmulqdq");
    }
    if cfg!(target_feature = "avx512f") {
        v.push("avx512f");
    }
    if v.is_empty() {
        "baseline x86-64 (no target-cpu=native)".to_owned()
    } else {
        v.join(", ")
    }
}
