//! The field types the server accepts in mappings, by distribution and version, and the
//! minimum validation of the vector types (`dense_vector`, `knn_vector`) in mappings and in
//! documents — so that a mapping or a document the real product would refuse is refused
//! here too, with an error of the same type. What is checked is the subset rfs produces
//! and the tests rely on (see `docs/conversions.md` for the version facts); everything
//! else about a field is accepted as it is.

use serde_json::Value;

use super::error::EsError;
use super::version::{Dialect, Distribution};

/// Field types of every Elasticsearch 5+/OpenSearch server.
const COMMON: &[&str] = &[
    "text",
    "keyword",
    "long",
    "integer",
    "short",
    "byte",
    "double",
    "float",
    "half_float",
    "scaled_float",
    "date",
    "boolean",
    "binary",
    "integer_range",
    "float_range",
    "long_range",
    "double_range",
    "date_range",
    "ip_range",
    "object",
    "nested",
    "geo_point",
    "geo_shape",
    "ip",
    "completion",
    "token_count",
    "percolator",
    "join",
    "alias",
    "date_nanos",
    "rank_feature",
    "rank_features",
    "search_as_you_type",
    "murmur3",
    "annotated_text",
    "icu_collation_keyword",
];

/// (type, Elasticsearch since, OpenSearch since); `None` = never.
/// A release line (major, minor) since which a type exists; `None` = never.
type Since = Option<(u32, u32)>;

const VERSIONED: &[(&str, Since, Since)] = &[
    ("dense_vector", Some((7, 0)), None),
    ("knn_vector", None, Some((1, 0))),
    ("flattened", Some((7, 3)), None),
    ("flat_object", None, Some((2, 7))),
    ("match_only_text", Some((7, 14)), Some((2, 12))),
    ("wildcard", Some((7, 9)), Some((2, 15))),
    ("unsigned_long", Some((7, 10)), Some((2, 8))),
    ("constant_keyword", Some((7, 7)), Some((2, 14))),
    ("version", Some((7, 10)), Some((3, 2))),
    ("point", Some((7, 4)), None),
    ("shape", Some((7, 4)), None),
    ("xy_point", None, Some((2, 4))),
    ("xy_shape", None, Some((2, 4))),
    ("histogram", Some((7, 6)), None),
    ("aggregate_metric_double", Some((7, 11)), None),
    ("counted_keyword", Some((8, 12)), None),
    ("passthrough", Some((8, 13)), None),
    ("semantic_text", Some((8, 15)), None),
    ("sparse_vector", Some((8, 11)), Some((3, 3))),
    ("rank_vectors", Some((8, 18)), None),
    ("semantic", None, Some((3, 1))),
];

fn mapper_error(reason: String) -> EsError {
    EsError::new(400, "mapper_parsing_exception", reason)
}

fn at_least(d: &Dialect, since: (u32, u32)) -> bool {
    (d.major, d.minor) >= since
}

/// Whether the server, as `d`, knows field type `ty`.
pub(crate) fn knows_type(d: &Dialect, ty: &str) -> bool {
    if COMMON.contains(&ty) {
        return true;
    }
    match VERSIONED.iter().find(|(t, _, _)| *t == ty) {
        Some((_, es, os)) => {
            let since = match d.distribution {
                Distribution::Elasticsearch => es,
                Distribution::OpenSearch => os,
            };
            since.is_some_and(|s| at_least(d, s))
        }
        None => false,
    }
}

