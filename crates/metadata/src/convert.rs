//! Conversions of mappings and settings between Elasticsearch and OpenSearch versions: one
//! table of rules ([`RULES`]), each keyed by what it converts and by the source and target
//! versions it applies to. Every conversion is recorded with the definition before and
//! after ([`Conversion`]); what cannot be converted is [`ConversionSeverity::Blocking`], reported
//! before anything is created. The facts behind each rule, with their evidence, are in
//! `docs/conversions.md`.
//!
//! ```
//! use metadata::convert::{convert_index, ConvertOptions};
//! use metadata::ProductVersion;
//! let body = serde_json::json!({"mappings": {"properties": {
//!     "v": {"type": "dense_vector", "dims": 3, "similarity": "cosine"}}}});
//! let out = convert_index(&body, Some(ProductVersion::es(8, 15)), ProductVersion::os(2, 19), &ConvertOptions::default());
//! assert_eq!(out.body["mappings"]["properties"]["v"]["type"], "knn_vector");
//! assert_eq!(out.body["settings"]["index.knn"], "true");
//! ```

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::plan::Notes;
use super::ProductVersion;

/// How bad a conversion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversionSeverity {
    /// Equivalent on the target.
    Change,
    /// Converted, but something differs on the target (scores, quantization, sorting…).
    Warning,
    /// Cannot be converted: nothing is created until it is resolved.
    Blocking,
}

/// One conversion applied to a field, a mapping parameter or a setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversion {
    /// The id of the rule in [`RULES`].
    pub rule: &'static str,
    /// Where: a field path (`title.raw`), `mapping root`, `settings`, `dynamic template X`.
    pub path: String,
    pub severity: ConversionSeverity,
    /// The definition before.
    pub before: Value,
    /// The definition after; `null` when removed (or, for a blocking one, not converted).
    pub after: Value,
    /// What was done and why, in a sentence.
    pub note: String,
}

/// One rule of the table.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    /// What it converts (a field type, a parameter, a setting).
    pub converts: &'static str,
    /// Which sources and targets it applies to, for people.
    pub when: &'static str,
    /// What it does.
    pub does: &'static str,
}

/// The rule table. The converter matches by field type, parameter or setting, then by
/// target (and source) version; `docs/conversions.md` lists the same rules with evidence.
pub const RULES: &[Rule] = &[
    Rule { id: "dense_vector_to_knn_vector", converts: "dense_vector", when: "Elasticsearch 7+ → OpenSearch", does: "knn_vector: dims → dimension, element_type → data_type (bfloat16 → float, warning), similarity → space_type, index_options (m, ef_construction) → method parameters, int8_hnsw → lucene encoder sq (OpenSearch 2.16+), other quantized, flat and bbq_disk types → full-precision HNSW (warning), engine by target version; index.knn: true when a graph is built" },
    Rule { id: "dense_vector_to_es7", converts: "dense_vector", when: "Elasticsearch 8+ → Elasticsearch 7", does: "dense_vector with dims only: Elasticsearch 7 does not index vectors for kNN" },
    Rule { id: "knn_vector_to_dense_vector", converts: "knn_vector", when: "OpenSearch → Elasticsearch 7+", does: "dense_vector: dimension → dims, data_type → element_type, space_type (the method's, else the field's top-level one, else index.knn.space_type for a field without method; l2 by default) → similarity, method parameters → index_options (lucene encoder sq → int8_hnsw on Elasticsearch 8.12+, other encoders dropped with a warning); indexed when there is a method or the source index has index.knn: true (OpenSearch's default HNSW graph), else index: false" },
    Rule { id: "knn_engine_by_target", converts: "knn_vector method.engine", when: "OpenSearch → OpenSearch", does: "nmslib (refused for new indices by 3.0+) → faiss or lucene; lucene below 2.2 → nmslib; byte/binary data types need lucene 2.9+ / faiss 2.16+; the space is the method's space_type, else the field's top-level one (OpenSearch 2.17+)" },
    Rule { id: "knn_memory_parameters", converts: "knn_vector mode, compression_level", when: "OpenSearch 2.17+ → OpenSearch < 2.17", does: "removed (the vectors are kept in full precision)" },
    Rule { id: "flattened_to_flat_object", converts: "flattened", when: "Elasticsearch 7.3+ → OpenSearch 2.7+", does: "flat_object (parameters it lacks removed)" },
    Rule { id: "flat_object_to_flattened", converts: "flat_object", when: "OpenSearch 2.7+ → Elasticsearch 7.3+", does: "flattened" },
    Rule { id: "flat_object_fallback", converts: "flattened / flat_object", when: "target without the type (OpenSearch < 2.7, Elasticsearch < 7.3)", does: "object with enabled: false (kept in _source, not searchable)" },
    Rule { id: "match_only_text_to_text", converts: "match_only_text", when: "target without it (OpenSearch < 2.12, Elasticsearch < 7.14)", does: "text with index_options: docs and norms: false" },
    Rule { id: "wildcard_to_keyword", converts: "wildcard", when: "target without it (OpenSearch < 2.15, Elasticsearch < 7.9)", does: "keyword (substring queries scan terms)" },
    Rule { id: "unsigned_long_to_keyword", converts: "unsigned_long", when: "target without it (OpenSearch < 2.8, Elasticsearch < 7.10)", does: "keyword: values up to 2^64−1 keep exact equality; ranges and sums are lost" },
    Rule { id: "constant_keyword_to_keyword", converts: "constant_keyword", when: "target without it (OpenSearch < 2.14, Elasticsearch < 7.7), or OpenSearch and no value set", does: "keyword" },
    Rule { id: "version_to_keyword", converts: "version", when: "target without it (OpenSearch < 3.2, Elasticsearch < 7.10)", does: "keyword (sorted as strings, not by precedence)" },
    Rule { id: "point_shape_to_xy", converts: "point, shape", when: "Elasticsearch → OpenSearch 2.4+", does: "xy_point, xy_shape" },
    Rule { id: "xy_to_point_shape", converts: "xy_point, xy_shape", when: "OpenSearch → Elasticsearch 7.4+", does: "point, shape" },
    Rule { id: "counted_keyword_to_keyword", converts: "counted_keyword", when: "Elasticsearch 8.12+ → OpenSearch", does: "keyword (duplicate values are not counted)" },
    Rule { id: "passthrough_to_object", converts: "passthrough", when: "Elasticsearch 8.13+ → OpenSearch", does: "object (sub-fields are not aliased at the top level)" },
    Rule { id: "unsupported_type", converts: "semantic_text, sparse_vector, aggregate_metric_double, histogram, rank_vectors (Elasticsearch); semantic, sparse_vector, star_tree (OpenSearch)", when: "a target that has no equivalent", does: "BLOCKING: nothing is created" },
    Rule { id: "field_parameters", converts: "time_series_dimension, time_series_metric, synthetic_source_keep, script, on_script_error", when: "Elasticsearch → OpenSearch", does: "removed (script fields lose their computed values: they are not in _source)" },
    Rule { id: "runtime_fields", converts: "runtime section, dynamic: runtime", when: "Elasticsearch 7.11+ → OpenSearch or Elasticsearch < 7.11", does: "dropped with a warning; dynamic: runtime → true" },
    Rule { id: "derived_fields", converts: "derived section", when: "OpenSearch 2.15+ → Elasticsearch", does: "dropped with a warning" },
    Rule { id: "source_mode", converts: "_source.mode", when: "Elasticsearch 8.4+ → OpenSearch or Elasticsearch < 8.4", does: "removed: the target stores _source" },
    Rule { id: "enable_source", converts: "_source.enabled: false", when: "with --target-source enable (any versions)", does: "enabled removed: the target stores the documents rebuilt from doc values and stored fields, and returns them" },
    Rule { id: "subobjects", converts: "subobjects", when: "Elasticsearch 8.3+ → OpenSearch or Elasticsearch < 8.3", does: "removed: dotted names become objects" },
    Rule { id: "index_mode_settings", converts: "index.mode, index.routing_path, index.time_series.*, index.look_ahead_time, index.look_back_time, index.mapping.source.mode, index.mapping.synthetic_source_keep, index.mapping.total_fields.ignore_dynamic_beyond_limit", when: "Elasticsearch 8 → OpenSearch", does: "removed: the index is created as a standard index" },
    Rule { id: "knn_settings", converts: "index.knn, index.knn.*", when: "OpenSearch → Elasticsearch", does: "removed" },
    Rule { id: "codec_names", converts: "index.codec", when: "between Elasticsearch 8 and OpenSearch", does: "legacy_default → default, legacy_best_compression → best_compression (OpenSearch); zstd, zstd_no_dict, qat_* → best_compression (Elasticsearch)" },
    Rule { id: "analysis_renamed", converts: "analysis types nGram, edgeNGram, delimited_payload_filter", when: "any source → any target", does: "ngram, edge_ngram, delimited_payload" },
    Rule { id: "analysis_synonyms_set", converts: "synonym filters with synonyms_set", when: "Elasticsearch 8.10+ → OpenSearch or Elasticsearch < 8.10", does: "BLOCKING: inline the synonyms (synonyms sets are cluster data, not in the snapshot)" },
    Rule { id: "analysis_plugins", converts: "analysis components of plugins (icu_*, kuromoji_*, nori_*, smartcn_*, phonetic, stempel…)", when: "any target", does: "kept, with a warning that the target needs the plugin" },
];

