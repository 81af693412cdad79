//! The coordination store and how a worker sends documents and holds leases.

use std::path::PathBuf;

use super::parsers::{float_in, migration_name, usize_in};

/// `--server-generated-ids`: when documents go to a cluster without their `_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServerGeneratedIds {
    /// Without ids when the target is OpenSearch Serverless (`--target-sigv4 aoss`).
    Auto,
    /// Always without ids: the target generates them.
    Always,
    /// Always with ids (a resend overwrites: idempotent).
    Never,
}

/// The coordination store and the lease protocol's settings.
#[derive(Clone, clap::Args)]
pub struct StoreArgs {
    /// Coordination store: `sqlite://PATH`, `postgres://…`, `redis://…`, or an index on a
    /// cluster (`http(s)://host:9200`).
    #[arg(
        long,
        env = "RFS_STORE",
        default_value = "sqlite://./rfs-state.db",
        value_name = "URL",
        hide_env_values = true
    )]
    pub store: String,
}

impl std::fmt::Debug for StoreArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreArgs")
            .field("store", &self.redacted())
            .finish()
    }
}

/// How a worker sends documents and holds leases.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// Documents per bulk request (1–1000000).
    #[arg(
        long,
        env = "RFS_MAX_BATCH_DOCS",
        default_value_t = engine::BatchLimits::default().max_docs,
        value_name = "N",
        value_parser = usize_in(1, 1_000_000)
    )]
    pub max_batch_docs: usize,
    /// Bytes per bulk request, action lines included (1024–1073741824, i.e. 1 KiB–1 GiB).
    #[arg(
        long,
        env = "RFS_MAX_BATCH_BYTES",
        default_value_t = engine::BatchLimits::default().max_bytes,
        value_name = "BYTES",
        value_parser = usize_in(1024, 1 << 30)
    )]
    pub max_batch_bytes: usize,
    /// Bulk requests in flight (1–256; it adapts down on 429s).
    #[arg(
        long,
        env = "RFS_CONCURRENCY",
        default_value_t = engine::PipelineOptions::default().in_flight,
        value_name = "K",
        value_parser = usize_in(1, 256)
    )]
    pub concurrency: usize,
    /// Where documents not delivered are recorded: a JSON-lines file, or an object-store
    /// prefix (`s3://bucket/failures/`, `gs://…`, `az://…`) where each worker writes its own
    /// gzip-compressed parts, kept when a pod goes.
    #[arg(
        long,
        env = "RFS_FAILURE_LOG",
        default_value = "rfs-failures.jsonl",
        value_name = "FILE|URL"
    )]
    pub failure_log: PathBuf,
    /// Index with `op_type=create` (existing ids are kept, conflicts counted as done).
    #[arg(long, env = "RFS_CREATE_ONLY")]
    pub create_only: bool,
    /// Whether documents are sent to a cluster target with their `_id` (never), without
    /// it, the target generating one (always), or without it when the target is OpenSearch
    /// Serverless, `--target-sigv4 aoss` (auto; its time-series and vector-search collections
    /// refuse ids, and the collection type cannot be read through the API, so `auto` treats
    /// every Serverless collection alike: give `never` for a search collection). Without ids
    /// a resend is not idempotent: documents of a batch in flight when a worker died, or of a
    /// request re-sent after its answer was lost, can arrive twice (`rfs status` reports the
    /// possible duplicates of a takeover, `rfs verify` counts them by content); deletes (a
    /// `--since` delta) cannot be sent.
    #[arg(
        long,
        env = "RFS_SERVER_GENERATED_IDS",
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub server_generated_ids: ServerGeneratedIds,
    /// Documents per second per worker at most (0.001–1000000000).
    #[arg(
        long,
        env = "RFS_MAX_DOCS_PER_SEC",
        value_name = "N",
        value_parser = float_in(1e-3, 1e9)
    )]
    pub max_docs_per_sec: Option<f64>,
    /// Bytes per second per worker at most (1–1000000000000, i.e. up to 1 TB/s).
    #[arg(
        long,
        env = "RFS_MAX_BYTES_PER_SEC",
        value_name = "N",
        value_parser = float_in(1.0, 1e12)
    )]
    pub max_bytes_per_sec: Option<f64>,
    /// Documents per second for the whole fleet together (0.001–1000000000): every worker
    /// takes its share from one budget per second kept in the coordination store, so a
    /// thousand workers respect one number. The per-worker limits and the backoff on 429s
    /// still apply to each worker.
    #[arg(
        long,
        env = "RFS_FLEET_MAX_DOCS_PER_SEC",
        value_name = "N",
        value_parser = float_in(1e-3, 1e9)
    )]
    pub fleet_max_docs_per_sec: Option<f64>,
    /// Bytes per second for the whole fleet together (1–1000000000000), shared like
    /// --fleet-max-docs-per-sec.
    #[arg(
        long,
        env = "RFS_FLEET_MAX_BYTES_PER_SEC",
        value_name = "N",
        value_parser = float_in(1.0, 1e12)
    )]
    pub fleet_max_bytes_per_sec: Option<f64>,
    /// Split shards with more Lucene documents than this into doc-id ranges at setup
    /// (1–2147483647).
    #[arg(
        long,
        env = "RFS_SPLIT_DOCS",
        default_value_t = 5_000_000,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64)
    )]
    pub split_docs: u64,
    /// Work period of an item, in seconds, before the rest is handed to a successor item
    /// (1–86400; doubles with each acquisition). Without heartbeat (`--renew-seconds 0`)
    /// this is the lease itself.
    #[arg(
        long,
        env = "RFS_LEASE_SECONDS",
        default_value_t = coordination::Config::default().initial_lease.as_secs(),
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub lease_seconds: u64,
    /// Heartbeat: renew the item's lease every this many seconds while working (0–3600;
    /// 0: no heartbeat, the lease is --lease-seconds). The lease in the store is
    /// min(3 × this, --lease-seconds), doubled per earlier attempt of the item: a worker
    /// that dies (SIGKILL, lost host) loses its item within one such lease (30 s by
    /// default), and a worker that cannot renew stops writing before its lease ends.
    #[arg(
        long,
        env = "RFS_RENEW_SECONDS",
        default_value_t = coordination::Config::default().renew_every.as_secs_f64(),
        value_name = "SECS",
        value_parser = float_in(0.0, 3600.0)
    )]
    pub renew_seconds: f64,
    /// Acquisitions of an item before it is marked FAILED (1–100).
    #[arg(
        long,
        env = "RFS_MAX_ATTEMPTS",
        default_value_t = coordination::Config::default().max_attempts,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100)
    )]
    pub max_attempts: u32,
    /// Seconds between progress checkpoints into the work item (0.05–3600).
    #[arg(
        long,
        env = "RFS_CHECKPOINT_SECONDS",
        default_value_t = engine::PipelineOptions::default().checkpoint_every.as_secs_f64(),
        value_name = "SECS",
        value_parser = float_in(0.05, 3600.0)
    )]
    pub checkpoint_seconds: f64,
    /// Seconds between reads of the control record (RUN / PAUSE / STOP) (0.05–60).
    #[arg(
        long,
        env = "RFS_CONTROL_SECONDS",
        default_value_t = engine::PipelineOptions::default().control_every.as_secs_f64(),
        value_name = "SECS",
        value_parser = float_in(0.05, 60.0)
    )]
    pub control_seconds: f64,
    /// Serve Prometheus metrics on this address (`127.0.0.1:9464`).
    #[arg(long, env = "RFS_METRICS_ADDR", value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// No progress bar even on a terminal.
    #[arg(long, env = "RFS_NO_PROGRESS")]
    pub no_progress: bool,
    /// Work items this process works on at once, each with its own lease (1–256; default:
    /// the number of CPUs).
    #[arg(
        long,
        env = "RFS_PARALLEL",
        value_name = "N",
        value_parser = usize_in(1, 256)
    )]
    pub parallel: Option<usize>,
    /// Bytes of framed batches the whole process may hold, read ahead and in flight
    /// (1 MiB–16 GiB; default 128 MiB, raised to hold at least two batches per item).
    #[arg(
        long,
        env = "RFS_MEMORY_BUDGET",
        value_name = "BYTES",
        value_parser = usize_in(1 << 20, 16 << 30)
    )]
    pub memory_budget: Option<usize>,
    /// Do not check shard files against their Lucene checksums while reading them.
    #[arg(long, env = "RFS_NO_VERIFY_CHECKSUMS")]
    pub no_verify_checksums: bool,
    /// Seconds one bulk request's documents are retried at most (10–86400; 429s, 5xx,
    /// timeouts) before the batch fails and the item is retried later (--max-attempts).
    #[arg(
        long,
        env = "RFS_BULK_RETRY_SECONDS",
        default_value_t = 300,
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(10..=86_400)
    )]
    pub bulk_retry_seconds: u64,
    /// Name this migration in the store (1–100 visible characters). The store records
    /// what the first worker copies where (repository, snapshot, target) and refuses a
    /// worker of another migration (exit 2); with a name, the name alone is checked, for
    /// fleets that reach one repository or target under different paths or host names.
    #[arg(
        long,
        env = "RFS_MIGRATION",
        value_name = "NAME",
        value_parser = migration_name
    )]
    pub migration: Option<String>,
}
