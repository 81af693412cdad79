//! `rfs run` from an Elasticsearch 8.15 snapshot — `dense_vector` (float and byte),
//! `flattened`, `match_only_text`, `unsigned_long`, `version` fields, a data stream — into
//! a target of every supported version: the test server posing as OpenSearch 1.3 to 3.1
//! and Elasticsearch 7.17 to 9.1, and `osmem-server` (OpenSearch 3.8). Each run must create
//! the converted index and deliver every document, compared one by one (with the byte
//! vectors that the source held as hexadecimal strings turned into arrays).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::write::{
    write_repository, DataStreamSpec, IndexSpec, ShardSource, SnapshotSpec, WriteOptions,
};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};
use testkit::services::{raw_http, Osmem};

const SNAPSHOT: &str = "es8-nightly";
const VECTORS: &str = "vectors";
const STREAM: &str = "logs-app-default";
const BACKING: &str = ".ds-logs-app-default-2024.01.01-000001";

fn lucene(dir: &Path) -> ShardSource {
    ShardSource::Lucene(Arc::new(lucene::FsDirectory::open(dir).unwrap()))
}

fn index(name: &str, shards: Vec<ShardSource>, settings: Value) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        settings: settings.as_object().cloned().unwrap_or_default(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping: testkit::fixtures::vector_mapping(),
        }],
        aliases: Map::new(),
        shards,
        extra: Map::new(),
    }
}

/// An Elasticsearch 8.15 snapshot of the Lucene 9 vector shards.
fn write_es8_repository(dest: &Path) {
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 8_512_000;
    spec.index_version = Some(8_512_000);
    spec.indices = vec![
        index(
            VECTORS,
            vec![lucene(&shards[0].0), lucene(&shards[1].0)],
            json!({"index.codec": "best_compression"}),
        ),
        index(
            BACKING,
            vec![lucene(&shards[1].0)],
            json!({"index.hidden": "true"}),
        ),
    ];
    spec.data_streams = vec![DataStreamSpec {
        name: STREAM.into(),
        timestamp_field: "@timestamp".into(),
        indices: vec![BACKING.into()],
    }];
    // The template the data stream was created from, with the same (converted) mapping.
    spec.index_templates.insert(
        "logs-app".into(),
        json!({"index_patterns": ["logs-app-*"], "data_stream": {}, "priority": 200,
               "template": {"mappings": testkit::fixtures::vector_mapping()}}),
    );
    write_repository(dest, &[spec], &WriteOptions::default()).unwrap();
}

/// Hexadecimal → signed bytes, as the transform writes them.
fn hex_to_array(s: &str) -> Value {
    let b = s.as_bytes();
    Value::Array(
        (0..b.len() / 2)
            .map(|i| {
                let byte =
                    u8::from_str_radix(std::str::from_utf8(&b[2 * i..2 * i + 2]).unwrap(), 16)
                        .unwrap();
                json!(byte as i8)
            })
            .collect(),
    )
}

/// `_id` → expected `_source` on the target for the documents of shard `n`.
fn expected(n: usize) -> BTreeMap<String, Value> {
    let (_, file) = &testkit::fixtures::vector_shards()[n];
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let mut src = v["_source"].clone();
            let hex = src["byte_embedding"].as_str().unwrap().to_string();
            src["byte_embedding"] = hex_to_array(&hex);
            (v["_id"].as_str().unwrap().to_string(), src)
        })
        .collect()
}

