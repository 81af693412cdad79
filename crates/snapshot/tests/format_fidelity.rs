//! Snapshot-format elements so far only produced by the project's writer, each written
//! in the shape the upstream code gives it (sources cited per test) and read back:
//! OpenSearch 2.17–2.18 `snapshot_shard_paths/` names with `.` between the fields, a
//! repository `min_version` newer than this reader knows, and `_source.mode` in the
//! mappings of 9.x indices created after `SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::shard_paths::{ShardPathType, ShardPathsName, SHARD_PATHS_DIR};
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::{Error, LocalStore, Repository, ShardReader, SourceMode, TypeMapping};

/// Three documents written by real Lucene 8 (tests/data/MakeCommentedSources.java).
fn l8() -> ShardSource {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/commented/l8");
    ShardSource::Lucene(Arc::new(lucene::FsDirectory::open(dir).unwrap()))
}

fn index(name: &str, settings: Value, mapping: Value) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        settings: settings.as_object().cloned().unwrap_or_default(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping,
        }],
        aliases: Map::new(),
        shards: vec![l8()],
        extra: Map::new(),
    }
}

fn open(dir: &Path) -> Result<Repository, Error> {
    Repository::open(Arc::new(LocalStore::open(dir).unwrap()))
}

fn ids(repo: &Repository, snapshot: &str, index: &str) -> BTreeMap<String, Value> {
    let ix = repo.snapshot(snapshot).unwrap().index(index).unwrap();
    let mut out = BTreeMap::new();
    for s in 0..ix.number_of_shards() {
        let shard = ix.open_shard(s).unwrap();
        let reader = ShardReader::open(&shard).unwrap();
        for d in reader.documents(0..reader.max_doc()).unwrap() {
            let d = d.unwrap();
            out.insert(
                d.id.clone(),
                Value::String(String::from_utf8_lossy(&d.source).into()),
            );
        }
    }
    out
}

/// OpenSearch 2.17 and 2.18 name `snapshot_shard_paths/` blobs with `.` between the
/// fields (`SnapshotShardPaths.DELIMITER = "."`, opensearch-project/OpenSearch
/// `server/src/main/java/org/opensearch/snapshots/SnapshotShardPaths.java` at commit
/// `0f95c88e3d7205e6832c16877eb075c75216cf9e`; later ones `#`, same file at
/// `3aa54e593c43b596dabc5f0734e10a0a8f1322d3`), and an index name may itself hold dots
/// (OpenSearch PR #16617). The recorded paths are what locate the shards: here the shard
/// directory is moved where only the recorded path finds it.
#[test]
fn shard_paths_named_with_dots_are_read() {
    let name = "logs.app.2024-01";
    let n = ShardPathsName::parse("aBc-_0.logs.app.2024-01.3.1.1").unwrap();
    assert_eq!(
        (
            n.index_id.as_str(),
            n.index_name.as_str(),
            n.shard_count,
            n.path_type
        ),
        ("aBc-_0", "logs.app.2024-01", 3, ShardPathType::HashedPrefix)
    );
    assert_eq!(n.blob_name_as_listed(), "aBc-_0.logs.app.2024-01.3.1.1");
    assert_eq!(n.blob_name(), "aBc-_0#logs.app.2024-01#3#1#1");

    for sep in ['.', '#'] {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("repo");
        let mut spec = SnapshotSpec::new("snap");
        spec.indices = vec![index(name, json!({}), json!({"properties": {}}))];
        let opts = WriteOptions {
            shard_path_type: ShardPathType::HashedInfix,
            shard_paths_separator: sep,
            ..WriteOptions::default()
        };
        write_repository(&dest, &[spec], &opts).unwrap();
        let listed: Vec<PathBuf> = std::fs::read_dir(dest.join(SHARD_PATHS_DIR))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(listed.len(), 1, "{sep}");
        let blob = listed[0].file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            blob.contains(&format!("{sep}{name}{sep}1{sep}2{sep}1")),
            "{blob}"
        );

        // Move the shard where only the recorded path leads, and record it there.
        let id = open(&dest).unwrap().data().indices[name].id.clone();
        let body: Value = serde_json::from_slice(&std::fs::read(&listed[0]).unwrap()).unwrap();
        let computed = body["paths"][0]
            .as_str()
            .unwrap()
            .trim_end_matches('/')
            .to_string();
        let moved = format!("elsewhere/indices/{id}/0");
        std::fs::create_dir_all(dest.join(&moved).parent().unwrap()).unwrap();
        std::fs::rename(dest.join(&computed), dest.join(&moved)).unwrap();
        let mut body = body;
        body["paths"] = json!([format!("{moved}/")]);
        std::fs::write(&listed[0], serde_json::to_vec(&body).unwrap()).unwrap();

        let repo = open(&dest).unwrap();
        let docs = ids(&repo, "snap", name);
        assert_eq!(
            docs.keys().collect::<Vec<_>>(),
            ["doc.block", "doc.line", "doc.plain"],
            "{sep}"
        );
    }
}

