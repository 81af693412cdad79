//! Repositories in the layouts of Elasticsearch 8/9 and OpenSearch 2/3, written by the
//! project's writer around shards written by real Lucene 9, read back document by
//! document: OpenSearch hashed shard paths (prefix and infix, with and without the
//! `snapshot_shard_paths/` blobs, with a bucket base path, on local disk and on S3), the
//! Elasticsearch 8 repository data (data streams, hidden backing indices, system indices,
//! unknown new keys), and remote-store shallow copies, which must fail with a clear error.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::shard_paths::{PathHashAlgorithm, ShardPathType};
use snapshot::write::{
    write_repository, DataStreamSpec, IndexSpec, ShardSource, SnapshotSpec, WriteOptions,
};
use snapshot::{
    BlobStore, Error, IndexMode, LocalStore, Repository, ShardReader, SourceMode, TypeMapping,
};

const SNAPSHOT: &str = "nightly";
const VECTORS: &str = "vectors";
const DATA_STREAM: &str = "logs-app-default";
const BACKING: &str = ".ds-logs-app-default-2024.01.01-000001";
const SYSTEM: &str = ".rfs-internal";

fn lucene(dir: &Path) -> ShardSource {
    ShardSource::Lucene(Arc::new(lucene::FsDirectory::open(dir).unwrap()))
}

/// `_id` → `_source` of the live documents Lucene wrote into shard `n`.
fn expected(n: usize) -> BTreeMap<String, Value> {
    let (_, file) = &testkit::fixtures::vector_shards()[n];
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["_id"].as_str().unwrap().to_string(), v["_source"].clone())
        })
        .collect()
}

fn index(name: &str, shards: Vec<ShardSource>, settings: Value, extra: Value) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        settings: settings.as_object().cloned().unwrap_or_default(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping: testkit::fixtures::vector_mapping(),
        }],
        aliases: Map::new(),
        shards,
        extra: extra.as_object().cloned().unwrap_or_default(),
    }
}

/// A snapshot as Elasticsearch 8.15 takes it: a two-shard vector index with keys this
/// reader does not know, a data stream with a hidden backing index, a system index.
fn es8_spec() -> SnapshotSpec {
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 8_512_000;
    spec.index_version = Some(8_512_000);
    spec.indices = vec![
        index(
            VECTORS,
            vec![lucene(&shards[0].0), lucene(&shards[1].0)],
            json!({"index.mode": "standard", "index.codec": "default"}),
            json!({
                "timestamp_range": {"shards": []},
                "event_ingested_range": {"shards": []},
                "mappings_updated_version": 8_512_000,
                "inference_fields": {},
                "stats": {"write_load": {"loads": [-1.0], "uptimes": [-1]}},
                "a_key_from_the_future": {"nested": [1, {"deeper": true}]},
            }),
        ),
        index(
            BACKING,
            vec![lucene(&shards[1].0)],
            json!({"index.hidden": "true", "index.mode": "logsdb",
                   "index.mapping.source.mode": "stored"}),
            json!({}),
        ),
        index(
            SYSTEM,
            vec![lucene(&shards[0].0)],
            json!({"index.hidden": "true"}),
            json!({"system": true}),
        ),
    ];
    spec.data_streams = vec![DataStreamSpec {
        name: DATA_STREAM.into(),
        timestamp_field: "@timestamp".into(),
        indices: vec![BACKING.into()],
    }];
    spec.index_templates.insert(
        "logs-app".into(),
        json!({"index_patterns": ["logs-app-*"], "data_stream": {}, "priority": 200,
               "template": {"settings": {"index": {"mode": "logsdb"}}}}),
    );
    spec
}

fn open_local(dest: &Path, base: &str) -> Repository {
    let store: Arc<dyn BlobStore> = if base.is_empty() {
        Arc::new(LocalStore::open(dest).unwrap())
    } else {
        Arc::new(LocalStore::open_in_bucket(dest, base).unwrap())
    };
    Repository::open(store).unwrap()
}

/// Every live document of `index`, by id.
fn documents(repo: &Repository, index: &str) -> BTreeMap<String, Value> {
    let ix = repo.snapshot(SNAPSHOT).unwrap().index(index).unwrap();
    let mut out = BTreeMap::new();
    for s in 0..ix.number_of_shards() {
        let shard = ix.open_shard(s).unwrap();
        let reader = ShardReader::open(&shard).unwrap();
        for d in reader.documents(0..reader.max_doc()).unwrap() {
            let d = d.unwrap();
            let source: Value = serde_json::from_slice(&d.source).unwrap();
            assert!(out.insert(d.id.clone(), source).is_none(), "{}", d.id);
        }
    }
    out
}

