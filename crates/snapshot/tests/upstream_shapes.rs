//! Snapshot-format elements so far produced only by the project's own writer, here with
//! bytes in the shape the upstream writer gives them (each test cites the upstream file
//! and the commit read), starting from a real Elasticsearch 7.10.2 fixture repository
//! (`ES_7_10_Single`) copied to a temporary directory with one blob rewritten.

use std::path::Path;
use std::sync::Arc;

use std::io::Write;

use serde_json::{json, Value};
use snapshot::{IndexVersion, LocalStore, Repository};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A copy of the 7.10.2 fixture; `None` when fixtures are absent (skip).
fn fixture_copy(test: &str) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    let root = testkit::fixtures::require_fixtures(test)?;
    let tmp = tempfile::tempdir().unwrap();
    let repo_dir = tmp.path().join("repo");
    copy_dir(&root.join("snapshots/ES_7_10_Single"), &repo_dir);
    Some((tmp, repo_dir))
}

fn open(dir: &Path) -> Result<Repository, snapshot::Error> {
    Repository::open(Arc::new(LocalStore::open(dir).unwrap()))
}

/// Repository data as Elasticsearch 8.9–8.10 writes it: a snapshot's `version` is the
/// numeric `IndexVersion` id (`8_10_00_99`) instead of the `"8.10.0"` string once the
/// version is `V_8_9_0` or later, and `min_version` is a number too when the minimum is
/// `V_8_10_0` or later (read in elastic/elasticsearch
/// `server/src/main/java/org/elasticsearch/repositories/RepositoryData.java`,
/// `snapshotsToXContent` and `parseSnapshots`/`snapshotsFromXContent`, which accept both
/// a string and a number for each, at commit `00eda34f0b61b0ef189b825eca5f011c4a159081`).
/// Before the fix rfs took the number for a release string: `min_version` 8100099 read
/// as major 8100099 and the repository was refused as "newer than this reader knows".
#[test]
fn numeric_version_and_min_version_of_8_10_repository_data_are_read() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("numeric_version_and_min_version_of_8_10_repository_data_are_read")
    else {
        return;
    };
    let index = repo_dir.join("index-1");
    let text = std::fs::read_to_string(&index).unwrap();
    let upgraded = text
        .replacen(r#""min_version":"7.9.0""#, r#""min_version":8100099"#, 1)
        .replacen(r#""version":"7.10.2""#, r#""version":8100099"#, 1);
    assert_eq!(upgraded.matches("8100099").count(), 2, "the fixture moved");
    std::fs::write(&index, upgraded).unwrap();

    let repo = open(&repo_dir).unwrap();
    let data = repo.data();
    assert_eq!(data.min_version.as_deref(), Some("8.10.0"));
    assert_eq!(data.snapshots.len(), 1);
    let entry = &data.snapshots[0];
    assert_eq!(entry.name, "global_state_snapshot");
    assert_eq!(entry.index_version, Some(8_100_099));
    assert_eq!(
        IndexVersion::from_id(8_100_099).and_then(IndexVersion::release),
        Some(product::ProductVersion::es(8, 10))
    );
    // the snapshot and its indices are read as before
    let snap = repo.snapshot("global_state_snapshot").unwrap();
    let mut names = snap.index_names();
    names.sort();
    assert_eq!(names, ["posts_2023_02_25", "posts_2024_01_01"]);
}

/// Lucene's codec magic and its bitwise complement, the footer magic
/// (`CodecUtil.writeHeader`/`writeFooter`, used by `ChecksumBlobStoreFormat.serialize`).
const CODEC_MAGIC: u32 = 0x3fd7_6c17;

/// A metadata blob built by hand as elastic/elasticsearch
/// `server/src/main/java/org/elasticsearch/repositories/blobstore/ChecksumBlobStoreFormat.java`
/// (`serialize`, commit `17f5ad26593855cc20b009f8cd784950e2325667`) writes it: Lucene
/// header (magic, codec name as a vint-prefixed string, version 1), then the SMILE body,
/// through the compressor when the repository compresses — `DFL\0` and a raw (no zlib
/// wrapper) deflate stream, `Deflater(3, nowrap=true)` with sync flush, per
/// `server/src/main/java/org/elasticsearch/common/compress/DeflateCompressor.java`
/// (commit `8c5229dd1c917ba95be0e6053c98e7d34280f399`) — then the footer: the magic's
/// complement, algorithm 0, and the CRC-32 of every byte before the checksum as a long.
fn metadata_blob(codec: &str, smile: &[u8], deflate: bool) -> Vec<u8> {
    if !deflate {
        return envelope_by_hand(codec, smile);
    }
    let mut payload = b"DFL\0".to_vec();
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(3));
    enc.write_all(smile).unwrap();
    enc.flush().unwrap(); // the sync flush DeflaterOutputStream(syncFlush=true) does
    payload.extend_from_slice(&enc.finish().unwrap());
    envelope_by_hand(codec, &payload)
}

