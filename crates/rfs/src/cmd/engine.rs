//! What the commands that run the engine share: building the snapshot source and its
//! transform from the flags, running a job with signals, a progress bar and the metrics
//! endpoint, and turning its report into lines and an exit code. Orchestration lives in
//! `engine::Job`; this only builds, calls and renders.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use connectors::{BoxedSink, BoxedSource, OpenedSource, Params};
use engine::phases::PhaseError;
use engine::{Job, JobEnd, JobReport};
use metadata::SourceMetadata;
use tokio::sync::watch;

use crate::args::params::{put, put_some};
use crate::args::{FilterArgs, RepositoryArgs, SourceArgs, TargetArgs, WorkerArgs};
use crate::exit;
use crate::hiargs::Parts;
use crate::ui::TerminalProgress;

/// A snapshot opened for a migration: its metadata, where each document goes, and the
/// engine's source and transform over it.
pub struct SnapshotMigration {
    pub metadata: SourceMetadata,
    pub source: BoxedSource,
    /// The routes and renames, behind the --transform program when there is one.
    pub transform: Arc<dyn engine::Transform>,
    /// A delta (`--since`): indices of the earlier snapshot that this one does not have,
    /// each with the target indices its documents went to.
    pub removed: Vec<(String, Vec<String>)>,
}

/// What the repository flags say about opening it.
pub fn repository_context(repo: &RepositoryArgs) -> connectors::Context {
    repo.context()
}

