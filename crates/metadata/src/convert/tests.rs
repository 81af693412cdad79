//! The rule table, rule by rule, on mappings written for these tests from the
//! Elasticsearch 8 and OpenSearch documentation (the shapes their pages describe).

use super::*;
use serde_json::json;

const ES8: ProductVersion = ProductVersion::es(8, 15);

fn run(body: Value, source: ProductVersion, target: ProductVersion) -> Converted {
    convert_index(&body, Some(source), target, &ConvertOptions::default())
}

fn run_with(
    body: Value,
    source: ProductVersion,
    target: ProductVersion,
    engine: KnnEngine,
) -> Converted {
    convert_index(
        &body,
        Some(source),
        target,
        &ConvertOptions {
            knn_engine: Some(engine),
            ..ConvertOptions::default()
        },
    )
}

fn field(c: &Converted, name: &str) -> Value {
    c.body["mappings"]["properties"][name].clone()
}

fn rules(c: &Converted) -> Vec<&'static str> {
    c.notes.conversions.iter().map(|c| c.rule).collect()
}

fn props(p: Value) -> Value {
    json!({"mappings": {"properties": p}})
}

/// Every rule of the table is exercised by a test below and listed in docs/conversions.md.
#[test]
fn every_rule_is_tested_and_documented() {
    let tested = [
        "dense_vector_to_knn_vector",
        "dense_vector_to_es7",
        "knn_vector_to_dense_vector",
        "knn_engine_by_target",
        "knn_memory_parameters",
        "flattened_to_flat_object",
        "flat_object_to_flattened",
        "flat_object_fallback",
        "match_only_text_to_text",
        "wildcard_to_keyword",
        "unsigned_long_to_keyword",
        "constant_keyword_to_keyword",
        "version_to_keyword",
        "point_shape_to_xy",
        "xy_to_point_shape",
        "counted_keyword_to_keyword",
        "passthrough_to_object",
        "unsupported_type",
        "field_parameters",
        "runtime_fields",
        "derived_fields",
        "source_mode",
        "enable_source",
        "subobjects",
        "index_mode_settings",
        "knn_settings",
        "codec_names",
        "analysis_renamed",
        "analysis_synonyms_set",
        "analysis_plugins",
    ];
    let ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
    assert_eq!(ids, tested, "the table and this list must agree");
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/conversions.md"),
    )
    .expect("docs/conversions.md");
    for id in ids {
        assert!(
            doc.contains(&format!("`{id}`")),
            "docs/conversions.md lacks rule {id}"
        );
    }
}

// ---------------------------------------------------------------- dense_vector → knn_vector

