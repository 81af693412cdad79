//! One work item through the pipeline. A blocking reader thread reads the source after
//! the item's cursor, applies the transform and frames documents with the sink's writer;
//! a bounded channel carries the framed batches (each holding its bytes of the process's
//! memory budget) to the sender, which keeps several batches in flight. Acknowledged
//! batches move the low-water mark; the mark is checkpointed periodically; the control
//! record, the shutdown signal and the early trigger are looked at between batches, and
//! in-flight batches always finish before the item is left. Documents that are refused or
//! skipped are written to the failure log when their batch is acknowledged, and counted
//! with the cursor, so the counts in the store stay exact through crashes.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coordination::{Control, Cursor, Position, Progress, WorkItem};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::budget::{Budget, HeldMemory};
use crate::coverage::NESTED_REASON;
use crate::document::{Document, Read, Skip};
use crate::error::{Severity, SinkError, SourceError};
use crate::failure_log::{now_rfc3339, source_value, FailureLog, FailureRecord, Stage};
use crate::fleet_limit::FleetLimiter;
use crate::low_water::{Acked, LowWaterMark};
use crate::metrics::Metrics;
use crate::sink::{Delivered, Refusal, Sink, SinkWriter};
use crate::source::Source;
use crate::transform::{Batched, Shaped, Transform};

/// The lease-holder side of an item while the pipeline runs it.
pub trait ItemLease: Send {
    /// Persists progress into the item, guarded by lease holder.
    fn checkpoint(
        &mut self,
        progress: &Progress,
    ) -> impl Future<Output = Result<(), LeaseError>> + Send;
    /// Reads the fleet's control record.
    fn control(&mut self) -> impl Future<Output = Result<Control, LeaseError>> + Send;
    /// How often to renew the lease (heartbeat); `None`: never (the lease is long enough).
    fn renew_every(&self) -> Option<Duration> {
        None
    }
    /// Pushes the lease's end on by one store lease, guarded by lease holder.
    fn renew(&mut self) -> impl Future<Output = Result<(), LeaseError>> + Send {
        async { Ok(()) }
    }
    /// The lease's end on this clock after the last renewal (`None`: the plan's deadline).
    fn deadline(&self) -> Option<Instant> {
        None
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another worker holds the item now: stop touching it.
    #[error("lease lost: {0}")]
    Lost(String),
    /// The store could not be reached or answered with an error; try again later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

/// Tuning of the pipeline.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    /// Batches framed ahead of the sender, per item.
    pub read_ahead: usize,
    /// Batches in flight per item (the sink's own limiter decides how many requests run).
    pub in_flight: usize,
    pub checkpoint_every: Duration,
    pub control_every: Duration,
    /// A run of skips with nothing to send is acknowledged after this many.
    pub skips_per_chunk: usize,
    /// When stopping (STOP, SIGTERM), how long batches in flight may still take; then they
    /// are abandoned (the cursor stays before them: they are sent again by the next
    /// holder) so that the item is checkpointed and released in bounded time.
    pub stop_grace: Duration,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            read_ahead: 2,
            in_flight: 4,
            checkpoint_every: Duration::from_secs(10),
            control_every: Duration::from_secs(1),
            skips_per_chunk: 1000,
            stop_grace: Duration::from_secs(20),
        }
    }
}

/// What the item workers of one process share.
#[derive(Clone)]
pub struct WorkerShared {
    pub metrics: Arc<Metrics>,
    pub failures: Arc<FailureLog>,
    pub budget: Budget,
    /// Becomes `true` when the process is asked to stop (SIGTERM/SIGINT).
    pub shutdown: watch::Receiver<bool>,
    /// The fleet-wide rate limit, when one is set.
    pub fleet: Option<Arc<FleetLimiter>>,
}

/// Why the pipeline left an item.
#[derive(Debug)]
pub enum ItemEnd {
    /// Every document of the item is delivered, refused or skipped.
    Finished,
    /// The early trigger fired: hand the rest to a successor.
    Triggered,
    Paused,
    /// The control record said STOP, or the process is shutting down.
    Stopped,
    /// The lease was taken over; the item is someone else's now.
    LeaseLost(String),
    /// The source, the sink or the failure log failed; the cursor says how far it got.
    Failed(PipelineError),
}

/// Why an item failed, and whether the worker can go on with other items.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{stage}: {message}")]
pub struct PipelineError {
    pub severity: Severity,
    pub stage: &'static str,
    pub message: String,
}

impl From<SourceError> for PipelineError {
    fn from(e: SourceError) -> Self {
        PipelineError {
            severity: e.severity,
            stage: "reading documents",
            message: redact::chain(&e),
        }
    }
}

impl From<SinkError> for PipelineError {
    fn from(e: SinkError) -> Self {
        PipelineError {
            severity: e.severity,
            stage: "sending documents",
            message: redact::chain(&e),
        }
    }
}

/// How an item run ended and how far it got.
#[derive(Debug)]
pub struct ItemReport {
    pub end: ItemEnd,
    /// The item's progress: the last acknowledged position and the counts, totals over
    /// every holder.
    pub progress: Progress,
    /// Time from the start until the first batch was ready (shard opening and first reads):
    /// the "setup" share of a lease.
    pub first_batch_after: Option<Duration>,
}