/// The repository holds exactly the documents Lucene wrote, compared one by one.
fn assert_documents(repo: &Repository, what: &str) {
    let mut both = expected(0);
    both.extend(expected(1));
    for (index, want) in [
        (VECTORS, both),
        (BACKING, expected(1)),
        (SYSTEM, expected(0)),
    ] {
        let got = documents(repo, index);
        assert_eq!(got.len(), want.len(), "{what}: {index}");
        for (id, source) in &want {
            assert_eq!(got.get(id), Some(source), "{what}: {index}/{id}");
        }
    }
}

fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_shard_path_layout_reads_back_every_document() {
    let cases = [
        (ShardPathType::Fixed, "", true),
        (ShardPathType::HashedPrefix, "", true),
        (ShardPathType::HashedPrefix, "", false),
        (ShardPathType::HashedInfix, "", true),
        (ShardPathType::HashedPrefix, "snapshots/prod", true),
        (ShardPathType::HashedPrefix, "snapshots/prod", false),
        (ShardPathType::HashedInfix, "snapshots/prod", true),
        (ShardPathType::HashedInfix, "snapshots/prod", false),
    ];
    for (path_type, base, record) in cases {
        let what = format!("{path_type} base {base:?} recorded {record}");
        let dest = tempfile::tempdir().unwrap();
        let opts = WriteOptions {
            shard_path_type: path_type,
            record_shard_paths: record,
            base_path: base.into(),
            ..WriteOptions::default()
        };
        write_repository(dest.path(), &[es8_spec()], &opts).unwrap();
        let repo = open_local(dest.path(), base);
        assert_documents(&repo, &what);

        // The blobs are where OpenSearch puts them.
        let files = files_under(dest.path());
        let snap = repo.snapshot(SNAPSHOT).unwrap();
        let ix = snap.index(VECTORS).unwrap();
        assert_eq!(ix.shard_path_type().unwrap(), path_type, "{what}");
        let id = ix.id().to_string();
        let prefix = if base.is_empty() {
            String::new()
        } else {
            format!("{base}/")
        };
        for shard in 0..2u32 {
            let hash = PathHashAlgorithm::Fnv1aComposite1.shard_component(&id, shard);
            let dir = match path_type {
                ShardPathType::Fixed => format!("{prefix}indices/{id}/{shard}"),
                ShardPathType::HashedPrefix => format!("{hash}/{prefix}indices/{id}/{shard}"),
                ShardPathType::HashedInfix => format!("{prefix}{hash}/indices/{id}/{shard}"),
            };
            assert!(
                files.iter().any(|f| f.starts_with(&format!("{dir}/snap-"))),
                "{what}: no shard blobs in {dir}: {files:#?}"
            );
        }
        let recorded = files
            .iter()
            .filter(|f| f.contains("snapshot_shard_paths/"))
            .count();
        let expect = if record && path_type != ShardPathType::Fixed {
            3
        } else {
            0
        };
        assert_eq!(recorded, expect, "{what}: {files:#?}");
        if path_type == ShardPathType::HashedPrefix && !base.is_empty() {
            assert!(
                !files
                    .iter()
                    .any(|f| f.starts_with(&format!("{base}/indices/{id}/0/"))),
                "{what}: shard blobs inside the base path"
            );
        }
    }
}

#[test]
fn recorded_shard_paths_win_over_the_computed_ones() {
    // A node-level `cluster.snapshot.shard.path.prefix` changes where OpenSearch writes;
    // only the `snapshot_shard_paths/` blob says where. Simulate it by moving a shard.
    let dest = tempfile::tempdir().unwrap();
    let opts = WriteOptions {
        shard_path_type: ShardPathType::HashedPrefix,
        ..WriteOptions::default()
    };
    write_repository(dest.path(), &[es8_spec()], &opts).unwrap();
    let repo = open_local(dest.path(), "");
    let id = repo.data().indices[VECTORS].id.clone();
    let hash = PathHashAlgorithm::Fnv1aComposite1.shard_component(&id, 1);
    let from = dest.path().join(format!("{hash}/indices/{id}/1"));
    let to = dest
        .path()
        .join(format!("custom-prefix/{hash}/indices/{id}/1"));
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::rename(&from, &to).unwrap();
    let paths_dir = dest.path().join("snapshot_shard_paths");
    let blob = std::fs::read_dir(&paths_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(&id))
        .unwrap();
    let mut v: Value = serde_json::from_slice(&std::fs::read(&blob).unwrap()).unwrap();
    v["paths"][1] = json!(format!("custom-prefix/{hash}/indices/{id}/1/"));
    std::fs::write(&blob, serde_json::to_vec(&v).unwrap()).unwrap();

    let repo = open_local(dest.path(), "");
    let got = documents(&repo, VECTORS);
    let mut want = expected(0);
    want.extend(expected(1));
    assert_eq!(got, want);

    // Without the record the moved shard is a missing blob that names the computed path.
    std::fs::remove_file(&blob).unwrap();
    let repo = open_local(dest.path(), "");
    let ix = repo.snapshot(SNAPSHOT).unwrap().index(VECTORS).unwrap();
    let err = ix.open_shard(1).unwrap_err().to_string();
    assert!(err.contains(&format!("{hash}/indices/{id}/1")), "{err}");
}

