//! What verify can still compare on a target index without `_source`: the rebuilt
//! document's values of fields whose doc values the target returns in a form the
//! document determines exactly — `keyword` (sorted, distinct; values longer than
//! `ignore_above` are not kept), whole-number types and `boolean` (sorted, repeats kept),
//! `date` (asked as `epoch_millis`; the document's values read by the mapping's format,
//! see [`super::dates`]), `float` (compared as the 32-bit value the target widens),
//! `double`, and `ip` (the canonical text: IPv6 compressed, v4-mapped as IPv4; sorted,
//! distinct). They are asked with `docvalue_fields` in a `_search` by ids. Fields another
//! field copies into (`copy_to`), normalized keywords, fields without doc values and
//! `nested` ones are left out: their doc values are not a function of the document's own
//! value. A date field whose format is not understood is left out too, and named.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde_json::{json, Map, Value};

use super::dates;

/// At most this many fields per request (the servers' default
/// `index.max_docvalue_fields_search`).
const MAX_FIELDS: usize = 100;

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Keyword {
        ignore_above: Option<u64>,
    },
    Whole,
    Boolean,
    /// Epoch milliseconds; the document's values read by these formats.
    Date(Vec<dates::DateFormat>),
    Float,
    Double,
    Ip,
}

/// One field compared through its doc values.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub path: String,
    kind: Kind,
}

/// The fields compared on the index of a `GET INDEX/_mapping` answer (typeless, or
/// Elasticsearch 6's one type). An answer for several indices (an alias) gives none.
pub fn fields(answer: &Value) -> Vec<Field> {
    fields_and_left_out(answer).0
}

/// The fields of a comparable type left out with why (a date format not understood): the
/// report names them as compared by count and ids only.
pub fn left_out(answer: &Value) -> Vec<String> {
    fields_and_left_out(answer).1
}

fn fields_and_left_out(answer: &Value) -> (Vec<Field>, Vec<String>) {
    let none = (Vec::new(), Vec::new());
    let Some(indices) = answer.as_object().filter(|o| o.len() == 1) else {
        return none;
    };
    let Some(m) = indices.values().next().and_then(|i| i.get("mappings")) else {
        return none;
    };
    let root = if m.get("properties").is_some() {
        m
    } else {
        match m.as_object() {
            Some(types) if types.len() == 1 => types.values().next().unwrap_or(m),
            _ => m,
        }
    };
    let Some(props) = root.get("properties").and_then(Value::as_object) else {
        return none;
    };
    let mut copied = BTreeSet::new();
    copy_targets(props, &mut copied);
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    walk(props, "", &copied, &mut out, &mut left_out);
    out.truncate(MAX_FIELDS);
    (out, left_out)
}

fn copy_targets(props: &Map<String, Value>, out: &mut BTreeSet<String>) {
    for def in props.values() {
        match def.get("copy_to") {
            Some(Value::String(s)) => {
                out.insert(s.clone());
            }
            Some(Value::Array(a)) => {
                out.extend(a.iter().filter_map(Value::as_str).map(String::from))
            }
            _ => {}
        }
        for sub in ["properties", "fields"] {
            if let Some(p) = def.get(sub).and_then(Value::as_object) {
                copy_targets(p, out);
            }
        }
    }
}

fn walk(
    props: &Map<String, Value>,
    prefix: &str,
    copied: &BTreeSet<String>,
    out: &mut Vec<Field>,
    left_out: &mut Vec<String>,
) {
    for (name, def) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let ty = def.get("type").and_then(Value::as_str);
        if let Some(p) = def.get("properties").and_then(Value::as_object) {
            if ty.is_none() || ty == Some("object") {
                walk(p, &path, copied, out, left_out);
            }
            continue;
        }
        if copied.contains(&path)
            || def
                .get("doc_values")
                .is_some_and(|d| d == &Value::Bool(false) || d == "false")
        {
            continue;
        }
        let kind = match ty {
            Some("keyword") if def.get("normalizer").is_none() => Kind::Keyword {
                ignore_above: def.get("ignore_above").and_then(|v| {
                    v.as_u64()
                        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                }),
            },
            Some("long" | "integer" | "short" | "byte") => Kind::Whole,
            Some("boolean") => Kind::Boolean,
            Some("date") => match dates::formats(def.get("format").and_then(Value::as_str)) {
                Ok(f) => Kind::Date(f),
                Err(e) => {
                    left_out.push(format!("{path} ({e})"));
                    continue;
                }
            },
            Some("float") => Kind::Float,
            Some("double") => Kind::Double,
            Some("ip") => Kind::Ip,
            _ => continue,
        };
        out.push(Field { path, kind });
    }
}

