//! Vector values that a target reads differently: `dense_vector` values in `_source` given
//! as strings — hexadecimal for byte and bit vectors (Elasticsearch 8.14+), base 64 of
//! big-endian float32 for float vectors (Elasticsearch 9.3+) — rewritten as JSON arrays,
//! which OpenSearch `knn_vector` and every `dense_vector` read as they are. Arrays are
//! left untouched, and so is every document without such a string (found by a scan of
//! the bytes, without parsing).

use base64::Engine;
use serde_json::Value;

/// How the values of one vector field are encoded when they are strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorElement {
    /// Base 64 of big-endian IEEE-754 float32 values.
    Float,
    /// Hexadecimal bytes, each one signed 8-bit value (`byte` and `bit` vectors).
    Byte,
}

/// One vector field: its path of object keys from the `_source` root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorField {
    pub path: Vec<String>,
    pub element: VectorElement,
}

impl VectorField {
    /// From a dotted path and the mapping's `element_type` (`float` when absent).
    pub fn new(dotted: &str, element_type: Option<&str>) -> VectorField {
        VectorField {
            path: dotted.split('.').map(str::to_string).collect(),
            element: match element_type {
                Some("byte") | Some("bit") => VectorElement::Byte,
                _ => VectorElement::Float,
            },
        }
    }
}

