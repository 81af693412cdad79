//! The repository uuid and cluster id of `index-N` (Elasticsearch 7.12+), so far only
//! written by the project's own writer, here in the shape the upstream writer gives them:
//! top-level string fields `uuid` and `cluster_id` beside `min_version` `7.12.0`
//! (`UUIDS_IN_REPO_DATA_VERSION`), read in elastic/elasticsearch
//! `server/src/main/java/org/elasticsearch/repositories/RepositoryData.java`
//! (`snapshotsToXContent` writes `min_version`, then `uuid` and `cluster_id` when UUIDs
//! are in the repository data; `snapshotsFromXContent` reads them; the version read is
//! the one the code search holds, `find_files` lists commit
//! `d74fb9eb4559077e2d20b19a9ed62d9ff825027a`). The repository is the real Elasticsearch
//! 7.10.2 fixture `ES_7_10_Single`, its `index-1` edited as a 7.12 cluster rewrites it; a
//! mounted index relies on that uuid to find the snapshot holding its data.

use std::path::Path;
use std::sync::Arc;

use snapshot::{LocalStore, Repository};

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

#[test]
fn repository_uuid_and_cluster_id_in_the_upstream_shape_are_read() {
    let Some(root) = testkit::fixtures::require_fixtures(
        "repository_uuid_and_cluster_id_in_the_upstream_shape_are_read",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let repo_dir = tmp.path().join("repo");
    copy_dir(&root.join("snapshots/ES_7_10_Single"), &repo_dir);
    let index = repo_dir.join("index-1");
    let text = std::fs::read_to_string(&index).unwrap();

    // As written by 7.10.2: neither field.
    let repo = Repository::open(Arc::new(LocalStore::open(&repo_dir).unwrap())).unwrap();
    assert_eq!(repo.data().uuid, None);
    assert_eq!(repo.data().cluster_id, None);

    let upgraded = text.replacen(
        r#""min_version":"7.9.0""#,
        r#""min_version":"7.12.0","uuid":"dGhlLXJlcG8tdXVpZC0x","cluster_id":"Y2x1c3Rlci11dWlkLTE""#,
        1,
    );
    assert_ne!(upgraded, text, "the fixture's min_version moved");
    std::fs::write(&index, upgraded).unwrap();
    let repo = Repository::open(Arc::new(LocalStore::open(&repo_dir).unwrap())).unwrap();
    let data = repo.data();
    assert_eq!(data.uuid.as_deref(), Some("dGhlLXJlcG8tdXVpZC0x"));
    assert_eq!(data.cluster_id.as_deref(), Some("Y2x1c3Rlci11dWlkLTE"));
    assert_eq!(data.min_version.as_deref(), Some("7.12.0"));
    // everything else as before: the snapshot and its indices
    assert_eq!(data.snapshots.len(), 1);
    let snap = repo.snapshot("global_state_snapshot").unwrap();
    assert!(snap.index_names().iter().any(|n| n == "posts_2023_02_25"));
}
