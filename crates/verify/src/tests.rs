//! The per-source-index account: the snapshot's live count must equal the documents read
//! plus the nested children the source counted, and the target must hold what is left.

use super::*;

use bytes::Bytes;
use coordination::{Cursor, Position, WorkItem};

use engine::document::{Document, Op, Skip};
use engine::error::SourceError;
use engine::source::{GroupTotals, Plan, Totals};
use programs::routes::Rename;

/// One shard of index `logs` whose plan says `planned` live documents: it gives `docs`
/// documents, one skip, and passes over `nested` nested children.
struct Shard {
    planned: u64,
    docs: u64,
    nested: u64,
}

impl Source for Shard {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Result<Plan, SourceError> {
        let mut totals = Totals::default();
        totals.add(
            "logs",
            GroupTotals {
                parts: 1,
                docs: self.planned,
                ..GroupTotals::default()
            },
        );
        Ok(Plan {
            items: vec![WorkItem::whole("logs", 0)],
            totals,
        })
    }
    fn exact_totals(&self) -> bool {
        true
    }
    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        self.read_counting_nested(item, after, emit, &mut 0)
    }
    fn read_counting_nested(
        &self,
        _item: &WorkItem,
        _after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
        nested: &mut u64,
    ) -> Result<(), SourceError> {
        for i in 0..self.docs {
            emit(Read::Doc(Document {
                position: Position::Doc(i),
                op: Op::Index,
                index: "logs".into(),
                id: format!("d{i}"),
                doc_type: None,
                routing: None,
                source: Bytes::from_static(b"{}"),
            }));
        }
        emit(Read::Skip(Skip {
            position: Position::Doc(self.docs),
            index: "logs".into(),
            id: Some("bad".into()),
            doc_type: None,
            routing: None,
            reason: "bad_source",
            detail: "not JSON".into(),
            source: None,
        }));
        *nested += self.nested;
        Ok(())
    }
}

/// What `read_expected` reports for `shard`, with the target holding `target_count`.
fn account(shard: Shard, target_count: u64) -> VerifyReport {
    let (tx, mut rx) = mpsc::channel(1000);
    let refused = HashSet::from([("logs".to_string(), "d0".to_string())]);
    read_expected(
        &shard,
        &Rename::default(),
        Sample::PerIndex(0),
        false,
        &refused,
        &tx,
    )
    .unwrap();
    drop(tx);
    let mut skipped = None;
    while let Ok(msg) = rx.try_recv() {
        if let Ok(Msg::Counts(_, s, _, _)) = msg {
            skipped = Some(s);
        }
    }
    let indices = vec![IndexVerdict {
        index: "logs".into(),
        target_count: Some(target_count),
        ..IndexVerdict::default()
    }];
    VerifyReport {
        sources: source_verdicts(skipped.unwrap().per_source, &indices),
        ..VerifyReport::default()
    }
}

#[test]
fn read_plus_counted_nested_children_equal_the_snapshot_live_count() {
    // 10 documents + 1 skip read, 4 nested children: 15 live; 1 refused, 1 skipped
    let r = account(
        Shard {
            planned: 15,
            docs: 10,
            nested: 4,
        },
        9,
    );
    let s = &r.sources[0];
    assert_eq!(
        (
            s.snapshot_live,
            s.nested,
            s.read,
            s.skipped,
            s.filtered,
            s.refused
        ),
        (15, 4, 11, 1, 0, 1)
    );
    assert_eq!(s.expected_on_target, 9);
    assert_eq!(s.target.as_deref(), Some("logs"));
    assert!(s.ok() && r.ok(), "{}", r.to_table());
}

#[test]
fn read_plus_nested_other_than_the_snapshot_live_count_fails_naming_the_index() {
    // one live document neither read nor a nested child
    let r = account(
        Shard {
            planned: 16,
            docs: 10,
            nested: 4,
        },
        10,
    );
    assert!(!r.sources[0].accounted());
    assert!(!r.ok());
    let table = r.to_table();
    assert!(
        table.contains(
            "MISMATCH logs: the snapshot holds 16 live documents, but 11 were read and 4 are nested children"
        ),
        "{table}"
    );
}

