//! The migration's invariant, checked once when the keeper marks the end: over every work
//! item, delivered + refused + skipped + filtered equals what the items' sources handed
//! over (documents and skips, each source having proven at its range's end that this is
//! every live document or row of the range) plus the further outputs of exploded inputs.
//! Each item run checks its own share as it ends; this catches what happens to the
//! counters afterwards or between runs (a checkpoint that lost or doubled counts, a store
//! edited by hand, a bug in a successor hand-off).

use serde::{Deserialize, Serialize};

use crate::record::Record;

/// Items listed one by one in a mismatch (the rest are counted).
const LISTED: usize = 10;

/// The migration's counts did not add up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Work items looked at.
    pub items: u64,
    /// What their sources handed over (+ exploded outputs).
    pub covered: u64,
    pub delivered: u64,
    pub refused: u64,
    pub skipped: u64,
    pub filtered: u64,
    /// Items whose own counts do not add up: (id, covered, accounted), the first few.
    pub wrong_items: Vec<(String, u64, u64)>,
    /// How many items do not add up in all.
    pub wrong_count: u64,
}

impl Mismatch {
    /// delivered + refused + skipped + filtered.
    pub fn accounted(&self) -> u64 {
        self.delivered + self.refused + self.skipped + self.filtered
    }

    /// One line naming the numbers, for logs, the final report and `rfs status`.
    pub fn message(&self) -> String {
        let accounted = self.accounted();
        let diff = if accounted > self.covered {
            format!("{} more counted than handed over", accounted - self.covered)
        } else {
            format!("{} documents unaccounted for", self.covered - accounted)
        };
        let listed: Vec<String> = self
            .wrong_items
            .iter()
            .map(|(id, c, a)| format!("{id} (handed over {c}, accounted {a})"))
            .collect();
        let more = self
            .wrong_count
            .saturating_sub(self.wrong_items.len() as u64);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(
            "accounting mismatch over the whole migration: its {} work items' sources handed over {} documents and skips (+ exploded outputs) but {} were delivered, {} refused, {} skipped and {} filtered ({accounted}: {diff}); items that do not add up: {}{more}",
            self.items,
            self.covered,
            self.delivered,
            self.refused,
            self.skipped,
            self.filtered,
            listed.join(", "),
        )
    }
}

/// Checks the invariant over `items` (every work item of the migration); `None` when it
/// holds. Items written by an rfs that did not record what they covered are taken as they
/// are.
pub fn check(items: &[Record]) -> Option<Mismatch> {
    let mut m = Mismatch {
        items: 0,
        covered: 0,
        delivered: 0,
        refused: 0,
        skipped: 0,
        filtered: 0,
        wrong_items: Vec::new(),
        wrong_count: 0,
    };
    for r in items {
        m.items += 1;
        let accounted = r.accounted();
        let covered = r.covered.unwrap_or(accounted);
        m.covered += covered;
        m.delivered += r.docs_done;
        m.refused += r.docs_refused;
        m.skipped += r.docs_skipped;
        m.filtered += r.docs_filtered();
        if covered != accounted {
            m.wrong_count += 1;
            if m.wrong_items.len() < LISTED {
                m.wrong_items.push((r.id.clone(), covered, accounted));
            }
        }
    }
    m.wrong_items.sort();
    (m.wrong_count > 0 || m.accounted() != m.covered).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Record, RecordState, WorkItem};

    fn item(part: u32, covered: u64, docs: u64, skipped: u64, filtered: u64) -> Record {
        let mut r = Record::item(&WorkItem::whole("idx", part), 0, "w");
        r.covered = Some(covered);
        r.docs_done = docs;
        r.docs_skipped = skipped;
        if filtered > 0 {
            r.reasons.insert("filtered:program".into(), filtered);
        }
        r.state = RecordState::Done;
        r
    }

    #[test]
    fn counts_that_add_up_pass_and_an_edited_one_is_named() {
        let mut items = vec![item(0, 10, 7, 2, 1), item(1, 5, 5, 0, 0)];
        assert_eq!(check(&items), None);
        // An item written before `covered` was kept: taken as it is.
        let mut old = item(2, 0, 4, 0, 0);
        old.covered = None;
        items.push(old);
        assert_eq!(check(&items), None);
        items[1].docs_done = 6;
        let m = check(&items).expect("a mismatch");
        assert_eq!((m.covered, m.accounted()), (19, 20));
        assert_eq!(m.wrong_items, vec![("idx__1__0".to_string(), 5, 6)]);
        let msg = m.message();
        assert!(
            msg.contains("idx__1__0 (handed over 5, accounted 6)"),
            "{msg}"
        );
        assert!(msg.contains("1 more counted than handed over"), "{msg}");
        items[1].docs_done = 3;
        let msg = check(&items).expect("a mismatch").message();
        assert!(msg.contains("2 documents unaccounted for"), "{msg}");
    }
}
