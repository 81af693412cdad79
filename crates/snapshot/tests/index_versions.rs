//! Elasticsearch 8.11+ writes `IndexVersion` ids, not release ids, into
//! `index.version.created` and a snapshot's `version_id` (`8_512_000` is what 8.15 writes,
//! `9_039_000` a 9.x id): they are read as index versions, compared as ids, and shown
//! with the release line they belong to where it is known — never as "8.11" for every
//! 8.12–8.19 index nor as "9.3.90". The ids and the release each writes are those of
//! `IndexVersions.java` / `IndexVersions.csv` in elastic/elasticsearch (commits cited in
//! `src/index_version.rs`).

use std::sync::Arc;

use serde_json::{json, Map};
use snapshot::write::{
    write_empty_commit, write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions,
};
use snapshot::{IndexVersion, LocalStore, ProductVersion, Repository, TypeMapping};

fn empty_shard(tmp: &std::path::Path, name: &str) -> ShardSource {
    let dir = tmp.join(name);
    write_empty_commit(&dir).unwrap();
    ShardSource::Lucene(Arc::new(lucene::FsDirectory::open(&dir).unwrap()))
}

fn index(tmp: &std::path::Path, name: &str, created: u32) -> IndexSpec {
    let mut settings = Map::new();
    settings.insert("index.version.created".into(), json!(created.to_string()));
    IndexSpec {
        name: name.into(),
        settings,
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping: json!({"properties": {}}),
        }],
        aliases: Map::new(),
        shards: vec![empty_shard(tmp, name)],
        extra: Map::new(),
    }
}

#[test]
fn index_version_ids_are_read_with_their_release_line() {
    let tmp = tempfile::tempdir().unwrap();
    let repo_dir = tmp.path().join("repo");
    let mut spec = SnapshotSpec::new("nightly");
    // Taken by a 9.x cluster: SnapshotInfo's version_id and the repository data's
    // index_version hold its index version.
    spec.version_id = 9_039_000;
    spec.index_version = Some(9_039_000);
    spec.indices = vec![
        index(tmp.path(), "es7", 7_100_299),
        index(tmp.path(), "es810", 8_100_499),
        index(tmp.path(), "es811", 8_500_003),
        index(tmp.path(), "es813", 8_503_000),
        index(tmp.path(), "es815", 8_512_000),
        index(tmp.path(), "es817", 8_521_000),
        index(tmp.path(), "es8late", 8_540_000),
        index(tmp.path(), "es9", 9_039_000),
    ];
    write_repository(&repo_dir, &[spec], &WriteOptions::default()).unwrap();
    let repo = Repository::open(Arc::new(LocalStore::open(&repo_dir).unwrap())).unwrap();
    let snap = repo.snapshot("nightly").unwrap();

    // The snapshot: a 9.2 cluster (the line that writes 9_039_0xx), not "9.3.90".
    let v = snap.version().unwrap();
    assert_eq!((v.major, v.minor, v.patch), (9, 2, 0), "{v}");
    assert_eq!(snap.index_version().unwrap().id(), 9_039_000);

    for (name, release, shown) in [
        ("es7", (7, 10, 2), "7.10.2"),
        ("es810", (8, 10, 4), "8.10.4"),
        ("es811", (8, 11, 0), "8.11 (index version 8500003)"),
        ("es813", (8, 13, 0), "8.13 (index version 8503000)"),
        ("es815", (8, 15, 0), "8.15 (index version 8512000)"),
        ("es817", (8, 17, 0), "8.17 (index version 8521000)"),
        // Past the releases read: the major and the last known line as a floor.
        ("es8late", (8, 19, 0), "8.x (index version 8540000)"),
        ("es9", (9, 2, 0), "9.2 (index version 9039000)"),
    ] {
        let md = snap.index(name).unwrap().metadata().clone();
        let created = md.created_version().unwrap();
        assert_eq!(
            (created.major, created.minor, created.patch),
            release,
            "{name}: {created}"
        );
        assert!(created.is_es(), "{name}");
        assert_eq!(
            md.created_index_version().unwrap().to_string(),
            shown,
            "{name}"
        );
    }

    // Compared as ids: 9_039_000 is on or after EXCLUDE_SOURCE_VECTORS_DEFAULT, every
    // 8.x id before it.
    let es9 = snap
        .index("es9")
        .unwrap()
        .metadata()
        .created_index_version()
        .unwrap();
    assert!(es9.on_or_after(IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT));
    let late8 = snap
        .index("es8late")
        .unwrap()
        .metadata()
        .created_index_version()
        .unwrap();
    assert!(late8.before(IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT));
    assert!(late8.on_or_after(IndexVersion::FIRST_DETACHED));
    assert_eq!(ProductVersion::es(8, 19), late8.release_floor());
}
