//! Snapshots appended to a repository, and the delta of a shard between two of them, on
//! indexes written by real Lucene 8, 9 and 10 through commits A, B and C (the delta
//! histories: soft and hard deletes, forced merges, no `_seq_no`, routing). Expected
//! documents are Lucene's own live documents of each commit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use snapshot::append::append_snapshot;
use snapshot::delta::deletes_among;
use snapshot::write::{write_repository, IndexSpec, SnapshotSpec, WriteOptions};
use snapshot::{DeleteKeys, Repository, ShardDelta, ShardReader};

/// id → (routing, source)
type Docs = BTreeMap<String, (Option<String>, Value)>;

fn golden(history: &Path, commit: &str) -> Docs {
    let text = std::fs::read_to_string(history.join(format!("{commit}.live.jsonl"))).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                (
                    v["routing"].as_str().map(str::to_string),
                    v["source"].clone(),
                ),
            )
        })
        .collect()
}

fn spec(snapshot: &str, history: &Path, commit: &str, soft: bool) -> SnapshotSpec {
    let mut ix = IndexSpec::from_lucene_dir("idx", &history.join(commit)).unwrap();
    ix.settings.insert(
        "index.soft_deletes.enabled".into(),
        Value::String(soft.to_string()),
    );
    let mut s = SnapshotSpec::new(snapshot);
    s.indices.push(ix);
    s
}

/// A repository holding snapshots `a`, `b`, `c` of the history (b and c appended).
fn repository(history: &Path, name: &str, dest: &Path) {
    let soft = name.contains("soft");
    write_repository(
        dest,
        &[spec("a", history, "A", soft)],
        &WriteOptions::default(),
    )
    .unwrap();
    for (snap, commit) in [("b", "B"), ("c", "C")] {
        append_snapshot(
            dest,
            &spec(snap, history, commit, soft),
            &WriteOptions::default(),
        )
        .unwrap();
    }
}

fn open(repo: &Repository, snap: &str) -> ShardReader {
    let s = repo.snapshot(snap).unwrap();
    ShardReader::open(&s.index("idx").unwrap().open_shard(0).unwrap()).unwrap()
}

fn read_all(r: &ShardReader) -> Docs {
    r.documents(0..r.max_doc())
        .unwrap()
        .map(|d| {
            let d = d.unwrap();
            let v: Value = serde_json::from_slice(&d.source).unwrap();
            (d.id, (d.routing, v))
        })
        .collect()
}

fn open_repo(dir: &Path) -> Repository {
    Repository::open(Arc::new(snapshot::LocalStore::open(dir).unwrap())).unwrap()
}

#[test]
fn appended_snapshots_share_unchanged_files_and_read_as_lucene_does() {
    for (name, history) in testkit::fixtures::delta_histories() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("repo");
        repository(&history, &name, &dest);
        let repo = open_repo(&dest);
        let names: Vec<&str> = repo.snapshots().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"], "{name}");
        for (snap, commit) in [("a", "A"), ("b", "B"), ("c", "C")] {
            assert_eq!(
                read_all(&open(&repo, snap)),
                golden(&history, commit),
                "{name} {snap}"
            );
        }
        // Only the latest generations remain, as Elasticsearch 7 leaves them.
        assert_eq!(
            std::fs::read(dest.join("index.latest")).unwrap(),
            2i64.to_be_bytes()
        );
        let roots: Vec<String> = std::fs::read_dir(&dest)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("index-"))
            .collect();
        assert_eq!(roots, ["index-2"], "{name}");
        let index = repo.snapshot("c").unwrap().index("idx").unwrap();
        let shard_dir = dest.join(index.shard_dir(0));
        let blobs: Vec<String> = std::fs::read_dir(&shard_dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            blobs.iter().filter(|b| b.starts_with("index-")).count(),
            1,
            "{name}: {blobs:?}"
        );
        let history_blob = index.shard_snapshots(0).unwrap().unwrap();
        assert_eq!(history_blob.snapshots.len(), 3, "{name}");
        // One data blob per distinct (file, checksum) across the three commits.
        let mut distinct = BTreeSet::new();
        for commit in ["A", "B", "C"] {
            for e in std::fs::read_dir(history.join(commit)).unwrap().flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with("segments_") || n.ends_with(".si") {
                    continue; // inline (v__) entries
                }
                distinct.insert((n, std::fs::read(e.path()).unwrap()));
            }
        }
        let data_blobs = blobs.iter().filter(|b| b.starts_with("__")).count();
        assert_eq!(data_blobs, distinct.len(), "{name}");
        // B re-used A's unchanged files (every history keeps some segment of A).
        let files_a = history_blob.snapshots["a"]
            .files
            .iter()
            .collect::<BTreeSet<_>>();
        let shared = history_blob.snapshots["b"]
            .files
            .iter()
            .filter(|f| files_a.contains(f) && f.starts_with("__"))
            .count();
        if !name.contains("merge") {
            assert!(shared > 0, "{name}: B shares no blob with A");
        }
    }
}

