//! Following a live source after its backfill (change data capture): the [`ChangeFeed`]
//! port, and the follower that applies its changes through the same transform, sink,
//! failure log and accounting as the backfill until the fleet is told to stop.
//!
//! **The protocol.** The feed starts in a guarded phase (`follow-start`) before the items
//! phase, so nothing the backfill does not see is lost. Once every item is done, the fleet
//! follows: one process holds the `follow` phase (its lease renewed while it works; any
//! other waits, and takes it when the lease runs out), and its record holds the
//! [`FollowState`]. The follower works in rounds: a round's bounds (the log's end when it
//! began, and how many messages at most) are written into the state *before* anything of
//! it is applied, so a successor reads exactly the same changes again and goes on after
//! the last acknowledged one; when the round is applied, the feed is confirmed (the source
//! may drop what it kept) and the round's counts join the totals. A round's changes are
//! the latest action per key (each key once, in the order of its last change; the
//! earlier ones are `superseded` and counted).
//!
//! **Accounting.** When a round ends, what the pipeline covered in the round must equal
//! the reads the feed handed over (a count taken while decoding), and the sum of
//! delivered, refused, skipped and filtered must equal covered (the pipeline checks it per
//! run); otherwise the follower stops with the mismatch.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordination::{Control, Coordinator, Cursor, PhaseClaim, Progress, WorkItem};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use crate::document::Read;
use crate::error::{Severity, SourceError};
use crate::pipeline::{
    run_item, ItemEnd, ItemLease, ItemPlan, LeaseError, PipelineOptions, WorkerShared,
};
use crate::sink::Sink;
use crate::source::{Plan, Source};
use crate::transform::Transform;
use crate::worker::{lease_error, sleep_unless_shutdown};

/// The phase that starts the feed (before the items phase).
pub const PHASE_FOLLOW_START: &str = "follow-start";
/// The phase the follower holds while it follows.
pub const PHASE_FOLLOW: &str = "follow";

/// Where a change source keeps a migration's place (a PostgreSQL replication slot and
/// publication of this name).
pub type FeedName = String;

/// What [`ChangeFeed::start`] found or made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedStart {
    pub name: FeedName,
    /// The log position changes are followed from.
    pub from: u64,
    /// What was made (`slot`, `publication`), for the log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<String>,
}

/// A round: the changes committed before `upto` (the log's end when the round began),
/// at most `max` messages (whole transactions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundBounds {
    pub upto: u64,
    pub max: u32,
}

/// Changes by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeCounts {
    pub inserts: u64,
    pub updates: u64,
    pub deletes: u64,
    /// Updates that changed the key (a delete of the old key, a write of the new).
    pub key_changes: u64,
    /// Updates whose TOASTed values were left out (the row was read instead).
    pub unchanged_toast: u64,
    pub transactions: u64,
}

impl ChangeCounts {
    pub fn add(&mut self, o: &ChangeCounts) {
        self.inserts += o.inserts;
        self.updates += o.updates;
        self.deletes += o.deletes;
        self.key_changes += o.key_changes;
        self.unchanged_toast += o.unchanged_toast;
        self.transactions += o.transactions;
    }

    pub fn changes(&self) -> u64 {
        self.inserts + self.updates + self.deletes + self.key_changes
    }
}

/// One round's changes, ready for the pipeline.
#[derive(Debug, Clone, Default)]
pub struct RoundReads {
    /// One read per changed key (a write of the row as it is now, or a delete), in
    /// increasing position order.
    pub reads: Vec<Read>,
    pub counts: ChangeCounts,
    /// Earlier actions on a key the round acts on again.
    pub superseded: u64,
    /// Changes of keys outside the migration's bounds (`--from`/`--until`).
    pub outside: u64,
    /// Where to confirm the feed once the reads are applied.
    pub confirm_to: u64,
    /// Whether the round stopped at `max` (more changes are waiting).
    pub full: bool,
    /// The newest commit in the round (ms since the Unix epoch).
    pub newest_commit_ms: Option<i64>,
}

