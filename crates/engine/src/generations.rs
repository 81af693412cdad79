//! Following a snapshot repository (`rfs run --follow`): after the first migration, each
//! newer snapshot the repository lists is applied as a delta from the last applied one, in
//! the order the snapshots were taken, until the fleet is told to stop.
//!
//! Each delta is a migration of its own (a *generation*): its own store (numbered, beside
//! the base store; the caller opens it), its own identity, phases, items and accounting, so
//! that a killed process is replaced by any process with the same flags and nothing is lost
//! or counted twice. The base store holds one follow record ([`FOLLOW_ID`]) saying which
//! snapshot is applied and which delta is being applied; every change to it is a
//! compare-and-set, so of racing processes one decides and the others join it.
//!
//! The loop of every process:
//!
//! 1. STOP in the base store's control record, or a signal: end ([`FollowEnd::Stopped`]).
//! 2. A delta is being applied (`applying`): run its job in its generation's store (the
//!    base store's control mirrored into it, so `rfs pause|resume|stop` on the base store
//!    reach it); once finished, the record says its snapshot is applied.
//! 3. Else list the repository ([`outlook`]): the oldest SUCCESS snapshot taken after the
//!    applied one becomes the next delta; with none, the record says what was seen and the
//!    process waits `every` before listing again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use coordination::{Control, Coordinator, Record, RecordKind, Revision, Store};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::worker::with_store_retries;

/// Id of the follow record in the base store (a record of kind `control`, as the fleet
/// rate records are: no status or keeper list reads it as an item or a phase).
pub const FOLLOW_ID: &str = "follow:snapshots";

/// How many applied deltas the follow record lists (the totals count them all).
const HISTORY: usize = 20;

/// A snapshot as the repository lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub name: String,
    pub uuid: String,
    /// `SUCCESS`, `PARTIAL`, `FAILED`, `IN_PROGRESS`, `INCOMPATIBLE`; `None` when the
    /// repository does not say (taken as SUCCESS: pre-5.0 repositories list only completed
    /// snapshots).
    pub state: Option<String>,
    /// When it was started, in epoch milliseconds, when known.
    pub start_ms: Option<i64>,
}

impl Listed {
    fn applicable(&self) -> bool {
        self.state.as_deref().is_none_or(|s| s == "SUCCESS")
    }
}

/// What the repository holds beyond the applied snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outlook {
    /// The next snapshot to apply (the oldest pending one).
    pub next: Option<Listed>,
    /// SUCCESS snapshots taken after the applied one, oldest first.
    pub pending: Vec<String>,
    /// Snapshots taken after the applied one that are not applied, with their state
    /// (in progress, FAILED, PARTIAL: they hold no complete view to delete by).
    pub not_applicable: Vec<(String, String)>,
}

/// Why the repository cannot be followed from the applied snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutlookError {
    #[error(
        "the applied snapshot {0} is no longer in the repository: a delta needs it (keep the \
         last applied snapshot when deleting old ones); the target stays as of {0}"
    )]
    AppliedGone(String),
}

/// The snapshots of `listed` taken after `applied` (matched by uuid: a snapshot deleted and
/// taken again under its name is another one; pre-5.0 repositories use the name as the
/// uuid), in the order they were taken: by start time, then as listed (snapshots without a start time are
/// ordered as listed, before those with one).
pub fn outlook(listed: &[Listed], applied: &Applied) -> Result<Outlook, OutlookError> {
    let mut order: Vec<(usize, &Listed)> = listed.iter().enumerate().collect();
    order.sort_by_key(|(i, l)| (l.start_ms, *i));
    let at = order
        .iter()
        .position(|(_, l)| l.uuid == applied.uuid)
        .ok_or_else(|| OutlookError::AppliedGone(applied.name.clone()))?;
    let mut out = Outlook::default();
    for (_, l) in &order[at + 1..] {
        if l.applicable() {
            if out.next.is_none() {
                out.next = Some((*l).clone());
            }
            out.pending.push(l.name.clone());
        } else {
            let state = l.state.clone().unwrap_or_default();
            out.not_applicable.push((l.name.clone(), state));
        }
    }
    Ok(out)
}