/// Applies the delta old→new to `target` and checks what was sent.
fn apply(
    name: &str,
    old: &ShardReader,
    new: &ShardReader,
    target: &mut Docs,
    before: &Docs,
    after: &Docs,
) -> ShardDelta {
    let delta = ShardDelta::compute(old, new).unwrap();
    let mut indexed = BTreeSet::new();
    for d in new.selected_documents(&delta.index) {
        let d = d.unwrap();
        assert!(
            indexed.insert(d.id.clone()),
            "{name}: {} indexed twice",
            d.id
        );
        target.insert(
            d.id,
            (d.routing, serde_json::from_slice(&d.source).unwrap()),
        );
    }
    let keys = delta.index_keys(new).unwrap();
    assert_eq!(keys.len(), indexed.len(), "{name}");
    let deletes = delta.deletes(old, new, &keys).unwrap();
    if let DeleteKeys::History(ops) = &delta.deletes {
        // One walk over the documents to index and the operations gives the same
        // documents and the same deletes; tombstones are keys, not skipped documents.
        let walk = delta.index.union(ops);
        let mut docs = new.documents_and_keys(&walk, &delta.index);
        let walked: BTreeSet<String> = docs.by_ref().map(|d| d.unwrap().id).collect();
        assert_eq!(walked, indexed, "{name}: documents of the single walk");
        assert!(docs.take_skipped().is_empty(), "{name}");
        assert_eq!(docs.stats().without_source, 0, "{name}");
        let op_keys = docs.take_keys();
        assert!(op_keys.len() as u64 <= delta.stats.delete_keys, "{name}");
        assert!(delta.stats.gone == 0 || !op_keys.is_empty(), "{name}");
        assert_eq!(
            deletes_among(op_keys, &keys),
            deletes,
            "{name}: deletes of the single walk"
        );
    }
    let mut deleted = BTreeSet::new();
    for k in &deletes {
        assert!(
            !after.contains_key(&k.id),
            "{name}: {} is live in the newer snapshot but deleted",
            k.id
        );
        if let Some((routing, _)) = before.get(&k.id) {
            assert_eq!(&k.routing, routing, "{name}: routing of deleted {}", k.id);
        }
        assert!(
            deleted.insert(k.id.clone()),
            "{name}: {} deleted twice",
            k.id
        );
        target.remove(&k.id);
    }
    // Exactly what changed is indexed (unless merged segments could not be matched).
    let changed: BTreeSet<String> = after
        .iter()
        .filter(|(id, v)| before.get(*id) != Some(*v))
        .map(|(id, _)| id.clone())
        .collect();
    if delta.stats.unproven == 0 {
        assert_eq!(indexed, changed, "{name}: indexed documents");
    } else {
        assert!(indexed.is_superset(&changed), "{name}");
        assert!(
            indexed.len() as u64 - changed.len() as u64 <= delta.stats.unproven,
            "{name}"
        );
    }
    // Every document gone is deleted; from the history, possibly also ids that came and
    // went between the snapshots (never on the target).
    let gone: BTreeSet<String> = before
        .keys()
        .filter(|id| !after.contains_key(*id))
        .cloned()
        .collect();
    if delta.stats.keys_from_history {
        assert!(
            deleted.is_superset(&gone),
            "{name}: {:?} not deleted",
            gone.difference(&deleted).collect::<Vec<_>>()
        );
        assert!(
            deleted.difference(&gone).all(|id| !before.contains_key(id)),
            "{name}"
        );
    } else {
        assert_eq!(deleted, gone, "{name}: deleted documents");
    }
    delta
}

#[test]
fn full_a_plus_deltas_equals_each_snapshot_for_every_history() {
    let mut from_history = 0;
    for (name, history) in testkit::fixtures::delta_histories() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("repo");
        repository(&history, &name, &dest);
        let repo = open_repo(&dest);
        let (a, b, c) = (open(&repo, "a"), open(&repo, "b"), open(&repo, "c"));
        let (ga, gb, gc) = (
            golden(&history, "A"),
            golden(&history, "B"),
            golden(&history, "C"),
        );
        let mut target = read_all(&a);
        assert_eq!(target, ga, "{name}: full A");
        let ab = apply(&format!("{name} A→B"), &a, &b, &mut target, &ga, &gb);
        assert_eq!(target, gb, "{name}: A + delta A→B");
        let bc = apply(&format!("{name} B→C"), &b, &c, &mut target, &gb, &gc);
        assert_eq!(target, gc, "{name}: A + A→B + B→C");

        let s = &ab.stats;
        eprintln!("{name}: A→B {s:?}");
        let merged = name.contains("merge");
        if !merged {
            assert_eq!(s.vanished_segments, 0, "{name}");
            assert!(s.shared_segments >= 4 && s.unchanged > 150, "{name}: {s:?}");
        } else if name.contains("noseq") {
            assert!(
                s.unproven > 150,
                "{name}: a merged segment without _seq_no is sent again: {s:?}"
            );
        } else {
            assert!(
                s.matched > 150 && s.unproven == 0,
                "{name}: merged documents matched by _seq_no: {s:?}"
            );
        }
        // Operations are read from B's history when soft deletes keep them.
        let history_possible =
            name.contains("soft") && !name.contains("noretain") && !name.contains("routing");
        assert_eq!(s.keys_from_history, history_possible, "{name}: {s:?}");
        if s.keys_from_history {
            from_history += 1;
            // Reading the history costs the operations, not the index.
            assert!(s.delete_keys < 80, "{name}: {s:?}");
        } else {
            assert!(s.history_refused.is_some(), "{name}");
        }
        let _ = bc;
    }
    assert!(from_history >= 6);
}
