//! `rfs table run` and `rfs table verify`: a PostgreSQL table into an index (`_bulk`), a
//! directory of JSON lines, or a DynamoDB table, cut into slots that a fleet of identical
//! processes leases through the coordination store; then the table against what was
//! written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ::verify::{verify, Options, Sample, VerifyReport};
use anyhow::Context;
use connectors::dynamodb::dynamo_key_of;
use connectors::hints::hints_of;
use connectors::table::{KeyGuard, TableSettings, TableSource};
use connectors::{
    open_lookup, open_sink, open_source_as, sink_identity, BoxedSink, BoxedSource, OpenedLookup,
    OpenedSource, Settings, SourceShape,
};
use metadata::Naming;
use programs::routes::Rename;
use table::{SlotRule, TableOptions};

use super::common::{runtime, usize_in, StoreArgs, WorkerArgs};
use super::engine::{finish, run_job, shutdown_signal, JobSpec, Role, Watch};
use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Copy the table: plan slots (once for the fleet), then lease slots and stream their
    /// rows into the sink until none is left. Start N copies anywhere with the same flags.
    Run(RunArgs),
    /// Compare the table with the sink: per slot, every row's key looked up in the target,
    /// and a sample of rows (or --all) compared field by field. Exit code 6 on a mismatch.
    Verify(VerifyArgs),
}