/// The source's log as the follower sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedLag {
    /// The log's end now.
    pub current: u64,
    /// What the follower confirmed.
    pub confirmed: u64,
    /// The oldest log the source keeps for the follower.
    pub retained_from: u64,
}

/// Where changes come from, after a backfill.
pub trait ChangeFeed: Send + Sync + 'static {
    /// What is followed, for messages (a table's name).
    fn describe(&self) -> String;
    /// Makes sure the feed exists and keeps every change from now on (blocking).
    fn start(&self, name: &str) -> Result<FeedStart, SourceError>;
    /// The log's end now, as far as the feed can read it (durable): the next round's
    /// `upto`. A round bounded past what the feed can read would confirm changes it never
    /// saw.
    fn log_end(&self, name: &str) -> Result<u64, SourceError>;
    /// The round's changes: the same reads each time it is asked until the feed is
    /// confirmed past them.
    fn read_round(&self, name: &str, round: &RoundBounds) -> Result<RoundReads, SourceError>;
    /// Everything before `to` is applied: the source may let it go.
    fn confirm(&self, name: &str, to: u64) -> Result<(), SourceError>;
    /// The lag; `None` when the feed is gone (dropped by an operator).
    fn lag(&self, name: &str) -> Result<Option<FeedLag>, SourceError>;
    /// What an operator runs to drop the feed once the migration is over.
    fn drop_hint(&self, name: &str) -> String;
}

/// The follower's state, in the `follow` phase record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FollowState {
    pub name: FeedName,
    /// What is followed (the table).
    #[serde(default)]
    pub source: String,
    /// The feed's position when the follow began, and the last confirmed one.
    #[serde(default)]
    pub started_from: u64,
    #[serde(default)]
    pub confirmed: u64,
    /// The round being applied (`None` between rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<RoundRecord>,
    /// The last acknowledged read, and the counts over every round.
    #[serde(default)]
    pub cursor: Cursor,
    #[serde(default)]
    pub delivered: u64,
    #[serde(default)]
    pub refused: u64,
    #[serde(default)]
    pub skipped: u64,
    #[serde(default)]
    pub covered: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
    /// Changes of finished rounds, by kind.
    #[serde(default)]
    pub applied: ChangeCounts,
    #[serde(default)]
    pub superseded: u64,
    #[serde(default)]
    pub outside: u64,
    #[serde(default)]
    pub rounds: u64,
    /// How many times a process took the feed over (the first holder included): each
    /// holder's number, saved before it applies anything, orders what holders wrote.
    #[serde(default)]
    pub claims: u64,
    /// The newest commit applied (ms since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_applied_ms: Option<i64>,
    /// The last round found nothing more waiting.
    #[serde(default)]
    pub caught_up: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<FeedLag>,
    /// When the state was written (ms since the Unix epoch).
    #[serde(default)]
    pub updated_ms: i64,
    /// What an operator runs to drop the feed.
    #[serde(default)]
    pub drop_hint: String,
    /// Why the follower stopped, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A round in progress, recorded before it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub bounds: RoundBounds,
    /// `covered` when the round began.
    pub covered_at_start: u64,
}

impl FollowState {
    fn progress(&self) -> Progress {
        Progress {
            cursor: self.cursor.clone(),
            docs: self.delivered,
            bytes: 0,
            refused: self.refused,
            skipped: self.skipped,
            reasons: self.reasons.clone(),
            covered: self.covered,
            sent_ahead: 0,
        }
    }

    fn set_progress(&mut self, p: &Progress) {
        self.cursor = p.cursor.clone();
        self.delivered = p.docs;
        self.refused = p.refused;
        self.skipped = p.skipped;
        self.reasons = p.reasons.clone();
        self.covered = p.covered;
    }

    /// Lag in bytes of log not applied yet.
    pub fn lag_bytes(&self) -> Option<u64> {
        self.lag.map(|l| l.current.saturating_sub(l.confirmed))
    }

    /// Bytes of log the source keeps for the follower.
    pub fn retained_bytes(&self) -> Option<u64> {
        self.lag.map(|l| l.current.saturating_sub(l.retained_from))
    }