/// Lucene header, `payload` as is, Lucene footer with the CRC-32 (see [`metadata_blob`]).
fn envelope_by_hand(codec: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = CODEC_MAGIC.to_be_bytes().to_vec();
    assert!(codec.len() < 0x80);
    out.push(codec.len() as u8);
    out.extend_from_slice(codec.as_bytes());
    out.extend_from_slice(&1u32.to_be_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&(!CODEC_MAGIC).to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&u64::from(crc).to_be_bytes());
    out
}

const META: &str = "meta-7_1RHMshSc6c0cuzX1NCDg.dat";

/// The fixture's global metadata as a JSON value (read through rfs's envelope reader,
/// which the real fixtures already cover).
fn fixture_global_metadata(repo_dir: &Path) -> Value {
    let bytes = std::fs::read(repo_dir.join(META)).unwrap();
    let env = snapshot::envelope::open(META, &bytes, "metadata").unwrap();
    assert_eq!(
        env.compression,
        snapshot::envelope::EnvelopeCompression::None
    );
    snapshot::xcontent::decode_value(META, &env.content).unwrap()
}

/// A `DFL\0`-compressed metadata blob (the repository setting `compress: true`): the
/// fixture's `meta-*.dat`, same content, rewritten compressed in the upstream shape
/// (see [`metadata_blob`]), reads back to the same global metadata.
#[test]
fn deflate_compressed_metadata_blob_in_the_upstream_shape_is_read() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("deflate_compressed_metadata_blob_in_the_upstream_shape_is_read")
    else {
        return;
    };
    let before = open(&repo_dir)
        .unwrap()
        .snapshot("global_state_snapshot")
        .unwrap()
        .global_metadata()
        .unwrap();
    let value = fixture_global_metadata(&repo_dir);
    let blob = metadata_blob("metadata", &snapshot::xcontent::to_smile(&value), true);
    assert_eq!(&blob[17..21], b"DFL\0");
    std::fs::write(repo_dir.join(META), &blob).unwrap();
    let after = open(&repo_dir)
        .unwrap()
        .snapshot("global_state_snapshot")
        .unwrap()
        .global_metadata()
        .unwrap();
    assert_eq!(after.raw, before.raw);
    assert!(!after.raw.is_empty());
    assert_eq!(after.persistent_settings, before.persistent_settings);

    // a flipped byte in the compressed body fails the footer's checksum, by blob name
    let mut bad = blob.clone();
    bad[24] ^= 0x01;
    std::fs::write(repo_dir.join(META), &bad).unwrap();
    let err = open(&repo_dir)
        .unwrap()
        .snapshot("global_state_snapshot")
        .unwrap()
        .global_metadata()
        .unwrap_err();
    assert!(redact::chain(&err).contains(META), "{err}");
}

