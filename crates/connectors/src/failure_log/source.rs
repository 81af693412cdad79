//! The failure-log source: what a failure log (`rfs run`, `rfs documents`, `rfs copy`, …)
//! recorded, read back so that `rfs redrive` sends it through the normal pipeline once the
//! cause is fixed. One work item holds the whole log; a record's position is its ordinal
//! among the records.
//!
//! - A document the target refused, with its `_source` (or a delete), is a document again
//!   (`Op::Index` or `Op::Delete`, into the index it was refused by). The same document
//!   refused more than once (a re-sent batch) is read once.
//! - A document the target refused whose `_source` the log does not hold is a skip
//!   [`NO_SOURCE`]: it cannot be sent from the log. The record of such a skip (in the
//!   log of what remains) is that skip again when the log is re-driven once more.
//! - A document the source or the transform could not produce is a skip
//!   [`SKIPPED_BY_SOURCE`]: the log never had it to send.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use coordination::{Cursor, Position, WorkItem};

use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;
use engine::failure_log::{FailureLogError, FailureRecord, Stage};

use super::location::FailureLogAt;
use engine::source::{GroupTotals, Plan, Source, Totals};

pub use engine::failure_log::{NO_SOURCE, SKIPPED_BY_SOURCE};
/// The one group (and work item) of the source.
pub const GROUP: &str = "failure-log";

/// The records of one failure log.
pub struct FailureLogSource {
    /// The file or prefix, for identity and messages (no secret from a URL's query).
    shown: String,
    records: Vec<FailureRecord>,
    duplicates: u64,
}

impl FailureLogSource {
    /// Reads the log: a file, or every part under an object-store prefix (a missing file
    /// or prefix holds no records).
    pub fn open(path: &Path) -> Result<Self, FailureLogError> {
        let mut seen = HashSet::new();
        let mut duplicates = 0;
        let at = FailureLogAt::parse(path);
        let records = at
            .read()?
            .into_iter()
            .filter(|r| {
                let sendable = r.stage == Stage::Target && (r.delete || r.source.is_some());
                let first = !sendable || seen.insert((r.index.clone(), r.id.clone()));
                duplicates += u64::from(!first);
                first
            })
            .collect();
        Ok(FailureLogSource {
            shown: at.shown(),
            records,
            duplicates,
        })
    }

    /// Records read once though the log holds them more than once.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// The read of record `n`.
    fn read_of(&self, n: usize, r: &FailureRecord) -> Read {
        let position = Position::Doc(n as u64);
        let skip = |reason, detail| {
            Read::Skip(Skip {
                position: position.clone(),
                index: Arc::from(r.index.as_str()),
                id: Some(r.id.clone()),
                doc_type: r.doc_type.as_deref().map(Arc::from),
                routing: r.routing.clone(),
                reason,
                detail,
                source: r
                    .source
                    .as_ref()
                    .map(|s| Bytes::copy_from_slice(s.get().as_bytes())),
            })
        };
        match r.stage {
            Stage::Source if r.error_type == NO_SOURCE => skip(NO_SOURCE, r.reason.clone()),
            Stage::Source | Stage::Transform => skip(
                SKIPPED_BY_SOURCE,
                format!(
                    "{} {}: {} (cannot be re-driven from a log)",
                    r.stage.as_str(),
                    r.error_type,
                    r.reason
                ),
            ),
            Stage::Target if !r.delete && r.source.is_none() => skip(
                NO_SOURCE,
                format!(
                    "refused as {}: {}; the log holds no _source to send",
                    r.error_type, r.reason
                ),
            ),
            Stage::Target => Read::Doc(Document {
                position,
                op: if r.delete { Op::Delete } else { Op::Index },
                index: Arc::from(r.index.as_str()),
                id: r.id.clone(),
                doc_type: r.doc_type.as_deref().map(Arc::from),
                routing: r.routing.clone(),
                source: match (&r.source, r.delete) {
                    (Some(s), false) => Bytes::copy_from_slice(s.get().as_bytes()),
                    _ => Bytes::new(),
                },
            }),
        }
    }
}

