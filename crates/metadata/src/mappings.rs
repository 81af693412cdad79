//! Mappings: the snapshot's typed forms unwrapped, parameters that modern targets refuse
//! removed (with a warning), `string` fields turned into `text`/`keyword`, several mapping
//! types merged into one, and the result wrapped in a type name for ES 6 targets.

use serde_json::{Map, Value};

use super::plan::Notes;
use super::ProductVersion;

/// The name of the pseudo-type that held defaults for new types (ES ≤ 6).
pub const DEFAULT_TYPE: &str = "_default_";

/// Top-level keys that only appear in a typeless mapping body.
const MAPPING_KEYS: &[&str] = &[
    "properties",
    "dynamic",
    "dynamic_templates",
    "dynamic_date_formats",
    "date_detection",
    "numeric_detection",
    "runtime",
    "enabled",
    "_source",
    "_routing",
    "_meta",
    "_all",
    "_field_names",
    "_size",
    "_parent",
    "_timestamp",
    "_ttl",
    "_data_stream_timestamp",
    "include_in_all",
];

/// Root-level meta fields that modern targets no longer accept.
const REMOVED_ROOT: &[(&str, &str)] = &[
    ("_all", "removed in Elasticsearch 7 (use copy_to)"),
    ("_timestamp", "removed in Elasticsearch 5"),
    ("_ttl", "removed in Elasticsearch 5"),
    ("_boost", "removed in Elasticsearch 2"),
    ("_analyzer", "removed in Elasticsearch 2"),
    ("_index", "not configurable since Elasticsearch 2"),
    ("_uid", "not configurable since Elasticsearch 2"),
    ("_id", "not configurable since Elasticsearch 2"),
    ("_type", "not configurable since Elasticsearch 2"),
    ("_size", "needs the mapper-size plugin on the target"),
    (
        "_parent",
        "parent/child was replaced by the join field in Elasticsearch 6; convert it by hand",
    ),
];

/// Field parameters that no longer exist.
const REMOVED_FIELD_PARAMS: &[(&str, &str)] = &[
    ("include_in_all", "removed with _all"),
    ("precision_step", "removed in Elasticsearch 6"),
    ("index_name", "removed in Elasticsearch 2"),
    ("path", "removed in Elasticsearch 2"),
    ("lat_lon", "removed from geo_point in Elasticsearch 5"),
    ("geohash", "removed from geo_point in Elasticsearch 5"),
    (
        "geohash_prefix",
        "removed from geo_point in Elasticsearch 5",
    ),
    (
        "geohash_precision",
        "removed from geo_point in Elasticsearch 5",
    ),
    ("validate", "removed from geo_point in Elasticsearch 5"),
    ("validate_lat", "removed from geo_point in Elasticsearch 5"),
    ("validate_lon", "removed from geo_point in Elasticsearch 5"),
    ("normalize", "removed from geo_point in Elasticsearch 5"),
    ("normalize_lat", "removed from geo_point in Elasticsearch 5"),
    ("normalize_lon", "removed from geo_point in Elasticsearch 5"),
];

/// Field parameters whose value must be a strict boolean since Elasticsearch 6.
const BOOLEAN_PARAMS: &[&str] = &[
    "store",
    "doc_values",
    "enabled",
    "coerce",
    "ignore_malformed",
    "include_in_parent",
    "include_in_root",
    "eager_global_ordinals",
    "fielddata",
    "norms",
];

/// What to do with an index whose mapping has several types (ES ≤ 6 sources).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MultiTypeMode {
    /// Union all types into one mapping (fields must agree where they overlap).
    #[default]
    Merge,
    /// One target index per type, named `<index>_<type>`.
    Split,
}

/// A multi-type mode that is neither `merge` nor `split` (the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("multi-type mode `{0}`: expected merge or split")]
pub struct ParseMultiTypeModeError(pub String);

impl std::str::FromStr for MultiTypeMode {
    type Err = ParseMultiTypeModeError;
    fn from_str(s: &str) -> Result<Self, ParseMultiTypeModeError> {
        match s {
            "merge" => Ok(MultiTypeMode::Merge),
            "split" => Ok(MultiTypeMode::Split),
            other => Err(ParseMultiTypeModeError(other.to_string())),
        }
    }
}