/// Which table, how it is cut, where it goes.
#[derive(Clone, clap::Args)]
pub struct TableArgs {
    /// PostgreSQL URL of the table's database (`postgres://user:pw@host:5432/db`;
    /// `?sslmode=require` for TLS with a verified certificate, `&sslrootcert=CA.pem` for a
    /// private CA). A replica works: every read is a read-only statement.
    #[arg(long, env = "RFS_SOURCE", value_name = "URL", hide_env_values = true)]
    pub source: String,
    /// The table (`room_events`, `app.room_events`; quote parts with capitals or dots:
    /// `"App"."Events"`).
    #[arg(long, env = "RFS_TABLE", value_name = "TABLE")]
    pub table: String,
    /// The key column: unique (a primary key or a unique index of its own), sortable, NOT
    /// NULL — ULID or UUIDv7 text, uuid, integers, numeric, timestamps, dates. Rows are read in
    /// its order; it is each row's id in the target.
    #[arg(long, env = "RFS_KEY", value_name = "COLUMN")]
    pub key: String,
    /// Slots by key time: `time:WIDTH` with WIDTH in s, m, h or d (`time:1h`): for ULID,
    /// UUIDv7 and timestamp keys; each slot holds one WIDTH of rows.
    #[arg(long, env = "RFS_SLOT_BY", value_name = "time:WIDTH", value_parser = SlotRule::parse_time, conflicts_with = "slots")]
    pub slot_by: Option<SlotRule>,
    /// Slots by key quantiles: about N slots of equal row counts, from a sample of keys
    /// (1–1000000; the default when --slot-by is not given: 64).
    #[arg(long, env = "RFS_SLOTS", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub slots: Option<u32>,
    /// Only rows with keys from this one on: a time (RFC 3339 or a date) for ULID, UUIDv7
    /// and timestamp keys, a key value otherwise.
    #[arg(long, env = "RFS_FROM", value_name = "TIME|KEY")]
    pub from: Option<String>,
    /// Only rows with keys before this one (the usual upper bound: when double writes
    /// started). A time or a key value, as --from.
    #[arg(long, env = "RFS_UNTIL", value_name = "TIME|KEY")]
    pub until: Option<String>,
    /// Slot order: `newest-first` numbers (and creates) the newest slot first.
    #[arg(long, env = "RFS_ORDER", value_enum, default_value_t = Order::OldestFirst)]
    pub order: Order,
    /// Rows per keyset page (1–100000).
    #[arg(long, env = "RFS_PAGE_ROWS", default_value_t = 5000, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub page_rows: u32,
    /// Longest one read may run on the server, in seconds (1–86400); a timeout is retried.
    #[arg(long, env = "RFS_STATEMENT_TIMEOUT", default_value_t = 60, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub statement_timeout: u64,
    /// Attempts per read while the source is unreachable or times out (1–1000), with
    /// exponential backoff and jitter from 0.2 s up to 30 s.
    #[arg(long, env = "RFS_SOURCE_ATTEMPTS", default_value_t = 10, value_name = "N", value_parser = usize_in(1, 1000))]
    pub source_attempts: usize,
    /// Where rows go: `http(s)://[user:pw@]host:9200/INDEX` (`_bulk`, `_id` = key),
    /// `file:///DIR` or a directory path (JSON lines `{"_index","_id","_source"}`, one file
    /// per process: `<table>.<tag>.jsonl`), or
    /// `dynamodb://TABLE?region=R[&endpoint=URL][&partition-key=COL][&sort-key=COL]` (one
    /// item per row; the key column is the partition key unless partition-key/sort-key, in
    /// the URL or as flags, name others; AWS credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
    /// AWS_SESSION_TOKEN or the profile in ~/.aws, region from the URL, AWS_REGION or the
    /// profile).
    #[arg(long, env = "RFS_SINK", value_name = "URL", hide_env_values = true)]
    pub sink: String,
    /// DynamoDB sinks: create the table when it does not exist (on-demand billing, the key
    /// from the mapping, typed by the columns: numbers N, bytea B, the rest S).
    #[arg(long, env = "RFS_CREATE_TABLE")]
    pub create_table: bool,
    /// DynamoDB sinks: the column that is the partition key (default: --key); the same as
    /// `partition-key=COL` in the sink URL.
    #[arg(long, env = "RFS_PARTITION_KEY", value_name = "COLUMN")]
    pub partition_key: Option<String>,
    /// DynamoDB sinks: the column that is the sort key (needs --partition-key); the same as
    /// `sort-key=COL` in the sink URL.
    #[arg(long, env = "RFS_SORT_KEY", value_name = "COLUMN")]
    pub sort_key: Option<String>,
    /// DynamoDB sinks: write even when the key mapping (partition key, sort key) is not
    /// unique in the table. Without it such a mapping is refused before a row is read,
    /// because rows of one key overwrite each other. With it, each row overwritten inside
    /// one batch is refused as key_collision (failure log, exit code 7); an overwrite
    /// across batches cannot be seen and is not counted. Any sink: a --transform program
    /// may change a row's `_id` or key attributes (without this flag such a row is
    /// skipped as key_changed).
    #[arg(long, env = "RFS_ALLOW_KEY_COLLISIONS")]
    pub allow_key_collisions: bool,
    /// Only these columns, in this order; `COLUMN=NAME` writes a column under another
    /// name (`id,title,body=text`). The key column is always read (it is the cursor and the
    /// id) and is in the documents only when listed. Default: every column.
    #[arg(
        long,
        env = "RFS_COLUMNS",
        value_delimiter = ',',
        value_name = "COLUMN[=NAME]",
        value_parser = parse_column
    )]
    pub columns: Vec<(String, String)>,
    /// Only rows matching this SQL predicate, added to every keyset read (`--where
    /// "deleted_at IS NULL AND tenant = 'acme'"`): rows read are the rows matched. It is
    /// part of the migration's identity and shown by `rfs status`; checked against the
    /// table at start.
    #[arg(long = "where", env = "RFS_WHERE", value_name = "SQL")]
    pub filter: Option<String>,
    /// PEM CA certificate(s) to trust for an https sink.
    #[arg(long, env = "RFS_SINK_CA", value_name = "FILE")]
    pub sink_ca: Option<PathBuf>,
    /// Accept any certificate from an https sink (tests and trusted networks only).
    #[arg(long, env = "RFS_SINK_INSECURE")]
    pub sink_insecure: bool,
}

/// One `--columns` entry: `COLUMN` or `COLUMN=NAME`.
fn parse_column(s: &str) -> Result<(String, String), String> {
    let (col, name) = s.split_once('=').unwrap_or((s, s));
    let (col, name) = (col.trim(), name.trim());
    if col.is_empty() || name.is_empty() {
        return Err(format!("{s:?}: expected COLUMN or COLUMN=NAME"));
    }
    Ok((col.to_string(), name.to_string()))
}

/// `--where`: one predicate, never a second statement.
fn check_where(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("--where is empty".into());
    }
    if s.contains(';') {
        return Err("--where holds one predicate, without `;`".into());
    }
    Ok(())
}

/// `--order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    OldestFirst,
    NewestFirst,
}

