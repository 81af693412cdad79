//! The one record shape every backend stores: work items, phases, the control record and
//! the keeper lease are all `Record`s that differ by `kind`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::position::{Cursor, Position};
use crate::Error;

/// What a record is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A range of one partition (a shard, a key slot) to migrate.
    Item,
    /// A once-per-migration step ("snapshot", "metadata", …) that one worker does.
    Phase,
    /// RUN / PAUSE / STOP, read by every worker between batches.
    Control,
    /// The keeper lease and its latest summary; `Done` once the migration is finished.
    Keeper,
    /// What the store is for: the migration's identity, written once by its first worker.
    Migration,
}

impl RecordKind {
    /// Every kind (for backends that keep one set per kind).
    pub const ALL: [RecordKind; 5] = [
        RecordKind::Item,
        RecordKind::Phase,
        RecordKind::Control,
        RecordKind::Keeper,
        RecordKind::Migration,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Item => "item",
            RecordKind::Phase => "phase",
            RecordKind::Control => "control",
            RecordKind::Keeper => "keeper",
            RecordKind::Migration => "migration",
        }
    }
}

/// Life-cycle state of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordState {
    /// Not finished: never leased, leased, or with an expired/released lease.
    Open,
    /// Finished (for an item: every document of its range acknowledged or handed on).
    Done,
    /// Gave up after the maximum number of attempts; `last_error` says why.
    Failed,
}

impl RecordState {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Open => "open",
            RecordState::Done => "done",
            RecordState::Failed => "failed",
        }
    }
}

/// The revision a record was read at, for compare-and-set: a row version (SQL, Redis) or
/// `(seq_no, primary_term)` (cluster index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Revision {
    pub seq: i64,
    pub term: i64,
}

impl Revision {
    pub fn row(v: i64) -> Self {
        Revision { seq: v, term: 0 }
    }
}

/// A stored record. Work-item fields are zero/empty on other kinds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub kind: RecordKind,
    pub state: RecordState,
    /// Worker holding the lease, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Lease end in store milliseconds since the epoch; 0 when never leased or released.
    #[serde(default)]
    pub expiry: i64,
    /// Exponent for the next lease: lease = initial × 2^exponent.
    #[serde(default)]
    pub exponent: u32,
    /// Number of acquisitions so far.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub creator: String,
    /// The partition group: a source index, a table.
    #[serde(default)]
    pub group: String,
    /// The partition's number in its group: a shard, a slot.
    #[serde(default)]
    pub part: u32,
    /// The item covers positions strictly after this one (`None`: from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Cursor,
    /// ... and strictly before this one (`None`: to the end of the partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Position>,
    /// The source's own description of the partition, written when the plan is made (see
    /// [`WorkItem::extent`]); successors inherit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extent: Option<serde_json::Value>,
    /// The last acknowledged position (checkpointed); starts at `after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Cursor,
    /// Documents the sink acknowledged, up to the cursor.
    #[serde(default)]
    pub docs_done: u64,
    #[serde(default)]
    pub bytes_done: u64,
    /// Documents the target refused for good (each in a failure log), up to the cursor.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub docs_refused: u64,
    /// Documents the source or the transform could not deliver (each in a failure log).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub docs_skipped: u64,
    /// Refused and skipped documents by reason (`refused:<type>`, `skipped:<reason>`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
    /// What the item's source handed over up to the cursor (documents and skips), plus
    /// the further outputs of inputs a transform exploded into several documents: what
    /// delivered + refused + skipped + filtered add up to. `None` on items written by an
    /// rfs that did not keep it (their counts are taken as they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered: Option<u64>,
    /// Documents sent beyond the cursor whose fate the store does not know, recorded
    /// before they are sent when the target stores a resent document twice (no `_id`).
    /// The next holder sends them again from the cursor and counts them under
    /// [`POSSIBLE_DUPLICATES`]. Zero for targets that overwrite.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sent_ahead: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub successors: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// Free-form payload: the control value, a phase result, the keeper summary.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

impl Record {
    /// A new, open, never-leased record.
    pub fn new(id: impl Into<String>, kind: RecordKind, creator: &str) -> Self {
        Record {
            id: id.into(),
            kind,
            state: RecordState::Open,
            holder: None,
            expiry: 0,
            exponent: 0,
            attempts: 0,
            creator: creator.to_string(),
            group: String::new(),
            part: 0,
            after: None,
            until: None,
            extent: None,
            cursor: None,
            docs_done: 0,
            bytes_done: 0,
            docs_refused: 0,
            docs_skipped: 0,
            reasons: BTreeMap::new(),
            covered: None,
            sent_ahead: 0,
            successors: Vec::new(),
            last_error: None,
            completed_at: None,
            data: serde_json::Value::Null,
        }
    }

    /// A new work item for `item`, never leased.
    pub fn item(item: &WorkItem, exponent: u32, creator: &str) -> Self {
        let mut r = Record::new(item.id(), RecordKind::Item, creator);
        r.group = item.group.clone();
        r.part = item.part;
        r.after = item.after.clone();
        r.until = item.until.clone();
        r.extent = item.extent.clone();
        r.cursor = item.after.clone();
        r.covered = Some(0);
        r.exponent = exponent;
        r
    }