#[test]
fn dense_vector_hnsw_cosine_to_lucene_on_os_2_19() {
    let c = run(
        props(
            json!({"embedding": {"type": "dense_vector", "dims": 384, "index": true,
            "similarity": "cosine", "index_options": {"type": "hnsw", "m": 32, "ef_construction": 200}}}),
        ),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(
        field(&c, "embedding"),
        json!({"type": "knn_vector", "dimension": 384, "method": {"name": "hnsw", "engine": "lucene",
            "space_type": "cosinesimil", "parameters": {"m": 32, "ef_construction": 200}}})
    );
    assert_eq!(c.body["settings"]["index.knn"], "true");
    assert!(!c.blocked());
    let conv = &c.notes.conversions[0];
    assert_eq!(conv.rule, "dense_vector_to_knn_vector");
    assert_eq!(conv.path, "embedding");
    assert_eq!(conv.severity, ConversionSeverity::Change);
    assert_eq!(conv.before["type"], "dense_vector");
    assert_eq!(conv.after["type"], "knn_vector");
}

#[test]
fn similarities_map_to_space_types() {
    for (sim, space, sev) in [
        ("l2_norm", "l2", ConversionSeverity::Change),
        ("cosine", "cosinesimil", ConversionSeverity::Change),
        ("dot_product", "innerproduct", ConversionSeverity::Warning),
        (
            "max_inner_product",
            "innerproduct",
            ConversionSeverity::Warning,
        ),
    ] {
        let c = run(
            props(json!({"v": {"type": "dense_vector", "dims": 8, "similarity": sim}})),
            ES8,
            ProductVersion::os(3, 0),
        );
        assert_eq!(field(&c, "v")["method"]["space_type"], space, "{sim}");
        assert_eq!(c.notes.conversions[0].severity, sev, "{sim}");
    }
}

#[test]
fn engine_follows_the_target_version() {
    let dv =
        |sim: &str| props(json!({"v": {"type": "dense_vector", "dims": 4, "similarity": sim}}));
    let engine = |c: &Converted| {
        field(c, "v")["method"]["engine"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // OpenSearch 1.x has no lucene engine: nmslib.
    assert_eq!(
        engine(&run(dv("cosine"), ES8, ProductVersion::os(1, 3))),
        "nmslib"
    );
    // 2.2–2.12: lucene, but innerproduct only in faiss.
    assert_eq!(
        engine(&run(dv("cosine"), ES8, ProductVersion::os(2, 5))),
        "lucene"
    );
    assert_eq!(
        engine(&run(dv("dot_product"), ES8, ProductVersion::os(2, 11))),
        "faiss"
    );
    assert_eq!(
        engine(&run(dv("dot_product"), ES8, ProductVersion::os(2, 13))),
        "lucene"
    );
    // 3.x never nmslib.
    assert_eq!(
        engine(&run(dv("l2_norm"), ES8, ProductVersion::os(3, 1))),
        "lucene"
    );
    // A chosen engine is honoured where it can hold the field...
    assert_eq!(
        engine(&run_with(
            dv("l2_norm"),
            ES8,
            ProductVersion::os(2, 19),
            KnnEngine::Faiss
        )),
        "faiss"
    );
    assert_eq!(
        engine(&run_with(
            dv("cosine"),
            ES8,
            ProductVersion::os(2, 19),
            KnnEngine::Faiss
        )),
        "faiss"
    );
    // ...and blocks where it cannot: faiss cosine before 2.19, nmslib on 3.x, lucene on 1.x.
    for (sim, target, e) in [
        ("cosine", ProductVersion::os(2, 18), KnnEngine::Faiss),
        ("l2_norm", ProductVersion::os(3, 0), KnnEngine::Nmslib),
        ("l2_norm", ProductVersion::os(1, 3), KnnEngine::Lucene),
    ] {
        let c = run_with(dv(sim), ES8, target, e);
        assert!(c.blocked(), "{sim} {target} {e:?}");
        assert!(
            c.notes.blockers[0].starts_with("v: "),
            "{:?}",
            c.notes.blockers
        );
    }
}

#[test]
fn byte_and_bit_vectors() {
    let byte = props(
        json!({"b": {"type": "dense_vector", "dims": 4, "element_type": "byte", "similarity": "l2_norm"}}),
    );
    let c = run(byte.clone(), ES8, ProductVersion::os(2, 11));
    assert_eq!(
        field(&c, "b"),
        json!({"type": "knn_vector", "dimension": 4, "data_type": "byte",
            "method": {"name": "hnsw", "engine": "lucene", "space_type": "l2"}})
    );
    // Before 2.9 there are no byte vectors: float, with a warning.
    let c = run(byte, ES8, ProductVersion::os(2, 5));
    assert_eq!(field(&c, "b")["data_type"], Value::Null);
    assert_eq!(field(&c, "b")["method"]["engine"], "lucene");
    assert_eq!(c.notes.conversions[0].severity, ConversionSeverity::Warning);
    let bit = props(json!({"h": {"type": "dense_vector", "dims": 64, "element_type": "bit"}}));
    let c = run(bit.clone(), ES8, ProductVersion::os(2, 16));
    assert_eq!(
        field(&c, "h"),
        json!({"type": "knn_vector", "dimension": 64, "data_type": "binary",
            "method": {"name": "hnsw", "engine": "faiss", "space_type": "hamming"}})
    );
    assert!(run(bit, ES8, ProductVersion::os(2, 15)).blocked());
}

#[test]
fn not_indexed_vectors_and_quantized_options() {
    // Elasticsearch 8.0–8.10: not indexed unless asked; no method, no index.knn.
    let c = run(
        props(json!({"v": {"type": "dense_vector", "dims": 3}})),
        ProductVersion::es(8, 8),
        ProductVersion::os(2, 19),
    );
    assert_eq!(
        field(&c, "v"),
        json!({"type": "knn_vector", "dimension": 3})
    );
    assert_eq!(c.body["settings"], Value::Null);
    // 8.11+: indexed by default, cosine by default.
    let c = run(
        props(json!({"v": {"type": "dense_vector", "dims": 3}})),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(field(&c, "v")["method"]["space_type"], "cosinesimil");
    assert_eq!(c.body["settings"]["index.knn"], "true");
    // int8_hnsw → lucene scalar quantization where lucene has it (2.16+).
    let q = props(
        json!({"v": {"type": "dense_vector", "dims": 3, "similarity": "l2_norm",
        "index_options": {"type": "int8_hnsw", "m": 16, "ef_construction": 100, "confidence_interval": 0.9}}}),
    );
    let c = run(q.clone(), ES8, ProductVersion::os(2, 17));
    assert_eq!(
        field(&c, "v")["method"]["parameters"],
        json!({"m": 16, "ef_construction": 100, "encoder": {"name": "sq"}})
    );
    let c = run(q, ES8, ProductVersion::os(2, 11));
    assert_eq!(
        field(&c, "v")["method"]["parameters"],
        json!({"m": 16, "ef_construction": 100})
    );
    assert!(
        c.notes.warnings[0].contains("quantization is not carried over"),
        "{:?}",
        c.notes.warnings
    );
    // bbq_flat (brute force) becomes a graph so that knn queries keep working.
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 64, "similarity": "cosine", "index_options": {"type": "bbq_flat"}}}),
        ),
        ES8,
        ProductVersion::os(3, 0),
    );
    assert_eq!(field(&c, "v")["method"]["name"], "hnsw");
    assert!(c.notes.warnings.iter().any(|w| w.contains("bbq_flat")));
}

#[test]
fn dense_vector_blockers() {
    for (f, why) in [
        (json!({"type": "dense_vector"}), "without dims"),
        (
            json!({"type": "dense_vector", "dims": 20000}),
            "at most 16000",
        ),
        (
            json!({"type": "dense_vector", "dims": 4, "similarity": "hamming_plus"}),
            "no OpenSearch space type",
        ),
        (
            json!({"type": "dense_vector", "dims": 4, "element_type": "float16"}),
            "no OpenSearch equivalent",
        ),
    ] {
        let c = run(props(json!({"v": f})), ES8, ProductVersion::os(2, 19));
        assert!(c.blocked(), "{f}");
        assert!(c.notes.blockers[0].contains(why), "{:?}", c.notes.blockers);
        assert_eq!(
            c.notes.conversions[0].severity,
            ConversionSeverity::Blocking
        );
    }
}

#[test]
fn dense_vector_to_elasticsearch_7() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 3, "index": true, "similarity": "cosine"}}),
        ),
        ES8,
        ProductVersion::es(7, 17),
    );
    assert_eq!(field(&c, "v"), json!({"type": "dense_vector", "dims": 3}));
    assert_eq!(rules(&c), ["dense_vector_to_es7"]);
    // Elasticsearch 8 → 9 keeps it as it is.
    let same = props(
        json!({"v": {"type": "dense_vector", "dims": 3, "index": true, "similarity": "cosine"}}),
    );
    let c = run(same.clone(), ES8, ProductVersion::es(9, 1));
    assert_eq!(c.body["mappings"], same["mappings"]);
    assert!(c.notes.conversions.is_empty());
}

// ---------------------------------------------------------------- knn_vector (OpenSearch sources)