/// Why the mappings of an index or template cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingsError {
    /// The mapping is the compressed bytes the snapshot stores, not JSON.
    #[error("mapping stored in binary (compressed) form, which was not decoded")]
    Binary,
    /// An entry of the array form is not an object (the entry).
    #[error("mapping entry is not an object: {0}")]
    EntryNotObject(Value),
    /// The mappings are neither of the two forms (the value).
    #[error("mappings are neither an array nor an object: {0}")]
    NotArrayOrObject(Value),
}

/// Reads the snapshot's mapping forms into `(type, mapping)` pairs: an array of
/// single-key objects (index metadata, legacy templates), an object keyed by type, or a
/// typeless object (composable templates, returned with the type `_doc`).
pub fn typed(value: &Value) -> Result<Vec<(String, Value)>, MappingsError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(entries) => {
            let mut out = Vec::new();
            for e in entries {
                match e {
                    Value::Object(m) => {
                        for (t, mapping) in m {
                            out.push((t.clone(), mapping.clone()));
                        }
                    }
                    Value::String(_) => return Err(MappingsError::Binary),
                    other => return Err(MappingsError::EntryNotObject(other.clone())),
                }
            }
            Ok(out)
        }
        Value::Object(m) if m.is_empty() => Ok(Vec::new()),
        Value::Object(m) => {
            let typeless = m.keys().any(|k| MAPPING_KEYS.contains(&k.as_str()))
                || m.values().any(|v| !v.is_object());
            if typeless {
                Ok(vec![("_doc".into(), value.clone())])
            } else {
                Ok(m.iter().map(|(t, v)| (t.clone(), v.clone())).collect())
            }
        }
        other => Err(MappingsError::NotArrayOrObject(other.clone())),
    }
}

/// Drops `_default_` (with a warning) and returns the remaining types.
pub fn without_default(types: Vec<(String, Value)>, notes: &mut Notes) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (t, m) in types {
        if t == DEFAULT_TYPE {
            notes.warn("mapping type _default_ dropped (removed in Elasticsearch 7)");
        } else {
            out.push((t, m));
        }
    }
    out
}

/// Cleans one typeless mapping for `target`: removed parameters dropped, `string`
/// converted, loose booleans made strict.
pub fn clean(mapping: &Value, target: ProductVersion, notes: &mut Notes) -> Value {
    let Value::Object(root) = mapping else {
        return mapping.clone();
    };
    let mut root = root.clone();
    for (key, why) in REMOVED_ROOT {
        if root.remove(*key).is_some() {
            notes.warn(format!("mapping parameter {key} dropped ({why})"));
        }
    }
    if target.rejects_field_names_disabled() {
        if let Some(Value::Object(f)) = root.get("_field_names") {
            if f.get("enabled")
                .is_some_and(|e| e == &Value::Bool(false) || e == "false")
            {
                root.remove("_field_names");
                notes.change(format!(
                    "_field_names.enabled=false dropped (refused by {target})"
                ));
            }
        }
    }
    if let Some(Value::Object(r)) = root.get_mut("_routing") {
        if r.remove("path").is_some() {
            notes.warn("_routing.path dropped (removed in Elasticsearch 2)");
        }
    }
    if let Some(Value::Object(s)) = root.get_mut("_source") {
        // Elasticsearch 1.x stored `_source` LZF-compressed on request; later versions
        // refuse the parameters (the reader decompresses such sources).
        for key in ["compress", "compress_threshold"] {
            if s.remove(key).is_some() {
                notes.change(format!(
                    "_source.{key} dropped (Elasticsearch 1.x only; compressed sources are decompressed while reading)"
                ));
            }
        }
    }
    if let Some(Value::Object(s)) = root.get("_source") {
        if s.get("enabled")
            .is_some_and(|e| e == &Value::Bool(false) || e == "false")
        {
            notes.warn("_source is disabled: documents of this index cannot be reindexed");
        } else if s.contains_key("includes") || s.contains_key("excludes") {
            notes
                .warn("_source has includes/excludes: reindexed documents hold only the kept part");
        }
    }
    let mut counts = Counts::default();
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        clean_properties(props, "", &mut counts, notes);
    }
    if let Some(Value::Array(templates)) = root.get_mut("dynamic_templates") {
        for t in templates.iter_mut() {
            if let Value::Object(named) = t {
                for (name, body) in named.iter_mut() {
                    if let Some(Value::Object(m)) = body.get_mut("mapping") {
                        clean_field(m, &format!("dynamic template {name}"), &mut counts, notes);
                    }
                }
            }
        }
    }
    if root.remove("include_in_all").is_some() {
        counts.include_in_all += 1;
    }
    if counts.include_in_all > 0 {
        notes.warn(format!(
            "include_in_all dropped from {} place(s) (removed with _all)",
            counts.include_in_all
        ));
    }
    Value::Object(root)
}

