//! The item worker: lease a work item, run it through the pipeline, then complete it, hand
//! the rest to a successor, or release it — until no work is left, the fleet is stopped,
//! the process shuts down, or (when not waiting) every remaining item is leased elsewhere.
//! A process runs several of these side by side (`--parallel`), each with its own lease.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use coordination::{
    cursor_display, Acquired, Control, Coordinator, HandOff, ItemFate, Lease, Progress,
};
use tokio::time::Instant;

use crate::error::Severity;
use crate::pipeline::{
    run_item, ItemEnd, ItemLease, ItemPlan, LeaseError, PipelineOptions, WorkerShared,
};
use crate::sink::Sink;
use crate::source::Source;
use crate::transform::Transform;

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
    /// The pause after an item failed, doubled for each further failure in a row (up to
    /// 64 times): a target or source that fails every item is not hammered.
    pub failed_item_pause: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            pipeline: PipelineOptions::default(),
            wait_for_leases: true,
            poll: Duration::from_secs(1),
            max_items: None,
            failed_item_pause: Duration::from_millis(500),
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
    /// The control record said STOP, or the process is shutting down.
    Stopped,
    /// `max_items` items were worked on.
    ItemLimit,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("coordination store")]
    Store(#[from] coordination::Error),
    /// Nothing will work until an operator acts; the item was released, not failed.
    #[error("{0}")]
    Fatal(String),
}

/// The parts of a migration an item worker runs.
pub struct Parts<S, K> {
    pub source: Arc<S>,
    pub transform: Arc<dyn Transform>,
    pub sink: Arc<K>,
}

impl<S, K> Clone for Parts<S, K> {
    fn clone(&self) -> Self {
        Parts {
            source: self.source.clone(),
            transform: self.transform.clone(),
            sink: self.sink.clone(),
        }
    }
}

/// Leases items and runs them until one of the [`WorkerExit`] conditions.
pub async fn run_worker<S: Source, K: Sink>(
    coord: &Coordinator,
    parts: &Parts<S, K>,
    opts: &WorkerOptions,
    shared: &WorkerShared,
) -> Result<WorkerExit, WorkerError> {
    let mut items = 0usize;
    let mut failures_in_a_row = 0u32;
    loop {
        if opts.max_items.is_some_and(|m| items >= m) {
            return Ok(WorkerExit::ItemLimit);
        }
        if shutting_down(shared) {
            return Ok(WorkerExit::Stopped);
        }
        match wait_while_paused(coord, opts.poll, shared).await? {
            Control::Stop => return Ok(WorkerExit::Stopped),
            Control::Run | Control::Pause => {}
        }
        let lease = match with_store_retries(|| coord.acquire()).await? {
            Acquired::Lease(l) => l,
            Acquired::NoWorkLeft => return Ok(WorkerExit::NoWorkLeft),
            Acquired::AllLeasedElsewhere { wait, .. } => {
                // Items held by this process's other item workers end here, or hand off
                // successors this worker can take: only leases of other processes are
                // "elsewhere".
                let siblings_busy = shared.metrics.leases_held.load(Ordering::Relaxed) > 0;
                if !opts.wait_for_leases && !siblings_busy {
                    return Ok(WorkerExit::LeasedElsewhere);
                }
                let most = if siblings_busy {
                    opts.poll.min(Duration::from_millis(250))
                } else {
                    opts.poll
                };
                sleep_unless_shutdown(wait.clamp(Duration::from_millis(50), most), shared).await;
                continue;
            }
        };
        items += 1;
        match work_on(coord, lease, parts, opts, shared).await {
            Outcome::Stopped => return Ok(WorkerExit::Stopped),
            Outcome::Fatal(e) => return Err(WorkerError::Fatal(e)),
            // A failed item is followed by a growing pause, so a target that is down does
            // not burn every item's attempts in a few seconds.
            Outcome::Failed => {
                failures_in_a_row += 1;
                let pause = opts.failed_item_pause * (1u32 << failures_in_a_row.min(6));
                tracing::info!("pausing {pause:?} after a failed item");
                sleep_unless_shutdown(pause, shared).await;
            }
            Outcome::Continue => failures_in_a_row = 0,
        }
    }
}

