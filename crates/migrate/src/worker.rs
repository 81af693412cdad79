//! The document worker: lease a work item, run it through the pipeline, then complete it,
//! hand the rest to a successor, or release it — until no work is left, the fleet is
//! stopped, or (when not waiting) every remaining item is leased elsewhere.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use coordination::{Acquired, Coordinator, HandOff, ItemFate, Lease};
use tokio::time::Instant;

use crate::cursor::Progress;
use crate::metrics::Metrics;
use crate::pipeline::{
    run_item, Control, ItemEnd, ItemLease, ItemPlan, LeaseError, PipelineOptions,
};
use crate::ports::{DocRange, DocumentSink, DocumentSource};

/// How a worker behaves around the pipeline.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub pipeline: PipelineOptions,
    /// When every open item is leased elsewhere: wait for one to come free (`rfs run`) or
    /// return [`WorkerExit::LeasedElsewhere`] (`rfs documents` without `--wait`).
    pub wait_for_leases: bool,
    /// How often to look at the control record while paused, and at the store while waiting.
    pub poll: Duration,
    /// Stop after this many items (tests); `None`: no limit.
    pub max_items: Option<usize>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            pipeline: PipelineOptions::default(),
            wait_for_leases: true,
            poll: Duration::from_secs(1),
            max_items: None,
        }
    }
}

/// Why the worker loop returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    /// Every item is complete or FAILED.
    NoWorkLeft,
    /// Work remains, but every remaining item is leased by another worker.
    LeasedElsewhere,
    /// The control record said STOP.
    Stopped,
    /// `max_items` items were worked on.
    ItemLimit,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("coordination store: {0}")]
    Store(#[from] coordination::Error),
}

/// Leases items and runs them until one of the [`WorkerExit`] conditions.
pub async fn run_worker<S, K>(
    coord: &Coordinator,
    source: Arc<S>,
    sink: Arc<K>,
    opts: &WorkerOptions,
    metrics: &Metrics,
) -> Result<WorkerExit, WorkerError>
where
    S: DocumentSource,
    K: DocumentSink<Doc = S::Doc>,
{
    let mut items = 0usize;
    let mut failures_in_a_row = 0u32;
    loop {
        if opts.max_items.is_some_and(|m| items >= m) {
            return Ok(WorkerExit::ItemLimit);
        }
        match wait_while_paused(coord, opts.poll).await? {
            Control::Stop => return Ok(WorkerExit::Stopped),
            Control::Run | Control::Pause => {}
        }
        let lease = match with_store_retries(|| coord.acquire()).await? {
            Acquired::Lease(l) => l,
            Acquired::NoWorkLeft => return Ok(WorkerExit::NoWorkLeft),
            Acquired::AllLeasedElsewhere { wait, .. } => {
                if !opts.wait_for_leases {
                    return Ok(WorkerExit::LeasedElsewhere);
                }
                tokio::time::sleep(wait.clamp(Duration::from_millis(50), opts.poll)).await;
                continue;
            }
        };
        items += 1;
        let outcome = work_on(coord, lease, source.clone(), sink.clone(), opts, metrics).await;
        if outcome == Outcome::Stopped {
            return Ok(WorkerExit::Stopped);
        }
        // A failed item (source or sink error) is followed by a growing pause, so a target
        // that is down does not burn every item's attempts in a few seconds.
        if outcome == Outcome::Failed {
            failures_in_a_row += 1;
            let pause = Duration::from_millis(500u64 << failures_in_a_row.min(6));
            tracing::info!("pausing {pause:?} after a failed item");
            tokio::time::sleep(pause).await;
        } else {
            failures_in_a_row = 0;
        }
    }
}

/// Returns the control value once it is not PAUSE.
async fn wait_while_paused(coord: &Coordinator, poll: Duration) -> Result<Control, WorkerError> {
    let mut said = false;
    loop {
        let c = to_control(with_store_retries(|| coord.control()).await?);
        if c != Control::Pause {
            if said {
                tracing::info!("resumed");
            }
            return Ok(c);
        }
        if !said {
            tracing::info!("paused by the control record; waiting for resume");
            said = true;
        }
        tokio::time::sleep(poll).await;
    }
}