/// The snapshot the target holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub name: String,
    pub uuid: String,
    /// When the snapshot was started (epoch ms), when known: the target is as of then.
    #[serde(default)]
    pub start_ms: Option<i64>,
    /// When it was applied (store ms).
    pub applied_at: i64,
}

/// A delta being applied: generation `generation`, from snapshot `since` to `snapshot`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub generation: u32,
    pub since: String,
    pub snapshot: Listed,
    /// When it was decided (store ms).
    pub started_at: i64,
}

/// A delta that was applied, with what its migration counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub delivered: u64,
    pub refused: u64,
    pub skipped: u64,
}

/// One applied delta (the record keeps the last [`HISTORY`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedStep {
    pub generation: u32,
    pub since: String,
    pub snapshot: String,
    pub applied_at: i64,
    #[serde(flatten)]
    pub counts: Counts,
}

/// The follow record's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowState {
    /// Random, chosen when the record is created: part of every generation's store name,
    /// so that stores left from an earlier follow (its base store deleted, theirs not)
    /// are never taken for this one's.
    pub id: String,
    pub applied: Applied,
    /// Deltas decided so far (the last generation's number).
    pub generations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applying: Option<Step>,
    /// The last listing of the repository (store ms) and what it showed.
    #[serde(default)]
    pub checked_at: Option<i64>,
    #[serde(default)]
    pub pending: Vec<String>,
    #[serde(default)]
    pub not_applicable: Vec<(String, String)>,
    /// Why the last listing could not be followed (the repository unreadable, the applied
    /// snapshot gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The last applied deltas, newest last.
    #[serde(default)]
    pub history: Vec<AppliedStep>,
    /// Every applied delta's counts, summed.
    #[serde(default)]
    pub totals: Counts,
}

impl FollowState {
    /// The state of a fleet that has applied `applied` and nothing else.
    pub fn new(applied: Applied) -> FollowState {
        FollowState {
            id: format!("{:08x}", rand::random::<u32>()),
            applied,
            generations: 0,
            applying: None,
            checked_at: None,
            pending: Vec::new(),
            not_applicable: Vec::new(),
            problem: None,
            history: Vec::new(),
            totals: Counts::default(),
        }
    }

    /// `step` done: its snapshot is the applied one.
    fn advance(&mut self, step: &Step, counts: Counts, now: i64) {
        self.applied = Applied {
            name: step.snapshot.name.clone(),
            uuid: step.snapshot.uuid.clone(),
            start_ms: step.snapshot.start_ms,
            applied_at: now,
        };
        self.applying = None;
        self.pending.retain(|p| *p != step.snapshot.name);
        self.totals.delivered += counts.delivered;
        self.totals.refused += counts.refused;
        self.totals.skipped += counts.skipped;
        self.history.push(AppliedStep {
            generation: step.generation,
            since: step.since.clone(),
            snapshot: step.snapshot.name.clone(),
            applied_at: now,
            counts,
        });
        let extra = self.history.len().saturating_sub(HISTORY);
        self.history.drain(..extra);
    }

    /// The tag of generation `n`'s store (see `coordination::generation_url`).
    pub fn store_tag(&self, n: u32) -> String {
        format!("{n}_{}", self.id)
    }

    /// What the fleet is doing, in a word or two (`applying N`, `watching`).
    pub fn activity(&self) -> String {
        match &self.applying {
            Some(s) => format!(
                "applying {} (delta since {}, generation {})",
                s.snapshot.name, s.since, s.generation
            ),
            None => "watching".into(),
        }
    }
}

/// Reads the follow record of the base store.
pub async fn load(store: &dyn Store) -> Result<Option<(FollowState, Revision)>, FollowError> {
    let Some((rec, rev)) = with_store_retries(|| store.get(FOLLOW_ID)).await? else {
        return Ok(None);
    };
    let state = serde_json::from_value(rec.data).map_err(|e| FollowError::Corrupt {
        id: FOLLOW_ID,
        reason: e.to_string(),
    })?;
    Ok(Some((state, rev)))
}

