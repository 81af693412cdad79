//! A whole migration run by one process: guarded phases (the caller's, such as metadata,
//! then the items phase that plans the source's partitions), then `parallel` item workers
//! side by side with the keeper, then the final report. Identical processes anywhere run
//! the same job against the same store and finish one migration together.
//!
//! ```no_run
//! # async fn demo<S: engine::Source, K: engine::Sink, T: engine::Transform>(
//! #     source: S, transform: T, sink: K, store: std::sync::Arc<dyn coordination::Store>,
//! #     failures: std::sync::Arc<engine::FailureLog>,
//! # ) -> Result<(), engine::JobError> {
//! use std::sync::Arc;
//! use engine::{Job, JobOptions};
//!
//! let job = Job::new(
//!     Arc::new(source), Arc::new(transform), Arc::new(sink),
//!     store, failures, JobOptions::default(),
//! );
//! let report = job.run().await?;
//! println!("{:?}: {} documents delivered by this process", report.end, report.delivered);
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use coordination::{Coordinator, Identity, KeeperStep, Status, Store};
use serde_json::Value;
use tokio::sync::watch;

use crate::budget::Budget;
use crate::failure_log::FailureLog;
use crate::fleet_limit::{FleetLimiter, FleetLimits};
use crate::follow::{
    start_phase, ChangeFeed, FeedStart, FollowEnd, FollowOptions, FollowState, PHASE_FOLLOW,
    PHASE_FOLLOW_START,
};
use crate::metrics::Metrics;
use crate::phases::{guarded_phase, PhaseError, PHASE_ITEMS};
use crate::pipeline::WorkerShared;
use crate::sink::Sink;
use crate::source::{Source, Totals};
use crate::transform::Transform;
use crate::worker::{
    run_worker, with_store_retries, Parts, WorkerError, WorkerExit, WorkerOptions,
};

/// A phase the caller adds before the items phase (metadata migration, …): run once for
/// the fleet; its result is stored.
pub type PhaseWork = Box<
    dyn FnOnce() -> Pin<Box<dyn Future<Output = Result<Value, PhaseError>> + Send>> + Send + Sync,
>;

/// How the job runs.
#[derive(Debug, Clone)]
pub struct JobOptions {
    /// Item workers in this process (each holds its own lease).
    pub parallel: usize,
    pub worker: WorkerOptions,
    pub coordination: coordination::Config,
    /// Bytes of framed batches the whole process may hold (read ahead and in flight).
    pub memory_budget: usize,
    /// The migration's name: when given, the name alone is its identity in the store
    /// (default: what is copied where, see [`identity`]).
    pub migration: Option<String>,
    /// Limits for the whole fleet, shared through the store.
    pub fleet_limits: FleetLimits,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            parallel: 1,
            worker: WorkerOptions::default(),
            coordination: coordination::Config::default(),
            memory_budget: 128 << 20,
            migration: None,
            fleet_limits: FleetLimits::default(),
        }
    }
}

impl JobOptions {
    /// Item workers in a process when not told: one per CPU.
    pub fn default_parallel() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// The memory budget: `asked` (default 128 MiB), raised so that at least two batches
    /// of `max_batch_bytes` fit per item worker.
    pub fn memory_budget_for(
        asked: Option<usize>,
        max_batch_bytes: usize,
        parallel: usize,
    ) -> usize {
        let floor = max_batch_bytes.saturating_mul(2).saturating_mul(parallel);
        asked
            .unwrap_or(JobOptions::default().memory_budget)
            .max(floor)
    }
}

/// How this process's part of the migration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// Every item is complete or FAILED and the migration is marked finished.
    Finished,
    /// Work remains, every remaining item is leased by another worker, and this process
    /// was told not to wait.
    LeasedElsewhere,
    /// The control record said STOP, or the process was told to shut down.
    Stopped,
    /// An item limit was reached (tests).
    ItemLimit,
}

