//! `rfs` — Reindex-from-Snapshot. One binary, one subcommand per job; this file only
//! parses the command line, sets up logging and dispatches to `cmd::*`.

mod cmd;
mod config;
mod dashboard;
mod exit;
mod failure_logs;
mod logging;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc rather than the system allocator: every document allocates its id and
/// `_source` and frees them after its batch is acknowledged, and with glibc's allocator
/// that churn cost a worker about a fifth of its CPU (`scripts/bench-e2e`: about 400 MB/s
/// of `_source` per core with glibc, 510–650 with mimalloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Move every document of an Elasticsearch/OpenSearch snapshot into another cluster.
///
/// rfs reads a snapshot repository in place (local disk or S3), recreates templates and
/// indices on the target, and re-indexes every live document with its original `_id`
/// through `_bulk`. Any number of identical `rfs run` processes share the work through a
/// coordination store (SQLite file, PostgreSQL, Redis, or an index on a cluster).
///
/// Every flag can also be set by an `RFS_*` environment variable (shown in each
/// command's --help) or by a key of the TOML file given with --config: the key is the
/// flag's long name (`target = "http://localhost:9200"`). Flags win over the
/// environment, the environment over the config file.
///
/// Exit codes: 0 done; 1 fatal error; 2 usage error; 3 no work left for this worker;
/// 4 all remaining work is leased by other workers; 5 stopped by `rfs stop`;
/// 6 `rfs verify` found a mismatch.
#[derive(Debug, Parser)]
#[command(name = "rfs", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// TOML file whose keys (flag long names) give defaults for every flag.
    #[arg(long, global = true, env = "RFS_CONFIG", value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Log format: `text` for people, `json` for log pipelines (one object per line).
    #[arg(long, global = true, env = "RFS_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// More log output (-v debug, -vv trace). `RFS_LOG` takes a full filter (`rfs=debug,cluster=trace`).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only warnings and errors.
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What is in a snapshot repository: snapshots, indices, shards, doc counts, codecs, templates.
    Inspect(cmd::inspect::Args),
    /// Write every live document of a snapshot as JSON lines or bulk requests; no cluster needed.
    Export(cmd::export::Args),
    /// Create a snapshot on a source cluster (deterministic name) and wait for it.
    #[command(subcommand)]
    Snapshot(cmd::snapshot::Command),
    /// Templates and indices: `evaluate` shows what would be done, `migrate` does it.
    #[command(subcommand)]
    Metadata(cmd::metadata::Command),
    /// A worker: lease document work items and stream their shards into the target until none is left.
    Documents(cmd::documents::Args),
    /// The whole migration, every phase guarded by the store: start N copies anywhere.
    Run(cmd::run::Args),
    /// Fleet-wide progress: items by state, documents and bytes done, rate, ETA, failures.
    Status(cmd::status::Args),
    /// Ask every worker to finish its in-flight batches, checkpoint, release and wait.
    Pause(cmd::control::Args),
    /// Let paused workers continue.
    Resume(cmd::control::Args),
    /// Ask every worker to finish its in-flight batches, checkpoint, release and exit (code 5).
    Stop(cmd::control::Args),
    /// Compare target and snapshot: live counts per index and sampled documents by id.
    Verify(cmd::verify::Args),
    /// Read Lucene index directories directly (debugging and format checks).
    #[command(subcommand)]
    Lucene(cmd::lucene::LuceneCommand),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(cmd::bench::Command),
}

fn main() -> ExitCode {
    if let Err(e) = config::apply_config_file_to_env() {
        eprintln!("error: {e:#}");
        return ExitCode::from(exit::USAGE);
    }
    let cli = Cli::parse();
    logging::init(&cli.global.log_format, cli.global.verbose, cli.global.quiet);
    let result = match cli.command {
        Command::Inspect(a) => cmd::inspect::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Snapshot(c) => cmd::snapshot::run(c),
        Command::Metadata(c) => cmd::metadata::run(c),
        Command::Documents(a) => cmd::documents::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Status(a) => cmd::status::run(a),
        Command::Pause(a) => cmd::control::run(a, "pause"),
        Command::Resume(a) => cmd::control::run(a, "resume"),
        Command::Stop(a) => cmd::control::run(a, "stop"),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Lucene(c) => cmd::lucene::run(c),
        Command::Bench(c) => cmd::bench::run(c),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            ExitCode::from(exit::FATAL)
        }
    }
}
