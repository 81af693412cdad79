//! The phases of a migration, each guarded by a phase record in the coordination store so
//! that identical `rfs run` processes cooperate: one does the phase, the others wait for
//! it. Snapshot creation (optional), metadata (templates, then indices), creation of the
//! document work items (shards split into doc-id ranges above a size), documents.

use std::collections::BTreeMap;
use std::time::Duration;

use coordination::{Coordinator, PhaseClaim, WorkItem};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use snapshot::{ShardReader, Snapshot};

use crate::metadata::DocumentRouting;
use crate::worker::with_store_retries;

pub const PHASE_SNAPSHOT: &str = "snapshot";
pub const PHASE_METADATA: &str = "metadata";
pub const PHASE_ITEMS: &str = "items";

#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error("coordination store: {0}")]
    Store(#[from] coordination::Error),
    #[error("snapshot: {0}")]
    Snapshot(#[from] snapshot::Error),
    #[error("{0}")]
    Other(String),
}

/// What the snapshot holds for the migration, written once by the items phase and read
/// by `rfs status` for "done out of total".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Live Lucene documents (nested children included) per source index.
    pub indices: BTreeMap<String, IndexTotals>,
    pub live_docs: u64,
    pub items: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexTotals {
    pub shards: u32,
    pub live_docs: u64,
    pub max_doc: u64,
    /// Bytes of the shards' files in the repository.
    pub bytes: u64,
    /// Shards that failed in the snapshot (not migrated; reported).
    pub failed_shards: Vec<u32>,
}

/// Runs `work` if this worker claims phase `name`, waits while another worker holds it,
/// and returns the phase's result once done. The claim is renewed while `work` runs.
pub async fn guarded_phase<F, Fut>(
    coord: &Coordinator,
    name: &str,
    work: F,
) -> Result<Value, PhaseError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Value, PhaseError>>,
{
    match with_store_retries(|| coord.wait_phase(name)).await? {
        PhaseClaim::Done(v) => {
            tracing::debug!(phase = name, "phase already done");
            Ok(v)
        }
        PhaseClaim::Busy { .. } => Err(PhaseError::Other(format!("phase {name} is still busy"))),
        PhaseClaim::Claimed => {
            tracing::info!(phase = name, "running phase");
            let renew_every = coord.config().phase_lease / 3;
            let renewer = {
                let coord = coord.clone();
                let name = name.to_string();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(renew_every.max(Duration::from_millis(100))).await;
                        if let Err(e) = coord.renew_phase(&name).await {
                            tracing::warn!(phase = %name, "could not renew the phase lease: {e}");
                        }
                    }
                })
            };
            let result = work().await;
            renewer.abort();
            match result {
                Ok(v) => {
                    with_store_retries(|| coord.complete_phase(name, v.clone())).await?;
                    tracing::info!(phase = name, "phase done");
                    Ok(v)
                }
                Err(e) => {
                    let reason = e.to_string();
                    if let Err(e2) = coord.fail_phase(name, &reason).await {
                        tracing::warn!(phase = name, "could not record the phase failure: {e2}");
                    }
                    Err(e)
                }
            }
        }
    }
}

/// The work items of a snapshot: one per shard of every routed index, shards with more
/// than `split_docs` Lucene documents (deleted ones included) cut into doc-id ranges of
/// that size. Blocking: opens every shard's commit.
pub fn plan_items(
    snapshot: &Snapshot,
    routing: &DocumentRouting,
    split_docs: Option<u64>,
) -> Result<(Vec<WorkItem>, Totals), PhaseError> {
    let mut items = Vec::new();
    let mut totals = Totals::default();
    for name in snapshot.index_names() {
        if !routing.includes(&name) {
            continue;
        }
        let index = snapshot.index(&name)?;
        let mut t = IndexTotals {
            shards: index.number_of_shards(),
            ..IndexTotals::default()
        };
        for shard_no in 0..index.number_of_shards() {
            if let Some(reason) = index.shard_failure(shard_no) {
                tracing::warn!(index = %name, shard = shard_no, "shard failed in the snapshot and is not migrated: {reason}");
                t.failed_shards.push(shard_no);
                continue;
            }
            let shard = index.open_shard(shard_no)?;
            t.bytes += shard.files().size_in_bytes();
            let reader = ShardReader::open(&shard)?;
            let max_doc = reader.max_doc();
            t.live_docs += reader.live_docs();
            t.max_doc += max_doc;
            match split_docs.filter(|&n| n > 0 && max_doc > n) {
                Some(n) => {
                    let mut from = 0;
                    while from < max_doc {
                        let to = from + n;
                        items.push(WorkItem {
                            index: name.clone(),
                            shard: shard_no,
                            from_doc: from,
                            to_doc: (to < max_doc).then_some(to),
                        });
                        from = to;
                    }
                }
                None => items.push(WorkItem::shard(name.clone(), shard_no)),
            }
        }
        totals.live_docs += t.live_docs;
        totals.indices.insert(name, t);
    }
    totals.items = items.len();
    Ok((items, totals))
}

