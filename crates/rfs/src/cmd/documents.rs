//! `rfs documents`: a document worker. Creates the work items if no worker has yet, then
//! leases items and streams their documents into the target until none is left. Every
//! worker (here and in `rfs run`) also takes turns as the keeper, so the last one to finish
//! marks the migration finished.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use coordination::KeeperStep;
use migrate::adapters::{BulkSink, SnapshotSource};
use migrate::phases::{items_phase, Totals};
use migrate::{Metrics, WorkerExit};

use super::common::{runtime, FilterArgs, Progress, SourceArgs, StoreArgs, TargetArgs, WorkerArgs};
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
    /// When every remaining item is leased by other workers, wait for one to come free
    /// instead of exiting with code 4.
    #[arg(long, env = "RFS_WAIT")]
    pub wait: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let ctx = WorkerContext::open(
            &args.source,
            &args.target,
            &args.store,
            &args.filter,
            &args.worker,
        )
        .await?;
        let totals = ctx.items().await?;
        let end = ctx.work(&totals, args.wait).await?;
        Ok(match end {
            WorkEnd::Finished(status) => {
                ctx.report_finished(&status)?;
                if ctx.metrics.batches_sent.load(Relaxed) == 0 {
                    exit::NO_WORK_LEFT
                } else {
                    exit::OK
                }
            }
            WorkEnd::Left(WorkerExit::LeasedElsewhere) => exit::LEASED_ELSEWHERE,
            WorkEnd::Left(WorkerExit::Stopped) => exit::STOPPED,
            WorkEnd::Left(_) => exit::OK,
        })
    })
}

/// How a worker's loop ended.
#[derive(Debug)]
pub enum WorkEnd {
    /// No work was left: every item is complete or FAILED and the migration is marked
    /// finished; the fleet's final status.
    Finished(Box<coordination::Status>),
    /// The worker left with work remaining elsewhere (leased by others, stopped, item limit).
    Left(WorkerExit),
}

/// Everything a worker needs, opened once.
pub struct WorkerContext {
    pub snapshot: snapshot::Snapshot,
    pub source_metadata: migrate::metadata::SourceMetadata,
    pub routing: migrate::metadata::DocumentRouting,
    pub client: cluster::Client,
    pub coord: coordination::Coordinator,
    pub metrics: Arc<Metrics>,
    pub worker: WorkerArgs,
    pub filter: FilterArgs,
}

impl WorkerContext {
    pub async fn open(
        source: &SourceArgs,
        target: &TargetArgs,
        store: &StoreArgs,
        filter: &FilterArgs,
        worker: &WorkerArgs,
    ) -> anyhow::Result<WorkerContext> {
        let (snapshot, source_metadata, routing) = {
            let (source, filter) = (source.clone(), filter.clone());
            tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let snap = source.open()?;
                let (md, routing) = filter.routing(&snap)?;
                Ok((snap, md, routing))
            })
            .await
            .context("opening the snapshot")??
        };
        let client = target.connect().await?;
        let coord = store.coordinator(worker.coordination_config()).await?;
        tracing::info!(worker = %coord.worker_id(), store = %store.redacted(), "worker ready");
        let metrics = Metrics::new();
        worker.serve_metrics(&metrics);
        Ok(WorkerContext {
            snapshot,
            source_metadata,
            routing,
            client,
            coord,
            metrics,
            worker: worker.clone(),
            filter: filter.clone(),
        })
    }

    /// The items phase (once for the fleet).
    pub async fn items(&self) -> anyhow::Result<Totals> {
        Ok(items_phase(
            &self.coord,
            &self.snapshot,
            &self.routing,
            Some(self.worker.split_docs),
        )
        .await?)
    }

    /// The document worker loop, with the keeper alongside it. When no work is left, waits
    /// until the migration is marked finished (by this worker or the current keeper).
    pub async fn work(&self, totals: &Totals, wait: bool) -> anyhow::Result<WorkEnd> {
        let source = Arc::new(SnapshotSource::new(
            self.snapshot.clone(),
            self.routing.clone(),
        ));
        let sink = Arc::new(BulkSink(self.worker.sender(self.client.clone())?));
        let bar = Progress::start(
            !self.worker.no_progress,
            totals.live_docs,
            self.metrics.clone(),
        );
        let keeper = self.spawn_keeper();
        let opts = self.worker.worker_options(wait);
        let result = migrate::run_worker(&self.coord, source, sink, &opts, &self.metrics).await;
        keeper.abort();
        if let Some(b) = bar {
            b.finish();
        }
        let m = &self.metrics;
        tracing::info!(
            docs = m.docs_sent.load(Relaxed),
            failed = m.docs_failed.load(Relaxed),
            bytes = m.bytes_sent.load(Relaxed),
            source_bytes = m.source_bytes_sent.load(Relaxed),
            items_completed = m.items_completed.load(Relaxed),
            items_handed_off = m.items_handed_off.load(Relaxed),
            "worker finished: {result:?}"
        );
        match result {
            Ok(WorkerExit::NoWorkLeft) => Ok(WorkEnd::Finished(Box::new(self.finish().await?))),
            Ok(other) => {
                // Let another worker take the keeper role at once rather than at expiry.
                if let Err(e) = self.coord.resign_keeper().await {
                    tracing::debug!("resigning as keeper: {e}");
                }
                Ok(WorkEnd::Left(other))
            }
            Err(e) => {
                let _ = self.coord.resign_keeper().await;
                Err(e.into())
            }
        }
    }

    /// The keeper loop: every worker tries, one at a time holds the role, writes the
    /// progress summary and marks the end.
    fn spawn_keeper(&self) -> tokio::task::JoinHandle<()> {
        let coord = self.coord.clone();
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
    }

    /// Every item is complete or FAILED: make sure the migration is marked finished and
    /// return the final status.
    async fn finish(&self) -> anyhow::Result<coordination::Status> {
        loop {
            match self.coord.keeper_step().await {
                Ok(KeeperStep::Finished(s)) => return Ok(*s),
                Ok(KeeperStep::Keeping(s)) if s.items.open() == 0 && !s.setup_done => {
                    anyhow::bail!("no work item is open but the items phase is not done")
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                Err(e) if e.is_transient() => tokio::time::sleep(Duration::from_secs(1)).await,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Prints the FAILED items (and fails) or the one-line summary of a finished migration.
    pub fn report_finished(&self, status: &coordination::Status) -> anyhow::Result<()> {
        if !status.failures.is_empty() {
            for f in &status.failures {
                crate::say!(
                    "FAILED {} (index {}, shard {}): {}",
                    f.id,
                    f.index,
                    f.shard,
                    f.last_error
                );
            }
            anyhow::bail!(
                "{} work item(s) FAILED; see above and `rfs status`",
                status.failures.len()
            );
        }
        crate::say!(
            "migration finished: {} documents in {} work items ({} by this worker)",
            status.docs_done,
            status.items.done,
            self.metrics.docs_sent.load(Relaxed)
        );
        if status.docs_failed > 0 {
            crate::say!(
                "{} of those documents were refused by the target: see the workers' failure logs",
                status.docs_failed
            );
        }
        Ok(())
    }
}
