//! Canonical JSON and argument fingerprints.
//!
//! Object keys are written in sorted order whatever map type `serde_json`
//! was built with, so the same arguments always produce the same text and the
//! same fingerprint.

use serde_json::Value;

/// Writes `value` as compact JSON with object keys sorted.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(*key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A stable 64-bit FNV-1a fingerprint of `value`'s canonical JSON, as 16 hex digits.
///
/// It identifies the exact arguments of a parked tool call; an approval must
/// quote it. It is a fingerprint, not a security hash.
pub fn fingerprint(value: &Value) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let text = canonical_json(value);
    let mut hash = OFFSET;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_fingerprint() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":[1,"z"]}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":[1,"z"],"y":2},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":[1,"z"],"y":2},"b":1}"#);
        assert_eq!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn different_arguments_differ() {
        assert_ne!(fingerprint(&json!({"a": 1})), fingerprint(&json!({"a": 2})));
        assert_eq!(fingerprint(&json!({"a": 1})).len(), 16);
    }
}
