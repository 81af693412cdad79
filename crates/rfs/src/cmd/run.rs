//! `rfs run`: the whole migration, every phase guarded by the coordination store, so N
//! copies of the same command (on one machine or many) complete one migration together:
//! optional snapshot creation on a source cluster, metadata (templates, then indices),
//! work items, documents; one worker at a time is the keeper that marks the end.

use migrate::phases::{guarded_phase, PhaseError, PHASE_METADATA, PHASE_SNAPSHOT};
use migrate::WorkerExit;
use serde_json::json;

use super::common::{
    runtime, FilterArgs, SourceArgs, SourceClusterArgs, StoreArgs, TargetArgs, WorkerArgs,
};
use super::documents::{WorkEnd, WorkerContext};
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub worker: WorkerArgs,
    /// With --source-cluster: take the snapshot there first (phase "snapshot"), in the
    /// repository named by --source-repository, under the name given by --snapshot.
    #[command(flatten)]
    pub source_cluster: Box<SourceClusterArgs>,
    /// Skip the metadata phase (templates and indices exist already).
    #[arg(long, env = "RFS_SKIP_METADATA")]
    pub skip_metadata: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(run_async(args))
}

async fn run_async(args: Args) -> anyhow::Result<u8> {
    // Phase "snapshot" runs before the snapshot can be opened; the source cluster is only
    // contacted by the worker that runs it (later workers may start after it is gone).
    if args.source_cluster.is_set() {
        let coord = args
            .store
            .coordinator(args.worker.coordination_config())
            .await?;
        let name = args.source.snapshot.clone();
        guarded_phase(&coord, PHASE_SNAPSHOT, || async {
            args.source_cluster
                .take_snapshot(&name)
                .await
                .map_err(|e| PhaseError::Other(format!("{e:#}")))
        })
        .await?;
    }
    let ctx = WorkerContext::open(
        &args.source,
        &args.target,
        &args.store,
        &args.filter,
        &args.worker,
    )
    .await?;
    if stopped(&ctx).await? {
        return Ok(exit::STOPPED);
    }
    if !args.skip_metadata {
        let report = guarded_phase(&ctx.coord, PHASE_METADATA, || async {
            let options = ctx.filter.options().map_err(|e| PhaseError::Other(e.to_string()))?;
            let report = migrate::metadata::migrate(&ctx.source_metadata, &ctx.client, &options)
                .await
                .map_err(|e| PhaseError::Other(format!("metadata migration: {e}")))?;
            crate::say!("{}", report.to_table());
            if report.has_errors() {
                tracing::warn!("metadata migration reported errors (see the table); documents of those indices may fail");
            }
            Ok(json!({ "summary": report.to_json() }))
        })
        .await?;
        tracing::debug!("metadata phase: {report}");
    }
    let totals = ctx.items().await?;
    match ctx.work(&totals, true).await? {
        WorkEnd::Finished(status) => {
            ctx.report_finished(&status)?;
            Ok(exit::OK)
        }
        WorkEnd::Left(WorkerExit::Stopped) => Ok(exit::STOPPED),
        WorkEnd::Left(_) => Ok(exit::LEASED_ELSEWHERE),
    }
}

async fn stopped(ctx: &WorkerContext) -> anyhow::Result<bool> {
    Ok(ctx.coord.control().await? == coordination::Control::Stop)
}