#[test]
fn knn_vector_to_dense_vector() {
    let c = run(
        json!({"settings": {"index": {"knn": true, "knn.algo_param.ef_search": 100}},
               "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 8,
                 "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct",
                            "parameters": {"m": 24, "ef_construction": 128}}}}}}),
        ProductVersion::os(2, 19),
        ProductVersion::es(8, 15),
    );
    assert_eq!(
        field(&c, "v"),
        json!({"type": "dense_vector", "dims": 8, "index": true, "similarity": "max_inner_product",
            "index_options": {"type": "hnsw", "m": 24, "ef_construction": 128}})
    );
    assert_eq!(c.body["settings"], Value::Null, "index.knn* removed");
    assert!(rules(&c).contains(&"knn_settings"));
    // Before 8.11 innerproduct maps to dot_product, with a warning.
    let c = run(
        props(
            json!({"v": {"type": "knn_vector", "dimension": 8, "method": {"name": "hnsw", "space_type": "innerproduct"}}}),
        ),
        ProductVersion::os(2, 11),
        ProductVersion::es(8, 9),
    );
    assert_eq!(field(&c, "v")["similarity"], "dot_product");
    assert_eq!(c.notes.conversions[0].severity, ConversionSeverity::Warning);
    for f in [
        json!({"type": "knn_vector", "model_id": "m1"}),
        json!({"type": "knn_vector", "dimension": 4, "method": {"name": "hnsw", "space_type": "l1"}}),
        json!({"type": "knn_vector", "dimension": 5000}),
    ] {
        assert!(
            run(
                props(json!({"v": f})),
                ProductVersion::os(2, 19),
                ProductVersion::es(8, 15)
            )
            .blocked(),
            "{f}"
        );
    }
}

#[test]
fn nmslib_to_opensearch_3() {
    let c = run(
        props(json!({"v": {"type": "knn_vector", "dimension": 4,
            "method": {"name": "hnsw", "engine": "nmslib", "space_type": "cosinesimil", "parameters": {"m": 16}}}})),
        ProductVersion::os(2, 11),
        ProductVersion::os(3, 0),
    );
    assert_eq!(field(&c, "v")["method"]["engine"], "lucene");
    assert_eq!(field(&c, "v")["method"]["parameters"], json!({"m": 16}));
    assert_eq!(rules(&c), ["knn_engine_by_target"]);
    // l1 exists only in nmslib: blocked on 3.x.
    let c = run(
        props(
            json!({"v": {"type": "knn_vector", "dimension": 4, "method": {"name": "hnsw", "engine": "nmslib", "space_type": "l1"}}}),
        ),
        ProductVersion::os(2, 11),
        ProductVersion::os(3, 0),
    );
    assert!(c.blocked());
    // The same field to 2.19 stays as it is.
    let c = run(
        props(
            json!({"v": {"type": "knn_vector", "dimension": 4, "method": {"name": "hnsw", "engine": "nmslib", "space_type": "l1"}}}),
        ),
        ProductVersion::os(2, 11),
        ProductVersion::os(2, 19),
    );
    assert!(c.notes.conversions.is_empty() && !c.blocked());
}

#[test]
fn knn_memory_parameters_to_older_opensearch() {
    let c = run(
        props(
            json!({"v": {"type": "knn_vector", "dimension": 4, "space_type": "l2", "mode": "on_disk", "compression_level": "32x"}}),
        ),
        ProductVersion::os(2, 19),
        ProductVersion::os(2, 11),
    );
    assert_eq!(
        field(&c, "v"),
        json!({"type": "knn_vector", "dimension": 4, "space_type": "l2"})
    );
    assert_eq!(rules(&c), ["knn_memory_parameters"]);
}

// ---------------------------------------------------------------- other field types

#[test]
fn flattened_and_flat_object() {
    let c = run(
        props(json!({"labels": {"type": "flattened", "depth_limit": 5, "ignore_above": 100}})),
        ES8,
        ProductVersion::os(2, 7),
    );
    assert_eq!(field(&c, "labels"), json!({"type": "flat_object"}));
    assert_eq!(rules(&c), ["flattened_to_flat_object"]);
    let c = run(
        props(json!({"labels": {"type": "flattened"}})),
        ES8,
        ProductVersion::os(2, 5),
    );
    assert_eq!(
        field(&c, "labels"),
        json!({"type": "object", "enabled": false})
    );
    assert_eq!(rules(&c), ["flat_object_fallback"]);
    let c = run(
        props(json!({"labels": {"type": "flat_object"}})),
        ProductVersion::os(2, 11),
        ProductVersion::es(8, 15),
    );
    assert_eq!(field(&c, "labels"), json!({"type": "flattened"}));
    assert_eq!(rules(&c), ["flat_object_to_flattened"]);
    let c = run(
        props(json!({"labels": {"type": "flat_object"}})),
        ProductVersion::os(2, 11),
        ProductVersion::es(7, 2),
    );
    assert_eq!(rules(&c), ["flat_object_fallback"]);
    // Unchanged where the target has the same type.
    assert!(run(
        props(json!({"l": {"type": "flattened"}})),
        ES8,
        ProductVersion::es(9, 0)
    )
    .notes
    .conversions
    .is_empty());
}

#[test]
fn match_only_text_by_target() {
    let m = props(
        json!({"message": {"type": "match_only_text", "fields": {"raw": {"type": "keyword"}}}}),
    );
    let c = run(m.clone(), ES8, ProductVersion::os(2, 11));
    assert_eq!(
        field(&c, "message"),
        json!({"type": "text", "index_options": "docs", "norms": false, "fields": {"raw": {"type": "keyword"}}})
    );
    assert_eq!(rules(&c), ["match_only_text_to_text"]);
    // OpenSearch 2.12+ has it.
    assert_eq!(
        run(m, ES8, ProductVersion::os(2, 12)).body["mappings"]["properties"]["message"]["type"],
        "match_only_text"
    );
}