/// Opens the snapshot through the connector registry (the repository location as the
/// URL; the snapshot, `since` and the reading options as parameters, the routing of
/// `filter` in the context) and puts the --transform program before its routes. With `since`, the
/// source is the delta from that earlier snapshot.
pub async fn open_snapshot(
    source: &SourceArgs,
    filter: &FilterArgs,
    worker: Option<&WorkerArgs>,
    since: Option<&str>,
) -> anyhow::Result<SnapshotMigration> {
    if since == Some(source.snapshot.as_str()) {
        anyhow::bail!(
            "--since {} names the snapshot being migrated; give the earlier one",
            source.snapshot
        );
    }
    let mut params = Params::new();
    put(&mut params, "--snapshot", &source.snapshot);
    match worker {
        Some(w) => w.snapshot_params(&mut params),
        None => put(&mut params, "--no-verify-checksums", true),
    }
    source.rebuild.params(&mut params);
    put_some(&mut params, "--since", since);
    params.set("any-state", "true");
    let mut ctx = repository_context(&source.repository);
    ctx.read.routing = Some(filter.options()?);
    let location = source.repository.location()?;
    let opened = Parts::new(ctx)
        .from(params)
        .source_as("snapshot", location)
        .await?;
    let routed = opened
        .routed
        .context("a snapshot source opened without its routing")?;
    if !routed.removed.is_empty() {
        tracing::info!(
            "indices deleted since snapshot {}: {}",
            since.unwrap_or_default(),
            routed
                .removed
                .iter()
                .map(|(i, _)| i.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(SnapshotMigration {
        metadata: routed.metadata,
        source: opened.source,
        transform: filter.transform.wrap_routed(routed.transform)?,
        removed: routed.removed,
    })
}

/// The `_bulk` sink of `--target` (run, documents, redrive), through the connector
/// registry: the URL as given (its path a prefix, never an index), the client the
/// `--target-*` flags set up carried in `ctx`, the URL without credentials as the
/// sink's identity (as stores recorded it). Also returns the sink's client, for the
/// command's other calls to the target.
pub async fn open_target_sink(
    target: &TargetArgs,
    ctx: connectors::Context,
    source: &OpenedSource,
) -> anyhow::Result<(BoxedSink, cluster::Client)> {
    let opened = target
        .reached_by(ctx)?
        .sink(&target.target, source)
        .await
        .with_context(|| target.connecting())?;
    let client = opened
        .target_client
        .context("an http(s):// target opened as another kind of sink")?;
    Ok((opened.sink, client))
}

/// `source` as the registry's sinks see it: documents keyed by `_id`, grouped by index.
pub fn opened(source: BoxedSource, kind: &'static str) -> OpenedSource {
    OpenedSource {
        source,
        kind,
        key_column: None,
        hints: Default::default(),
        groups: Vec::new(),
        routed: None,
        removed: Vec::new(),
        notes: Vec::new(),
        metadata: None,
        key_check: None,
    }
}

/// The once-per-fleet metadata phase: `metadata`'s templates and indices created on the
/// target `client` as `options` say (converted for its version; what exists is left
/// alone), the report printed. BLOCKED conversions or a failed create end the phase with
/// an error, before any document is sent; `fix` says what the operator can do instead.
pub fn metadata_phase(
    metadata: SourceMetadata,
    client: cluster::Client,
    options: metadata::Options,
    fix: &'static str,
) -> engine::job::PhaseWork {
    Box::new(move || {
        Box::pin(async move {
            let report = metadata::migrate(&metadata, &client, &options)
                .await
                .map_err(|e| PhaseError::Other(format!("metadata migration: {e}")))?;
            crate::say!("{}", report.to_table());
            if report.is_blocked() {
                return Err(PhaseError::Other(
                    "metadata migration is BLOCKED by conversions the target cannot hold (see the table); nothing was created".into(),
                ));
            }
            if report.has_errors() {
                // Documents sent now would land in indices the target creates on its own,
                // with mappings it guesses: not a migration to end 0.
                return Err(PhaseError::Other(format!(
                    "metadata migration failed for some items (see the table); no document was sent: fix the cause, or {fix}"
                )));
            }
            Ok(serde_json::json!({ "summary": report.to_json() }))
        })
    })
}

/// The phase of a delta that deletes, on the target, the indices deleted since the
/// earlier snapshot (`--delete-removed-indices`): once for the fleet, before the items.
pub fn removed_indices_phase(
    client: cluster::Client,
    removed: Vec<(String, Vec<String>)>,
) -> engine::job::PhaseWork {
    Box::new(move || {
        Box::pin(async move {
            let mut deleted = Vec::new();
            let mut absent = Vec::new();
            for (index, targets) in removed {
                for t in targets {
                    let err = |e: cluster::ClusterError| {
                        PhaseError::Other(format!("deleting index {t} (was {index}): {e}"))
                    };
                    if client.index_exists(&t).await.map_err(err)? {
                        client.delete_index(&t).await.map_err(err)?;
                        crate::say!("deleted index {t} from the target: {index} was deleted since the earlier snapshot");
                        deleted.push(t);
                    } else {
                        absent.push(t);
                    }
                }
            }
            Ok(serde_json::json!({ "deleted": deleted, "absent": absent }))
        })
    })
}

/// Says which indices were deleted since the earlier snapshot and are left on the target.
pub fn report_removed(removed: &[(String, Vec<String>)], deleting: bool) {
    if removed.is_empty() || deleting {
        return;
    }
    let names: Vec<String> = removed
        .iter()
        .map(|(i, t)| format!("{i} (target {})", t.join(", ")))
        .collect();
    crate::say!(
        "indices deleted since the earlier snapshot, left on the target: {}; --delete-removed-indices deletes them",
        names.join("; ")
    );
}

/// A signal that becomes `true` on SIGTERM or SIGINT: workers finish their in-flight
/// batches, checkpoint and release their items. A second signal, or 60 s without
/// finishing, ends the process with the "stopped" code at once.
pub fn shutdown_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot listen for SIGTERM: {e}");
                    return;
                }
            };
        let first = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        };
        tracing::warn!(
            "{first}: finishing the batches in flight, checkpointing and releasing work items"
        );
        let _ = tx.send(true);
        tokio::select! {
            _ = term.recv() => tracing::error!("second signal: exiting now"),
            _ = tokio::signal::ctrl_c() => tracing::error!("second signal: exiting now"),
            _ = tokio::time::sleep(Duration::from_secs(60)) => {
                tracing::error!("still not stopped after 60 s: exiting now")
            }
        }
        std::process::exit(i32::from(exit::STOPPED));
    });
    rx
}