#[test]
fn elasticsearch_8_metadata_is_read() {
    let dest = tempfile::tempdir().unwrap();
    write_repository(dest.path(), &[es8_spec()], &WriteOptions::default()).unwrap();
    let repo = open_local(dest.path(), "");
    let data = repo.data();
    assert!(data.uuid.is_some() && data.cluster_id.is_some());
    assert_eq!(data.min_version.as_deref(), Some("7.12.0"));
    let entry = data.snapshot(SNAPSHOT).unwrap();
    assert_eq!(entry.index_version, Some(8_512_000));
    assert_eq!(entry.version.as_deref(), Some("8.11.0"));
    assert!(entry.start_time_millis.is_some());

    let snap = repo.snapshot(SNAPSHOT).unwrap();
    let v = snap.version().unwrap();
    // 8_512_000 is the index version 8.15 writes (IndexVersions.csv, see index_version.rs).
    assert_eq!((v.major, v.minor, v.is_os()), (8, 15, false));
    assert!(snap.index_version().unwrap().is_detached());
    assert_eq!(snap.info().data_streams, vec![DATA_STREAM]);
    let global = snap.global_metadata().unwrap();
    let ds = &global.data_streams[DATA_STREAM];
    assert_eq!(ds.indices, vec![BACKING]);
    assert_eq!(ds.write_index(), Some(BACKING));
    assert_eq!(ds.timestamp_field, "@timestamp");
    assert_eq!(global.data_stream_of(BACKING).unwrap().name, DATA_STREAM);
    assert!(global.data_stream_of(VECTORS).is_none());
    assert!(global.index_templates["logs-app"]["data_stream"].is_object());

    let vectors = snap.index(VECTORS).unwrap();
    let md = vectors.metadata();
    assert_eq!(md.index_mode(), IndexMode::Standard);
    assert_eq!(md.source_mode(), SourceMode::Stored);
    assert!(!md.is_system() && !md.is_hidden() && !md.remote_store_enabled());
    assert_eq!(md.raw["a_key_from_the_future"]["nested"][1]["deeper"], true);
    let backing = snap.index(BACKING).unwrap();
    assert!(backing.metadata().is_hidden());
    assert_eq!(backing.metadata().index_mode(), IndexMode::Logsdb);
    assert_eq!(
        backing.metadata().source_mode(),
        SourceMode::Stored,
        "the 8.17 setting wins over the logsdb default"
    );
    assert!(snap.index(SYSTEM).unwrap().metadata().is_system());
}

#[test]
fn source_mode_follows_setting_mapping_and_index_mode() {
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 8_512_000;
    let mut synthetic_mapping = index("m", vec![lucene(&shards[0].0)], json!({}), json!({}));
    synthetic_mapping.mappings[0].mapping["_source"] = json!({"mode": "synthetic"});
    let mut disabled = index("d", vec![lucene(&shards[0].0)], json!({}), json!({}));
    disabled.mappings[0].mapping["_source"] = json!({"enabled": false});
    spec.indices = vec![
        index(
            "tsdb",
            vec![lucene(&shards[0].0)],
            json!({"index.mode": "time_series"}),
            json!({}),
        ),
        index(
            "setting",
            vec![lucene(&shards[0].0)],
            json!({"index.mapping.source.mode": "synthetic"}),
            json!({}),
        ),
        index(
            "odd",
            vec![lucene(&shards[0].0)],
            json!({"index.mode": "columnar"}),
            json!({}),
        ),
        synthetic_mapping,
        disabled,
    ];
    let dest = tempfile::tempdir().unwrap();
    write_repository(dest.path(), &[spec], &WriteOptions::default()).unwrap();
    let snap = open_local(dest.path(), "").snapshot(SNAPSHOT).unwrap();
    let mode = |i: &str| snap.index(i).unwrap().metadata().source_mode();
    assert_eq!(mode("tsdb"), SourceMode::Synthetic);
    assert_eq!(mode("setting"), SourceMode::Synthetic);
    assert_eq!(mode("m"), SourceMode::Synthetic);
    assert_eq!(mode("d"), SourceMode::Disabled);
    assert_eq!(mode("odd"), SourceMode::Stored);
    assert_eq!(
        snap.index("tsdb").unwrap().metadata().index_mode(),
        IndexMode::TimeSeries
    );
    assert_eq!(
        snap.index("odd").unwrap().metadata().index_mode(),
        IndexMode::Other("columnar".into())
    );
}