#[derive(Default)]
struct Counts {
    include_in_all: usize,
}

fn clean_properties(
    props: &mut Map<String, Value>,
    prefix: &str,
    counts: &mut Counts,
    notes: &mut Notes,
) {
    for (name, field) in props.iter_mut() {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if let Value::Object(f) = field {
            clean_field(f, &path, counts, notes);
        }
    }
}

fn clean_field(f: &mut Map<String, Value>, path: &str, counts: &mut Counts, notes: &mut Notes) {
    for (key, why) in REMOVED_FIELD_PARAMS {
        if f.remove(*key).is_some() {
            if *key == "include_in_all" {
                counts.include_in_all += 1;
            } else {
                notes.warn(format!("{path}: parameter {key} dropped ({why})"));
            }
        }
    }
    if let Some(gap) = f.remove("position_offset_gap") {
        f.entry("position_increment_gap").or_insert(gap);
        notes.change(format!(
            "{path}: position_offset_gap → position_increment_gap"
        ));
    }
    if let Some(Value::Object(norms)) = f.get("norms") {
        let enabled = norms.get("enabled").map(|e| loose_bool(e).unwrap_or(true));
        match enabled {
            Some(b) => {
                f.insert("norms".into(), Value::Bool(b));
            }
            None => {
                f.remove("norms");
            }
        }
        notes.change(format!("{path}: norms object → norms boolean"));
    }
    for key in BOOLEAN_PARAMS {
        if let Some(v @ Value::String(_)) = f.get(*key) {
            if let Some(b) = loose_bool(v) {
                f.insert((*key).into(), Value::Bool(b));
            }
        }
    }
    let is_string = f.get("type").and_then(Value::as_str) == Some("string");
    if is_string {
        convert_string(f, path, notes);
    } else if let Some(Value::String(idx)) = f.get("index").cloned() {
        // ES 2 non-string fields: index: no / not_analyzed / analyzed
        match idx.as_str() {
            "no" => {
                f.insert("index".into(), Value::Bool(false));
                notes.change(format!("{path}: index \"no\" → false"));
            }
            "not_analyzed" | "analyzed" => {
                f.remove("index");
                notes.change(format!(
                    "{path}: index \"{idx}\" removed (indexed is the default)"
                ));
            }
            _ => {}
        }
    }
    if !is_string && f.get("type").and_then(Value::as_str) != Some("text") {
        if let Some(Value::Object(_)) = f.get("fielddata") {
            f.remove("fielddata");
            notes.change(format!(
                "{path}: fielddata settings object dropped (doc values are used)"
            ));
        }
    }
    if let Some(Value::Object(props)) = f.get_mut("properties") {
        clean_properties(props, path, counts, notes);
    }
    if let Some(Value::Object(fields)) = f.get_mut("fields") {
        for (sub, field) in fields.iter_mut() {
            if let Value::Object(sf) = field {
                clean_field(sf, &format!("{path}.{sub}"), counts, notes);
            }
        }
    }
}

fn loose_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        Value::Number(n) => n.as_i64().map(|i| i != 0),
        _ => None,
    }
}