/// One run of the engine, whatever the command: a source and a sink chosen at run time
/// (any connector, behind `BoxedSource`/`BoxedSink`), the transform between them, where
/// the state and the failures go, and the phases that run once before the items. Every
/// command that copies documents fills one and hands it to [`run_job`].
pub struct JobSpec {
    pub source: BoxedSource,
    pub transform: Arc<dyn engine::Transform>,
    pub sink: BoxedSink,
    pub store: Arc<dyn coordination::Store>,
    pub failures: Arc<engine::FailureLog>,
    pub options: engine::JobOptions,
    /// Phases in the order they run (after the items phase is planned, before items).
    pub phases: Vec<(&'static str, engine::job::PhaseWork)>,
    /// Following the source after the backfill (`--follow`).
    pub follow: Option<(
        Arc<dyn engine::follow::ChangeFeed>,
        engine::follow::FollowOptions,
    )>,
}

impl JobSpec {
    /// A job of `source` into `sink` with no phases of its own.
    pub fn new(
        source: BoxedSource,
        transform: Arc<dyn engine::Transform>,
        sink: BoxedSink,
        store: Arc<dyn coordination::Store>,
        failures: Arc<engine::FailureLog>,
        options: engine::JobOptions,
    ) -> Self {
        JobSpec {
            source,
            transform,
            sink,
            store,
            failures,
            options,
            phases: Vec::new(),
            follow: None,
        }
    }

