//! Vector fields compared as the target stores them. A `dense_vector` / `knn_vector` float
//! element is a float32 on every target: what counts is its bits, not the decimal text
//! the source happened to hold (a client may have sent `0.1234567891`, which Elasticsearch
//! and OpenSearch index as the float32 `0.12345679`; a target that rebuilds `_source` from
//! its vector files — OpenSearch 3 derived source, Elasticsearch 9.2+ with vectors left
//! out of `_source` — returns the latter). So each element of a float vector field is read
//! as the float32 its text denotes (the number parsed, then narrowed, as the targets'
//! parsers do) and compared by bits: `-0.0` and `0.0` differ, a changed last digit that
//! does not change the float32 does not. Byte and bit vector elements are whole numbers,
//! compared exactly. Everything else of the document is compared by
//! [`super::exact::difference`].
//!
//! The vector fields come from the target's mapping ([`fields`]); a difference names the
//! field and element (`field emb[2]: source 0.5, target 0.25 (float32 bits 3f000000 ≠
//! 3e800000)`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::exact::{self, Exact};

/// How the elements of a vector field are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    /// float32, by bits.
    Float,
    /// Signed bytes (byte and bit vectors), exactly.
    Integer,
}

/// A vector field of the target's mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorPath {
    /// Dotted path from the `_source` root (through nested arrays).
    pub path: String,
    pub element: Element,
}