/// Checks one field definition named `name` (dotted `path`).
pub(crate) fn check_field(
    name: &str,
    path: &str,
    field: &Value,
    d: &Dialect,
) -> Result<(), EsError> {
    let Some(ty) = field.get("type").and_then(Value::as_str) else {
        return Ok(()); // an object
    };
    if ty == "string" {
        // Removed in Elasticsearch 5 (refused in the 6+ APIs this server speaks).
        return Err(mapper_error(format!(
            "No handler for type [string] declared on field [{name}]"
        )));
    }
    if !knows_type(d, ty) {
        return Err(mapper_error(format!(
            "No handler for type [{ty}] declared on field [{name}]"
        )));
    }
    match ty {
        "knn_vector" => check_knn_vector(path, field, d),
        "dense_vector" => check_dense_vector(path, field, d),
        "constant_keyword" if d.distribution == Distribution::OpenSearch => {
            if field.get("value").is_none() {
                return Err(mapper_error(format!(
                    "Field [value] is required for constant_keyword field [{path}]"
                )));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn illegal(reason: String) -> EsError {
    EsError::new(400, "mapper_parsing_exception", reason)
}

/// OpenSearch k-NN: dimension, data type, engine and space type by version.
fn check_knn_vector(path: &str, f: &Value, d: &Dialect) -> Result<(), EsError> {
    if f.get("model_id").is_some() {
        return Ok(());
    }
    let dim = f
        .get("dimension")
        .and_then(Value::as_u64)
        .ok_or_else(|| illegal(format!("Dimension value missing for vector: {path}")))?;
    if dim == 0 || dim > 16_000 {
        return Err(illegal(format!(
            "Dimension value cannot be greater than 16000 or less than 1 for vector: {path}"
        )));
    }
    let data_type = f
        .get("data_type")
        .and_then(Value::as_str)
        .unwrap_or("float");
    let data_since = match data_type {
        "float" => (1, 0),
        "byte" => (2, 9),
        "binary" => (2, 16),
        other => {
            return Err(illegal(format!(
                "Invalid value provided for [data_type] field. Supported values are [float, byte, binary]; got [{other}] for {path}"
            )))
        }
    };
    if !at_least(d, data_since) {
        return Err(illegal(format!(
            "data_type [{data_type}] is not supported by this version of the k-NN plugin (field {path})"
        )));
    }
    for key in ["mode", "compression_level"] {
        if f.get(key).is_some() && !at_least(d, (2, 17)) {
            return Err(illegal(format!(
                "unknown parameter [{key}] on mapper [{path}] of type [knn_vector]"
            )));
        }
    }
    let Some(method) = f.get("method") else {
        return Ok(());
    };
    let name = method.get("name").and_then(Value::as_str).unwrap_or("");
    if name != "hnsw" && name != "ivf" {
        return Err(illegal(format!("Invalid method name: {name}")));
    }
    let default_engine = if at_least(d, (2, 18)) {
        "faiss"
    } else {
        "nmslib"
    };
    let engine = method
        .get("engine")
        .and_then(Value::as_str)
        .unwrap_or(default_engine);
    let space = method
        .get("space_type")
        .or_else(|| f.get("space_type"))
        .and_then(Value::as_str)
        .unwrap_or("l2");
    let engine_ok = match engine {
        "nmslib" => {
            if at_least(d, (3, 0)) {
                return Err(illegal(format!(
                    "nmslib engine is deprecated in OpenSearch and cannot be used for new index creation in OpenSearch from 3.0.0. (field {path})"
                )));
            }
            true
        }
        "faiss" => true,
        "lucene" => at_least(d, (2, 2)),
        _ => false,
    };
    if !engine_ok {
        return Err(illegal(format!("Invalid engine type: {engine}")));
    }
    let space_ok = match (engine, space) {
        ("lucene", "l2" | "cosinesimil") => true,
        ("lucene", "innerproduct") => at_least(d, (2, 13)),
        ("faiss", "l2" | "innerproduct" | "hamming") => true,
        ("faiss", "cosinesimil") => at_least(d, (2, 19)),
        ("nmslib", "l2" | "innerproduct" | "cosinesimil" | "l1" | "linf") => true,
        _ => false,
    };
    if !space_ok {
        return Err(EsError::new(
            400,
            "mapper_parsing_exception",
            format!(
                "Validation Failed: 1: \"{name}\" with \"{engine}\" configuration does not support space type: \"{space}\".;"
            ),
        ));
    }
    match (engine, data_type) {
        ("nmslib", "byte" | "binary") | ("lucene", "binary") => Err(illegal(format!(
            "data_type [{data_type}] is not supported for engine [{engine}] (field {path})"
        ))),
        ("faiss", "byte") if !at_least(d, (2, 17)) => Err(illegal(format!(
            "data_type [byte] is not supported for engine [faiss] (field {path})"
        ))),
        _ => Ok(()),
    }
}

/// Elasticsearch `dense_vector`: Elasticsearch 7 has only `dims`; 8+ indexes vectors.
fn check_dense_vector(path: &str, f: &Value, d: &Dialect) -> Result<(), EsError> {
    let Some(obj) = f.as_object() else {
        return Ok(());
    };
    let max = if d.major >= 8 { 4096 } else { 2048 };
    match obj.get("dims").and_then(Value::as_u64) {
        Some(n) if n == 0 || n > max => {
            return Err(illegal(format!(
                "The number of dimensions for field [{path}] should be in the range [1, {max}] but was [{n}]"
            )))
        }
        None if d.major < 8 => {
            return Err(illegal(format!(
                "The [dims] property must be specified for field [{path}]."
            )))
        }
        _ => {}
    }
    let known: &[&str] = if d.major >= 8 {
        &[
            "type",
            "dims",
            "index",
            "similarity",
            "index_options",
            "element_type",
            "meta",
        ]
    } else {
        &["type", "dims", "meta"]
    };
    if let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(illegal(format!(
            "unknown parameter [{k}] on mapper [{path}] of type [dense_vector]"
        )));
    }
    Ok(())
}

/// The vector fields of a stored (typeless) mapping: dotted path → (dimension in values,
/// byte range only).
fn vector_fields(mapping: &Value, prefix: &str, out: &mut Vec<(String, usize, bool)>) {
    let Some(props) = mapping.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, f) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match f.get("type").and_then(Value::as_str) {
            Some("knn_vector") => {
                let dim = f.get("dimension").and_then(Value::as_u64).unwrap_or(0) as usize;
                match f.get("data_type").and_then(Value::as_str) {
                    Some("binary") => out.push((path.clone(), dim / 8, true)),
                    Some("byte") => out.push((path.clone(), dim, true)),
                    _ => out.push((path.clone(), dim, false)),
                }
            }
            Some("dense_vector") => {
                let dim = f.get("dims").and_then(Value::as_u64).unwrap_or(0) as usize;
                let byte = matches!(
                    f.get("element_type").and_then(Value::as_str),
                    Some("byte" | "bit")
                );
                let bit = f.get("element_type").and_then(Value::as_str) == Some("bit");
                if dim > 0 {
                    out.push((path.clone(), if bit { dim / 8 } else { dim }, byte));
                }
            }
            _ => {}
        }
        vector_fields(f, &path, out);
    }
}

fn value_at<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut cur = vec![v];
    for key in path.split('.') {
        let mut next = Vec::new();
        for c in cur {
            match c {
                Value::Object(o) => next.extend(o.get(key)),
                Value::Array(a) => {
                    for item in a {
                        next.extend(item.get(key));
                    }
                }
                _ => {}
            }
        }
        cur = next;
    }
    cur
}

