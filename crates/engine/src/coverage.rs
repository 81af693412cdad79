//! The migration held against the source's own totals: per group (source index, file,
//! table), what its items account for — delivered + refused + skipped + filtered, plus the
//! nested children a snapshot's reader passes over — against the count the plan recorded
//! ([`GroupTotals::count`]), taken by another route than the reads (a `_count` under the
//! plan's point in time, a snapshot's live-docs bitsets) or proved item by item (a JSON
//! lines range's last line, a table slot's `count(*)`). `rfs status` says "every document
//! delivered" and a run ends 0 only when every group's verdict holds.
//!
//! What is proved when, by which count:
//! - each item, when it ends: what its source handed over against a count of the same
//!   extent (the source's own check) and delivered + refused + skipped + filtered against
//!   what was handed over (the pipeline's);
//! - the migration, when it ends: the sums over the items (the keeper's accounting) and,
//!   here, each group's sums against the plan's total.

use std::collections::BTreeMap;

use coordination::GroupProgress;
use serde::{Deserialize, Serialize};

use crate::source::{TotalCount, Totals};

/// The reason key under which an item counts the nested children its reads passed over.
pub const NESTED_REASON: &str = "nested:children";
/// The prefix of nested-children reason keys (not documents: neither delivered nor not).
pub const NESTED_PREFIX: &str = "nested:";

/// Fills in what a plan's counts are where the source did not say: a full snapshot's are
/// its live Lucene documents (nested children included). A delta's counts are upper
/// bounds and stay unchecked.
pub fn default_counts(totals: &mut Totals, exact_live: bool) {
    if totals.since.is_some() || !exact_live {
        return;
    }
    for g in totals.groups.values_mut() {
        g.count.get_or_insert(TotalCount::LiveWithNested);
    }
}

/// One group held against its total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupCoverage {
    pub group: String,
    /// How the total was taken (`None`: not recorded, nothing checked).
    pub count: Option<TotalCount>,
    /// The source's total as the plan recorded it.
    pub total: u64,
    /// Delivered + refused + skipped + filtered over the group's items.
    pub accounted: u64,
    /// Nested children passed over (snapshots).
    pub nested: u64,
    /// Every item of the group is done.
    pub items_done: bool,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The counts equal the source's exact total (or, proved per item, every item is done).
    Proved,
    /// The counts equal an estimated total: nothing contradicts, nothing is proved.
    MatchesEstimate,
    /// Not every item is done yet.
    Pending,
    /// Every item is done and the counts differ from the total.
    Differs,
    /// No total recorded for the group (a plan of an older rfs, a delta).
    Unchecked,
}

impl GroupCoverage {
    /// One line for people: the index, both numbers and what they mean.
    pub fn describe(&self) -> String {
        let nested = if self.nested > 0 {
            format!(" + {} nested children", self.nested)
        } else {
            String::new()
        };
        let counted = self.accounted + self.nested;
        match (self.count, self.verdict) {
            (Some(TotalCount::Exact), Verdict::Differs) => format!(
                "{}: {} accounted for, the source holds {} (exact count under the plan's point in time; a read that had to start over in a new point in time, the plan's having expired, sees the documents written or deleted since)",
                self.group, self.accounted, self.total
            ),
            (Some(TotalCount::Exact), _) => format!(
                "{}: {} accounted for, the source holds {} (exact count under the plan's point in time)",
                self.group, self.accounted, self.total
            ),
            (Some(TotalCount::LiveWithNested), Verdict::Differs) if counted < self.total => format!(
                "{}: {}{nested} accounted for, the snapshot holds {} live documents ({} not accounted for: missing, or nested children of reads that were resumed or cut, which `rfs verify` counts)",
                self.group, self.accounted, self.total, self.total - counted
            ),
            (Some(TotalCount::LiveWithNested), _) => format!(
                "{}: {}{nested} accounted for, the snapshot holds {} live documents",
                self.group, self.accounted, self.total
            ),
            (Some(TotalCount::Estimated), _) => format!(
                "{}: {} accounted for, the source's total is an estimate: {} (counted when the plan was made, not in the view the reads saw)",
                self.group, self.accounted, self.total
            ),
            (Some(TotalCount::PerItem), _) => format!(
                "{}: {} accounted for, each item's count proved when it ended (the plan's {} is an estimate)",
                self.group, self.accounted, self.total
            ),
            (None, _) => format!(
                "{}: {} accounted for, no source total recorded",
                self.group, self.accounted
            ),
        }
    }
}

