//! `rfs table run` and `rfs table verify`: a PostgreSQL table into an index (`_bulk`), a
//! directory of JSON lines, or a DynamoDB table, cut into slots that a fleet of identical
//! processes leases through the coordination store; then the table against what was
//! written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ::verify::{verify, Options, Sample, VerifyReport};
use anyhow::Context;
use connectors::{BoxedSource, KeyGuard, KeyOf, OpenedLookup, OpenedSink, OpenedSource, Params};
use metadata::Naming;
use programs::routes::Rename;
use table::SlotRule;

use super::engine::{finish, run_job, shutdown_signal, JobSpec, Role, Watch};
use crate::args::params::{put, put_set, put_some};
use crate::args::{usize_in, StoreArgs, WorkerArgs};
use crate::exit;
use crate::hiargs::Parts;
use crate::runtime::runtime;

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

impl TableArgs {
    /// The sink's parameters and `ctx` with what the `--sink*` flags say to the sink the
    /// registry opens: TLS of an `http(s)://` sink, whose URL must name the index
    /// (`path=index`: the identity stores recorded is `BASE/INDEX`, the index decoded);
    /// DynamoDB's `--create-table` and key flags (folded into its URL by the connector,
    /// refused by the other sinks) and `--allow-key-collisions`. A DynamoDB sink refuses
    /// the TLS flags itself.
    fn sink_parts(&self, mut ctx: connectors::Context) -> Parts {
        let mut params = Params::new();
        params.offer("--sink", "path", "index");
        put_set(&mut params, "--create-table", self.create_table);
        put_some(&mut params, "--partition-key", self.partition_key.as_ref());
        put_some(&mut params, "--sort-key", self.sort_key.as_ref());
        ctx.to.tls = self.sink_tls();
        ctx.allow_key_collisions = self.allow_key_collisions;
        Parts::new(ctx).to(params)
    }

    /// The sink `--sink` names, through the connector registry (see
    /// [`Self::sink_parts`]): `_bulk`, files, or DynamoDB (the table checked against
    /// the key mapping, which must be unique in the source table, or created with
    /// `--create-table`; rows converted with the source's column types).
    async fn open_sink(
        &self,
        worker: &WorkerArgs,
        source: &OpenedSource,
    ) -> anyhow::Result<OpenedSink> {
        Ok(self
            .sink_parts(worker.context())
            .sink(&self.sink, source)
            .await?)
    }

    /// A lookup on what `--sink` holds, through the connector registry (as `rfs verify
    /// --to` opens one): `_mget`, the directory's files, or DynamoDB `BatchGetItem` with
    /// the rows converted as the sink converts them (the table must exist).
    async fn open_lookup(&self, source: &OpenedSource) -> anyhow::Result<OpenedLookup> {
        self.sink_parts(connectors::Context::default())
            .lookup(&self.sink, &source.shape())
            .await
            .with_context(|| format!("--sink {}", redact::url(&self.sink)))
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

    /// The program (if any) in front of `then`, guarded so that it cannot change what a
    /// row is written under (its `_id`; the sink's key, `key_of`, for DynamoDB its key
    /// attributes): see [`KeyGuard`]. `--allow-key-collisions` lets it.
    fn guarded(
        &self,
        transform: &crate::args::TransformArgs,
        key_of: Option<KeyOf>,
        then: Arc<dyn engine::transform::Transform>,
    ) -> anyhow::Result<Arc<dyn engine::transform::Transform>> {
        if transform.identity()?.is_none() || self.allow_key_collisions {
            return transform.wrap(then);
        }
        Ok(Arc::new(KeyGuard::new(transform.wrap(then)?, key_of)))
    }

    /// Connects to the table and builds the source, through the connector registry: the
    /// `--source` URL with the table, key, slot rule, bounds, order, reading and filter
    /// flags as parameters; a connection pool of `parallel` plus 2.
    pub async fn source(&self, parallel: usize) -> anyhow::Result<OpenedSource> {
        if !matches!(
            connectors::scheme(&self.source).as_str(),
            "postgres" | "postgresql"
        ) {
            anyhow::bail!(
                "--source {}: a PostgreSQL URL (postgres://user:pw@host:5432/db)",
                redact::url(&self.source)
            );
        }
        let mut p = Params::new();
        put(&mut p, "--table", &self.table);
        put(&mut p, "--key", &self.key);
        put_some(&mut p, "--slots", self.slots);
        put_some(
            &mut p,
            "--slot-by",
            crate::args::params::slot_by(self.slot_by),
        );
        put_some(&mut p, "--from", self.from.as_ref());
        put_some(&mut p, "--until", self.until.as_ref());
        put(
            &mut p,
            "--order",
            match self.order {
                Order::OldestFirst => "oldest-first",
                Order::NewestFirst => "newest-first",
            },
        );
        put(&mut p, "--page-rows", self.page_rows);
        put(&mut p, "--statement-timeout", self.statement_timeout);
        put(&mut p, "--source-attempts", self.source_attempts);
        put_some(
            &mut p,
            "--columns",
            crate::args::params::columns(&self.columns),
        );
        put_some(&mut p, "--where", self.filter.as_ref());
        let ctx = connectors::Context {
            parallel,
            ..connectors::Context::default()
        };
        Ok(Parts::new(ctx)
            .from(p)
            .source_as("table", &self.source)
            .await?)
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
    pub transform: crate::args::TransformArgs,
    #[command(flatten)]
    pub follow: FollowArgs,
}

/// Following the table after the backfill.
#[derive(Debug, Clone, clap::Args)]
pub struct FollowArgs {
    /// After the backfill, apply the table's changes (INSERT, UPDATE, DELETE, in commit
    /// order per key) until `rfs stop`: a logical replication slot and a publication are
    /// made before the first row is read (the server needs wal_level=logical; the user
    /// REPLICATION or superuser, and table ownership to create the publication), so no
    /// change falls between the backfill and the stream. One process of the fleet
    /// follows, the others stand by. `rfs status` shows the lag and the WAL the slot
    /// keeps: drop the slot when the migration is over (the command is shown there).
    #[arg(long, env = "RFS_FOLLOW")]
    pub follow: bool,
    /// The replication slot's and publication's name (default: `rfs_` and 16 hex digits
    /// of the migration's identity). Lower-case letters, digits and `_`, 1–63.
    #[arg(long, env = "RFS_FOLLOW_NAME", value_name = "NAME", requires = "follow", value_parser = parse_feed_name)]
    pub follow_name: Option<String>,
    /// Seconds to wait when the follower has applied everything (0.05–3600).
    #[arg(long, env = "RFS_FOLLOW_POLL", value_name = "SECS", default_value_t = 1.0, requires = "follow", value_parser = crate::args::float_in(0.05, 3600.0))]
    pub follow_poll: f64,
    /// Replication messages per round at most (whole transactions: a bigger transaction
    /// is one round), 1–1000000.
    #[arg(long, env = "RFS_FOLLOW_ROUND", value_name = "N", default_value_t = 5000, requires = "follow", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub follow_round: u32,
}

fn parse_feed_name(s: &str) -> Result<String, String> {
    let ok = (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?}: 1 to 63 lower-case letters, digits and underscores (a PostgreSQL replication slot name)"
        ))
    }
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
    pub transform: crate::args::TransformArgs,
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    match cmd {
        Command::Run(a) => runtime()?.block_on(run_table(a)),
        Command::Verify(a) => runtime()?.block_on(verify_table(a)),
    }
}