/// Writes `state` over the record read at `rev` (`None`: creates it). `false` when someone
/// else wrote first: read again and decide again.
async fn store_state(
    store: &dyn Store,
    state: &FollowState,
    rev: Option<Revision>,
    me: &str,
) -> Result<bool, FollowError> {
    let mut rec = Record::new(FOLLOW_ID, RecordKind::Control, me);
    rec.data = serde_json::to_value(state).map_err(|e| FollowError::Corrupt {
        id: FOLLOW_ID,
        reason: e.to_string(),
    })?;
    let written = match rev {
        None => with_store_retries(|| store.create(&rec)).await?,
        Some(rev) => with_store_retries(|| store.update(&rec, rev)).await?,
    };
    Ok(written.is_some())
}

/// What may go wrong while following.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("coordination store")]
    Store(#[from] coordination::Error),
    #[error("record {id} in the coordination store: {reason}")]
    Corrupt { id: &'static str, reason: String },
    /// Applying a delta failed (items FAILED, counts that do not add up, a target that
    /// refuses): the fleet stops on it; the delta's store says more.
    #[error("applying snapshot {snapshot} (delta since {since}, generation {generation})")]
    Apply {
        snapshot: String,
        since: String,
        generation: u32,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// How a delta's migration ended in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEnd {
    /// Finished for the fleet, with its counts.
    Finished(Counts),
    /// Told to stop (the control record, a signal).
    Stopped,
}

/// A boxed future of the [`Follower`]'s answers.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An error of the caller's (repository, store, job), with its causes.
pub type CallerError = Box<dyn std::error::Error + Send + Sync>;

/// What the caller provides: the repository's listing, the store of a generation and the
/// job of a delta (built from its flags).
pub trait Follower: Send + Sync {
    /// The snapshots the repository lists now.
    fn list(&self) -> BoxFuture<'_, Result<Vec<Listed>, CallerError>>;
    /// The store of a delta, named by `tag` ([`FollowState::store_tag`]), created if needed.
    fn store<'a>(&'a self, tag: &'a str) -> BoxFuture<'a, Result<Arc<dyn Store>, CallerError>>;
    /// Runs the migration of `step` in `store` to its end in this process.
    fn apply<'a>(
        &'a self,
        step: &'a Step,
        store: Arc<dyn Store>,
    ) -> BoxFuture<'a, Result<StepEnd, CallerError>>;
}

/// How the follow loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowEnd {
    /// `rfs stop` or a signal; the state as it was then.
    Stopped(Box<FollowState>),
}

