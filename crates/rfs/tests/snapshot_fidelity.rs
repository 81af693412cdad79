//! Snapshot-format fidelity (issue #42): a searchable-snapshot (mounted) index — ILM's
//! cold and frozen tiers — is snapshotted by Elasticsearch 7.11+ as an empty commit, its
//! documents staying in the snapshot it was mounted from, named by its
//! `index.store.snapshot.*` settings. rfs reads that snapshot's index under the mounted
//! index's name when the repository holds it, and otherwise says so by name (an ERROR in
//! `inspect`, a refusal by `export` and `run`), never "0 documents, exit 0".
//!
//! The repositories are written by the project's writer; the mounted index's settings
//! follow `buildIndexSettings` of
//! `x-pack/plugin/searchable-snapshots/src/main/java/org/elasticsearch/xpack/searchablesnapshots/action/TransportMountSearchableSnapshotAction.java`
//! (elastic/elasticsearch commit `fb3ff2f33bf75efc6b755c10bf95465c5c12e7bb`): repository
//! name and uuid, snapshot name and uuid, index name and repository index id, store type
//! `snapshot`, a write block, the allocator and recovery type, and for `shared_cache`
//! mounts `partial: true`, the ignored disk watermarks and the `frozen` shard limit
//! group. The shard of the mounted index is an empty Lucene commit, as
//! `SearchableSnapshotsUtils.emptyIndexCommit` leaves it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::append::append_snapshot;
use snapshot::write::{
    write_empty_commit, write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions,
};
use snapshot::{LocalStore, Repository, TypeMapping};
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{rfs, show};

const SOURCE_SNAPSHOT: &str = "ilm-cold-logs-1";
const SOURCE_INDEX: &str = "logs-1";
const NIGHTLY: &str = "nightly";

/// Written by real Lucene 8 (crates/snapshot/tests/data/MakeCommentedSources.java).
fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../snapshot/tests/data/commented")
}

/// The documents of `logs-1`, as they must arrive (see commented_sources.rs).
fn expected() -> Vec<(&'static str, Value)> {
    vec![
        ("doc.block", json!({"title": "Dune", "year": 1965})),
        (
            "doc.line",
            json!({"title": "Solaris", "tags": ["sf", "novel"], "url": "http://example.org/a//b/*c*/"}),
        ),
        (
            "doc.plain",
            json!({"title": "Ubik", "note": "// and /* stay in strings */"}),
        ),
    ]
}

fn mapping() -> Vec<TypeMapping> {
    vec![TypeMapping {
        doc_type: "_doc".into(),
        mapping: json!({"properties": {"title": {"type": "keyword"}}}),
    }]
}

fn spec(name: &str, indices: Vec<IndexSpec>) -> SnapshotSpec {
    let mut s = SnapshotSpec::new(name);
    // Elasticsearch 8.15: repository uuids are recorded.
    s.version_id = 8_512_000;
    s.index_version = Some(8_512_000);
    s.indices = indices;
    s
}

/// The settings Elasticsearch gives an index mounted from `snapshot`/`index`.
fn mount_settings(
    repo_uuid: &str,
    snapshot: (&str, &str),
    index: (&str, &str),
    partial: bool,
) -> Map<String, Value> {
    let mut s = json!({
        "index.store.type": "snapshot",
        "index.store.snapshot.repository_name": "found-snapshots",
        "index.store.snapshot.repository_uuid": repo_uuid,
        "index.store.snapshot.snapshot_name": snapshot.0,
        "index.store.snapshot.snapshot_uuid": snapshot.1,
        "index.store.snapshot.index_name": index.0,
        "index.store.snapshot.index_uuid": index.1,
        "index.blocks.write": "true",
        "index.allocation.existing_shards_allocator": "searchable_snapshot_allocator",
        "index.recovery.type": "snapshot_prewarm",
        "index.routing.allocation.include._tier_preference":
            if partial { "data_frozen" } else { "data_cold" },
    });
    if partial {
        s["index.store.snapshot.partial"] = json!("true");
        s["index.routing.allocation.disk.watermark.ignore"] = json!("true");
        s["index.shard_limit.group"] = json!("frozen");
    }
    s.as_object().cloned().unwrap()
}