/// A data stream with a failure store as Elasticsearch 8.15+ writes it in the global
/// metadata: `DataStream.toXContent` in elastic/elasticsearch
/// `server/src/main/java/org/elasticsearch/cluster/metadata/DataStream.java` (commit
/// `6c9947922a9de6c1c952462ce8b3949344f510c5`) writes `name`, `timestamp_field`
/// `{name}`, `indices` (each an `Index`: `index_name`, `index_uuid`), `generation`,
/// `hidden`, `replicated`, `system`, `allow_custom_routing`, then `failure_store`,
/// `failure_indices` (same shape as `indices`, only when not empty) and
/// `failure_rollover_on_write`, and `rollover_on_write`; the streams sit under the
/// `data_stream` custom as `{"data_stream": {name: …}, "data_stream_aliases": {}}`.
/// Written compressed (`DFL\0`), as a repository with `compress: true` holds it.
#[test]
fn data_stream_failure_indices_in_the_upstream_shape_are_read() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("data_stream_failure_indices_in_the_upstream_shape_are_read")
    else {
        return;
    };
    let mut value = fixture_global_metadata(&repo_dir);
    let stream = json!({
        "name": "logs-app-default",
        "timestamp_field": {"name": "@timestamp"},
        "indices": [
            {"index_name": ".ds-logs-app-default-2024.06.01-000001", "index_uuid": "aW5kZXgtdXVpZC0wMDAx"},
            {"index_name": ".ds-logs-app-default-2024.06.02-000003", "index_uuid": "aW5kZXgtdXVpZC0wMDAz"}
        ],
        "generation": 3,
        "hidden": false,
        "replicated": false,
        "system": false,
        "allow_custom_routing": false,
        "failure_store": true,
        "failure_indices": [
            {"index_name": ".fs-logs-app-default-2024.06.01-000002", "index_uuid": "aW5kZXgtdXVpZC0wMDAy"}
        ],
        "failure_rollover_on_write": false,
        "rollover_on_write": false
    });
    value["meta-data"]["data_stream"] = json!({
        "data_stream": {"logs-app-default": stream},
        "data_stream_aliases": {}
    });
    let blob = metadata_blob("metadata", &snapshot::xcontent::to_smile(&value), true);
    std::fs::write(repo_dir.join(META), blob).unwrap();

    let md = open(&repo_dir)
        .unwrap()
        .snapshot("global_state_snapshot")
        .unwrap()
        .global_metadata()
        .unwrap();
    assert_eq!(md.data_streams.len(), 1);
    let ds = &md.data_streams["logs-app-default"];
    assert_eq!(ds.name, "logs-app-default");
    assert_eq!(ds.timestamp_field, "@timestamp");
    assert_eq!(
        ds.indices,
        [
            ".ds-logs-app-default-2024.06.01-000001",
            ".ds-logs-app-default-2024.06.02-000003"
        ]
    );
    assert_eq!(
        ds.failure_indices,
        [".fs-logs-app-default-2024.06.01-000002"]
    );
    assert_eq!(ds.generation, Some(3));
    assert_eq!(
        ds.write_index(),
        Some(".ds-logs-app-default-2024.06.02-000003")
    );
    assert_eq!(
        md.failure_store_of(".fs-logs-app-default-2024.06.01-000002")
            .map(|d| d.name.as_str()),
        Some("logs-app-default")
    );
    assert!(md
        .data_stream_of(".fs-logs-app-default-2024.06.01-000002")
        .is_none());
    assert_eq!(
        md.data_stream_of(".ds-logs-app-default-2024.06.01-000001")
            .map(|d| d.name.as_str()),
        Some("logs-app-default")
    );
}

/// Every document of `index` in the fixture's snapshot, `_id` → source.
fn documents(repo_dir: &Path, index: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let repo = open(repo_dir).unwrap();
    let ix = repo
        .snapshot("global_state_snapshot")
        .unwrap()
        .index(index)
        .unwrap();
    let mut out = std::collections::BTreeMap::new();
    for s in 0..ix.number_of_shards() {
        let shard = ix.open_shard(s).unwrap();
        let reader = snapshot::ShardReader::open(&shard).unwrap();
        for d in reader.documents(0..reader.max_doc()).unwrap() {
            let d = d.unwrap();
            out.insert(d.id.clone(), d.source.to_vec());
        }
    }
    out
}