/// A `_search` body asking the doc values of `fields` for the documents `ids`.
pub fn request(ids: &[&str], fields: &[Field]) -> Value {
    json!({
        "query": {"ids": {"values": ids}},
        "size": ids.len(),
        "_source": false,
        "docvalue_fields": fields
            .iter()
            .map(|f| match f.kind {
                Kind::Date(_) => json!({"field": f.path, "format": "epoch_millis"}),
                _ => json!(f.path),
            })
            .collect::<Vec<_>>(),
    })
}

/// The values at dotted `path` of `v`, arrays flattened at every level, nulls left out.
fn collect<'a>(v: &'a Value, segs: &[&str], out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| collect(x, segs, out)),
        Value::Null if segs.is_empty() => {}
        _ if segs.is_empty() => out.push(v),
        Value::Object(o) => {
            // `a.b` may be written as nested objects or as one dotted key
            for k in 1..=segs.len() {
                if let Some(x) = o.get(&segs[..k].join(".")) {
                    collect(x, &segs[k..], out);
                }
            }
        }
        _ => {}
    }
}

/// `values` as `f`'s doc values hold them (sorted; keywords and addresses distinct),
/// `None` when one is not of the field's kind (then nothing is claimed about it).
/// `answered`: the target's answer (dates as `epoch_millis`), else the document's values.
fn normalize(f: &Field, values: &[&Value], answered: bool) -> Option<Vec<Value>> {
    match &f.kind {
        Kind::Keyword { ignore_above } => {
            let mut v = Vec::with_capacity(values.len());
            for x in values {
                let s = match x {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return None,
                };
                // Elasticsearch counts UTF-16 units
                if ignore_above.is_none_or(|n| s.encode_utf16().count() as u64 <= n) {
                    v.push(s);
                }
            }
            v.sort();
            v.dedup();
            Some(v.into_iter().map(Value::String).collect())
        }
        Kind::Whole => {
            let mut v = Vec::with_capacity(values.len());
            for x in values {
                v.push(match x {
                    Value::Number(n) => n.as_i64()?,
                    Value::String(s) => s.parse::<i64>().ok()?,
                    _ => return None,
                });
            }
            v.sort_unstable();
            Some(v.into_iter().map(Value::from).collect())
        }
        Kind::Boolean => {
            let mut v = Vec::with_capacity(values.len());
            for x in values {
                v.push(match x {
                    Value::Bool(b) => *b,
                    Value::String(s) if s == "true" => true,
                    Value::String(s) if s == "false" => false,
                    _ => return None,
                });
            }
            v.sort_unstable();
            Some(v.into_iter().map(Value::Bool).collect())
        }
        Kind::Date(formats) => {
            let mut v = Vec::with_capacity(values.len());
            for x in values {
                v.push(if answered {
                    dates::answered_millis(x)?
                } else {
                    dates::to_millis(x, formats)?
                });
            }
            v.sort_unstable();
            Some(v.into_iter().map(Value::from).collect())
        }
        Kind::Float | Kind::Double => {
            let mut v = Vec::with_capacity(values.len());
            for x in values {
                let d = match x {
                    Value::Number(n) => n.as_f64()?,
                    Value::String(s) => s.trim().parse::<f64>().ok()?,
                    _ => return None,
                };
                if !d.is_finite() {
                    return None;
                }
                // a float field keeps 32 bits; the target answers them widened
                v.push(if f.kind == Kind::Float {
                    f64::from(d as f32)
                } else {
                    d
                });
            }
            v.sort_unstable_by(f64::total_cmp);
            Some(v.into_iter().map(Value::from).collect())
        }
        Kind::Ip => {
            let mut v = Vec::with_capacity(values.len());
            for x in values {
                let ip: IpAddr = x.as_str()?.parse().ok()?;
                v.push(ip.to_canonical().to_string());
            }
            v.sort();
            v.dedup();
            Some(v.into_iter().map(Value::String).collect())
        }
    }
}