/// The part of an item to run now.
#[derive(Debug, Clone)]
pub struct ItemPlan {
    pub item: WorkItem,
    /// Where earlier holders got to: reading resumes strictly after `base.cursor`.
    pub base: Progress,
    /// The early trigger: no batch is started after this instant.
    pub trigger: Instant,
    /// The lease ends: no batch is left in flight after this instant (with a heartbeat,
    /// each renewal moves it on; a worker that cannot renew stops here). Batches still
    /// unacknowledged then are abandoned (the checkpoint stays before them, the next holder
    /// sends them again), so a worker never writes for an item it no longer holds — which
    /// is what makes "paused and no lease held" mean "nothing is written".
    pub deadline: Instant,
}

/// Framed documents with what went along with them, in position order.
struct Chunk<B> {
    batch: Option<B>,
    /// The position of the last input the chunk completes (document, skip or filtered
    /// document); `None` when the chunk holds only the first outputs of an input that
    /// goes on in the next chunk (the cursor stays where it is).
    last: Option<Position>,
    skips: Vec<(Stage, Skip)>,
    /// Documents the transform filtered out, by reason key.
    filtered: BTreeMap<String, u64>,
    /// Documents the sink's writer refused to frame.
    refusals: Vec<Refusal>,
    held: Option<HeldMemory>,
    /// Documents framed into `batch` (what the sink must acknowledge or refuse, one by
    /// one; also what the fleet-wide limit charges).
    docs: u64,
    /// Inputs (documents and skips the source handed over) whose positions this chunk
    /// completes.
    inputs: u64,
    /// Outputs beyond the first of the exploded inputs this chunk completes (an input the
    /// transform turned into `n` documents adds `n - 1`).
    exploded: u64,
    /// Outputs of an input not complete yet (its first outputs, in a batch that filled
    /// before its last one): counted now, with the batch that holds them, so that what the
    /// item covers moves with its counts even when the run ends before the input does.
    ahead: u64,
    /// Of the exploded inputs this chunk completes, the outputs earlier chunks counted as
    /// `ahead`.
    behind: u64,
    /// The source's nested children the read passed over (a snapshot shard's), sent with
    /// the last chunk of a read that reached the item's end: counted as
    /// `nested:children`, not a document of its own, for `rfs status`'s total.
    nested: u64,
}

impl<B> Chunk<B> {
    /// What the item covers with this chunk: inputs + exploded outputs, each output
    /// counted with the chunk that holds it.
    fn covered(&self) -> u64 {
        (self.inputs + self.exploded + self.ahead).saturating_sub(self.behind)
    }
}

type Sent<B> = (u64, Chunk<B>, Result<Delivered, SinkError>);

