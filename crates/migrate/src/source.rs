//! The source port: where documents come from. A source plans its partitions (work items
//! with totals for status and ETA) and reads one partition after a cursor, pushing
//! documents and skips in position order. Reading is blocking CPU/IO work: the pipeline
//! calls [`Source::read`] on a blocking thread.
//!
//! A new source implements these three methods and nothing else: it knows nothing of
//! batches, sinks, leases or the store.

use std::collections::BTreeMap;

use coordination::{Cursor, WorkItem};
use serde::{Deserialize, Serialize};

use crate::document::Read;
use crate::error::SourceError;

/// Everything a source holds, cut into work items.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub items: Vec<WorkItem>,
    pub totals: Totals,
}

/// What the source holds for the migration, written once by the items phase and read by
/// `rfs status` for "done out of total".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Per group (source index or table).
    pub groups: BTreeMap<String, GroupTotals>,
    /// Documents to migrate (live documents; an estimate for tables).
    pub docs: u64,
    /// Bytes to read (shard files; an estimate for tables).
    pub bytes: u64,
    /// Work items planned.
    pub items: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupTotals {
    /// Partitions (shards, slots).
    pub parts: u32,
    pub docs: u64,
    pub bytes: u64,
    /// Partitions that cannot be read, with why (a shard that failed in the snapshot, a
    /// shard whose files are missing or corrupt). Their items fail with the reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub broken: BTreeMap<u32, String>,
}

impl Totals {
    /// Adds one group's totals.
    pub fn add(&mut self, group: &str, g: GroupTotals) {
        self.docs += g.docs;
        self.bytes += g.bytes;
        self.groups.insert(group.to_string(), g);
    }
}

/// Where documents come from.
pub trait Source: Send + Sync + 'static {
    /// What is being copied, for the migration's identity in the store: short keys and
    /// values with no secrets (`repository`, `snapshot`, `table`, …).
    fn identity(&self) -> BTreeMap<String, String>;

    /// The work items and the totals (blocking).
    fn plan(&self) -> Result<Plan, SourceError>;

    /// Calls `emit` with every document (or skip) of `item` whose position is strictly
    /// after `after` and inside the item, in increasing position order, until the item
    /// ends or `emit` returns `false`.
    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError>;
}