impl std::fmt::Debug for TableArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableArgs")
            .field("source", &redact::url(&self.source))
            .field("table", &self.table)
            .field("key", &self.key)
            .field("slot_by", &self.slot_by)
            .field("slots", &self.slots)
            .field("from", &self.from)
            .field("until", &self.until)
            .field("order", &self.order)
            .field("page_rows", &self.page_rows)
            .field("statement_timeout", &self.statement_timeout)
            .field("source_attempts", &self.source_attempts)
            .field("sink", &redact::url(&self.sink))
            .field("sink_ca", &self.sink_ca)
            .field("sink_insecure", &self.sink_insecure)
            .field("create_table", &self.create_table)
            .field("partition_key", &self.partition_key)
            .field("sort_key", &self.sort_key)
            .field("allow_key_collisions", &self.allow_key_collisions)
            .field("columns", &self.columns)
            .field("filter", &self.filter)
            .finish()
    }
}

/// What `--sink` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkUrl {
    /// `_bulk` into `index` of the cluster at `base` (credentials as given in the URL).
    Bulk { base: String, index: String },
    /// JSON lines in a directory.
    Files(PathBuf),
    /// Items of a DynamoDB table.
    Dynamo(connectors::dynamodb::DynamoUrl),
}

impl SinkUrl {
    /// Parses `--sink`. One arm per kind of sink.
    pub fn parse(s: &str) -> anyhow::Result<SinkUrl> {
        let shown = redact::url(s);
        let scheme = s.split_once("://").map(|(a, _)| a.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http") | Some("https") => {
                let mut u = url::Url::parse(s).with_context(|| format!("--sink {shown}"))?;
                let index = u
                    .path_segments()
                    .and_then(|mut p| p.next_back().map(str::to_string))
                    .filter(|i| !i.is_empty())
                    .with_context(|| {
                        format!("--sink {shown}: name the index as the URL's path (http://host:9200/INDEX)")
                    })?;
                let index = redact::percent_decode(&index).into_owned();
                let path = u.path().to_string();
                let base_path = path[..path.len() - path.rsplit('/').next().unwrap_or("").len()]
                    .trim_end_matches('/')
                    .to_string();
                u.set_path(&base_path);
                u.set_query(None);
                Ok(SinkUrl::Bulk {
                    base: u.to_string().trim_end_matches('/').to_string(),
                    index,
                })
            }
            Some("file") => {
                let u = url::Url::parse(s).with_context(|| format!("--sink {shown}"))?;
                let p = u
                    .to_file_path()
                    .map_err(|()| anyhow::anyhow!("--sink {shown}: not a local file URL"))?;
                Ok(SinkUrl::Files(p))
            }
            Some("dynamodb") => connectors::dynamodb::DynamoUrl::parse(s)
                .map(SinkUrl::Dynamo)
                .map_err(|e| anyhow::anyhow!("--sink {e}")),
            Some(other) => anyhow::bail!(
                "--sink {shown}: unknown scheme {other}:// (use http(s)://host/INDEX, file:///DIR, a directory or dynamodb://TABLE)"
            ),
            None => Ok(SinkUrl::Files(PathBuf::from(s))),
        }
    }
}

impl TableArgs {
    /// `--sink` parsed, with the DynamoDB flags folded into a DynamoDB URL (and refused
    /// for other sinks).
    fn sink_url(&self) -> anyhow::Result<SinkUrl> {
        let mut url = SinkUrl::parse(&self.sink)?;
        match &mut url {
            SinkUrl::Dynamo(u) => {
                for (flag, given, in_url) in [
                    ("--partition-key", &self.partition_key, &mut u.partition_key),
                    ("--sort-key", &self.sort_key, &mut u.sort_key),
                ] {
                    match (given, &in_url) {
                        (Some(g), Some(v)) if g != v => anyhow::bail!(
                            "{flag} {g} and the sink URL's {} ({v}) disagree; give one",
                            &flag[2..]
                        ),
                        (Some(g), _) => *in_url = Some(g.clone()),
                        (None, _) => {}
                    }
                }
                for (flag, set) in [
                    ("--sink-ca", self.sink_ca.is_some()),
                    ("--sink-insecure", self.sink_insecure),
                ] {
                    if set {
                        anyhow::bail!(
                            "{flag} applies to http(s):// sinks only (a dynamodb:// sink trusts the system's certificates)"
                        );
                    }
                }
                if u.sort_key.is_some() && u.partition_key.is_none() {
                    anyhow::bail!(
                        "a sort key needs a partition key too (--partition-key or partition-key= in the sink URL)"
                    );
                }
            }
            _ => {
                for (flag, set) in [
                    ("--create-table", self.create_table),
                    ("--partition-key", self.partition_key.is_some()),
                    ("--sort-key", self.sort_key.is_some()),
                ] {
                    if set {
                        anyhow::bail!("{flag} applies to a dynamodb:// sink only");
                    }
                }
            }
        }
        Ok(url)
    }