fn mounted_index(tmp: &Path, name: &str, settings: Map<String, Value>) -> IndexSpec {
    let empty = tmp.join(format!("empty-{name}"));
    write_empty_commit(&empty).unwrap();
    IndexSpec {
        name: name.into(),
        settings,
        mappings: mapping(),
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(&empty).unwrap(),
        ))],
        extra: Map::new(),
    }
}

/// A repository holding `ilm-cold-logs-1` (the index `logs-1` with its documents) and
/// `nightly`, taken after ILM mounted it as `mounted` and deleted `logs-1`.
fn repository_with_source(tmp: &Path, mounted: &str, partial: bool) -> PathBuf {
    let repo = tmp.join(format!("repo-{mounted}"));
    let source = IndexSpec {
        name: SOURCE_INDEX.into(),
        settings: Map::new(),
        mappings: mapping(),
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(data().join("l8")).unwrap(),
        ))],
        extra: Map::new(),
    };
    write_repository(
        &repo,
        &[spec(SOURCE_SNAPSHOT, vec![source])],
        &WriteOptions::default(),
    )
    .unwrap();
    let r = Repository::open(Arc::new(LocalStore::open(&repo).unwrap())).unwrap();
    let repo_uuid = r
        .data()
        .uuid
        .clone()
        .expect("8.x repository data has a uuid");
    let snap_uuid = r.snapshot(SOURCE_SNAPSHOT).unwrap().uuid().to_string();
    let index_id = r.data().indices[SOURCE_INDEX].id.clone();
    let settings = mount_settings(
        &repo_uuid,
        (SOURCE_SNAPSHOT, &snap_uuid),
        (SOURCE_INDEX, &index_id),
        partial,
    );
    append_snapshot(
        &repo,
        &spec(NIGHTLY, vec![mounted_index(tmp, mounted, settings)]),
        &WriteOptions::default(),
    )
    .unwrap();
    repo
}

fn export(repo: &Path) -> std::process::Output {
    rfs()
        .arg("export")
        .arg(repo)
        .args(["--snapshot", NIGHTLY, "--format", "jsonl", "--out", "-"])
        .output()
        .unwrap()
}

