//! `rfs run`: the whole migration, every phase guarded by the coordination store, so N
//! copies of the same command (on one machine or many) complete one migration together:
//! optional snapshot creation on a source cluster, metadata (templates, then indices),
//! work items, documents; one worker at a time is the keeper that marks the end.

use std::time::Duration;

use anyhow::Context as _;
use coordination::KeeperStep;
use migrate::phases::{create_snapshot, guarded_phase, PhaseError, PHASE_METADATA, PHASE_SNAPSHOT};
use migrate::WorkerExit;
use serde_json::json;

use super::common::{runtime, FilterArgs, SourceArgs, StoreArgs, TargetArgs, WorkerArgs};
use super::documents::WorkerContext;
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
    /// Source cluster URL: take the snapshot there first (phase "snapshot"), in the
    /// repository named by --source-repository, under the name given by --snapshot.
    #[arg(
        long,
        env = "RFS_SOURCE_CLUSTER",
        value_name = "URL",
        requires = "source_repository"
    )]
    pub source_cluster: Option<String>,
    /// Name of the snapshot repository registered on the source cluster.
    #[arg(long, env = "RFS_SOURCE_REPOSITORY", value_name = "NAME")]
    pub source_repository: Option<String>,
    /// Skip the metadata phase (templates and indices exist already).
    #[arg(long, env = "RFS_SKIP_METADATA")]
    pub skip_metadata: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(run_async(args))
}

async fn run_async(args: Args) -> anyhow::Result<u8> {
    // Phase "snapshot" runs before the snapshot can be opened.
    if let (Some(url), Some(repo)) = (&args.source_cluster, &args.source_repository) {
        let coord = args
            .store
            .coordinator(args.worker.coordination_config())
            .await?;
        let source = cluster::Client::connect(cluster::ClientConfig::new(url.clone()))
            .await
            .with_context(|| format!("connecting to the source cluster {url}"))?;
        let name = args.source.snapshot.clone();
        guarded_phase(&coord, PHASE_SNAPSHOT, || async {
            create_snapshot(&source, repo, &name).await
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
            eprintln!("{}", report.to_table());
            if report.has_errors() {
                tracing::warn!("metadata migration reported errors (see the table); documents of those indices may fail");
            }
            Ok(json!({ "summary": report.to_json() }))
        })
        .await?;
        tracing::debug!("metadata phase: {report}");
    }
    let totals = ctx.items().await?;
    let keeper = {
        let coord = ctx.coord.clone();
        let every = (coord.config().keeper_lease / 3).max(Duration::from_millis(500));
        tokio::spawn(async move {
            loop {
                match coord.keeper_step().await {
                    Ok(KeeperStep::Finished(_)) => return,
                    Ok(_) => {}
                    Err(e) => tracing::debug!("keeper step: {e}"),
                }
                tokio::time::sleep(every).await;
            }
        })
    };
    let exit_kind = ctx.work(&totals, true).await;
    keeper.abort();
    match exit_kind? {
        WorkerExit::Stopped => return Ok(exit::STOPPED),
        WorkerExit::LeasedElsewhere | WorkerExit::ItemLimit => return Ok(exit::LEASED_ELSEWHERE),
        WorkerExit::NoWorkLeft => {}
    }
    // Every item is complete or FAILED: make sure the migration is marked finished.
    let status = loop {
        match ctx.coord.keeper_step().await {
            Ok(KeeperStep::Finished(s)) | Ok(KeeperStep::Keeping(s)) if s.items.open() == 0 => {
                break *s
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) if e.is_transient() => tokio::time::sleep(Duration::from_secs(1)).await,
            Err(e) => return Err(e.into()),
        }
    };
    if !status.failures.is_empty() {
        for f in &status.failures {
            eprintln!(
                "FAILED {} (index {}, shard {}): {}",
                f.id, f.index, f.shard, f.last_error
            );
        }
        anyhow::bail!(
            "{} work item(s) FAILED; see above and `rfs status`",
            status.failures.len()
        );
    }
    eprintln!(
        "migration finished: {} documents in {} work items ({} by this worker)",
        status.docs_done,
        status.items.done,
        ctx.metrics
            .docs_sent
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    Ok(exit::OK)
}

async fn stopped(ctx: &WorkerContext) -> anyhow::Result<bool> {
    Ok(ctx.coord.control().await? == coordination::Control::Stop)
}