    /// Seconds between the newest change applied and when the state was written, while
    /// changes were waiting (0 when caught up).
    pub fn behind_seconds(&self) -> Option<i64> {
        if self.caught_up {
            return Some(0);
        }
        self.newest_applied_ms
            .map(|t| ((self.updated_ms - t) / 1000).max(0))
    }
}

/// How the follower runs.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// The feed's name; `None`: derived from the migration's identity.
    pub name: Option<String>,
    /// How long to wait when a round found nothing more waiting.
    pub poll: Duration,
    /// Messages per round at most.
    pub round_max: u32,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            name: None,
            poll: Duration::from_secs(1),
            round_max: 5000,
        }
    }
}

/// How following ended.
#[derive(Debug, Clone, PartialEq)]
pub enum FollowEnd {
    /// The fleet was told to stop (`rfs stop`), or this process shuts down.
    Stopped,
}

/// Why the follower cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("coordination store")]
    Store(#[from] coordination::Error),
    #[error("following {what}: {message}")]
    Failed { what: String, message: String },
}

/// The feed's name for a migration: `rfs_` and 16 hex digits of its identity (a
/// PostgreSQL name: lower case letters, digits and `_`, under 64 bytes).
pub fn feed_name(identity: &coordination::Identity) -> String {
    let text = serde_json::to_string(identity).unwrap_or_default();
    let digest = crate::job::program_digest("rfs", &text);
    digest.replace(':', "_")
}

/// The `follow-start` phase's work: refused when the backfill began without it (changes
/// made since would be missing), else the feed started.
pub async fn start_phase(
    coord: &Coordinator,
    feed: Arc<dyn ChangeFeed>,
    name: String,
) -> Result<Value, crate::phases::PhaseError> {
    use crate::phases::PhaseError;
    if coord.is_setup_done().await? {
        return Err(PhaseError::Other(format!(
            "following {}: this migration's backfill began without --follow, so changes made since it began are in no feed; start a new migration (a new store) with --follow",
            feed.describe()
        )));
    }
    let started = tokio::task::spawn_blocking(move || feed.start(&name))
        .await
        .map_err(|e| PhaseError::Other(format!("starting the change feed: {e}")))??;
    tracing::info!(feed = %started.name, from = started.from, created = ?started.created, "change feed ready: changes from here on are kept until applied");
    serde_json::to_value(&started).map_err(|e| PhaseError::Other(e.to_string()))
}

/// Follows until the fleet is told to stop: waits as a standby while another process
/// holds the `follow` phase, holds it when free.
#[allow(clippy::too_many_arguments)]
pub async fn follow<K: Sink>(
    coord: &Coordinator,
    feed: Arc<dyn ChangeFeed>,
    started: FeedStart,
    transform: Arc<dyn Transform>,
    sink: Arc<K>,
    opts: &FollowOptions,
    pipeline: &PipelineOptions,
    shared: &WorkerShared,
) -> Result<FollowEnd, FollowError> {
    let mut said_standby = false;
    loop {
        if stopping(coord, shared).await? {
            return Ok(FollowEnd::Stopped);
        }
        match coord.try_claim_phase(PHASE_FOLLOW).await {
            Ok(PhaseClaim::Claimed) => {
                said_standby = false;
                tracing::info!(feed = %started.name, "following {}", feed.describe());
                match hold(
                    coord, &feed, &started, &transform, &sink, opts, pipeline, shared,
                )
                .await?
                {
                    Held::Stopped => return Ok(FollowEnd::Stopped),
                    Held::Lost => tracing::warn!("the follow lease was taken over; standing by"),
                }
            }
            Ok(PhaseClaim::Busy { holder, .. }) => {
                if !said_standby {
                    tracing::info!(%holder, "another process follows; standing by to take over");
                    said_standby = true;
                }
                sleep_unless_shutdown(opts.poll.max(coord.config().poll_interval), shared).await;
            }
            Ok(PhaseClaim::Done(_)) => return Ok(FollowEnd::Stopped),
            Err(coordination::Error::PhaseFailed { reason, .. }) => {
                return Err(FollowError::Failed {
                    what: feed.describe(),
                    message: reason,
                })
            }
            Err(e) if e.is_transient() => {
                sleep_unless_shutdown(Duration::from_secs(1), shared).await
            }
            Err(e) => return Err(e.into()),
        }
    }
}