/// The k-NN engine of OpenSearch `knn_vector` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KnnEngine {
    Lucene,
    Faiss,
    Nmslib,
}

impl KnnEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            KnnEngine::Lucene => "lucene",
            KnnEngine::Faiss => "faiss",
            KnnEngine::Nmslib => "nmslib",
        }
    }

    pub fn parse(s: &str) -> Option<KnnEngine> {
        match s {
            "lucene" => Some(KnnEngine::Lucene),
            "faiss" => Some(KnnEngine::Faiss),
            "nmslib" => Some(KnnEngine::Nmslib),
            _ => None,
        }
    }

    /// Why `target` cannot use this engine, if it cannot.
    pub fn unavailable_on(self, target: ProductVersion) -> Option<String> {
        match self {
            KnnEngine::Lucene if !target.at_least_os(2, 2) => {
                Some(format!("the lucene k-NN engine needs OpenSearch 2.2+, not {target}"))
            }
            KnnEngine::Nmslib if target.at_least_os(3, 0) => Some(format!(
                "{target} refuses the nmslib engine for new indices (deprecated in 2.19, blocked from 3.0)"
            )),
            _ => None,
        }
    }
}

/// A k-NN engine name rfs does not know (the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("k-NN engine {0:?}: expected lucene, faiss or nmslib")]
pub struct ParseKnnEngineError(pub String);

impl std::str::FromStr for KnnEngine {
    type Err = ParseKnnEngineError;
    fn from_str(s: &str) -> Result<Self, ParseKnnEngineError> {
        KnnEngine::parse(s).ok_or_else(|| ParseKnnEngineError(s.to_string()))
    }
}

/// Why a k-NN engine cannot hold a vector field on the target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnnEngineError {
    /// The target does not have (or refuses) the engine: why, as
    /// [`KnnEngine::unavailable_on`] says it.
    #[error("{0}")]
    Unavailable(String),
    /// The engine cannot hold vectors of this data type on the target.
    #[error("the {} engine cannot hold {data_type} vectors on {target}", engine.as_str())]
    DataType {
        engine: KnnEngine,
        data_type: String,
        target: ProductVersion,
    },
    /// The engine does not support the space type on the target.
    #[error("the {} engine does not support space type {space} on {target}", engine.as_str())]
    SpaceType {
        engine: KnnEngine,
        space: String,
        target: ProductVersion,
    },
}

/// Choices the rules leave to the user.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// The engine of converted `knn_vector` fields; default: by target version.
    pub knn_engine: Option<KnnEngine>,
    /// Store `_source` on the target for indices whose mapping disables it (the documents
    /// are rebuilt from doc values and stored fields; the target then keeps and returns
    /// them). Default false: the mapping is kept as it is.
    pub enable_source: bool,
}

/// What the mapping conversion found that the settings need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// A `knn_vector` field builds a graph: `index.knn: true`.
    pub knn: bool,
}

/// Everything the rules need to know.
#[derive(Debug, Clone)]
pub struct Ctx<'a> {
    pub source: Option<ProductVersion>,
    pub target: ProductVersion,
    pub options: &'a ConvertOptions,
    /// The source index (or template) has `index.knn: true`: OpenSearch builds an
    /// approximate-kNN graph for its `knn_vector` fields, those without a `method` too
    /// (with the default method); see [`knn_index_enabled`].
    pub source_knn: bool,
    /// The source's `index.knn.space_type` (OpenSearch 1.x–2.x; removed in 3.0): the space
    /// of a `knn_vector` without `method` or `space_type` of its own; see
    /// [`knn_index_space_type`].
    pub source_space_type: Option<&'static str>,
}

/// The index setting `index.knn.space_type` of OpenSearch 1.x–2.x (k-NN plugin
/// `KNNSettings.KNN_SPACE_TYPE`, opensearch-project/k-NN; listed as removed in 3.0 in the
/// 3.0 breaking changes) when it names a space the plugin knows: the space of fields built
/// without a method.
pub fn knn_index_space_type(settings: &Value) -> Option<&'static str> {
    const SPACES: [&str; 7] = [
        "l2",
        "l1",
        "linf",
        "cosinesimil",
        "innerproduct",
        "hamming",
        "hammingbit",
    ];
    let flat = super::settings::flatten(settings);
    let v = flat.get("index.knn.space_type")?.as_str()?;
    SPACES.into_iter().find(|s| *s == v)
}

/// Whether settings (flat or nested, `index.` prefix or not) say `index.knn: true`. With
/// it, OpenSearch indexes every `knn_vector` field for approximate search, a field without
/// `method` with the default one (HNSW, space_type `l2` unless the field's top-level
/// `space_type` says otherwise); without it (false or absent) the vectors are kept for
/// exact search (script scoring) only (docs.opensearch.org
/// mappings/supported-field-types/knn-vector, example "map my_vector as a knn_vector"
/// without method; vector-search/settings, `index.knn`; knn-methods-engines, defaults).
pub fn knn_index_enabled(settings: &Value) -> bool {
    super::settings::flatten(settings)
        .get("index.knn")
        .is_some_and(|v| matches!(v, Value::Bool(true)) || v.as_str() == Some("true"))
}

/// A converted index body (`settings`, `mappings`, `aliases`, as given) and its notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub body: Value,
    pub notes: Notes,
}

impl Converted {
    pub fn blocked(&self) -> bool {
        self.notes.blocked()
    }
}