/// The vector fields (`dense_vector`, `knn_vector`) of a `GET INDEX/_mapping` answer (any
/// index of it; Elasticsearch 6 typed mappings included).
pub fn fields(mapping_answer: &Value) -> Vec<VectorPath> {
    fn walk(props: &serde_json::Map<String, Value>, prefix: &str, out: &mut Vec<VectorPath>) {
        for (name, def) in props {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            let text = |k: &str| def.get(k).and_then(Value::as_str);
            let element = match def.get("type").and_then(Value::as_str) {
                Some("dense_vector") => Some(match text("element_type") {
                    Some("byte" | "bit") => Element::Integer,
                    _ => Element::Float,
                }),
                Some("knn_vector") => Some(match text("data_type") {
                    Some("byte" | "binary") => Element::Integer,
                    _ => Element::Float,
                }),
                _ => None,
            };
            match element {
                Some(element) => out.push(VectorPath { path, element }),
                None => {
                    if let Some(p) = def.get("properties").and_then(Value::as_object) {
                        walk(p, &path, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for index in mapping_answer
        .as_object()
        .into_iter()
        .flat_map(|o| o.values())
    {
        let Some(m) = index.get("mappings").and_then(Value::as_object) else {
            continue;
        };
        if let Some(p) = m.get("properties").and_then(Value::as_object) {
            walk(p, "", &mut out);
        }
        // Elasticsearch 6: one mapping type (`_doc` or a name of its own); meta fields
        // (`_source`, `_routing`) have no properties
        for (k, t) in m {
            if k != "properties" {
                if let Some(p) = t.get("properties").and_then(Value::as_object) {
                    walk(p, "", &mut out);
                }
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    out
}

/// The first difference between what was expected and what the target holds: vector
/// fields element by element (float32 bits, bytes exactly), the rest exactly; `None` when
/// they are equal.
pub fn difference(expected: &Exact, held: &Exact, fields: &[VectorPath]) -> Option<String> {
    if fields.is_empty() {
        return exact::difference(expected, held);
    }
    let (mut e, mut h) = (expected.clone(), held.clone());
    for f in fields {
        let segs: Vec<&str> = f.path.split('.').collect();
        let mut want = BTreeMap::new();
        let mut have = BTreeMap::new();
        take(&mut e, &segs, String::new(), &mut want);
        take(&mut h, &segs, String::new(), &mut have);
        for (at, w) in &want {
            let d = match have.get(at) {
                None => Some(format!("field {at} missing")),
                Some(g) => compare(at, w, g, f.element),
            };
            if d.is_some() {
                return d;
            }
        }
        if let Some(at) = have.keys().find(|k| !want.contains_key(*k)) {
            return Some(format!("field {at} only in the target"));
        }
    }
    exact::difference(&e, &h)
}

/// Removes the values at `segs` below `node` (through arrays, and keys holding dots) into
/// `out`, keyed by where they were (`parts[1].sub[0].sv`).
fn take(node: &mut Exact, segs: &[&str], at: String, out: &mut BTreeMap<String, Exact>) {
    match node {
        Exact::Object(map) => {
            for n in 1..=segs.len() {
                let key = segs[..n].join(".");
                let here = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                if n == segs.len() {
                    if let Some(v) = map.remove(&key) {
                        out.insert(here, v);
                    }
                } else if let Some(child) = map.get_mut(&key) {
                    take(child, &segs[n..], here, out);
                }
            }
        }
        Exact::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                take(item, segs, format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// One vector value on both sides.
fn compare(at: &str, want: &Exact, have: &Exact, element: Element) -> Option<String> {
    let (Exact::Array(w), Exact::Array(h)) = (want, have) else {
        return exact::difference(want, have).map(|d| prefixed(at, &d));
    };
    if w.len() != h.len() {
        return Some(format!(
            "field {at}: {} elements in the source, {} on the target",
            w.len(),
            h.len()
        ));
    }
    for (i, (a, b)) in w.iter().zip(h).enumerate() {
        let (Exact::Number(x), Exact::Number(y)) = (a, b) else {
            if a != b {
                return Some(format!("field {at}[{i}]: source {a}, target {b}"));
            }
            continue;
        };
        match element {
            Element::Integer => {
                if x != y {
                    return Some(format!(
                        "field {at}[{i}]: source {}, target {}",
                        x.as_str(),
                        y.as_str()
                    ));
                }
            }
            Element::Float => {
                let (Some(fx), Some(fy)) = (float32(x.as_str()), float32(y.as_str())) else {
                    if x != y {
                        return Some(format!(
                            "field {at}[{i}]: source {}, target {}",
                            x.as_str(),
                            y.as_str()
                        ));
                    }
                    continue;
                };
                if fx.to_bits() != fy.to_bits() {
                    return Some(format!(
                        "field {at}[{i}]: source {}, target {} (float32 bits {:08x} ≠ {:08x})",
                        x.as_str(),
                        y.as_str(),
                        fx.to_bits(),
                        fy.to_bits()
                    ));
                }
            }
        }
    }
    None
}

/// The float32 a JSON number's text denotes, as Elasticsearch and OpenSearch read a
/// vector element: parsed as a double, then narrowed (Jackson's `floatValue()` of a
/// parsed number; `(float) double` in Java rounds to nearest, as `as f32` does). `None`
/// for a value out of float range (which the targets refuse).
fn float32(text: &str) -> Option<f32> {
    let d: f64 = text.parse().ok()?;
    let f = d as f32;
    f.is_finite().then_some(f)
}

fn prefixed(at: &str, d: &str) -> String {
    match d.strip_prefix("field ") {
        Some(rest) => format!("field {at}.{rest}"),
        None => format!("field {at}: {d}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn x(s: &str) -> Exact {
        Exact::parse(s.as_bytes()).unwrap()
    }

    fn f(path: &str, element: Element) -> VectorPath {
        VectorPath {
            path: path.into(),
            element,
        }
    }

    #[test]
    fn float_elements_compare_by_float32_bits() {
        let fields = [f("emb", Element::Float)];
        // more digits than a float32 holds: the same float32 as the target's text
        let sent = x(r#"{"emb":[0.1234567891,1,3.4028235E38],"t":"a"}"#);
        let derived =
            x(r#"{"t":"a","emb":[0.12345679,1.0,340282350000000000000000000000000000000]}"#);
        assert_eq!(difference(&sent, &derived, &fields), None);
        // the plain exact comparison calls that different (the reason for this module)
        assert!(exact::difference(&sent, &derived).is_some());
        // a changed element is named with its index
        let changed = x(r#"{"t":"a","emb":[0.12345679,1.5,3.4028235E38]}"#);
        let d = difference(&sent, &changed, &fields).unwrap();
        assert!(d.starts_with("field emb[1]: source 1, target 1.5"), "{d}");
        // the sign of zero is a different float32
        let d = difference(&x(r#"{"emb":[-0.0]}"#), &x(r#"{"emb":[0.0]}"#), &fields).unwrap();
        assert!(d.contains("80000000 ≠ 00000000"), "{d}");
        // the rest of the document is still compared exactly
        let d = difference(
            &sent,
            &x(r#"{"t":"b","emb":[0.12345679,1,3.4028235E38]}"#),
            &fields,
        );
        assert_eq!(d.as_deref(), Some("field t: source \"a\", target \"b\""));
    }

    #[test]
    fn byte_vectors_missing_and_extra_and_nested() {
        let fields = [
            f("obj.bv", Element::Integer),
            f("parts.sub.sv", Element::Float),
        ];
        let want = x(
            r#"{"obj":{"bv":[-128,5]},"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[2]},{"sv":[0.3]}]}]}"#,
        );
        let same = x(
            r#"{"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[2.0]},{"sv":[0.30000001]}]}],"obj":{"bv":[-128,5.0]}}"#,
        );
        assert_eq!(difference(&want, &same, &fields), None);
        let moved = x(
            r#"{"obj":{"bv":[-128,5]},"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[0.3]},{"sv":[2]}]}]}"#,
        );
        let d = difference(&want, &moved, &fields).unwrap();
        assert!(
            d.starts_with("field parts[1].sub[0].sv[0]: source 2, target 0.3"),
            "{d}"
        );
        let byte = x(
            r#"{"obj":{"bv":[-127,5]},"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[2]},{"sv":[0.3]}]}]}"#,
        );
        assert_eq!(
            difference(&want, &byte, &fields).as_deref(),
            Some("field obj.bv[0]: source -128, target -127")
        );
        let missing =
            x(r#"{"obj":{},"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[2]},{"sv":[0.3]}]}]}"#);
        assert_eq!(
            difference(&want, &missing, &fields).as_deref(),
            Some("field obj.bv missing")
        );
        let extra = x(
            r#"{"obj":{"bv":[-128,5]},"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[2]},{"sv":[0.3]}]}],"x":1}"#,
        );
        assert_eq!(
            difference(&want, &extra, &fields).as_deref(),
            Some("field x only in the target")
        );
        // a dotted key holds the field as well
        let dotted = x(
            r#"{"obj.bv":[-128,5],"parts":[{"sub":[{"sv":[1.5]}]},{"sub":[{"sv":[2]},{"sv":[0.3]}]}]}"#,
        );
        assert!(
            difference(&want, &dotted, &fields).is_some(),
            "object vs dotted key shape"
        );
    }

    #[test]
    fn fields_of_a_mapping_answer() {
        let answer = json!({"i": {"mappings": {"properties": {
            "emb": {"type": "knn_vector", "dimension": 4},
            "b": {"type": "knn_vector", "dimension": 4, "data_type": "byte"},
            "o": {"properties": {"d": {"type": "dense_vector", "dims": 3, "element_type": "bit"}}},
            "n": {"type": "nested", "properties": {"v": {"type": "dense_vector", "dims": 2}}},
            "t": {"type": "text"}
        }}}});
        assert_eq!(
            fields(&answer),
            vec![
                f("b", Element::Integer),
                f("emb", Element::Float),
                f("n.v", Element::Float),
                f("o.d", Element::Integer),
            ]
        );
        let es6 = json!({"i": {"mappings": {"_doc": {"properties": {"v": {"type": "dense_vector", "dims": 2}}}}}});
        assert_eq!(fields(&es6), vec![f("v", Element::Float)]);
    }
}