    /// The sink `--sink` names, through the connector registry: `_bulk` with the
    /// `--sink-ca`/`--sink-insecure` TLS and the identity stores recorded (`BASE/INDEX`,
    /// the index decoded); files; DynamoDB with its flags folded into the URL, the table
    /// checked against the key mapping (or created with `create_table`), rows converted
    /// with the source's column types.
    async fn open_sink(
        &self,
        worker: &WorkerArgs,
        source: &Arc<TableSource>,
        create_table: bool,
    ) -> anyhow::Result<BoxedSink> {
        let settings = Settings {
            create_table,
            ..worker.sink_settings()
        };
        let (url, settings) = self.registry_sink(settings)?;
        let opened = OpenedSource {
            source: BoxedSource::new(source.clone()),
            kind: "table",
            key_column: Some(source.key_attribute()),
            hints: hints_of(&source.columns()),
            groups: vec![source.group().to_string()],
            routed: None,
            removed: Vec::new(),
            notes: Vec::new(),
            metadata: None,
        };
        let sink = open_sink(&url, &settings, &opened).await;
        Ok(match self.connecting()? {
            Some(c) => sink.context(c)?.sink,
            None => sink?.sink,
        })
    }

    /// `--sink` as the connector registry takes it: the URL (a DynamoDB one with its
    /// flags folded in) and `settings` with what the `--sink-*` flags add to an
    /// `http(s)://` sink (TLS, and the identity stores recorded: `BASE/INDEX`, the index
    /// decoded).
    fn registry_sink(&self, mut settings: Settings) -> anyhow::Result<(String, Settings)> {
        let url = match self.sink_url()? {
            SinkUrl::Dynamo(u) => u.to_url(),
            SinkUrl::Files(_) => self.sink.clone(),
            SinkUrl::Bulk { base, index } => {
                settings.tls = self.sink_tls();
                settings.sink_identity = Some(format!("{}/{index}", redact::url(&base)));
                self.sink.clone()
            }
        };
        Ok((url, settings))
    }

    /// What an error connecting to an `http(s)://` sink says first.
    fn connecting(&self) -> anyhow::Result<Option<String>> {
        Ok(match self.sink_url()? {
            SinkUrl::Bulk { base, .. } => {
                Some(format!("connecting to the sink {}", redact::url(&base)))
            }
            _ => None,
        })
    }

    /// A lookup on what `--sink` holds, through the connector registry (as `rfs verify
    /// --to` opens one): `_mget`, the directory's files, or DynamoDB `BatchGetItem` with
    /// the rows converted as the sink converts them (the table must exist).
    async fn open_lookup(&self, source: &TableSource) -> anyhow::Result<OpenedLookup> {
        let (url, settings) = self.registry_sink(Settings::default())?;
        let shape = SourceShape {
            key_column: Some(source.key_attribute()),
            hints: hints_of(&source.columns()),
        };
        let opened = open_lookup(&url, &settings, &shape).await;
        Ok(match self.connecting()? {
            Some(c) => opened.context(c)?,
            None => opened.with_context(|| format!("--sink {}", redact::url(&self.sink)))?,
        })
    }

    /// TLS of an https sink.
    fn sink_tls(&self) -> cluster::TlsConfig {
        cluster::TlsConfig {
            ca_file: self.sink_ca.clone(),
            client_cert: None,
            client_key: None,
            insecure: self.sink_insecure,
        }
    }

    /// See [`check_key_unique`].
    async fn check_key_unique(
        &self,
        url: &connectors::dynamodb::DynamoUrl,
        source: &TableSource,
    ) -> anyhow::Result<()> {
        check_key_unique(url, source, self.allow_key_collisions).await
    }

    /// The program (if any) in front of `then`, guarded so that it cannot change what a
    /// row is written under (its `_id`; for DynamoDB its key attributes): see
    /// [`KeyGuard`]. `--allow-key-collisions` lets it.
    fn guarded(
        &self,
        transform: &super::transform::TransformArgs,
        source: &TableSource,
        then: Arc<dyn engine::transform::Transform>,
    ) -> anyhow::Result<Arc<dyn engine::transform::Transform>> {
        if transform.identity()?.is_none() || self.allow_key_collisions {
            return transform.wrap(then);
        }
        let key_of = match self.sink_url()? {
            SinkUrl::Dynamo(url) => {
                let partition = url
                    .partition_key
                    .clone()
                    .unwrap_or_else(|| source.key_attribute());
                let attrs = std::iter::once(partition).chain(url.sort_key).collect();
                Some(dynamo_key_of(hints_of(&source.columns()), attrs))
            }
            _ => None,
        };
        Ok(Arc::new(KeyGuard::new(transform.wrap(then)?, key_of)))
    }