/// Converts an index body `{settings?, mappings?, aliases?}`, or a bare mapping
/// (`{"properties": …}`), for `target`. Settings may be flat or nested; they come back
/// flat. The notes hold every conversion.
pub fn convert_index(
    body: &Value,
    source: Option<ProductVersion>,
    target: ProductVersion,
    options: &ConvertOptions,
) -> Converted {
    let mut notes = Notes::default();
    let is_body = body
        .as_object()
        .is_some_and(|o| o.contains_key("mappings") || o.contains_key("settings"));
    let (mapping, settings, rest) = if is_body {
        let mut rest = body.as_object().cloned().unwrap_or_default();
        let m = rest.remove("mappings");
        let s = rest.remove("settings");
        (m, s, rest)
    } else {
        (Some(body.clone()), None, Map::new())
    };
    let ctx = Ctx {
        source,
        target,
        options,
        source_knn: settings.as_ref().is_some_and(knn_index_enabled),
        source_space_type: settings.as_ref().and_then(knn_index_space_type),
    };
    let mut needs = Needs::default();
    let mapping = mapping.map(|m| convert_mapping(&m, &ctx, &mut needs, &mut notes));
    let mut flat = settings
        .map(|s| super::settings::flatten(&s))
        .unwrap_or_default();
    convert_settings(&mut flat, &ctx, needs, &mut notes);
    let mut out = rest;
    if !flat.is_empty() {
        out.insert("settings".into(), Value::Object(flat));
    }
    if let Some(m) = mapping {
        out.insert("mappings".into(), m);
    }
    Converted {
        body: Value::Object(out),
        notes,
    }
}

fn record(
    notes: &mut Notes,
    rule: &'static str,
    path: &str,
    severity: ConversionSeverity,
    before: Value,
    after: Value,
    note: impl Into<String>,
) {
    let note = note.into();
    let line = format!("{path}: {note}");
    match severity {
        ConversionSeverity::Change => notes.change(line),
        ConversionSeverity::Warning => notes.warn(line),
        ConversionSeverity::Blocking => notes.block(line),
    }
    notes.conversions.push(Conversion {
        rule,
        path: path.to_string(),
        severity,
        before,
        after,
        note,
    });
}

/// Converts one typeless mapping body for the target. `needs` collects what the settings
/// must provide.
pub fn convert_mapping(
    mapping: &Value,
    ctx: &Ctx<'_>,
    needs: &mut Needs,
    notes: &mut Notes,
) -> Value {
    let Value::Object(root) = mapping else {
        return mapping.clone();
    };
    let mut root = root.clone();
    let t = ctx.target;
    // runtime fields
    if !(t.at_least_es(7, 11)) {
        if let Some(rt) = root.remove("runtime") {
            record(
                notes,
                "runtime_fields",
                "mapping root",
                ConversionSeverity::Warning,
                json!({"runtime": rt}),
                Value::Null,
                format!("runtime fields dropped ({t} has none); queries on them must be rewritten"),
            );
        }
        if root.get("dynamic").and_then(Value::as_str) == Some("runtime") {
            root.insert("dynamic".into(), Value::Bool(true));
            record(
                notes,
                "runtime_fields",
                "mapping root",
                ConversionSeverity::Warning,
                json!({"dynamic": "runtime"}),
                json!({"dynamic": true}),
                "dynamic: runtime → true: new fields are indexed instead of being runtime fields",
            );
        }
    }
    if t.is_es() {
        if let Some(d) = root.remove("derived") {
            record(
                notes,
                "derived_fields",
                "mapping root",
                ConversionSeverity::Warning,
                json!({"derived": d}),
                Value::Null,
                format!("OpenSearch derived fields dropped ({t} has none)"),
            );
        }
    }
    if ctx.options.enable_source {
        if let Some(Value::Object(src)) = root.get_mut("_source") {
            if src
                .get("enabled")
                .is_some_and(|e| e == &Value::Bool(false) || e == "false")
            {
                src.remove("enabled");
                record(
                    notes,
                    "enable_source",
                    "mapping root",
                    ConversionSeverity::Change,
                    json!({"_source": {"enabled": false}}),
                    json!({"_source": {"enabled": true}}),
                    "_source enabled on the target (--target-source enable): the rebuilt documents are stored and returned",
                );
            }
            if src.is_empty() {
                root.remove("_source");
            }
        }
    }
    if !t.at_least_es(8, 4) {
        if let Some(Value::Object(src)) = root.get_mut("_source") {
            if let Some(mode) = src.remove("mode") {
                let synthetic = mode == "synthetic";
                record(
                    notes,
                    "source_mode",
                    "mapping root",
                    if synthetic {
                        ConversionSeverity::Warning
                    } else {
                        ConversionSeverity::Change
                    },
                    json!({"_source": {"mode": mode}}),
                    Value::Null,
                    if synthetic {
                        format!("_source.mode synthetic removed: {t} stores the whole _source (more disk)")
                    } else {
                        format!("_source.mode removed ({t} has no source modes)")
                    },
                );
            }
            if src.is_empty() {
                root.remove("_source");
            }
        }
    }
    if !t.at_least_es(8, 3) {
        if let Some(sub) = root.remove("subobjects") {
            record(notes, "subobjects", "mapping root", ConversionSeverity::Warning, json!({"subobjects": sub}), Value::Null,
                format!("subobjects removed ({t} has no such parameter): fields with dots in their names become objects"));
        }
    }
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        convert_properties(props, "", ctx, needs, notes);
    }
    if let Some(Value::Array(templates)) = root.get_mut("dynamic_templates") {
        let mut kept = Vec::new();
        for tpl in templates.drain(..) {
            if let Some(t) = convert_dynamic_template(tpl, ctx, notes) {
                kept.push(t);
            }
        }
        *templates = kept;
    }
    Value::Object(root)
}

/// A dynamic template: its `mapping` is converted like a field; one that maps to runtime
/// fields, or to a type the target cannot hold, is dropped with a warning (no existing
/// field depends on it).
fn convert_dynamic_template(tpl: Value, ctx: &Ctx<'_>, notes: &mut Notes) -> Option<Value> {
    let Value::Object(mut named) = tpl else {
        return Some(tpl);
    };
    for (name, body) in named.iter_mut() {
        let path = format!("dynamic template {name}");
        if body.get("runtime").is_some() && !ctx.target.at_least_es(7, 11) {
            record(
                notes,
                "runtime_fields",
                &path,
                ConversionSeverity::Warning,
                body.clone(),
                Value::Null,
                "dynamic template of runtime fields dropped",
            );
            return None;
        }
        if let Some(Value::Object(m)) = body.get_mut("mapping") {
            let mut scratch = Notes::default();
            let mut needs = Needs::default();
            convert_field(m, &path, ctx, &mut needs, &mut scratch);
            if scratch.blocked() {
                record(
                    notes,
                    "unsupported_type",
                    &path,
                    ConversionSeverity::Warning,
                    body.clone(),
                    Value::Null,
                    format!("dropped: {}", scratch.blockers.join("; ")),
                );
                return None;
            }
            notes.extend(scratch);
        }
    }
    Some(Value::Object(named))
}

fn convert_properties(
    props: &mut Map<String, Value>,
    prefix: &str,
    ctx: &Ctx<'_>,
    needs: &mut Needs,
    notes: &mut Notes,
) {
    for (name, field) in props.iter_mut() {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if let Value::Object(f) = field {
            convert_field(f, &path, ctx, needs, notes);
        }
    }
}

