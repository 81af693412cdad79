//! `rfs copy --from URL --to URL`: any source into any sink through the connector registry
//! (`connectors`), one job, any number of identical processes sharing the store.

use connectors::{OpenedSource, Params};

use super::engine::{finish, run_job, shutdown_signal, JobSpec, Role, Watch};
use crate::args::TransformArgs;
use crate::args::{FromConnectionArgs, StoreArgs, ToConnectionArgs, WorkerArgs};
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub ends: Ends,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub worker: WorkerArgs,
    #[command(flatten)]
    pub transform: TransformArgs,
}

/// Where documents come from and go.
#[derive(Clone, clap::Args)]
pub struct Ends {
    /// The source: a live cluster (`http(s)://[user:pw@]host:9200/INDEX-PATTERN`, read by
    /// sliced point in time on Elasticsearch 7.10+ / OpenSearch 2.4+, by sliced scroll on
    /// Elasticsearch 5.0–7.9 / OpenSearch 1.x–2.3), a snapshot repository (a path, `file:///DIR`, `s3://bucket/base`, `gs://bucket/base` with
    /// --snapshot or `#snapshot=NAME`), a directory or prefix of JSON-lines files as
    /// `rfs export` writes them (`*.jsonl`, `*.ndjson`, `.gz`/`.zst` compressed, in
    /// sub-directories too; told apart from a repository by its content), or a table
    /// (`postgres://user:pw@host/db?table=T` + `&key=COLUMN` + `[&slots=N]`; `key` names
    /// the key column).
    #[arg(
        long,
        env = "RFS_COPY_FROM",
        value_name = "URL",
        hide_env_values = true
    )]
    pub from: String,
    /// The sink: a cluster (`http(s)://[user:pw@]host:9200[/INDEX]`, every document into
    /// INDEX when given), files (`file:///DIR[?format=jsonl|bulk]`, one file per index and
    /// process), or DynamoDB (`dynamodb://TABLE?region=R[&endpoint=URL][&partition-key=A]`:
    /// one item per document, keyed by `_index` (partition key) and `_id` (sort key) — a
    /// table's rows by its key column).
    #[arg(long, env = "RFS_COPY_TO", value_name = "URL", hide_env_values = true, value_parser = sink_url)]
    pub to: String,
    /// The snapshot of a repository source.
    #[arg(long, env = "RFS_SNAPSHOT", value_name = "NAME")]
    pub snapshot: Option<String>,
    /// S3 region of an `s3://` source (else `?region=`, AWS_REGION, us-east-1).
    #[arg(long, env = "RFS_S3_REGION", value_name = "REGION")]
    pub s3_region: Option<String>,
    /// S3-compatible endpoint of an `s3://` source.
    #[arg(
        long,
        env = "RFS_S3_ENDPOINT",
        value_name = "URL",
        hide_env_values = true
    )]
    pub s3_endpoint: Option<String>,
    #[command(flatten)]
    pub gcs: crate::args::GcsArgs,
    /// JSON-lines sources: bytes of a file per work item (4096 to 2^40; default 64 MiB),
    /// when the plan is made: a plan already in the store keeps its own (a warning says so).
    /// Items are read by several workers at once, each resumable by byte offset; a
    /// compressed file is one item.
    #[arg(long, env = "RFS_ITEM_BYTES", value_name = "N", value_parser = crate::args::usize_in(4096, 1 << 40))]
    pub item_bytes: Option<usize>,
    /// Live-cluster sources: work items (slices of a point in time, or of a scroll before
    /// ES 7.10 / OpenSearch 2.4) per index (1–1024).
    #[arg(long, env = "RFS_SLICES", default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub slices: u32,
    /// Create the source's indices on the target cluster before any document is sent: their
    /// settings, mappings and aliases (a snapshot's templates too) converted for the
    /// target's version as `rfs metadata migrate` does, under the names --rename,
    /// --index-prefix and --index-suffix give; what exists on the target is left alone.
    /// One worker of the fleet does it; a conversion the target cannot hold (BLOCKED) or
    /// a refused create stops the copy first. For snapshot and live-cluster sources into
    /// an `http(s)://` sink that names no index.
    #[arg(long, env = "RFS_CREATE_METADATA")]
    pub create_metadata: bool,
    /// DynamoDB sinks: create the table when it does not exist (on-demand billing).
    #[arg(long, env = "RFS_CREATE_TABLE")]
    pub create_table: bool,
    /// A table source into DynamoDB: write even when the key mapping (`partition-key`,
    /// `sort-key` of the URL) is not unique in the table, as `rfs table run
    /// --allow-key-collisions` (rows overwritten inside a batch are refused as
    /// key_collision; across batches they cannot be seen).
    #[arg(long, env = "RFS_ALLOW_KEY_COLLISIONS")]
    pub allow_key_collisions: bool,
    /// Source groups to copy: indices of a snapshot or live cluster (within what the URL's
    /// pattern reaches), names of JSON-lines files, a table; exact names, `*`/`?`
    /// wildcards or `regex:PATTERN`; repeatable or comma-separated. Default: all of them.
    #[arg(
        long = "index",
        env = "RFS_INDEX",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub index: Vec<String>,
    /// Source groups to leave out (as --index names them); each is logged as left out,
    /// and status does not count it as missing.
    #[arg(
        long = "exclude-index",
        env = "RFS_EXCLUDE_INDEX",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub exclude_index: Vec<String>,
    /// Send the documents of index OLD to index NEW; repeatable or comma-separated
    /// `OLD=NEW`. Applied before --index-prefix/--index-suffix.
    #[arg(
        long = "rename",
        env = "RFS_RENAME",
        value_delimiter = ',',
        value_name = "OLD=NEW"
    )]
    pub rename: Vec<String>,
    /// Put this before every target index name.
    #[arg(
        long,
        env = "RFS_INDEX_PREFIX",
        default_value = "",
        value_name = "TEXT"
    )]
    pub index_prefix: String,
    /// Put this after every target index name.
    #[arg(
        long,
        env = "RFS_INDEX_SUFFIX",
        default_value = "",
        value_name = "TEXT"
    )]
    pub index_suffix: String,
    /// How an http(s) source is reached (`--from-*`).
    #[command(flatten)]
    pub from_conn: FromConnectionArgs,
    /// How an http(s) sink is reached (`--to-*`).
    #[command(flatten)]
    pub to_conn: ToConnectionArgs,
    /// A parameter of the source's connector, `KEY=VALUE` (repeatable): any the flags
    /// give (`snapshot`, `since`, `item-bytes`, `slices`, a table's `slots`, `where`, …),
    /// taking this value. A parameter the source does not take is refused, naming the
    /// connector that does.
    #[arg(
        long = "from-param",
        env = "RFS_FROM_PARAM",
        value_name = "KEY=VALUE",
        hide_env_values = true,
        value_parser = crate::args::params::param_pair
    )]
    pub from_param: Vec<(String, String)>,
    /// A parameter of the sink's connector, `KEY=VALUE` (repeatable): DynamoDB's
    /// `create-table`, `partition-key`, `sort-key`; files' `format`; a cluster's `path`
    /// (`base`: the URL's path is a prefix, not an index). A parameter the sink does not
    /// take is refused, naming the connector that does.
    #[arg(
        long = "to-param",
        env = "RFS_TO_PARAM",
        value_name = "KEY=VALUE",
        hide_env_values = true,
        value_parser = crate::args::params::param_pair
    )]
    pub to_param: Vec<(String, String)>,
}