    /// Connects to the table and builds the source, through the connector registry: the
    /// `--source` URL with the table, key, slot rule, bounds and order as settings.
    pub async fn source(&self, pool_size: usize) -> anyhow::Result<Arc<TableSource>> {
        if let Some(w) = &self.filter {
            check_where(w).map_err(anyhow::Error::msg)?;
        }
        if !matches!(
            connectors::scheme(&self.source).as_str(),
            "postgres" | "postgresql"
        ) {
            anyhow::bail!(
                "--source {}: a PostgreSQL URL (postgres://user:pw@host:5432/db)",
                redact::url(&self.source)
            );
        }
        let settings = Settings {
            table: TableSettings {
                options: TableOptions {
                    page_rows: self.page_rows,
                    statement_timeout: Duration::from_secs(self.statement_timeout),
                    attempts: self.source_attempts,
                    pool_size,
                    columns: self.columns.clone(),
                    filter: self.filter.clone(),
                    ..TableOptions::default()
                },
                name: Some(self.table.clone()),
                key: Some(self.key.clone()),
                slots: self.slots,
                rule: self.slot_by,
                from: self.from.clone(),
                until: self.until.clone(),
                newest_first: self.order == Order::NewestFirst,
            },
            ..Settings::default()
        };
        open_source_as("table", &self.source, &settings)
            .await?
            .source
            .downcast::<TableSource>()
            .context("a postgres:// source opened as another kind of source")
    }
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub worker: WorkerArgs,
    // The program sees each row as `{"_index": TABLE, "_id": KEY, "_source": {COLUMN:
    // VALUE, …}, …}`.
    #[command(flatten)]
    pub transform: super::transform::TransformArgs,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub worker: WorkerArgs,
    /// Rows compared field by field per slot (a random sample; 0–1000000, 0: keys only;
    /// --all for every row).
    #[arg(long, env = "RFS_VERIFY_SAMPLE", default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub sample: u64,
    /// Compare every row instead of a sample.
    #[arg(long, env = "RFS_VERIFY_ALL")]
    pub all: bool,
    /// Seed of the random sample (0–18446744073709551615): each run draws a new sample and
    /// prints its seed; give it here to compare the same rows again.
    #[arg(
        long,
        env = "RFS_VERIFY_SEED",
        value_name = "N",
        conflicts_with = "all"
    )]
    pub seed: Option<u64>,
    /// Keys listed per kind of mismatch (1–100000; the rest are counted).
    #[arg(long, env = "RFS_MAX_LISTED", default_value_t = 100, value_name = "N", value_parser = usize_in(1, 100_000))]
    pub max_listed: usize,
    // The run's program: each row is compared with what it yields (filtered rows are
    // expected absent).
    #[command(flatten)]
    pub transform: super::transform::TransformArgs,
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    match cmd {
        Command::Run(a) => runtime()?.block_on(run_table(a)),
        Command::Verify(a) => runtime()?.block_on(verify_table(a)),
    }
}

/// A tag unique to this process, for its files in a shared directory.
pub(crate) fn process_tag() -> String {
    let host = gethostname();
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

fn gethostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}

