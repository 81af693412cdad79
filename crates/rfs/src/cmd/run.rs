//! `rfs run`: the whole migration, every phase guarded by the coordination store, so N
//! copies of the same command (on one machine or many) complete one migration together:
//! optional snapshot creation on a source cluster, metadata (templates, then indices),
//! work items, documents; one worker at a time is the keeper that marks the end.

use connectors::{source_identity_as, Settings};
use engine::phases::{
    guarded_phase, PhaseError, PHASE_METADATA, PHASE_REMOVED_INDICES, PHASE_SNAPSHOT,
};
use engine::worker::with_store_retries;

use super::engine::{
    finish, metadata_phase, open_snapshot, open_target_sink, opened, removed_indices_phase,
    report_removed, run_job, shutdown_signal, JobSpec, Role, Watch,
};
use crate::args::{
    FilterArgs, SinceArgs, SourceArgs, SourceClusterArgs, StoreArgs, TargetArgs, WorkerArgs,
};
use crate::runtime::runtime;

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
    #[command(flatten)]
    pub since: SinceArgs,
    /// With --since: delete from the target the indices that the earlier snapshot has and
    /// this one does not (deleted on the source since); without it they are only reported.
    #[arg(long, env = "RFS_DELETE_REMOVED_INDICES", requires = "since")]
    pub delete_removed_indices: bool,
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
    // Phase "snapshot" runs before the snapshot can be opened; the source cluster is only
    // contacted by the worker that runs it (later workers may start after it is gone).
    if args.source_cluster.is_set() {
        let coord =
            coordination::Coordinator::new(store.clone(), args.worker.coordination_config());
        // The store must be this migration's before anything is done in its name (the
        // job checks again with the same identity once the snapshot can be read).
        let identity = engine::job::with_program(
            engine::job::identity_from(
                source_identity_as(
                    "snapshot",
                    args.source.repository.location()?,
                    &Settings {
                        snapshot: Some(args.source.snapshot.clone()),
                        since: args.since.since.clone(),
                        ..Settings::default()
                    },
                )?,
                engine::job::identity_location(&args.target.target),
                args.worker.migration.as_deref(),
            ),
            args.filter.transform.identity()?.as_deref(),
        );
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
    let m = open_snapshot(
        &args.source,
        &args.filter,
        Some(&args.worker),
        args.since.since.as_deref(),
    )
    .await?;
    report_removed(&m.removed, args.delete_removed_indices);
    let source = opened(m.source, "snapshot");
    let (sink, client) =
        open_target_sink(&args.target, args.worker.sink_settings(), &source).await?;
    // A delta removes documents by id, which a target generating ids cannot do.
    if let (Some(since), Some(target)) = (&args.since.since, client.target()) {
        if args.worker.server_ids().resolve(target) {
            anyhow::bail!(
                "--since {since} sends the documents deleted since that snapshot as deletes by \
                 id, and the target generates document ids (--server-generated-ids {}): \
                 nothing could be deleted. Run without --since into a fresh index, or with \
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
    let report = run_job(job, Watch::of(&args.worker, shutdown)).await?;
    finish(&report, Role::Run)
}