/// What the job did.
#[derive(Debug, Clone)]
pub struct JobReport {
    pub end: JobEnd,
    /// What the source holds (from the items phase).
    pub totals: Totals,
    /// The fleet's final status when [`JobEnd::Finished`].
    pub status: Option<Box<Status>>,
    /// Documents this process delivered, refused and skipped, and batches it sent.
    pub delivered: u64,
    pub refused: u64,
    pub skipped: u64,
    pub batches: u64,
    /// With [`Job::follow`], once the backfill finished: the follower's state when this
    /// process stopped following.
    pub follow: Option<FollowState>,
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("coordination store")]
    Store(#[from] coordination::Error),
    #[error(transparent)]
    Phase(#[from] PhaseError),
    /// Nothing will work until an operator acts (credentials, configuration, failure log).
    #[error("{0}")]
    Fatal(String),
}

impl From<WorkerError> for JobError {
    fn from(e: WorkerError) -> Self {
        match e {
            WorkerError::Store(e) => JobError::Store(e),
            WorkerError::Fatal(m) => JobError::Fatal(m),
        }
    }
}

/// One migration: a source, a transform, a sink, a store.
pub struct Job<S, K> {
    parts: Parts<S, K>,
    store: Arc<dyn Store>,
    opts: JobOptions,
    phases: Vec<(String, PhaseWork)>,
    shared: WorkerShared,
    shutdown_tx: Option<watch::Sender<bool>>,
    totals: Arc<OnceLock<Totals>>,
    /// Following the source once the backfill is done (see [`crate::follow`]).
    follow: Option<(Arc<dyn ChangeFeed>, FollowOptions)>,
}

impl<S: Source, K: Sink> Job<S, K> {
    pub fn new(
        source: Arc<S>,
        transform: Arc<dyn Transform>,
        sink: Arc<K>,
        store: Arc<dyn Store>,
        failures: Arc<FailureLog>,
        opts: JobOptions,
    ) -> Self {
        let (tx, rx) = watch::channel(false);
        let metrics = Metrics::new();
        if let Some(c) = sink.counters() {
            metrics.add_sink_counters(c);
        }
        let fleet = (!opts.fleet_limits.is_none()).then(|| {
            Arc::new(FleetLimiter::new(
                Coordinator::new(store.clone(), opts.coordination.clone()),
                opts.fleet_limits,
            ))
        });
        Job {
            parts: Parts {
                source,
                transform,
                sink,
            },
            store,
            shared: WorkerShared {
                metrics,
                failures,
                budget: Budget::new(opts.memory_budget),
                shutdown: rx,
                fleet,
            },
            opts,
            phases: Vec::new(),
            shutdown_tx: Some(tx),
            totals: Arc::new(OnceLock::new()),
            follow: None,
        }
    }

    /// Follows `feed` once the backfill is done, until the fleet is told to stop: the feed
    /// starts (a phase) before the items phase, so no change is lost between the two.
    pub fn follow(mut self, feed: Arc<dyn ChangeFeed>, opts: FollowOptions) -> Self {
        self.follow = Some((feed, opts));
        self
    }

    /// Adds a phase to run (once for the fleet) before the items phase.
    pub fn phase(mut self, name: &str, work: PhaseWork) -> Self {
        self.phases.push((name.to_string(), work));
        self
    }

    /// Stops the job gracefully when `signal` becomes `true` (SIGTERM, SIGINT): in-flight
    /// batches finish, items are checkpointed and released, [`JobEnd::Stopped`] returns.
    pub fn shutdown_on(mut self, signal: watch::Receiver<bool>) -> Self {
        self.shared.shutdown = signal;
        self.shutdown_tx = None;
        self
    }

    /// What the source holds, once the items phase is done (for a progress bar).
    pub fn totals(&self) -> Arc<OnceLock<Totals>> {
        self.totals.clone()
    }

    /// The process's counters (for a progress bar or a metrics endpoint).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// What this job copies where, as recorded in the store.
    pub fn identity(&self) -> Identity {
        with_program(
            identity(
                self.parts.source.as_ref(),
                self.parts.sink.as_ref(),
                self.opts.migration.as_deref(),
            ),
            self.parts.transform.program_identity().as_deref(),
        )
    }

    /// Runs the job to one of its ends. The first thing it does is to record the
    /// migration's identity in the store, or check it: a store of another migration is
    /// [`coordination::Error::OtherMigration`] before anything is leased or written.
    pub async fn run(mut self) -> Result<JobReport, JobError> {
        let coord = Coordinator::new(self.store.clone(), self.opts.coordination.clone());
        let identity = self.identity();
        with_store_retries(|| coord.claim_identity(&identity)).await?;
        if with_store_retries(|| coord.control()).await? == coordination::Control::Stop {
            return Ok(self.report(JobEnd::Stopped, Totals::default(), None));
        }
        let feed_name = self.follow.as_ref().map(|(_, o)| {
            o.name
                .clone()
                .unwrap_or_else(|| crate::follow::feed_name(&identity))
        });
        if let (Some((feed, _)), Some(name)) = (&self.follow, &feed_name) {
            let (coord, feed, name) = (coord.clone(), feed.clone(), name.clone());
            let work: PhaseWork =
                Box::new(move || Box::pin(async move { start_phase(&coord, feed, name).await }));
            self.phases.push((PHASE_FOLLOW_START.to_string(), work));
        }
        // A shutdown (SIGTERM) while a phase runs or is awaited ends the job at once; a
        // phase this process holds is given back so that another worker takes it now.
        for (name, work) in std::mem::take(&mut self.phases) {
            tokio::select! {
                r = guarded_phase(&coord, &name, work) => { r?; }
                () = shutdown_requested(self.shared.shutdown.clone()) => {
                    give_back_phase(&coord, &name).await;
                    return Ok(self.report(JobEnd::Stopped, Totals::default(), None));
                }
            }
        }
        let totals = tokio::select! {
            r = self.items_phase(&coord) => r?,
            () = shutdown_requested(self.shared.shutdown.clone()) => {
                give_back_phase(&coord, PHASE_ITEMS).await;
                return Ok(self.report(JobEnd::Stopped, Totals::default(), None));
            }
        };
        let _ = self.totals.set(totals.clone());
        let keeper = spawn_keeper(coord.clone());
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.opts.parallel.max(1) {
            // Each item worker is a worker of its own in the protocol (one lease each).
            let c = Coordinator::new(self.store.clone(), self.opts.coordination.clone());
            let (parts, opts, shared) = (
                self.parts.clone(),
                self.opts.worker.clone(),
                self.shared.clone(),
            );
            workers.spawn(async move { run_worker(&c, &parts, &opts, &shared).await });
        }
        let mut exits = Vec::new();
        let mut error: Option<JobError> = None;
        while let Some(joined) = workers.join_next().await {
            match joined {
                Ok(Ok(exit)) => exits.push(exit),
                Ok(Err(e)) => {
                    if error.is_none() {
                        // One worker cannot go on (credentials…): the others would fail
                        // the same way, so the process stops as a whole.
                        if let Some(tx) = &self.shutdown_tx {
                            let _ = tx.send(true);
                        }
                        error = Some(e.into());
                    }
                }
                Err(join) => {
                    error.get_or_insert(JobError::Fatal(format!(
                        "an item worker ended abnormally: {join}"
                    )));
                }
            }
        }
        keeper.abort();
        let m = &self.shared.metrics;
        tracing::info!(
            delivered = m.docs_sent.load(Relaxed),
            refused = m.docs_refused.load(Relaxed),
            skipped = m.docs_skipped.load(Relaxed),
            source_bytes = m.source_bytes_sent.load(Relaxed),
            items_completed = m.items_completed.load(Relaxed),
            items_handed_off = m.items_handed_off.load(Relaxed),
            "workers of this process finished: {exits:?}"
        );
        if let Some(e) = error {
            let _ = coord.resign_keeper().await;
            return Err(e);
        }
        let end = if exits.contains(&WorkerExit::Stopped) {
            JobEnd::Stopped
        } else if exits.iter().all(|e| *e == WorkerExit::NoWorkLeft) {
            JobEnd::Finished
        } else if exits.contains(&WorkerExit::LeasedElsewhere) {
            JobEnd::LeasedElsewhere
        } else {
            JobEnd::ItemLimit
        };
        if end == JobEnd::LeasedElsewhere {
            // The last items may have been finished by this process's other item workers
            // after this one looked: then the migration is over, not leased elsewhere.
            if let Ok(KeeperStep::Finished(status)) = coord.keeper_step().await {
                let report = self.report(JobEnd::Finished, totals, Some(status));
                return self.then_follow(&coord, report).await;
            }
        }
        if end != JobEnd::Finished {
            // Let another worker take the keeper role at once rather than at expiry.
            if let Err(e) = coord.resign_keeper().await {
                tracing::debug!("resigning as keeper: {e}");
            }
            return Ok(self.report(end, totals, None));
        }
        let status = finish(&coord).await?;
        let report = self.report(end, totals, Some(Box::new(status)));
        self.then_follow(&coord, report).await
    }

    /// With [`Job::follow`]: follows once the backfill is finished, until the fleet is
    /// told to stop; the report then holds the follower's state.
    async fn then_follow(
        &self,
        coord: &Coordinator,
        mut report: JobReport,
    ) -> Result<JobReport, JobError> {
        let Some((feed, opts)) = self.follow.clone() else {
            return Ok(report);
        };
        let coord = coord.clone();
        let started: FeedStart = match with_store_retries(|| coord.phase_data(PHASE_FOLLOW_START))
            .await?
        {
            Value::Null => return Err(JobError::Fatal(
                "following: the change feed was never started (phase follow-start has no result)"
                    .into(),
            )),
            v => serde_json::from_value(v)
                .map_err(|e| JobError::Fatal(format!("following: the follow-start result: {e}")))?,
        };
        let ended = crate::follow::follow(
            &coord,
            feed,
            started,
            self.parts.transform.clone(),
            self.parts.sink.clone(),
            &opts,
            &self.opts.worker.pipeline,
            &self.shared,
        )
        .await;
        let state = with_store_retries(|| coord.phase_data(PHASE_FOLLOW)).await?;
        report.follow = Some(serde_json::from_value(state).map_err(|e| {
            JobError::Fatal(format!(
                "following: the follow record does not read back: {e}"
            ))
        })?);
        match ended {
            Ok(FollowEnd::Stopped) => {}
            Err(e) => return Err(JobError::Fatal(redact::chain(&e))),
        }
        let m = &self.shared.metrics;
        report.delivered = m.docs_sent.load(Relaxed);
        report.refused = m.docs_refused.load(Relaxed);
        report.skipped = m.docs_skipped.load(Relaxed);
        Ok(report)
    }

    /// The items phase (once for the fleet): the source plans its partitions, they become
    /// work items, and everyone gets the totals.
    async fn items_phase(&self, coord: &Coordinator) -> Result<Totals, JobError> {
        let source = self.parts.source.clone();
        let exact = source.exact_totals();
        let value = guarded_phase(coord, PHASE_ITEMS, || async move {
            let plan = tokio::task::spawn_blocking(move || source.plan())
                .await
                .map_err(|e| PhaseError::Other(format!("planning work items: {e}")))??;
            let mut totals = plan.totals;
            totals.items = plan.items.len();
            crate::coverage::default_counts(&mut totals, exact);
            let created = with_store_retries(|| coord.setup(&plan.items)).await?;
            tracing::info!(
                items = plan.items.len(),
                created,
                docs = totals.docs,
                "work items ready"
            );
            serde_json::to_value(&totals)
                .map_err(|e| PhaseError::Other(format!("items phase result: {e}")))
        })
        .await?;
        serde_json::from_value(value)
            .map_err(|e| JobError::Phase(PhaseError::Other(format!("items phase result: {e}"))))
    }

    fn report(&self, end: JobEnd, totals: Totals, status: Option<Box<Status>>) -> JobReport {
        let m = &self.shared.metrics;
        JobReport {
            end,
            totals,
            status,
            delivered: m.docs_sent.load(Relaxed),
            refused: m.docs_refused.load(Relaxed),
            skipped: m.docs_skipped.load(Relaxed),
            batches: m.batches_sent.load(Relaxed),
            follow: None,
        }
    }
}

/// Resolves once `signal` says stop (never, if its sender is gone).
async fn shutdown_requested(mut signal: watch::Receiver<bool>) {
    if signal.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Releases phase `name` if this process holds it (nothing happens otherwise).
async fn give_back_phase(coord: &Coordinator, name: &str) {
    match coord
        .fail_phase(name, "the worker running it was stopped before it was done")
        .await
    {
        Ok(()) => tracing::info!(phase = name, "stopped: phase given back"),
        Err(e) => tracing::debug!(phase = name, "phase not held here: {e}"),
    }
}

/// The keeper loop: every worker tries, one at a time holds the role, writes the progress
/// summary and marks the end.
fn spawn_keeper(coord: Coordinator) -> tokio::task::JoinHandle<()> {
    let every = (coord.config().keeper_lease / 3).max(Duration::from_millis(500));
    tokio::spawn(async move {
        loop {
            match coord.keeper_step().await {
                Ok(KeeperStep::Finished(_)) => return,
                Ok(KeeperStep::Keeping(s)) => tracing::debug!(
                    done = s.items.done,
                    open = s.items.open(),
                    docs = s.docs_done,
                    "keeper summary"
                ),
                Ok(KeeperStep::NotKeeper { .. }) => {}
                Err(e) => tracing::debug!("keeper step: {e}"),
            }
            tokio::time::sleep(every).await;
        }
    })
}

/// Every item is complete or FAILED: make sure the migration is marked finished and
/// return the final status.
async fn finish(coord: &Coordinator) -> Result<Status, JobError> {
    loop {
        match coord.keeper_step().await {
            Ok(KeeperStep::Finished(s)) => return Ok(*s),
            Ok(KeeperStep::Keeping(s)) if s.items.open() == 0 && !s.setup_done => {
                return Err(JobError::Fatal(
                    "no work item is open but the items phase is not done".into(),
                ))
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) if e.is_transient() => tokio::time::sleep(Duration::from_secs(1)).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The identity of a migration for the store: what is copied (the source's identity) and
/// where to (the sink's, as `target`); or, when the operator named the migration, the name
/// alone (`migration`), for fleets that reach one repository or target under different
/// paths or host names.
pub fn identity<S: Source, K: Sink>(source: &S, sink: &K, name: Option<&str>) -> Identity {
    identity_from(source.identity(), sink.identity(), name)
}

/// [`identity`] from the source's keys and the sink's name.
pub fn identity_from(source: Identity, target: String, name: Option<&str>) -> Identity {
    if let Some(n) = name {
        return BTreeMap::from([("migration".to_string(), n.to_string())]);
    }
    let mut id = source;
    id.insert("target".into(), target);
    id
}

/// The identity key of the document program.
pub const PROGRAM_KEY: &str = "program";

/// `id` with the document program's digest (see [`program_digest`]) under
/// [`PROGRAM_KEY`]: resuming a store with another program (or none) is then refused as
/// another migration. A named migration (`--migration`) stays its name alone.
pub fn with_program(mut id: Identity, program: Option<&str>) -> Identity {
    if let Some(p) = program {
        if !id.contains_key("migration") {
            id.insert(PROGRAM_KEY.into(), p.to_string());
        }
    }
    id
}

/// A short digest of a program's text: `KIND:` and the first 16 hex digits of the SHA-256
/// of the text (`jq:…`, `doc-transformer-config:…`), so that the identity names the kind
/// of program and changes with any edit, without holding the text.
pub fn program_digest(kind: &str, text: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(text.as_bytes());
    let hex: String = d.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{kind}:{hex}")
}

/// Where a repository or a cluster is, as an identity records it: a URL without its user
/// info, query, fragment or trailing slash (scheme and host in lower case); a local path
/// made absolute with symbolic links resolved, also before it exists (`rfs run
/// --source-cluster` records the identity before the snapshot creates the directory).
pub fn identity_location(location: &str) -> String {
    let local = |p: &str| local_location(std::path::Path::new(p));
    let Some((scheme, rest)) = location.split_once("://") else {
        return local(location);
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let scheme = scheme.to_ascii_lowercase();
    if scheme == "file" {
        return local(rest);
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, h)| h)
        .to_ascii_lowercase();
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{path}")
    }
}

/// `path` absolute, `.` and `..` and symbolic links resolved as far as it exists; the part
/// that does not exist yet is appended as given (without `.` components or a trailing
/// slash), so the name stays the same once it is created.
fn local_location(path: &std::path::Path) -> String {
    use std::path::{Component, PathBuf};
    let Ok(abs) = std::path::absolute(path) else {
        return path.display().to_string();
    };
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    let mut existing = abs.as_path();
    let resolved = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            // Nothing of it exists (or `..` at the end): as absolute as it gets.
            _ => break PathBuf::new(),
        }
    };
    if resolved.as_os_str().is_empty() {
        let mut out = PathBuf::new();
        for c in abs.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        return out.display().to_string();
    }
    let mut out = resolved;
    for name in missing.iter().rev() {
        match name.to_str() {
            Some(".") => {}
            Some("..") => {
                out.pop();
            }
            _ => out.push(name),
        }
    }
    out.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15 (the migration identity): `rfs run --source-cluster` records the identity
    /// before the snapshot creates the repository directory, the job again after; both
    /// must name the same place, however the path was written.
    #[cfg(unix)]
    #[test]
    fn a_local_repository_is_named_alike_before_and_after_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&base, &link).unwrap();
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(&base.join("repo"), &cwd);
        let spellings = [
            format!("{}/repo", link.display()),
            format!("{}/./repo/", link.display()),
            format!("{}/sub/../repo", base.display()),
            relative.clone(),
            format!("file://{}/repo", link.display()),
        ];
        let before: Vec<String> = spellings.iter().map(|s| identity_location(s)).collect();
        std::fs::create_dir(base.join("repo")).unwrap();
        let after: Vec<String> = spellings.iter().map(|s| identity_location(s)).collect();
        let want = base.join("repo").display().to_string();
        for (s, (b, a)) in spellings.iter().zip(before.iter().zip(&after)) {
            assert_eq!(b, &want, "{s} before");
            assert_eq!(a, &want, "{s} after");
        }
    }

    /// `to` relative to `from` (both absolute): `../../x/y`.
    fn pathdiff(to: &std::path::Path, from: &std::path::Path) -> String {
        let to: Vec<_> = to.components().collect();
        let from: Vec<_> = from.components().collect();
        let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
        let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
        parts.extend(
            to[common..]
                .iter()
                .map(|c| c.as_os_str().to_string_lossy().into_owned()),
        );
        parts.join("/")
    }

    #[test]
    fn the_program_enters_an_unnamed_identity_only() {
        let source = BTreeMap::from([("repository".to_string(), "/r".to_string())]);
        let a = program_digest("jq", ".a = 1");
        assert_eq!(a, program_digest("jq", ".a = 1"));
        assert_ne!(a, program_digest("jq", ".a = 2"));
        assert!(a.starts_with("jq:") && a.len() == 3 + 16, "{a}");
        let plain = identity_from(source.clone(), "t".into(), None);
        let with = with_program(plain.clone(), Some(&a));
        assert_eq!(with.get(PROGRAM_KEY), Some(&a));
        assert_ne!(with, plain);
        assert_eq!(with_program(plain.clone(), None), plain);
        let named = identity_from(source, "t".into(), Some("m1"));
        assert_eq!(with_program(named.clone(), Some(&a)), named);
    }

    #[test]
    fn identity_locations_drop_credentials_and_options() {
        assert_eq!(
            identity_location("HTTPS://elastic:Pw@Search.Example:9200/?pretty"),
            "https://search.example:9200"
        );
        assert_eq!(
            identity_location("s3://bucket/base/path/?region=eu-west-1&endpoint=x"),
            "s3://bucket/base/path"
        );
        assert_eq!(identity_location("http://h:1"), "http://h:1");
        let dir = tempfile::tempdir().unwrap();
        let abs = std::fs::canonicalize(dir.path())
            .unwrap()
            .display()
            .to_string();
        let dotted = format!("{}/./", dir.path().display());
        assert_eq!(identity_location(&dotted), abs);
        assert_eq!(identity_location(&format!("file://{dotted}")), abs);
        assert_eq!(identity_location("/no/such/repo/"), "/no/such/repo");
    }
}