enum Held {
    Stopped,
    Lost,
}

/// Whether the fleet is told to stop (STOP) or this process shuts down; waits while
/// paused.
async fn stopping(coord: &Coordinator, shared: &WorkerShared) -> Result<bool, FollowError> {
    loop {
        if *shared.shutdown.borrow() {
            return Ok(true);
        }
        match crate::worker::with_store_retries(|| coord.control()).await? {
            Control::Stop => return Ok(true),
            Control::Pause => sleep_unless_shutdown(Duration::from_secs(1), shared).await,
            _ => return Ok(false),
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SourceError> + Send + 'static,
) -> Result<T, SourceError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| SourceError::item(format!("a follower task ended abnormally: {e}")))?
}

#[allow(clippy::too_many_arguments)]
async fn hold<K: Sink>(
    coord: &Coordinator,
    feed: &Arc<dyn ChangeFeed>,
    started: &FeedStart,
    transform: &Arc<dyn Transform>,
    sink: &Arc<K>,
    opts: &FollowOptions,
    pipeline: &PipelineOptions,
    shared: &WorkerShared,
) -> Result<Held, FollowError> {
    let name = started.name.clone();
    let failed = |message: String| FollowError::Failed {
        what: feed.describe(),
        message,
    };
    let renewer = {
        let coord = coord.clone();
        let every = (coord.config().phase_lease / 3).max(Duration::from_millis(100));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if let Err(e) = coord.renew_phase(PHASE_FOLLOW).await {
                    tracing::warn!("could not renew the follow lease: {e}");
                }
            }
        })
    };
    let _renewer = AbortOnDrop(renewer);
    // A record that does not read back is never taken for a fresh start (its round and
    // counts would be lost without a word).
    let mut state: FollowState = match coord.phase_data(PHASE_FOLLOW).await? {
        Value::Null => FollowState::default(),
        v => serde_json::from_value(v).map_err(|e| {
            failed(format!(
                "the follow record in the store does not read back: {e}"
            ))
        })?,
    };
    if state.name.is_empty() {
        state.name = name.clone();
        state.started_from = started.from;
        state.confirmed = started.from;
    }
    state.source = feed.describe();
    state.drop_hint = feed.drop_hint(&name);
    // This holder's number is in the store before anything of it reaches the sink.
    state.claims += 1;
    if let Err(e) = save(coord, &mut state).await {
        return lost_or(e);
    }
    if let Err(e) = sink.follow_claimed(state.claims) {
        return halt(coord, &mut state, failed(e.to_string())).await;
    }
    let metrics = &shared.metrics;
    let mut transient_wait = Duration::from_millis(500);
    loop {
        if stopping(coord, shared).await? {
            save(coord, &mut state).await?;
            let _ = coord.release_phase(PHASE_FOLLOW).await;
            return Ok(Held::Stopped);
        }
        let round = match state.round {
            Some(r) => r,
            None => {
                let (f, n) = (feed.clone(), name.clone());
                let upto = match blocking(move || f.log_end(&n)).await {
                    Ok(u) => u,
                    Err(e) => match next_after(e, &mut transient_wait, shared).await {
                        Next::Retry => continue,
                        Next::Halt(m) => return halt(coord, &mut state, failed(m)).await,
                        Next::Fail(m) => return fail(coord, &mut state, failed(m)).await,
                    },
                };
                let r = RoundRecord {
                    bounds: RoundBounds {
                        upto,
                        max: opts.round_max.max(1),
                    },
                    covered_at_start: state.covered,
                };
                state.round = Some(r);
                if let Err(e) = save(coord, &mut state).await {
                    return lost_or(e);
                }
                r
            }
        };
        let (f, n) = (feed.clone(), name.clone());
        let reads = match blocking(move || f.read_round(&n, &round.bounds)).await {
            Ok(r) => r,
            Err(e) => match next_after(e, &mut transient_wait, shared).await {
                Next::Retry => continue,
                Next::Halt(m) => return halt(coord, &mut state, failed(m)).await,
                Next::Fail(m) => return fail(coord, &mut state, failed(m)).await,
            },
        };
        let expected = reads.reads.len() as u64;
        let base = state.progress();
        let source = Arc::new(RoundSource {
            reads: Mutex::new(reads.reads.clone()),
            group: feed.describe(),
        });
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let report = {
            let mut lease = PhaseLease {
                coord,
                state: &mut state,
            };
            run_item(
                source,
                transform.clone(),
                sink.clone(),
                &mut lease,
                ItemPlan {
                    item: WorkItem::whole(feed.describe(), 0),
                    base,
                    trigger: far,
                    deadline: far,
                },
                pipeline,
                shared,
            )
            .await
        };
        state.set_progress(&report.progress);
        match report.end {
            ItemEnd::Finished => {
                let covered = state.covered.saturating_sub(round.covered_at_start);
                if covered != expected {
                    let m = format!(
                        "a round's accounting does not add up: the feed handed over {expected} changed keys and the pipeline accounted for {covered}"
                    );
                    return fail(coord, &mut state, failed(m)).await;
                }
                let (f, n, to) = (feed.clone(), name.clone(), reads.confirm_to);
                if let Err(e) = blocking(move || f.confirm(&n, to)).await {
                    // Applied but not confirmed: the round is applied again (idempotent).
                    tracing::warn!("confirming the change feed: {e}");
                }
                state.round = None;
                // A halt's message stays until the round it stopped at is applied.
                state.error = None;
                state.confirmed = state.confirmed.max(reads.confirm_to);
                state.applied.add(&reads.counts);
                state.superseded += reads.superseded;
                state.outside += reads.outside;
                state.rounds += 1;
                state.caught_up = !reads.full;
                if reads.newest_commit_ms.is_some() {
                    state.newest_applied_ms = reads.newest_commit_ms;
                }
                metrics
                    .follow_changes
                    .fetch_add(reads.counts.changes(), Relaxed);
                let (f, n) = (feed.clone(), name.clone());
                match blocking(move || f.lag(&n)).await {
                    Ok(Some(l)) => state.lag = Some(l),
                    Ok(None) => {
                        let m = format!("the change feed {name} is gone (dropped?): changes from here on are lost; start a new migration");
                        return fail(coord, &mut state, failed(m)).await;
                    }
                    Err(e) => tracing::warn!("reading the feed's lag: {e}"),
                }
                if let Err(e) = save(coord, &mut state).await {
                    return lost_or(e);
                }
                metrics
                    .follow_lag_bytes
                    .store(state.lag_bytes().unwrap_or(0) as i64, Relaxed);
                metrics
                    .follow_retained_bytes
                    .store(state.retained_bytes().unwrap_or(0) as i64, Relaxed);
                metrics
                    .follow_behind_seconds
                    .store(state.behind_seconds().unwrap_or(0), Relaxed);
                transient_wait = Duration::from_millis(500);
                if expected > 0 || reads.counts.transactions > 0 {
                    tracing::info!(
                        changes = reads.counts.changes(),
                        keys = expected,
                        lag_bytes = state.lag_bytes().unwrap_or(0),
                        "round applied"
                    );
                }
                if !reads.full {
                    sleep_unless_shutdown(opts.poll, shared).await;
                }
            }
            ItemEnd::Stopped | ItemEnd::Paused | ItemEnd::Triggered => {
                if let Err(e) = save(coord, &mut state).await {
                    return lost_or(e);
                }
            }
            ItemEnd::LeaseLost(e) => {
                tracing::warn!("follow lease lost: {e}");
                return Ok(Held::Lost);
            }
            ItemEnd::Failed(e) if e.severity == Severity::Item => {
                tracing::warn!("applying a round failed, retrying it: {e}");
                if let Err(e) = save(coord, &mut state).await {
                    return lost_or(e);
                }
                sleep_unless_shutdown(transient_wait, shared).await;
                transient_wait = (transient_wait * 2).min(Duration::from_secs(30));
            }
            ItemEnd::Failed(e) if e.severity == Severity::Fatal => {
                return halt(coord, &mut state, failed(e.to_string())).await
            }
            ItemEnd::Failed(e) => return fail(coord, &mut state, failed(e.to_string())).await,
        }
    }
}

