//! Aliases of indices and templates: filters and routing kept, parameters the target does
//! not know dropped with a note.

use serde_json::{Map, Value};

use super::plan::Notes;
use super::ProductVersion;

const KNOWN: &[&str] = &[
    "filter",
    "index_routing",
    "search_routing",
    "routing",
    "is_write_index",
    "is_hidden",
];

/// Why the aliases of an index or template cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AliasError {
    /// An entry of the list form is not a string (the entry).
    #[error("alias entry is not a name: {0}")]
    NotAName(Value),
    /// The definition of an alias is not an object.
    #[error("alias {alias}: definition is not an object: {definition}")]
    DefinitionNotObject { alias: String, definition: Value },
    /// The aliases are neither of the two forms (the value).
    #[error("aliases are neither an object nor a list: {0}")]
    NotObjectOrList(Value),
    /// The filter of an alias is the compressed bytes the snapshot stores, not JSON.
    #[error("alias {alias}: filter stored in binary form, which was not decoded")]
    BinaryFilter { alias: String },
    /// The filter of an alias is not an object.
    #[error("alias {alias}: filter is not an object: {filter}")]
    FilterNotObject { alias: String, filter: Value },
}

/// Turns the snapshot's alias definitions (object name → definition, or a list of names)
/// into the `aliases` body of a create request.
pub fn transform(
    aliases: &Value,
    target: ProductVersion,
    notes: &mut Notes,
) -> Result<Map<String, Value>, AliasError> {
    let mut out = Map::new();
    match aliases {
        Value::Null => {}
        Value::Array(names) => {
            for n in names {
                let Some(n) = n.as_str() else {
                    return Err(AliasError::NotAName(n.clone()));
                };
                out.insert(n.to_string(), Value::Object(Map::new()));
            }
        }
        Value::Object(m) => {
            for (name, def) in m {
                let def = match def {
                    Value::Object(d) => d,
                    Value::Null => {
                        out.insert(name.clone(), Value::Object(Map::new()));
                        continue;
                    }
                    other => {
                        return Err(AliasError::DefinitionNotObject {
                            alias: name.clone(),
                            definition: other.clone(),
                        })
                    }
                };
                out.insert(name.clone(), Value::Object(one(name, def, target, notes)?));
            }
        }
        other => return Err(AliasError::NotObjectOrList(other.clone())),
    }
    Ok(out)
}

fn one(
    name: &str,
    def: &Map<String, Value>,
    target: ProductVersion,
    notes: &mut Notes,
) -> Result<Map<String, Value>, AliasError> {
    let mut d = Map::new();
    for (k, v) in def {
        if v.is_null() {
            continue;
        }
        if !KNOWN.contains(&k.as_str()) {
            notes.warn(format!("alias {name}: unknown parameter {k} dropped"));
            continue;
        }
        match k.as_str() {
            "filter" => {
                let filter = match v {
                    Value::Object(_) => v.clone(),
                    Value::String(s) => serde_json::from_str::<Value>(s)
                        .ok()
                        .filter(Value::is_object)
                        .ok_or_else(|| AliasError::BinaryFilter {
                            alias: name.to_string(),
                        })?,
                    other => {
                        return Err(AliasError::FilterNotObject {
                            alias: name.to_string(),
                            filter: other.clone(),
                        })
                    }
                };
                d.insert(k.clone(), filter);
            }
            "is_write_index" if !target.supports_write_index_alias() => {
                notes.warn(format!(
                    "alias {name}: is_write_index dropped ({target} does not support it)"
                ));
            }
            "is_hidden" if !target.supports_hidden_alias() => {
                notes.warn(format!(
                    "alias {name}: is_hidden dropped ({target} does not support it)"
                ));
            }
            _ => {
                d.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_filters_and_routing() {
        let src = json!({
            "alias1": {},
            "alias2": {"filter": {"term": {"user": "kimchy"}}, "index_routing": "1", "search_routing": "1,2", "is_write_index": true},
            "old": {"filter": "{\"match_all\":{}}", "weird": 1, "is_hidden": true}
        });
        let mut notes = Notes::default();
        let out = transform(&src, ProductVersion::os(3, 0), &mut notes).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({
                "alias1": {},
                "alias2": {"filter": {"term": {"user": "kimchy"}}, "index_routing": "1", "search_routing": "1,2", "is_write_index": true},
                "old": {"filter": {"match_all": {}}, "is_hidden": true}
            })
        );
        assert_eq!(notes.warnings.len(), 1);
        let mut notes = Notes::default();
        let out = transform(&src, ProductVersion::es(6, 3), &mut notes).unwrap();
        assert!(!out["alias2"]
            .as_object()
            .unwrap()
            .contains_key("is_write_index"));
        assert!(!out["old"].as_object().unwrap().contains_key("is_hidden"));
        assert_eq!(notes.warnings.len(), 3);
    }

    #[test]
    fn names_and_bad_input() {
        let out = transform(
            &json!(["a", "b"]),
            ProductVersion::os(1, 0),
            &mut Notes::default(),
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert!(transform(
            &json!({"a": {"filter": "\u{1}binary"}}),
            ProductVersion::os(1, 0),
            &mut Notes::default()
        )
        .is_err());
        assert!(transform(&json!(7), ProductVersion::os(1, 0), &mut Notes::default()).is_err());
    }
}
