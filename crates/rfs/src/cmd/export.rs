//! `rfs export`: every live document of a snapshot as JSON lines or `_bulk` bodies, to a
//! directory (one file per index) or stdout — the migration engine with a file sink and a
//! store of its own (nothing to set up). Shard files are read in place from the
//! repository, never copied to local disk.

use std::sync::Arc;

use anyhow::Context;
use connectors::Params;
use engine::Sink;
use engine::{JobEnd, JobOptions};
use programs::routes::Rename;

use super::engine::{run_job, JobSpec, Watch};
use crate::args::params::{put, put_some};
use crate::args::RepositoryArgs;
use crate::exit;
use crate::hiargs::Parts;
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub repo: RepositoryArgs,
    /// The snapshot to export.
    #[arg(long, env = "RFS_SNAPSHOT")]
    pub snapshot: String,
    #[command(flatten)]
    pub since: crate::args::SinceArgs,
    #[command(flatten)]
    pub rebuild: crate::args::RebuildArgs,
    /// Indices to export, as in `rfs migrate`: exact names, `*`/`?` wildcards or
    /// `regex:PATTERN`; repeatable or comma-separated. Default: all but data-stream
    /// failure stores (`.fs-…`, named in a WARN).
    #[arg(
        long = "index",
        env = "RFS_INDEX",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub index: Vec<String>,
    /// `jsonl`: one `{"_index","_id","_type"?,"_routing"?,"_source"}` object per line;
    /// `bulk`: action and source lines for `curl --data-binary @FILE …/_bulk` (no `_type`).
    #[arg(long, env = "RFS_FORMAT", value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// A directory (one `<index>.jsonl` / `<index>.bulk` file per index; an index name that
    /// is not a safe file name is cleaned and given a hash suffix) or `-` for stdout.
    #[arg(long, env = "RFS_OUT", default_value = "-", value_name = "DIR|-")]
    pub out: String,
    /// Do not check shard files against their Lucene checksums while reading them.
    #[arg(long, env = "RFS_NO_VERIFY_CHECKSUMS")]
    pub no_verify_checksums: bool,
    /// Shards read at once (1–256; default: the number of CPUs).
    #[arg(long, env = "RFS_PARALLEL", value_name = "N", value_parser = crate::args::usize_in(1, 256))]
    pub parallel: Option<usize>,
    /// Where documents that cannot be exported (no `_source`, undecodable) are recorded: a
    /// file, or an object-store prefix of parts (`s3://bucket/failures/`).
    #[arg(
        long,
        env = "RFS_FAILURE_LOG",
        default_value = "rfs-export-failures.jsonl",
        value_name = "FILE|URL"
    )]
    pub failure_log: std::path::PathBuf,
    #[command(flatten)]
    pub transform: crate::args::TransformArgs,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per document.
    Jsonl,
    /// `_bulk` request bodies.
    Bulk,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        // The snapshot through the connector registry: the repository location as the
        // URL, the snapshot, --since and the reading options as parameters, --index
        // patterns in the context.
        if args.since.since.as_deref() == Some(args.snapshot.as_str()) {
            anyhow::bail!(
                "--since {} names the snapshot being exported; give the earlier one",
                args.snapshot
            );
        }
        let mut params = Params::new();
        put(&mut params, "--snapshot", &args.snapshot);
        put(&mut params, "--no-verify-checksums", !args.no_verify_checksums);
        args.rebuild.params(&mut params);
        put_some(&mut params, "--since", args.since.since.as_ref());
        let mut ctx = super::engine::repository_context(&args.repo);
        ctx.read.index_patterns = args.index.clone();
        let opened = Parts::new(ctx)
            .from(params)
            .source_as("snapshot", args.repo.location()?)
            .await?;
        let names = opened.groups;
        let source = opened.source;
        let removed = opened.removed;
        // The file sink through the connector registry: `--out` as a path (`-`: stdout),
        // `--format` as its parameter. A path that reads as a URL stays a path.
        let out = if connectors::scheme(&args.out).is_empty() {
            args.out.clone()
        } else {
            format!("./{}", args.out)
        };
        let mut params = Params::new();
        put(
            &mut params,
            "--format",
            match args.format {
                ExportFormat::Jsonl => "jsonl",
                ExportFormat::Bulk => "bulk",
            },
        );
        let sink = Parts::default()
            .to(params)
            .sink(&out, &super::engine::opened(source.clone(), "snapshot"))
            .await?
            .sink;
        // One file per exported index, also for an index without documents.
        sink.prepare(&names)?;
        let failures = connectors::failure_log::FailureLogAt::parse(&args.failure_log)
            .open_writer(&crate::hiargs::process_tag())?
            .with_sources(true);
        let parallel = args.parallel.unwrap_or_else(JobOptions::default_parallel);
        let store: Arc<dyn coordination::Store> = Arc::new(coordination::MemoryStore::new());
        let transform = args.transform.wrap(Arc::new(Rename::default()))?;
        let spec = JobSpec::new(
            source,
            transform,
            sink,
            store,
            Arc::new(failures),
            JobOptions {
                parallel,
                // No fleet to wait for: a shard that cannot be read fails at once.
                coordination: coordination::Config {
                    max_attempts: 1,
                    ..coordination::Config::default()
                },
                ..JobOptions::default()
            },
        );
        let started = std::time::Instant::now();
        let watch = Watch {
            shutdown: super::engine::shutdown_signal(),
            progress: true,
            metrics_addr: None,
        };
        let report = run_job(spec, watch).await?;
        let secs = started.elapsed().as_secs_f64();
        if report.end == JobEnd::Stopped {
            return Ok(exit::STOPPED);
        }
        let status = report
            .status
            .as_ref()
            .context("the export ended without a final status")?;
        crate::say!(
            "exported {} documents from snapshot {} in {secs:.1}s",
            status.docs_done,
            args.snapshot
        );
        for (name, g) in &status.per_group {
            let mut line = format!("  {name}: {} documents", g.docs_done);
            if g.docs_skipped > 0 {
                line.push_str(&format!(", {} skipped", g.docs_skipped));
            }
            if let Some(t) = report.totals.groups.get(name) {
                for (shard, reason) in &t.broken {
                    line.push_str(&format!(", shard {shard} FAILED ({reason})"));
                }
            }
            crate::say!("{line}");
        }
        for (reason, n) in &status.reasons {
            if reason.starts_with("filtered:") {
                crate::say!("  {n} {reason} (left out by the transform)");
            } else if reason.starts_with("nested:") {
                crate::say!("  {n} {reason} (inside their parents' _source)");
            } else {
                crate::say!(
                    "  {n} {reason} (see {})",
                    connectors::failure_log::FailureLogAt::parse(&args.failure_log).shown()
                );
            }
        }
        if let Some(since) = &report.totals.since {
            crate::say!(
                "  a delta since snapshot {since}: the operations above are documents to index and ids to delete"
            );
            if !removed.is_empty() {
                crate::say!("  indices deleted since {since} (not in the export): {}", removed.join(", "));
            }
        }
        for f in &status.failures {
            crate::say!("FAILED {}: {}", f.id, f.last_error);
        }
        if !status.failures.is_empty() {
            anyhow::bail!("{} shard(s) could not be exported", status.failures.len());
        }
        if let Some(m) = &status.accounting {
            anyhow::bail!("{}", m.message());
        }
        Ok(if status.docs_skipped + status.docs_refused > 0 {
            exit::NOT_DELIVERED
        } else {
            exit::OK
        })
    })
}