async fn run_table(args: RunArgs) -> anyhow::Result<u8> {
    let shutdown = shutdown_signal();
    let parallel = args.worker.parallel();
    let source = args.table.source(parallel + 2).await?;
    let store = args.store.open().await?;
    let group = source.group().to_string();
    let failures = args.worker.failure_log()?;
    // Like `rfs run`: a worker stays until the migration is finished (slots leased by
    // others may come free when their holders die).
    let opts = args.worker.job_options(true);
    tracing::info!(table = %group, store = %args.store.redacted(), "table worker ready");
    let boxed = BoxedSource::new(source.clone());
    let spec = match args.table.sink_url()? {
        SinkUrl::Bulk { index, .. } => {
            let sink = args.table.open_sink(&args.worker, &source, false).await?;
            let transform = args.table.guarded(
                &args.transform,
                &source,
                Arc::new(rename_to(&group, &index)),
            )?;
            JobSpec::new(boxed, transform, sink, store, failures, opts)
        }
        SinkUrl::Files(_) => {
            let sink = args.table.open_sink(&args.worker, &source, false).await?;
            let transform = args.table.guarded(
                &args.transform,
                &source,
                Arc::new(rename_to(&group, &group)),
            )?;
            JobSpec::new(boxed, transform, sink, store, failures, opts)
        }
        SinkUrl::Dynamo(url) => {
            if args.worker.create_only {
                anyhow::bail!("--create-only applies to _bulk sinks (BatchWriteItem overwrites items of the same key)");
            }
            args.table.check_key_unique(&url, &source).await?;
            let sink = args
                .table
                .open_sink(&args.worker, &source, args.table.create_table)
                .await?;
            let transform = args.table.guarded(
                &args.transform,
                &source,
                Arc::new(rename_to(&group, &group)),
            )?;
            JobSpec::new(boxed, transform, sink, store, failures, opts)
        }
    };
    let report = run_job(spec, Watch::of(&args.worker, shutdown)).await?;
    finish(&report, Role::Run)
}

/// How long a DynamoDB batch is retried while throttled: what the first lease allows, less
/// a tenth (at least 5 s) for the batch to fail and the item to be released in time.
pub(super) fn throttle_budget(lease_seconds: u64) -> Duration {
    let lease = lease_seconds.max(1);
    Duration::from_secs(lease.saturating_sub((lease / 10).max(5)).max(1))
}

/// Every row of `group` into `index`.
fn rename_to(group: &str, index: &str) -> Rename {
    let mut naming = Naming::default();
    if group != index {
        naming.renames.insert(group.to_string(), index.to_string());
    }
    Rename::new(naming, &[group.to_string()])
}