#[test]
fn a_target_holding_other_than_what_must_be_there_fails_naming_the_index() {
    let r = account(
        Shard {
            planned: 15,
            docs: 10,
            nested: 4,
        },
        8,
    );
    let s = &r.sources[0];
    assert!(s.accounted() && !s.target_matches() && !r.ok());
    let table = r.to_table();
    assert!(
        table.contains("MISMATCH logs: target logs holds 8, but 9 must be there"),
        "{table}"
    );
}

#[test]
fn a_target_shared_by_two_source_indices_is_left_to_the_per_target_check() {
    let tally = |target: &str| SourceTally {
        planned: 3,
        read: 3,
        outputs: 3,
        targets: [Arc::from(target)].into_iter().collect(),
        ..SourceTally::default()
    };
    let tallies = BTreeMap::from([
        ("a".to_string(), tally("all")),
        ("b".to_string(), tally("all")),
        ("c".to_string(), tally("c")),
    ]);
    let indices = vec![
        IndexVerdict {
            index: "all".into(),
            target_count: Some(6),
            ..IndexVerdict::default()
        },
        IndexVerdict {
            index: "c".into(),
            target_count: Some(3),
            ..IndexVerdict::default()
        },
    ];
    let v = source_verdicts(tallies, &indices);
    assert_eq!(v[0].target, None);
    assert_eq!(v[1].target, None);
    assert_eq!(v[2].target.as_deref(), Some("c"));
    assert_eq!(v[2].target_count, Some(3));
    assert!(v.iter().all(SourceVerdict::ok));
}

/// `shard` read as a source whose plan's counts are estimates (JSON lines, a live
/// cluster, a table): no per-source account, and nothing held against the estimate.
struct Estimated(Shard);

impl Source for Estimated {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Result<Plan, SourceError> {
        self.0.plan()
    }
    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        self.0.read(item, after, emit)
    }
}

#[test]
fn estimated_totals_are_not_held_against_what_was_read_and_the_report_says_so() {
    let (tx, mut rx) = mpsc::channel(1000);
    // The estimate (5) is below what is read (10 documents and a skip).
    let shard = Estimated(Shard {
        planned: 5,
        docs: 10,
        nested: 0,
    });
    read_expected(
        &shard,
        &Rename::default(),
        Sample::PerIndex(0),
        false,
        &HashSet::new(),
        &tx,
    )
    .unwrap();
    drop(tx);
    let mut found = None;
    while let Ok(msg) = rx.try_recv() {
        if let Ok(Msg::Counts(counts, s, _, _)) = msg {
            found = Some((counts, s));
        }
    }
    let (counts, skipped) = found.unwrap();
    assert!(!skipped.exact);
    assert!(skipped.per_source.is_empty());
    assert_eq!(counts.get("logs").copied(), Some(10));
    let mut r = VerifyReport {
        indices: vec![IndexVerdict {
            index: "logs".into(),
            expected: 10,
            target_count: Some(10),
            ..IndexVerdict::default()
        }],
        live: skipped.live,
        snapshot_live: skipped.planned,
        exact_totals: skipped.exact,
        ..VerifyReport::default()
    };
    assert_eq!((r.live, r.snapshot_live), (11, 5));
    let table = r.to_table();
    assert!(r.ok(), "{table}");
    assert!(table.contains("no exact live count"), "{table}");
    assert!(!table.contains("the snapshot's shards hold"), "{table}");
    // Had the totals been exact, reading more than they say is a mismatch.
    r.exact_totals = true;
    assert!(!r.ok());
    assert!(r
        .to_table()
        .contains("more documents read than the snapshot holds"));
    // A target count off is a mismatch either way.
    r.exact_totals = false;
    r.indices[0].target_count = Some(9);
    assert!(!r.ok());
}
