//! Fleet-wide progress read from the store: items by state, documents and bytes done,
//! failures with their last errors, progress per index, control, phases and the keeper.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::control::Control;
use crate::coordinator::{retry, Coordinator, SETUP_ID};
use crate::record::{Kind, State};
use crate::Error;

/// A snapshot of the migration's coordination state.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Store clock when this was read (ms since the epoch).
    pub store_now: i64,
    /// Setup has created every work item.
    pub setup_done: bool,
    /// The keeper marked the migration finished.
    pub finished: bool,
    pub control: Control,
    pub items: ItemCounts,
    pub docs_done: u64,
    pub bytes_done: u64,
    /// Of `docs_done`, documents the target refused for good (see the failure logs).
    pub docs_failed: u64,
    /// FAILED items with their last error.
    pub failures: Vec<Failure>,
    pub per_index: BTreeMap<String, IndexProgress>,
    pub phases: Vec<PhaseStatus>,
    /// Current keeper and when its lease ends.
    pub keeper: Option<(String, i64)>,
}

/// Work items by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub id: String,
    pub index: String,
    pub shard: u32,
    pub attempts: u32,
    pub last_error: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IndexProgress {
    pub items: ItemCounts,
    pub docs_done: u64,
    pub bytes_done: u64,
    pub docs_failed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseStatus {
    pub name: String,
    pub state: String,
    pub holder: Option<String>,
    pub last_error: Option<String>,
}

fn count(c: &mut ItemCounts, state: State, leased: bool) {
    c.total += 1;
    match (state, leased) {
        (State::Done, _) => c.done += 1,
        (State::Failed, _) => c.failed += 1,
        (State::Open, true) => c.leased += 1,
        (State::Open, false) => c.waiting += 1,
    }
}

impl Coordinator {
    /// Read the whole state (one scan of the items).
    pub async fn status(&self) -> Result<Status, Error> {
        let store = self.inner.store.as_ref();
        let now = retry(|| store.now()).await?;
        let items = retry(|| store.list(Kind::Item)).await?;
        let phases = retry(|| store.list(Kind::Phase)).await?;
        let keeper = retry(|| store.list(Kind::Keeper)).await?;
        let mut st = Status {
            store_now: now,
            setup_done: phases
                .iter()
                .any(|p| p.id == SETUP_ID && p.state == State::Done),
            finished: keeper.iter().any(|k| k.state == State::Done),
            control: self.control().await?,
            items: ItemCounts::default(),
            docs_done: 0,
            bytes_done: 0,
            docs_failed: 0,
            failures: Vec::new(),
            per_index: BTreeMap::new(),
            phases: Vec::new(),
            keeper: keeper
                .iter()
                .find(|k| k.state == State::Open && k.expiry > now)
                .and_then(|k| k.holder.clone().map(|h| (h, k.expiry))),
        };
        for it in &items {
            let leased = it.state == State::Open && it.holder.is_some() && it.expiry > now;
            count(&mut st.items, it.state, leased);
            let ix = st.per_index.entry(it.index.clone()).or_default();
            count(&mut ix.items, it.state, leased);
            ix.docs_done += it.docs_done;
            ix.bytes_done += it.bytes_done;
            st.docs_done += it.docs_done;
            st.bytes_done += it.bytes_done;
            ix.docs_failed += it.docs_failed;
            st.docs_failed += it.docs_failed;
            if it.state == State::Failed {
                st.failures.push(Failure {
                    id: it.id.clone(),
                    index: it.index.clone(),
                    shard: it.shard,
                    attempts: it.attempts,
                    last_error: it.last_error.clone().unwrap_or_default(),
                });
            }
        }
        st.failures.sort_by(|a, b| a.id.cmp(&b.id));
        let mut phases: Vec<PhaseStatus> = phases
            .into_iter()
            .filter(|p| p.id != SETUP_ID)
            .map(|p| PhaseStatus {
                name: p.id.trim_start_matches("phase:").to_string(),
                state: p.state.as_str().to_string(),
                holder: p.holder,
                last_error: p.last_error,
            })
            .collect();
        phases.sort_by(|a, b| a.name.cmp(&b.name));
        st.phases = phases;
        Ok(st)
    }
}
