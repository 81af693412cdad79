//! `rfs documents`: a document worker. Creates the work items if no worker has yet, then
//! leases items and streams their documents into the target until none is left.

use std::sync::Arc;

use anyhow::Context;
use migrate::adapters::{BulkSink, SnapshotSource};
use migrate::phases::{items_phase, Totals};
use migrate::{Metrics, WorkerExit};

use super::common::{
    progress_bar, runtime, FilterArgs, SourceArgs, StoreArgs, TargetArgs, WorkerArgs,
};
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
        let exit = ctx.work(&totals, args.wait).await?;
        Ok(match exit {
            WorkerExit::NoWorkLeft
                if ctx
                    .metrics
                    .batches_sent
                    .load(std::sync::atomic::Ordering::Relaxed)
                    == 0 =>
            {
                exit::NO_WORK_LEFT
            }
            WorkerExit::NoWorkLeft | WorkerExit::ItemLimit => exit::OK,
            WorkerExit::LeasedElsewhere => exit::LEASED_ELSEWHERE,
            WorkerExit::Stopped => exit::STOPPED,
        })
    })
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
        tracing::info!(worker = %coord.worker_id(), store = %store.store, "worker ready");
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

    /// The document worker loop.
    pub async fn work(&self, totals: &Totals, wait: bool) -> anyhow::Result<WorkerExit> {
        let source = Arc::new(SnapshotSource::new(
            self.snapshot.clone(),
            self.routing.clone(),
        ));
        let sink = Arc::new(BulkSink(self.worker.sender(self.client.clone())?));
        let bar = progress_bar(
            !self.worker.no_progress,
            totals.live_docs,
            self.metrics.clone(),
        );
        let opts = self.worker.worker_options(wait);
        let result = migrate::run_worker(&self.coord, source, sink, &opts, &self.metrics).await;
        if let Some(b) = bar {
            b.abort();
        }
        let m = &self.metrics;
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        tracing::info!(
            docs = load(&m.docs_sent),
            failed = load(&m.docs_failed),
            bytes = load(&m.bytes_sent),
            source_bytes = load(&m.source_bytes_sent),
            items_completed = load(&m.items_completed),
            items_handed_off = load(&m.items_handed_off),
            "worker finished: {result:?}"
        );
        Ok(result?)
    }
}