async fn run_table(args: RunArgs) -> anyhow::Result<u8> {
    let shutdown = shutdown_signal();
    let parallel = args.worker.parallel();
    let source = args.table.source(parallel).await?;
    let store = args.store.open().await?;
    let group = table_of(&source);
    let failures = args.worker.failure_log()?;
    // Like `rfs run`: a worker stays until the migration is finished (slots leased by
    // others may come free when their holders die).
    let opts = args.worker.job_options(true);
    tracing::info!(table = %group, store = %args.store.redacted(), "table worker ready");
    // The sink checks what it must before a row is read (DynamoDB: the key mapping unique
    // in the table); the rows go into the index the sink URL names, else keep the
    // table's name.
    let sink = args.table.open_sink(&args.worker, &source).await?;
    let named = sink.index.clone().unwrap_or_else(|| group.clone());
    let transform = args.table.guarded(
        &args.transform,
        sink.key_of.clone(),
        Arc::new(rename_to(&group, &named)),
    )?;
    let feed = if args.follow.follow {
        let feed = engine::Source::change_feed(&source.source)
            .ok_or_else(|| anyhow::anyhow!("--follow: this source cannot be followed"))?;
        Some((
            feed,
            engine::follow::FollowOptions {
                name: args.follow.follow_name.clone(),
                poll: Duration::from_secs_f64(args.follow.follow_poll),
                round_max: args.follow.follow_round,
            },
        ))
    } else {
        None
    };
    let mut spec = JobSpec::new(source.source, transform, sink.sink, store, failures, opts);
    spec.follow = feed;
    let report = run_job(spec, Watch::of(&args.worker, shutdown)).await?;
    finish(&report, Role::Run)
}

/// The table an opened table source reads (its one group).
fn table_of(source: &OpenedSource) -> String {
    source.groups.first().cloned().unwrap_or_default()
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
    let source = args.table.source(2).await?;
    let identity = args
        .table
        .sink_parts(connectors::Context::default())
        .sink_identity(&args.table.sink)?;
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
                &source.source,
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
    let group = table_of(&source);
    // The program sees each row named as the run named it: the sink's index for a
    // cluster, the table's name otherwise (where an unprogrammed row goes).
    let named = opened.index.clone().unwrap_or_else(|| group.clone());
    let transform = args.table.guarded(
        &args.transform,
        opened.key_of.clone(),
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
    let instants = connectors::hints::time_columns(&source.hints)
        .into_iter()
        .collect();
    let options = Options {
        max_listed: args.max_listed,
        instants,
        ..Options::new(sample)
    };
    let r = verify(Arc::new(source.source), transform, lookup.as_ref(), options)
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
    source: &BoxedSource,
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
