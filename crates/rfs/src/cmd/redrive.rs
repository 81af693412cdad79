//! `rfs redrive`: send the documents a failure log says the target refused once more, after
//! the cause is fixed (a mapping corrected, a cluster block lifted). The engine does it: the
//! failure log is the source (`failure-log://FILE` in the connector registry), the
//! target's `_bulk` the sink (`--target`, through the registry too), and the job's failure
//! log the remaining log (what is refused again, and what the log cannot re-drive).
//! Documents the source could not produce (skipped) cannot be re-driven from a log and
//! are counted.

use std::path::PathBuf;

use std::sync::Arc;

use anyhow::Context;
use connectors::failure_log::FailureLogAt;
use engine::failure_log::{NO_SOURCE, SKIPPED_BY_SOURCE};
use engine::BatchLimits;
use engine::{JobEnd, JobOptions};
use programs::routes::Rename;

use super::engine::{open_target_sink, run_job, shutdown_signal, JobSpec, Watch};
use crate::args::{usize_in, TargetArgs};
use crate::exit;
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The failure log to re-drive (written by `rfs run`/`rfs documents`): a file, or an
    /// object-store prefix (`s3://bucket/failures/`), every worker's parts under it.
    #[arg(long = "failure-log", env = "RFS_FAILURE_LOG", value_name = "FILE|URL")]
    pub failure_log: PathBuf,
    /// Where documents refused again are recorded (default: FILE with `.remaining` added;
    /// for a prefix, the prefix with `-remaining` added: `s3://bucket/failures-remaining/`).
    #[arg(long, env = "RFS_REMAINING_LOG", value_name = "FILE|URL")]
    pub remaining: Option<PathBuf>,
    /// Documents per bulk request (1–100000).
    #[arg(
        long,
        env = "RFS_MAX_BATCH_DOCS",
        default_value_t = 500,
        value_name = "N",
        value_parser = usize_in(1, 100_000)
    )]
    pub max_batch_docs: usize,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let shutdown = shutdown_signal();
        let source = crate::hiargs::Parts::default()
            .source(&connectors::failure_log::url_of(&args.failure_log))
            .await?;
        for note in &source.notes {
            tracing::info!("{note}");
        }
        let log = FailureLogAt::parse(&args.failure_log);
        let remaining_at = match &args.remaining {
            Some(p) => FailureLogAt::parse(p),
            None => log.remaining(),
        };
        let ctx = connectors::Context {
            batch: BatchLimits {
                max_docs: args.max_batch_docs,
                ..BatchLimits::default()
            },
            bulk: cluster::BulkOptions {
                refuse_exhausted_items: true,
                ..cluster::BulkOptions::default()
            },
            ..connectors::Context::default()
        };
        let (sink, _) = open_target_sink(&args.target, ctx, &source).await?;
        // What is not delivered this time (refused again, or not sendable from the log)
        // is the job's failure log: the remaining log.
        let remaining = remaining_at
            .open_writer(&crate::hiargs::process_tag())?
            .with_sources(true);
        let spec = JobSpec::new(
            source.source,
            Arc::new(Rename::default()),
            sink,
            Arc::new(coordination::MemoryStore::new()),
            Arc::new(remaining),
            JobOptions {
                // A server that fails the request fails the re-drive at once.
                coordination: coordination::Config {
                    max_attempts: 1,
                    ..coordination::Config::default()
                },
                ..JobOptions::default()
            },
        );
        let watch = Watch {
            shutdown,
            progress: false,
            metrics_addr: None,
        };
        let report = run_job(spec, watch)
            .await
            .with_context(|| format!("re-driving {}", log.shown()))?;
        if report.end == JobEnd::Stopped {
            return Ok(exit::STOPPED);
        }
        let status = report
            .status
            .as_ref()
            .context("the re-drive ended without a final status")?;
        if let Some(f) = status.failures.first() {
            anyhow::bail!("re-driving {}: {}", log.shown(), f.last_error);
        }
        let count = |reason: &str| {
            status
                .reasons
                .iter()
                .filter(|(k, _)| k.strip_prefix("skipped:") == Some(reason))
                .map(|(_, n)| *n)
                .sum::<u64>()
        };
        let (no_source, skipped) = (count(NO_SOURCE), count(SKIPPED_BY_SOURCE));
        let refused = status.docs_refused;
        crate::say!(
            "re-driven: {} documents delivered, {refused} refused again, {no_source} could not be sent (no source in the log), {skipped} skipped by the source (cannot be re-driven from a log)",
            status.docs_done
        );
        if refused + no_source > 0 {
            crate::say!("documents still not delivered are in {}", remaining_at.shown());
            return Ok(exit::NOT_DELIVERED);
        }
        Ok(exit::OK)
    })
}
