//! Fixture repositories rewritten by `snapshot::write` with what Elasticsearch-written
//! fixtures lack: `DFL\0` and `ZSTD\0` metadata, multi-part files, a PARTIAL snapshot with
//! a failed shard, and corrupted blobs.

mod common;

use std::path::Path;
use std::sync::Arc;

use snapshot::envelope::EnvelopeCompression;
use snapshot::write::{write_repository, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::{Error, LocalStore, Repository, ShardReader};

fn open(dir: &Path) -> Repository {
    Repository::open(Arc::new(LocalStore::open(dir).unwrap())).unwrap()
}

fn specs(dir: &Path) -> Vec<SnapshotSpec> {
    let repo = open(dir);
    repo.snapshots()
        .iter()
        .map(|s| SnapshotSpec::from_snapshot(&repo.snapshot(&s.name).unwrap()).unwrap())
        .collect()
}

fn rewrite(dir: &Path, opts: &WriteOptions) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    write_repository(out.path(), &specs(dir), opts).unwrap();
    out
}

fn blobs_named(root: &Path, pred: &dyn Fn(&str) -> bool) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if pred(p.file_name().unwrap().to_str().unwrap()) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn compressed_metadata_reads_the_same() {
    for (name, dir, expected) in common::fixture_repositories("rewritten_compressed") {
        for compression in [EnvelopeCompression::Deflate, EnvelopeCompression::Zstd] {
            let out = rewrite(
                &dir,
                &WriteOptions {
                    compression,
                    ..Default::default()
                },
            );
            let prefix: &[u8] = if compression == EnvelopeCompression::Deflate {
                b"DFL\0"
            } else {
                b"ZSTD\0"
            };
            // Really compressed: the payload after the header starts with the marker.
            let snap_blob = blobs_named(out.path(), &|n| n.starts_with("snap-"))[0].clone();
            let bytes = std::fs::read(&snap_blob).unwrap();
            assert!(
                bytes.windows(prefix.len()).take(40).any(|w| w == prefix),
                "{name} {compression:?}"
            );
            eprintln!("checking {name} rewritten with {compression:?}");
            common::check_repository(&open(out.path()), &expected, &[]);
        }
    }
}

#[test]
fn multi_part_files_read_as_one() {
    for (name, dir, expected) in common::fixture_repositories("rewritten_multipart") {
        let out = rewrite(
            &dir,
            &WriteOptions {
                part_size: Some(100),
                inline_metadata_files: false,
                ..Default::default()
            },
        );
        let parts = blobs_named(out.path(), &|n| n.contains(".part"));
        assert!(
            parts
                .iter()
                .any(|p| p.to_str().unwrap().ends_with(".part10")),
            "{name}: files split in many parts"
        );
        eprintln!("checking {name} rewritten with 100-byte parts");
        common::check_repository(&open(out.path()), &expected, &[]);
    }
}

#[test]
fn partial_snapshot_reports_the_failed_shard_and_reads_the_rest() {
    for (name, dir, expected) in common::fixture_repositories("rewritten_partial") {
        let mut specs = specs(&dir);
        let snap_name = specs[0].name.clone();
        let mut names: Vec<String> = specs[0].indices.iter().map(|i| i.name.clone()).collect();
        names.sort();
        let failed = names[0].clone();
        let spec_index = specs[0]
            .indices
            .iter_mut()
            .find(|i| i.name == failed)
            .unwrap();
        spec_index.shards[0] = ShardSource::Failed {
            reason: "node left the cluster".into(),
        };
        let out = tempfile::tempdir().unwrap();
        write_repository(out.path(), &specs, &WriteOptions::default()).unwrap();
        let repo = open(out.path());
        let snap = repo.snapshot(&snap_name).unwrap();
        assert_eq!(
            snap.state(),
            Some(snapshot::SnapshotState::Partial),
            "{name}"
        );
        assert_eq!(
            repo.snapshots()[0].state,
            Some(snapshot::SnapshotState::Partial)
        );
        let index = snap.index(&failed).unwrap();
        assert_eq!(
            index.shard_failure(0).as_deref(),
            Some("node left the cluster")
        );
        assert!(matches!(
            index.shard_snapshot(0),
            Err(Error::FailedShard { shard: 0, .. })
        ));
        common::check_repository(&repo, &expected, &[(failed.as_str(), 0)]);
    }
}

#[test]
fn corrupted_blobs_give_errors_naming_the_blob() {
    let fixtures = common::fixture_repositories("rewritten_corrupt");
    let Some((_, dir, _)) = fixtures.iter().find(|(n, _, _)| n == "ES_7_10_Single") else {
        return;
    };
    let out = rewrite(dir, &WriteOptions::default());
    let repo_dir = out.path();

    // 1. A flipped byte in index metadata: the envelope CRC fails, naming the blob.
    let meta = blobs_named(repo_dir, &|n| n.starts_with("meta-"))
        .into_iter()
        .find(|p| p.to_str().unwrap().contains("/indices/"))
        .unwrap();
    let original = std::fs::read(&meta).unwrap();
    let mut bad = original.clone();
    bad[30] ^= 0x01;
    std::fs::write(&meta, &bad).unwrap();
    let repo = open(repo_dir);
    let snap = repo.snapshot(&repo.snapshots()[0].name).unwrap();
    let errors: Vec<String> = snap
        .index_names()
        .iter()
        .filter_map(|n| snap.index(n).err().map(|e| redact::chain(&e)))
        .collect();
    let rel = meta
        .strip_prefix(repo_dir)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        errors
            .iter()
            .any(|e| e.contains(&rel) && e.contains("checksum")),
        "{errors:?}"
    );
    std::fs::write(&meta, &original).unwrap();

    // 2. A flipped byte inside a data blob: full verification names the blob.
    let data = blobs_named(repo_dir, &|n| n.starts_with("__"))
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let original = std::fs::read(&data).unwrap();
    let mut bad = original.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x20;
    std::fs::write(&data, &bad).unwrap();
    let blob_name = data.file_name().unwrap().to_str().unwrap().to_string();
    let mut seen = false;
    for n in snap.index_names() {
        let index = snap.index(&n).unwrap();
        let shard = index.open_shard(0).unwrap();
        if let Err(e) = ShardReader::open_with(
            &shard,
            &snapshot::ReadOptions {
                verify_all_files_first: true,
                ..Default::default()
            },
        ) {
            let e = redact::chain(&e);
            assert!(e.contains(&blob_name), "{e}");
            seen = true;
        }
    }
    assert!(seen, "the corrupted blob {blob_name} was not detected");

    // 3. A truncated data blob: its length no longer matches the shard metadata.
    std::fs::write(&data, &original[..original.len() - 10]).unwrap();
    let mut seen = false;
    for n in snap.index_names() {
        let index = snap.index(&n).unwrap();
        let shard = index.open_shard(0).unwrap();
        if let Err(e) = ShardReader::open(&shard) {
            let e = redact::chain(&e);
            assert!(e.contains(&blob_name), "{e}");
            seen = true;
        }
    }
    assert!(seen, "the truncated blob {blob_name} was not detected");
}
