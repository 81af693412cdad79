//! Repositories in the Elasticsearch 1.x and 2.x layouts, written by the project's writer
//! around indexes written by real Lucene 4.10.4 (crates/lucene/tests/data/lucene4, as
//! Elasticsearch 1.7 stores documents: `_uid` = `type#id`, `_source` LZF-compressed for a
//! third of them, `_parent` with its `_routing`, `_timestamp`, `_ttl`), read back document
//! by document against what Lucene and compress-lzf read (the fixtures' `sources.jsonl`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::write::{IndexSpec, ShardSource, SnapshotSpec};
use snapshot::write_legacy::{write_legacy_repository, LegacyLayout};
use snapshot::{BlobStore, LocalStore, Repository, ShardReader, TypeMapping};

fn lucene4(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lucene/tests/data/lucene4")
        .join(name)
}

/// (type, id) → (routing, source) of every live document with a `_source`, as Lucene 4.10
/// read it and compress-lzf decompressed it.
type Docs = BTreeMap<(String, String), (Option<String>, Value)>;

fn expected(name: &str) -> Docs {
    std::fs::read_to_string(lucene4(&format!("{name}.sources.jsonl")))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let source: Value = serde_json::from_str(v["source"].as_str().unwrap()).unwrap();
            (
                (
                    v["type"].as_str().unwrap().to_string(),
                    v["id"].as_str().unwrap().to_string(),
                ),
                (v["routing"].as_str().map(str::to_string), source),
            )
        })
        .collect()
}

fn spec() -> SnapshotSpec {
    let index = |name: &str, dir: &str| IndexSpec {
        name: name.into(),
        settings: Map::new(),
        mappings: vec![
            TypeMapping {
                doc_type: "tweet".into(),
                mapping: json!({"properties": {"text": {"type": "string"}}}),
            },
            TypeMapping {
                doc_type: "user".into(),
                mapping: json!({"_parent": {"type": "user"}, "_timestamp": {"enabled": true},
                                "properties": {"text": {"type": "string", "index": "not_analyzed"}}}),
            },
        ],
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(lucene4(dir)).unwrap(),
        ))],
        extra: Map::new(),
    };
    let mut spec = SnapshotSpec::new("snap-1");
    spec.indices = vec![index("tweets_cfs", "l4-cfs"), index("tweets", "l4-nocfs")];
    spec
}

fn documents(repo: &Repository, index: &str) -> Docs {
    let ix = repo.snapshot("snap-1").unwrap().index(index).unwrap();
    let mut out = Docs::new();
    for s in 0..ix.number_of_shards() {
        let shard = ix.open_shard(s).unwrap();
        shard.directory().verify_all().unwrap();
        let reader = ShardReader::open(&shard).unwrap();
        for d in reader.documents(0..reader.max_doc()).unwrap() {
            let d = d.unwrap();
            let source: Value = serde_json::from_slice(&d.source).unwrap();
            let key = (d.doc_type.clone().expect("a type from _uid"), d.id.clone());
            assert!(
                out.insert(key, (d.routing.clone(), source)).is_none(),
                "{}",
                d.id
            );
        }
    }
    out
}

fn check(layout: LegacyLayout, blobs: &[&str], major: u32) {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("repo");
    write_legacy_repository(&dest, &[spec()], layout).unwrap();
    for b in blobs {
        assert!(dest.join(b).is_file(), "{layout:?}: {b} missing");
    }
    let store: Arc<dyn BlobStore> = Arc::new(LocalStore::open(&dest).unwrap());
    let repo = Repository::open(store).unwrap();
    let snap = repo.snapshot("snap-1").unwrap();
    assert_eq!(snap.version().map(|v| v.major), Some(major), "{layout:?}");
    let ix = snap.index("tweets").unwrap();
    let types: Vec<_> = ix
        .metadata()
        .mappings
        .iter()
        .map(|m| m.doc_type.as_str())
        .collect();
    assert_eq!(types, ["tweet", "user"], "{layout:?}");
    for (index, fixture) in [("tweets_cfs", "l4-cfs"), ("tweets", "l4-nocfs")] {
        let got = documents(&repo, index);
        let want = expected(fixture);
        assert_eq!(got.len(), want.len(), "{layout:?} {index}");
        for (k, v) in &want {
            assert_eq!(got.get(k), Some(v), "{layout:?} {index} {k:?}");
        }
        // Both mapping types, routed documents and LZF-compressed sources are among them.
        assert!(want.keys().any(|(t, _)| t == "tweet") && want.keys().any(|(t, _)| t == "user"));
        assert!(want.values().any(|(r, _)| r.is_some()));
    }
}

#[test]
fn es1_layout_round_trips_lucene4_shards() {
    check(
        LegacyLayout::Es1,
        &[
            "index",
            "snapshot-snap-1",
            "metadata-snap-1",
            "indices/tweets/snapshot-snap-1",
            "indices/tweets/0/snapshot-snap-1",
            "indices/tweets/0/__0",
        ],
        1,
    );
}

#[test]
fn es2_layout_round_trips_lucene4_shards() {
    check(
        LegacyLayout::Es2,
        &[
            "index",
            "snap-snap-1.dat",
            "meta-snap-1.dat",
            "indices/tweets/meta-snap-1.dat",
            "indices/tweets/0/snap-snap-1.dat",
            "indices/tweets/0/index-0",
            "indices/tweets/0/__0",
        ],
        2,
    );
}