async fn verify_table(args: VerifyArgs) -> anyhow::Result<u8> {
    let source = args.table.source(4).await?;
    let (url, settings) = args.table.registry_sink(Settings::default())?;
    let identity = sink_identity(&url, &settings)?;
    // The store says whether the migration is over; verifying a running one finds rows
    // missing that are still on their way. Verifying never creates a store.
    match args.store.open_existing().await {
        Ok(store) => {
            let coord = coordination::Coordinator::new(store, args.worker.coordination_config());
            let name = args.worker.migration.as_deref();
            let program = args.transform.identity()?;
            check_identity(
                &coord,
                &args.store.redacted(),
                &source,
                &identity,
                name,
                program.as_deref(),
            )
            .await?;
            match coord.status().await {
                Ok(st) if st.items.total > 0 && !st.finished => crate::say!(
                    "note: the migration in {} is not finished ({} of {} slots done): rows still on their way count as missing",
                    args.store.redacted(),
                    st.items.done,
                    st.items.total
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!("reading the store: {e}"),
            }
        }
        Err(e) => tracing::warn!("{e:#}"),
    }
    let opened = args.table.open_lookup(&source).await?;
    let group = source.group().to_string();
    // The program sees each row named as the run named it: the sink's index for a
    // cluster, the table's name otherwise (where an unprogrammed row goes).
    let named = opened.index.clone().unwrap_or_else(|| group.clone());
    let transform = args.table.guarded(
        &args.transform,
        &source,
        Arc::new(rename_to(&group, &named)),
    )?;
    let lookup = opened.lookup;
    let seed = args.seed.unwrap_or_else(rand::random);
    let sample = if args.all {
        Sample::All
    } else {
        Sample::EveryKey {
            per_item: args.sample,
            seed,
        }
    };
    // Timestamp columns compare as instants where both sides hold one (dates, and any
    // other text, exactly).
    let instants = source
        .columns()
        .into_iter()
        .filter(|(_, shape)| *shape == engine::columns::ColumnShape::Time)
        .map(|(name, _)| name)
        .collect();
    let options = Options {
        max_listed: args.max_listed,
        instants,
        ..Options::new(sample)
    };
    let r = verify(source, transform, lookup.as_ref(), options)
        .await
        .context("verifying")?;
    let text = render(&r, &named, &lookup.describe(), args.max_listed);
    crate::say!("{}", text.trim_end());
    if !args.all && args.sample > 0 {
        crate::say!("sample drawn with seed {seed} (--seed {seed} compares the same rows again)");
    }
    if r.indices.iter().all(|v| v.ok()) {
        crate::say!("verified: every row is in the target");
        Ok(exit::OK)
    } else {
        Ok(exit::VERIFY_MISMATCH)
    }
}

/// The table's report as lines: the totals, per slot counts where something is off, then
/// the keys (a document a program sent to another index than `home` named with it).
fn render(r: &VerifyReport, home: &str, target: &str, max_listed: usize) -> String {
    let mut out = String::new();
    let bad_rows = r.skipped.get("bad_row").copied().unwrap_or(0);
    let failed = r.skipped_total() - bad_rows;
    let filtered: u64 = r.filtered.values().sum();
    let compared: u64 = r.items.iter().map(|i| i.compared).sum();
    let expected: u64 = r.items.iter().map(|i| i.expected).sum();
    let total = if r.indices.iter().any(|v| v.uncounted) {
        "?".to_string()
    } else {
        r.indices
            .iter()
            .map(|v| v.target_count.unwrap_or(0))
            .sum::<u64>()
            .to_string()
    };
    out.push_str(&format!(
        "{} slots, {} source rows ({bad_rows} not convertible), {compared} compared field by field; target {target}: {total} rows\n",
        r.items.len(),
        r.live,
    ));
    for s in &r.items {
        if s.found != s.expected || s.different > 0 {
            out.push_str(&format!(
                "slot {} ({} .. {}]: source {} rows, target {}, different {}\n",
                s.part,
                s.after.as_deref().unwrap_or("start"),
                s.until.as_deref().unwrap_or("end"),
                s.expected,
                s.found,
                s.different
            ));
        }
    }
    if filtered + failed > 0 {
        out.push_str(&format!(
            "the program yields {expected} documents; {filtered} rows filtered out and {failed} it fails on expected absent\n"
        ));
    }
    let named = |index: &str, key: &str| {
        if index == home {
            key.to_string()
        } else {
            format!("{key} (in {index})")
        }
    };
    let listed = |out: &mut String, what: &str, n: u64, keys: Vec<String>| {
        if n > 0 {
            out.push_str(&format!("{n} {what}:\n"));
            for k in keys.iter().take(max_listed) {
                out.push_str(&format!("  {k}\n"));
            }
            let shown = keys.len().min(max_listed) as u64;
            if n > shown {
                out.push_str(&format!("  … and {} more\n", n - shown));
            }
        }
    };
    let missing = r
        .indices
        .iter()
        .flat_map(|v| v.missing.iter().map(|k| named(&v.index, k)))
        .collect();
    let different = r
        .indices
        .iter()
        .flat_map(|v| v.differences.iter().map(|k| named(&v.index, k)))
        .collect();
    let count = |f: fn(&::verify::IndexVerdict) -> u64| r.indices.iter().map(f).sum();
    listed(
        &mut out,
        "rows missing from the target",
        count(|v| v.missing_count),
        missing,
    );
    listed(
        &mut out,
        "rows different in the target",
        count(|v| v.different_count),
        different,
    );
    // Documents on the target that no row accounts for, by the counts.
    let extra: u64 = r
        .indices
        .iter()
        .map(|v| {
            let there = v.expected - v.refused - v.missing_count;
            v.target_count.map_or(0, |t| t.saturating_sub(there))
        })
        .sum();
    if extra > 0 {
        out.push_str(&format!(
            "{extra} rows in the target that the source does not hold\n"
        ));
    }
    out
}

/// The migration the store holds must be the one verified (same table, key, slots,
/// limits and sink), as `rfs table run` records it; a store without one passes (nothing
/// ran yet), a named migration (`--migration`) records nothing to compare.
async fn check_identity(
    coord: &coordination::Coordinator,
    shown_store: &str,
    source: &TableSource,
    target: &str,
    name: Option<&str>,
    program: Option<&str>,
) -> anyhow::Result<()> {
    use engine::Source;
    let stored = match coord.identity().await {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            crate::say!("store {shown_store}: no migration recorded yet");
            return Ok(());
        }
        Err(e) => {
            tracing::warn!("reading the store's migration: {e}");
            return Ok(());
        }
    };
    if stored.contains_key("migration") && name.is_none() {
        return Ok(());
    }
    let ours = engine::job::with_program(
        engine::job::identity_from(source.identity(), target.to_string(), name),
        program,
    );
    if stored != ours {
        return Err(coordination::Error::OtherMigration {
            stored: coordination::identity_display(&stored),
            ours: coordination::identity_display(&ours),
        }
        .into());
    }
    Ok(())
}