/// `string` → `keyword` (index: not_analyzed), `keyword` with `index: false` (index: no),
/// or `text` (analyzed, the default), keeping only parameters the new type accepts.
fn convert_string(f: &mut Map<String, Value>, path: &str, notes: &mut Notes) {
    let index = f.remove("index");
    let (new_type, not_indexed) = match index.as_ref() {
        Some(Value::String(s)) if s == "not_analyzed" => ("keyword", false),
        Some(v) if loose_bool(v) == Some(false) || v == "no" => ("keyword", true),
        _ => ("text", false),
    };
    f.insert("type".into(), Value::String(new_type.into()));
    if not_indexed {
        f.insert("index".into(), Value::Bool(false));
    }
    let mut dropped = Vec::new();
    let refused: &[&str] = if new_type == "keyword" {
        &[
            "analyzer",
            "search_analyzer",
            "search_quote_analyzer",
            "position_increment_gap",
            "term_vector",
            "fielddata",
            "fielddata_frequency_filter",
        ]
    } else {
        &["ignore_above", "doc_values", "null_value"]
    };
    for key in refused {
        if f.remove(*key).is_some() {
            dropped.push(*key);
        }
    }
    if new_type == "keyword" {
        if let Some(Value::String(opts)) = f.get("index_options") {
            if opts == "positions" || opts == "offsets" {
                f.remove("index_options");
                dropped.push("index_options");
            }
        }
    } else if let Some(Value::Object(_)) = f.get("fielddata") {
        f.remove("fielddata");
        dropped.push("fielddata (settings object)");
    }
    let idx = match index {
        Some(Value::String(s)) => format!(" (index: {s})"),
        Some(v) => format!(" (index: {v})"),
        None => String::new(),
    };
    let mut msg = format!("{path}: string{idx} → {new_type}");
    if not_indexed {
        msg.push_str(" with index: false");
    }
    if !dropped.is_empty() {
        msg.push_str(&format!("; dropped {}", dropped.join(", ")));
    }
    notes.change(msg);
}

/// Why the mapping types of an index cannot be merged into one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("mapping of type {0} is not an object")]
    NotObject(String),
    #[error("type {0}: properties is not an object")]
    PropertiesNotObject(String),
    /// A field (a dotted path) is defined differently by two types.
    #[error("field {path} conflicts between mapping types{detail}")]
    Conflict { path: String, detail: String },
}

