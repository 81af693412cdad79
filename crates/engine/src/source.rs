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
    /// A delta: the earlier snapshot (or state) this one is compared with. Groups with
    /// [`GroupTotals::delta`] send only what changed since it; groups without were
    /// created after it and are sent whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// A delta: groups the earlier snapshot has and this one does not (deleted since).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
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
    /// A delta: what changed in this group since the earlier snapshot. `docs` is then
    /// `index + delete_at_most`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<DeltaTotals>,
    /// What `docs` is, as the source counted it when the plan was made: what `rfs status`
    /// and the end of a run hold the items' counts against (see `crate::coverage`).
    /// `None`: a plan of an rfs that did not say (nothing is checked against `docs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<TotalCount>,
}

/// How a group's planned document count was taken, and so what it proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TotalCount {
    /// The source's own exact count of the documents it hands over (a live cluster's
    /// `_count` under the plan's point in time): delivered + refused + skipped + filtered
    /// must equal it.
    Exact,
    /// A snapshot's live Lucene documents (live-docs bitsets and segment infos), which
    /// include nested children: the reader passes over those (`nested:children` counts)
    /// and delivered + refused + skipped + filtered + nested must equal it.
    LiveWithNested,
    /// An estimate (a live cluster read without a point in time, whose `_count` is taken
    /// at another moment than the reads): compared, and named an estimate.
    Estimated,
    /// Not known when the plan is made (JSON lines: the lines of a byte range; a table's
    /// slot): each item proves its own count when it ends (its last line at the range's
    /// end; the slot's `count(*)`), so a finished item is proof; `docs` is an estimate.
    PerItem,
}

/// What a delta sends of one group, and what it leaves alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaTotals {
    /// Documents to index: new or changed.
    pub index: u64,
    /// Documents that were live and are not any more: at most this many deletes (an
    /// updated document is re-indexed, not deleted).
    pub delete_at_most: u64,
    /// Documents that did not change: not sent.
    pub unchanged: u64,
    /// Of `unchanged`, documents a merge had rewritten, recognised (by sequence number).
    pub matched: u64,
    /// Of `index`, documents of rewritten partitions sent again without proof that they
    /// changed (at most this many did not).
    pub unproven: u64,
    /// Documents read to find the ids to delete.
    pub delete_keys: u64,
    /// Partitions whose deleted ids come from the newer snapshot's operation history
    /// (else from the older snapshot's documents).
    pub parts_from_history: u32,
}

impl DeltaTotals {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &DeltaTotals) {
        self.index += other.index;
        self.delete_at_most += other.delete_at_most;
        self.unchanged += other.unchanged;
        self.matched += other.matched;
        self.unproven += other.unproven;
        self.delete_keys += other.delete_keys;
        self.parts_from_history += other.parts_from_history;
    }
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

    /// [`Source::read`], also adding to `nested` the live documents of the item it passes
    /// over because they belong to another document (the nested children of a snapshot
    /// shard: no `_id` or `_source` of their own, their content is in the parent's
    /// source), counted one by one as the reader walks them. `verify` needs the count to
    /// account for every live document the snapshot holds. A source without such
    /// documents keeps this default.
    /// Whether the plan's per-group counts are the source's own live counts, exact (a
    /// snapshot: live-docs bitsets and segment infos), so `verify` can hold what it reads
    /// against them; `false` (the default) where they are estimates (a table's) or
    /// unknown.
    fn exact_totals(&self) -> bool {
        false
    }

    /// What the source was asked for but does not read, each with why (`index: reason`):
    /// a live cluster's hidden or dot-named indices reached by a wildcard. Logged when the
    /// source opens and repeated in the command's summary; empty by default.
    fn left_out(&self) -> Vec<String> {
        Vec::new()
    }

    /// The source's changes after its backfill, for sources that can be followed (a
    /// PostgreSQL table); `None` (the default) for the others.
    fn change_feed(&self) -> Option<std::sync::Arc<dyn crate::follow::ChangeFeed>> {
        None
    }

    fn read_counting_nested(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
        nested: &mut u64,
    ) -> Result<(), SourceError> {
        let _ = nested;
        self.read(item, after, emit)
    }
}