fn to_control(c: coordination::Control) -> Control {
    match c {
        coordination::Control::Run => Control::Run,
        coordination::Control::Pause => Control::Pause,
        coordination::Control::Stop => Control::Stop,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Continue,
    Failed,
    Stopped,
}

/// Runs one leased item to one of its ends and records that end in the store.
async fn work_on<S, K>(
    coord: &Coordinator,
    mut lease: Lease,
    source: Arc<S>,
    sink: Arc<K>,
    opts: &WorkerOptions,
    metrics: &Metrics,
) -> Outcome
where
    S: DocumentSource,
    K: DocumentSink<Doc = S::Doc>,
{
    let item = lease.item();
    let base = lease.progress();
    let range = DocRange {
        index: item.index.clone(),
        shard: item.shard,
        from: item.from_doc,
        to: item.to_doc,
    };
    let resume = (base.cursor > item.from_doc).then(|| base.cursor - 1);
    metrics
        .lease_expiry_seconds
        .store(lease.expires_at_ms() / 1000, Ordering::Relaxed);
    tracing::info!(
        item = lease.id(),
        resume_at = base.cursor,
        lease = ?lease.duration(),
        attempt = lease.attempts(),
        "working on item"
    );
    let started = Instant::now();
    let trigger = Instant::from_std(lease.early_trigger());
    let lease_len = lease.duration();
    let report = {
        let mut port = CoordLease {
            lease: &mut lease,
            coord,
            base,
            from: item.from_doc,
        };
        let plan = ItemPlan {
            range,
            resume_cursor: resume,
            trigger,
        };
        run_item(source, sink, &mut port, plan, &opts.pipeline, metrics).await
    };
    metrics.lease_expiry_seconds.store(0, Ordering::Relaxed);
    let done = to_coord(report.progress, base, item.from_doc);
    let id = lease.id().to_string();
    let elapsed = started.elapsed();
    match report.end {
        ItemEnd::Finished => {
            // Make sure the store answers (it may be restarting) before the one-shot completion.
            if checkpoint_with_retries(&mut lease, done).await.is_ok() {
                match lease.complete(done).await {
                    Ok(()) => {
                        metrics.items_completed.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(item = %id, docs = done.docs, ?elapsed, "item complete");
                    }
                    Err(e) => {
                        tracing::warn!(item = %id, "could not mark the item complete ({e}); it will be redone from its last checkpoint")
                    }
                }
            }
            Outcome::Continue
        }
        ItemEnd::Triggered => {
            let setup = report.first_batch_after.unwrap_or(elapsed);
            let fraction = setup.as_secs_f64() / lease_len.as_secs_f64().max(0.001);
            if checkpoint_with_retries(&mut lease, done).await.is_ok() {
                match lease.hand_off(done, fraction).await {
                    Ok(HandOff::Successor(s)) => {
                        metrics.items_handed_off.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(item = %id, successor = %s, cursor = done.cursor, "handed off to a successor");
                    }
                    Ok(HandOff::Completed) => {
                        metrics.items_completed.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(item = %id, "item complete at the trigger");
                    }
                    Ok(HandOff::Released) => {
                        tracing::info!(item = %id, "no progress before the trigger; released")
                    }
                    Err(e) => {
                        tracing::warn!(item = %id, "hand-off failed ({e}); the lease will expire")
                    }
                }
            }
            Outcome::Continue
        }
        ItemEnd::Paused | ItemEnd::Stopped => {
            let stopped = matches!(report.end, ItemEnd::Stopped);
            if checkpoint_with_retries(&mut lease, done).await.is_ok() {
                if let Err(e) = lease.release().await {
                    tracing::warn!(item = %id, "release failed ({e}); the lease will expire");
                }
            }
            tracing::info!(item = %id, cursor = done.cursor, "{} at a checkpoint", if stopped { "stopped" } else { "paused" });
            if stopped {
                Outcome::Stopped
            } else {
                Outcome::Continue
            }
        }
        ItemEnd::LeaseLost(e) => {
            tracing::warn!(item = %id, "lease lost ({e}); moving on");
            Outcome::Continue
        }
        ItemEnd::Failed(e) => {
            tracing::error!(item = %id, cursor = done.cursor, "item failed: {e}");
            let _ = checkpoint_with_retries(&mut lease, done).await;
            match lease.fail(&e.to_string()).await {
                Ok(ItemFate::Failed) => {
                    tracing::error!(item = %id, "item FAILED: no attempts left")
                }
                Ok(ItemFate::WillRetry) => {}
                Err(err) => tracing::warn!(item = %id, "could not record the failure ({err})"),
            }
            Outcome::Failed
        }
    }
}

/// The item's progress in the store's terms: the cursor is where to resume (one past the
/// last acknowledged doc) and the counts are totals over every holder.
fn to_coord(p: Progress, base: coordination::Progress, from: u64) -> coordination::Progress {
    coordination::Progress {
        cursor: p.cursor.map_or(base.cursor.max(from), |c| c + 1),
        docs: base.docs + p.docs,
        bytes: base.bytes + p.bytes,
        failed: base.failed + p.failed,
    }
}

/// Checkpoints, retrying for up to a minute while the store is unreachable.
async fn checkpoint_with_retries(
    lease: &mut Lease,
    p: coordination::Progress,
) -> Result<(), coordination::Error> {
    let start = Instant::now();
    let mut wait = Duration::from_millis(100);
    loop {
        match lease.checkpoint(p).await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_transient() && start.elapsed() < Duration::from_secs(60) => {
                tracing::warn!("checkpoint failed, retrying: {e}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            Err(e) => {
                tracing::warn!(item = lease.id(), "checkpoint failed: {e}");
                return Err(e);
            }
        }
    }
}

/// Runs a store call, retrying transient errors for up to two minutes (a store restart).
pub async fn with_store_retries<T, F, Fut>(mut f: F) -> Result<T, coordination::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, coordination::Error>>,
{
    let start = Instant::now();
    let mut wait = Duration::from_millis(100);
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if e.is_transient() && start.elapsed() < Duration::from_secs(120) => {
                tracing::warn!("coordination store unavailable, retrying: {e}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The pipeline's view of a coordination lease.
struct CoordLease<'a> {
    lease: &'a mut Lease,
    coord: &'a Coordinator,
    base: coordination::Progress,
    from: u64,
}

fn lease_error(e: coordination::Error) -> LeaseError {
    match e {
        coordination::Error::LeaseLost { .. } => LeaseError::Lost(e.to_string()),
        other => LeaseError::Unavailable(other.to_string()),
    }
}

impl ItemLease for CoordLease<'_> {
    async fn checkpoint(&mut self, progress: Progress) -> Result<(), LeaseError> {
        let p = to_coord(progress, self.base, self.from);
        self.lease.checkpoint(p).await.map_err(lease_error)
    }

    async fn control(&mut self) -> Result<Control, LeaseError> {
        self.coord
            .control()
            .await
            .map(to_control)
            .map_err(lease_error)
    }
}