/// Field types by where they exist: (type, Elasticsearch since, OpenSearch since); `None`
/// = never there.
/// A release line (major, minor) since which a type exists; `None` = never.
type Since = Option<(u32, u32)>;

const TYPE_SUPPORT: &[(&str, Since, Since)] = &[
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
    ("counted_keyword", Some((8, 12)), None),
    ("passthrough", Some((8, 13)), None),
    ("semantic_text", Some((8, 15)), None),
    ("sparse_vector", Some((8, 11)), Some((3, 3))),
    ("aggregate_metric_double", Some((7, 11)), None),
    ("histogram", Some((7, 6)), None),
    ("rank_vectors", Some((8, 18)), None),
    ("semantic", None, Some((3, 1))),
    ("star_tree", None, Some((2, 18))),
];

/// Whether `target` has field type `ty` (types not in the table exist everywhere modern).
pub fn target_has_type(target: ProductVersion, ty: &str) -> bool {
    match TYPE_SUPPORT.iter().find(|(t, _, _)| *t == ty) {
        None => true,
        Some((_, es, os)) => {
            let since = if target.is_os() { os } else { es };
            since.is_some_and(|(ma, mi)| (target.major, target.minor) >= (ma, mi))
        }
    }
}

const ES_ONLY_PARAMS: &[&str] = &[
    "time_series_dimension",
    "time_series_metric",
    "synthetic_source_keep",
    "script",
    "on_script_error",
    "store_array_source",
];

fn convert_field(
    f: &mut Map<String, Value>,
    path: &str,
    ctx: &Ctx<'_>,
    needs: &mut Needs,
    notes: &mut Notes,
) {
    let t = ctx.target;
    // Time series and synthetic-source parameters need Elasticsearch 8; script fields 7.11.
    let lacks = |k: &str| {
        t.is_os()
            || if k == "script" || k == "on_script_error" {
                !t.at_least_es(7, 11)
            } else {
                !t.at_least_es(8, 0)
            }
    };
    {
        let removed: Map<String, Value> = ES_ONLY_PARAMS
            .iter()
            .filter(|k| lacks(k))
            .filter_map(|k| f.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
        if !removed.is_empty() {
            let script = removed.contains_key("script");
            let names: Vec<&str> = removed.keys().map(String::as_str).collect();
            record(
                notes,
                "field_parameters",
                path,
                if script {
                    ConversionSeverity::Warning
                } else {
                    ConversionSeverity::Change
                },
                Value::Object(removed.clone()),
                Value::Null,
                if script {
                    format!("{} removed: the values the script computed are not in _source, so this field stays empty on {t}", names.join(", "))
                } else {
                    format!(
                        "{} removed ({t} has no time series or synthetic source parameters)",
                        names.join(", ")
                    )
                },
            );
        }
    }
    let ty = f.get("type").and_then(Value::as_str).map(str::to_string);
    if let Some(ty) = ty.as_deref() {
        convert_type(ty, f, path, ctx, needs, notes);
    }
    if let Some(Value::Object(props)) = f.get_mut("properties") {
        convert_properties(props, path, ctx, needs, notes);
    }
    if let Some(Value::Object(fields)) = f.get_mut("fields") {
        convert_properties(fields, path, ctx, needs, notes);
    }
}

fn set_type(f: &mut Map<String, Value>, ty: &str, keep: &[&str]) -> Vec<String> {
    let mut dropped = Vec::new();
    let keys: Vec<String> = f.keys().cloned().collect();
    for k in keys {
        if k != "type" && !keep.contains(&k.as_str()) {
            f.remove(&k);
            dropped.push(k);
        }
    }
    f.insert("type".into(), Value::String(ty.into()));
    dropped
}

fn dropped_note(dropped: &[String]) -> String {
    if dropped.is_empty() {
        String::new()
    } else {
        format!(" (dropped {})", dropped.join(", "))
    }
}

fn convert_type(
    ty: &str,
    f: &mut Map<String, Value>,
    path: &str,
    ctx: &Ctx<'_>,
    needs: &mut Needs,
    notes: &mut Notes,
) {
    let t = ctx.target;
    let before = Value::Object(f.clone());
    match ty {
        "dense_vector" if t.is_os() => dense_to_knn(f, path, ctx, needs, notes),
        "dense_vector" if t.is_es() && t.major < 8 => {
            let keep = ["dims"];
            let dropped = set_type(f, "dense_vector", &keep);
            if !dropped.is_empty() {
                record(
                    notes,
                    "dense_vector_to_es7",
                    path,
                    ConversionSeverity::Warning,
                    before,
                    Value::Object(f.clone()),
                    format!(
                        "{t} stores vectors for script scoring only, no kNN index{}",
                        dropped_note(&dropped)
                    ),
                );
            }
        }
        "knn_vector" if t.is_es() => knn_to_dense(f, path, ctx, notes),
        "knn_vector" if t.is_os() => knn_for_target(f, path, ctx, notes),
        "flattened" | "flat_object" => {
            let (want, rule) = if t.is_os() {
                ("flat_object", "flattened_to_flat_object")
            } else {
                ("flattened", "flat_object_to_flattened")
            };
            if target_has_type(t, want) {
                if ty != want {
                    // Neither takes the other's parameters beyond the basics.
                    let keep: &[&str] = if want == "flat_object" {
                        &[]
                    } else {
                        &[
                            "ignore_above",
                            "index",
                            "doc_values",
                            "null_value",
                            "depth_limit",
                            "similarity",
                            "split_queries_on_whitespace",
                            "eager_global_ordinals",
                            "meta",
                        ]
                    };
                    let dropped = set_type(f, want, keep);
                    record(
                        notes,
                        rule,
                        path,
                        ConversionSeverity::Change,
                        before,
                        Value::Object(f.clone()),
                        format!("{ty} → {want}{}", dropped_note(&dropped)),
                    );
                }
            } else {
                f.clear();
                f.insert("type".into(), json!("object"));
                f.insert("enabled".into(), json!(false));
                record(notes, "flat_object_fallback", path, ConversionSeverity::Warning, before, Value::Object(f.clone()),
                    format!("{ty} → object with enabled: false ({t} has no {want}): kept in _source, not searchable"));
            }
        }
        "match_only_text" if !target_has_type(t, ty) => {
            let keep = [
                "analyzer",
                "search_analyzer",
                "search_quote_analyzer",
                "fields",
                "meta",
                "copy_to",
                "position_increment_gap",
                "index",
            ];
            let dropped = set_type(f, "text", &keep);
            f.insert("index_options".into(), json!("docs"));
            f.insert("norms".into(), json!(false));
            record(notes, "match_only_text_to_text", path, ConversionSeverity::Change, before, Value::Object(f.clone()),
                format!("match_only_text → text without positions or norms ({t} has no match_only_text){}", dropped_note(&dropped)));
        }
        "wildcard" if !target_has_type(t, ty) => {
            let dropped = set_type(
                f,
                "keyword",
                &[
                    "ignore_above",
                    "null_value",
                    "fields",
                    "meta",
                    "copy_to",
                    "doc_values",
                ],
            );
            record(notes, "wildcard_to_keyword", path, ConversionSeverity::Warning, before, Value::Object(f.clone()),
                format!("wildcard → keyword ({t} has no wildcard): substring and regexp queries scan every term{}", dropped_note(&dropped)));
        }
        "unsigned_long" if !target_has_type(t, ty) => {
            let dropped = set_type(
                f,
                "keyword",
                &["doc_values", "index", "store", "meta", "fields", "copy_to"],
            );
            record(notes, "unsigned_long_to_keyword", path, ConversionSeverity::Warning, before, Value::Object(f.clone()),
                format!("unsigned_long → keyword ({t} has no unsigned_long; long would refuse values above 2^63−1): exact matches work, ranges and sums do not{}", dropped_note(&dropped)));
        }
        "constant_keyword" => {
            let missing_value = t.is_os() && f.get("value").is_none();
            if !target_has_type(t, ty) || missing_value {
                let why = if missing_value {
                    format!("{t} requires the value in the mapping and the source set it from the first document")
                } else {
                    format!("{t} has no constant_keyword")
                };
                let dropped = set_type(f, "keyword", &["meta"]);
                record(
                    notes,
                    "constant_keyword_to_keyword",
                    path,
                    ConversionSeverity::Warning,
                    before,
                    Value::Object(f.clone()),
                    format!(
                        "constant_keyword → keyword ({why}){}",
                        dropped_note(&dropped)
                    ),
                );
            }
        }
        "version" if !target_has_type(t, ty) => {
            let dropped = set_type(f, "keyword", &["meta", "fields", "copy_to", "null_value"]);
            record(notes, "version_to_keyword", path, ConversionSeverity::Warning, before, Value::Object(f.clone()),
                format!("version → keyword ({t} has no version type): sorted as strings, not by version precedence{}", dropped_note(&dropped)));
        }
        "point" | "shape" if t.is_os() => {
            let want = if ty == "point" {
                "xy_point"
            } else {
                "xy_shape"
            };
            if target_has_type(t, want) {
                f.insert("type".into(), json!(want));
                record(
                    notes,
                    "point_shape_to_xy",
                    path,
                    ConversionSeverity::Change,
                    before,
                    Value::Object(f.clone()),
                    format!("{ty} → {want}"),
                );
            } else {
                block(
                    notes,
                    path,
                    before,
                    format!(
                        "{ty}: {t} has no Cartesian types (xy_point/xy_shape need OpenSearch 2.4+)"
                    ),
                );
            }
        }
        "xy_point" | "xy_shape" if t.is_es() => {
            let want = if ty == "xy_point" { "point" } else { "shape" };
            if target_has_type(t, want) {
                f.insert("type".into(), json!(want));
                record(
                    notes,
                    "xy_to_point_shape",
                    path,
                    ConversionSeverity::Change,
                    before,
                    Value::Object(f.clone()),
                    format!("{ty} → {want}"),
                );
            } else {
                block(
                    notes,
                    path,
                    before,
                    format!(
                        "{ty}: {t} has no Cartesian types (point/shape need Elasticsearch 7.4+)"
                    ),
                );
            }
        }
        "counted_keyword" if t.is_os() => {
            let dropped = set_type(f, "keyword", &["meta"]);
            record(notes, "counted_keyword_to_keyword", path, ConversionSeverity::Warning, before, Value::Object(f.clone()),
                format!("counted_keyword → keyword: duplicate values are kept in _source but not counted{}", dropped_note(&dropped)));
        }
        "passthrough" if t.is_os() => {
            let dropped = set_type(f, "object", &["properties", "dynamic", "enabled"]);
            record(
                notes,
                "passthrough_to_object",
                path,
                ConversionSeverity::Warning,
                before,
                Value::Object(f.clone()),
                format!(
                    "passthrough → object: its sub-fields are not aliased at the top level{}",
                    dropped_note(&dropped)
                ),
            );
        }
        "semantic_text"
        | "aggregate_metric_double"
        | "histogram"
        | "rank_vectors"
        | "semantic"
        | "star_tree"
        | "sparse_vector"
            if !target_has_type(t, ty)
                || (ty == "sparse_vector"
                    && (t.is_os() != ctx.source.is_some_and(|s| s.is_os()))) =>
        {
            let hint = match ty {
                "semantic_text" => "it needs an inference endpoint; map the text as text and the embeddings as knn_vector (OpenSearch neural search) by hand",
                "sparse_vector" => "Elasticsearch's and OpenSearch's sparse_vector differ; rank_features can hold the token weights: map it by hand",
                "aggregate_metric_double" => "pre-aggregated metrics have no equivalent; map the sub-metrics (min, max, sum, value_count) as numbers by hand",
                "histogram" => "pre-aggregated histograms have no equivalent",
                "rank_vectors" => "multi-vector late interaction has no equivalent",
                "semantic" => "it is bound to an OpenSearch ML model",
                _ => "no equivalent",
            };
            block(
                notes,
                path,
                before,
                format!("{ty} is not supported by {t}: {hint}"),
            );
        }
        _ => {}
    }
}

fn block(notes: &mut Notes, path: &str, before: Value, why: String) {
    record(
        notes,
        "unsupported_type",
        path,
        ConversionSeverity::Blocking,
        before,
        Value::Null,
        why,
    );
}

/// Elasticsearch similarity → OpenSearch space type.
fn space_of(similarity: &str) -> Option<&'static str> {
    Some(match similarity {
        "l2_norm" => "l2",
        "cosine" => "cosinesimil",
        "dot_product" | "max_inner_product" => "innerproduct",
        _ => return None,
    })
}

