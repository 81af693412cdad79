//! Issue 25: `rfs verify` accounts for the snapshot's own live count per source index,
//! exactly: live Lucene documents (segment infos' maxDoc less deletions) must equal the
//! documents read plus the nested children the reader counted as it passed over them, and
//! the target must hold live less nested, skipped, filtered and refused. Shards written by
//! real Lucene 9.9.1 (`shared/fixtures/lucene/generated`): `orders` holds 553 documents
//! with 3,000 nested children (Lucene documents without `_id` or `_source`) and deletions,
//! `events` 1,846 live documents of 2,000 after hard deletes.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{rfs, show};

fn index(name: &str, shard: &Path, mapping: Value) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        settings: Map::new(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping,
        }],
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(shard).unwrap(),
        ))],
        extra: Map::new(),
    }
}

#[test]
fn verify_accounts_for_every_live_document_and_nested_child_per_index() {
    let Some(fixtures) = testkit::fixtures::require_fixtures(
        "verify_accounts_for_every_live_document_and_nested_child_per_index",
    ) else {
        return;
    };
    let generated = fixtures.join("lucene").join("generated");
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let mut spec = SnapshotSpec::new("snap");
    spec.indices = vec![
        index(
            "orders",
            &generated.join("l9-best_compression-cfs-nested"),
            json!({"properties": {"customer": {"type": "nested"}}}),
        ),
        index(
            "events",
            &generated.join("l9-best_speed-nocfs-nosoft"),
            json!({"properties": {}}),
        ),
    ];
    write_repository(&repo, &[spec], &WriteOptions::default()).unwrap();

    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let store = format!("sqlite://{}", tmp.path().join("state.db").display());
    let out = rfs()
        .arg("run")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", "snap", "--target", &server.url()])
        .args(["--store", &store, "--no-progress"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // the independent view: the test server's own documents
    assert_eq!(server.documents("orders").len(), 553);
    assert_eq!(server.documents("events").len(), 1846);

    let verify = |extra: &[&str]| {
        rfs()
            .arg("verify")
            .arg("--repo")
            .arg(&repo)
            .args(["--snapshot", "snap", "--target", &server.url()])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = verify(&["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let figures = |report: &Value, index: &str| {
        let s = report["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["index"] == index)
            .unwrap_or_else(|| panic!("{index} in {report}"))
            .clone();
        [
            "snapshot_live",
            "nested",
            "read",
            "skipped",
            "filtered",
            "refused",
            "expected_on_target",
            "target_count",
        ]
        .map(|k| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}")))
    };
    assert_eq!(
        figures(&report, "orders"),
        [3553, 3000, 553, 0, 0, 0, 553, 553],
        "{report}"
    );
    assert_eq!(
        figures(&report, "events"),
        [1846, 0, 1846, 0, 0, 0, 1846, 1846],
        "{report}"
    );
    assert_eq!(report["snapshot_live"], 3553 + 1846);

    // the text report shows the same figures
    let out = verify(&["--sample", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("orders ") && l.contains("3553"))
        .unwrap_or_else(|| panic!("{text}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        ["orders", "3553", "3000", "553", "0", "0", "0", "553", "553", "ok"],
        "{text}"
    );

    // one document removed from the target: exit 6, naming the index and the numbers
    let id = server.documents("orders").into_keys().next().unwrap();
    let (code, body) = testkit::services::raw_http(
        server.addr().port(),
        "DELETE",
        &format!("/orders/_doc/{id}?refresh=true"),
        &[],
        b"",
    )
    .unwrap();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(server.documents("orders").len(), 552);
    let out = verify(&["--sample", "0"]);
    assert_eq!(out.status.code(), Some(6), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("MISMATCH orders: target orders holds 552, but 553 must be there"),
        "{}",
        show(&out)
    );
    let out = verify(&["--json", "--sample", "0"]);
    assert_eq!(out.status.code(), Some(6), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        figures(&report, "orders"),
        [3553, 3000, 553, 0, 0, 0, 553, 552],
        "{report}"
    );
}
