//! What `status` needs from the work items, as a store can compute it without sending every
//! item: counts and sums per (group, state, leased now), and the few items listed one by
//! one (leased now, FAILED, or with refused/skipped documents by reason).

use std::collections::BTreeMap;

use crate::record::{Record, RecordState};

/// Items of one group in one state, and their totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateTotals {
    pub items: u64,
    pub docs: u64,
    pub bytes: u64,
    pub refused: u64,
    pub skipped: u64,
}

impl StateTotals {
    /// One item's contribution.
    pub fn of(r: &Record) -> Self {
        StateTotals {
            items: 1,
            docs: r.docs_done,
            bytes: r.bytes_done,
            refused: r.docs_refused,
            skipped: r.docs_skipped,
        }
    }

    pub fn add(&mut self, o: &StateTotals) {
        self.items += o.items;
        self.docs += o.docs;
        self.bytes += o.bytes;
        self.refused += o.refused;
        self.skipped += o.skipped;
    }

    pub fn sub(&mut self, o: &StateTotals) {
        self.items = self.items.saturating_sub(o.items);
        self.docs = self.docs.saturating_sub(o.docs);
        self.bytes = self.bytes.saturating_sub(o.bytes);
        self.refused = self.refused.saturating_sub(o.refused);
        self.skipped = self.skipped.saturating_sub(o.skipped);
    }
}

/// The work items folded for status.
#[derive(Debug, Clone, Default)]
pub struct ItemSummary {
    /// Totals keyed by (group, state, leased now).
    pub totals: BTreeMap<(String, RecordState, bool), StateTotals>,
    /// Items leased now, FAILED, or with reasons, in no particular order.
    pub notable: Vec<Record>,
}

/// Open with a holder and a lease that ends after `now`.
pub fn is_leased(r: &Record, now: i64) -> bool {
    r.state == RecordState::Open && r.holder.is_some() && r.expiry > now
}

/// The items status lists one by one, besides the leased ones: FAILED ones and those with
/// refused or skipped documents by reason. Stores keep an index of these.
pub fn is_listed(r: &Record) -> bool {
    r.state == RecordState::Failed || !r.reasons.is_empty()
}

impl ItemSummary {
    /// Fold every work item (the stores without aggregates of their own).
    pub fn fold(now: i64, items: Vec<Record>) -> Self {
        let mut s = ItemSummary::default();
        for r in items {
            let leased = is_leased(&r, now);
            s.totals
                .entry((r.group.clone(), r.state, leased))
                .or_default()
                .add(&StateTotals::of(&r));
            if leased || is_listed(&r) {
                s.notable.push(r);
            }
        }
        s
    }

    /// Totals without the leased split (state and group only) plus the notable records,
    /// as a store with counters has them: moves each leased record's share from
    /// (group, open, not leased) to (group, open, leased).
    pub fn from_unsplit(
        now: i64,
        unsplit: BTreeMap<(String, RecordState), StateTotals>,
        notable: Vec<Record>,
    ) -> Self {
        let mut totals: BTreeMap<(String, RecordState, bool), StateTotals> = unsplit
            .into_iter()
            .map(|((g, st), t)| ((g, st, false), t))
            .collect();
        for r in notable.iter().filter(|r| is_leased(r, now)) {
            let share = StateTotals::of(r);
            if let Some(t) = totals.get_mut(&(r.group.clone(), RecordState::Open, false)) {
                t.sub(&share);
            }
            totals
                .entry((r.group.clone(), RecordState::Open, true))
                .or_default()
                .add(&share);
        }
        totals.retain(|_, t| *t != StateTotals::default());
        ItemSummary { totals, notable }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Record, RecordKind};

    fn item(
        id: &str,
        group: &str,
        state: RecordState,
        holder: Option<&str>,
        expiry: i64,
    ) -> Record {
        let mut r = Record::new(id, RecordKind::Item, "t");
        r.group = group.into();
        r.state = state;
        r.holder = holder.map(Into::into);
        r.expiry = expiry;
        r.docs_done = 10;
        r
    }

    #[test]
    fn counters_split_by_the_leased_items_match_the_fold() {
        let now = 1_000;
        let items = vec![
            item("a", "g", RecordState::Open, None, 0),
            item("b", "g", RecordState::Open, Some("w"), 2_000),
            item("c", "g", RecordState::Open, Some("w"), 500),
            item("d", "g", RecordState::Done, None, 0),
            item("e", "h", RecordState::Failed, None, 0),
        ];
        let folded = ItemSummary::fold(now, items.clone());
        let mut unsplit: BTreeMap<(String, RecordState), StateTotals> = BTreeMap::new();
        for r in &items {
            unsplit
                .entry((r.group.clone(), r.state))
                .or_default()
                .add(&StateTotals::of(r));
        }
        let notable: Vec<Record> = items
            .iter()
            .filter(|r| is_leased(r, now) || is_listed(r))
            .cloned()
            .collect();
        assert_eq!(notable.len(), 2, "the leased one and the FAILED one");
        let split = ItemSummary::from_unsplit(now, unsplit, notable);
        assert_eq!(split.totals, folded.totals);
        assert_eq!(
            split.totals[&("g".to_string(), RecordState::Open, false)].items,
            2,
            "never leased and expired"
        );
    }
}