/// What a failed step of the follower leads to.
enum Next {
    /// A transient failure: waited (doubling up to 30 s); the step is tried again.
    Retry,
    /// Nothing works until an operator acts (a column added, credentials refused): this
    /// process stops with the message and gives the lease back; a process started
    /// afterwards (with the table as it is now) goes on from the saved round.
    Halt(String),
    /// The feed cannot go on (a TRUNCATE, the slot gone): FAILED for every follower.
    Fail(String),
}

/// Sorts a failure by its severity; a transient one waits first.
async fn next_after(e: SourceError, wait: &mut Duration, shared: &WorkerShared) -> Next {
    match e.severity {
        Severity::Item => {
            tracing::warn!("following: {}; retrying in {wait:?}", redact::chain(&e));
            sleep_unless_shutdown(*wait, shared).await;
            *wait = (*wait * 2).min(Duration::from_secs(30));
            Next::Retry
        }
        Severity::Fatal => Next::Halt(redact::chain(&e)),
        Severity::Permanent => Next::Fail(redact::chain(&e)),
    }
}

fn lost_or(e: coordination::Error) -> Result<Held, FollowError> {
    match e {
        coordination::Error::LeaseLost { .. } => Ok(Held::Lost),
        other => Err(other.into()),
    }
}

/// Records the failure in the state and the phase (FAILED: every follower stops with it).
async fn fail(
    coord: &Coordinator,
    state: &mut FollowState,
    e: FollowError,
) -> Result<Held, FollowError> {
    stop_with(coord, state, e, true).await
}