#[test]
fn keyword_family_by_target() {
    let m = props(json!({
        "path": {"type": "wildcard", "ignore_above": 1024},
        "big": {"type": "unsigned_long", "null_value": 0},
        "env": {"type": "constant_keyword", "value": "prod"},
        "env2": {"type": "constant_keyword"},
        "release": {"type": "version"}
    }));
    // OpenSearch 2.5 has none of them.
    let c = run(m.clone(), ES8, ProductVersion::os(2, 5));
    assert_eq!(
        field(&c, "path"),
        json!({"type": "keyword", "ignore_above": 1024})
    );
    assert_eq!(field(&c, "big"), json!({"type": "keyword"}));
    assert_eq!(field(&c, "env"), json!({"type": "keyword"}));
    assert_eq!(field(&c, "release"), json!({"type": "keyword"}));
    let mut r = rules(&c);
    r.sort();
    assert_eq!(
        r,
        [
            "constant_keyword_to_keyword",
            "constant_keyword_to_keyword",
            "unsigned_long_to_keyword",
            "version_to_keyword",
            "wildcard_to_keyword"
        ]
    );
    // OpenSearch 3.2 has all, but constant_keyword needs its value.
    let c = run(m, ES8, ProductVersion::os(3, 2));
    assert_eq!(field(&c, "path")["type"], "wildcard");
    assert_eq!(field(&c, "big")["type"], "unsigned_long");
    assert_eq!(
        field(&c, "env"),
        json!({"type": "constant_keyword", "value": "prod"})
    );
    assert_eq!(field(&c, "env2"), json!({"type": "keyword"}));
    assert_eq!(field(&c, "release")["type"], "version");
    assert_eq!(rules(&c), ["constant_keyword_to_keyword"]);
}

#[test]
fn cartesian_types_both_ways() {
    let c = run(
        props(json!({"p": {"type": "point"}, "s": {"type": "shape", "orientation": "ccw"}})),
        ES8,
        ProductVersion::os(2, 4),
    );
    assert_eq!(field(&c, "p"), json!({"type": "xy_point"}));
    assert_eq!(
        field(&c, "s"),
        json!({"type": "xy_shape", "orientation": "ccw"})
    );
    assert!(run(
        props(json!({"p": {"type": "point"}})),
        ES8,
        ProductVersion::os(2, 3)
    )
    .blocked());
    let c = run(
        props(json!({"p": {"type": "xy_point"}})),
        ProductVersion::os(2, 11),
        ProductVersion::es(8, 15),
    );
    assert_eq!(field(&c, "p"), json!({"type": "point"}));
    assert_eq!(rules(&c), ["xy_to_point_shape"]);
    assert_eq!(
        rules(&run(
            props(json!({"p": {"type": "point"}})),
            ES8,
            ProductVersion::os(3, 0)
        )),
        ["point_shape_to_xy"]
    );
}

#[test]
fn counted_keyword_and_passthrough() {
    let c = run(
        props(json!({"tags": {"type": "counted_keyword"},
            "attributes": {"type": "passthrough", "priority": 10, "time_series_dimension": true,
                "properties": {"host": {"type": "keyword", "time_series_dimension": true}}}})),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(field(&c, "tags"), json!({"type": "keyword"}));
    assert_eq!(
        field(&c, "attributes"),
        json!({"type": "object", "properties": {"host": {"type": "keyword"}}})
    );
    let r = rules(&c);
    assert!(
        r.contains(&"counted_keyword_to_keyword") && r.contains(&"passthrough_to_object"),
        "{r:?}"
    );
}

#[test]
fn unsupported_types_block_with_a_hint() {
    for (ty, extra, target, hint) in [
        (
            "semantic_text",
            json!({"inference_id": "my-elser"}),
            ProductVersion::os(3, 0),
            "inference endpoint",
        ),
        (
            "sparse_vector",
            json!({}),
            ProductVersion::os(3, 3),
            "rank_features",
        ),
        (
            "sparse_vector",
            json!({}),
            ProductVersion::os(2, 19),
            "rank_features",
        ),
        (
            "aggregate_metric_double",
            json!({"metrics": ["min", "max"], "default_metric": "max"}),
            ProductVersion::os(2, 19),
            "sub-metrics",
        ),
        (
            "histogram",
            json!({}),
            ProductVersion::os(2, 19),
            "histograms",
        ),
        (
            "rank_vectors",
            json!({"dims": 128}),
            ProductVersion::os(3, 0),
            "late interaction",
        ),
        (
            "semantic_text",
            json!({}),
            ProductVersion::es(8, 14),
            "inference endpoint",
        ),
    ] {
        let mut f = json!({"type": ty});
        for (k, v) in extra.as_object().unwrap() {
            f[k] = v.clone();
        }
        let c = run(
            props(json!({"nested_obj": {"properties": {"x": f}}})),
            ES8,
            target,
        );
        assert!(c.blocked(), "{ty} → {target}");
        assert!(
            c.notes.blockers[0].starts_with("nested_obj.x: "),
            "{:?}",
            c.notes.blockers
        );
        assert!(c.notes.blockers[0].contains(hint), "{:?}", c.notes.blockers);
        assert_eq!(rules(&c), ["unsupported_type"]);
    }
    // OpenSearch-only ones towards Elasticsearch.
    assert!(run(
        props(json!({"s": {"type": "semantic", "model_id": "m"}})),
        ProductVersion::os(3, 1),
        ProductVersion::es(8, 15)
    )
    .blocked());
    // Elasticsearch 8.15 → 9 keeps semantic_text.
    assert!(!run(
        props(json!({"s": {"type": "semantic_text"}})),
        ES8,
        ProductVersion::es(9, 0)
    )
    .blocked());
}

#[test]
fn elasticsearch_only_parameters_removed() {
    let c = run(
        props(
            json!({"host": {"type": "keyword", "time_series_dimension": true},
            "cpu": {"type": "double", "time_series_metric": "gauge"},
            "day": {"type": "keyword", "script": {"source": "emit('x')"}, "on_script_error": "continue"}}),
        ),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(field(&c, "host"), json!({"type": "keyword"}));
    assert_eq!(field(&c, "cpu"), json!({"type": "double"}));
    assert_eq!(field(&c, "day"), json!({"type": "keyword"}));
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w.starts_with("day:") && w.contains("stays empty")));
    assert!(rules(&c).iter().all(|r| *r == "field_parameters"));
}

// ---------------------------------------------------------------- mapping root

