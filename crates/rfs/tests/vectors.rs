//! Vectors left out of `_source` (Elasticsearch 9.2+, OpenSearch 3 derived source) through
//! the binary: `rfs inspect` says where each vector field is read from and names a field it
//! cannot read (an ERROR line: index, field, format); a copy skips the documents lacking it
//! as `vector_unreadable` (exit 7); a copy of readable vectors verifies equal, and a vector
//! changed on the target by one element is named by `rfs verify`. Shards written by real
//! Lucene 10.5.0 (crates/snapshot/tests/data/vectors, scripts/make-vector-fixtures).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{rfs, show};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../snapshot/tests/data/vectors")
}

fn es_mapping() -> Value {
    json!({"properties": {
        "title": {"type": "text"},
        "emb": {"type": "dense_vector", "dims": 4, "similarity": "cosine", "index": true},
        "obj": {"properties": {"k": {"type": "long"},
            "bv": {"type": "dense_vector", "dims": 3, "element_type": "byte", "similarity": "l2_norm"},
            "links": {"type": "nested", "properties": {"j": {"type": "long"},
                "lv": {"type": "dense_vector", "dims": 2, "similarity": "l2_norm"}}}}},
        "parts": {"type": "nested", "properties": {"n": {"type": "long"},
            "pv": {"type": "dense_vector", "dims": 2, "similarity": "l2_norm"},
            "sub": {"type": "nested", "properties": {"m": {"type": "long"},
                "sv": {"type": "dense_vector", "dims": 3, "similarity": "l2_norm"}}}}},
        "tags": {"type": "nested", "properties": {"t": {"type": "long"},
            "tv": {"type": "dense_vector", "dims": 3, "element_type": "byte", "similarity": "l2_norm"}}}
    }})
}

/// An index of the test repository: name, fixture folder, settings.
type IndexDef<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A repository (snapshot `snap`) of one-shard indices.
fn repository(repo: &Path, indices: &[IndexDef<'_>]) {
    let mut spec = SnapshotSpec::new("snap");
    for (name, dir, settings) in indices {
        spec.indices.push(IndexSpec {
            name: name.to_string(),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
            mappings: vec![TypeMapping {
                doc_type: "_doc".into(),
                mapping: es_mapping(),
            }],
            aliases: serde_json::Map::new(),
            shards: vec![ShardSource::Lucene(Arc::new(
                lucene::FsDirectory::open(data().join(dir)).unwrap(),
            ))],
            extra: serde_json::Map::new(),
        });
    }
    write_repository(repo, &[spec], &WriteOptions::default()).unwrap();
}

/// Elasticsearch 9.2's index version id (9_039_000: from `EXCLUDE_SOURCE_VECTORS_DEFAULT`
/// on, vectors are left out of `_source`).
const ES_9_2: (&str, &str) = ("index.version.created", "9039000");

#[test]
fn inspect_names_where_vectors_come_from_and_an_unknown_format_as_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    repository(
        &repo,
        &[
            ("es92", "es", &[ES_9_2]),
            ("opaque", "es-opaque", &[ES_9_2]),
            (
                "kept",
                "es-opaque",
                &[ES_9_2, ("index.mapping.exclude_source_vectors", "false")],
            ),
        ],
    );
    let out = rfs().arg("inspect").arg(&repo).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // the unreadable field is an error: inspect exits 1 after the whole report
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let lines: Vec<&str> = text.lines().collect();
    let line = |needle: &str| -> &str {
        lines
            .iter()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}: {text}"))
    };
    let errors: Vec<&&str> = lines.iter().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    for part in [
        "ERROR vector field emb",
        "float",
        "RfsOpaqueVectorsFormat",
        "index opaque",
        "vector_unreadable",
    ] {
        assert!(errors[0].contains(part), "{part}: {}", errors[0]);
    }

    let json_out = rfs()
        .arg("inspect")
        .arg(&repo)
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    let fields = |index: &str| -> Vec<(String, String, String, Value)> {
        let i = v["snapshots"][0]["indices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == index)
            .unwrap();
        i["vector_fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_string(),
                    f["element"].as_str().unwrap().to_string(),
                    f["read_from"].as_str().unwrap().to_string(),
                    f["formats"].clone(),
                )
            })
            .collect()
    };
    let hnsw = json!(["Lucene99HnswVectorsFormat"]);
    let opaque = json!(["RfsOpaqueVectorsFormat"]);
    let s = |x: &str| x.to_string();
    let expect = |emb: (&str, &Value), rest: &str| {
        let mut v = vec![(s("emb"), s("float"), s(emb.0), emb.1.clone())];
        for (path, element) in [
            ("obj.bv", "byte"),
            ("obj.links.lv", "float"),
            ("parts.pv", "float"),
            ("parts.sub.sv", "float"),
            ("tags.tv", "byte"),
        ] {
            v.push((s(path), s(element), s(rest), hnsw.clone()));
        }
        v
    };
    assert_eq!(
        fields("es92"),
        expect(("vector files", &hnsw), "vector files")
    );
    assert_eq!(
        fields("opaque"),
        expect(("unreadable", &opaque), "vector files")
    );
    assert_eq!(fields("kept"), expect(("_source", &opaque), "_source"));
    assert!(line(
        "vector field obj.bv (byte, format Lucene99HnswVectorsFormat): read from vector files"
    )
    .contains("obj.bv"));
    assert!(json_out.status.code() == Some(1));
}