/// The items phase: one worker plans the items and creates them; everyone gets the totals.
pub async fn items_phase(
    coord: &Coordinator,
    snapshot: &Snapshot,
    routing: &DocumentRouting,
    split_docs: Option<u64>,
) -> Result<Totals, PhaseError> {
    let value = guarded_phase(coord, PHASE_ITEMS, || async {
        let (snap, routing) = (snapshot.clone(), routing.clone());
        let (items, totals) =
            tokio::task::spawn_blocking(move || plan_items(&snap, &routing, split_docs))
                .await
                .map_err(|e| PhaseError::Other(format!("planning work items: {e}")))??;
        let created = with_store_retries(|| coord.setup(&items)).await?;
        tracing::info!(
            items = items.len(),
            created,
            live_docs = totals.live_docs,
            "work items ready"
        );
        Ok(serde_json::to_value(&totals).expect("totals serialise"))
    })
    .await?;
    serde_json::from_value(value).map_err(|e| PhaseError::Other(format!("items phase result: {e}")))
}

/// The totals written by the items phase, if it is done (read-only; for `rfs status`).
pub async fn read_totals(coord: &Coordinator) -> Result<Option<Totals>, PhaseError> {
    let id = format!("phase:{PHASE_ITEMS}");
    let rec = with_store_retries(|| coord.store().get(&id)).await?;
    Ok(rec
        .filter(|(r, _)| r.state == coordination::State::Done)
        .and_then(|(r, _)| serde_json::from_value(r.data).ok()))
}

/// Creates snapshot `name` in repository `repo` of the source cluster unless it exists,
/// and waits until it is finished. The name is chosen by the operator (or derived from
/// the migration), so every worker asks for the same snapshot.
pub async fn create_snapshot(
    source: &cluster::Client,
    repo: &str,
    name: &str,
) -> Result<Value, PhaseError> {
    let err = |e: cluster::ClusterError| PhaseError::Other(format!("snapshot {repo}/{name}: {e}"));
    if source
        .get_snapshot(repo, name)
        .await
        .map_err(err)?
        .is_none()
    {
        tracing::info!(repo, name, "creating snapshot on the source cluster");
        match source.create_snapshot(repo, name, false).await {
            Ok(_) => {}
            // Another worker (or an earlier attempt) may have started it meanwhile.
            Err(e)
                if source
                    .get_snapshot(repo, name)
                    .await
                    .ok()
                    .flatten()
                    .is_some() =>
            {
                tracing::info!("snapshot already started elsewhere ({e})");
            }
            Err(e) => return Err(err(e)),
        }
    }
    loop {
        let info = source.get_snapshot(repo, name).await.map_err(err)?;
        let state = info
            .as_ref()
            .and_then(|i| i.get("state"))
            .and_then(Value::as_str)
            .unwrap_or("MISSING")
            .to_string();
        match state.as_str() {
            "SUCCESS" => {
                return Ok(json!({ "repository": repo, "snapshot": name, "state": state }))
            }
            "IN_PROGRESS" | "STARTED" | "INIT" => tokio::time::sleep(Duration::from_secs(2)).await,
            other => {
                return Err(PhaseError::Other(format!(
                    "snapshot {repo}/{name} ended in state {other}: {}",
                    info.unwrap_or_default()
                )))
            }
        }
    }
}