/// Sets `part_size` on every `FileInfo` (an object with `name`, `physical_name`,
/// `length`) under `v` whose file is longer than `part`; returns (name, length) of each.
fn split_file_infos(v: &mut Value, part: u64, out: &mut Vec<(String, u64)>) {
    match v {
        Value::Object(o) => {
            let len = o.get("length").and_then(Value::as_u64);
            if let (Some(name), Some(true), Some(len)) = (
                o.get("name").and_then(Value::as_str).map(str::to_string),
                o.get("physical_name").map(Value::is_string),
                len,
            ) {
                if len > part {
                    o.insert("part_size".into(), json!(part));
                    out.push((name, len));
                }
                return;
            }
            for x in o.values_mut() {
                split_file_infos(x, part, out);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| split_file_infos(x, part, out)),
        _ => {}
    }
}

/// Files stored in parts: `BlobStoreIndexShardSnapshot.FileInfo` in elastic/elasticsearch
/// `server/src/main/java/org/elasticsearch/index/snapshots/blobstore/BlobStoreIndexShardSnapshot.java`
/// (commit `fbbbe77130f8094bdafd10934d13fc3e18e66012`) writes `part_size` (bytes) beside
/// `name`/`physical_name`/`length`/`checksum` when the repository has `chunk_size`; the
/// file is then `ceil(length / part_size)` blobs `<name>.part0`, `<name>.part1`, …, each
/// `part_size` long but the last (`partName`, `partBytes`). Here shard 0 of
/// `posts_2024_01_01` is rewritten so: its `snap-*.dat` and `index-<uuid>` name a
/// 700-byte part size and the blobs are cut accordingly; every document reads back the
/// same.
#[test]
fn files_stored_in_parts_in_the_upstream_shape_are_read() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("files_stored_in_parts_in_the_upstream_shape_are_read")
    else {
        return;
    };
    let index = "posts_2024_01_01";
    let before = documents(&repo_dir, index);
    assert!(!before.is_empty());

    const PART: u64 = 700;
    let shard_dir = repo_dir.join("indices/TKzEIy9ASTq-FuWhogYPHw/0");
    let mut split = Vec::new();
    for (blob, codec) in [
        ("snap-7_1RHMshSc6c0cuzX1NCDg.dat", "snapshot"),
        ("index-guSEIbPOR8SI_i1M0mOHLQ", "snapshots"),
    ] {
        let bytes = std::fs::read(shard_dir.join(blob)).unwrap();
        let env = snapshot::envelope::open(blob, &bytes, codec).unwrap();
        assert_eq!(env.version, 1);
        let mut v = snapshot::xcontent::decode_value(blob, &env.content).unwrap();
        let mut found = Vec::new();
        split_file_infos(&mut v, PART, &mut found);
        assert!(
            !found.is_empty(),
            "{blob}: no file longer than {PART} bytes"
        );
        split.extend(found);
        let sealed = metadata_blob(codec, &snapshot::xcontent::to_smile(&v), false);
        std::fs::write(shard_dir.join(blob), sealed).unwrap();
    }
    split.sort();
    split.dedup();
    let mut parts_written = 0;
    for (name, len) in &split {
        let data = std::fs::read(shard_dir.join(name)).unwrap();
        assert_eq!(data.len() as u64, *len);
        for (i, chunk) in data.chunks(PART as usize).enumerate() {
            std::fs::write(shard_dir.join(format!("{name}.part{i}")), chunk).unwrap();
            parts_written += 1;
        }
        std::fs::remove_file(shard_dir.join(name)).unwrap();
    }
    assert!(parts_written >= 3, "{split:?}");

    assert_eq!(documents(&repo_dir, index), before);

    // a missing part is an error naming it, not a short file
    let (name, _) = &split[0];
    std::fs::remove_file(shard_dir.join(format!("{name}.part1"))).unwrap();
    let repo = open(&repo_dir).unwrap();
    let ix = repo
        .snapshot("global_state_snapshot")
        .unwrap()
        .index(index)
        .unwrap();
    let err = ix
        .open_shard(0)
        .and_then(|s| {
            let r = snapshot::ShardReader::open(&s)?;
            for d in r.documents(0..r.max_doc())? {
                d?;
            }
            Ok(())
        })
        .expect_err("a part is missing");
    assert!(redact::chain(&err).contains(name.as_str()), "{err}");
}

/// Rewrites the root `snap-*.dat` of the fixture: `edit` gets its `snapshot` object.
fn edit_snapshot_info(repo_dir: &Path, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let blob = "snap-7_1RHMshSc6c0cuzX1NCDg.dat";
    let bytes = std::fs::read(repo_dir.join(blob)).unwrap();
    let env = snapshot::envelope::open(blob, &bytes, "snapshot").unwrap();
    let mut v = snapshot::xcontent::decode_value(blob, &env.content).unwrap();
    edit(v["snapshot"].as_object_mut().unwrap());
    let sealed = metadata_blob("snapshot", &snapshot::xcontent::to_smile(&v), true);
    std::fs::write(repo_dir.join(blob), sealed).unwrap();
}