fn shutting_down(shared: &WorkerShared) -> bool {
    *shared.shutdown.borrow()
}

pub(crate) async fn sleep_unless_shutdown(d: Duration, shared: &WorkerShared) {
    let mut rx = shared.shutdown.clone();
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = rx.wait_for(|stop| *stop) => {}
    }
}

/// Returns the control value once it is not PAUSE (or STOP when the process shuts down).
async fn wait_while_paused(
    coord: &Coordinator,
    poll: Duration,
    shared: &WorkerShared,
) -> Result<Control, WorkerError> {
    let mut said = false;
    loop {
        if shutting_down(shared) {
            return Ok(Control::Stop);
        }
        let c = with_store_retries(|| coord.control()).await?;
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
        sleep_unless_shutdown(poll, shared).await;
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Continue,
    Failed,
    Stopped,
    Fatal(String),
}

/// Runs one leased item to one of its ends and records that end in the store.
async fn work_on<S: Source, K: Sink>(
    coord: &Coordinator,
    mut lease: Lease,
    parts: &Parts<S, K>,
    opts: &WorkerOptions,
    shared: &WorkerShared,
) -> Outcome {
    let item = lease.item();
    let base = lease.progress();
    let metrics = &shared.metrics;
    metrics
        .lease_expiry_seconds
        .store(lease.expires_at_ms() / 1000, Ordering::Relaxed);
    metrics.leases_held.fetch_add(1, Ordering::Relaxed);
    tracing::info!(
        item = lease.id(),
        after = %cursor_display(&base.cursor),
        lease = ?lease.duration(),
        store_lease = ?lease.store_lease(),
        attempt = lease.attempts(),
        "working on item"
    );
    let started = Instant::now();
    let trigger = Instant::from_std(lease.early_trigger());
    let deadline = Instant::from_std(lease.deadline());
    let lease_len = lease.duration();
    let report = {
        let mut port = CoordLease {
            lease: &mut lease,
            coord,
            metrics,
        };
        let plan = ItemPlan {
            item,
            base,
            trigger,
            deadline,
        };
        run_item(
            parts.source.clone(),
            parts.transform.clone(),
            parts.sink.clone(),
            &mut port,
            plan,
            &opts.pipeline,
            shared,
        )
        .await
    };
    if metrics.leases_held.fetch_sub(1, Ordering::Relaxed) == 1 {
        metrics.lease_expiry_seconds.store(0, Ordering::Relaxed);
    }
    let done = report.progress;
    let id = lease.id().to_string();
    let elapsed = started.elapsed();
    match report.end {
        ItemEnd::Finished => {
            // Make sure the store answers (it may be restarting) before the one-shot completion.
            if checkpoint_with_retries(&mut lease, &done).await.is_ok() {
                match lease.complete(&done).await {
                    Ok(()) => {
                        metrics.items_completed.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(item = %id, docs = done.docs, refused = done.refused, skipped = done.skipped, ?elapsed, "item complete");
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
            if checkpoint_with_retries(&mut lease, &done).await.is_ok() {
                match lease.hand_off(&done, fraction).await {
                    Ok(HandOff::Successor(s)) => {
                        metrics.items_handed_off.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(item = %id, successor = %s, cursor = %cursor_display(&done.cursor), "handed off to a successor");
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
            release_at_checkpoint(lease, &done).await;
            tracing::info!(item = %id, cursor = %cursor_display(&done.cursor), "{} at a checkpoint", if stopped { "stopped" } else { "paused" });
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
        ItemEnd::Failed(e) if e.severity == Severity::Fatal => {
            tracing::error!(item = %id, cursor = %cursor_display(&done.cursor), "{e}");
            // Not the item's fault: give it back untouched by an attempt count.
            release_at_checkpoint(lease, &done).await;
            Outcome::Fatal(e.to_string())
        }
        ItemEnd::Failed(e) if e.severity == Severity::Permanent => {
            tracing::error!(item = %id, cursor = %cursor_display(&done.cursor), "item FAILED without retry (a retry cannot succeed): {e}");
            let _ = checkpoint_with_retries(&mut lease, &done).await;
            if let Err(err) = lease.fail_permanently(&e.to_string()).await {
                tracing::warn!(item = %id, "could not record the failure ({err})");
            }
            // Says nothing about the target or the store: no pause before the next item.
            Outcome::Continue
        }
        ItemEnd::Failed(e) => {
            tracing::error!(item = %id, cursor = %cursor_display(&done.cursor), "item failed: {e}");
            let _ = checkpoint_with_retries(&mut lease, &done).await;
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

async fn release_at_checkpoint(mut lease: Lease, done: &Progress) {
    let id = lease.id().to_string();
    if checkpoint_with_retries(&mut lease, done).await.is_ok() {
        if let Err(e) = lease.release().await {
            tracing::warn!(item = %id, "release failed ({e}); the lease will expire");
        }
    }
}

/// Checkpoints, retrying for up to a minute while the store is unreachable.
async fn checkpoint_with_retries(
    lease: &mut Lease,
    p: &Progress,
) -> Result<(), coordination::Error> {
    let start = Instant::now();
    let mut wait = Duration::from_millis(100);
    let mut said_at: Option<Instant> = None;
    loop {
        match lease.checkpoint(p).await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_transient() && start.elapsed() < Duration::from_secs(60) => {
                if said_at.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                    tracing::warn!(
                        item = lease.id(),
                        "checkpoint failed for {:.0?}, retrying: {e}",
                        start.elapsed()
                    );
                    said_at = Some(Instant::now());
                }
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

/// Runs a store call, retrying transient errors for up to two minutes (a store restart),
/// with waits from 100 ms doubling to 5 s, each jittered so that a fleet does not come back
/// in step.
pub async fn with_store_retries<T, F, Fut>(f: F) -> Result<T, coordination::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, coordination::Error>>,
{
    use backon::Retryable;
    const PATIENCE: Duration = Duration::from_secs(120);
    let policy = pacing::RetryPolicy {
        max_attempts: u32::MAX,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(5),
        ..pacing::RetryPolicy::default()
    };
    let start = Instant::now();
    let mut said_at: Option<Instant> = None;
    f.retry(policy.waits())
        .when(|e: &coordination::Error| e.is_transient() && start.elapsed() < PATIENCE)
        .notify(|e, _| {
            if said_at.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                tracing::warn!(
                    "coordination store unavailable for {:.0?}, retrying: {e}",
                    start.elapsed()
                );
                said_at = Some(Instant::now());
            }
        })
        .await
}

/// The pipeline's view of a coordination lease.
struct CoordLease<'a> {
    lease: &'a mut Lease,
    coord: &'a Coordinator,
    metrics: &'a crate::metrics::Metrics,
}

pub(crate) fn lease_error(e: coordination::Error) -> LeaseError {
    match e {
        coordination::Error::LeaseLost { .. } => LeaseError::Lost(e.to_string()),
        other => LeaseError::Unavailable(other.to_string()),
    }
}

impl ItemLease for CoordLease<'_> {
    async fn checkpoint(&mut self, progress: &Progress) -> Result<(), LeaseError> {
        self.lease.checkpoint(progress).await.map_err(lease_error)
    }

    async fn control(&mut self) -> Result<Control, LeaseError> {
        self.coord.control().await.map_err(lease_error)
    }

    fn renew_every(&self) -> Option<Duration> {
        self.lease.renew_every()
    }

    async fn renew(&mut self) -> Result<(), LeaseError> {
        self.lease.renew().await.map_err(lease_error)?;
        self.metrics
            .lease_expiry_seconds
            .store(self.lease.expires_at_ms() / 1000, Ordering::Relaxed);
        self.metrics.lease_renewals.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn deadline(&self) -> Option<Instant> {
        Some(Instant::from_std(self.lease.deadline()))
    }
}