fn rfs_run(repo: &Path, target: &str, work: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .env_remove("RFS_CONFIG")
        .args([
            "--quiet",
            "run",
            "--snapshot",
            SNAPSHOT,
            "--target",
            target,
            "--no-progress",
        ])
        .args(extra)
        .arg("--repo")
        .arg(repo)
        .arg("--store")
        .arg(format!("sqlite://{}", work.join("state.db").display()))
        .arg("--failure-log")
        .arg(work.join("failures.jsonl"))
        .current_dir(work)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn assert_same(what: &str, got: &BTreeMap<String, Value>, want: &BTreeMap<String, Value>) {
    assert_eq!(got.len(), want.len(), "{what}: document count");
    for (id, source) in want {
        assert_eq!(got.get(id), Some(source), "{what}: {id}");
    }
}

#[test]
fn es8_snapshot_with_vectors_migrates_into_every_target_version() {
    let repo = tempfile::tempdir().unwrap();
    write_es8_repository(repo.path());
    let mut both = expected(0);
    both.extend(expected(1));
    let targets = [
        ServerConfig::opensearch("1.3.20"),
        ServerConfig::opensearch("2.5.0"),
        ServerConfig::opensearch("2.11.1"),
        ServerConfig::opensearch("2.17.1"),
        ServerConfig::opensearch("2.19.2"),
        ServerConfig::opensearch("3.1.0"),
        ServerConfig::elasticsearch("7.17.20"),
        ServerConfig::elasticsearch("8.15.3"),
        ServerConfig::elasticsearch("9.1.0"),
    ];
    for config in targets {
        let what = format!("{} {}", config.distribution, config.version);
        let opensearch = config.distribution == testkit::server::Distribution::OpenSearch;
        let server = TestServer::start(config);
        let work = tempfile::tempdir().unwrap();
        let (code, out) = rfs_run(repo.path(), &server.url(), work.path(), &[]);
        assert_eq!(code, Some(0), "{what}:\n{out}");
        assert_same(&what, &server.documents(VECTORS), &both);
        // The data stream was created from its template; its documents went in with
        // `create` (the server refuses anything else on a data stream).
        let streams = server.data_streams();
        let backing_target = streams
            .get(STREAM)
            .unwrap_or_else(|| panic!("{what}: {streams:?}\n{out}"))[0]
            .clone();
        assert_same(&what, &server.documents(&backing_target), &expected(1));
        assert!(
            server.index(BACKING).is_none(),
            "{what}: backing index created as an index"
        );
        let info = server.index(VECTORS).unwrap();
        let embedding = &info.mappings["properties"]["embedding"];
        if opensearch {
            assert_eq!(embedding["type"], "knn_vector", "{what}: {embedding}");
            assert_eq!(embedding["dimension"], 4);
            assert_eq!(
                info.settings.get("index.knn"),
                Some(&json!("true")),
                "{what}"
            );
        } else {
            assert_eq!(embedding["type"], "dense_vector", "{what}: {embedding}");
            assert_eq!(embedding["dims"], 4);
        }
        let ds_embedding =
            &server.index(&backing_target).unwrap().mappings["properties"]["embedding"];
        assert_eq!(
            ds_embedding["type"], embedding["type"],
            "{what}: template converted"
        );

        // A second run (a new store) sends every document again: `create` finds the
        // data stream's documents there, which counts as delivered.
        let work = tempfile::tempdir().unwrap();
        let (code, out) = rfs_run(repo.path(), &server.url(), work.path(), &[]);
        assert_eq!(code, Some(0), "{what} again:\n{out}");
        assert_same(&what, &server.documents(&backing_target), &expected(1));
    }
}

#[test]
fn data_streams_as_indices() {
    let repo = tempfile::tempdir().unwrap();
    write_es8_repository(repo.path());
    let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
    let work = tempfile::tempdir().unwrap();
    let (code, out) = rfs_run(
        repo.path(),
        &server.url(),
        work.path(),
        &["--data-streams", "indices"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(server.data_streams().is_empty());
    assert_same("indices", &server.documents(BACKING), &expected(1));
    // The data stream's name is an alias over its backing index, the write index.
    let backing = server.index(BACKING).unwrap();
    assert_eq!(
        backing.aliases.get(STREAM),
        Some(&json!({"is_write_index": true}))
    );
}

fn search_all(port: u16, index: &str) -> BTreeMap<String, Value> {
    let body = serde_json::to_vec(&json!({"size": 1000, "query": {"match_all": {}}})).unwrap();
    let (status, bytes) = raw_http(
        port,
        "POST",
        &format!("/{index}/_search"),
        &[("Content-Type", "application/json")],
        &body,
    )
    .unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["_id"].as_str().unwrap().to_string(), h["_source"].clone()))
        .collect()
}

#[test]
fn es8_snapshot_with_vectors_migrates_into_osmem() {
    let Some(osmem) = Osmem::start("es8_snapshot_with_vectors_migrates_into_osmem") else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    write_es8_repository(repo.path());
    let work = tempfile::tempdir().unwrap();
    // osmem has no data streams: the backing index comes over as an index.
    let (code, out) = rfs_run(
        repo.path(),
        &osmem.url(),
        work.path(),
        &["--data-streams", "indices"],
    );
    assert_eq!(code, Some(0), "{out}");
    let mut both = expected(0);
    both.extend(expected(1));
    assert_same("osmem", &search_all(osmem.port(), VECTORS), &both);
    assert_same("osmem", &search_all(osmem.port(), BACKING), &expected(1));
    let (_, bytes) = raw_http(osmem.port(), "GET", "/vectors/_mapping", &[], b"").unwrap();
    let m: Value = serde_json::from_slice(&bytes).unwrap();
    let p = &m[VECTORS]["mappings"]["properties"];
    assert_eq!(p["embedding"]["type"], "knn_vector");
    assert_eq!(p["embedding"]["method"]["engine"], "lucene");
    // osmem writes the data type in capitals
    assert_eq!(
        p["byte_embedding"]["data_type"]
            .as_str()
            .map(str::to_lowercase),
        Some("byte".into())
    );
    assert_eq!(p["labels"]["type"], "flat_object");
    assert_eq!(p["body"]["type"], "match_only_text");
    assert_eq!(p["counter"]["type"], "unsigned_long");
}

#[test]
fn evaluate_shows_every_conversion_before_and_after() {
    let repo = tempfile::tempdir().unwrap();
    write_es8_repository(repo.path());
    let server = TestServer::start(ServerConfig::opensearch("2.11.1"));
    let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .env_remove("RFS_CONFIG")
        .args([
            "--quiet",
            "metadata",
            "evaluate",
            "--snapshot",
            SNAPSHOT,
            "--target",
            &server.url(),
        ])
        .arg("--repo")
        .arg(repo.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "convert [dense_vector_to_knn_vector] embedding:",
        "convert [dense_vector_to_knn_vector] byte_embedding:",
        "convert [flattened_to_flat_object] labels:",
        "convert [match_only_text_to_text] body:",
        "convert [version_to_keyword] release:",
        "before: {\"dims\":4",
        "after:  {\"dimension\":4",
        "backing index of data stream logs-app-default",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert!(server.write_requests().is_empty(), "evaluate wrote");
}

#[test]
fn a_blocking_mapping_stops_the_run_before_anything_is_created() {
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 8_512_000;
    let mut semantic = index("semantic", vec![lucene(&shards[0].0)], json!({}));
    semantic.mappings[0].mapping["properties"]["summary"] =
        json!({"type": "semantic_text", "inference_id": "my-elser-endpoint"});
    spec.indices = vec![
        index(VECTORS, vec![lucene(&shards[1].0)], json!({})),
        semantic,
    ];
    let repo = tempfile::tempdir().unwrap();
    write_repository(repo.path(), &[spec], &WriteOptions::default()).unwrap();
    let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
    let work = tempfile::tempdir().unwrap();
    let (code, out) = rfs_run(repo.path(), &server.url(), work.path(), &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("BLOCKED"), "{out}");
    assert!(
        server.index_names().is_empty(),
        "{:?}",
        server.index_names()
    );
    assert_eq!(server.total_doc_count(), 0);
    // Leaving the blocked index out, the rest migrates.
    let work = tempfile::tempdir().unwrap();
    let (code, out) = rfs_run(
        repo.path(),
        &server.url(),
        work.path(),
        &["--index", VECTORS],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_same("vectors only", &server.documents(VECTORS), &expected(1));
    assert_eq!(server.index_names(), [VECTORS]);
}

#[test]
fn an_index_the_target_refuses_to_create_stops_the_run_before_any_document() {
    // A field type the target does not know (and no conversion rule names): the conversion
    // passes it on, the target refuses the index. Sending documents anyway would let the
    // target create the index with mappings it guesses, and the run would end 0.
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 8_512_000;
    let mut odd = index("odd", vec![lucene(&shards[0].0)], json!({}));
    odd.mappings[0].mapping["properties"]["summary"] = json!({"type": "no_such_field_type"});
    spec.indices = vec![odd];
    let repo = tempfile::tempdir().unwrap();
    write_repository(repo.path(), &[spec], &WriteOptions::default()).unwrap();
    let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
    let work = tempfile::tempdir().unwrap();
    let (code, out) = rfs_run(repo.path(), &server.url(), work.path(), &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("metadata migration failed"), "{out}");
    assert_eq!(server.total_doc_count(), 0, "{:?}", server.index_names());
}