impl std::fmt::Debug for Ends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ends")
            .field("from", &redact::url(&self.from))
            .field("to", &redact::url(&self.to))
            .field("snapshot", &self.snapshot)
            .field("s3_region", &self.s3_region)
            .field("s3_endpoint", &self.s3_endpoint.as_deref().map(redact::url))
            .field("gcs", &self.gcs)
            .field("item_bytes", &self.item_bytes)
            .field("slices", &self.slices)
            .field("create_metadata", &self.create_metadata)
            .field("create_table", &self.create_table)
            .field("allow_key_collisions", &self.allow_key_collisions)
            .field("index", &self.index)
            .field("exclude_index", &self.exclude_index)
            .field("rename", &self.rename)
            .field("index_prefix", &self.index_prefix)
            .field("index_suffix", &self.index_suffix)
            .field("from_conn", &self.from_conn)
            .field("to_conn", &self.to_conn)
            .field("from_param", &self.from_param)
            .field("to_param", &self.to_param)
            .finish()
    }
}

impl Ends {
    /// The `--create-metadata` phase: the source's definitions of the `chosen` groups
    /// created on the sink's cluster under the names the documents go to.
    fn metadata_phase(
        &self,
        source: &OpenedSource,
        sink: &connectors::OpenedSink,
        chosen: &[String],
    ) -> anyhow::Result<engine::job::PhaseWork> {
        let Some(metadata) = source.metadata.clone() else {
            anyhow::bail!(
                "--create-metadata: a {} source holds no index definitions (only a snapshot or a live cluster does)",
                source.kind
            );
        };
        let Some(client) = sink.target_client.clone() else {
            anyhow::bail!("--create-metadata: the sink is not a cluster (http(s)://)");
        };
        if let Some(index) = &sink.index {
            anyhow::bail!(
                "--create-metadata: the sink URL sends every document into index {index}; name no index to create the source's"
            );
        }
        let options = metadata::Options {
            indices: metadata::Allowlist::parse(chosen)?,
            naming: self.naming()?,
            ..Default::default()
        };
        Ok(super::engine::metadata_phase(
            metadata,
            client,
            options,
            "create those indices and copy without --create-metadata",
        ))
    }