/// `min_version` is the oldest release able to read the repository (Elasticsearch
/// `RepositoryData`, `SnapshotsService` raise it as they add format features); one naming
/// a major after the newest this reader knows is refused by name, not misread.
#[test]
fn min_version_newer_than_known_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("repo");
    let mut spec = SnapshotSpec::new("snap");
    spec.version_id = 8_512_000;
    spec.index_version = Some(8_512_000);
    spec.indices = vec![index("logs", json!({}), json!({"properties": {}}))];
    write_repository(&dest, &[spec], &WriteOptions::default()).unwrap();
    let generation = open(&dest).unwrap().data().generation.unwrap();
    let blob = dest.join(format!("index-{generation}"));
    let mut data: Value = serde_json::from_slice(&std::fs::read(&blob).unwrap()).unwrap();
    assert_eq!(data["min_version"], "7.12.0");

    data["min_version"] = json!("10.0.0");
    std::fs::write(&blob, serde_json::to_vec(&data).unwrap()).unwrap();
    match open(&dest) {
        Err(e @ Error::Unsupported { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&format!("index-{generation}")), "{msg}");
            assert!(msg.contains("min_version 10.0.0"), "{msg}");
            assert!(e.is_permanent());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    // The known ones open.
    data["min_version"] = json!("9.1.0");
    std::fs::write(&blob, serde_json::to_vec(&data).unwrap()).unwrap();
    assert!(open(&dest).is_ok());
}

/// Indices created from `SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP` (9_007_000, elastic/
/// elasticsearch `IndexVersions.java` at `0024eeaec627406aced6d49e7d424164e1ca3955`) on
/// ignore `_source.mode` in mappings (`SourceFieldMapper.PARSER`); earlier ones honour it;
/// the `index.mapping.source.mode` setting counts for both.
#[test]
fn source_mode_in_mappings_counts_as_each_version_has_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("repo");
    let mut spec = SnapshotSpec::new("snap");
    spec.version_id = 9_039_000;
    spec.index_version = Some(9_039_000);
    let synthetic = json!({"_source": {"mode": "synthetic"}, "properties": {}});
    let created = |id: u32| json!({"index.version.created": id.to_string()});
    spec.indices = vec![
        index("before-noop", created(9_006_000), synthetic.clone()),
        index("es8", created(8_512_000), synthetic.clone()),
        index("after-noop", created(9_007_000), synthetic.clone()),
        index("recent", created(9_039_000), synthetic.clone()),
        index(
            "recent-setting",
            json!({"index.version.created": "9039000", "index.mapping.source.mode": "synthetic"}),
            synthetic,
        ),
    ];
    write_repository(&dest, &[spec], &WriteOptions::default()).unwrap();
    let repo = open(&dest).unwrap();
    let snap = repo.snapshot("snap").unwrap();
    for (name, mode) in [
        ("before-noop", SourceMode::Synthetic),
        ("es8", SourceMode::Synthetic),
        ("after-noop", SourceMode::Stored),
        ("recent", SourceMode::Stored),
        ("recent-setting", SourceMode::Synthetic),
    ] {
        let md = snap.index(name).unwrap().metadata().clone();
        assert_eq!(md.source_mode(), mode, "{name}");
    }
    // The ignored mode leaves the stored _source to be read as is.
    assert_eq!(ids(&repo, "snap", "recent").len(), 3);
}

/// Elasticsearch 8.15+ data streams with a failure store list its indices (`.fs-…`) in
/// `failure_indices`, beside `indices` and in the same `{index_name, index_uuid}` shape
/// (elastic/elasticsearch `server/src/main/java/org/elasticsearch/cluster/metadata/
/// DataStream.java`, `FAILURE_INDICES_FIELD`): they are known as such, and their
/// documents read like any index's.
#[test]
fn failure_store_indices_are_listed_with_their_data_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("repo");
    let backing = ".ds-logs-app-default-2025.01.01-000001";
    let failures = ".fs-logs-app-default-2025.01.01-000002";
    let mut spec = SnapshotSpec::new("snap");
    spec.version_id = 8_512_000;
    spec.index_version = Some(8_512_000);
    spec.indices = vec![
        index(
            backing,
            json!({"index.hidden": "true"}),
            json!({"properties": {}}),
        ),
        index(
            failures,
            json!({"index.hidden": "true"}),
            json!({"properties": {}}),
        ),
    ];
    spec.data_streams = vec![snapshot::write::DataStreamSpec {
        name: "logs-app-default".into(),
        timestamp_field: "@timestamp".into(),
        indices: vec![backing.into()],
    }];
    spec.failure_indices
        .insert("logs-app-default".into(), vec![failures.into()]);
    write_repository(&dest, &[spec], &WriteOptions::default()).unwrap();

    let repo = open(&dest).unwrap();
    let snap = repo.snapshot("snap").unwrap();
    let global = snap.global_metadata().unwrap();
    let ds = &global.data_streams["logs-app-default"];
    assert_eq!(ds.indices, vec![backing]);
    assert_eq!(ds.failure_indices, vec![failures]);
    assert_eq!(
        global.failure_store_of(failures).unwrap().name,
        "logs-app-default"
    );
    assert!(global.failure_store_of(backing).is_none());
    assert!(global.data_stream_of(failures).is_none());
    assert_eq!(
        snap.index_names(),
        vec![backing.to_string(), failures.to_string()]
    );
    assert_eq!(ids(&repo, "snap", failures).len(), 3);
}