/// Runs the item from just after its cursor until it is finished, the trigger instant
/// passes, the control record says PAUSE or STOP, the process shuts down, or an error
/// happens.
pub async fn run_item<S, K, L>(
    source: Arc<S>,
    transform: Arc<dyn Transform>,
    sink: Arc<K>,
    lease: &mut L,
    plan: ItemPlan,
    opts: &PipelineOptions,
    shared: &WorkerShared,
) -> ItemReport
where
    S: Source,
    K: Sink,
    L: ItemLease,
{
    let ItemPlan {
        item,
        mut base,
        trigger,
        mut deadline,
    } = plan;
    let renew_every = lease.renew_every();
    if let Some(d) = lease.deadline() {
        deadline = d;
    }
    let metrics = &shared.metrics;
    // A target that stores a resent document twice: what is sent beyond the cursor is
    // recorded in the item before it is sent, and what an earlier holder sent beyond it
    // goes again from the cursor now, counted as possible duplicates.
    let resends = sink.resends_duplicate();
    let resent = base.count_resent();
    if resent > 0 {
        metrics
            .possible_duplicates
            .fetch_add(resent, Ordering::Relaxed);
        tracing::warn!(
            item = %item.id(),
            possible_duplicates = resent,
            "item {}: {resent} document(s) an earlier holder sent beyond the checkpoint are sent again: counted as possible duplicates (the target writes without ids; `rfs verify --server-generated-ids` counts them exactly)",
            item.id()
        );
    }
    let (tx, mut rx) =
        mpsc::channel::<Result<Chunk<Batch<K>>, SourceError>>(opts.read_ahead.max(1));
    let halt = Arc::new(AtomicBool::new(false));
    let reader = {
        let halt = halt.clone();
        let writer = sink.writer();
        let (item, after) = (item.clone(), base.cursor.clone());
        let (budget, skips_per_chunk) = (shared.budget.clone(), opts.skips_per_chunk.max(1));
        tokio::task::spawn_blocking(move || {
            // A panic on this thread (a reader or transform bug, whatever the input) must
            // fail the item: were the channel just dropped, the loop below would take it
            // for the end of the source and finish the item with documents unread.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let r = ReaderThread {
                    transform: &*transform,
                    writer,
                    tx: &tx,
                    halt: &halt,
                    budget: &budget,
                    skips_per_chunk,
                };
                r.run(&*source, &item, &after)
            }));
            if let Err(panic) = ran {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                let _ = tx.blocking_send(Err(SourceError::item(format!(
                    "the document reader of item {} stopped on a bug (panic: {what})",
                    item.id()
                ))));
            }
        })
    };

    let start = base.clone();
    let mut mark = LowWaterMark::new(base);
    // Documents framed into the batches sent in this run (with `mark.sent_to_cursor()`:
    // how many are beyond the cursor).
    let mut dispatched = 0u64;
    let current = |mark: &LowWaterMark, dispatched: u64| -> Progress {
        let mut p = mark.progress().clone();
        if resends {
            p.sent_ahead = dispatched.saturating_sub(mark.sent_to_cursor());
        }
        p
    };
    // What the source handed over in this run, as the acknowledged chunks say: inputs
    // (documents and skips) and the further outputs of exploded inputs.
    let mut handed = Handed::default();
    // The item's counts or the source's coverage did not add up: nothing of this run is
    // taken as done. The cursor goes back to where the run started, so that the retry
    // reads (and checks) it all again instead of finding nothing left and finishing.
    let mut rewind = false;
    let mut in_flight: JoinSet<Sent<Batch<K>>> = JoinSet::new();
    let mut next_seq = 0u64;
    let mut end: Option<ItemEnd> = None;
    let mut source_done = false;
    let mut last_checkpointed = mark.progress().clone();
    let mut last_checkpoint_at = Instant::now();
    if resent > 0 {
        // Said in the store at once (`rfs status`), not at the first checkpoint.
        match lease.checkpoint(&last_checkpointed).await {
            Ok(()) => {}
            Err(LeaseError::Lost(e)) => end = Some(ItemEnd::LeaseLost(e)),
            Err(e) => {
                tracing::warn!(item = %item.id(), "could not record the possible duplicates yet: {e}");
                // Differs from what is now: written at the next checkpoint.
                last_checkpointed.sent_ahead = resent;
            }
        }
    }
    let mut last_renewal = Instant::now();
    let tick = opts.control_every.min(opts.checkpoint_every);
    let mut ticker = tokio::time::interval(renew_every.map_or(tick, |r| tick.min(r)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.reset();
    let in_flight_max = opts.in_flight.max(1);
    let started = Instant::now();
    let mut first_batch_after = None;
    let mut shutdown = shared.shutdown.clone();
    if *shutdown.borrow() && end.is_none() {
        end = Some(ItemEnd::Stopped);
    }
    let mut abandon_at: Option<Instant> = None;
    // A store that is down is said at WARN every 10 s, not at every tick.
    let mut store_trouble = ThrottledWarning::default();
    // The control record may have changed while the lease was being acquired: look before
    // the first batch, not one tick after it (a PAUSE must stop every write).
    if end.is_none() {
        match lease.control().await {
            Ok(Control::Run) => {}
            Ok(Control::Pause) => end = Some(ItemEnd::Paused),
            Ok(Control::Stop) => end = Some(ItemEnd::Stopped),
            Err(LeaseError::Lost(e)) => end = Some(ItemEnd::LeaseLost(e)),
            Err(e) => tracing::warn!("could not read the control record: {e}"),
        }
    }

    loop {
        if matches!(end, Some(ItemEnd::Stopped)) && abandon_at.is_none() {
            abandon_at = Some(Instant::now() + opts.stop_grace);
        }
        if matches!(end, Some(ItemEnd::LeaseLost(_))) {
            // Someone else holds the item: nothing more is written for it.
            abandon_at = Some(Instant::now());
        }
        if end.is_none() && source_done && in_flight.is_empty() {
            end = Some(match handed.check(&item, &start, mark.progress()) {
                Ok(()) => ItemEnd::Finished,
                Err(e) => {
                    rewind = true;
                    ItemEnd::Failed(e)
                }
            });
        }
        if end.is_some() && in_flight.is_empty() {
            break;
        }
        let take = end.is_none() && !source_done && in_flight.len() < in_flight_max;
        tokio::select! {
            biased;
            Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => {
                metrics.in_flight_batches.fetch_sub(1, Ordering::Relaxed);
                match joined {
                    Ok((seq, chunk, Ok(delivered))) => {
                        let (inputs, exploded) = (chunk.inputs, chunk.exploded);
                        match account(&item, &shared.failures, metrics, chunk, delivered) {
                            Ok(acked) => {
                                handed.inputs += inputs;
                                handed.exploded += exploded;
                                mark.ack(seq, acked)
                            }
                            Err(e) => end = Some(ItemEnd::Failed(e)),
                        }
                    }
                    Ok((_, _, Err(e))) => end = Some(ItemEnd::Failed(e.into())),
                    Err(join) => end = Some(ItemEnd::Failed(PipelineError {
                        severity: Severity::Item,
                        stage: "sending documents",
                        message: format!("a send task ended abnormally: {join}"),
                    })),
                }
            }
            msg = rx.recv(), if take => match msg {
                None => source_done = true,
                Some(Err(e)) => {
                    rewind |= e.coverage;
                    end = Some(ItemEnd::Failed(e.into()));
                }
                Some(Ok(chunk)) => {
                    first_batch_after.get_or_insert_with(|| started.elapsed());
                    if Instant::now() >= trigger.min(deadline) {
                        // The chunk is not sent; the cursor stays before it.
                        end = Some(ItemEnd::Triggered);
                        continue;
                    }
                    let mut ready = vec![chunk];
                    if resends {
                        // The chunks ready now go out under one record of the item.
                        while in_flight.len() + ready.len() < in_flight_max {
                            match rx.try_recv() {
                                Ok(Ok(c)) => ready.push(c),
                                Ok(Err(e)) => {
                                    rewind |= e.coverage;
                                    end = Some(ItemEnd::Failed(e.into()));
                                    break;
                                }
                                Err(mpsc::error::TryRecvError::Empty) => break,
                                Err(mpsc::error::TryRecvError::Disconnected) => {
                                    source_done = true;
                                    break;
                                }
                            }
                        }
                        let docs: u64 = ready.iter().filter(|c| c.batch.is_some()).map(|c| c.docs).sum();
                        if docs > 0 {
                            // Nothing goes out before the item says it may have.
                            let p = current(&mark, dispatched + docs);
                            let until = deadline.min(Instant::now() + Duration::from_secs(60));
                            match record_before_sending(lease, &p, until).await {
                                Ok(()) => {
                                    last_checkpointed = p;
                                    last_checkpoint_at = Instant::now();
                                }
                                Err(LeaseError::Lost(e)) => {
                                    end = Some(ItemEnd::LeaseLost(e));
                                    ready.clear();
                                }
                                Err(e) => {
                                    end = Some(ItemEnd::Failed(PipelineError {
                                        severity: Severity::Item,
                                        stage: "recording batches before sending",
                                        message: format!(
                                            "item {}: the coordination store did not record the {docs} document(s) about to be sent (the target writes without ids: nothing is sent that the item does not record first): {e}",
                                            item.id()
                                        ),
                                    }));
                                    ready.clear();
                                }
                            }
                        }
                    }
                    for chunk in ready {
                        if chunk.batch.is_some() {
                            dispatched += chunk.docs;
                        }
                        let seq = next_seq;
                        next_seq += 1;
                        let sink = sink.clone();
                        let fleet = shared.fleet.clone();
                        metrics.in_flight_batches.fetch_add(1, Ordering::Relaxed);
                        in_flight.spawn(async move {
                            let mut chunk = chunk;
                            let result = match chunk.batch.take() {
                                Some(b) => match pay_fleet(fleet.as_deref(), chunk.docs, <K::Writer as SinkWriter>::size(&b) as u64).await {
                                    Ok(()) => sink.send(b).await,
                                    Err(e) => Err(e),
                                },
                                None => Ok(Delivered::default()),
                            };
                            (seq, chunk, result)
                        });
                    }
                }
            },
            // The trigger, or the lease's end when renewals failed until then.
            _ = tokio::time::sleep_until(trigger.min(deadline)), if end.is_none() => {
                if Instant::now() >= deadline {
                    tracing::warn!(item = %item.id(), "the lease could not be renewed before its end: stopping the item");
                }
                end = Some(ItemEnd::Triggered);
            }
            // Batches still in flight are abandoned when the lease ends, or `stop_grace`
            // after a stop if that comes first.
            _ = tokio::time::sleep_until(abandon_at.map_or(deadline, |a| a.min(deadline))), if !in_flight.is_empty() => {
                let n = in_flight.len();
                let why = if Instant::now() >= deadline {
                    "the lease ends".to_string()
                } else {
                    format!("stopping, {:?} after the stop", opts.stop_grace)
                };
                tracing::warn!(
                    item = %item.id(),
                    "{why}: {n} batch(es) still unacknowledged are abandoned; the checkpoint stays before them"
                );
                in_flight.shutdown().await;
                metrics.in_flight_batches.fetch_sub(n as i64, Ordering::Relaxed);
                end.get_or_insert(ItemEnd::Triggered);
            }
            changed = shutdown.changed(), if end.is_none() => {
                if changed.is_err() || *shutdown.borrow() {
                    end = Some(ItemEnd::Stopped);
                }
            }
            _ = ticker.tick() => {
                // The heartbeat goes on while batches drain, so that they may finish.
                let lost = matches!(end, Some(ItemEnd::LeaseLost(_)));
                if let Some(every) = renew_every.filter(|_| !lost) {
                    if last_renewal.elapsed() + Duration::from_millis(5) >= every && Instant::now() < deadline {
                        let sent = Instant::now();
                        match tokio::time::timeout_at(deadline, lease.renew()).await {
                            Ok(Ok(())) => {
                                last_renewal = sent;
                                if let Some(d) = lease.deadline() {
                                    deadline = d;
                                }
                            }
                            Ok(Err(LeaseError::Lost(e))) => {
                                end = Some(ItemEnd::LeaseLost(e));
                                continue;
                            }
                            Ok(Err(e)) => store_trouble.say(format_args!("could not renew the lease, sending until it ends: {e}")),
                            Err(_) => store_trouble.say(format_args!("the store did not answer the renewal before the lease's end")),
                        }
                    }
                }
                if end.is_none() {
                    match lease.control().await {
                        Ok(Control::Run) => {}
                        Ok(Control::Pause) => end = Some(ItemEnd::Paused),
                        Ok(Control::Stop) => end = Some(ItemEnd::Stopped),
                        Err(LeaseError::Lost(e)) => end = Some(ItemEnd::LeaseLost(e)),
                        Err(e) => store_trouble.say(format_args!("could not read the control record, sending on: {e}")),
                    }
                }
                let progress = current(&mark, dispatched);
                if last_checkpoint_at.elapsed() >= opts.checkpoint_every && progress != last_checkpointed {
                    match lease.checkpoint(&progress).await {
                        Ok(()) => {
                            last_checkpointed = progress;
                            last_checkpoint_at = Instant::now();
                        }
                        Err(LeaseError::Lost(e)) => end = Some(ItemEnd::LeaseLost(e)),
                        Err(e) => store_trouble.say(format_args!("checkpoint failed, will retry: {e}")),
                    }
                }
            }
        }
    }
    halt.store(true, Ordering::Relaxed);
    drop(rx);
    if let Err(e) = reader.await {
        tracing::warn!("document reader thread ended abnormally: {e}");
    }
    let end = end.unwrap_or(ItemEnd::Finished);
    let mut progress = if rewind {
        // Everything sent in this run goes again from where it started.
        let mut p = start;
        if resends {
            p.sent_ahead = dispatched;
        }
        p
    } else {
        current(&mark, dispatched)
    };
    if matches!(end, ItemEnd::Triggered) {
        // A successor, a new item starting at the cursor, sends again what went beyond it
        // (batches abandoned at the lease's end): counted here, on this item.
        let n = progress.count_resent();
        if n > 0 {
            metrics.possible_duplicates.fetch_add(n, Ordering::Relaxed);
            tracing::warn!(
                item = %item.id(),
                possible_duplicates = n,
                "item {}: {n} document(s) sent beyond the cursor go again with the successor: counted as possible duplicates (the target writes without ids)",
                item.id()
            );
        }
    }
    ItemReport {
        end,
        progress,
        first_batch_after,
    }
}

type Batch<K> = <<K as Sink>::Writer as SinkWriter>::Batch;

/// What the source handed over in one run of an item (from the cursor on).
#[derive(Debug, Default, Clone, Copy)]
struct Handed {
    /// Documents and skips read.
    inputs: u64,
    /// Outputs beyond the first of inputs the transform exploded into several documents.
    exploded: u64,
}

impl Handed {
    /// The item's invariant, when a run reached the item's end: the counts moved by
    /// exactly what the source handed over — each input delivered, refused, skipped or
    /// filtered, an exploded input once per output.
    fn check(self, item: &WorkItem, start: &Progress, now: &Progress) -> Result<(), PipelineError> {
        let filtered = |p: &Progress| -> u64 {
            p.reasons
                .iter()
                .filter(|(k, _)| k.starts_with("filtered:"))
                .map(|(_, n)| n)
                .sum()
        };
        let delivered = now.docs.saturating_sub(start.docs);
        let refused = now.refused.saturating_sub(start.refused);
        let skipped = now.skipped.saturating_sub(start.skipped);
        let filtered = filtered(now).saturating_sub(filtered(start));
        let accounted = delivered + refused + skipped + filtered;
        let expected = self.inputs + self.exploded;
        if accounted == expected {
            return Ok(());
        }
        let exploded = if self.exploded > 0 {
            format!(
                " (+ {} further outputs of exploded documents)",
                self.exploded
            )
        } else {
            String::new()
        };
        Err(PipelineError {
            severity: Severity::Item,
            stage: "accounting",
            message: format!(
                "item {}: the source handed over {} documents and skips{exploded} but {delivered} were delivered, {refused} refused, {skipped} skipped and {filtered} filtered ({accounted}); the item goes back to where this run started",
                item.id(),
                self.inputs,
            ),
        })
    }
}

/// Writes `p` — which says how many documents are about to go beyond the cursor — into
/// the item before they are sent, retrying while the store is unreachable until `until`.
async fn record_before_sending<L: ItemLease>(
    lease: &mut L,
    p: &Progress,
    until: Instant,
) -> Result<(), LeaseError> {
    let mut wait = Duration::from_millis(100);
    loop {
        match lease.checkpoint(p).await {
            Ok(()) => return Ok(()),
            Err(LeaseError::Unavailable(e)) if Instant::now() + wait < until => {
                tracing::debug!(
                    "recording the batches about to be sent failed, retrying in {wait:?}: {e}"
                );
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Takes a batch's documents and bytes from the fleet-wide budgets (when a limit is set).
async fn pay_fleet(fleet: Option<&FleetLimiter>, docs: u64, bytes: u64) -> Result<(), SinkError> {
    let Some(f) = fleet else {
        return Ok(());
    };
    f.wait(docs, bytes)
        .await
        .map_err(|e| SinkError::item(format!("fleet-wide rate limit: coordination store: {e}")))
}

/// A warning said at most every 10 s (the rest at debug level).
struct ThrottledWarning(pacing::Sometimes);

impl Default for ThrottledWarning {
    fn default() -> Self {
        ThrottledWarning(pacing::Sometimes::new(Duration::from_secs(10)))
    }
}

impl ThrottledWarning {
    fn say(&mut self, message: std::fmt::Arguments<'_>) {
        if self.0.due() {
            tracing::warn!("{message}");
        } else {
            tracing::debug!("{message}");
        }
    }
}

/// Writes an acknowledged chunk's refused and skipped documents to the failure log,
/// updates the metrics, and returns what the low-water mark counts.
fn account<B>(
    item: &WorkItem,
    failures: &FailureLog,
    metrics: &Metrics,
    chunk: Chunk<B>,
    delivered: Delivered,
) -> Result<Acked, PipelineError> {
    let covered = chunk.covered();
    // Every document framed into the batch comes back acknowledged or refused: a sink
    // that loses one fails the item here, before the cursor can pass it.
    let answered = delivered.delivered + delivered.refused.len() as u64;
    if answered != chunk.docs {
        return Err(PipelineError {
            severity: Severity::Item,
            stage: "accounting",
            message: format!(
                "item {}: a batch of {} document(s) came back with {} delivered and {} refused ({} {}); the cursor stays before the batch",
                item.id(),
                chunk.docs,
                delivered.delivered,
                delivered.refused.len(),
                answered.abs_diff(chunk.docs),
                if answered < chunk.docs { "unaccounted for" } else { "too many" },
            ),
        });
    }
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut records = Vec::new();
    let with_source = failures.include_source();
    let time =
        if chunk.skips.is_empty() && chunk.refusals.is_empty() && delivered.refused.is_empty() {
            String::new()
        } else {
            now_rfc3339()
        };
    for (stage, s) in &chunk.skips {
        *reasons.entry(stage.reason_key(s.reason)).or_default() += 1;
        records.push(FailureRecord {
            time: time.clone(),
            stage: *stage,
            index: s.index.to_string(),
            id: s.id.clone().unwrap_or_default(),
            doc_type: s.doc_type.as_deref().map(str::to_owned),
            routing: s.routing.clone(),
            group: Some(item.group.clone()),
            part: Some(item.part),
            position: Some(s.position.clone()),
            error_type: s.reason.to_string(),
            reason: s.detail.clone(),
            status: 0,
            attempts: 0,
            delete: false,
            source: s
                .source
                .as_ref()
                .filter(|_| with_source)
                .map(|b| source_value(b)),
        });
    }
    // Sent again by the sink itself after a request of unknown fate, to a target that
    // stores a resent document twice.
    if delivered.possible_duplicates > 0 {
        *reasons
            .entry(coordination::POSSIBLE_DUPLICATES.to_string())
            .or_default() += delivered.possible_duplicates;
        metrics
            .possible_duplicates
            .fetch_add(delivered.possible_duplicates, Ordering::Relaxed);
    }
    // The target's pushback (throttling, retries) rides along as `sink:<what>` counts:
    // not documents, so no part of refused or skipped.
    for (what, n) in &delivered.pressure {
        if *n > 0 {
            *reasons.entry(format!("sink:{what}")).or_default() += n;
        }
    }
    let refused = chunk.refusals.len() + delivered.refused.len();
    for r in chunk.refusals.iter().chain(&delivered.refused) {
        *reasons
            .entry(Stage::Target.reason_key(&r.error_type))
            .or_default() += 1;
        records.push(FailureRecord {
            time: time.clone(),
            stage: Stage::Target,
            index: r.index.to_string(),
            id: r.id.clone(),
            doc_type: r.doc_type.as_deref().map(str::to_owned),
            routing: r.routing.clone(),
            group: Some(item.group.clone()),
            part: Some(item.part),
            position: None,
            error_type: r.error_type.clone(),
            reason: r.reason.clone(),
            status: r.status,
            attempts: r.attempts,
            delete: r.delete,
            source: (with_source && !r.source.is_empty()).then(|| source_value(&r.source)),
        });
    }
    failures.append(&records).map_err(|e| PipelineError {
        severity: Severity::Fatal,
        stage: "writing the failure log",
        message: redact::chain(&e),
    })?;
    let skipped = chunk.skips.len() as u64;
    let mut filtered = 0;
    for (reason, n) in chunk.filtered {
        filtered += n;
        *reasons.entry(format!("filtered:{reason}")).or_default() += n;
    }
    if chunk.nested > 0 {
        *reasons.entry(NESTED_REASON.to_string()).or_default() += chunk.nested;
    }
    metrics.docs_filtered.fetch_add(filtered, Ordering::Relaxed);
    metrics
        .docs_sent
        .fetch_add(delivered.delivered, Ordering::Relaxed);
    metrics
        .docs_refused
        .fetch_add(refused as u64, Ordering::Relaxed);
    metrics.docs_skipped.fetch_add(skipped, Ordering::Relaxed);
    metrics
        .bytes_sent
        .fetch_add(delivered.bytes, Ordering::Relaxed);
    metrics
        .source_bytes_sent
        .fetch_add(delivered.source_bytes, Ordering::Relaxed);
    metrics.batches_sent.fetch_add(1, Ordering::Relaxed);
    drop(chunk.held);
    Ok(Acked {
        last: chunk.last,
        sent: chunk.docs,
        covered,
        delivered: delivered.delivered,
        bytes: delivered.bytes,
        refused: refused as u64,
        skipped,
        reasons: reasons.into_iter().collect(),
    })
}

/// The reader thread's state.
struct ReaderThread<'a, W: SinkWriter> {
    transform: &'a dyn Transform,
    writer: W,
    tx: &'a mpsc::Sender<Result<Chunk<W::Batch>, SourceError>>,
    halt: &'a AtomicBool,
    budget: &'a Budget,
    skips_per_chunk: usize,
}

/// At most this many bytes of `_source` wait for a batching transform: a batch goes
/// when it holds `batch_size` documents or this much, whichever comes first.
const BATCH_BYTES: usize = 8 << 20;

/// One input of the reader thread: as read, or as a batching transform shaped it.
enum Input {
    Read(Read),
    Batched(Position, Batched),
}

/// What has been read since the last chunk went out.
struct Pending {
    last: Option<Position>,
    skips: Vec<(Stage, Skip)>,
    filtered: BTreeMap<String, u64>,
    /// Documents filtered since the last chunk.
    filtered_n: usize,
    refusals: Vec<Refusal>,
    docs: u64,
    inputs: u64,
    exploded: u64,
    ahead: u64,
    behind: u64,
    nested: u64,
}

impl<W: SinkWriter> ReaderThread<'_, W> {
    /// Reads the source, transforms and frames its documents, and sends chunks until the
    /// end, an error, or the pipeline hangs up.
    fn run<S: Source>(mut self, source: &S, item: &WorkItem, after: &Cursor) {
        let mut pending = Pending {
            last: None,
            skips: Vec::new(),
            filtered: BTreeMap::new(),
            filtered_n: 0,
            refusals: Vec::new(),
            docs: 0,
            inputs: 0,
            exploded: 0,
            ahead: 0,
            behind: 0,
            nested: 0,
        };
        let mut hung_up = false;
        let mut nested = 0u64;
        let reshapes = self.transform.reshapes();
        let transform = self.transform;
        let tx = self.tx;
        // Documents a batching transform has not been given yet (see `flush`).
        let batch_size = if reshapes { transform.batch_size() } else { 1 };
        let mut buffered: Vec<Document> = Vec::new();
        let mut outputs = Vec::new();
        let mut one = |input: Input| {
            if self.halt.load(Ordering::Relaxed) {
                return false;
            }
            let mut full = None;
            // The input's position, acknowledged with the chunk that ends it: moved out of
            // a document the sink takes (sinks never read it; one String per document
            // read from a live cluster), cloned only where the input is kept or reshaped.
            // A reshaped input's position and outcome (its outputs in `outputs`), or what
            // was read as it was read.
            let shaped = match input {
                Input::Read(Read::Doc(d)) if reshapes => {
                    let position = d.position.clone();
                    Ok((position, self.transform.apply_all(d, &mut outputs)))
                }
                Input::Batched(position, b) => {
                    outputs = b.outputs;
                    Ok((position, b.outcome))
                }
                Input::Read(read) => Err(read),
            };
            let position = match shaped {
                Err(Read::Skip(s)) => {
                    let position = s.position.clone();
                    pending.skips.push((Stage::Source, s));
                    position
                }
                Ok((position, shaped)) => {
                    match shaped {
                        Err(skip) => pending.skips.push((Stage::Transform, *skip)),
                        Ok(Shaped::Filtered(reason)) => {
                            *pending.filtered.entry(reason).or_default() += 1;
                            pending.filtered_n += 1;
                        }
                        Ok(Shaped::Docs) => {
                            let n = outputs.len();
                            // Outputs of this input sent in earlier chunks.
                            let mut sent = 0u64;
                            for (i, d) in outputs.drain(..).enumerate() {
                                let pushed = self.writer.push(d);
                                if pushed.is_ok() {
                                    pending.docs += 1;
                                }
                                match pushed {
                                    Ok(None) => {}
                                    // The batch is full before the input's last output:
                                    // send it without this input's position, which is
                                    // acknowledged with the chunk holding its last output.
                                    Ok(Some(batch)) if i + 1 < n => {
                                        let upto = i as u64 + 1;
                                        pending.ahead += upto - sent;
                                        sent = upto;
                                        if !self.send(&mut pending, Some(batch)) {
                                            hung_up = true;
                                            return false;
                                        }
                                    }
                                    Ok(Some(batch)) => full = Some(batch),
                                    Err(refusal) => pending.refusals.push(*refusal),
                                }
                            }
                            // An input counts once; its further outputs are counted as
                            // `exploded` (with the chunk that completes the input), so
                            // that the item's equation stays exact. An input with no
                            // output at all is not made up for: the equation catches it
                            // (a transform that means to drop one says `Filtered`).
                            pending.exploded += n.saturating_sub(1) as u64;
                            pending.behind += sent;
                        }
                    }
                    position
                }
                Err(Read::Doc(mut d)) => match self.transform.apply(&mut d) {
                    Err(u) => {
                        let position = d.position.clone();
                        pending
                            .skips
                            .push((Stage::Transform, Skip::of(d, u.reason, u.detail)));
                        position
                    }
                    Ok(()) => {
                        let position = std::mem::replace(&mut d.position, Position::Doc(0));
                        match self.writer.push(d) {
                            Ok(batch) => {
                                pending.docs += 1;
                                full = batch
                            }
                            Err(refusal) => pending.refusals.push(*refusal),
                        }
                        position
                    }
                },
            };
            pending.last = Some(position);
            pending.inputs += 1;
            let too_many = pending.skips.len() + pending.refusals.len() + pending.filtered_n
                >= self.skips_per_chunk;
            if full.is_none() && too_many {
                full = self.writer.finish();
                if full.is_none() {
                    // Nothing framed since the last chunk: acknowledge the run of skips.
                    if !self.send(&mut pending, None) {
                        hung_up = true;
                        return false;
                    }
                    return true;
                }
            }
            if let Some(batch) = full {
                if !self.send(&mut pending, Some(batch)) {
                    hung_up = true;
                    return false;
                }
            }
            true
        };
        // The buffered documents through the transform in one go, then each input's
        // outcome through `one` in order; `false` when the pipeline hung up or halts, or
        // the transform did not answer each input once (the item fails: `broken`).
        let mut broken = false;
        let mut flush = |buffered: &mut Vec<Document>,
                         buffered_bytes: &mut usize,
                         one: &mut dyn FnMut(Input) -> bool| {
            if buffered.is_empty() || broken {
                return !broken;
            }
            *buffered_bytes = 0;
            let docs = std::mem::take(buffered);
            let positions: Vec<Position> = docs.iter().map(|d| d.position.clone()).collect();
            let outcomes = transform.apply_batch(docs);
            if outcomes.len() != positions.len() {
                // Nothing of the batch is taken as done: the cursor stays before it.
                broken = true;
                let _ = tx.blocking_send(Err(SourceError::item(format!(
                    "the document program answered {} of a batch of {} documents",
                    outcomes.len(),
                    positions.len()
                ))));
                return false;
            }
            positions
                .into_iter()
                .zip(outcomes)
                .all(|(p, b)| one(Input::Batched(p, b)))
        };
        let mut buffered_bytes = 0usize;
        let mut emit = |read: Read| {
            if batch_size <= 1 {
                return one(Input::Read(read));
            }
            match read {
                Read::Doc(d) => {
                    buffered_bytes += d.source.len();
                    buffered.push(d);
                    (buffered.len() < batch_size && buffered_bytes < BATCH_BYTES)
                        || flush(&mut buffered, &mut buffered_bytes, &mut one)
                }
                // A skip comes after the documents read before it.
                skip => {
                    flush(&mut buffered, &mut buffered_bytes, &mut one) && one(Input::Read(skip))
                }
            }
        };
        let result = source.read_counting_nested(item, after, &mut emit, &mut nested);
        if result.is_ok() {
            // The end of the item: the last batch. If the pipeline hung up or halts
            // meanwhile, what was not sent is read again by the next run.
            flush(&mut buffered, &mut buffered_bytes, &mut one);
        }
        if broken {
            return;
        }
        if hung_up || self.halt.load(Ordering::Relaxed) {
            return;
        }
        match result {
            // A partial chunk before an error is not sent: the cursor stays before it.
            Err(e) => {
                let _ = self.tx.blocking_send(Err(e));
            }
            Ok(()) => {
                let last = self.writer.finish();
                // Only a read that reached the item's end knows its nested children
                // (counted from where it started: a resumed read's are a lower bound).
                pending.nested = nested;
                if last.is_some() || pending.last.is_some() || nested > 0 {
                    self.send(&mut pending, last);
                }
            }
        }
    }

    /// Sends what is pending as one chunk; `false` when the pipeline hung up.
    fn send(&self, pending: &mut Pending, batch: Option<W::Batch>) -> bool {
        let last = pending.last.take();
        if last.is_none() && batch.is_none() && pending.nested == 0 {
            return true;
        }
        let held = match &batch {
            Some(b) => match self.budget.hold_blocking(W::size(b)) {
                Some(h) => Some(h),
                None => return false,
            },
            None => None,
        };
        let chunk = Chunk {
            batch,
            last,
            skips: std::mem::take(&mut pending.skips),
            filtered: std::mem::take(&mut pending.filtered),
            refusals: std::mem::take(&mut pending.refusals),
            held,
            docs: std::mem::take(&mut pending.docs),
            inputs: std::mem::take(&mut pending.inputs),
            exploded: std::mem::take(&mut pending.exploded),
            ahead: std::mem::take(&mut pending.ahead),
            behind: std::mem::take(&mut pending.behind),
            nested: std::mem::take(&mut pending.nested),
        };
        pending.filtered_n = 0;
        self.tx.blocking_send(Ok(chunk)).is_ok()
    }
}

#[cfg(test)]
mod tests;