/// A PARTIAL snapshot as the upstream writer records it: `SnapshotInfo.toXContentInternal`
/// in elastic/elasticsearch `server/src/main/java/org/elasticsearch/snapshots/SnapshotInfo.java`
/// (commit `08ff29be56f380c13794c2c82f488eaea777e0ed`) writes `state` by name
/// (`"PARTIAL"`), `total_shards`, `successful_shards` and a `failures` array of
/// `SnapshotShardFailure.toXContent` objects — `index`, `index_uuid`, `shard_id`,
/// `reason` (null in some old snapshots, which the parser accepts), `node_id` when
/// known, `status` as a `RestStatus` name (`server/src/main/java/org/elasticsearch/
/// snapshots/SnapshotShardFailure.java`, commit `2e58e7a14ed0aa67cb7c36c760f91c9233232c16`).
/// The failed shard is refused by name with its reason; the other index reads whole.
#[test]
fn partial_snapshot_in_the_upstream_shape_refuses_the_failed_shard_by_name() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("partial_snapshot_in_the_upstream_shape_refuses_the_failed_shard_by_name")
    else {
        return;
    };
    let intact = documents(&repo_dir, "posts_2023_02_25");
    assert!(!intact.is_empty());
    for reason in [
        json!("IndexShardSnapshotFailedException[disk full]"),
        Value::Null,
    ] {
        let r = reason.clone();
        edit_snapshot_info(&repo_dir, move |s| {
            assert_eq!(s["total_shards"], json!(2), "the fixture moved");
            s.insert("state".into(), json!("PARTIAL"));
            s.insert("successful_shards".into(), json!(1));
            s.insert(
                "failures".into(),
                json!([{
                    "index": "posts_2024_01_01",
                    "index_uuid": "c2hhcmQtZmFpbGVkLXV1aWQ",
                    "shard_id": 0,
                    "reason": r,
                    "node_id": "bm9kZS0xLWlkLWZvci10ZXN0",
                    "status": "INTERNAL_SERVER_ERROR"
                }]),
            );
        });
        let repo = open(&repo_dir).unwrap();
        let snap = repo.snapshot("global_state_snapshot").unwrap();
        assert_eq!(snap.state(), Some(snapshot::SnapshotState::Partial));
        assert_eq!(snap.info().failures.len(), 1);
        let ix = snap.index("posts_2024_01_01").unwrap();
        match ix.open_shard(0) {
            Err(snapshot::Error::FailedShard {
                snapshot,
                index,
                shard,
                reason: why,
            }) => {
                assert_eq!(snapshot, "global_state_snapshot");
                assert_eq!(index, "posts_2024_01_01");
                assert_eq!(shard, 0);
                match reason.as_str() {
                    Some(text) => assert_eq!(why, text),
                    None => assert_eq!(why, "no reason recorded"),
                }
            }
            Err(other) => panic!("expected FailedShard, got {other}"),
            Ok(_) => panic!("the failed shard was opened"),
        }
        assert_eq!(documents(&repo_dir, "posts_2023_02_25"), intact);
    }
}