#[test]
fn a_copy_skips_documents_whose_vectors_cannot_be_read_and_exits_7() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    repository(&repo, &[("opaque", "es-opaque", &[ES_9_2])]);
    let server = TestServer::start(ServerConfig::elasticsearch("9.2.0"));
    let log = tmp.path().join("failures.jsonl");
    let out = rfs()
        .arg("run")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", "snap", "--target", &server.url()])
        .arg("--store")
        .arg(format!(
            "sqlite://{}",
            tmp.path().join("state.db").display()
        ))
        .arg("--failure-log")
        .arg(&log)
        .arg("--no-progress")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    let records = engine::FailureLog::read(&log).unwrap();
    // 60 documents, one of which (v007) keeps its vector in _source
    assert_eq!(records.len(), 59, "{}", show(&out));
    for r in &records {
        assert_eq!(r.error_type, "vector_unreadable");
    }
    let held = server.documents("opaque");
    assert_eq!(held.keys().collect::<Vec<_>>(), ["v007"]);
}

/// A request to the target with an independent client: (status, JSON body).
fn call(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let c = reqwest::blocking::Client::new();
    let mut rb = c.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    let r = rb.send().unwrap();
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

fn verify(repo: &Path, target: &str, extra: &[&str]) -> std::process::Output {
    rfs()
        .arg("verify")
        .arg("--repo")
        .arg(repo)
        .args(["--snapshot", "snap", "--target", target, "--all"])
        .args(extra)
        .output()
        .unwrap()
}

/// Vectors read back from the vector files (Elasticsearch 9.2 left them out of `_source`)
/// arrive on an OpenSearch target (the test server and `osmem-server`) and verify equal,
/// element for element; one element of one vector changed on the target by plain HTTP is
/// a MISMATCH (exit 6) naming the document and the field's element.
#[test]
fn verify_compares_vectors_and_names_a_changed_element() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    repository(&repo, &[("es92", "es", &[ES_9_2])]);
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let osmem =
        testkit::services::Osmem::start("verify_compares_vectors_and_names_a_changed_element");
    let mut targets = vec![("test server", server.url())];
    if let Some(o) = &osmem {
        targets.push(("osmem", o.url()));
    }
    for (name, target) in targets {
        let dir = tmp.path().join(name.replace(' ', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let out = rfs()
            .arg("run")
            .arg("--repo")
            .arg(&repo)
            .args(["--snapshot", "snap", "--target", &target, "--no-progress"])
            .arg("--store")
            .arg(format!("sqlite://{}", dir.join("state.db").display()))
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
        call("POST", &format!("{target}/es92/_refresh"), None);
        // the vectors are on the target as Lucene read them
        let (_, d) = call("GET", &format!("{target}/es92/_doc/v005"), None);
        assert!(
            d["_source"]["parts"][1]["sub"][1]["sv"].is_array(),
            "{name}: {d}"
        );
        let out = verify(&repo, &target, &[]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));

        // one element of one vector changed (the float32 after 0.5 is far away)
        let (st, mut d) = call("GET", &format!("{target}/es92/_doc/v003"), None);
        assert_eq!(st, 200, "{name}: {d}");
        let src = &mut d["_source"];
        let old = src["emb"][1].as_f64().unwrap();
        src["emb"][1] = json!(old + 0.5);
        let (st, r) = call(
            "PUT",
            &format!("{target}/es92/_doc/v003?refresh=true"),
            Some(src.clone()),
        );
        assert!(st == 200 || st == 201, "{name}: {r}");
        let out = verify(&repo, &target, &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(6), "{name}: {}", show(&out));
        assert!(
            text.contains("    different v003: field emb[1]: "),
            "{name}: {text}"
        );
        assert!(
            text.contains("v003: field emb[1]: source "),
            "{name}: {text}"
        );
        assert_eq!(text.matches("    different ").count(), 1, "{name}: {text}");

        // a nested byte vector changed two levels down is named the same way
        let (_, mut d) = call("GET", &format!("{target}/es92/_doc/v000"), None);
        let src = &mut d["_source"];
        src["tags"][1]["tv"][2] = json!(src["tags"][1]["tv"][2].as_i64().unwrap() ^ 1);
        let (st, r) = call(
            "PUT",
            &format!("{target}/es92/_doc/v000?refresh=true"),
            Some(src.clone()),
        );
        assert!(st == 200 || st == 201, "{name}: {r}");
        let out = verify(&repo, &target, &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(6), "{name}: {}", show(&out));
        assert!(
            text.contains("v000: field tags[1].tv[2]: source "),
            "{name}: {text}"
        );
    }
    assert!(
        osmem.is_some() || std::env::var("CI").is_err(),
        "osmem-server missing"
    );
}