    /// True for open work items: the only records the candidate query returns.
    pub fn is_candidate(&self) -> bool {
        self.kind == RecordKind::Item && self.state == RecordState::Open
    }

    pub fn work_item(&self) -> WorkItem {
        WorkItem {
            group: self.group.clone(),
            part: self.part,
            after: self.after.clone(),
            until: self.until.clone(),
            extent: self.extent.clone(),
        }
    }

    /// Documents filtered out by a transform program (`filtered:<reason>` counts).
    pub fn docs_filtered(&self) -> u64 {
        filtered(&self.reasons)
    }

    /// Delivered + refused + skipped + filtered: what the item's inputs became.
    pub fn accounted(&self) -> u64 {
        self.docs_done + self.docs_refused + self.docs_skipped + self.docs_filtered()
    }

    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and a JSON value always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(id: &str, text: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|e| Error::Corrupt {
            id: id.to_string(),
            reason: e.to_string(),
        })
    }

    pub fn from_value(id: &str, v: serde_json::Value) -> Result<Self, Error> {
        serde_json::from_value(v).map_err(|e| Error::Corrupt {
            id: id.to_string(),
            reason: e.to_string(),
        })
    }
}

/// A unit of work: the positions of partition `part` of `group` strictly after `after` and
/// strictly before `until` (a whole shard: both `None`; a slot of a table: two keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorkItem {
    pub group: String,
    pub part: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Cursor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Position>,
    /// What the partition is, as the source decided it when the plan was made (a slice
    /// of how many, a byte range of which file, a key range): the item's extent is read
    /// from here by every worker, never recomputed from a worker's own flags. `None` for
    /// sources whose partitions are fixed by the data itself (a snapshot's shards) and for
    /// items written by an rfs that did not record it. Not part of the item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extent: Option<serde_json::Value>,
}

impl WorkItem {
    /// A whole partition.
    pub fn whole(group: impl Into<String>, part: u32) -> Self {
        WorkItem {
            group: group.into(),
            part,
            after: None,
            until: None,
            extent: None,
        }
    }

    /// The same item with `extent` recorded.
    pub fn with_extent(mut self, extent: serde_json::Value) -> Self {
        self.extent = Some(extent);
        self
    }

    /// `<group>__<part>__<start>`, see [`item_id`].
    pub fn id(&self) -> String {
        item_id(&self.group, self.part, &self.after)
    }
}

/// `<group>__<part>__<start>`: `start` is the first doc number the item may hold (`0` for a
/// whole partition) or, for keys, the key after which it starts (hashed when long or
/// unusual). Ids are labels: nothing parses them.
pub fn item_id(group: &str, part: u32, after: &Cursor) -> String {
    let start = match after {
        None => "0".to_string(),
        Some(Position::Doc(d)) => d.saturating_add(1).to_string(),
        Some(Position::Key(k)) => {
            let plain = k.len() <= 48
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:+".contains(&b));
            if plain {
                format!("after-{k}")
            } else {
                format!("after-h{:016x}", fnv1a(k.as_bytes()))
            }
        }
    };
    format!("{group}__{part}__{start}")
}

/// FNV-1a, 64 bits: a stable label for long keys (not a security measure).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The reason key under which an item counts documents sent again after a takeover to a
/// target that stores a resent document twice (it writes without ids): an upper bound of
/// the duplicates on the target (each may or may not have reached it the first time).
/// Not a fate of a document (it was delivered): no part of refused, skipped or filtered.
pub const POSSIBLE_DUPLICATES: &str = "resent:possible_duplicates";

/// The sum of the `filtered:<reason>` counts of a reasons map.
pub fn filtered(reasons: &BTreeMap<String, u64>) -> u64 {
    reasons
        .iter()
        .filter(|(k, _)| k.starts_with("filtered:"))
        .map(|(_, n)| n)
        .sum()
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_json_round_trip() {
        let mut r = Record::item(
            &WorkItem {
                group: "a__b".into(),
                part: 3,
                after: Some(Position::Doc(9)),
                until: Some(Position::Doc(20)),
                extent: None,
            },
            2,
            "w",
        );
        r.successors.push("a__b__3__15".into());
        r.data = serde_json::json!({"x": 1});
        let back = Record::from_json(&r.id, &r.to_json()).unwrap();
        assert_eq!(back, r);
        assert_eq!(r.id, "a__b__3__10");
        assert!(Record::from_json("x", "{").is_err());
        assert_eq!(WorkItem::whole("logs", 2).id(), "logs__2__0");
        let key = |k: &str| item_id("t", 0, &Some(Position::Key(k.into())));
        assert_eq!(key("01HX2"), "t__0__after-01HX2");
        assert_ne!(key("a/b"), key("a/c"));
        assert!(key(&"x".repeat(500)).len() < 64);
    }
}