    /// The target index names --rename, --index-prefix and --index-suffix give.
    fn naming(&self) -> anyhow::Result<metadata::Naming> {
        Ok(metadata::Naming {
            renames: metadata::Naming::parse_renames(&self.rename)?,
            prefix: self.index_prefix.clone(),
            suffix: self.index_suffix.clone(),
        })
    }

    /// Where each document goes: the sink URL's index for all when it names one, else
    /// its own index as --rename, --index-prefix and --index-suffix name it (renames with
    /// a sink index are a usage error: they would do nothing).
    fn routes(
        &self,
        sink: &connectors::OpenedSink,
        groups: &[String],
    ) -> anyhow::Result<std::sync::Arc<dyn engine::transform::Transform>> {
        let naming = self.naming()?;
        if naming.is_identity() {
            return Ok(sink.transform());
        }
        if let Some(index) = &sink.index {
            anyhow::bail!(
                "--rename/--index-prefix/--index-suffix: the sink URL sends every document into index {index}"
            );
        }
        Ok(std::sync::Arc::new(programs::routes::Rename::new(
            naming, groups,
        )))
    }

    /// `--from-*` / `--to-*` say how a cluster is reached, `--create-only` how a cluster
    /// is written: given for an end that is not one, they would do nothing, so that is a
    /// usage error.
    fn connection_flags_fit(&self, create_only: bool) -> anyhow::Result<()> {
        let http = |url: &str| matches!(connectors::scheme(url).as_str(), "http" | "https");
        if self.from_conn.is_set() && !http(&self.from) {
            anyhow::bail!(
                "--from-* connection options apply to an http(s):// source; --from {} is not one",
                redact::url(&self.from)
            );
        }
        if (self.to_conn.is_set() || create_only) && !http(&self.to) {
            if !self.to_conn.is_set() {
                anyhow::bail!(
                    "--create-only applies to an http(s):// sink (bulk `create`); --to {} is not one",
                    redact::url(&self.to)
                );
            }
            anyhow::bail!(
                "--to-* connection options apply to an http(s):// sink; --to {} is not one",
                redact::url(&self.to)
            );
        }
        Ok(())
    }
}

/// `--to`: a URL that names where to write; `file://` with no path (which would be the root
/// directory) or an empty value is a usage error.
fn sink_url(v: &str) -> Result<String, String> {
    let path = v
        .split_once("://")
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("file"))
        .map(|(_, rest)| rest.split(['?', '#']).next().unwrap_or(""));
    if v.trim().is_empty() || matches!(path, Some("" | "localhost")) {
        return Err(
            "names no directory: give file:///DIR (three slashes, an absolute path), a directory path, or another sink URL"
                .into(),
        );
    }
    Ok(v.to_string())
}

/// How a `--from` source is read, as `rfs copy` takes it: `rfs verify --from` opens its
/// source with the same parameters (through [`crate::hiargs::Parts::source`]), so both read the same
/// documents and the source names itself alike in the store. The reading options that
/// do not change what is read (a worker's pool size, work-item sizes) are added by copy.
pub struct FromSpec {
    pub snapshot: Option<String>,
    pub split_docs: Option<u64>,
    pub verify_checksums: bool,
    pub item_bytes: Option<usize>,
    pub slices: u32,
}