/// The engine for `space` and `data_type` on `target`: the user's choice when it can hold
/// them, else lucene (2.2+; innerproduct 2.13+; byte 2.9+), faiss (innerproduct before
/// 2.13, binary), nmslib before 2.2.
fn engine_for(
    target: ProductVersion,
    space: &str,
    data_type: &str,
    wanted: Option<KnnEngine>,
) -> Result<KnnEngine, KnnEngineError> {
    let can = |e: KnnEngine| -> Result<(), KnnEngineError> {
        if let Some(why) = e.unavailable_on(target) {
            return Err(KnnEngineError::Unavailable(why));
        }
        let ok = match (e, data_type) {
            (KnnEngine::Nmslib, "byte" | "binary") => false,
            (KnnEngine::Lucene, "binary") => false,
            (KnnEngine::Lucene, "byte") => target.at_least_os(2, 9),
            (KnnEngine::Faiss, "byte") => target.at_least_os(2, 17),
            (KnnEngine::Faiss, "binary") => target.at_least_os(2, 16),
            _ => true,
        };
        if !ok {
            return Err(KnnEngineError::DataType {
                engine: e,
                data_type: data_type.to_string(),
                target,
            });
        }
        let ok = match (e, space) {
            (KnnEngine::Lucene, "innerproduct") => target.at_least_os(2, 13),
            (KnnEngine::Lucene, "l2" | "cosinesimil") => true,
            (KnnEngine::Faiss, "cosinesimil") => target.at_least_os(2, 19),
            (KnnEngine::Faiss, "l2" | "innerproduct" | "hamming") => true,
            (KnnEngine::Nmslib, "l2" | "innerproduct" | "cosinesimil" | "l1" | "linf") => true,
            _ => false,
        };
        if !ok {
            return Err(KnnEngineError::SpaceType {
                engine: e,
                space: space.to_string(),
                target,
            });
        }
        Ok(())
    };
    if let Some(e) = wanted {
        can(e)?;
        return Ok(e);
    }
    let order = if !target.at_least_os(2, 2) {
        [KnnEngine::Nmslib, KnnEngine::Faiss, KnnEngine::Lucene]
    } else {
        [KnnEngine::Lucene, KnnEngine::Faiss, KnnEngine::Nmslib]
    };
    // The first engine that can, else why the last one cannot.
    let [first, rest @ ..] = order;
    let mut last = match can(first) {
        Ok(()) => return Ok(first),
        Err(why) => why,
    };
    for e in rest {
        match can(e) {
            Ok(()) => return Ok(e),
            Err(why) => last = why,
        }
    }
    Err(last)
}

