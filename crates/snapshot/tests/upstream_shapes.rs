//! Snapshot-format elements so far produced only by the project's own writer, here with
//! bytes in the shape the upstream writer gives them (each test cites the upstream file
//! and the commit read), starting from a real Elasticsearch 7.10.2 fixture repository
//! (`ES_7_10_Single`) copied to a temporary directory with one blob rewritten.

use std::path::Path;
use std::sync::Arc;

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