/// Unions several cleaned type mappings into one. Root parameters that differ keep the
/// first type's value (with a warning); fields that differ are an error naming the path.
pub fn merge(types: &[(String, Value)], notes: &mut Notes) -> Result<Value, MergeError> {
    let mut merged = Map::new();
    for (t, mapping) in types {
        let Value::Object(m) = mapping else {
            return Err(MergeError::NotObject(t.clone()));
        };
        for (key, value) in m {
            match (merged.get_mut(key), key.as_str()) {
                (None, _) => {
                    merged.insert(key.clone(), value.clone());
                }
                (Some(Value::Object(props)), "properties") => {
                    let Value::Object(add) = value else {
                        return Err(MergeError::PropertiesNotObject(t.clone()));
                    };
                    merge_properties(props, add, "")?;
                }
                (Some(Value::Array(existing)), "dynamic_templates") => {
                    if let Value::Array(add) = value {
                        for dt in add {
                            if !existing.contains(dt) {
                                existing.push(dt.clone());
                            }
                        }
                    }
                }
                (Some(Value::Object(existing)), "_meta") => {
                    if let Value::Object(add) = value {
                        for (k, v) in add {
                            existing.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
                (Some(existing), _) => {
                    if existing != value {
                        notes.warn(format!(
                            "mapping parameter {key} differs between types; kept {existing}, type {t} had {value}"
                        ));
                    }
                }
            }
        }
    }
    let names: Vec<&str> = types.iter().map(|(t, _)| t.as_str()).collect();
    notes.change(format!(
        "mapping types {} merged into one",
        names.join(", ")
    ));
    Ok(Value::Object(merged))
}

fn merge_properties(
    into: &mut Map<String, Value>,
    add: &Map<String, Value>,
    prefix: &str,
) -> Result<(), MergeError> {
    let conflict = |path: &str, detail: String| MergeError::Conflict {
        path: path.to_string(),
        detail,
    };
    for (name, field) in add {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match into.get_mut(name) {
            None => {
                into.insert(name.clone(), field.clone());
            }
            Some(existing) if existing == field => {}
            Some(Value::Object(existing)) => {
                let Value::Object(new) = field else {
                    return Err(conflict(&path, String::new()));
                };
                // objects merge by their sub-properties; every other parameter must agree
                for (k, v) in new {
                    match (existing.get_mut(k), k.as_str()) {
                        (None, _) => {
                            existing.insert(k.clone(), v.clone());
                        }
                        (Some(Value::Object(sub)), "properties" | "fields") => {
                            let Value::Object(addsub) = v else {
                                return Err(conflict(&format!("{path}.{k}"), String::new()));
                            };
                            merge_properties(sub, addsub, &path)?;
                        }
                        (Some(cur), _) if cur == v => {}
                        (Some(cur), _) => {
                            return Err(conflict(
                                &path,
                                format!(": {k} is {cur} in one and {v} in another (use --multi-type-mode split)"),
                            ));
                        }
                    }
                }
            }
            Some(_) => return Err(conflict(&path, String::new())),
        }
    }
    Ok(())
}

/// The mapping body for the target: typeless, or wrapped in a type name for ES 6.
pub fn for_target(
    mapping: Value,
    source_type: &str,
    target: ProductVersion,
    notes: &mut Notes,
) -> Value {
    if target.typed_mappings() {
        let name = target.default_type_name();
        if source_type != name {
            notes.change(format!("mapping type {source_type} → {name}"));
        }
        let mut m = Map::new();
        m.insert(name.into(), mapping);
        Value::Object(m)
    } else {
        if source_type != "_doc" {
            notes.change(format!(
                "mapping type {source_type} removed (typeless target)"
            ));
        }
        mapping
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_forms() {
        let arr = json!([{"type2": {"properties": {}}}, {"type1": {}}]);
        let t = typed(&arr).unwrap();
        assert_eq!(
            t.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["type2", "type1"]
        );
        assert!(typed(&json!([])).unwrap().is_empty());
        assert!(typed(&json!({})).unwrap().is_empty());
        let typeless = typed(&json!({"properties": {"a": {"type": "text"}}})).unwrap();
        assert_eq!(typeless[0].0, "_doc");
        let keyed = typed(&json!({"arbitrary_type": {"properties": {}}})).unwrap();
        assert_eq!(keyed[0].0, "arbitrary_type");
        assert_eq!(
            typed(&json!(["REZMAA=="])).unwrap_err(),
            MappingsError::Binary
        );
        assert!(typed(&json!(["REZMAA=="]))
            .unwrap_err()
            .to_string()
            .contains("binary"));
        assert!(typed(&json!(3)).is_err());
    }

    #[test]
    fn default_type_dropped_with_warning() {
        let mut notes = Notes::default();
        let t = without_default(
            vec![("_default_".into(), json!({})), ("doc".into(), json!({}))],
            &mut notes,
        );
        assert_eq!(t.len(), 1);
        assert_eq!(notes.warnings.len(), 1);
    }

    #[test]
    fn removed_parameters_dropped() {
        let m = json!({
            "_all": {"enabled": false},
            "_ttl": {"enabled": true},
            "include_in_all": false,
            "_routing": {"required": true, "path": "user"},
            "properties": {
                "a": {"type": "long", "include_in_all": false, "precision_step": 8, "index": "not_analyzed"},
                "loc": {"type": "geo_point", "lat_lon": true, "geohash": true},
                "o": {"properties": {"b": {"type": "date", "include_in_all": true, "store": "yes"}}}
            }
        });
        let mut notes = Notes::default();
        let out = clean(&m, ProductVersion::os(3, 0), &mut notes);
        assert_eq!(
            out,
            json!({
                "_routing": {"required": true},
                "properties": {
                    "a": {"type": "long"},
                    "loc": {"type": "geo_point"},
                    "o": {"properties": {"b": {"type": "date", "store": true}}}
                }
            })
        );
        assert!(notes.warnings.iter().any(|w| w.contains("_all")));
        assert!(notes
            .warnings
            .iter()
            .any(|w| w.contains("include_in_all dropped from 3")));
        assert!(notes
            .warnings
            .iter()
            .any(|w| w.contains("a: parameter precision_step")));
    }

    #[test]
    fn string_becomes_text_or_keyword() {
        let m = json!({"properties": {
            "title": {"type": "string", "analyzer": "english", "ignore_above": 10, "fields": {"raw": {"type": "string", "index": "not_analyzed", "analyzer": "x", "ignore_above": 256}}},
            "tag": {"type": "string", "index": "not_analyzed", "doc_values": "yes", "index_options": "docs"},
            "blob": {"type": "string", "index": "no", "norms": {"enabled": false}},
            "body": {"type": "string", "index": "analyzed", "position_offset_gap": 100, "fielddata": {"format": "disabled"}}
        }, "dynamic_templates": [{"strings": {"match_mapping_type": "string", "mapping": {"type": "string", "index": "not_analyzed"}}}]});
        let mut notes = Notes::default();
        let out = clean(&m, ProductVersion::os(3, 0), &mut notes);
        assert_eq!(
            out,
            json!({"properties": {
                "title": {"type": "text", "analyzer": "english", "fields": {"raw": {"type": "keyword", "ignore_above": 256}}},
                "tag": {"type": "keyword", "doc_values": true, "index_options": "docs"},
                "blob": {"type": "keyword", "index": false, "norms": false},
                "body": {"type": "text", "position_increment_gap": 100}
            }, "dynamic_templates": [{"strings": {"match_mapping_type": "string", "mapping": {"type": "keyword"}}}]})
        );
        assert!(notes
            .transformations
            .iter()
            .any(|t| t == "title: string → text; dropped ignore_above"));
        assert!(notes
            .transformations
            .iter()
            .any(|t| t == "title.raw: string (index: not_analyzed) → keyword; dropped analyzer"));
        assert!(notes
            .transformations
            .iter()
            .any(|t| t.starts_with("blob: string (index: no) → keyword with index: false")));
    }

    #[test]
    fn source_compress_dropped() {
        let m =
            json!({"_source": {"compress": true, "compress_threshold": "200b", "excludes": ["x"]}});
        let mut notes = Notes::default();
        let out = clean(&m, ProductVersion::os(2, 19), &mut notes);
        assert_eq!(out, json!({"_source": {"excludes": ["x"]}}));
        assert!(notes
            .transformations
            .iter()
            .any(|t| t.starts_with("_source.compress dropped")));
        assert!(notes
            .transformations
            .iter()
            .any(|t| t.starts_with("_source.compress_threshold dropped")));
    }

    #[test]
    fn field_names_only_for_es8() {
        let m = json!({"_field_names": {"enabled": false}});
        assert_eq!(
            clean(&m, ProductVersion::es(8, 0), &mut Notes::default()),
            json!({})
        );
        assert_eq!(
            clean(&m, ProductVersion::os(3, 0), &mut Notes::default()),
            m
        );
    }

    #[test]
    fn merge_unions_types_and_reports_conflicts() {
        let a = json!({"dynamic": "strict", "properties": {"title": {"type": "text"}, "o": {"properties": {"x": {"type": "long"}}}}});
        let b = json!({"dynamic": true, "properties": {"content": {"type": "text"}, "title": {"type": "text"}, "o": {"properties": {"y": {"type": "long"}}}}});
        let mut notes = Notes::default();
        let m = merge(
            &[("type1".into(), a.clone()), ("type2".into(), b)],
            &mut notes,
        )
        .unwrap();
        assert_eq!(
            m,
            json!({"dynamic": "strict", "properties": {"title": {"type": "text"}, "content": {"type": "text"}, "o": {"properties": {"x": {"type": "long"}, "y": {"type": "long"}}}}})
        );
        assert_eq!(notes.warnings.len(), 1, "{notes:?}");
        assert!(notes.transformations[0].contains("type1, type2 merged"));
        let c = json!({"properties": {"o": {"properties": {"x": {"type": "keyword"}}}}});
        let err = merge(
            &[("type1".into(), a), ("type3".into(), c)],
            &mut Notes::default(),
        )
        .unwrap_err();
        assert!(
            matches!(&err, MergeError::Conflict { path, .. } if path.contains("o.x")),
            "{err}"
        );
    }

    #[test]
    fn typed_or_typeless_body() {
        let mut notes = Notes::default();
        let m = json!({"properties": {}});
        assert_eq!(
            for_target(
                m.clone(),
                "arbitrary_type",
                ProductVersion::es(6, 8),
                &mut notes
            ),
            json!({"_doc": {"properties": {}}})
        );
        assert_eq!(
            for_target(
                m.clone(),
                "arbitrary_type",
                ProductVersion::es(7, 10),
                &mut notes
            ),
            m
        );
        assert_eq!(notes.transformations.len(), 2);
        assert_eq!(
            for_target(
                m.clone(),
                "_doc",
                ProductVersion::os(2, 0),
                &mut Notes::default()
            ),
            m
        );
    }
}