fn dense_to_knn(
    f: &mut Map<String, Value>,
    path: &str,
    ctx: &Ctx<'_>,
    needs: &mut Needs,
    notes: &mut Notes,
) {
    let t = ctx.target;
    let before = Value::Object(f.clone());
    let Some(dims) = f.get("dims").and_then(Value::as_u64) else {
        block(notes, path, before, "dense_vector without dims (Elasticsearch sets it from the first document): set dims in the mapping before migrating".into());
        return;
    };
    let element = f
        .get("element_type")
        .and_then(Value::as_str)
        .unwrap_or("float")
        .to_string();
    let source = ctx.source.unwrap_or(ProductVersion::es(8, 11));
    // Indexed by default from 8.11; before that only when `index: true`.
    let indexed = match f.get("index") {
        Some(v) => v == true || v == "true",
        None => source.at_least_es(8, 11),
    };
    let similarity = f
        .get("similarity")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            if element == "bit" {
                "l2_norm".into()
            } else {
                "cosine".into()
            }
        });
    let mut warnings: Vec<String> = Vec::new();
    // Element types: float, byte, bit (8.15+), bfloat16 (Elasticsearch 9; elastic.co "Dense vector
    // field type", mapping-reference/dense-vector). OpenSearch knn_vector data_type: float,
    // byte (2.9+ lucene, 2.17+ faiss), binary (2.16+ faiss, hamming) (docs.opensearch.org
    // "k-NN vector" and "Memory-optimized vectors" pages).
    let (data_type, space) = match element.as_str() {
        "float" => ("float", space_of(&similarity)),
        "bfloat16" => {
            // every bfloat16 is a float32 (its upper 16 bits): nothing is lost
            warnings.push(
                "bfloat16 elements → float (each value kept exactly; twice the memory)".into(),
            );
            ("float", space_of(&similarity))
        }
        "byte" => ("byte", space_of(&similarity)),
        "bit" => ("binary", Some("hamming")),
        other => {
            block(
                notes,
                path,
                before,
                format!("dense_vector element_type {other} has no OpenSearch equivalent"),
            );
            return;
        }
    };
    let Some(space) = space else {
        block(
            notes,
            path,
            before,
            format!("dense_vector similarity {similarity} has no OpenSearch space type"),
        );
        return;
    };
    if similarity == "dot_product" || similarity == "max_inner_product" {
        warnings.push(format!(
            "{similarity} → innerproduct: scores are computed differently"
        ));
    }
    let max_dims = 16_000;
    if dims > max_dims {
        block(
            notes,
            path,
            before,
            format!("{dims} dimensions: OpenSearch k-NN accepts at most {max_dims}"),
        );
        return;
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("knn_vector"));
    out.insert("dimension".into(), json!(dims));
    let mut data_type = data_type;
    if !indexed {
        if data_type == "binary" {
            block(notes, path, before, "a not-indexed bit vector has no OpenSearch equivalent (binary vectors need a faiss method)".into());
            return;
        }
        if data_type == "byte" && !t.at_least_os(2, 9) {
            data_type = "float";
            warnings.push(format!(
                "byte vector stored as float ({t} has no byte vectors)"
            ));
        }
        if data_type != "float" {
            out.insert("data_type".into(), json!(data_type));
        }
        warnings.push("not indexed for kNN in the source: no method, exact (script) search only unless the index builds graphs for other fields".into());
    } else {
        let engine = match engine_for(t, space, data_type, ctx.options.knn_engine) {
            Ok(e) => e,
            Err(why) if data_type == "byte" && ctx.options.knn_engine.is_none() => {
                // Byte vectors fit in float ones.
                match engine_for(t, space, "float", None) {
                    Ok(e) => {
                        warnings.push(format!("byte vector indexed as float: {why}"));
                        data_type = "float";
                        e
                    }
                    Err(why) => {
                        block(notes, path, before, why.to_string());
                        return;
                    }
                }
            }
            Err(why) => {
                block(notes, path, before, why.to_string());
                return;
            }
        };
        if data_type != "float" {
            out.insert("data_type".into(), json!(data_type));
        }
        let mut params = Map::new();
        if let Some(Value::Object(io)) = f.get("index_options") {
            for k in ["m", "ef_construction"] {
                if let Some(v) = io.get(k) {
                    params.insert(k.into(), v.clone());
                }
            }
            let kind = io.get("type").and_then(Value::as_str).unwrap_or("hnsw");
            match kind {
                "hnsw" => {}
                "int8_hnsw" if engine == KnnEngine::Lucene && t.at_least_os(2, 16) && data_type == "float" => {
                    params.insert("encoder".into(), json!({"name": "sq"}));
                    warnings.push("int8_hnsw → lucene scalar quantization (encoder sq)".into());
                }
                "int8_hnsw" | "int4_hnsw" | "bbq_hnsw" => warnings.push(format!(
                    "index_options {kind}: the quantization is not carried over; the graph holds full-precision vectors (more memory)"
                )),
                "flat" | "int8_flat" | "int4_flat" | "bbq_flat" => warnings.push(format!(
                    "index_options {kind} (brute force) → an HNSW graph, so that kNN queries keep working"
                )),
                // Elasticsearch 9.2+ disk-based IVF (elastic.co dense-vector page,
                // `index_options.type`): no OpenSearch counterpart of its own
                "bbq_disk" => warnings.push(
                    "index_options bbq_disk (disk-based IVF, binary quantized) → an HNSW graph of full-precision vectors (more memory)".into(),
                ),
                other => warnings.push(format!("index_options type {other} unknown: plain HNSW")),
            }
        }
        let mut method = Map::new();
        method.insert("name".into(), json!("hnsw"));
        method.insert("engine".into(), json!(engine.as_str()));
        method.insert("space_type".into(), json!(space));
        if !params.is_empty() {
            method.insert("parameters".into(), Value::Object(params));
        }
        out.insert("method".into(), Value::Object(method));
        needs.knn = true;
    }
    *f = out;
    let mut note = format!(
        "dense_vector → knn_vector: dims {dims} → dimension, similarity {similarity} → space_type {space}"
    );
    if let Some(m) = f.get("method") {
        note.push_str(&format!(", engine {}", m["engine"].as_str().unwrap_or("")));
    }
    let sev = if warnings.is_empty() {
        ConversionSeverity::Change
    } else {
        ConversionSeverity::Warning
    };
    if !warnings.is_empty() {
        note.push_str("; ");
        note.push_str(&warnings.join("; "));
    }
    record(
        notes,
        "dense_vector_to_knn_vector",
        path,
        sev,
        before,
        Value::Object(f.clone()),
        note,
    );
}

