//! Mappings written for these tests in the shapes the Elasticsearch 8 documentation
//! describes, converted for every supported target version and created there for real:
//! on the project's test server posing as each version (which validates field types,
//! vector parameters and settings by version) and on `osmem-server` (an OpenSearch 3.8
//! API). Unconverted, the same mappings are refused by the OpenSearch servers.

use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};
use testkit::services::{raw_http, Osmem};

use metadata::{convert_definition, Options, ProductVersion};

const SOURCE: ProductVersion = ProductVersion::es(8, 15);

/// (name, definition). Written from the Elasticsearch 8 documentation's field pages.
fn definitions() -> Vec<(&'static str, Value)> {
    vec![
        (
            "vectors",
            json!({"mappings": testkit::fixtures::vector_mapping()}),
        ),
        (
            "logs",
            json!({
                "settings": {"index": {"number_of_shards": 1, "codec": "best_compression"}},
                "mappings": {
                    "_source": {"mode": "synthetic"},
                    "dynamic": "runtime",
                    "runtime": {"day_of_week": {"type": "keyword",
                        "script": {"source": "emit(doc['@timestamp'].value.dayOfWeekEnum.getDisplayName(TextStyle.FULL, Locale.ROOT))"}}},
                    "dynamic_templates": [{"strings": {"match_mapping_type": "string", "mapping": {"type": "keyword"}}}],
                    "properties": {
                        "@timestamp": {"type": "date"},
                        "message": {"type": "match_only_text"},
                        "url": {"properties": {"original": {"type": "wildcard", "ignore_above": 8191}}},
                        "labels": {"type": "flattened"},
                        "data_stream": {"properties": {"dataset": {"type": "constant_keyword", "value": "nginx.access"}}},
                        "bytes": {"type": "unsigned_long"},
                        "agent": {"properties": {"version": {"type": "version"}}},
                        "host": {"properties": {"name": {"type": "keyword", "time_series_dimension": true}}}
                    }
                }
            }),
        ),
        (
            "metrics",
            json!({
                "settings": {"index.mode": "time_series", "index.routing_path": ["host"],
                             "index.time_series.start_time": "2024-01-01T00:00:00Z",
                             "index.time_series.end_time": "2024-02-01T00:00:00Z"},
                "mappings": {"properties": {
                    "@timestamp": {"type": "date"},
                    "host": {"type": "keyword", "time_series_dimension": true},
                    "cpu": {"type": "double", "time_series_metric": "gauge"}
                }}
            }),
        ),
        (
            "semantic",
            json!({"mappings": {"properties": {
                "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                "embedding": {"type": "dense_vector", "dims": 8, "similarity": "dot_product",
                    "index_options": {"type": "int8_hnsw", "m": 16, "ef_construction": 100}},
                "point": {"type": "point"}
            }}}),
        ),
    ]
}

fn targets() -> Vec<(ProductVersion, ServerConfig)> {
    vec![
        (ProductVersion::os(1, 3), ServerConfig::opensearch("1.3.20")),
        (ProductVersion::os(2, 5), ServerConfig::opensearch("2.5.0")),
        (
            ProductVersion::os(2, 11),
            ServerConfig::opensearch("2.11.1"),
        ),
        (
            ProductVersion::os(2, 17),
            ServerConfig::opensearch("2.17.1"),
        ),
        (
            ProductVersion::os(2, 19),
            ServerConfig::opensearch("2.19.2"),
        ),
        (ProductVersion::os(3, 1), ServerConfig::opensearch("3.1.0")),
        (
            ProductVersion::es(7, 17),
            ServerConfig::elasticsearch("7.17.20"),
        ),
        (
            ProductVersion::es(8, 15),
            ServerConfig::elasticsearch("8.15.3"),
        ),
        (
            ProductVersion::es(9, 1),
            ServerConfig::elasticsearch("9.1.0"),
        ),
    ]
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap()
}

