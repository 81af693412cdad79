//! The phases of a migration, each guarded by a phase record in the coordination store so
//! that identical `rfs run` processes cooperate: one does the phase, the others wait for
//! it. Snapshot creation (optional, before the snapshot can be read), metadata (templates,
//! then indices), the work items (planned by the source), documents.

use std::time::Duration;

use coordination::{Coordinator, PhaseClaim};
use serde_json::{json, Value};

use crate::source::Totals;
use crate::worker::with_store_retries;

pub const PHASE_SNAPSHOT: &str = "snapshot";
pub const PHASE_METADATA: &str = "metadata";
pub const PHASE_ITEMS: &str = "items";
/// A delta with `--delete-removed-indices`: the target indices of indices deleted since the
/// earlier snapshot are deleted.
pub const PHASE_REMOVED_INDICES: &str = "removed-indices";

#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error("coordination store")]
    Store(#[from] coordination::Error),
    #[error(transparent)]
    Source(#[from] crate::error::SourceError),
    #[error("{0}")]
    Other(String),
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
                    // the store keeps the whole chain: the cause is not in `e`'s own text
                    let reason = redact::chain(&e);
                    if let Err(e2) = coord.fail_phase(name, &reason).await {
                        tracing::warn!(phase = name, "could not record the phase failure: {e2}");
                    }
                    Err(e)
                }
            }
        }
    }
}

/// The totals written by the items phase, if it is done (read-only; for `rfs status`).
pub async fn read_totals(coord: &Coordinator) -> Result<Option<Totals>, PhaseError> {
    let id = format!("phase:{PHASE_ITEMS}");
    let rec = with_store_retries(|| coord.store().get(&id)).await?;
    Ok(rec
        .filter(|(r, _)| r.state == coordination::RecordState::Done)
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