    /// Adds a phase (run once for the fleet).
    pub fn phase(mut self, name: &'static str, work: engine::job::PhaseWork) -> Self {
        self.phases.push((name, work));
        self
    }
}

/// How a command watches its job.
pub struct Watch {
    /// From [`shutdown_signal`], installed when the command starts so that a signal during
    /// setup is a graceful stop too.
    pub shutdown: watch::Receiver<bool>,
    /// A progress bar on a terminal.
    pub progress: bool,
    /// Serve Prometheus metrics on this address.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

impl Watch {
    /// What the worker flags say.
    pub fn of(worker: &WorkerArgs, shutdown: watch::Receiver<bool>) -> Watch {
        Watch {
            shutdown,
            progress: !worker.no_progress,
            metrics_addr: worker.metrics_addr,
        }
    }
}

/// Builds the job `spec` describes and runs it to its end, with signals, the progress bar
/// and the metrics endpoint: the one place a command starts the engine.
pub async fn run_job(spec: JobSpec, how: Watch) -> anyhow::Result<JobReport> {
    if *how.shutdown.borrow() {
        crate::say!("stopped by a signal before the work began");
    }
    let mut job = Job::new(
        Arc::new(spec.source),
        spec.transform,
        Arc::new(spec.sink),
        spec.store,
        spec.failures,
        spec.options,
    );
    for (name, work) in spec.phases {
        job = job.phase(name, work);
    }
    if let Some((feed, opts)) = spec.follow {
        job = job.follow(feed, opts);
    }
    let job = job.shutdown_on(how.shutdown);
    let metrics = job.metrics().clone();
    if let Some(addr) = how.metrics_addr {
        crate::ui::serve_metrics(addr, &metrics);
    }
    let bar = TerminalProgress::start(how.progress, job.totals(), metrics);
    let result = job.run().await;
    if let Some(b) = bar {
        b.finish();
    }
    Ok(result?)
}

/// What the command was, for the exit code of a finished migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `rfs run`: the migration is the point.
    Run,
    /// `rfs documents`: a worker that found nothing to do says so (exit 3).
    Documents,
}

/// Prints the outcome and returns the exit code.
pub fn finish(report: &JobReport, role: Role) -> anyhow::Result<u8> {
    let read = snapshot::shard::bytes_read();
    // Only a snapshot source reads shard files (a table migration has none to report).
    if read > 0 {
        tracing::info!(
            bytes = read,
            "this process read {read} bytes of shard files from the repository"
        );
    }
    match report.end {
        JobEnd::LeasedElsewhere => return Ok(exit::LEASED_ELSEWHERE),
        JobEnd::Stopped => {
            crate::say!(
                "stopped: this process delivered {} documents; its items are checkpointed",
                report.delivered
            );
            return Ok(exit::STOPPED);
        }
        JobEnd::ItemLimit => return Ok(exit::OK),
        JobEnd::Finished => {}
    }
    let Some(status) = &report.status else {
        return Ok(exit::OK);
    };
    if !status.failures.is_empty() {
        for f in &status.failures {
            crate::say!(
                "FAILED {} (index {}, part {}): {}",
                f.id,
                f.group,
                f.part,
                f.last_error
            );
        }
        anyhow::bail!(
            "{} work item(s) FAILED; see above and `rfs status`",
            status.failures.len()
        );
    }
    if let Some(m) = &status.accounting {
        // Counts that do not add up over the migration: something is unaccounted for (or
        // counted twice). Never a success, whatever the other figures say.
        anyhow::bail!("{}; see `rfs status`", m.message());
    }
    // Each index against the source's own total: fewer than an exact one is never a
    // success; an estimate, a snapshot's live count (nested children of resumed reads
    // are not counted) or more than an exact one (a read that started over in a new point
    // in time sees documents written since) is said.
    for c in engine::coverage::check(&report.totals, &status.per_group) {
        if c.verdict == engine::coverage::Verdict::Differs {
            if c.count == Some(engine::TotalCount::Exact) && c.accounted < c.total {
                anyhow::bail!(
                    "the source's total differs: {}; see `rfs status`",
                    c.describe()
                );
            }
            tracing::warn!("the source's total differs: {}", c.describe());
        }
    }
    crate::say!(
        "migration finished: {} documents delivered, {} refused by the target, {} skipped, in {} work items ({} delivered by this process)",
        status.docs_done,
        status.docs_refused,
        status.docs_skipped,
        status.items.done,
        report.delivered
    );
    let duplicates = status.possible_duplicates();
    if duplicates > 0 {
        // Delivered (the exit code stays), but never silent.
        crate::say!("{}", super::status::possible_duplicates_line(duplicates));
    }
    let filtered: u64 = status
        .reasons
        .iter()
        .filter(|(k, _)| k.starts_with("filtered:"))
        .map(|(_, n)| n)
        .sum();
    if filtered > 0 {
        crate::say!("{filtered} documents were filtered out by the transform (not failures):");
        for (reason, n) in status
            .reasons
            .iter()
            .filter(|(k, _)| k.starts_with("filtered:"))
        {
            crate::say!("  {n} {reason}");
        }
    }
    let undelivered = status.docs_refused + status.docs_skipped;
    if undelivered > 0 {
        for (reason, n) in status.reasons.iter().filter(|(k, _)| {
            !k.starts_with("filtered:")
                && !k.starts_with("nested:")
                && k.as_str() != coordination::POSSIBLE_DUPLICATES
        }) {
            crate::say!("  {n} {reason}");
        }
        crate::say!(
            "{undelivered} documents were not delivered: see the failure logs and `rfs status`; `rfs redrive` sends refused ones again once the cause is fixed"
        );
    }
    if role == Role::Documents && report.batches == 0 {
        return Ok(exit::NO_WORK_LEFT);
    }
    let mut undelivered = undelivered;
    if let Some(f) = &report.follow {
        crate::say!("{}", follow_summary(f));
        undelivered += f.refused + f.skipped;
    }
    Ok(if undelivered > 0 {
        exit::NOT_DELIVERED
    } else {
        exit::OK
    })
}

/// What following applied, for the end of a `--follow` run.
fn follow_summary(f: &engine::follow::FollowState) -> String {
    let a = &f.applied;
    format!(
        "following stopped: {} changes applied in {} rounds ({} inserts, {} updates, {} deletes, {} key changes; {} superseded in their round), {} writes and deletes delivered, {} refused, {} skipped; {}. When the migration is over, drop the feed: {}",
        a.changes(),
        f.rounds,
        a.inserts,
        a.updates,
        a.deletes,
        a.key_changes,
        f.superseded,
        f.delivered,
        f.refused,
        f.skipped,
        match f.lag_bytes() {
            Some(b) => format!("{b} bytes of log behind when last seen"),
            None => "lag unknown".to_string(),
        },
        f.drop_hint
    )
}