/// Records the failure in the state and gives the `follow` phase back (not FAILED): this
/// process stops with it, and one started after the operator acted takes the phase over
/// and goes on from the saved round.
async fn halt(
    coord: &Coordinator,
    state: &mut FollowState,
    e: FollowError,
) -> Result<Held, FollowError> {
    stop_with(coord, state, e, false).await
}

async fn stop_with(
    coord: &Coordinator,
    state: &mut FollowState,
    e: FollowError,
    for_good: bool,
) -> Result<Held, FollowError> {
    let reason = e.to_string();
    tracing::error!("{reason}");
    state.error = Some(reason.clone());
    let _ = save(coord, state).await;
    let _ = if for_good {
        coord.fail_phase_permanently(PHASE_FOLLOW, &reason).await
    } else {
        coord.release_phase(PHASE_FOLLOW).await
    };
    Err(e)
}

async fn save(coord: &Coordinator, state: &mut FollowState) -> Result<(), coordination::Error> {
    state.updated_ms = now_ms();
    let v = serde_json::to_value(&*state).unwrap_or(Value::Null);
    crate::worker::with_store_retries(|| coord.save_phase_data(PHASE_FOLLOW, v.clone())).await
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The pipeline's lease for a round: checkpoints go into the follow state.
struct PhaseLease<'a> {
    coord: &'a Coordinator,
    state: &'a mut FollowState,
}

impl ItemLease for PhaseLease<'_> {
    async fn checkpoint(&mut self, progress: &Progress) -> Result<(), LeaseError> {
        self.state.set_progress(progress);
        save(self.coord, self.state).await.map_err(lease_error)
    }

    async fn control(&mut self) -> Result<Control, LeaseError> {
        self.coord
            .control()
            .await
            .map_err(|e| LeaseError::Unavailable(e.to_string()))
    }
}

/// A round's reads as a source of one item.
struct RoundSource {
    reads: Mutex<Vec<Read>>,
    group: String,
}

impl Source for RoundSource {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("follow".to_string(), self.group.clone())])
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        Ok(Plan::default())
    }

    fn read(
        &self,
        _item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let reads = self
            .reads
            .lock()
            .map_err(|_| SourceError::item("a round's reads were poisoned"))?
            .clone();
        for r in reads {
            if after.as_ref().is_some_and(|a| r.position() <= a) {
                continue;
            }
            if !emit(r) {
                break;
            }
        }
        Ok(())
    }
}
