//! `rfs run`: the whole migration, every phase guarded by the coordination store, so N
//! copies of the same command (on one machine or many) complete one migration together:
//! optional snapshot creation on a source cluster, metadata (templates, then indices),
//! work items, documents; one worker at a time is the keeper that marks the end.

use connectors::Params;
use engine::phases::{
    guarded_phase, PhaseError, PHASE_METADATA, PHASE_REMOVED_INDICES, PHASE_SNAPSHOT,
};
use engine::worker::with_store_retries;

use super::engine::{
    finish, metadata_phase, open_snapshot, open_target_sink, opened, removed_indices_phase,
    report_removed, run_job, shutdown_signal, JobSpec, Role, Watch,
};
use crate::args::{
    float_in, FilterArgs, SinceArgs, SourceArgs, SourceClusterArgs, StoreArgs, TargetArgs,
    WorkerArgs,
};
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("delta").args(["since", "follow"]).multiple(true)))]
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
    #[command(flatten)]
    pub since: SinceArgs,
    /// With --since (or --follow, for each delta): delete from the target the indices that
    /// the earlier snapshot has and the newer one does not (deleted on the source since);
    /// without it they are only reported.
    #[arg(long, env = "RFS_DELETE_REMOVED_INDICES", requires = "delta")]
    pub delete_removed_indices: bool,
    /// After the migration, follow the repository: each newer SUCCESS snapshot, in the
    /// order they were taken, is applied as a delta since the last applied one (as
    /// --since does), each its own migration in a store beside --store, until `rfs stop`
    /// (exit 5). `rfs status` shows the snapshot applied, its age and what is pending.
    #[arg(long, env = "RFS_FOLLOW")]
    pub follow: bool,
    /// With --follow: seconds between listings of the repository (0.1–86400).
    #[arg(
        long,
        env = "RFS_FOLLOW_EVERY",
        value_name = "SECS",
        default_value_t = 30.0,
        value_parser = float_in(0.1, 86_400.0),
        requires = "follow"
    )]
    pub follow_every: f64,
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
    let shutdown = shutdown_signal();
    let store = args.store.open_beside(&args.target).await?;
    let coord = coordination::Coordinator::new(store.clone(), args.worker.coordination_config());
    // Phase "snapshot" runs before the snapshot can be opened; the source cluster is only
    // contacted by the worker that runs it (later workers may start after it is gone).
    if args.source_cluster.is_set() {
        // The store must be this migration's before anything is done in its name (the
        // job checks again with the same identity once the snapshot can be read).
        let identity = identity(&args)?;
        with_store_retries(|| coord.claim_identity(&identity)).await?;
        let name = args.source.snapshot.clone();
        guarded_phase(&coord, PHASE_SNAPSHOT, || async {
            args.source_cluster
                .take_snapshot(&name)
                .await
                .map_err(|e| PhaseError::Other(format!("{e:#}")))
        })
        .await?;
    }
    // A follow record is written once the first migration is finished: a process that
    // joins (or replaces one) later follows at once, even when --snapshot has since been
    // deleted from the repository by the operator's retention.
    if args.follow && engine::generations::load(store.as_ref()).await?.is_some() {
        let identity = identity(&args)?;
        with_store_retries(|| coord.claim_identity(&identity)).await?;
        return super::run_follow::follow_repository(&args, store, shutdown).await;
    }
    let report = migrate(
        &args,
        &args.source.snapshot,
        args.since.since.as_deref(),
        store.clone(),
        shutdown.clone(),
    )
    .await?;
    let code = finish(&report, Role::Run)?;
    if !args.follow || report.end != engine::JobEnd::Finished {
        return Ok(code);
    }
    super::run_follow::follow_repository(&args, store, shutdown).await
}

/// The migration's identity as the job records it, known before the snapshot is read.
fn identity(args: &Args) -> anyhow::Result<coordination::Identity> {
    Ok(engine::job::with_program(
        engine::job::identity_from(
            crate::hiargs::Parts::default()
                .from({
                    let mut p = Params::new();
                    crate::args::params::put(&mut p, "--snapshot", &args.source.snapshot);
                    crate::args::params::put_some(&mut p, "--since", args.since.since.as_ref());
                    p
                })
                .source_identity_as("snapshot", args.source.repository.location()?)?,
            engine::job::identity_location(&args.target.target),
            args.worker.migration.as_deref(),
        ),
        args.filter.transform.identity()?.as_deref(),
    ))
}

/// The migration of `snapshot` (a delta when `since` is given) into the target, its
/// state in `store`, run to its end in this process.
pub(super) async fn migrate(
    args: &Args,
    snapshot: &str,
    since: Option<&str>,
    store: std::sync::Arc<dyn coordination::Store>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<engine::JobReport> {
    let mut source = args.source.clone();
    source.snapshot = snapshot.to_string();
    let m = open_snapshot(&source, &args.filter, Some(&args.worker), since).await?;
    report_removed(&m.removed, args.delete_removed_indices);
    let source = opened(m.source, "snapshot");
    let (sink, client) = open_target_sink(&args.target, args.worker.context(), &source).await?;
    // A delta removes documents by id, which a target generating ids cannot do; so do the
    // deltas of --follow.
    let delta = match since {
        Some(since) => Some(format!("--since {since}")),
        None => args.follow.then(|| "--follow".to_string()),
    };
    if let (Some(delta), Some(target)) = (delta, client.target()) {
        if args.worker.server_ids().resolve(target) {
            anyhow::bail!(
                "{delta} sends the documents deleted since the earlier snapshot as deletes by \
                 id, and the target generates document ids (--server-generated-ids {}): \
                 nothing could be deleted. Run without it into a fresh index, or with \
                 --server-generated-ids never into a target that takes ids",
                match args.worker.server_generated_ids {
                    crate::args::ServerGeneratedIds::Always => "always",
                    _ => "auto, the target being OpenSearch Serverless",
                }
            );
        }
    }
    let mut job = JobSpec::new(
        source.source,
        m.transform,
        sink,
        store,
        args.worker.failure_log()?,
        args.worker.job_options(true),
    );
    if args.delete_removed_indices && !m.removed.is_empty() {
        job = job.phase(
            PHASE_REMOVED_INDICES,
            removed_indices_phase(client.clone(), m.removed.clone()),
        );
    }
    if !args.skip_metadata {
        job = job.phase(
            PHASE_METADATA,
            metadata_phase(
                m.metadata,
                client,
                args.filter.options()?,
                "create those indices and run with --skip-metadata",
            ),
        );
    }
    run_job(job, Watch::of(&args.worker, shutdown)).await
}
