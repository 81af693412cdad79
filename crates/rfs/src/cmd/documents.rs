//! `rfs documents`: a document worker. Creates the work items if no worker has yet, then
//! leases items and streams their documents into the target until none is left, with
//! `--parallel` items at once. Every worker (here and in `rfs run`) also takes turns as the
//! keeper, so the last one to finish marks the migration finished.

use super::engine::{
    finish, open_snapshot, open_target_sink, opened, removed_indices_phase, report_removed,
    run_job, shutdown_signal, JobSpec, Role, Watch,
};
use crate::args::{FilterArgs, SinceArgs, SourceArgs, StoreArgs, TargetArgs, WorkerArgs};
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
    /// When every remaining item is leased by other workers, wait for one to come free
    /// instead of exiting with code 4.
    #[arg(long, env = "RFS_WAIT")]
    pub wait: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let shutdown = shutdown_signal();
        let m = open_snapshot(
            &args.source,
            &args.filter,
            Some(&args.worker),
            args.since.since.as_deref(),
        )
        .await?;
        report_removed(&m.removed, args.delete_removed_indices);
        let source = opened(m.source, "snapshot");
        let (sink, client) = open_target_sink(&args.target, args.worker.context(), &source).await?;
        let mut job = JobSpec::new(
            source.source,
            m.transform,
            sink,
            args.store.open_beside(&args.target).await?,
            args.worker.failure_log()?,
            args.worker.job_options(args.wait),
        );
        if args.delete_removed_indices && !m.removed.is_empty() {
            job = job.phase(
                engine::phases::PHASE_REMOVED_INDICES,
                removed_indices_phase(client, m.removed.clone()),
            );
        }
        tracing::info!(store = %args.store.redacted(), "worker ready");
        let report = run_job(job, Watch::of(&args.worker, shutdown)).await?;
        finish(&report, Role::Documents)
    })
}
