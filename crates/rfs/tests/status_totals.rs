//! `rfs status` holds a snapshot migration against the snapshot's own live counts (issue
//! #36): delivered + refused + skipped + filtered + the nested children the reader passed
//! over (`nested:children`, recorded by each item whose read reached its end) must equal
//! the live Lucene documents the plan recorded per index. Shards written by real Lucene
//! 9.9.1 (`shared/fixtures/lucene/generated`): `orders` holds 553 documents with 3,000
//! nested children, `events` 1,846 live documents of 2,000 after hard deletes.

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
fn status_holds_a_snapshot_copy_against_its_live_counts_nested_children_included() {
    let Some(fixtures) = testkit::fixtures::require_fixtures(
        "status_holds_a_snapshot_copy_against_its_live_counts_nested_children_included",
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
    assert_eq!(server.documents("orders").len(), 553);
    assert_eq!(server.documents("events").len(), 1846);

    let status = |json: bool| {
        let mut c = rfs();
        c.args(["status", "--store", &store])
            .current_dir(tmp.path());
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let st: Value = serde_json::from_str(&status(true)).unwrap();
    assert_eq!(st["source_totals"], "proved", "{st}");
    let orders = &st["per_index"]["orders"]["source_total"];
    assert_eq!(orders["count"], "live_with_nested", "{st}");
    assert_eq!(orders["docs"], 3553, "{st}");
    assert_eq!(orders["accounted"], 553, "{st}");
    assert_eq!(orders["nested"], 3000, "{st}");
    let events = &st["per_index"]["events"]["source_total"];
    assert_eq!(
        (events["docs"].as_u64(), events["nested"].as_u64()),
        (Some(1846), Some(0)),
        "{st}"
    );
    // Nested children are neither undelivered nor filtered documents.
    assert!(st["undelivered_by_reason"]
        .as_object()
        .is_none_or(|m| m.is_empty()));
    let text = status(false);
    assert!(
        text.contains("state: FINISHED: every document delivered   control"),
        "{text}"
    );
}