/// The `dense_vector` fields of a typeless mapping (inside objects and nested fields;
/// multi-fields hold no values of their own).
pub fn vector_fields(mapping: &Value) -> Vec<VectorField> {
    fn walk(props: &Value, prefix: &str, out: &mut Vec<VectorField>) {
        let Some(props) = props.as_object() else {
            return;
        };
        for (name, f) in props {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            if f.get("type").and_then(Value::as_str) == Some("dense_vector") {
                out.push(VectorField::new(
                    &path,
                    f.get("element_type").and_then(Value::as_str),
                ));
            }
            if let Some(p) = f.get("properties") {
                walk(p, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(p) = mapping.get("properties") {
        walk(p, "", &mut out);
    }
    out
}

/// Whether `source` may hold a string value for one of the fields' last keys: a
/// `"<key>"` followed by `:` and a `"` (blanks allowed). Cheap and conservative.
fn may_hold_string(source: &[u8], fields: &[VectorField]) -> bool {
    fields.iter().any(|f| {
        let Some(last) = f.path.last() else {
            return false;
        };
        let dotted = f.path.join(".");
        [last.as_str(), dotted.as_str()]
            .iter()
            .any(|key| key_then_string(source, key))
    })
}

/// Whether `"key"` occurs in `source` followed by `:` and a string.
fn key_then_string(source: &[u8], key: &str) -> bool {
    {
        let needle = format!("\"{key}\"");
        let n = needle.as_bytes();
        let mut at = 0;
        while let Some(pos) = find(&source[at..], n) {
            let mut i = at + pos + n.len();
            while i < source.len() && source[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < source.len() && source[i] == b':' {
                i += 1;
                while i < source.len() && source[i].is_ascii_whitespace() {
                    i += 1;
                }
                if i < source.len() && source[i] == b'"' {
                    return true;
                }
            }
            at += pos + 1;
        }
        false
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn decode(s: &str, element: VectorElement) -> Option<Vec<Value>> {
    match element {
        VectorElement::Byte => {
            let s = s.trim();
            if !s.len().is_multiple_of(2) || s.is_empty() {
                return None;
            }
            let bytes = s.as_bytes();
            (0..bytes.len() / 2)
                .map(|i| {
                    let hi = (bytes[2 * i] as char).to_digit(16)?;
                    let lo = (bytes[2 * i + 1] as char).to_digit(16)?;
                    Some(Value::from(((hi << 4) | lo) as u8 as i8))
                })
                .collect()
        }
        VectorElement::Float => {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .ok()?;
            if raw.is_empty() || !raw.len().is_multiple_of(4) {
                return None;
            }
            raw.chunks_exact(4)
                .map(|c| {
                    let f = f32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                    // f32 → f64 exactly, written in its shortest f32 form.
                    let v: f64 = format!("{f}").parse().ok()?;
                    serde_json::Number::from_f64(v).map(Value::Number)
                })
                .collect()
        }
    }
}

/// Rewrites the string values of `fields` at `path` under `v` (through arrays of objects).
fn rewrite(v: &mut Value, path: &[String], element: VectorElement) -> bool {
    match v {
        Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= rewrite(item, path, element);
            }
            changed
        }
        Value::Object(o) => {
            let Some((first, rest)) = path.split_first() else {
                return false;
            };
            // A dotted key (`"a.b": …`) holds the rest of the path in one name.
            let mut changed = false;
            if let Some(child) = o.get_mut(first.as_str()) {
                changed |= if rest.is_empty() {
                    match child {
                        Value::String(s) => match decode(s, element) {
                            Some(arr) => {
                                *child = Value::Array(arr);
                                true
                            }
                            None => false,
                        },
                        _ => false,
                    }
                } else {
                    rewrite(child, rest, element)
                };
            }
            if !rest.is_empty() {
                let joined = path.join(".");
                if let Some(child @ Value::String(_)) = o.get_mut(joined.as_str()) {
                    if let Value::String(s) = child {
                        if let Some(arr) = decode(s, element) {
                            *child = Value::Array(arr);
                            changed = true;
                        }
                    }
                }
            }
            changed
        }
        _ => false,
    }
}

/// The `_source` with string-encoded vectors of `fields` rewritten as arrays, or `None`
/// when nothing changes (the bytes then go on untouched).
pub fn rewrite_vectors(source: &[u8], fields: &[VectorField]) -> Option<Vec<u8>> {
    if fields.is_empty() || !may_hold_string(source, fields) {
        return None;
    }
    let mut v: Value = serde_json::from_slice(source).ok()?;
    let mut changed = false;
    for f in fields {
        changed |= rewrite(&mut v, &f.path, f.element);
    }
    if !changed {
        return None;
    }
    serde_json::to_vec(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> Vec<VectorField> {
        vector_fields(&json!({"properties": {
            "f": {"type": "dense_vector", "dims": 2},
            "b": {"type": "dense_vector", "dims": 4, "element_type": "byte"},
            "h": {"type": "dense_vector", "dims": 16, "element_type": "bit"},
            "o": {"properties": {"v": {"type": "dense_vector", "dims": 2}}},
            "n": {"type": "nested", "properties": {"v": {"type": "dense_vector", "dims": 1, "element_type": "byte"}}},
            "t": {"type": "text", "fields": {"k": {"type": "keyword"}}}
        }}))
    }

    #[test]
    fn finds_the_vector_fields() {
        let f = fields();
        let paths: Vec<String> = f.iter().map(|v| v.path.join(".")).collect();
        assert_eq!(paths, ["b", "f", "h", "n.v", "o.v"]);
        assert_eq!(f[0].element, VectorElement::Byte);
        assert_eq!(f[1].element, VectorElement::Float);
    }

    #[test]
    fn strings_become_arrays_and_arrays_stay() {
        // 1.5 and -2.0 as big-endian float32: 3fc00000 c0000000.
        let b64 =
            base64::engine::general_purpose::STANDARD.encode([0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0]);
        let src = format!(
            r#"{{"f":"{b64}","b":"7f80ff00","h" : "0aff","o":{{"v":[0.5,1]}},"n":[{{"v":"05"}},{{"v":[1]}}],"t":"7f80"}}"#
        );
        let out = rewrite_vectors(src.as_bytes(), &fields()).expect("changed");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            json!({"f": [1.5, -2.0], "b": [127, -128, -1, 0], "h": [10, -1],
                   "o": {"v": [0.5, 1]}, "n": [{"v": [5]}, {"v": [1]}], "t": "7f80"})
        );
        // Arrays only: untouched, not even parsed.
        let same = br#"{"f":[0.1,0.2],"b":[1,2,3,4],"t":"text"}"#;
        assert_eq!(rewrite_vectors(same, &fields()), None);
        // A string that is not a vector is left for the target to refuse.
        assert_eq!(rewrite_vectors(br#"{"b":"xyz"}"#, &fields()), None);
        assert_eq!(rewrite_vectors(br#"{"f":"AAA"}"#, &fields()), None);
        // Dotted keys.
        let out = rewrite_vectors(br#"{"o.v":"P8AAAD/AAAA="}"#, &fields()).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&out).unwrap(),
            json!({"o.v": [1.5, 1.5]})
        );
    }
}