/// A DynamoDB key mapping must be unique in the table, or rows of one key overwrite
/// each other; refused before a row is read unless `--allow-key-collisions`. The key
/// attributes are names in the rows as written (after `--columns`), so what is checked
/// is the column written under each: `--columns id=event_id,tenant=id` puts `tenant`
/// in attribute `id`. The default partition key is the key column's written name.
/// `rfs copy` from a table into DynamoDB checks the same, through this function.
pub async fn check_key_unique(
    url: &connectors::dynamodb::DynamoUrl,
    source: &TableSource,
    allow_key_collisions: bool,
) -> anyhow::Result<()> {
    let table = source.table();
    let partition = url
        .partition_key
        .clone()
        .unwrap_or_else(|| source.key_attribute());
    let attrs: Vec<(&str, &str)> = std::iter::once(("partition key", partition.as_str()))
        .chain(url.sort_key.as_deref().map(|s| ("sort key", s)))
        .collect();
    let mut columns = Vec::new();
    let mut shown = Vec::new();
    let mut absent = Vec::new();
    for (role, attr) in &attrs {
        match table.column_written_as(attr) {
            Some(c) if c.name == *attr => {
                shown.push(format!("{role} {attr}"));
                columns.push(c.name.as_str());
            }
            Some(c) => {
                shown.push(format!("{role} {attr} (column {})", c.name));
                columns.push(c.name.as_str());
            }
            None => {
                shown.push(format!("{role} {attr}"));
                absent.push(*attr);
            }
        }
    }
    let shown = shown.join(", ");
    let written: Vec<&str> = table.written_columns().map(|(_, n)| n).collect();
    if !absent.is_empty() {
        if allow_key_collisions {
            tracing::warn!(
                table = %source.group(),
                "the DynamoDB key ({shown}) names attributes no column is written as ({}): rows without them are refused as missing_key, a program that sets them may give rows one key (--allow-key-collisions)",
                absent.join(", ")
            );
            return Ok(());
        }
        anyhow::bail!(
            "the DynamoDB key ({shown}) names {} that no column of table {} is written as (written: {}): list the column in --columns, or map the key with --partition-key/--sort-key",
            absent.join(", "),
            source.group(),
            written.join(", ")
        );
    }
    match table.unique_over(&columns).await? {
        None => anyhow::bail!(
            "the DynamoDB key mapping ({shown}) names a column that table {} does not have",
            source.group()
        ),
        Some(true) => Ok(()),
        Some(false) if allow_key_collisions => {
            tracing::warn!(
                table = %source.group(),
                "the DynamoDB key ({shown}) is not unique in the table: rows of one key overwrite each other; those overwritten inside one batch are refused as key_collision, those across batches cannot be seen (--allow-key-collisions)"
            );
            Ok(())
        }
        Some(false) => anyhow::bail!(
            "the DynamoDB key ({shown}) is not unique in table {}: no unique index or primary key covers {}, so rows with equal keys would overwrite each other and be lost. Map a unique key (e.g. add --sort-key {}), or pass --allow-key-collisions to write anyway",
            source.group(),
            columns.join(", "),
            source.key_attribute()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_urls_parse() {
        assert_eq!(
            SinkUrl::parse("http://u:pw@h:9200/events").unwrap(),
            SinkUrl::Bulk {
                base: "http://u:pw@h:9200".into(),
                index: "events".into()
            }
        );
        assert_eq!(
            SinkUrl::parse("https://h/prefix/ev%20x").unwrap(),
            SinkUrl::Bulk {
                base: "https://h/prefix".into(),
                index: "ev x".into()
            }
        );
        assert!(SinkUrl::parse("http://h:9200/").is_err());
        assert_eq!(
            SinkUrl::parse("file:///tmp/out").unwrap(),
            SinkUrl::Files("/tmp/out".into())
        );
        assert_eq!(SinkUrl::parse("out").unwrap(), SinkUrl::Files("out".into()));
        let e = SinkUrl::parse("ftp://u:secret@h/x")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret"), "{e}");
        let SinkUrl::Dynamo(d) =
            SinkUrl::parse("dynamodb://events?region=us-east-1&partition-key=room").unwrap()
        else {
            panic!("not a DynamoDB sink")
        };
        assert_eq!(d.table, "events");
        assert_eq!(d.region.as_deref(), Some("us-east-1"));
        assert_eq!(d.partition_key.as_deref(), Some("room"));
        let e = SinkUrl::parse("dynamodb://t?region=us-east-1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 to 255"), "{e}");
    }
}