#[test]
fn mounted_index_is_read_from_the_snapshot_it_was_mounted_from() {
    let tmp = tempfile::tempdir().unwrap();
    for (mounted, partial) in [("restored-logs-1", false), ("partial-logs-1", true)] {
        let repo = repository_with_source(tmp.path(), mounted, partial);

        // export: the source snapshot's documents, one by one, under the mounted name.
        let out = export(&repo);
        assert_eq!(out.status.code(), Some(0), "{mounted}: {}", show(&out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), expected().len(), "{mounted}: {text}");
        for (id, want) in expected() {
            let got = lines
                .iter()
                .find(|l| l["_id"] == id)
                .unwrap_or_else(|| panic!("{mounted}: {id} not exported: {text}"));
            assert_eq!(got["_index"], mounted, "{mounted}: {got}");
            assert_eq!(got["_source"], want, "{mounted}: {id}");
        }

        // inspect: no error, the documents counted, where they come from said.
        let out = rfs()
            .arg("inspect")
            .arg(&repo)
            .args(["--snapshot", NIGHTLY, "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mounted}: {}", show(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let ix = &report["snapshots"][0]["indices"][0];
        assert_eq!(ix["name"], mounted);
        assert_eq!(ix["live_docs"], 3, "{ix}");
        let from = ix["mounted_from"].as_str().unwrap_or_default();
        assert!(
            from.contains(SOURCE_SNAPSHOT) && from.contains(SOURCE_INDEX),
            "{ix}"
        );
    }

    // run: the documents reach the target under the mounted name, as ordinary documents.
    let repo = tmp.path().join("repo-partial-logs-1");
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let out = rfs()
        .arg("run")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", NIGHTLY, "--target", &server.url()])
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
    assert_eq!(server.doc_count("partial-logs-1"), 3);
    for (id, want) in expected() {
        let got = server
            .document_bytes("partial-logs-1", id)
            .unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(serde_json::from_slice::<Value>(&got).unwrap(), want, "{id}");
    }
}

#[test]
fn mounted_index_without_its_snapshot_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    // 1. The snapshot it was mounted from is not in this repository; 2. it was mounted
    // from another repository (another uuid) whose snapshot happens to share the name.
    let lone = tmp.path().join("lone");
    write_repository(
        &lone,
        &[spec(
            NIGHTLY,
            vec![mounted_index(
                tmp.path(),
                "partial-logs-1",
                mount_settings(
                    "c2xvdGgtcmVwby11dWlkAA",
                    (SOURCE_SNAPSHOT, "bm90LWluLXRoaXMtcmVwbw"),
                    (SOURCE_INDEX, "aW5kZXgtaWQtZWxzZXdoZXJl"),
                    true,
                ),
            )],
        )],
        &WriteOptions::default(),
    )
    .unwrap();
    let other = repository_with_source(tmp.path(), "restored-logs-1", false);
    // Point the mounted index at another repository uuid: rewrite it as such.
    let r = Repository::open(Arc::new(LocalStore::open(&other).unwrap())).unwrap();
    let snap_uuid = r.snapshot(SOURCE_SNAPSHOT).unwrap().uuid().to_string();
    let index_id = r.data().indices[SOURCE_INDEX].id.clone();
    append_snapshot(
        &other,
        &spec(
            "nightly-2",
            vec![mounted_index(
                tmp.path(),
                "elsewhere-logs-1",
                mount_settings(
                    "YW5vdGhlci1yZXBvc2l0b3J5",
                    (SOURCE_SNAPSHOT, &snap_uuid),
                    (SOURCE_INDEX, &index_id),
                    false,
                ),
            )],
        ),
        &WriteOptions::default(),
    )
    .unwrap();

    // 3. It was mounted from a snapshot of this very repository (its uuid) that has since
    // been deleted (ILM's snapshot gone, the nightly backup still naming it).
    let gone = repository_with_source(tmp.path(), "restored-logs-1-b", false);
    let r = Repository::open(Arc::new(LocalStore::open(&gone).unwrap())).unwrap();
    let own_uuid = r.data().uuid.clone().unwrap();
    let index_id = r.data().indices[SOURCE_INDEX].id.clone();
    append_snapshot(
        &gone,
        &spec(
            "nightly-3",
            vec![mounted_index(
                tmp.path(),
                "deleted-logs-1",
                mount_settings(
                    &own_uuid,
                    ("ilm-cold-logs-0", "ZGVsZXRlZC1zbmFwc2hvdA"),
                    (SOURCE_INDEX, &index_id),
                    true,
                ),
            )],
        ),
        &WriteOptions::default(),
    )
    .unwrap();

    for (repo, snapshot, index, why) in [
        (
            &gone,
            "nightly-3",
            "deleted-logs-1",
            "does not hold that snapshot",
        ),
        (
            &lone,
            NIGHTLY,
            "partial-logs-1",
            // The writer gives `lone` a repository uuid of its own, so the mount's
            // repository (another uuid) is the reason named.
            "is not this one",
        ),
        (&other, "nightly-2", "elsewhere-logs-1", "is not this one"),
    ] {
        let out = rfs()
            .arg("inspect")
            .arg(repo)
            .args(["--snapshot", snapshot])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{index}: {}", show(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains(&format!("index {index}: ERROR")))
            .unwrap_or_else(|| panic!("{index}: no ERROR line: {}", show(&out)));
        assert!(
            line.contains("searchable-snapshot (mounted) index"),
            "{line}"
        );
        assert!(
            line.contains("ilm-cold-logs-") && line.contains(why),
            "{line}"
        );

        let out = rfs()
            .arg("export")
            .arg(repo)
            .args(["--snapshot", snapshot, "--format", "jsonl", "--out", "-"])
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{index}: {}", show(&out));
        assert!(out.stdout.is_empty(), "{index}: {}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(index) && err.contains("searchable-snapshot (mounted) index"),
            "{index}: {}",
            show(&out)
        );

        // run: refused at plan time, by name, nothing created.
        let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
        let out = rfs()
            .arg("run")
            .arg("--repo")
            .arg(repo)
            .args(["--snapshot", snapshot, "--target", &server.url()])
            .arg("--store")
            .arg(format!(
                "sqlite://{}",
                tmp.path().join(format!("state-{index}.db")).display()
            ))
            .arg("--failure-log")
            .arg(tmp.path().join(format!("failures-{index}.jsonl")))
            .arg("--no-progress")
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{index}: {}", show(&out));
        let all = show(&out);
        assert!(
            all.contains(index) && all.contains("searchable-snapshot (mounted) index"),
            "{index}: {all}"
        );
        assert_eq!(server.doc_count(index), 0, "{index}");
    }
}
