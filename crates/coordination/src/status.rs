//! Fleet-wide progress read from the store: items by state, documents and bytes done,
//! refused and skipped documents by reason, failures with their last errors, progress per
//! group (index or table), the leases held now, control, phases and the keeper.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::accounting::Mismatch;
use crate::control::Control;
use crate::coordinator::{retry, Coordinator, SETUP_ID};
use crate::identity::Identity;
use crate::position::Cursor;
use crate::record::{RecordKind, RecordState};
use crate::summary::is_leased;
use crate::Error;

/// A snapshot of the migration's coordination state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    /// What the store is for (recorded by the migration's first worker).
    pub identity: Option<Identity>,
    /// Store clock when this was read (ms since the epoch).
    pub store_now: i64,
    /// Setup has created every work item.
    pub setup_done: bool,
    /// The keeper marked the migration finished.
    pub finished: bool,
    pub control: Control,
    pub items: ItemCounts,
    /// Documents the sink acknowledged.
    pub docs_done: u64,
    pub bytes_done: u64,
    /// Documents the target refused for good (each in a worker's failure log).
    pub docs_refused: u64,
    /// Documents the source or the transform could not deliver (each in a failure log).
    pub docs_skipped: u64,
    /// Refused and skipped documents by reason (`refused:<type>`, `skipped:<reason>`).
    pub reasons: BTreeMap<String, u64>,
    /// FAILED items with their last error.
    pub failures: Vec<Failure>,
    /// Progress per group (source index or table).
    pub per_group: BTreeMap<String, GroupProgress>,
    /// Items leased now: who holds them, until when, and how far they got.
    pub leases: Vec<LeaseStatus>,
    pub phases: Vec<PhaseStatus>,
    /// Current keeper and when its lease ends.
    pub keeper: Option<(String, i64)>,
    /// Set when the migration finished with counts that do not add up over its work items
    /// (checked once, by the keeper that marked the end): the run ends non-zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<Mismatch>,
}

/// Work items by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemCounts {
    pub total: usize,
    /// Open and not leased (never leased, released, or lease expired).
    pub waiting: usize,
    /// Open with an unexpired lease.
    pub leased: usize,
    pub done: usize,
    pub failed: usize,
}