/// OpenSearch `knn_vector` kept for an OpenSearch target: engines and parameters the
/// target version cannot hold are changed (the source's `index.knn` setting comes along).
fn knn_for_target(f: &mut Map<String, Value>, path: &str, ctx: &Ctx<'_>, notes: &mut Notes) {
    let t = ctx.target;
    let before = Value::Object(f.clone());
    if f.contains_key("model_id") {
        // A trained model lives in the source cluster's model index.
        notes.warn(format!(
            "{path}: knn_vector built from model {}: the model must exist on {t}",
            f["model_id"]
        ));
        return;
    }
    if !t.at_least_os(2, 17) {
        let removed: Map<String, Value> = ["mode", "compression_level"]
            .iter()
            .filter_map(|k| f.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
        if !removed.is_empty() {
            record(notes, "knn_memory_parameters", path, ConversionSeverity::Warning, Value::Object(removed), Value::Null,
                format!("removed ({t} has no disk-based mode or compression levels): vectors are kept in full precision"));
        }
    }
    let data_type = f
        .get("data_type")
        .and_then(Value::as_str)
        .unwrap_or("float")
        .to_string();
    let top_space = f
        .get("space_type")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(Value::Object(method)) = f.get_mut("method") {
        let engine = method
            .get("engine")
            .and_then(Value::as_str)
            .and_then(KnnEngine::parse);
        // OpenSearch 2.17+ also takes space_type at the field's top level
        // (docs.opensearch.org "k-NN vector": `space_type` beside `method`).
        let space = method
            .get("space_type")
            .and_then(Value::as_str)
            .or(top_space.as_deref())
            .unwrap_or("l2")
            .to_string();
        let current_ok = match engine {
            Some(e) => {
                engine_for(t, &space, &data_type, Some(e)).is_ok()
                    && ctx.options.knn_engine.is_none_or(|w| w == e)
            }
            None => ctx.options.knn_engine.is_none(),
        };
        if !current_ok {
            match engine_for(t, &space, &data_type, ctx.options.knn_engine) {
                Ok(e) => {
                    method.insert("engine".into(), json!(e.as_str()));
                    let from = engine.map(KnnEngine::as_str).unwrap_or("default");
                    let after = Value::Object(f.clone());
                    record(
                        notes,
                        "knn_engine_by_target",
                        path,
                        ConversionSeverity::Warning,
                        before,
                        after,
                        format!(
                            "k-NN engine {from} → {} ({t}): the graph is rebuilt by the new engine",
                            e.as_str()
                        ),
                    );
                }
                Err(why) => block(notes, path, before, why.to_string()),
            }
        }
    }
}

/// OpenSearch `knn_vector` → Elasticsearch `dense_vector`.
fn knn_to_dense(f: &mut Map<String, Value>, path: &str, ctx: &Ctx<'_>, notes: &mut Notes) {
    let t = ctx.target;
    let before = Value::Object(f.clone());
    if f.contains_key("model_id") {
        block(
            notes,
            path,
            before,
            "knn_vector built from a trained model has no Elasticsearch equivalent".into(),
        );
        return;
    }
    let Some(dims) = f.get("dimension").and_then(Value::as_u64) else {
        block(notes, path, before, "knn_vector without a dimension".into());
        return;
    };
    let data_type = f
        .get("data_type")
        .and_then(Value::as_str)
        .unwrap_or("float")
        .to_string();
    let method = f.get("method").cloned();
    let space = method
        .as_ref()
        .and_then(|m| m.get("space_type"))
        .or_else(|| f.get("space_type"))
        .and_then(Value::as_str)
        .or(ctx.source_space_type.filter(|_| method.is_none()))
        .unwrap_or("l2")
        .to_string();
    let mut out = Map::new();
    out.insert("type".into(), json!("dense_vector"));
    out.insert("dims".into(), json!(dims));
    let mut warnings = Vec::new();
    // A field without `method` in an `index.knn: true` index has OpenSearch's default
    // graph (HNSW, full precision): indexed here too, with the similarity of its space.
    let default_graph = method.is_none() && ctx.source_knn && t.major >= 8;
    if t.major < 8 {
        if dims > 2048 {
            block(
                notes,
                path,
                before,
                format!("{dims} dimensions: {t} accepts at most 2048"),
            );
            return;
        }
        warnings.push(format!(
            "{t} keeps vectors for script scoring only, no kNN index"
        ));
    } else {
        if dims > 4096 {
            block(
                notes,
                path,
                before,
                format!("{dims} dimensions: {t} indexes at most 4096"),
            );
            return;
        }
        let element = match data_type.as_str() {
            "float" => "float",
            "byte" if t.at_least_es(8, 6) => "byte",
            "binary" if t.at_least_es(8, 15) => "bit",
            other => {
                block(
                    notes,
                    path,
                    before,
                    format!("knn_vector data_type {other} is not supported by {t}"),
                );
                return;
            }
        };
        if element != "float" {
            out.insert("element_type".into(), json!(element));
        }
        let similarity = match space.as_str() {
            "l2" => "l2_norm",
            "cosinesimil" => "cosine",
            "innerproduct" if t.at_least_es(8, 11) => "max_inner_product",
            "innerproduct" => {
                warnings.push(
                    "innerproduct → dot_product: Elasticsearch requires unit-length vectors".into(),
                );
                "dot_product"
            }
            "hamming" if element == "bit" => "l2_norm",
            other => {
                block(
                    notes,
                    path,
                    before,
                    format!("space type {other} has no Elasticsearch similarity"),
                );
                return;
            }
        };
        let graph = method.is_some() || default_graph;
        out.insert("index".into(), json!(graph));
        if graph {
            out.insert("similarity".into(), json!(similarity));
            let mut io = Map::new();
            io.insert("type".into(), json!("hnsw"));
            if let Some(Value::Object(p)) = method.as_ref().and_then(|m| m.get("parameters")) {
                for k in ["m", "ef_construction"] {
                    if let Some(v) = p.get(k) {
                        io.insert(k.into(), v.clone());
                    }
                }
                // lucene's scalar quantizer (`encoder: sq`, OpenSearch 2.16+: int8 per
                // dimension) is Elasticsearch's int8_hnsw (8.12+); faiss encoders (fp16,
                // pq) have no Elasticsearch counterpart (docs.opensearch.org "Lucene scalar
                // quantization"; elastic.co dense-vector `index_options`).
                let encoder = p
                    .get("encoder")
                    .and_then(|e| e.get("name"))
                    .and_then(Value::as_str);
                let engine = method
                    .as_ref()
                    .and_then(|m| m.get("engine"))
                    .and_then(Value::as_str);
                match encoder {
                    None => {}
                    Some("sq") if engine == Some("lucene") && t.at_least_es(8, 12) && element == "float" => {
                        io.insert("type".into(), json!("int8_hnsw"));
                        if let Some(ci) = p
                            .get("encoder")
                            .and_then(|e| e.get("parameters"))
                            .and_then(|x| x.get("confidence_interval"))
                        {
                            io.insert("confidence_interval".into(), ci.clone());
                        }
                    }
                    Some(other) => warnings.push(format!(
                        "the encoder {other} (quantization) is not carried over: full-precision HNSW"
                    )),
                }
            }
            out.insert("index_options".into(), Value::Object(io));
        }
    }
    *f = out;
    let mut note =
        format!("knn_vector → dense_vector: dimension {dims} → dims, space_type {space}");
    if default_graph {
        note.push_str(
            " (no method: index.knn is true, OpenSearch's default HNSW graph → index_options hnsw)",
        );
    }
    if !warnings.is_empty() {
        note.push_str("; ");
        note.push_str(&warnings.join("; "));
    }
    record(
        notes,
        "knn_vector_to_dense_vector",
        path,
        if warnings.is_empty() {
            ConversionSeverity::Change
        } else {
            ConversionSeverity::Warning
        },
        before,
        Value::Object(f.clone()),
        note,
    );
}

/// Elasticsearch 8 index-mode settings (a key, or a prefix ending in `.`) and the release
/// that introduced them: removed for OpenSearch and for older Elasticsearch targets.
const ES_INDEX_MODE_SETTINGS: &[(&str, (u32, u32))] = &[
    ("index.mode", (8, 7)),
    ("index.routing_path", (8, 7)),
    ("index.time_series.", (8, 7)),
    ("index.look_ahead_time", (8, 7)),
    ("index.look_back_time", (8, 7)),
    (
        "index.mapping.total_fields.ignore_dynamic_beyond_limit",
        (8, 13),
    ),
    ("index.mapping.synthetic_source_keep", (8, 15)),
    ("index.mapping.source.mode", (8, 17)),
    ("index.logsdb.", (8, 17)),
    ("index.dimensions_tsid_strategy_enabled", (8, 17)),
];

/// Whether `target` lacks the Elasticsearch 8 setting `key` (or index mode `value`).
fn lacks_mode_setting(target: ProductVersion, key: &str, value: &Value) -> bool {
    let Some((_, since)) = ES_INDEX_MODE_SETTINGS.iter().find(|(k, _)| {
        if k.ends_with('.') {
            key.starts_with(k)
        } else {
            key == *k
        }
    }) else {
        return false;
    };
    if target.is_os() {
        return true;
    }
    let since = match (key, value.as_str()) {
        ("index.mode", Some("logsdb")) => (8, 17),
        ("index.mode", Some("lookup")) => (8, 18),
        _ => *since,
    };
    !target.at_least_es(since.0, since.1)
}

const PLUGIN_ANALYSIS_PREFIXES: &[(&str, &str)] = &[
    ("icu_", "analysis-icu"),
    ("kuromoji", "analysis-kuromoji"),
    ("nori", "analysis-nori"),
    ("smartcn", "analysis-smartcn"),
    ("polish_", "analysis-stempel"),
    ("stempel", "analysis-stempel"),
    ("phonetic", "analysis-phonetic"),
    ("ukrainian", "analysis-ukrainian"),
];

/// Converts flat settings for the target; `needs` comes from the mapping conversion.
pub fn convert_settings(
    flat: &mut Map<String, Value>,
    ctx: &Ctx<'_>,
    needs: Needs,
    notes: &mut Notes,
) {
    let t = ctx.target;
    let removed: Map<String, Value> = flat
        .iter()
        .filter(|(k, v)| lacks_mode_setting(t, k, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !removed.is_empty() {
        for k in removed.keys() {
            flat.remove(k);
        }
        let mode = removed
            .get("index.mode")
            .and_then(Value::as_str)
            .unwrap_or("standard");
        record(
            notes,
            "index_mode_settings",
            "settings",
            if mode == "standard" {
                ConversionSeverity::Change
            } else {
                ConversionSeverity::Warning
            },
            Value::Object(removed.clone()),
            Value::Null,
            format!(
                "{} removed: {t} creates a standard index{}",
                removed.keys().cloned().collect::<Vec<_>>().join(", "),
                if mode == "standard" {
                    String::new()
                } else {
                    format!(" (the source was {mode}: no dimension routing or synthetic source)")
                }
            ),
        );
    }
    if t.is_os() {
        if needs.knn
            && flat
                .get("index.knn")
                .is_none_or(|v| v != "true" && v != &Value::Bool(true))
        {
            let before = flat.get("index.knn").cloned().unwrap_or(Value::Null);
            flat.insert("index.knn".into(), json!("true"));
            record(
                notes,
                "dense_vector_to_knn_vector",
                "settings",
                ConversionSeverity::Change,
                if before.is_null() {
                    Value::Null
                } else {
                    json!({"index.knn": before})
                },
                json!({"index.knn": "true"}),
                "index.knn: true (k-NN graphs are built for converted vector fields)",
            );
        }
    } else {
        let removed: Map<String, Value> = flat
            .iter()
            .filter(|(k, _)| *k == "index.knn" || k.starts_with("index.knn."))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !removed.is_empty() {
            for k in removed.keys() {
                flat.remove(k);
            }
            record(
                notes,
                "knn_settings",
                "settings",
                ConversionSeverity::Change,
                Value::Object(removed.clone()),
                Value::Null,
                format!(
                    "{} removed ({t} has no k-NN plugin settings)",
                    removed.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
    if let Some(codec) = flat
        .get("index.codec")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        let new = match (t.is_os(), codec.as_str()) {
            (true, "legacy_default") => Some("default"),
            (true, "legacy_best_compression") => Some("best_compression"),
            (false, "zstd" | "zstd_no_dict" | "qat_lz4" | "qat_deflate" | "qat_zstd") => {
                Some("best_compression")
            }
            _ => None,
        };
        if let Some(new) = new {
            flat.insert("index.codec".into(), json!(new));
            record(
                notes,
                "codec_names",
                "settings",
                ConversionSeverity::Change,
                json!({"index.codec": codec}),
                json!({"index.codec": new}),
                format!("index.codec {codec} → {new} ({t} names it so)"),
            );
        }
    }
    convert_analysis(flat, ctx, notes);
}

fn convert_analysis(flat: &mut Map<String, Value>, ctx: &Ctx<'_>, notes: &mut Notes) {
    let t = ctx.target;
    let keys: Vec<String> = flat
        .keys()
        .filter(|k| k.starts_with("index.analysis.") && k.ends_with(".type"))
        .cloned()
        .collect();
    let mut plugins: Vec<(String, &str)> = Vec::new();
    for key in keys {
        let Some(ty) = flat.get(&key).and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let renamed = match ty.as_str() {
            "nGram" => Some("ngram"),
            "edgeNGram" => Some("edge_ngram"),
            "delimited_payload_filter" => Some("delimited_payload"),
            _ => None,
        };
        let component = key.trim_end_matches(".type").to_string();
        if let Some(new) = renamed {
            flat.insert(key.clone(), json!(new));
            record(
                notes,
                "analysis_renamed",
                &component,
                ConversionSeverity::Change,
                json!({key.clone(): ty}),
                json!({key.clone(): new}),
                format!("{ty} → {new} (the old name is gone from current versions)"),
            );
        }
        if ty == "synonym" || ty == "synonym_graph" {
            let set_key = format!("{component}.synonyms_set");
            if let Some(set) = flat.get(&set_key).cloned() {
                if !t.at_least_es(8, 10) {
                    record(notes, "analysis_synonyms_set", &component, ConversionSeverity::Blocking, json!({set_key.clone(): set}), Value::Null,
                        format!("synonyms set {set} is cluster data that is not in the snapshot and {t} has no synonyms sets: put the synonyms inline (synonyms or synonyms_path)"));
                }
            }
        }
        if let Some((_, plugin)) = PLUGIN_ANALYSIS_PREFIXES
            .iter()
            .find(|(p, _)| ty.starts_with(p))
        {
            plugins.push((component, plugin));
        }
    }
    plugins.sort();
    plugins.dedup();
    for (component, plugin) in plugins {
        notes.warn(format!("{component}: needs the {plugin} plugin on {t}"));
    }
}

#[cfg(test)]
mod tests;