/// Follows the repository from `first` (the snapshot the base migration applied) until
/// STOP in `base`'s control record or `shutdown`; `every`: how often it is listed.
pub async fn follow(
    base: Arc<dyn Store>,
    config: coordination::Config,
    first: Applied,
    follower: &dyn Follower,
    every: Duration,
    mut shutdown: watch::Receiver<bool>,
) -> Result<FollowEnd, FollowError> {
    let coord = Coordinator::new(base.clone(), config.clone());
    let me = format!("follow-{}", coordination::WorkerId::new().as_str());
    let mut said_problem: Option<String> = None;
    loop {
        let loaded = load(base.as_ref()).await?;
        let (mut state, rev) = match loaded {
            Some((s, r)) => (s, Some(r)),
            None => (FollowState::new(first.clone()), None),
        };
        if *shutdown.borrow() || with_store_retries(|| coord.control()).await? == Control::Stop {
            return Ok(FollowEnd::Stopped(Box::new(state)));
        }
        if rev.is_none() {
            store_state(base.as_ref(), &state, None, &me).await?;
            continue;
        }
        if let Some(step) = state.applying.clone() {
            let apply_err = |cause: CallerError| FollowError::Apply {
                snapshot: step.snapshot.name.clone(),
                since: step.since.clone(),
                generation: step.generation,
                cause,
            };
            let tag = state.store_tag(step.generation);
            let store = follower.store(&tag).await.map_err(apply_err)?;
            let mirror = mirror_control(coord.clone(), store.clone(), config.clone()).await?;
            tracing::info!(
                snapshot = %step.snapshot.name,
                since = %step.since,
                generation = step.generation,
                "applying a newer snapshot as a delta"
            );
            let end = follower.apply(&step, store).await;
            mirror.abort();
            match end.map_err(apply_err)? {
                StepEnd::Stopped => {
                    let state = load(base.as_ref()).await?.map_or(state, |(s, _)| s);
                    return Ok(FollowEnd::Stopped(Box::new(state)));
                }
                StepEnd::Finished(counts) => {
                    finish_step(base.as_ref(), &coord, &step, counts, &me).await?;
                }
            }
            continue;
        }
        let listed = follower.list().await;
        let now = with_store_retries(|| base.now()).await?;
        let seen = listed
            .map_err(|e| format!("listing the repository: {}", chain(e.as_ref())))
            .and_then(|l| outlook(&l, &state.applied).map_err(|e| e.to_string()));
        match seen {
            Ok(seen) => {
                state.checked_at = Some(now);
                state.pending = seen.pending;
                state.not_applicable = seen.not_applicable;
                state.problem = None;
                said_problem = None;
                if let Some(next) = seen.next {
                    state.generations += 1;
                    state.applying = Some(Step {
                        generation: state.generations,
                        since: state.applied.name.clone(),
                        snapshot: next,
                        started_at: now,
                    });
                    // Decided by whoever writes first; the others read it and join.
                    store_state(base.as_ref(), &state, rev, &me).await?;
                    continue;
                }
            }
            Err(problem) => {
                if said_problem.as_ref() != Some(&problem) {
                    tracing::error!("following the repository: {problem}");
                    said_problem = Some(problem.clone());
                }
                state.checked_at = Some(now);
                state.problem = Some(problem);
            }
        }
        // Nothing to apply: say what was seen (a lost race only means someone else did).
        store_state(base.as_ref(), &state, rev, &me).await?;
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = signalled(&mut shutdown) => {}
        }
    }
}

/// Records `step` as applied, unless someone else did (or moved on) first.
async fn finish_step(
    base: &dyn Store,
    coord: &Coordinator,
    step: &Step,
    counts: Counts,
    me: &str,
) -> Result<(), FollowError> {
    loop {
        let Some((mut state, rev)) = load(base).await? else {
            return Err(FollowError::Corrupt {
                id: FOLLOW_ID,
                reason: "the follow record disappeared while a delta was applied".into(),
            });
        };
        if state.applying.as_ref() != Some(step) {
            return Ok(());
        }
        let now = with_store_retries(|| coord.store().now()).await?;
        state.advance(step, counts.clone(), now);
        if store_state(base, &state, Some(rev), me).await? {
            tracing::info!(
                snapshot = %step.snapshot.name,
                generation = step.generation,
                delivered = counts.delivered,
                refused = counts.refused,
                skipped = counts.skipped,
                "snapshot applied"
            );
            return Ok(());
        }
    }
}

/// Copies the base store's control value into a generation's store now and every
/// poll interval after, so that `rfs pause|resume|stop` on the base store reach the
/// delta's workers. The task ends when aborted.
async fn mirror_control(
    base: Coordinator,
    store: Arc<dyn Store>,
    config: coordination::Config,
) -> Result<tokio::task::JoinHandle<()>, FollowError> {
    let generation = Coordinator::new(store, config);
    let mut last = with_store_retries(|| base.control()).await?;
    with_store_retries(|| generation.set_control(last)).await?;
    let every = base.config().poll_interval.max(Duration::from_millis(200));
    Ok(tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match base.control().await {
                Ok(c) if c != last => {
                    if generation.set_control(c).await.is_ok() {
                        last = c;
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::debug!("reading the control record: {e}"),
            }
        }
    }))
}

