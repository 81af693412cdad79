//! The snapshot source as a delta (`since`): its plan, its positions, and exact resumption
//! from any cursor, on the delta histories (indexes written by real Lucene 8, 9 and 10).
//! Applying what it reads to snapshot A's documents must give snapshot B's, as Lucene
//! reads them.

use std::collections::BTreeMap;
use std::path::Path;

use connectors::snapshot::{SnapshotOptions, SnapshotSource};
use coordination::{Cursor, Position, WorkItem};
use engine::{Op, Read, Source};
use serde_json::Value;
use snapshot::append::append_snapshot;
use snapshot::write::{write_repository, IndexSpec, SnapshotSpec, WriteOptions};

type Docs = BTreeMap<String, Value>;

fn golden(history: &Path, commit: &str) -> Docs {
    let text = std::fs::read_to_string(history.join(format!("{commit}.live.jsonl"))).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), v["source"].clone())
        })
        .collect()
}

fn index(name: &str, history: &Path, commit: &str) -> IndexSpec {
    let mut ix = IndexSpec::from_lucene_dir(name, &history.join(commit)).unwrap();
    let soft = history.to_string_lossy().contains("soft");
    ix.settings.insert(
        "index.soft_deletes.enabled".into(),
        Value::String(soft.to_string()),
    );
    ix
}

/// Snapshot `a`: `idx` (A) and `old` (deleted after a); snapshot `b`: `idx` (B) and
/// `fresh` (created after a).
fn repository(history: &Path, other: &Path, dest: &Path) {
    let mut a = SnapshotSpec::new("a");
    a.indices = vec![index("idx", history, "A"), index("old", other, "A")];
    write_repository(dest, &[a], &WriteOptions::default()).unwrap();
    let mut b = SnapshotSpec::new("b");
    b.indices = vec![index("idx", history, "B"), index("fresh", other, "B")];
    append_snapshot(dest, &b, &WriteOptions::default()).unwrap();
}

fn source(dest: &Path) -> SnapshotSource {
    let repo = snapshot::Repository::open(std::sync::Arc::new(
        snapshot::LocalStore::open(dest).unwrap(),
    ))
    .unwrap();
    let (a, b) = (repo.snapshot("a").unwrap(), repo.snapshot("b").unwrap());
    SnapshotSource::new(
        b,
        vec!["fresh".into(), "idx".into()],
        SnapshotOptions::default(),
    )
    .since(a, vec!["idx".into(), "old".into()])
}

fn read(source: &SnapshotSource, item: &WorkItem, after: &Cursor) -> Vec<Read> {
    let mut out = Vec::new();
    source
        .read(item, after, &mut |r| {
            out.push(r);
            true
        })
        .unwrap();
    out
}

fn apply(target: &mut Docs, reads: &[Read]) {
    for r in reads {
        if let Read::Doc(d) = r {
            match d.op {
                Op::Index | Op::Create => {
                    target.insert(d.id.clone(), serde_json::from_slice(&d.source).unwrap());
                }
                Op::Delete => {
                    target.remove(&d.id);
                }
            }
        }
    }
}