/// A document's vector values against the index mapping: arrays of numbers of the right
/// length (within -128..=127 for byte vectors). Strings are refused: neither OpenSearch's
/// `knn_vector` of the versions served here nor Elasticsearch before 8.14 read them.
pub(crate) fn check_document(mappings: &Value, source: &[u8]) -> Result<(), EsError> {
    let mut fields = Vec::new();
    vector_fields(mappings, "", &mut fields);
    if fields.is_empty() {
        return Ok(());
    }
    let Ok(doc) = serde_json::from_slice::<Value>(source) else {
        return Ok(()); // refused elsewhere
    };
    for (path, dim, byte) in fields {
        for v in value_at(&doc, &path) {
            let fail = |why: String| {
                Err(EsError::new(
                    400,
                    "mapper_parsing_exception",
                    format!("failed to parse field [{path}] of type [vector]: {why}"),
                ))
            };
            let Value::Array(items) = v else {
                if v.is_null() {
                    continue;
                }
                return fail(format!("expected an array of numbers, got {v}"));
            };
            if dim > 0 && items.len() != dim {
                return fail(format!(
                    "Vector dimension mismatch. Expected: {dim}, Given: {}",
                    items.len()
                ));
            }
            for x in items {
                let Some(n) = x.as_f64() else {
                    return fail(format!("vector element {x} is not a number"));
                };
                if byte && (!(-128.0..=127.0).contains(&n) || n.fract() != 0.0) {
                    return fail(format!("{n} is not a byte value in [-128, 127]"));
                }
            }
        }
    }
    Ok(())
}