impl FromSpec {
    /// The source's parameters (each offered: the source that takes it reads it).
    pub fn params(&self) -> Params {
        use crate::args::params::{put, put_some};
        let mut p = Params::new();
        put_some(&mut p, "--snapshot", self.snapshot.as_ref());
        put_some(&mut p, "--split-docs", self.split_docs);
        put(&mut p, "--no-verify-checksums", self.verify_checksums);
        put_some(&mut p, "--item-bytes", self.item_bytes);
        put(&mut p, "--slices", self.slices);
        p
    }
}

impl Args {
    /// What the flags say about the parts: each end's parameters and the shared context.
    fn parts(&self) -> anyhow::Result<crate::hiargs::Parts> {
        use crate::args::params::{put_pairs, put_set};
        self.ends.connection_flags_fit(self.worker.create_only)?;
        let w = &self.worker;
        let mut from = FromSpec {
            snapshot: self.ends.snapshot.clone(),
            split_docs: Some(w.split_docs),
            verify_checksums: !w.no_verify_checksums,
            item_bytes: self.ends.item_bytes,
            slices: self.ends.slices,
        }
        .params();
        put_pairs(&mut from, &self.ends.from_param);
        let mut to = Params::new();
        // A table's rows into DynamoDB: the connector checks, before anything is created
        // or read, that the key mapping is unique in the table (as `rfs table run` does).
        // Files and clusters write a row under its `_id`, the key column, which the table
        // source already requires to have a unique index of its own; `copy` runs no
        // program that could change it.
        put_set(&mut to, "--create-table", self.ends.create_table);
        put_pairs(&mut to, &self.ends.to_param);
        let mut ctx = w.context();
        ctx.from.blob = self.ends.gcs.apply(snapshot::StoreOptions {
            s3_region: self.ends.s3_region.clone(),
            s3_endpoint: self.ends.s3_endpoint.clone(),
            ..Default::default()
        });
        ctx.from.client = Some(self.ends.from_conn.client_config()?);
        let client = self.ends.to_conn.client_config()?;
        ctx.to.tls = client.tls.clone();
        ctx.to.client = Some(client);
        ctx.allow_key_collisions = self.ends.allow_key_collisions;
        ctx.read.metadata = self.ends.create_metadata;
        Ok(crate::hiargs::Parts::new(ctx).from(from).to(to))
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(run_async(args))
}

async fn run_async(args: Args) -> anyhow::Result<u8> {
    let shutdown = shutdown_signal();
    let mut parts = args.parts()?;
    let source = parts.source(&args.ends.from).await?;
    let selection = super::selection::Selection::parse(&args.ends.index, &args.ends.exclude_index)?;
    let chosen: Vec<String> = source
        .groups
        .iter()
        .filter(|g| {
            selection
                .as_ref()
                .is_none_or(|s| s.why_left_out(g).is_none())
        })
        .cloned()
        .collect();
    // The sink sees what is copied and under which names (a live source's data streams:
    // only the chosen ones created, none renamed); the source itself is reduced after the
    // sink is open, so the sink's key check sees it as opened.
    if selection.is_some() {
        parts.ctx.read.chosen = Some(chosen.clone());
    }
    let naming = args.ends.naming()?;
    if !naming.is_identity() {
        parts.ctx.read.naming = Some(naming);
    }
    let sink = parts.sink(&args.ends.to, &source).await?;
    let metadata = if args.ends.create_metadata {
        Some(args.ends.metadata_phase(&source, &sink, &chosen)?)
    } else {
        None
    };
    let store = args.store.open().await?;
    tracing::info!(
        from = %redact::url(&args.ends.from),
        to = %redact::url(&args.ends.to),
        kind = source.kind,
        store = %args.store.redacted(),
        "copy worker ready"
    );
    let source_part = match selection {
        Some(s) => s.apply(source.source, &source.groups)?,
        None => source.source,
    };
    let left_out = engine::source::Source::left_out(&source_part);
    let mut spec = JobSpec::new(
        source_part,
        args.transform
            .wrap(args.ends.routes(&sink, &source.groups)?)?,
        sink.sink,
        store,
        args.worker.failure_log()?,
        args.worker.job_options(true),
    );
    if let Some(work) = metadata {
        spec = spec.phase(engine::phases::PHASE_METADATA, work);
    }
    let report = run_job(spec, Watch::of(&args.worker, shutdown)).await?;
    let code = finish(&report, Role::Run);
    for l in &left_out {
        crate::say!("left out of the copy: {l}");
    }
    code
}