#[test]
fn runtime_fields_dropped_with_a_warning() {
    let c = run(
        json!({"mappings": {"dynamic": "runtime",
            "runtime": {"day_of_week": {"type": "keyword", "script": {"source": "emit(doc['@timestamp'].value.dayOfWeekEnum.toString())"}}},
            "dynamic_templates": [{"strings_as_runtime": {"match_mapping_type": "string", "runtime": {}}},
                                  {"longs": {"match_mapping_type": "long", "mapping": {"type": "unsigned_long"}}},
                                  {"vectors": {"match": "*_vec", "mapping": {"type": "semantic_text"}}}],
            "properties": {"@timestamp": {"type": "date"}}}}),
        ES8,
        ProductVersion::os(2, 5),
    );
    let m = &c.body["mappings"];
    assert_eq!(m.get("runtime"), None);
    assert_eq!(m["dynamic"], true);
    assert_eq!(
        m["dynamic_templates"],
        json!([{"longs": {"match_mapping_type": "long", "mapping": {"type": "keyword"}}}])
    );
    assert!(
        !c.blocked(),
        "a blocked type in a dynamic template drops the template"
    );
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w.contains("runtime fields dropped")));
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w.starts_with("dynamic template vectors: dropped")));
    // Elasticsearch 7.11+ keeps runtime fields.
    let keep = json!({"mappings": {"runtime": {"x": {"type": "long"}}}});
    assert_eq!(run(keep.clone(), ES8, ProductVersion::es(7, 17)).body, keep);
}

#[test]
fn derived_fields_dropped_towards_elasticsearch() {
    let c = run(
        json!({"mappings": {"derived": {"d": {"type": "keyword", "script": {"source": "emit('x')"}}}, "properties": {}}}),
        ProductVersion::os(2, 15),
        ProductVersion::es(8, 15),
    );
    assert_eq!(c.body["mappings"], json!({"properties": {}}));
    assert_eq!(rules(&c), ["derived_fields"]);
}