/// Settings the product does not know, by distribution.
pub(crate) fn check_setting(key: &str, d: &Dialect) -> Result<(), EsError> {
    let unknown = match d.distribution {
        Distribution::OpenSearch => {
            matches!(
                key,
                "index.mode"
                    | "index.routing_path"
                    | "index.mapping.source.mode"
                    | "index.look_ahead_time"
                    | "index.look_back_time"
            ) || key.starts_with("index.time_series.")
                || key.starts_with("index.lifecycle.")
        }
        Distribution::Elasticsearch => {
            let newer = [
                ("index.mode", (8, 7)),
                ("index.routing_path", (8, 7)),
                ("index.time_series.", (8, 7)),
                ("index.mapping.source.mode", (8, 17)),
                // hidden indices came with 7.7 (elastic/elasticsearch#50452)
                ("index.hidden", (7, 7)),
            ]
            .iter()
            .any(|(k, since)| key.starts_with(k) && !at_least(d, *since));
            newer
                || key == "index.knn"
                || key.starts_with("index.knn.")
                || key.starts_with("index.plugins.")
        }
    };
    if unknown {
        return Err(EsError::new(
            400,
            "illegal_argument_exception",
            format!("unknown setting [{key}] please check that any required plugins are installed, or check the breaking changes documentation for removed settings"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn os(v: &str) -> Dialect {
        Dialect::new(Distribution::OpenSearch, v).unwrap()
    }
    fn es(v: &str) -> Dialect {
        Dialect::new(Distribution::Elasticsearch, v).unwrap()
    }

    #[test]
    fn types_by_version() {
        assert!(knows_type(&os("2.7.0"), "flat_object"));
        assert!(!knows_type(&os("2.6.0"), "flat_object"));
        assert!(!knows_type(&os("3.0.0"), "dense_vector"));
        assert!(knows_type(&es("8.15.0"), "semantic_text"));
        assert!(!knows_type(&es("8.14.0"), "semantic_text"));
        assert!(!knows_type(&es("8.15.0"), "knn_vector"));
        assert!(!knows_type(&os("2.19.0"), "bogus"));
    }

    #[test]
    fn knn_vector_by_version() {
        let f = |engine: &str, space: &str| json!({"type": "knn_vector", "dimension": 4, "method": {"name": "hnsw", "engine": engine, "space_type": space}});
        assert!(check_field("v", "v", &f("lucene", "cosinesimil"), &os("2.2.0")).is_ok());
        assert!(check_field("v", "v", &f("lucene", "cosinesimil"), &os("2.1.0")).is_err());
        assert!(check_field("v", "v", &f("lucene", "innerproduct"), &os("2.12.0")).is_err());
        assert!(check_field("v", "v", &f("faiss", "cosinesimil"), &os("2.18.0")).is_err());
        assert!(check_field("v", "v", &f("faiss", "cosinesimil"), &os("2.19.0")).is_ok());
        let e = check_field("v", "v", &f("nmslib", "l2"), &os("3.0.0")).unwrap_err();
        assert!(e.reason.contains("nmslib"), "{e:?}");
        assert!(check_field("v", "v", &json!({"type": "knn_vector"}), &os("2.19.0")).is_err());
    }

    #[test]
    fn vector_documents() {
        let m = json!({"properties": {"v": {"type": "knn_vector", "dimension": 2},
            "b": {"type": "knn_vector", "dimension": 2, "data_type": "byte"}}});
        assert!(check_document(&m, br#"{"v":[1.5,2],"b":[-128,127]}"#).is_ok());
        assert!(check_document(&m, br#"{"v":[1.5]}"#).is_err());
        assert!(check_document(&m, br#"{"b":"7f80"}"#).is_err());
        assert!(check_document(&m, br#"{"b":[300,1]}"#).is_err());
        assert!(check_document(&m, br#"{"other":1}"#).is_ok());
    }
}