/// The first field whose doc values on the target (`hit_fields`, a hit's `fields`) differ
/// from what the rebuilt `source` holds; `None` when all agree.
pub fn first_difference<'a>(
    fields: &'a [Field],
    source: &Value,
    hit_fields: Option<&Value>,
) -> Option<&'a str> {
    let empty = Value::Array(Vec::new());
    for f in fields {
        let segs: Vec<&str> = f.path.split('.').collect();
        let mut want = Vec::new();
        collect(source, &segs, &mut want);
        let Some(want) = normalize(f, &want, false) else {
            continue;
        };
        let got: Vec<&Value> = match hit_fields.and_then(|h| h.get(&f.path)).unwrap_or(&empty) {
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        if normalize(f, &got, true).as_ref() != Some(&want) {
            return Some(&f.path);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_a_mapping_and_their_comparison() {
        let answer = json!({"i": {"mappings": {"_source": {"enabled": false}, "properties": {
            "k": {"type": "keyword", "ignore_above": 3},
            "n": {"type": "long"},
            "b": {"type": "boolean"},
            "t": {"type": "text", "copy_to": "all"},
            "all": {"type": "keyword"},
            "norm": {"type": "keyword", "normalizer": "lower"},
            "nodv": {"type": "integer", "doc_values": false},
            "u": {"properties": {"age": {"type": "integer"}}},
            "nest": {"type": "nested", "properties": {"x": {"type": "long"}}}}}}});
        let f = fields(&answer);
        let mut paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
        paths.sort();
        assert_eq!(paths, ["b", "k", "n", "u.age"]);
        let source = json!({"k": ["b", "a", "b", "long one"], "n": [5, 3], "b": true,
                            "u": [{"age": 3}, {"age": 1}]});
        let hit = json!({"k": ["a", "b"], "n": [3, 5], "b": [true], "u.age": [1, 3]});
        assert_eq!(first_difference(&f, &source, Some(&hit)), None);
        let hit = json!({"k": ["a", "b"], "n": [3, 6], "b": [true], "u.age": [1, 3]});
        assert_eq!(first_difference(&f, &source, Some(&hit)), Some("n"));
        // a value the target does not hold at all
        let hit = json!({"k": ["a", "b"], "n": [3, 5], "u.age": [1, 3]});
        assert_eq!(first_difference(&f, &source, Some(&hit)), Some("b"));
        // Elasticsearch 6: one mapping type
        let typed = json!({"i": {"mappings": {"doc": {"properties": {"n": {"type": "long"}}}}}});
        assert_eq!(fields(&typed).len(), 1);
        // nothing to compare but counts and ids
        let text = json!({"i": {"mappings": {"properties": {"t": {"type": "text"}}}}});
        assert!(fields(&text).is_empty());
        // an alias over several indices: nothing claimed
        assert!(fields(&json!({"a": answer["i"].clone(), "b": answer["i"].clone()})).is_empty());
    }

    #[test]
    fn dates_floats_doubles_and_addresses_compared_as_the_target_keeps_them() {
        let answer = json!({"i": {"mappings": {"_source": {"enabled": false}, "properties": {
            "when": {"type": "date"},
            "day": {"type": "date", "format": "epoch_second"},
            "odd": {"type": "date", "format": "yyyy/MM/dd"},
            "f": {"type": "float"},
            "d": {"type": "double"},
            "ip": {"type": "ip"}}}}});
        let f = fields(&answer);
        let omitted = left_out(&answer);
        let mut paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
        paths.sort();
        assert_eq!(paths, ["d", "day", "f", "ip", "when"]);
        assert_eq!(omitted, ["odd (date format yyyy/MM/dd not understood)"]);
        let asked = request(&["1"], &f);
        assert!(asked["docvalue_fields"]
            .as_array()
            .unwrap()
            .contains(&json!({"field": "when", "format": "epoch_millis"})));
        let source = json!({"when": ["2021-03-04T05:06:07.890+01:00", 0], "day": 12,
                            "odd": "2021/03/04", "f": [1.1, 0.5], "d": 2.2,
                            "ip": ["::ffff:10.0.0.1", "2001:0db8:0:0:0:0:0:1", "10.0.0.1"]});
        // as OpenSearch answers: epoch_millis text, floats widened, addresses canonical
        let hit = json!({"when": ["0", "1614830767890"], "day": ["12000"],
                         "f": [0.5, 1.100000023841858], "d": [2.2],
                         "ip": ["10.0.0.1", "2001:db8::1"]});
        assert_eq!(first_difference(&f, &source, Some(&hit)), None);
        let mut changed = hit.clone();
        changed["when"] = json!(["0", "1614830767891"]);
        assert_eq!(first_difference(&f, &source, Some(&changed)), Some("when"));
        let mut changed = hit.clone();
        changed["f"] = json!([0.5, 1.2000000476837158]);
        assert_eq!(first_difference(&f, &source, Some(&changed)), Some("f"));
        let mut changed = hit.clone();
        changed["d"] = json!([2.2000000000000006]);
        assert_eq!(first_difference(&f, &source, Some(&changed)), Some("d"));
        let mut changed = hit.clone();
        changed["ip"] = json!(["10.0.0.2", "2001:db8::1"]);
        assert_eq!(first_difference(&f, &source, Some(&changed)), Some("ip"));
        // a value the document's format does not read: nothing claimed
        let unread = json!({"when": "last tuesday"});
        let hit = json!({"when": ["5"]});
        assert_eq!(first_difference(&f, &unread, Some(&hit)), None);
    }
}