#[test]
fn source_mode_and_subobjects() {
    let c = run(
        json!({"mappings": {"_source": {"mode": "synthetic"}, "subobjects": false, "properties": {"a.b": {"type": "keyword"}}}}),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(
        c.body["mappings"],
        json!({"properties": {"a.b": {"type": "keyword"}}})
    );
    let mut r = rules(&c);
    r.sort();
    assert_eq!(r, ["source_mode", "subobjects"]);
    assert_eq!(
        c.notes
            .conversions
            .iter()
            .find(|c| c.rule == "source_mode")
            .unwrap()
            .severity,
        ConversionSeverity::Warning
    );
    // _source keeps its other parameters.
    let c = run(
        json!({"mappings": {"_source": {"mode": "stored", "excludes": ["x"]}}}),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(c.body["mappings"], json!({"_source": {"excludes": ["x"]}}));
}

/// `--target-source enable`: a disabled `_source` is enabled on the target (its other
/// parameters kept); without the option the mapping keeps it disabled.
#[test]
fn enable_source_only_when_asked() {
    let body =
        json!({"mappings": {"_source": {"enabled": false}, "properties": {"n": {"type": "long"}}}});
    let kept = run(
        body.clone(),
        ProductVersion::es(7, 10),
        ProductVersion::os(2, 19),
    );
    assert_eq!(kept.body["mappings"]["_source"], json!({"enabled": false}));
    assert!(rules(&kept).is_empty());
    let options = ConvertOptions {
        enable_source: true,
        ..ConvertOptions::default()
    };
    let c = convert_index(
        &body,
        Some(ProductVersion::es(7, 10)),
        ProductVersion::os(2, 19),
        &options,
    );
    assert_eq!(
        c.body["mappings"],
        json!({"properties": {"n": {"type": "long"}}})
    );
    assert_eq!(rules(&c), ["enable_source"]);
    assert_eq!(c.notes.conversions[0].severity, ConversionSeverity::Change);
    let c = convert_index(
        &json!({"mappings": {"_source": {"enabled": false, "excludes": ["x"]}}}),
        Some(ProductVersion::es(6, 8)),
        ProductVersion::os(2, 19),
        &options,
    );
    assert_eq!(c.body["mappings"], json!({"_source": {"excludes": ["x"]}}));
    // an index that keeps _source is not touched
    let c = convert_index(
        &props(json!({"n": {"type": "long"}})),
        Some(ES8),
        ProductVersion::os(2, 19),
        &options,
    );
    assert!(rules(&c).is_empty());
}

// ---------------------------------------------------------------- settings

#[test]
fn index_mode_settings_removed_for_opensearch() {
    let c = run(
        json!({"settings": {"index": {"mode": "time_series", "routing_path": ["host"],
            "time_series": {"start_time": "2024-01-01T00:00:00Z", "end_time": "2024-01-02T00:00:00Z"},
            "number_of_shards": "1"}},
            "mappings": {"properties": {"host": {"type": "keyword", "time_series_dimension": true}}}}),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(c.body["settings"], json!({"index.number_of_shards": "1"}));
    let conv = c
        .notes
        .conversions
        .iter()
        .find(|c| c.rule == "index_mode_settings")
        .unwrap();
    assert_eq!(conv.severity, ConversionSeverity::Warning);
    assert_eq!(conv.before["index.mode"], "time_series");
    assert!(conv.note.contains("no dimension routing"), "{}", conv.note);
    // Elasticsearch targets keep them.
    let c = run(
        json!({"settings": {"index.mode": "logsdb"}}),
        ES8,
        ProductVersion::es(9, 0),
    );
    assert_eq!(c.body["settings"]["index.mode"], "logsdb");
}

#[test]
fn codec_names() {
    let c = run(
        json!({"settings": {"index.codec": "legacy_best_compression"}}),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(c.body["settings"]["index.codec"], "best_compression");
    let c = run(
        json!({"settings": {"index.codec": "zstd_no_dict"}}),
        ProductVersion::os(2, 19),
        ProductVersion::es(8, 15),
    );
    assert_eq!(c.body["settings"]["index.codec"], "best_compression");
    assert_eq!(rules(&c), ["codec_names"]);
    let c = run(
        json!({"settings": {"index.codec": "zstd"}}),
        ProductVersion::os(2, 19),
        ProductVersion::os(3, 0),
    );
    assert_eq!(c.body["settings"]["index.codec"], "zstd");
}

#[test]
fn analysis_components() {
    let c = run(
        json!({"settings": {"index": {"analysis": {
            "tokenizer": {"grams": {"type": "nGram", "min_gram": 2, "max_gram": 3}},
            "filter": {"edges": {"type": "edgeNGram", "min_gram": 1, "max_gram": 5},
                       "payloads": {"type": "delimited_payload_filter"},
                       "syn": {"type": "synonym_graph", "synonyms_set": "my-synonyms", "updateable": true},
                       "folding": {"type": "icu_folding"}},
            "analyzer": {"a": {"tokenizer": "grams", "filter": ["edges", "syn", "folding"]}}}}}}),
        ES8,
        ProductVersion::os(2, 19),
    );
    let s = &c.body["settings"];
    assert_eq!(s["index.analysis.tokenizer.grams.type"], "ngram");
    assert_eq!(s["index.analysis.filter.edges.type"], "edge_ngram");
    assert_eq!(
        s["index.analysis.filter.payloads.type"],
        "delimited_payload"
    );
    assert!(c.blocked());
    assert!(
        c.notes.blockers[0].contains("my-synonyms"),
        "{:?}",
        c.notes.blockers
    );
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w
            == "index.analysis.filter.folding: needs the analysis-icu plugin on OpenSearch 2.19"));
    let r = rules(&c);
    assert!(
        r.contains(&"analysis_renamed") && r.contains(&"analysis_synonyms_set"),
        "{r:?}"
    );
    // analysis_plugins is a warning, not a conversion record: checked above.
}

#[test]
fn bare_mappings_and_nested_paths() {
    // A bare mapping (what GET _mapping holds per index) converts the same way.
    let c = convert_index(
        &json!({"properties": {"doc": {"type": "nested", "properties": {"v": {"type": "dense_vector", "dims": 2, "similarity": "l2_norm"}}},
            "title": {"type": "text", "fields": {"w": {"type": "wildcard"}}}}}),
        Some(ES8),
        ProductVersion::os(2, 11),
        &ConvertOptions::default(),
    );
    assert_eq!(
        c.body["mappings"]["properties"]["doc"]["properties"]["v"]["type"],
        "knn_vector"
    );
    assert_eq!(
        c.body["mappings"]["properties"]["title"]["fields"]["w"]["type"],
        "keyword"
    );
    let paths: Vec<&str> = c
        .notes
        .conversions
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert!(
        paths.contains(&"doc.v") && paths.contains(&"title.w"),
        "{paths:?}"
    );
    assert_eq!(c.body["settings"]["index.knn"], "true");
}

// ------------------------------------------------ vector mappings, case by case (issue 41)
//
// Reviewed against elastic.co "Dense vector field type"
// (reference/elasticsearch/mapping-reference/dense-vector: element_type float/byte/bit/
// bfloat16, similarity l2_norm/dot_product/cosine/max_inner_product — l2_norm the only one
// for bit, as Hamming distance — index_options hnsw/int8_hnsw/int4_hnsw/bbq_hnsw/flat/
// int8_flat/int4_flat/bbq_flat/bbq_disk) and docs.opensearch.org "k-NN vector", "Spaces"
// (mappings/supported-field-types/knn-spaces: l1, l2, linf, cosinesimil, innerproduct,
// hamming) and "Lucene scalar quantization" (encoder sq, lucene engine, 2.16+).

/// One `dense_vector` with `similarity` to OpenSearch 2.19: the space type, and whether
/// the note is a warning.
fn similarity_to_os(similarity: &str) -> (Value, ConversionSeverity) {
    let c = run(
        props(json!({"v": {"type": "dense_vector", "dims": 4, "similarity": similarity}})),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert!(!c.blocked(), "{similarity}: {:?}", c.notes.blockers);
    (
        field(&c, "v")["method"]["space_type"].clone(),
        c.notes.conversions[0].severity,
    )
}

#[test]
fn similarity_cosine_is_cosinesimil() {
    assert_eq!(
        similarity_to_os("cosine"),
        (json!("cosinesimil"), ConversionSeverity::Change)
    );
}

#[test]
fn similarity_l2_norm_is_l2() {
    assert_eq!(
        similarity_to_os("l2_norm"),
        (json!("l2"), ConversionSeverity::Change)
    );
}

#[test]
fn similarity_dot_product_is_innerproduct_with_a_warning() {
    // Elasticsearch's dot_product scores unit vectors as (1 + dot) / 2; OpenSearch's
    // innerproduct scores differently: the same ranking, other score values.
    assert_eq!(
        similarity_to_os("dot_product"),
        (json!("innerproduct"), ConversionSeverity::Warning)
    );
}

#[test]
fn similarity_max_inner_product_is_innerproduct_with_a_warning() {
    assert_eq!(
        similarity_to_os("max_inner_product"),
        (json!("innerproduct"), ConversionSeverity::Warning)
    );
}

/// A `knn_vector` whose method has `space_type` to Elasticsearch 8.15: its similarity.
fn space_to_es(space: &str, data_type: Option<&str>) -> Converted {
    let mut f = json!({"type": "knn_vector", "dimension": 16,
        "method": {"name": "hnsw", "engine": "faiss", "space_type": space}});
    if let Some(d) = data_type {
        f["data_type"] = json!(d);
    }
    run(props(json!({"v": f})), ProductVersion::os(2, 19), ES8)
}

#[test]
fn space_cosinesimil_is_cosine() {
    let c = space_to_es("cosinesimil", None);
    assert_eq!(field(&c, "v")["similarity"], "cosine");
    assert_eq!(c.notes.conversions[0].severity, ConversionSeverity::Change);
}

#[test]
fn space_l2_is_l2_norm() {
    let c = space_to_es("l2", None);
    assert_eq!(field(&c, "v")["similarity"], "l2_norm");
}

#[test]
fn space_innerproduct_is_max_inner_product_from_8_11() {
    let c = space_to_es("innerproduct", None);
    assert_eq!(field(&c, "v")["similarity"], "max_inner_product");
}

#[test]
fn space_hamming_on_binary_is_a_bit_vector_with_l2_norm() {
    let c = space_to_es("hamming", Some("binary"));
    assert_eq!(field(&c, "v")["element_type"], "bit");
    assert_eq!(field(&c, "v")["similarity"], "l2_norm");
    // Elasticsearch before 8.15 has no bit vectors: refused, named
    let c = run(
        props(
            json!({"v": {"type": "knn_vector", "dimension": 16, "data_type": "binary",
            "method": {"name": "hnsw", "engine": "faiss", "space_type": "hamming"}}}),
        ),
        ProductVersion::os(2, 19),
        ProductVersion::es(8, 14),
    );
    assert!(c.blocked());
    assert!(
        c.notes.blockers[0].contains("data_type binary"),
        "{:?}",
        c.notes.blockers
    );
}

#[test]
fn space_l1_and_linf_are_refused_by_name() {
    for space in ["l1", "linf"] {
        let c = space_to_es(space, None);
        assert!(c.blocked(), "{space}");
        assert!(
            c.notes.blockers[0].contains(&format!(
                "space type {space} has no Elasticsearch similarity"
            )),
            "{:?}",
            c.notes.blockers
        );
    }
}

#[test]
fn byte_knn_vector_is_a_byte_dense_vector() {
    let c = space_to_es("l2", Some("byte"));
    assert_eq!(field(&c, "v")["element_type"], "byte");
}

#[test]
fn index_options_hnsw_carries_m_and_ef_construction() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 4, "similarity": "l2_norm",
            "index_options": {"type": "hnsw", "m": 32, "ef_construction": 200}}}),
        ),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(
        field(&c, "v")["method"],
        json!({"name": "hnsw", "engine": "lucene", "space_type": "l2",
            "parameters": {"m": 32, "ef_construction": 200}})
    );
    assert_eq!(c.notes.conversions[0].severity, ConversionSeverity::Change);
}

