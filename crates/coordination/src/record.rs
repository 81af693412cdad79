//! The one record shape every backend stores: work items, phases, the control record and
//! the keeper lease are all `Record`s that differ by `kind`.

use serde::{Deserialize, Serialize};

use crate::Error;

/// What a record is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A range of one shard's documents to migrate.
    Item,
    /// A once-per-migration step ("snapshot", "metadata", …) that one worker does.
    Phase,
    /// RUN / PAUSE / STOP, read by every worker between batches.
    Control,
    /// The keeper lease and its latest summary; `Done` once the migration is finished.
    Keeper,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Item => "item",
            Kind::Phase => "phase",
            Kind::Control => "control",
            Kind::Keeper => "keeper",
        }
    }
}

/// Life-cycle state of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Not finished: never leased, leased, or with an expired/released lease.
    Open,
    /// Finished (for an item: every document of its range acknowledged or handed on).
    Done,
    /// Gave up after the maximum number of attempts; `last_error` says why.
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Done => "done",
            State::Failed => "failed",
        }
    }
}

/// Version token for compare-and-set: a row version (SQL, Redis) or
/// `(seq_no, primary_term)` (cluster index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version {
    pub seq: i64,
    pub term: i64,
}

impl Version {
    pub fn row(v: i64) -> Self {
        Version { seq: v, term: 0 }
    }
}

/// A stored record. Work-item fields are zero/empty on other kinds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub kind: Kind,
    pub state: State,
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
    #[serde(default)]
    pub index: String,
    #[serde(default)]
    pub shard: u32,
    #[serde(default)]
    pub from_doc: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_doc: Option<u64>,
    /// Checkpointed position: every document of the range below it is acknowledged.
    #[serde(default)]
    pub cursor: u64,
    #[serde(default)]
    pub docs_done: u64,
    #[serde(default)]
    pub bytes_done: u64,
    /// Of `docs_done`, documents the target refused for good (in a worker's failure log).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub docs_failed: u64,
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
    pub fn new(id: impl Into<String>, kind: Kind, creator: &str) -> Self {
        Record {
            id: id.into(),
            kind,
            state: State::Open,
            holder: None,
            expiry: 0,
            exponent: 0,
            attempts: 0,
            creator: creator.to_string(),
            index: String::new(),
            shard: 0,
            from_doc: 0,
            to_doc: None,
            cursor: 0,
            docs_done: 0,
            docs_failed: 0,
            bytes_done: 0,
            successors: Vec::new(),
            last_error: None,
            completed_at: None,
            data: serde_json::Value::Null,
        }
    }

    /// A new work item for `item`, never leased.
    pub fn item(item: &WorkItem, exponent: u32, creator: &str) -> Self {
        let mut r = Record::new(item.id(), Kind::Item, creator);
        r.index = item.index.clone();
        r.shard = item.shard;
        r.from_doc = item.from_doc;
        r.to_doc = item.to_doc;
        r.cursor = item.from_doc;
        r.exponent = exponent;
        r
    }

    /// True for open work items: the only records the candidate query returns.
    pub fn is_candidate(&self) -> bool {
        self.kind == Kind::Item && self.state == State::Open
    }

    pub fn work_item(&self) -> WorkItem {
        WorkItem {
            index: self.index.clone(),
            shard: self.shard,
            from_doc: self.from_doc,
            to_doc: self.to_doc,
        }
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

/// A unit of document work: one shard of one index from `from_doc` (a shard-global Lucene
/// doc id) to `to_doc` (exclusive; `None` = end of shard).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorkItem {
    pub index: String,
    pub shard: u32,
    pub from_doc: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_doc: Option<u64>,
}

impl WorkItem {
    /// A whole shard.
    pub fn shard(index: impl Into<String>, shard: u32) -> Self {
        WorkItem {
            index: index.into(),
            shard,
            from_doc: 0,
            to_doc: None,
        }
    }

    /// `<index>__<shard>__<from_doc>`.
    pub fn id(&self) -> String {
        item_id(&self.index, self.shard, self.from_doc)
    }
}

/// `<index>__<shard>__<from_doc>`; parse from the right, since index names may hold `__`.
pub fn item_id(index: &str, shard: u32, from_doc: u64) -> String {
    format!("{index}__{shard}__{from_doc}")
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
                index: "a__b".into(),
                shard: 3,
                from_doc: 10,
                to_doc: Some(20),
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
    }
}
