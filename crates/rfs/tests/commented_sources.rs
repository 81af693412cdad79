//! Elasticsearch's JSON parser allows comments, so a stored `_source` may hold `/* … */`
//! and `// …`. Such documents are delivered with their comments dropped (the same JSON
//! value on one line), to the cluster and to exported files alike, and `rfs verify` finds
//! them equal. The index was written by real Lucene 8 (`MakeCommentedSources.java` in
//! `crates/snapshot/tests/data/`); `l8.stored.jsonl` holds the bytes it stored.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use serde_json::Value;
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{rfs, show};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../snapshot/tests/data/commented")
}

/// What each document must arrive as: the stored value without its comments, compact.
const EXPECTED: [(&str, &str); 3] = [
    ("doc.block", r#"{"title":"Dune","year":1965}"#),
    (
        "doc.line",
        r#"{"title":"Solaris","tags":["sf","novel"],"url":"http://example.org/a//b/*c*/"}"#,
    ),
    // No comment outside strings: passed through byte for byte.
    (
        "doc.plain",
        r#"{"title":"Ubik","note":"// and /* stay in strings */"}"#,
    ),
];

#[test]
fn sources_with_comments_arrive_without_them_and_verify() {
    // The index really holds comments (as Elasticsearch stored what it was sent).
    let stored = std::fs::read_to_string(data().join("l8.stored.jsonl")).unwrap();
    let stored: Vec<Value> = stored
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stored.len(), EXPECTED.len());
    assert!(stored[0]["_source"]
        .as_str()
        .unwrap()
        .contains("/* was: name */"));
    assert!(stored[1]["_source"]
        .as_str()
        .unwrap()
        .contains("// translated\n"));

    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let mut spec = SnapshotSpec::new("snap");
    spec.indices.push(IndexSpec {
        name: "books".into(),
        settings: serde_json::Map::new(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping: serde_json::json!({"properties": {"title": {"type": "keyword"}}}),
        }],
        aliases: serde_json::Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(data().join("l8")).unwrap(),
        ))],
        extra: serde_json::Map::new(),
    });
    write_repository(&repo, &[spec], &WriteOptions::default()).unwrap();

    // To a cluster: every document arrives (exit 0, nothing skipped), comments gone.
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
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
        .arg(tmp.path().join("failures.jsonl"))
        .arg("--no-progress")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(server.doc_count("books"), EXPECTED.len() as u64);
    for (id, want) in EXPECTED {
        let got = server
            .document_bytes("books", id)
            .unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(std::str::from_utf8(&got).unwrap(), want, "{id}");
    }

    // verify reads the snapshot the same way and finds every document equal.
    let out = rfs()
        .arg("verify")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", "snap", "--target", &server.url(), "--all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    // To files: the exported lines are the same bytes.
    let out = rfs()
        .arg("export")
        .arg(&repo)
        .args(["--snapshot", "snap", "--format", "jsonl", "--out", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), EXPECTED.len(), "{text}");
    for (id, want) in EXPECTED {
        let line = text
            .lines()
            .find(|l| serde_json::from_str::<Value>(l).unwrap()["_id"] == id)
            .unwrap_or_else(|| panic!("{id} not exported: {text}"));
        assert!(
            line.contains(&format!("\"_source\":{want}")),
            "{id}: {line}"
        );
    }
}