#[test]
fn index_options_int8_hnsw_is_lucene_sq_from_opensearch_2_16() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 4, "similarity": "cosine",
            "index_options": {"type": "int8_hnsw"}}}),
        ),
        ES8,
        ProductVersion::os(2, 16),
    );
    assert_eq!(
        field(&c, "v")["method"]["parameters"]["encoder"],
        json!({"name": "sq"})
    );
    assert_eq!(field(&c, "v")["method"]["engine"], "lucene");
}

#[test]
fn index_options_bbq_hnsw_warns_full_precision() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 384, "similarity": "cosine",
            "index_options": {"type": "bbq_hnsw", "m": 16}}}),
        ),
        ProductVersion::es(9, 1),
        ProductVersion::os(3, 0),
    );
    assert_eq!(field(&c, "v")["method"]["name"], "hnsw");
    assert_eq!(field(&c, "v")["method"]["parameters"], json!({"m": 16}));
    assert!(
        c.notes
            .warnings
            .iter()
            .any(|w| w.contains("bbq_hnsw") && w.contains("full-precision")),
        "{:?}",
        c.notes.warnings
    );
}

#[test]
fn index_options_flat_becomes_a_graph_with_a_warning() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 4, "similarity": "cosine",
            "index_options": {"type": "flat"}}}),
        ),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(field(&c, "v")["method"]["name"], "hnsw");
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w.contains("index_options flat (brute force)")));
}

#[test]
fn index_options_bbq_disk_is_named_in_its_warning() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 64, "similarity": "l2_norm",
            "index_options": {"type": "bbq_disk"}}}),
        ),
        ProductVersion::es(9, 2),
        ProductVersion::os(3, 0),
    );
    assert!(!c.blocked());
    assert!(
        c.notes
            .warnings
            .iter()
            .any(|w| w.contains("bbq_disk (disk-based IVF")),
        "{:?}",
        c.notes.warnings
    );
}

#[test]
fn bfloat16_elements_become_float_with_a_warning() {
    let c = run(
        props(
            json!({"v": {"type": "dense_vector", "dims": 4, "element_type": "bfloat16", "similarity": "l2_norm"}}),
        ),
        ProductVersion::es(9, 2),
        ProductVersion::os(3, 0),
    );
    assert!(!c.blocked(), "{:?}", c.notes.blockers);
    assert_eq!(
        field(&c, "v")["data_type"],
        Value::Null,
        "float is the default"
    );
    assert_eq!(field(&c, "v")["type"], "knn_vector");
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w.contains("bfloat16 elements → float")));
}

#[test]
fn lucene_sq_encoder_is_int8_hnsw_on_elasticsearch() {
    let sq = props(json!({"v": {"type": "knn_vector", "dimension": 8,
        "method": {"name": "hnsw", "engine": "lucene", "space_type": "l2",
            "parameters": {"m": 16, "encoder": {"name": "sq", "parameters": {"confidence_interval": 0.95}}}}}}));
    let c = run(sq.clone(), ProductVersion::os(2, 19), ES8);
    assert_eq!(
        field(&c, "v")["index_options"],
        json!({"type": "int8_hnsw", "m": 16, "confidence_interval": 0.95})
    );
    assert_eq!(c.notes.conversions[0].severity, ConversionSeverity::Change);
    // before 8.12 there is no int8_hnsw: plain hnsw, with a warning naming the encoder
    let c = run(sq, ProductVersion::os(2, 19), ProductVersion::es(8, 11));
    assert_eq!(
        field(&c, "v")["index_options"],
        json!({"type": "hnsw", "m": 16})
    );
    assert!(
        c.notes.warnings.iter().any(|w| w.contains("encoder sq")),
        "{:?}",
        c.notes.warnings
    );
    // a faiss encoder has no counterpart
    let c = run(
        props(json!({"v": {"type": "knn_vector", "dimension": 8,
            "method": {"name": "hnsw", "engine": "faiss", "space_type": "l2",
                "parameters": {"encoder": {"name": "sq", "parameters": {"type": "fp16"}}}}}})),
        ProductVersion::os(2, 19),
        ES8,
    );
    assert_eq!(field(&c, "v")["index_options"], json!({"type": "hnsw"}));
    assert!(c
        .notes
        .warnings
        .iter()
        .any(|w| w.contains("not carried over")));
}