#[test]
fn remote_store_shallow_copies_are_a_clear_error_naming_the_index() {
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 0x0800_0000 | 2_170_199;
    spec.indices = vec![
        index(
            "remote-logs",
            vec![ShardSource::RemoteStore {
                repository: "segments-repo".into(),
            }],
            json!({"index.remote_store.enabled": "true",
                   "index.remote_store.segment.repository": "segments-repo"}),
            json!({}),
        ),
        index(VECTORS, vec![lucene(&shards[0].0)], json!({}), json!({})),
    ];
    for path_type in [ShardPathType::Fixed, ShardPathType::HashedInfix] {
        let dest = tempfile::tempdir().unwrap();
        let opts = WriteOptions {
            shard_path_type: path_type,
            ..WriteOptions::default()
        };
        write_repository(dest.path(), std::slice::from_ref(&spec), &opts).unwrap();
        let snap = open_local(dest.path(), "").snapshot(SNAPSHOT).unwrap();
        assert_eq!(snap.info().remote_store_index_shallow_copy, Some(true));
        assert!(snap.version().unwrap().is_os());
        let remote = snap.index("remote-logs").unwrap();
        assert!(remote.metadata().remote_store_enabled());
        match remote.open_shard(0) {
            Err(e @ Error::RemoteStoreShard { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("\"remote-logs\"")
                        && msg.contains("shallow copy")
                        && msg.contains("segments-repo"),
                    "{msg}"
                );
            }
            other => panic!("{path_type}: expected a remote-store error, got {other:?}"),
        }
        // The other index of the same snapshot reads normally.
        assert_eq!(
            documents(&open_local(dest.path(), ""), VECTORS),
            expected(0)
        );
    }
}

#[test]
fn unknown_shard_path_type_is_an_error_naming_the_index() {
    let dest = tempfile::tempdir().unwrap();
    write_repository(dest.path(), &[es8_spec()], &WriteOptions::default()).unwrap();
    let path = dest.path().join("index-0");
    let mut data: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    data["indices"][VECTORS]["shard_path_type"] = json!(7);
    std::fs::write(&path, serde_json::to_vec(&data).unwrap()).unwrap();
    let repo = open_local(dest.path(), "");
    let ix = repo.snapshot(SNAPSHOT).unwrap().index(VECTORS).unwrap();
    let err = ix.open_shard(0).unwrap_err().to_string();
    assert!(
        err.contains(VECTORS) && err.contains("shard_path_type 7"),
        "{err}"
    );
    // Other indices are not affected.
    assert_eq!(documents(&repo, SYSTEM), expected(0));
}

/// Every file under `root` into the bucket, keys relative to `root`.
fn upload(s3: &testkit::services::S3rver, bucket: &str, root: &Path) {
    for f in files_under(root) {
        let body = std::fs::read(root.join(&f)).unwrap();
        s3.put_object(bucket, &f, &body);
    }
}

#[test]
fn hashed_prefix_outside_the_base_path_reads_from_s3() {
    let Some(s3) =
        testkit::services::S3rver::start("hashed_prefix_outside_the_base_path_reads_from_s3")
    else {
        return;
    };
    for (record, bucket) in [(true, "with-paths"), (false, "computed-paths")] {
        let dest = tempfile::tempdir().unwrap();
        let opts = WriteOptions {
            shard_path_type: ShardPathType::HashedPrefix,
            record_shard_paths: record,
            base_path: "snapshots/prod".into(),
            ..WriteOptions::default()
        };
        write_repository(dest.path(), &[es8_spec()], &opts).unwrap();
        s3.create_bucket(bucket);
        upload(&s3, bucket, dest.path());
        let store = snapshot::open_blob_store(
            &format!("s3://{bucket}/snapshots/prod"),
            &snapshot::StoreOptions {
                s3_region: Some(s3.region().into()),
                s3_endpoint: Some(s3.endpoint()),
                s3_access_key_id: Some(s3.access_key().into()),
                s3_secret_access_key: Some(s3.secret_key().into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(store.base_path(), "snapshots/prod");
        let repo = Repository::open(store).unwrap();
        assert_documents(&repo, &format!("s3 recorded {record}"));
    }
}