fn put(port: u16, path: &str, body: &Value) -> (u16, Value) {
    let (status, bytes) = raw_http(
        port,
        "PUT",
        path,
        &[("Content-Type", "application/json")],
        &serde_json::to_vec(body).unwrap(),
    )
    .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn get(port: u16, path: &str) -> Value {
    let (status, bytes) = raw_http(port, "GET", path, &[], b"").unwrap();
    assert_eq!(
        status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap()
}

/// Every leaf field's type in a mapping, by dotted path.
fn types(mapping: &Value, prefix: &str, out: &mut Vec<(String, String)>) {
    for (name, f) in mapping
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if let Some(t) = f.get("type").and_then(Value::as_str) {
            out.push((path.clone(), t.to_string()));
        }
        types(f, &path, out);
    }
}

/// Creates `name` from its converted definition and checks the server holds the
/// converted field types.
fn create_converted(port: u16, target: ProductVersion, name: &str, def: &Value) {
    let (converted, notes) =
        convert_definition(def, Some(SOURCE), target, &Options::default()).unwrap();
    assert!(!notes.blocked(), "{name} → {target}: {:?}", notes.blockers);
    let (status, answer) = put(port, &format!("/{name}"), &converted);
    assert_eq!(status, 200, "{name} → {target}: {answer}\n{converted:#}");
    let held = get(port, &format!("/{name}/_mapping"));
    let mut want = Vec::new();
    types(&converted["mappings"], "", &mut want);
    let mut got = Vec::new();
    types(&held[name]["mappings"], "", &mut got);
    want.sort();
    got.sort();
    assert_eq!(got, want, "{name} → {target}");
}

#[test]
fn converted_mappings_are_created_on_every_target_version() {
    for (target, config) in targets() {
        let server = TestServer::start(config);
        let port = port_of(&server.url());
        for (name, def) in definitions() {
            let (converted, notes) =
                convert_definition(&def, Some(SOURCE), target, &Options::default()).unwrap();
            // `point` exists only from OpenSearch 2.4 on; everything else converts.
            let expect_blocked = name == "semantic" && target == ProductVersion::os(1, 3);
            assert_eq!(
                notes.blocked(),
                expect_blocked,
                "{name} → {target}: {:?}",
                notes.blockers
            );
            if expect_blocked {
                assert!(notes.blockers[0].contains("point"), "{:?}", notes.blockers);
                continue;
            }
            create_converted(port, target, name, &def);
            if name == "vectors" && target.is_os() {
                let settings = get(port, "/vectors/_settings");
                assert_eq!(
                    settings["vectors"]["settings"]["index"]["knn"], "true",
                    "{target}"
                );
                assert_eq!(
                    converted["mappings"]["properties"]["embedding"]["type"],
                    "knn_vector"
                );
            }
        }
        // The OpenSearch servers refuse the unconverted Elasticsearch 8 mappings.
        if target.is_os() {
            for (name, def) in definitions() {
                let (status, answer) = put(port, &format!("/raw-{name}"), &def);
                assert_eq!(status, 400, "raw {name} accepted by {target}: {answer}");
            }
        }
    }
}

#[test]
fn converted_mappings_are_created_on_osmem() {
    let Some(osmem) = Osmem::start("converted_mappings_are_created_on_osmem") else {
        return;
    };
    let port = osmem.port();
    let root = get(port, "/");
    assert_eq!(root["version"]["number"], "3.8.0");
    let target = ProductVersion::os(3, 8);
    for (name, def) in definitions() {
        create_converted(port, target, name, &def);
        // Unconverted, osmem refuses what it does not know (dense_vector, flattened,
        // runtime fields, index.mode, time_series parameters, point).
        let (status, answer) = put(port, &format!("/raw-{name}"), &def);
        assert_eq!(status, 400, "raw {name} accepted by osmem: {answer}");
    }
    let vectors = get(port, "/vectors/_mapping");
    assert_eq!(
        vectors["vectors"]["mappings"]["properties"]["embedding"]["method"]["engine"],
        "lucene"
    );
}