impl ItemCounts {
    /// Items that still need a worker.
    pub fn open(&self) -> usize {
        self.waiting + self.leased
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub id: String,
    pub group: String,
    pub part: u32,
    pub attempts: u32,
    pub last_error: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupProgress {
    pub items: ItemCounts,
    pub docs_done: u64,
    pub bytes_done: u64,
    pub docs_refused: u64,
    pub docs_skipped: u64,
    /// The group's counts by reason (`filtered:…`, `nested:children`, …), from its items
    /// that have any: what the group's delivered + refused + skipped + filtered (+ nested)
    /// adds up with, to hold against the source's own total.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
}

/// One held lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseStatus {
    pub id: String,
    pub holder: String,
    /// Lease end, store ms since the epoch.
    pub expiry: i64,
    pub attempts: u32,
    /// The last acknowledged position (`null`: nothing yet).
    pub cursor: Cursor,
    pub docs_done: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseStatus {
    pub name: String,
    pub state: String,
    pub holder: Option<String>,
    pub last_error: Option<String>,
    /// What a long phase says of its progress (the `follow` phase's state); `None` for
    /// the others, whose data is their result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl Status {
    /// Documents sent again after a takeover to a target that writes without ids (an
    /// upper bound of the duplicates it holds), over every item.
    pub fn possible_duplicates(&self) -> u64 {
        self.reasons
            .get(crate::record::POSSIBLE_DUPLICATES)
            .copied()
            .unwrap_or(0)
    }
}

fn count(c: &mut ItemCounts, state: RecordState, leased: bool, n: usize) {
    c.total += n;
    match (state, leased) {
        (RecordState::Done, _) => c.done += n,
        (RecordState::Failed, _) => c.failed += n,
        (RecordState::Open, true) => c.leased += n,
        (RecordState::Open, false) => c.waiting += n,
    }
}

/// Above this many work items, [`Coordinator::status_summary`] reads the keeper's summary
/// instead of every item.
pub const SUMMARY_ABOVE_ITEMS: u64 = 10_000;

impl Coordinator {
    /// The state for people: for migrations of more than [`SUMMARY_ABOVE_ITEMS`] work items
    /// (100,000 table slots), the keeper's latest summary when it is at most `max_age` old
    /// by the store's clock (or the final one of a finished migration), with the control
    /// record and the phases read now: a few records instead of every item. Otherwise, and
    /// when no recent summary exists (no keeper running), the whole state ([`Self::status`]).
    pub async fn status_summary(&self, max_age: std::time::Duration) -> Result<Status, Error> {
        let store = self.inner.store.as_ref();
        let items = retry(|| store.get(SETUP_ID))
            .await?
            .and_then(|(r, _)| r.data.get("items").and_then(serde_json::Value::as_u64))
            .unwrap_or(0);
        if items <= SUMMARY_ABOVE_ITEMS {
            return self.status().await;
        }
        let now = retry(|| store.now()).await?;
        let Some((keeper, _)) = retry(|| store.get(crate::keeper::KEEPER_ID)).await? else {
            return self.status().await;
        };
        let Ok(mut st) = serde_json::from_value::<Status>(keeper.data.clone()) else {
            return self.status().await;
        };
        let done = keeper.state == RecordState::Done;
        let age = now.saturating_sub(st.store_now);
        if !done && age > max_age.as_millis() as i64 {
            return self.status().await;
        }
        let phases = retry(|| store.list(RecordKind::Phase)).await?;
        st.setup_done = phases
            .iter()
            .any(|p| p.id == SETUP_ID && p.state == RecordState::Done);
        st.finished = done;
        st.control = self.control().await?;
        st.keeper = (keeper.state == RecordState::Open && keeper.expiry > now)
            .then(|| keeper.holder.clone().map(|h| (h, keeper.expiry)))
            .flatten();
        st.phases = phase_statuses(phases);
        // Leases as the keeper saw them: drop those that have ended since.
        st.leases.retain(|l| l.expiry > now);
        Ok(st)
    }

    /// Read the whole state: the store's item summary (aggregates on PostgreSQL and Redis,
    /// one scan of the items elsewhere) and the few other records.
    pub async fn status(&self) -> Result<Status, Error> {
        let store = self.inner.store.as_ref();
        let now = retry(|| store.now()).await?;
        let phases = retry(|| store.list(RecordKind::Phase)).await?;
        let keeper = retry(|| store.list(RecordKind::Keeper)).await?;
        let mut st = Status {
            identity: self.identity().await?,
            store_now: now,
            setup_done: phases
                .iter()
                .any(|p| p.id == SETUP_ID && p.state == RecordState::Done),
            finished: keeper.iter().any(|k| k.state == RecordState::Done),
            control: self.control().await?,
            items: ItemCounts::default(),
            docs_done: 0,
            bytes_done: 0,
            docs_refused: 0,
            docs_skipped: 0,
            reasons: BTreeMap::new(),
            failures: Vec::new(),
            per_group: BTreeMap::new(),
            leases: Vec::new(),
            phases: Vec::new(),
            keeper: keeper
                .iter()
                .find(|k| k.state == RecordState::Open && k.expiry > now)
                .and_then(|k| k.holder.clone().map(|h| (h, k.expiry))),
            accounting: keeper
                .iter()
                .find(|k| k.state == RecordState::Done)
                .and_then(|k| k.data.get("accounting"))
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
        };
        let summary = retry(|| store.item_summary(now)).await?;
        for ((group, state, leased), t) in &summary.totals {
            let g = st.per_group.entry(group.clone()).or_default();
            count(&mut st.items, *state, *leased, t.items as usize);
            count(&mut g.items, *state, *leased, t.items as usize);
            g.docs_done += t.docs;
            g.bytes_done += t.bytes;
            g.docs_refused += t.refused;
            g.docs_skipped += t.skipped;
            st.docs_done += t.docs;
            st.bytes_done += t.bytes;
            st.docs_refused += t.refused;
            st.docs_skipped += t.skipped;
        }
        for it in &summary.notable {
            let g = st.per_group.entry(it.group.clone()).or_default();
            for (reason, n) in &it.reasons {
                *st.reasons.entry(reason.clone()).or_default() += n;
                *g.reasons.entry(reason.clone()).or_default() += n;
            }
            if is_leased(it, now) {
                st.leases.push(LeaseStatus {
                    id: it.id.clone(),
                    holder: it.holder.clone().unwrap_or_default(),
                    expiry: it.expiry,
                    attempts: it.attempts,
                    cursor: it.cursor.clone(),
                    docs_done: it.docs_done,
                });
            }
            if it.state == RecordState::Failed {
                st.failures.push(Failure {
                    id: it.id.clone(),
                    group: it.group.clone(),
                    part: it.part,
                    attempts: it.attempts,
                    last_error: it.last_error.clone().unwrap_or_default(),
                });
            }
        }
        st.failures.sort_by(|a, b| a.id.cmp(&b.id));
        st.leases.sort_by(|a, b| a.id.cmp(&b.id));
        st.phases = phase_statuses(phases);
        Ok(st)
    }
}

/// The phase whose data `status` shows: the follower's state.
const FOLLOW_PHASE_ID: &str = "phase:follow";

fn phase_statuses(phases: Vec<crate::record::Record>) -> Vec<PhaseStatus> {
    let mut phases: Vec<PhaseStatus> = phases
        .into_iter()
        .filter(|p| p.id != SETUP_ID)
        .map(|p| PhaseStatus {
            name: p.id.trim_start_matches("phase:").to_string(),
            state: p.state.as_str().to_string(),
            holder: p.holder,
            last_error: p.last_error,
            data: (p.id == FOLLOW_PHASE_ID && !p.data.is_null()).then_some(p.data),
        })
        .collect();
    phases.sort_by(|a, b| a.name.cmp(&b.name));
    phases
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{
        Acquired, Config, Coordinator, HandOff, MemoryStore, Position, WorkItem,
        POSSIBLE_DUPLICATES,
    };

    /// What a holder sent beyond its cursor stays in the item for the next holder (a
    /// release, an expiry), and a hand-off counts it once as possible duplicates on the
    /// parent — the successor starts clean — which `status` sums over the items.
    #[tokio::test]
    async fn documents_sent_ahead_are_kept_for_the_next_holder_and_counted_at_a_hand_off() {
        let store = Arc::new(MemoryStore::new());
        let coord = Coordinator::new(store, Config::default());
        coord.setup(&[WorkItem::whole("t", 0)]).await.unwrap();
        let Acquired::Lease(mut lease) = coord.acquire().await.unwrap() else {
            panic!("no lease")
        };
        let mut p = lease.progress();
        p.cursor = Some(Position::Doc(9));
        (p.docs, p.covered, p.sent_ahead) = (10, 10, 20);
        lease.checkpoint(&p).await.unwrap();
        lease.release().await.unwrap();
        assert_eq!(coord.status().await.unwrap().possible_duplicates(), 0);

        let Acquired::Lease(lease) = coord.acquire().await.unwrap() else {
            panic!("no lease")
        };
        let back = lease.progress();
        assert_eq!(back, p, "read back as written");
        let id = lease.id().to_string();
        let HandOff::Successor(succ) = lease.hand_off(&back, 0.05).await.unwrap() else {
            panic!("no successor")
        };
        let (parent, _) = coord.store().get(&id).await.unwrap().unwrap();
        assert_eq!(parent.sent_ahead, 0);
        assert_eq!(parent.reasons[POSSIBLE_DUPLICATES], 20);
        let st = coord.status().await.unwrap();
        assert_eq!(st.possible_duplicates(), 20);
        assert_eq!(st.docs_done, 10, "not a document of its own");

        let Acquired::Lease(next) = coord.acquire().await.unwrap() else {
            panic!("no lease")
        };
        assert_eq!(next.id(), succ);
        let q = next.progress();
        assert_eq!((q.sent_ahead, q.possible_duplicates()), (0, 0));
    }

    #[tokio::test]
    async fn large_migrations_read_the_keeper_summary() {
        let store = Arc::new(MemoryStore::new());
        let coord = Coordinator::new(store, Config::default());
        let n = super::SUMMARY_ABOVE_ITEMS as u32 + 5;
        let items: Vec<WorkItem> = (0..n).map(|i| WorkItem::whole("t", i)).collect();
        coord.setup(&items).await.unwrap();
        let Acquired::Lease(lease) = coord.acquire().await.unwrap() else {
            panic!("no lease")
        };
        let mut p = lease.progress();
        p.docs = 7;
        lease.complete(&p).await.unwrap();
        // No keeper yet: the whole state.
        let full = coord.status().await.unwrap();
        let quick = coord.status_summary(Duration::from_secs(60)).await.unwrap();
        assert_eq!(quick.items, full.items);
        // With the keeper's summary: the same figures, from one record.
        coord.keeper_step().await.unwrap();
        let quick = coord.status_summary(Duration::from_secs(60)).await.unwrap();
        assert_eq!(quick.items, full.items);
        assert_eq!(quick.items.done, 1);
        assert_eq!(quick.docs_done, 7);
        assert_eq!(quick.per_group, full.per_group);
        assert!(quick.setup_done && !quick.finished);
        assert!(quick.keeper.is_some());
        // A summary older than allowed is not used: a second item completes after it and
        // the zero-age read sees it.
        let Acquired::Lease(lease) = coord.acquire().await.unwrap() else {
            panic!("no lease")
        };
        let p = lease.progress();
        lease.complete(&p).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let exact = coord.status_summary(Duration::ZERO).await.unwrap();
        assert_eq!(exact.items.done, 2);
        let stale = coord.status_summary(Duration::from_secs(60)).await.unwrap();
        assert_eq!(
            stale.items.done, 1,
            "the summary is the keeper's, not a scan"
        );
    }
}