/// An OpenSearch remote-store shallow copy: the shard directory holds
/// `shallow-snap-<uuid>.dat` (codec `snapshot`, `SHALLOW_SNAPSHOT_PREFIX`, format
/// `REMOTE_STORE_SHARD_SHALLOW_COPY_SNAPSHOT_FORMAT` in opensearch-project/OpenSearch
/// `server/src/main/java/org/opensearch/repositories/blobstore/BlobStoreRepository.java`,
/// the stored version `find_files` lists at commit
/// `75b27a5a940345d3c8f31c4f70fdfdec3e2979bb`) instead of `snap-<uuid>.dat`; its body is
/// `RemoteStoreShardShallowCopySnapshot.toXContent` (`server/src/main/java/org/opensearch/
/// index/snapshots/blobstore/RemoteStoreShardShallowCopySnapshot.java`, commit
/// `910532dd3a81e5f92614ec81e2e1b0450aea3ed8`): `version` ("1": no path type),
/// `name`, `index_version`, `start_time`, `time`, `number_of_files`, `total_size`,
/// `index_uuid`, `remote_store_repository`, `commit_generation`, `primary_term`,
/// `remote_store_repository_base_path` and `file_names`. The segments are in the remote
/// store, so the shard is refused by name, with the remote repository named, never read
/// as empty.
#[test]
fn remote_store_shallow_copy_in_the_upstream_shape_is_refused_by_name() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("remote_store_shallow_copy_in_the_upstream_shape_is_refused_by_name")
    else {
        return;
    };
    let shard_dir = repo_dir.join("indices/TKzEIy9ASTq-FuWhogYPHw/0");
    std::fs::remove_file(shard_dir.join("snap-7_1RHMshSc6c0cuzX1NCDg.dat")).unwrap();
    let body = json!({
        "version": "1",
        "name": "global_state_snapshot",
        "index_version": 4,
        "start_time": 1_717_200_000_000_i64,
        "time": 120,
        "number_of_files": 5,
        "total_size": 20_480,
        "index_uuid": "cmVtb3RlLWluZGV4LXV1aWQ",
        "remote_store_repository": "remote-segments",
        "commit_generation": 4,
        "primary_term": 1,
        "remote_store_repository_base_path": "segments-base",
        "file_names": ["_0.cfe", "_0.cfs", "_0.si", "segments_4"]
    });
    std::fs::write(
        shard_dir.join("shallow-snap-7_1RHMshSc6c0cuzX1NCDg.dat"),
        metadata_blob("snapshot", &snapshot::xcontent::to_smile(&body), true),
    )
    .unwrap();
    edit_snapshot_info(&repo_dir, |s| {
        s.insert("remote_store_index_shallow_copy".into(), json!(true));
    });

    let repo = open(&repo_dir).unwrap();
    let snap = repo.snapshot("global_state_snapshot").unwrap();
    assert_eq!(snap.info().remote_store_index_shallow_copy, Some(true));
    let ix = snap.index("posts_2024_01_01").unwrap();
    match ix.open_shard(0) {
        Err(snapshot::Error::RemoteStoreShard {
            snapshot,
            index,
            shard,
            remote,
        }) => {
            assert_eq!(snapshot, "global_state_snapshot");
            assert_eq!(index, "posts_2024_01_01");
            assert_eq!(shard, 0);
            assert_eq!(remote.as_deref(), Some("remote-segments"));
        }
        Err(other) => panic!("expected RemoteStoreShard, got {other}"),
        Ok(_) => panic!("a shallow copy was opened"),
    }
    // the index whose shard is a full copy still reads
    assert!(!documents(&repo_dir, "posts_2023_02_25").is_empty());
}

/// An OpenSearch repository with `compression_type: zstd` (2.10+): the body of every
/// metadata blob is `ZSTD\0` then a zstd stream at level 3, as `ZstdCompressor`
/// (`threadLocalOutputStream`) writes it in opensearch-project/OpenSearch
/// `libs/compress/src/main/java/org/opensearch/compress/ZstdCompressor.java` (commit
/// `adb3e0138b3e3d2ec330a0e37c6476d8ab60c855`): a streaming frame, without the content
/// size in its header. The fixture's root `snap-*.dat` and `meta-*.dat` rewritten so read
/// back the same.
#[test]
fn zstd_compressed_metadata_blobs_in_the_upstream_shape_are_read() {
    let Some((_tmp, repo_dir)) =
        fixture_copy("zstd_compressed_metadata_blobs_in_the_upstream_shape_are_read")
    else {
        return;
    };
    let before = {
        let repo = open(&repo_dir).unwrap();
        let snap = repo.snapshot("global_state_snapshot").unwrap();
        (
            snap.global_metadata().unwrap().raw,
            snap.index_names(),
            snap.info().version_id,
        )
    };
    for (blob, codec) in [
        (META, "metadata"),
        ("snap-7_1RHMshSc6c0cuzX1NCDg.dat", "snapshot"),
    ] {
        let bytes = std::fs::read(repo_dir.join(blob)).unwrap();
        let env = snapshot::envelope::open(blob, &bytes, codec).unwrap();
        let mut payload = b"ZSTD\0".to_vec();
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        enc.write_all(&env.content).unwrap();
        payload.extend_from_slice(&enc.finish().unwrap());
        // a streaming frame: Frame_Header_Descriptor without Frame_Content_Size
        assert_eq!(&payload[5..9], &[0x28, 0xb5, 0x2f, 0xfd]);
        assert_eq!(payload[9] & 0xc0, 0, "no content size");
        std::fs::write(repo_dir.join(blob), envelope_by_hand(codec, &payload)).unwrap();
    }
    let repo = open(&repo_dir).unwrap();
    let snap = repo.snapshot("global_state_snapshot").unwrap();
    let after = (
        snap.global_metadata().unwrap().raw,
        snap.index_names(),
        snap.info().version_id,
    );
    assert_eq!(after, before);
    assert_eq!(before.2, Some(7_10_02_99));
}