#[test]
fn top_level_space_type_decides_the_engine_on_older_opensearch() {
    // faiss has cosinesimil from 2.19 only: given at the top level, it is seen
    let c = run(
        props(
            json!({"v": {"type": "knn_vector", "dimension": 4, "space_type": "cosinesimil",
            "method": {"name": "hnsw", "engine": "faiss"}}}),
        ),
        ProductVersion::os(2, 19),
        ProductVersion::os(2, 17),
    );
    assert_eq!(
        field(&c, "v")["method"]["engine"],
        "lucene",
        "{:?}",
        c.notes
    );
    assert_eq!(rules(&c), ["knn_engine_by_target"]);
}

// ------------------------------------- knn_vector without method, index.knn of the source

/// OpenSearch builds its default graph (HNSW, space l2) for a `knn_vector` without `method`
/// when the index has `index.knn: true` (docs.opensearch.org knn-vector, first example):
/// the Elasticsearch field is indexed, with the similarity of that space.
#[test]
fn knn_vector_without_method_in_knn_index_is_indexed() {
    for knn in [json!(true), json!("true")] {
        let c = run(
            json!({"settings": {"index": {"knn": knn}},
                   "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 3}}}}),
            ProductVersion::os(2, 19),
            ES8,
        );
        assert_eq!(
            field(&c, "v"),
            json!({"type": "dense_vector", "dims": 3, "index": true, "similarity": "l2_norm",
                   "index_options": {"type": "hnsw"}})
        );
        assert_eq!(rules(&c), ["knn_vector_to_dense_vector", "knn_settings"]);
        assert!(c.notes.conversions[0].note.contains("no method"));
    }
    // The field's top-level space_type (OpenSearch 2.17+) gives the similarity; flat settings.
    let c = run(
        json!({"settings": {"index.knn": "true"},
               "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 3, "space_type": "cosinesimil"}}}}),
        ProductVersion::os(3, 1),
        ES8,
    );
    assert_eq!(
        field(&c, "v"),
        json!({"type": "dense_vector", "dims": 3, "index": true, "similarity": "cosine",
               "index_options": {"type": "hnsw"}})
    );
}

/// Without `index.knn: true` (false or absent) OpenSearch searches the field exactly only:
/// the Elasticsearch field stays unindexed.
#[test]
fn knn_vector_without_method_outside_knn_index_is_not_indexed() {
    let mapping = json!({"properties": {"v": {"type": "knn_vector", "dimension": 3}}});
    let unindexed = json!({"type": "dense_vector", "dims": 3, "index": false});
    for (body, target, expected) in [
        (
            json!({"settings": {"index": {"knn": false}}, "mappings": mapping}),
            ES8,
            &unindexed,
        ),
        (
            json!({"settings": {"index": {"number_of_shards": "1"}}, "mappings": mapping}),
            ES8,
            &unindexed,
        ),
        // A bare mapping (no settings known): as before, not indexed.
        (json!({"mappings": mapping}), ES8, &unindexed),
        // Elasticsearch 7 has no kNN index either way.
        (
            json!({"settings": {"index.knn": true}, "mappings": mapping}),
            ProductVersion::es(7, 17),
            &json!({"type": "dense_vector", "dims": 3}),
        ),
    ] {
        let c = run(body, ProductVersion::os(2, 19), target);
        assert_eq!(&field(&c, "v"), expected);
    }
}

/// The reverse: an indexed Elasticsearch dense_vector makes the OpenSearch target's
/// settings say `index.knn: true`, over a source that said false.
#[test]
fn indexed_dense_vector_sets_index_knn_on_opensearch() {
    let c = run(
        json!({"settings": {"index": {"knn": false, "number_of_shards": "1"}},
               "mappings": {"properties": {"v": {"type": "dense_vector", "dims": 3, "index": true, "similarity": "l2_norm"}}}}),
        ES8,
        ProductVersion::os(2, 19),
    );
    assert_eq!(c.body["settings"]["index.knn"], "true");
    assert_eq!(c.body["settings"]["index.number_of_shards"], "1");
}

/// The rule table and docs/conversions.md say what the vector conversions do: the cases
/// tested above (bfloat16, bbq_disk, encoder sq → int8_hnsw, top-level space_type, a
/// `knn_vector` without method in an `index.knn: true` index).
#[test]
fn vector_rules_describe_what_the_code_does() {
    let does = |id: &str| {
        RULES
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.does)
            .unwrap_or_default()
    };
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/conversions.md"),
    )
    .expect("docs/conversions.md");
    for (id, words) in [
        (
            "dense_vector_to_knn_vector",
            &["bfloat16 → float", "bbq_disk", "encoder sq"][..],
        ),
        (
            "knn_vector_to_dense_vector",
            &["int8_hnsw", "top-level", "index.knn: true", "index: false"][..],
        ),
        ("knn_engine_by_target", &["top-level"][..]),
    ] {
        for w in words {
            assert!(does(id).contains(w), "rule {id} does not mention {w}");
        }
    }
    for w in [
        "`bfloat16`",
        "`bbq_disk`",
        "`type: int8_hnsw`",
        "top-level",
        "`index.knn: true`, OpenSearch builds",
    ] {
        assert!(doc.contains(w), "docs/conversions.md does not mention {w}");
    }
}

/// OpenSearch 1.x–2.x took the space of a `knn_vector` without method from the index
/// setting `index.knn.space_type` (k-NN KNNSettings; removed in 3.0): its similarity is
/// that space's, the field's own `space_type` still wins, a method's default stays l2.
#[test]
fn knn_vector_without_method_takes_the_index_space_type() {
    let body = |field: Value| {
        json!({"settings": {"index.knn": "true", "index.knn.space_type": "cosinesimil"},
               "mappings": {"properties": {"v": field}}})
    };
    let similarity = |field: Value| {
        let c = run(body(field), ProductVersion::os(2, 11), ES8);
        field_of(&c)
    };
    fn field_of(c: &Converted) -> Value {
        field(c, "v")["similarity"].clone()
    }
    assert_eq!(
        similarity(json!({"type": "knn_vector", "dimension": 3})),
        "cosine"
    );
    assert_eq!(
        similarity(json!({"type": "knn_vector", "dimension": 3, "space_type": "innerproduct"})),
        "max_inner_product"
    );
    assert_eq!(
        similarity(
            json!({"type": "knn_vector", "dimension": 3, "method": {"name": "hnsw", "engine": "lucene"}})
        ),
        "l2_norm"
    );
}
