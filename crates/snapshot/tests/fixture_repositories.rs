//! Every fixture repository written by real Elasticsearch, read in place from local disk
//! and through S3 (a real s3rver), against its `<repo>.expected.json`.

mod common;

use std::sync::Arc;

use snapshot::{BlobStore, Repository, StoreOptions};

#[test]
fn fixture_repositories_match_expected_documents_and_metadata() {
    for (name, dir, expected) in common::fixture_repositories("fixture_repositories_local") {
        let store: Arc<dyn BlobStore> = Arc::new(snapshot::LocalStore::open(&dir).unwrap());
        let repo = Repository::open(store).unwrap();
        eprintln!("checking {name}");
        common::check_repository(&repo, &expected, &[]);
    }
}

#[test]
fn fixture_repositories_read_through_s3() {
    let fixtures = common::fixture_repositories("fixture_repositories_s3");
    if fixtures.is_empty() {
        return;
    }
    let Some(s3) = testkit::services::S3rver::start("fixture_repositories_s3") else {
        return;
    };
    s3.create_bucket("repos");
    for (name, dir, expected) in fixtures {
        common::upload_dir(&s3, "repos", &format!("base/{name}"), &dir);
        let opts = StoreOptions {
            s3_endpoint: Some(s3.endpoint()),
            s3_region: Some(s3.region().into()),
            s3_access_key_id: Some(s3.access_key().into()),
            s3_secret_access_key: Some(s3.secret_key().into()),
            ..Default::default()
        };
        let store = snapshot::open_blob_store(&format!("s3://repos/base/{name}"), &opts).unwrap();
        let repo = Repository::open(store).unwrap();
        eprintln!("checking s3 {name}");
        common::check_repository(&repo, &expected, &[]);
    }
}

#[test]
fn every_fixture_shard_file_verifies() {
    for (_, dir, _) in common::fixture_repositories("fixture_shard_checksums") {
        let repo = Repository::open(Arc::new(snapshot::LocalStore::open(&dir).unwrap())).unwrap();
        for entry in repo.snapshots() {
            let snap = repo.snapshot(&entry.name).unwrap();
            for name in snap.index_names() {
                let index = snap.index(&name).unwrap();
                for s in 0..index.number_of_shards() {
                    let shard = index.open_shard(s).unwrap();
                    shard.directory().verify_all().unwrap();
                    assert!(index.shard_snapshots(s).unwrap().is_some());
                }
            }
        }
    }
}
