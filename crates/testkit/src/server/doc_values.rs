//! `docvalue_fields` in `_search`: the values a field's doc values hold, taken from the
//! stored document and the index mapping, in the order Lucene returns them — `keyword`
//! sorted and distinct (sorted-set doc values), whole-number types and `boolean` sorted
//! with repeated values kept (sorted-numeric). Other field types, `format` and patterns are
//! refused with a 400 naming the testkit server rather than answered in a form the real
//! servers would not use. Fields the mapping does not hold return nothing, as on the real
//! servers.

use serde_json::{Map, Value};

use super::error::EsError;

fn unsupported(what: String) -> EsError {
    EsError::new(
        400,
        "illegal_argument_exception",
        format!("{what} (not supported by the testkit server)"),
    )
}

/// The field names of a `docvalue_fields` list (names, or `{"field": NAME}`).
pub(crate) fn requested(v: Option<&Value>) -> Result<Vec<String>, EsError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Some(list) = v.as_array() else {
        return Err(EsError::parse("[docvalue_fields] must be an array"));
    };
    let mut out = Vec::new();
    for f in list {
        let name = match f {
            Value::String(s) => s.as_str(),
            Value::Object(o) => {
                if o.keys().any(|k| k != "field") {
                    return Err(unsupported(format!(
                        "docvalue_fields entry {f}: only [field] is understood"
                    )));
                }
                o.get("field")
                    .and_then(Value::as_str)
                    .ok_or_else(|| EsError::parse(format!("docvalue_fields entry {f}")))?
            }
            other => return Err(EsError::parse(format!("docvalue_fields entry {other}"))),
        };
        if name.contains('*') {
            return Err(unsupported(format!("docvalue_fields pattern [{name}]")));
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// The mapping of the field at dotted `path` (through `properties`), if mapped.
fn field_mapping<'a>(
    mappings: &'a Value,
    type_name: Option<&str>,
    path: &str,
) -> Option<&'a Value> {
    let mut node = match type_name {
        Some(t) => mappings.get(t).unwrap_or(mappings),
        None => mappings,
    };
    for seg in path.split('.') {
        node = node.get("properties")?.get(seg)?;
    }
    Some(node)
}

/// The values at dotted `path` of `source`, arrays flattened at every level.
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

/// The `fields` of one hit: each requested field's doc values, omitted when empty.
pub(crate) fn hit_fields(
    names: &[String],
    mappings: &Value,
    type_name: Option<&str>,
    source: &Value,
) -> Result<Map<String, Value>, EsError> {
    let mut out = Map::new();
    for name in names {
        let Some(m) = field_mapping(mappings, type_name, name) else {
            continue;
        };
        let ty = m.get("type").and_then(Value::as_str).unwrap_or("object");
        if m.get("doc_values").and_then(Value::as_bool) == Some(false) {
            return Err(EsError::new(
                400,
                "illegal_argument_exception",
                format!("Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{ty}]. Use doc values instead."),
            ));
        }
        let mut raw = Vec::new();
        collect(source, &name.split('.').collect::<Vec<_>>(), &mut raw);
        let values: Vec<Value> = match ty {
            "keyword" => {
                if m.get("normalizer").is_some() {
                    return Err(unsupported(format!(
                        "doc values of the normalized keyword [{name}]"
                    )));
                }
                let above = m.get("ignore_above").and_then(Value::as_u64);
                let mut v: Vec<String> = raw
                    .iter()
                    .map(|x| match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .filter(|s| above.is_none_or(|n| s.chars().count() as u64 <= n))
                    .collect();
                v.sort();
                v.dedup();
                v.into_iter().map(Value::String).collect()
            }
            "long" | "integer" | "short" | "byte" => {
                let mut v: Vec<i64> = raw
                    .iter()
                    .filter_map(|x| match x {
                        Value::Number(n) => {
                            n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64))
                        }
                        Value::String(s) => s.parse::<f64>().ok().map(|f| f.trunc() as i64),
                        _ => None,
                    })
                    .collect();
                v.sort();
                v.into_iter().map(Value::from).collect()
            }
            "boolean" => {
                let mut v: Vec<bool> = raw
                    .iter()
                    .filter_map(|x| match x {
                        Value::Bool(b) => Some(*b),
                        Value::String(s) if s == "true" => Some(true),
                        Value::String(s) if s == "false" || s.is_empty() => Some(false),
                        _ => None,
                    })
                    .collect();
                v.sort();
                v.into_iter().map(Value::Bool).collect()
            }
            other => {
                return Err(unsupported(format!(
                    "doc values of [{name}], a field of type [{other}]"
                )))
            }
        };
        if !values.is_empty() {
            out.insert(name.clone(), Value::Array(values));
        }
    }
    Ok(out)
}