#[test]
fn delta_reads_resume_exactly_from_any_cursor() {
    let histories = testkit::fixtures::delta_histories();
    let other = histories
        .iter()
        .find(|(n, _)| n == "l9-hard")
        .unwrap()
        .1
        .clone();
    for (name, history) in &histories {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("repo");
        repository(history, &other, &dest);
        let src = source(&dest);
        let id = src.identity();
        assert_eq!(id.get("since").map(String::as_str), Some("a"));

        let plan = src.plan().unwrap();
        assert_eq!(plan.totals.since.as_deref(), Some("a"));
        assert_eq!(plan.totals.removed, vec!["old".to_string()]);
        let fresh = &plan.totals.groups["fresh"];
        assert!(
            fresh.delta.is_none(),
            "an index created after a is sent whole"
        );
        assert_eq!(fresh.docs, golden(&other, "B").len() as u64);
        let g = &plan.totals.groups["idx"];
        let d = g.delta.as_ref().expect("idx is a delta");
        assert_eq!(g.docs, d.index + d.delete_at_most, "{name}");
        assert!(g.broken.is_empty(), "{name}: {:?}", g.broken);
        let item = plan
            .items
            .iter()
            .find(|i| i.group == "idx")
            .unwrap()
            .clone();
        assert_eq!(item, WorkItem::whole("idx", 0));

        // The whole item from the start: positions increase, A + reads = B.
        let all = read(&src, &item, &None);
        let positions: Vec<u64> = all.iter().map(|r| r.position().doc().unwrap()).collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "{name}: {positions:?}"
        );
        let mut target = golden(history, "A");
        apply(&mut target, &all);
        assert_eq!(target, golden(history, "B"), "{name}");
        let sent = all.iter().filter(|r| matches!(r, Read::Doc(_))).count() as u64;
        assert!(sent <= d.index + d.delete_keys, "{name}");
        let deletes = all
            .iter()
            .filter(|r| matches!(r, Read::Doc(x) if x.op == Op::Delete))
            .count();
        assert!(
            deletes > 0 && deletes as u64 <= d.delete_at_most.max(d.delete_keys),
            "{name}"
        );

        // From every cursor (each position, and just before each), the rest exactly.
        let mut cursors: Vec<u64> = positions.clone();
        cursors.extend(positions.iter().filter_map(|p| p.checked_sub(1)));
        cursors.sort_unstable();
        cursors.dedup();
        for c in cursors {
            let rest = read(&src, &item, &Some(Position::Doc(c)));
            let want: Vec<&Read> = all
                .iter()
                .filter(|r| r.position().doc().unwrap() > c)
                .collect();
            assert_eq!(rest.iter().collect::<Vec<_>>(), want, "{name}: after {c}");
        }

        // Stopping early leaves nothing half-done: emit says stop after 3.
        let mut got = Vec::new();
        src.read(&item, &None, &mut |r| {
            got.push(r);
            got.len() < 3
        })
        .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[..], all[..3]);

        // The index created after a: every live document, as a full read.
        let fresh_item = plan.items.iter().find(|i| i.group == "fresh").unwrap();
        let mut t = Docs::new();
        let reads = read(&src, fresh_item, &None);
        assert!(reads
            .iter()
            .all(|r| matches!(r, Read::Doc(x) if x.op == Op::Index)));
        apply(&mut t, &reads);
        assert_eq!(t, golden(&other, "B"));
    }
}

#[test]
fn a_shard_that_failed_in_the_older_snapshot_is_sent_whole() {
    let histories = testkit::fixtures::delta_histories();
    let history = &histories.iter().find(|(n, _)| n == "l10-soft").unwrap().1;
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("repo");
    let mut a = SnapshotSpec::new("a");
    let mut failed = index("idx", history, "A");
    failed.shards = vec![snapshot::write::ShardSource::Failed {
        reason: "node left".into(),
    }];
    a.indices = vec![failed];
    write_repository(&dest, &[a], &WriteOptions::default()).unwrap();
    let mut b = SnapshotSpec::new("b");
    b.indices = vec![index("idx", history, "B")];
    append_snapshot(&dest, &b, &WriteOptions::default()).unwrap();
    let repo = snapshot::Repository::open(std::sync::Arc::new(
        snapshot::LocalStore::open(&dest).unwrap(),
    ))
    .unwrap();
    let src = SnapshotSource::new(
        repo.snapshot("b").unwrap(),
        vec!["idx".into()],
        SnapshotOptions::default(),
    )
    .since(repo.snapshot("a").unwrap(), vec!["idx".into()]);
    let plan = src.plan().unwrap();
    let g = &plan.totals.groups["idx"];
    assert!(g.broken.is_empty(), "{:?}", g.broken);
    assert_eq!(g.delta.as_ref().unwrap().delete_at_most, 0);
    let reads = read(&src, &plan.items[0], &None);
    assert!(reads
        .iter()
        .all(|r| matches!(r, Read::Doc(x) if x.op == Op::Index)));
    let mut t = Docs::new();
    apply(&mut t, &reads);
    assert_eq!(t, golden(history, "B"));
}