/// Resolves when `shutdown` changes (never, once its sender is gone).
async fn signalled(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(name: &str, state: &str, start: Option<i64>) -> Listed {
        Listed {
            name: name.into(),
            uuid: format!("u-{name}"),
            state: (!state.is_empty()).then(|| state.to_string()),
            start_ms: start,
        }
    }

    fn applied(name: &str) -> Applied {
        Applied {
            name: name.into(),
            uuid: format!("u-{name}"),
            start_ms: None,
            applied_at: 0,
        }
    }

    #[test]
    fn newer_snapshots_come_in_the_order_they_were_taken() {
        // Listed out of order (repository data is not ordered by time).
        let listed = [
            snap("d", "SUCCESS", Some(40)),
            snap("a", "SUCCESS", Some(10)),
            snap("c", "SUCCESS", Some(30)),
            snap("b", "SUCCESS", Some(20)),
        ];
        let o = outlook(&listed, &applied("b")).unwrap();
        assert_eq!(o.pending, ["c", "d"]);
        assert_eq!(o.next.unwrap().name, "c");
        assert!(o.not_applicable.is_empty());
        let o = outlook(&listed, &applied("d")).unwrap();
        assert_eq!(o, Outlook::default(), "nothing newer than the newest");
    }

    #[test]
    fn only_success_is_applied_and_the_others_are_said() {
        let listed = [
            snap("a", "SUCCESS", Some(10)),
            snap("b", "FAILED", Some(20)),
            snap("c", "PARTIAL", Some(30)),
            snap("d", "SUCCESS", Some(40)),
            snap("e", "IN_PROGRESS", Some(50)),
        ];
        let o = outlook(&listed, &applied("a")).unwrap();
        assert_eq!(
            o.next.unwrap().name,
            "d",
            "FAILED and PARTIAL are passed over"
        );
        assert_eq!(o.pending, ["d"]);
        assert_eq!(
            o.not_applicable,
            [
                ("b".to_string(), "FAILED".to_string()),
                ("c".into(), "PARTIAL".into()),
                ("e".into(), "IN_PROGRESS".into())
            ]
        );
        // Once d is applied, the older FAILED ones are no longer newer.
        let o = outlook(&listed, &applied("d")).unwrap();
        assert!(o.next.is_none());
        assert_eq!(
            o.not_applicable,
            [("e".to_string(), "IN_PROGRESS".to_string())]
        );
    }

    #[test]
    fn without_start_times_the_listing_order_counts_and_the_uuid_is_matched() {
        let listed = [
            snap("a", "", None),
            snap("b", "", None),
            snap("c", "SUCCESS", None),
        ];
        assert_eq!(outlook(&listed, &applied("a")).unwrap().pending, ["b", "c"]);
        // A snapshot deleted and taken again under the same name is another snapshot.
        let mut again = snap("a", "SUCCESS", Some(5));
        again.uuid = "u-a2".into();
        assert_eq!(
            outlook(&[again, snap("b", "SUCCESS", Some(6))], &applied("a")),
            Err(OutlookError::AppliedGone("a".into()))
        );
    }

    #[test]
    fn an_applied_snapshot_deleted_from_the_repository_is_an_error() {
        let listed = [snap("b", "SUCCESS", Some(2)), snap("c", "SUCCESS", Some(3))];
        assert_eq!(
            outlook(&listed, &applied("a")),
            Err(OutlookError::AppliedGone("a".into()))
        );
    }

    /// A repository in memory: what `list` answers, and every delta applied.
    struct Repo {
        listed: std::sync::Mutex<Vec<Listed>>,
        applied: std::sync::Mutex<Vec<(String, String, String)>>,
    }

    impl Follower for Repo {
        fn list(&self) -> BoxFuture<'_, Result<Vec<Listed>, CallerError>> {
            Box::pin(async move { Ok(self.listed.lock().unwrap().clone()) })
        }
        fn store<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Arc<dyn Store>, CallerError>> {
            Box::pin(async move {
                let s: Arc<dyn Store> = Arc::new(coordination::MemoryStore::new());
                Ok(s)
            })
        }
        fn apply<'a>(
            &'a self,
            step: &'a Step,
            store: Arc<dyn Store>,
        ) -> BoxFuture<'a, Result<StepEnd, CallerError>> {
            Box::pin(async move {
                let tag = format!("{}", step.generation);
                let control = Coordinator::new(store, coordination::Config::default())
                    .control()
                    .await?;
                assert_eq!(control, Control::Run, "the base control is mirrored");
                self.applied.lock().unwrap().push((
                    tag,
                    step.since.clone(),
                    step.snapshot.name.clone(),
                ));
                Ok(StepEnd::Finished(Counts {
                    delivered: 1,
                    ..Counts::default()
                }))
            })
        }
    }

    /// Two followers on one store: each newer SUCCESS snapshot is decided once, in order,
    /// as a delta from the one applied before; STOP ends both.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_followers_apply_each_snapshot_once_in_order_until_stop() {
        let base: Arc<dyn Store> = Arc::new(coordination::MemoryStore::new());
        let repo = Arc::new(Repo {
            listed: std::sync::Mutex::new(vec![snap("a", "SUCCESS", Some(1))]),
            applied: std::sync::Mutex::default(),
        });
        let (_tx, rx) = watch::channel(false);
        let spawn = |base: Arc<dyn Store>, repo: Arc<Repo>, rx: watch::Receiver<bool>| {
            tokio::spawn(async move {
                follow(
                    base,
                    coordination::Config::default(),
                    applied("a"),
                    repo.as_ref(),
                    Duration::from_millis(10),
                    rx,
                )
                .await
            })
        };
        let one = spawn(base.clone(), repo.clone(), rx.clone());
        let two = spawn(base.clone(), repo.clone(), rx.clone());
        let wait_for = |name: &'static str| {
            let base = base.clone();
            async move {
                for _ in 0..500 {
                    if let Some((s, _)) = load(base.as_ref()).await.unwrap() {
                        if s.applied.name == name && s.applying.is_none() {
                            return s;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                panic!("{name} never applied");
            }
        };
        wait_for("a").await;
        repo.listed.lock().unwrap().extend([
            snap("b", "SUCCESS", Some(2)),
            snap("x", "FAILED", Some(3)),
            snap("c", "SUCCESS", Some(4)),
        ]);
        let s = wait_for("c").await;
        assert_eq!(s.generations, 2);
        let steps: Vec<(&str, &str)> = s
            .history
            .iter()
            .map(|h| (h.since.as_str(), h.snapshot.as_str()))
            .collect();
        assert_eq!(steps, [("a", "b"), ("b", "c")]);
        assert_eq!(s.totals.delivered, 2, "each delta counted once");
        // Both followers may have joined a delta; none was applied out of order.
        let mut seen = repo.applied.lock().unwrap().clone();
        seen.dedup();
        assert!(
            seen.iter().all(|(_, since, snap)| (since, snap)
                == (&"a".to_string(), &"b".to_string())
                || (since, snap) == (&"b".to_string(), &"c".to_string())),
            "{seen:?}"
        );
        let stopper = Coordinator::new(base.clone(), coordination::Config::default());
        stopper.set_control(Control::Stop).await.unwrap();
        for h in [one, two] {
            let end = tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let FollowEnd::Stopped(state) = end;
            assert_eq!(state.applied.name, "c");
        }
    }

    #[test]
    fn advancing_keeps_a_bounded_history_and_every_count() {
        let mut s = FollowState::new(applied("s0"));
        for n in 1..=(HISTORY as u32 + 5) {
            s.generations = n;
            let step = Step {
                generation: n,
                since: s.applied.name.clone(),
                snapshot: snap(&format!("s{n}"), "SUCCESS", Some(i64::from(n))),
                started_at: 0,
            };
            s.applying = Some(step.clone());
            s.advance(
                &step,
                Counts {
                    delivered: 2,
                    refused: 1,
                    skipped: 0,
                },
                i64::from(n),
            );
            assert_eq!(s.applied.name, format!("s{n}"));
            assert!(s.applying.is_none());
        }
        assert_eq!(s.history.len(), HISTORY);
        assert_eq!(s.history.last().unwrap().snapshot, "s25");
        assert_eq!(s.totals.delivered, 50);
        assert_eq!(s.totals.refused, 25);
        let back: FollowState = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