impl Source for FailureLogSource {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("failure_log".to_string(), self.shown.clone())])
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let mut totals = Totals::default();
        totals.add(
            GROUP,
            GroupTotals {
                parts: 1,
                docs: self.records.len() as u64,
                ..GroupTotals::default()
            },
        );
        totals.items = 1;
        Ok(Plan {
            items: vec![WorkItem::whole(GROUP, 0)],
            totals,
        })
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let from = match after.as_ref().or(item.after.as_ref()) {
            None => 0,
            Some(Position::Doc(n)) => usize::try_from(*n).unwrap_or(usize::MAX).saturating_add(1),
            Some(Position::Key(k)) => {
                return Err(SourceError::item(format!(
                    "{}: position {k:?} is not a record number",
                    self.shown
                )))
            }
        };
        for (n, r) in self.records.iter().enumerate().skip(from) {
            if !emit(self.read_of(n, r)) {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::failure_log::source_value;
    use engine::failure_log::FailureLog;

    fn record(stage: Stage, id: &str, source: Option<&str>, delete: bool) -> FailureRecord {
        FailureRecord {
            time: String::new(),
            stage,
            index: "ix".into(),
            id: id.into(),
            doc_type: None,
            routing: Some("r".into()),
            group: None,
            part: None,
            position: None,
            error_type: "mapper_parsing_exception".into(),
            reason: "bad".into(),
            status: 400,
            attempts: 1,
            delete,
            source: source.map(|s| source_value(s.as_bytes())),
        }
    }

    #[test]
    fn records_become_documents_and_skips_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let log = FailureLog::open(&path).unwrap().with_sources(true);
        log.append(&[
            record(Stage::Target, "a", Some(r#"{"x":1}"#), false),
            record(Stage::Source, "b", None, false),
            record(Stage::Target, "a", Some(r#"{"x":1}"#), false),
            record(Stage::Target, "c", None, true),
            record(Stage::Target, "d", None, false),
            record(Stage::Transform, "e", Some(r#"{"y":2}"#), false),
            FailureRecord {
                error_type: NO_SOURCE.into(),
                ..record(Stage::Source, "f", None, false)
            },
        ])
        .unwrap();
        let s = FailureLogSource::open(&path).unwrap();
        assert_eq!(s.duplicates(), 1);
        let plan = s.plan().unwrap();
        assert_eq!(plan.items.len(), 1);
        assert_eq!(plan.totals.docs, 6);
        let read = |after: Cursor| {
            let mut got = Vec::new();
            s.read(&plan.items[0], &after, &mut |r| {
                got.push(r);
                true
            })
            .unwrap();
            got
        };
        let all = read(None);
        let shown: Vec<String> = all
            .iter()
            .map(|r| match r {
                Read::Doc(d) => {
                    format!("{:?} {} {}", d.op, d.id, String::from_utf8_lossy(&d.source))
                }
                Read::Skip(k) => format!("skip {} {}", k.reason, k.id.as_deref().unwrap_or("")),
            })
            .collect();
        assert_eq!(
            shown,
            [
                r#"Index a {"x":1}"#,
                "skip skipped_by_source b",
                "Delete c ",
                "skip refused_without_source d",
                "skip skipped_by_source e",
                "skip refused_without_source f",
            ]
        );
        match &all[0] {
            Read::Doc(d) => assert_eq!(d.routing.as_deref(), Some("r")),
            Read::Skip(_) => unreachable!("the first record is a document"),
        }
        // Resuming after a position reads the records after it.
        let rest = read(Some(Position::Doc(2)));
        assert_eq!(rest.len(), 3);
        assert_eq!(rest[0].position(), &Position::Doc(3));
        // A missing log holds nothing.
        let none = FailureLogSource::open(&dir.path().join("missing.jsonl")).unwrap();
        assert_eq!(none.plan().unwrap().totals.docs, 0);
    }
}