/// Every group's coverage, in name order.
pub fn check(totals: &Totals, per_group: &BTreeMap<String, GroupProgress>) -> Vec<GroupCoverage> {
    let empty = GroupProgress::default();
    totals
        .groups
        .iter()
        .map(|(name, t)| {
            let p = per_group.get(name).unwrap_or(&empty);
            let of = |prefix: &str| -> u64 {
                p.reasons
                    .iter()
                    .filter(|(k, _)| k.starts_with(prefix))
                    .map(|(_, n)| n)
                    .sum()
            };
            let accounted = p.docs_done + p.docs_refused + p.docs_skipped + of("filtered:");
            // `nested:other` too, should an item's reasons have overflowed.
            let nested = of(NESTED_PREFIX);
            // A group with no item at all (an empty file) is done.
            let items_done = p.items.done == p.items.total;
            let verdict = match t.count {
                None => Verdict::Unchecked,
                _ if t.delta.is_some() => Verdict::Unchecked,
                _ if !items_done => Verdict::Pending,
                Some(TotalCount::Exact) if accounted == t.docs => Verdict::Proved,
                Some(TotalCount::LiveWithNested) if accounted + nested == t.docs => Verdict::Proved,
                Some(TotalCount::Estimated) if accounted == t.docs => Verdict::MatchesEstimate,
                Some(TotalCount::PerItem) => Verdict::Proved,
                Some(_) => Verdict::Differs,
            };
            GroupCoverage {
                group: name.clone(),
                count: t.count,
                total: t.docs,
                accounted,
                nested,
                items_done,
                verdict,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::GroupTotals;

    fn progress(done: u64, reasons: &[(&str, u64)]) -> GroupProgress {
        let mut p = GroupProgress {
            docs_done: done,
            reasons: reasons.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            ..GroupProgress::default()
        };
        p.items.total = 1;
        p.items.done = 1;
        p
    }

    #[test]
    fn each_kind_of_total_is_held_against_the_counts() {
        let mut totals = Totals::default();
        for (name, docs, count) in [
            ("exact", 10, TotalCount::Exact),
            ("short", 10, TotalCount::Exact),
            ("lucene", 10, TotalCount::LiveWithNested),
            ("lucene-short", 10, TotalCount::LiveWithNested),
            ("estimate", 10, TotalCount::Estimated),
            ("estimate-off", 10, TotalCount::Estimated),
            ("lines", 3, TotalCount::PerItem),
        ] {
            totals.add(
                name,
                GroupTotals {
                    parts: 1,
                    docs,
                    count: Some(count),
                    ..GroupTotals::default()
                },
            );
        }
        let per: BTreeMap<String, GroupProgress> = [
            ("exact", progress(8, &[("filtered:x", 2)])),
            ("short", progress(9, &[])),
            ("lucene", progress(6, &[(NESTED_REASON, 4)])),
            ("lucene-short", progress(6, &[(NESTED_REASON, 3)])),
            ("estimate", progress(10, &[])),
            ("estimate-off", progress(11, &[])),
            ("lines", progress(5, &[])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let got: BTreeMap<String, Verdict> = check(&totals, &per)
            .into_iter()
            .map(|c| (c.group, c.verdict))
            .collect();
        assert_eq!(got["exact"], Verdict::Proved);
        assert_eq!(got["short"], Verdict::Differs);
        assert_eq!(got["lucene"], Verdict::Proved);
        assert_eq!(got["lucene-short"], Verdict::Differs);
        assert_eq!(got["estimate"], Verdict::MatchesEstimate);
        assert_eq!(got["estimate-off"], Verdict::Differs);
        assert_eq!(got["lines"], Verdict::Proved);
        // An item still open: nothing concluded.
        let mut open = per.clone();
        open.get_mut("short").unwrap().items.done = 0;
        let short = check(&totals, &open)
            .into_iter()
            .find(|c| c.group == "short")
            .unwrap();
        assert_eq!(short.verdict, Verdict::Pending);
    }
}