/// OpenSearch hashed shard paths on a real repository: the fixture's index
/// `posts_2024_01_01` (id `TKzEIy9ASTq-FuWhogYPHw`) marked `shard_path_type: 1`
/// (HASHED_PREFIX) in its `index-1` entry — the spot the opensearch-migrations reader
/// reads it from; OpenSearch's own `RepositoryData` writer of that field was not found in
/// the stored sources (docs/specs/opensearch-shard-paths.md §1) — and its shard directory
/// moved under the hash component (FNV-1a composite, checked against OpenSearch's own test
/// vectors in `shard_paths::tests`). Then, as a cluster with
/// `cluster.snapshot.shard.path.prefix` writes it, moved again under an unrecorded prefix
/// and found only through the `snapshot_shard_paths/<id>#<name>#<shards>#<type>#<hash>`
/// blob, plain JSON in the shape of `SnapshotShardPaths.toXContent` (`indexId`,
/// `indexName`, `number_of_shards`, `shard_path_type`, `shard_path_hash_algorithm`,
/// `paths` relative to the bucket root with a trailing `/`), read in
/// opensearch-project/OpenSearch
/// `server/src/main/java/org/opensearch/snapshots/SnapshotShardPaths.java` at commit
/// `3aa54e593c43b596dabc5f0734e10a0a8f1322d3` (written through `ConfigBlobStoreFormat`,
/// no checksum envelope, per `BlobStoreRepository.java` as stored).
#[test]
fn hashed_shard_paths_on_a_real_repository_are_read() {
    use snapshot::shard_paths::{shard_dir, ShardDirLocation, ShardPathType};
    let Some((_tmp, repo_dir)) = fixture_copy("hashed_shard_paths_on_a_real_repository_are_read")
    else {
        return;
    };
    let index = "posts_2024_01_01";
    let id = "TKzEIy9ASTq-FuWhogYPHw";
    let before = documents(&repo_dir, index);

    let text = std::fs::read_to_string(repo_dir.join("index-1")).unwrap();
    let marked = text.replacen(
        &format!(r#""{index}":{{"id":"{id}","#),
        &format!(r#""{index}":{{"id":"{id}","shard_path_type":1,"#),
        1,
    );
    assert_ne!(marked, text, "the fixture moved");
    std::fs::write(repo_dir.join("index-1"), marked).unwrap();
    let ShardDirLocation::InRepository(hashed) = shard_dir(ShardPathType::HashedPrefix, id, 0, "")
    else {
        panic!("an fs repository has no base path");
    };
    assert!(hashed.ends_with(&format!("/indices/{id}/0")), "{hashed}");
    let fixed = repo_dir.join(format!("indices/{id}/0"));
    std::fs::create_dir_all(repo_dir.join(&hashed).parent().unwrap()).unwrap();
    std::fs::rename(&fixed, repo_dir.join(&hashed)).unwrap();
    assert_eq!(documents(&repo_dir, index), before);

    // An unrecorded node-level prefix: only the recorded path finds the shard.
    let prefixed = format!("snapshot-prefix/{hashed}");
    std::fs::create_dir_all(repo_dir.join(&prefixed).parent().unwrap()).unwrap();
    std::fs::rename(repo_dir.join(&hashed), repo_dir.join(&prefixed)).unwrap();
    assert!(open(&repo_dir)
        .unwrap()
        .snapshot("global_state_snapshot")
        .unwrap()
        .index(index)
        .unwrap()
        .open_shard(0)
        .is_err());
    let paths_dir = repo_dir.join("snapshot_shard_paths");
    std::fs::create_dir_all(&paths_dir).unwrap();
    let body = json!({
        "indexId": id,
        "indexName": index,
        "number_of_shards": 1,
        "shard_path_type": 1,
        "shard_path_hash_algorithm": 1,
        "paths": [format!("{prefixed}/")]
    });
    std::fs::write(
        paths_dir.join(format!("{id}#{index}#1#1#1")),
        serde_json::to_vec(&body).unwrap(),
    )
    .unwrap();
    assert_eq!(documents(&repo_dir, index), before);
    // the other index keeps the fixed layout
    assert!(!documents(&repo_dir, "posts_2023_02_25").is_empty());
}
