//! Argument groups shared by the subcommands (repository, snapshot, source cluster, target,
//! store, filters, worker settings), the helpers that turn them into the crates' objects,
//! and the workers' progress bar. Every flag has an `RFS_*` environment variable and a
//! config-file key (its long name); every numeric flag has a range checked by the parser;
//! every flag that can hold a secret (a password, a key, a URL with `user:password@`)
//! hides its environment value in `--help`, and the argument structs' `Debug` masks them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use metadata::{Allowlist, MultiTypeMode};

/// Where a snapshot repository is and how to reach it: the same flags and `RFS_*` names
/// for every command that reads one (`inspect`, `export`, `metadata`, `documents`, `run`,
/// `verify`).
#[derive(Clone, clap::Args)]
pub struct RepositoryArgs {
    /// Snapshot repository: a path, `file:///path`, `s3://bucket/base_path[?region=R&endpoint=URL]`,
    /// `gs://bucket/base_path[?endpoint=URL]` or `az://container/base_path`. S3 credentials
    /// come from the flags below or the standard AWS environment variables
    /// (AWS_ACCESS_KEY_ID, …); GCS ones from --gcs-service-account or the usual Google
    /// sources (GOOGLE_SERVICE_ACCOUNT, GOOGLE_APPLICATION_CREDENTIALS, the metadata server).
    #[arg(
        long = "repo",
        env = "RFS_REPO",
        value_name = "REPO",
        required_unless_present = "repo_arg",
        hide_env_values = true
    )]
    pub repo: Option<String>,
    /// The repository given as a positional argument instead of --repo (wins over --repo
    /// and RFS_REPO).
    #[arg(id = "repo_arg", value_name = "REPO")]
    pub repo_arg: Option<String>,
    /// S3 region (else `?region=`, AWS_REGION, AWS_DEFAULT_REGION, us-east-1).
    #[arg(long, env = "RFS_S3_REGION", value_name = "REGION")]
    pub s3_region: Option<String>,
    /// S3-compatible endpoint URL (MinIO, …); path-style requests are used with it.
    #[arg(
        long,
        env = "RFS_S3_ENDPOINT",
        value_name = "URL",
        hide_env_values = true
    )]
    pub s3_endpoint: Option<String>,
    /// S3 access key id (else AWS_ACCESS_KEY_ID or the usual AWS credential sources).
    #[arg(
        long,
        env = "RFS_S3_ACCESS_KEY_ID",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub s3_access_key_id: Option<String>,
    /// S3 secret access key (else AWS_SECRET_ACCESS_KEY).
    #[arg(
        long,
        env = "RFS_S3_SECRET_ACCESS_KEY",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub s3_secret_access_key: Option<String>,
    #[command(flatten)]
    pub gcs: GcsArgs,
}

/// How `gs://` locations are reached: the same flags for repositories and `rfs copy`.
#[derive(Clone, Default, clap::Args)]
pub struct GcsArgs {
    /// GCS-compatible endpoint for `gs://` (an emulator such as fake-gcs-server:
    /// `http://127.0.0.1:4443`; else `?endpoint=`, then STORAGE_EMULATOR_HOST). Without a
    /// service account its requests carry no token.
    #[arg(
        long,
        env = "RFS_GCS_ENDPOINT",
        value_name = "URL",
        hide_env_values = true
    )]
    pub gcs_endpoint: Option<String>,
    /// GCS service-account JSON file for `gs://` (else GOOGLE_SERVICE_ACCOUNT, …).
    #[arg(long, env = "RFS_GCS_SERVICE_ACCOUNT", value_name = "FILE")]
    pub gcs_service_account: Option<String>,
}

impl GcsArgs {
    /// These settings in `opts`.
    pub fn apply(&self, opts: snapshot::StoreOptions) -> snapshot::StoreOptions {
        snapshot::StoreOptions {
            gcs_endpoint: self.gcs_endpoint.clone(),
            gcs_service_account: self.gcs_service_account.clone(),
            ..opts
        }
    }
}

impl std::fmt::Debug for GcsArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcsArgs")
            .field(
                "gcs_endpoint",
                &self.gcs_endpoint.as_deref().map(redact::url),
            )
            .field("gcs_service_account", &self.gcs_service_account)
            .finish()
    }
}

impl RepositoryArgs {
    /// The repository location: the positional argument, else --repo / RFS_REPO.
    pub fn location(&self) -> anyhow::Result<&str> {
        self.repo_arg
            .as_deref()
            .or(self.repo.as_deref())
            .context("no snapshot repository given (--repo, RFS_REPO or a positional REPO)")
    }

    /// Opens the blob store and reads the repository data.
    pub fn open(&self) -> anyhow::Result<snapshot::Repository> {
        let location = self.location()?;
        let opts = self.gcs.apply(snapshot::StoreOptions {
            s3_region: self.s3_region.clone(),
            s3_endpoint: self.s3_endpoint.clone(),
            s3_access_key_id: self.s3_access_key_id.clone(),
            s3_secret_access_key: self.s3_secret_access_key.clone(),
            ..Default::default()
        });
        let shown = redact::url(location);
        // The store's error names the location.
        let store: Arc<dyn snapshot::BlobStore> =
            snapshot::open_blob_store(location, &opts).context("opening the repository")?;
        snapshot::Repository::open(store).with_context(|| format!("reading repository {shown}"))
    }
}

impl std::fmt::Debug for RepositoryArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepositoryArgs")
            .field("repo", &self.repo.as_deref().map(redact::url))
            .field("repo_arg", &self.repo_arg.as_deref().map(redact::url))
            .field("s3_region", &self.s3_region)
            .field("s3_endpoint", &self.s3_endpoint.as_deref().map(redact::url))
            .field("s3_access_key_id", &masked(&self.s3_access_key_id))
            .field("s3_secret_access_key", &masked(&self.s3_secret_access_key))
            .field("gcs", &self.gcs)
            .finish()
    }
}

/// What `Debug` shows of a secret: whether it is set, never its value.
pub fn masked(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| redact::MASK)
}

/// The snapshot to migrate.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// The snapshot's name.
    #[arg(long, env = "RFS_SNAPSHOT", value_name = "NAME")]
    pub snapshot: String,
    #[command(flatten)]
    pub rebuild: RebuildArgs,
}

/// Documents stored without `_source` (`_source.enabled: false`, synthetic source).
#[derive(Debug, Clone, clap::Args)]
pub struct RebuildArgs {
    /// Documents without a stored `_source`: `auto` rebuilds it from the mapping, doc
    /// values, stored fields and Elasticsearch 8.15+ `_ignored_source` (as Elasticsearch's
    /// synthetic source does: arrays sorted, keyword arrays deduplicated; see
    /// docs/sourceless.md); `off` skips them as `no_source`. Documents that have a
    /// `_source` are always sent as stored.
    #[arg(long, env = "RFS_REBUILD_SOURCE", value_enum, default_value_t = RebuildSource::Auto)]
    pub rebuild_source: RebuildSource,
    /// Send rebuilt documents even when some of their index's fields cannot be rebuilt
    /// (no doc values, not stored: e.g. `text` without `store: true`); without it such
    /// documents go to the failure log as `partial_source`, with the fields named.
    #[arg(long, env = "RFS_ALLOW_PARTIAL_SOURCE")]
    pub allow_partial_source: bool,
    /// Where a document without `_source` still has a `_recovery_source` (kept by
    /// Elasticsearch for recent operations), send that original instead of rebuilding.
    #[arg(long, env = "RFS_PREFER_RECOVERY_SOURCE")]
    pub prefer_recovery_source: bool,
}

/// `--rebuild-source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RebuildSource {
    /// Rebuild `_source` where it is absent.
    Auto,
    /// Never rebuild: such documents are skipped as `no_source`.
    Off,
}

impl RebuildArgs {
    pub fn options(&self) -> snapshot::RebuildOptions {
        snapshot::RebuildOptions {
            mode: match self.rebuild_source {
                RebuildSource::Auto => snapshot::RebuildMode::Auto,
                RebuildSource::Off => snapshot::RebuildMode::Off,
            },
            allow_partial: self.allow_partial_source,
            prefer_recovery_source: self.prefer_recovery_source,
        }
    }
}

impl SourceArgs {
    pub fn open(&self) -> anyhow::Result<snapshot::Snapshot> {
        let repo = self.repository.open()?;
        repo.snapshot(&self.snapshot).with_context(|| {
            format!(
                "snapshot {} in {}",
                self.snapshot,
                redact::url(self.repository.location().unwrap_or("?"))
            )
        })
    }
}

/// A delta: only what changed since an earlier snapshot.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SinceArgs {
    /// Send only what changed since this earlier snapshot of the same repository (the one
    /// the target was last migrated from): documents new or changed since it are indexed,
    /// documents deleted since it are deleted, unchanged ones are not read. Indices
    /// created since it are migrated whole; indices deleted since it are reported (see
    /// --delete-removed-indices). A delta is a migration of its own: give it its own store.
    #[arg(long, env = "RFS_SINCE", value_name = "SNAPSHOT")]
    pub since: Option<String>,
}

/// Which indices and templates, and how multi-type indices are mapped.
#[derive(Debug, Clone, clap::Args)]
pub struct FilterArgs {
    /// Indices to migrate: exact names, `*`/`?` wildcards or `regex:PATTERN`; repeatable
    /// or comma-separated. Default: every index except system and dot indices.
    #[arg(
        long = "index",
        env = "RFS_INDEX",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub index: Vec<String>,
    /// Legacy templates to migrate (names or `regex:`); default: all non-system ones.
    #[arg(
        long = "legacy-template",
        env = "RFS_LEGACY_TEMPLATE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub legacy_template: Vec<String>,
    /// Component templates to migrate.
    #[arg(
        long = "component-template",
        env = "RFS_COMPONENT_TEMPLATE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub component_template: Vec<String>,
    /// Composable index templates to migrate.
    #[arg(
        long = "index-template",
        env = "RFS_INDEX_TEMPLATE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub index_template: Vec<String>,
    /// Replace every index's number_of_replicas (0–100).
    #[arg(long, env = "RFS_REPLICAS", value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub replicas: Option<u32>,
    /// ES ≤ 6 indices with several mapping types: `merge` into one index or `split` into
    /// `<index>_<type>` indices.
    #[arg(long, env = "RFS_MULTI_TYPE", value_enum, default_value_t = MultiType::Merge)]
    pub multi_type: MultiType,
    /// Create index OLD as NEW on the target (and send its documents there); repeatable or
    /// comma-separated `OLD=NEW`. Applied before --index-prefix/--index-suffix.
    #[arg(
        long = "rename",
        env = "RFS_RENAME",
        value_delimiter = ',',
        value_name = "OLD=NEW"
    )]
    pub rename: Vec<String>,
    /// Where the documents of one mapping type of an ES ≤ 6 index go: `INDEX/TYPE=TARGET`,
    /// or `INDEX/TYPE=` to leave that type out (its documents are counted as skipped);
    /// repeatable or comma-separated. Other types follow --multi-type.
    #[arg(
        long = "type-route",
        env = "RFS_TYPE_ROUTE",
        value_delimiter = ',',
        value_name = "INDEX/TYPE=TARGET"
    )]
    pub type_route: Vec<String>,
    /// Put this before every target index name (templates and aliases keep theirs).
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
    /// The k-NN engine of vector fields converted for OpenSearch (`dense_vector` →
    /// `knn_vector`, or an engine the target refuses). Default: by target version — lucene
    /// on OpenSearch 2.2+ (faiss for inner product before 2.13), nmslib before 2.2, never
    /// nmslib on 3.x. A field the chosen engine cannot hold on the target is BLOCKED.
    #[arg(long, env = "RFS_KNN_ENGINE", value_enum, value_name = "ENGINE")]
    pub knn_engine: Option<KnnEngineArg>,
    /// Indices whose snapshot mapping has `_source: {enabled: false}`: `keep` creates them
    /// so on the target (faithful: the target returns no documents, `verify` compares
    /// counts, ids and the doc values of keyword, number and boolean fields); `enable` stores `_source` on the target, so the documents rebuilt
    /// from doc values and stored fields can be read back and verified whole — more disk:
    /// about their JSON size, compressed by the target's codec.
    #[arg(long, env = "RFS_TARGET_SOURCE", value_enum, default_value_t = TargetSource::Keep, value_name = "MODE")]
    pub target_source: TargetSource,
    /// What becomes of the snapshot's data streams: `data-streams` creates each on the
    /// target from its index template (which must be migrated too) and writes the
    /// documents of its backing indices to it with `create`; `indices` creates every
    /// backing index as a plain index, with the stream's name as an alias over them.
    #[arg(long, env = "RFS_DATA_STREAMS", value_enum, default_value_t = DataStreamsArg::DataStreams, value_name = "MODE")]
    pub data_streams: DataStreamsArg,
    #[command(flatten)]
    pub transform: super::transform::TransformArgs,
}

/// `--data-streams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DataStreamsArg {
    /// Data streams on the target (Elasticsearch 7.9+, OpenSearch).
    DataStreams,
    /// Backing indices as plain indices, the stream's name as an alias.
    Indices,
}

/// `--knn-engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KnnEngineArg {
    /// Lucene's HNSW (OpenSearch 2.2+): filtering during search, smaller deployments.
    Lucene,
    /// Faiss (HNSW, quantization, binary vectors): large deployments.
    Faiss,
    /// NMSLIB (deprecated; refused for new indices by OpenSearch 3).
    Nmslib,
}

impl From<KnnEngineArg> for metadata::KnnEngine {
    fn from(e: KnnEngineArg) -> Self {
        match e {
            KnnEngineArg::Lucene => metadata::KnnEngine::Lucene,
            KnnEngineArg::Faiss => metadata::KnnEngine::Faiss,
            KnnEngineArg::Nmslib => metadata::KnnEngine::Nmslib,
        }
    }
}

/// `--target-source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetSource {
    /// The target index keeps the snapshot's mapping: `_source` stays disabled.
    Keep,
    /// `_source` is stored on the target: the rebuilt documents are retrievable.
    Enable,
}

/// `--multi-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MultiType {
    /// Every mapping type into one index.
    Merge,
    /// One `<index>_<type>` index per mapping type.
    Split,
}

impl From<MultiType> for MultiTypeMode {
    fn from(m: MultiType) -> MultiTypeMode {
        match m {
            MultiType::Merge => MultiTypeMode::Merge,
            MultiType::Split => MultiTypeMode::Split,
        }
    }
}

impl FilterArgs {
    pub fn options(&self) -> anyhow::Result<metadata::Options> {
        Ok(metadata::Options {
            indices: Allowlist::parse(&self.index)?,
            legacy_templates: Allowlist::parse(&self.legacy_template)?,
            component_templates: Allowlist::parse(&self.component_template)?,
            index_templates: Allowlist::parse(&self.index_template)?,
            replicas: self.replicas,
            multi_type_mode: self.multi_type.into(),
            naming: self.naming()?,
            type_routes: metadata::Options::parse_type_routes(&self.type_route)
                .map_err(anyhow::Error::msg)?,
            convert: metadata::ConvertOptions {
                knn_engine: self.knn_engine.map(Into::into),
                enable_source: self.target_source == TargetSource::Enable,
            },
            data_streams: match self.data_streams {
                DataStreamsArg::DataStreams => metadata::DataStreamMode::DataStreams,
                DataStreamsArg::Indices => metadata::DataStreamMode::Indices,
            },
        })
    }

    /// Target index names from --rename, --index-prefix and --index-suffix.
    pub fn naming(&self) -> anyhow::Result<metadata::Naming> {
        Ok(metadata::Naming {
            renames: metadata::Naming::parse_renames(&self.rename).map_err(anyhow::Error::msg)?,
            prefix: self.index_prefix.clone(),
            suffix: self.index_suffix.clone(),
        })
    }
}

/// The target cluster.
#[derive(Clone, clap::Args)]
pub struct TargetArgs {
    /// Target cluster URL (`https://host:9200`).
    #[arg(long, env = "RFS_TARGET", value_name = "URL", hide_env_values = true)]
    pub target: String,
    /// Basic-auth user name.
    #[arg(
        long,
        env = "RFS_TARGET_USERNAME",
        value_name = "USER",
        hide_env_values = true
    )]
    pub target_username: Option<String>,
    /// Basic-auth password.
    #[arg(
        long,
        env = "RFS_TARGET_PASSWORD",
        value_name = "PASSWORD",
        hide_env_values = true
    )]
    pub target_password: Option<String>,
    /// API key (the base64 `id:key`).
    #[arg(
        long,
        env = "RFS_TARGET_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub target_api_key: Option<String>,
    /// Sign requests with AWS SigV4 for this service (`es` or `aoss`); credentials from the
    /// AWS environment variables or the AWS_PROFILE profile in ~/.aws, region from
    /// --target-aws-region, AWS_REGION or the profile.
    #[arg(long, env = "RFS_TARGET_SIGV4", value_enum, value_name = "SERVICE")]
    pub target_sigv4: Option<SigV4Service>,
    /// AWS region for SigV4.
    #[arg(long, env = "RFS_TARGET_AWS_REGION", value_name = "REGION")]
    pub target_aws_region: Option<String>,
    /// PEM CA certificate(s) to trust.
    #[arg(long, env = "RFS_TARGET_CA", value_name = "FILE")]
    pub target_ca: Option<PathBuf>,
    /// PEM client certificate for mutual TLS.
    #[arg(long, env = "RFS_TARGET_CLIENT_CERT", value_name = "FILE")]
    pub target_client_cert: Option<PathBuf>,
    /// PEM private key of --target-client-cert.
    #[arg(long, env = "RFS_TARGET_CLIENT_KEY", value_name = "FILE")]
    pub target_client_key: Option<PathBuf>,
    /// Accept any server certificate (tests and trusted networks only).
    #[arg(long, env = "RFS_TARGET_INSECURE")]
    pub target_insecure: bool,
    /// Attempts per request to the target before giving up (1–100; not `_bulk`, which
    /// retries per document), with exponential backoff from 0.5 s.
    #[arg(
        long,
        env = "RFS_TARGET_MAX_ATTEMPTS",
        default_value_t = 8,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100)
    )]
    pub target_max_attempts: u32,
    /// Seconds to wait for the target's answer to one request (1–3600). A target slow
    /// to answer is reported every 30 s while a `_bulk` request waits.
    #[arg(
        long,
        env = "RFS_TARGET_TIMEOUT",
        default_value_t = 120,
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub target_timeout: u64,
    /// gzip request bodies: `on`, `off`, or `auto` (when the target enables http.compression).
    #[arg(long, env = "RFS_GZIP", value_enum, default_value_t = Gzip::Auto)]
    pub gzip: Gzip,
}

/// `--target-sigv4` / `--source-sigv4`: the AWS service requests are signed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SigV4Service {
    /// Amazon OpenSearch Service (managed domains).
    Es,
    /// Amazon OpenSearch Serverless.
    Aoss,
}

/// `--gzip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Gzip {
    /// Always compress request bodies.
    On,
    /// Never compress.
    Off,
    /// Compress when the target enables `http.compression`.
    Auto,
}

impl std::fmt::Debug for TargetArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetArgs")
            .field("target", &redact::url(&self.target))
            .field("target_username", &self.target_username)
            .field("target_password", &masked(&self.target_password))
            .field("target_api_key", &masked(&self.target_api_key))
            .field("target_sigv4", &self.target_sigv4)
            .field("target_aws_region", &self.target_aws_region)
            .field("target_ca", &self.target_ca)
            .field("target_client_cert", &self.target_client_cert)
            .field("target_client_key", &self.target_client_key)
            .field("target_insecure", &self.target_insecure)
            .field("target_max_attempts", &self.target_max_attempts)
            .field("target_timeout", &self.target_timeout)
            .field("gzip", &self.gzip)
            .finish()
    }
}

impl TargetArgs {
    fn connection(&self) -> Connection<'_> {
        Connection {
            url: &self.target,
            username: self.target_username.as_deref(),
            password: self.target_password.as_deref(),
            api_key: self.target_api_key.as_deref(),
            sigv4: self.target_sigv4,
            aws_region: self.target_aws_region.as_deref(),
            ca: self.target_ca.as_deref(),
            client_cert: self.target_client_cert.as_deref(),
            client_key: self.target_client_key.as_deref(),
            insecure: self.target_insecure,
            max_attempts: Some(self.target_max_attempts),
            timeout: Some(self.target_timeout),
            gzip: Some(self.gzip),
        }
    }

    pub fn config(&self) -> anyhow::Result<cluster::ClientConfig> {
        self.connection().config()
    }

    /// `settings` for the registry to reach the `--target` cluster as `rfs run` writes it:
    /// the flags' client (the URL says where, the flags say how), the URL's path a base
    /// path, never an index. A URL that is no http(s) one is refused; the error, like the
    /// registry's, is read under "connecting to the target URL" (see [`Self::connecting`]).
    pub fn reached_by(
        &self,
        mut settings: connectors::Settings,
    ) -> anyhow::Result<connectors::Settings> {
        if !matches!(connectors::scheme(&self.target).as_str(), "http" | "https") {
            anyhow::bail!(
                "{}: the URL's scheme must be http or https",
                self.connecting()
            );
        }
        let mut client = self.config()?;
        client.urls.clear();
        settings.sink_client = Some(client);
        settings.sink_path_is_base = true;
        Ok(settings)
    }

    /// What an error reaching the target is said under.
    pub fn connecting(&self) -> String {
        format!("connecting to the target {}", redact::url(&self.target))
    }
}

/// The source cluster, for taking the snapshot (`snapshot create`, `run --source-cluster`).
/// The same connection options as the target, prefixed `--source-` / `RFS_SOURCE_`.
#[derive(Clone, clap::Args)]
pub struct SourceClusterArgs {
    /// Source cluster URL (`https://host:9200`): take the snapshot there.
    #[arg(
        long,
        env = "RFS_SOURCE_CLUSTER",
        value_name = "URL",
        requires = "source_repository",
        hide_env_values = true
    )]
    pub source_cluster: Option<String>,
    /// Name of the snapshot repository registered on the source cluster.
    #[arg(long, env = "RFS_SOURCE_REPOSITORY", value_name = "NAME")]
    pub source_repository: Option<String>,
    /// Register the repository first as a shared-filesystem (`fs`) repository at this
    /// location (must be listed in the source cluster's `path.repo`).
    #[arg(
        long,
        env = "RFS_REGISTER_FS",
        value_name = "PATH",
        requires = "source_cluster"
    )]
    pub register_fs: Option<String>,
    /// Basic-auth user name on the source cluster.
    #[arg(
        long,
        env = "RFS_SOURCE_USERNAME",
        value_name = "USER",
        hide_env_values = true
    )]
    pub source_username: Option<String>,
    /// Basic-auth password on the source cluster.
    #[arg(
        long,
        env = "RFS_SOURCE_PASSWORD",
        value_name = "PASSWORD",
        hide_env_values = true
    )]
    pub source_password: Option<String>,
    /// API key for the source cluster (the base64 `id:key`).
    #[arg(
        long,
        env = "RFS_SOURCE_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub source_api_key: Option<String>,
    /// Sign source requests with AWS SigV4 for this service (`es` or `aoss`); credentials
    /// from the AWS environment variables or the AWS_PROFILE profile in ~/.aws, region from
    /// --source-aws-region, AWS_REGION or the profile.
    #[arg(long, env = "RFS_SOURCE_SIGV4", value_enum, value_name = "SERVICE")]
    pub source_sigv4: Option<SigV4Service>,
    /// AWS region for SigV4 on the source cluster.
    #[arg(long, env = "RFS_SOURCE_AWS_REGION", value_name = "REGION")]
    pub source_aws_region: Option<String>,
    /// PEM CA certificate(s) to trust for the source cluster.
    #[arg(long, env = "RFS_SOURCE_CA", value_name = "FILE")]
    pub source_ca: Option<PathBuf>,
    /// PEM client certificate for mutual TLS with the source cluster.
    #[arg(long, env = "RFS_SOURCE_CLIENT_CERT", value_name = "FILE")]
    pub source_client_cert: Option<PathBuf>,
    /// PEM private key of --source-client-cert.
    #[arg(long, env = "RFS_SOURCE_CLIENT_KEY", value_name = "FILE")]
    pub source_client_key: Option<PathBuf>,
    /// Accept any source server certificate (tests and trusted networks only).
    #[arg(long, env = "RFS_SOURCE_INSECURE")]
    pub source_insecure: bool,
    /// Attempts per request to the source cluster before giving up (1–100), with
    /// exponential backoff from 0.5 s.
    #[arg(
        long,
        env = "RFS_SOURCE_MAX_ATTEMPTS",
        default_value_t = 8,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100)
    )]
    pub source_max_attempts: u32,
}

impl std::fmt::Debug for SourceClusterArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceClusterArgs")
            .field(
                "source_cluster",
                &self.source_cluster.as_deref().map(redact::url),
            )
            .field("source_repository", &self.source_repository)
            .field("register_fs", &self.register_fs)
            .field("source_username", &self.source_username)
            .field("source_password", &masked(&self.source_password))
            .field("source_api_key", &masked(&self.source_api_key))
            .field("source_sigv4", &self.source_sigv4)
            .field("source_aws_region", &self.source_aws_region)
            .field("source_ca", &self.source_ca)
            .field("source_client_cert", &self.source_client_cert)
            .field("source_client_key", &self.source_client_key)
            .field("source_insecure", &self.source_insecure)
            .field("source_max_attempts", &self.source_max_attempts)
            .finish()
    }
}

impl SourceClusterArgs {
    /// Whether a source cluster was given (`run` then takes the snapshot first).
    pub fn is_set(&self) -> bool {
        self.source_cluster.is_some()
    }

    /// Connects to the source cluster, registers the `fs` repository if asked, then creates
    /// snapshot `name` (or finds it) and waits until it is SUCCESS. Returns the final state.
    pub async fn take_snapshot(&self, name: &str) -> anyhow::Result<serde_json::Value> {
        let url = self
            .source_cluster
            .as_deref()
            .context("no source cluster given (--source-cluster)")?;
        let repository = self
            .source_repository
            .as_deref()
            .context("--source-cluster needs --source-repository")?;
        let connection = Connection {
            url,
            username: self.source_username.as_deref(),
            password: self.source_password.as_deref(),
            api_key: self.source_api_key.as_deref(),
            sigv4: self.source_sigv4,
            aws_region: self.source_aws_region.as_deref(),
            ca: self.source_ca.as_deref(),
            client_cert: self.source_client_cert.as_deref(),
            client_key: self.source_client_key.as_deref(),
            insecure: self.source_insecure,
            max_attempts: Some(self.source_max_attempts),
            timeout: None,
            gzip: Some(Gzip::Auto),
        };
        let client = connection.connect("the source cluster").await?;
        if let Some(location) = &self.register_fs {
            client
                .register_fs_repository(repository, location)
                .await
                .with_context(|| {
                    format!(
                        "registering repository {repository} at {location} on {}",
                        redact::url(url)
                    )
                })?;
        }
        Ok(engine::phases::create_snapshot(&client, repository, name).await?)
    }
}

/// How `rfs copy` reaches a live-cluster source (`--from http(s)://…`): the connection
/// options of [`TargetArgs`], spelled `--from-*` / `RFS_FROM_*`. The URL's
/// `user:password@` still works; an authentication flag wins over it.
#[derive(Clone, Default, clap::Args)]
pub struct FromConnectionArgs {
    /// Basic-auth user name on an http(s) source (wins over the URL's `user:password@`).
    #[arg(
        long,
        env = "RFS_FROM_USERNAME",
        value_name = "USER",
        hide_env_values = true,
        conflicts_with_all = ["from_api_key", "from_sigv4"]
    )]
    pub from_username: Option<String>,
    /// Basic-auth password of --from-username.
    #[arg(
        long,
        env = "RFS_FROM_PASSWORD",
        value_name = "PASSWORD",
        hide_env_values = true,
        requires = "from_username"
    )]
    pub from_password: Option<String>,
    /// API key for an http(s) source (the base64 `id:key`; wins over the URL's
    /// `user:password@`).
    #[arg(
        long,
        env = "RFS_FROM_API_KEY",
        value_name = "KEY",
        hide_env_values = true,
        conflicts_with = "from_sigv4"
    )]
    pub from_api_key: Option<String>,
    /// Sign source requests with AWS SigV4 for this service (`es` or `aoss`); credentials
    /// from the AWS environment variables or the AWS_PROFILE profile in ~/.aws, region from
    /// --from-aws-region, AWS_REGION or the profile.
    #[arg(long, env = "RFS_FROM_SIGV4", value_enum, value_name = "SERVICE")]
    pub from_sigv4: Option<SigV4Service>,
    /// AWS region for SigV4 on the source.
    #[arg(
        long,
        env = "RFS_FROM_AWS_REGION",
        value_name = "REGION",
        requires = "from_sigv4"
    )]
    pub from_aws_region: Option<String>,
    /// PEM CA certificate(s) to trust for an https source.
    #[arg(long, env = "RFS_FROM_CA", value_name = "FILE")]
    pub from_ca: Option<PathBuf>,
    /// PEM client certificate for mutual TLS with an https source.
    #[arg(
        long,
        env = "RFS_FROM_CLIENT_CERT",
        value_name = "FILE",
        requires = "from_client_key"
    )]
    pub from_client_cert: Option<PathBuf>,
    /// PEM private key of --from-client-cert.
    #[arg(
        long,
        env = "RFS_FROM_CLIENT_KEY",
        value_name = "FILE",
        requires = "from_client_cert"
    )]
    pub from_client_key: Option<PathBuf>,
    /// Accept any certificate from an https source (tests and trusted networks only).
    #[arg(long, env = "RFS_FROM_INSECURE")]
    pub from_insecure: bool,
}

impl std::fmt::Debug for FromConnectionArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FromConnectionArgs")
            .field("from_username", &self.from_username)
            .field("from_password", &masked(&self.from_password))
            .field("from_api_key", &masked(&self.from_api_key))
            .field("from_sigv4", &self.from_sigv4)
            .field("from_aws_region", &self.from_aws_region)
            .field("from_ca", &self.from_ca)
            .field("from_client_cert", &self.from_client_cert)
            .field("from_client_key", &self.from_client_key)
            .field("from_insecure", &self.from_insecure)
            .finish()
    }
}

impl FromConnectionArgs {
    fn connection(&self) -> Connection<'_> {
        Connection {
            url: "",
            username: self.from_username.as_deref(),
            password: self.from_password.as_deref(),
            api_key: self.from_api_key.as_deref(),
            sigv4: self.from_sigv4,
            aws_region: self.from_aws_region.as_deref(),
            ca: self.from_ca.as_deref(),
            client_cert: self.from_client_cert.as_deref(),
            client_key: self.from_client_key.as_deref(),
            insecure: self.from_insecure,
            max_attempts: None,
            timeout: None,
            gzip: None,
        }
    }

    /// The source client's configuration without URLs (the `--from` URL says where;
    /// `connectors::Settings::source_client`).
    pub fn client_config(&self) -> anyhow::Result<cluster::ClientConfig> {
        self.connection().client_config()
    }

    /// Whether any of these flags is given.
    pub fn is_set(&self) -> bool {
        self.connection().is_set()
    }
}

/// How `rfs copy` reaches a cluster sink (`--to http(s)://…`): the connection options of
/// [`TargetArgs`], spelled `--to-*` / `RFS_TO_*`. The URL's `user:password@` still
/// works; an authentication flag wins over it.
#[derive(Clone, Default, clap::Args)]
pub struct ToConnectionArgs {
    /// Basic-auth user name on an http(s) sink (wins over the URL's `user:password@`).
    #[arg(
        long,
        env = "RFS_TO_USERNAME",
        value_name = "USER",
        hide_env_values = true,
        conflicts_with_all = ["to_api_key", "to_sigv4"]
    )]
    pub to_username: Option<String>,
    /// Basic-auth password of --to-username.
    #[arg(
        long,
        env = "RFS_TO_PASSWORD",
        value_name = "PASSWORD",
        hide_env_values = true,
        requires = "to_username"
    )]
    pub to_password: Option<String>,
    /// API key for an http(s) sink (the base64 `id:key`; wins over the URL's
    /// `user:password@`).
    #[arg(
        long,
        env = "RFS_TO_API_KEY",
        value_name = "KEY",
        hide_env_values = true,
        conflicts_with = "to_sigv4"
    )]
    pub to_api_key: Option<String>,
    /// Sign sink requests with AWS SigV4 for this service (`es` or `aoss`); credentials
    /// from the AWS environment variables or the AWS_PROFILE profile in ~/.aws, region from
    /// --to-aws-region, AWS_REGION or the profile.
    #[arg(long, env = "RFS_TO_SIGV4", value_enum, value_name = "SERVICE")]
    pub to_sigv4: Option<SigV4Service>,
    /// AWS region for SigV4 on the sink.
    #[arg(
        long,
        env = "RFS_TO_AWS_REGION",
        value_name = "REGION",
        requires = "to_sigv4"
    )]
    pub to_aws_region: Option<String>,
    /// PEM CA certificate(s) to trust for an https sink.
    #[arg(long, env = "RFS_TO_CA", value_name = "FILE")]
    pub to_ca: Option<PathBuf>,
    /// PEM client certificate for mutual TLS with an https sink.
    #[arg(
        long,
        env = "RFS_TO_CLIENT_CERT",
        value_name = "FILE",
        requires = "to_client_key"
    )]
    pub to_client_cert: Option<PathBuf>,
    /// PEM private key of --to-client-cert.
    #[arg(
        long,
        env = "RFS_TO_CLIENT_KEY",
        value_name = "FILE",
        requires = "to_client_cert"
    )]
    pub to_client_key: Option<PathBuf>,
    /// Accept any certificate from an https sink (tests and trusted networks only).
    #[arg(long, env = "RFS_TO_INSECURE")]
    pub to_insecure: bool,
}

impl std::fmt::Debug for ToConnectionArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToConnectionArgs")
            .field("to_username", &self.to_username)
            .field("to_password", &masked(&self.to_password))
            .field("to_api_key", &masked(&self.to_api_key))
            .field("to_sigv4", &self.to_sigv4)
            .field("to_aws_region", &self.to_aws_region)
            .field("to_ca", &self.to_ca)
            .field("to_client_cert", &self.to_client_cert)
            .field("to_client_key", &self.to_client_key)
            .field("to_insecure", &self.to_insecure)
            .finish()
    }
}

impl ToConnectionArgs {
    fn connection(&self) -> Connection<'_> {
        Connection {
            url: "",
            username: self.to_username.as_deref(),
            password: self.to_password.as_deref(),
            api_key: self.to_api_key.as_deref(),
            sigv4: self.to_sigv4,
            aws_region: self.to_aws_region.as_deref(),
            ca: self.to_ca.as_deref(),
            client_cert: self.to_client_cert.as_deref(),
            client_key: self.to_client_key.as_deref(),
            insecure: self.to_insecure,
            max_attempts: None,
            timeout: None,
            gzip: None,
        }
    }

    /// The sink client's configuration without URLs (the `--to` URL says where;
    /// `connectors::Settings::sink_client`).
    pub fn client_config(&self) -> anyhow::Result<cluster::ClientConfig> {
        self.connection().client_config()
    }

    /// Whether any of these flags is given.
    pub fn is_set(&self) -> bool {
        self.connection().is_set()
    }
}

/// How to reach one cluster: what [`TargetArgs`], [`SourceClusterArgs`] and copy's
/// [`FromConnectionArgs`] / [`ToConnectionArgs`] share, turned into a
/// [`cluster::ClientConfig`] in one place.
struct Connection<'a> {
    url: &'a str,
    username: Option<&'a str>,
    password: Option<&'a str>,
    api_key: Option<&'a str>,
    sigv4: Option<SigV4Service>,
    aws_region: Option<&'a str>,
    ca: Option<&'a Path>,
    client_cert: Option<&'a Path>,
    client_key: Option<&'a Path>,
    insecure: bool,
    /// Attempts per request (`None`: the client's default).
    max_attempts: Option<u32>,
    /// Seconds per request (`None`: the client's default).
    timeout: Option<u64>,
    /// `None`: the client's default (`auto`).
    gzip: Option<Gzip>,
}

impl Connection<'_> {
    fn config(&self) -> anyhow::Result<cluster::ClientConfig> {
        let mut c = cluster::ClientConfig::new(self.url);
        c.auth = if let Some(service) = self.sigv4 {
            cluster::Auth::SigV4(cluster::SigV4Config {
                region: self.aws_region.map(str::to_string),
                service: match service {
                    SigV4Service::Aoss => cluster::AwsService::Aoss,
                    SigV4Service::Es => cluster::AwsService::Es,
                },
                credentials: None,
            })
        } else if let Some(key) = self.api_key {
            cluster::Auth::ApiKey(key.to_string())
        } else if let Some(user) = self.username {
            cluster::Auth::Basic {
                username: user.to_string(),
                password: self.password.unwrap_or_default().to_string(),
            }
        } else {
            cluster::Auth::None
        };
        c.tls = cluster::TlsConfig {
            ca_file: self.ca.map(Path::to_path_buf),
            client_cert: self.client_cert.map(Path::to_path_buf),
            client_key: self.client_key.map(Path::to_path_buf),
            insecure: self.insecure,
        };
        if let Some(n) = self.max_attempts {
            c.retry.max_attempts = n.max(1);
        }
        if let Some(secs) = self.timeout {
            c.request_timeout = Duration::from_secs(secs.clamp(1, 3600));
        }
        if let Some(gzip) = self.gzip {
            c.compression = match gzip {
                Gzip::On => cluster::RequestCompression::On,
                Gzip::Off => cluster::RequestCompression::Off,
                Gzip::Auto => cluster::RequestCompression::Auto,
            };
        }
        Ok(c)
    }

    /// [`Connection::config`] without URLs, for a connector that takes them from its own
    /// URL (copy's `--from` / `--to`).
    fn client_config(&self) -> anyhow::Result<cluster::ClientConfig> {
        let mut c = self.config()?;
        c.urls.clear();
        Ok(c)
    }

    /// Whether any option is given (the URL aside).
    fn is_set(&self) -> bool {
        self.username.is_some()
            || self.password.is_some()
            || self.api_key.is_some()
            || self.sigv4.is_some()
            || self.aws_region.is_some()
            || self.ca.is_some()
            || self.client_cert.is_some()
            || self.client_key.is_some()
            || self.insecure
            || self.max_attempts.is_some()
            || self.timeout.is_some()
            || self.gzip.is_some()
    }

    async fn connect(&self, what: &str) -> anyhow::Result<cluster::Client> {
        cluster::Client::connect(self.config()?)
            .await
            .with_context(|| format!("connecting to {what} {}", redact::url(self.url)))
    }
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

impl StoreArgs {
    /// The store URL as it may be shown: its password and secret parameters masked.
    pub fn redacted(&self) -> String {
        redact::url(&self.store)
    }

    /// Opens the store (creating it if needed), waiting up to two minutes while it is
    /// unreachable (restarting); a refusal no retry cures (a wrong password, a missing
    /// directory) is an error at once.
    pub async fn open(&self) -> anyhow::Result<Arc<dyn coordination::Store>> {
        engine::worker::with_store_retries(|| coordination::open_store(&self.store))
            .await
            .with_context(|| format!("opening the coordination store {}", self.redacted()))
    }

    /// Opens the store for a worker that writes to `target`: an index on the target
    /// cluster itself (same scheme, host and port) is reached with the target's connection
    /// options (basic or API-key auth, SigV4, CA, client certificate), unless the store
    /// URL carries its own `user:password@`.
    pub async fn open_beside(
        &self,
        target: &TargetArgs,
    ) -> anyhow::Result<Arc<dyn coordination::Store>> {
        let Some(config) = self.on_target(target)? else {
            return self.open().await;
        };
        let (own, index) = coordination::ClusterStore::config_from_url(&self.store)?;
        let config = cluster::ClientConfig {
            urls: own.urls,
            ..config
        };
        let store = engine::worker::with_store_retries(|| {
            coordination::ClusterStore::open_with(config.clone(), &index)
        })
        .await
        .with_context(|| format!("opening the coordination store {}", self.redacted()))?;
        Ok(Arc::new(store))
    }

    /// The target's connection options when the store is an index on the target cluster
    /// and its URL names no user of its own.
    fn on_target(&self, target: &TargetArgs) -> anyhow::Result<Option<cluster::ClientConfig>> {
        let (Ok(store), Ok(t)) = (
            url::Url::parse(&self.store),
            url::Url::parse(&target.target),
        ) else {
            return Ok(None);
        };
        let same = matches!(store.scheme(), "http" | "https")
            && store.username().is_empty()
            && store.scheme() == t.scheme()
            && store.host_str() == t.host_str()
            && store.port_or_known_default() == t.port_or_known_default();
        Ok(if same { Some(target.config()?) } else { None })
    }

    /// Opens the store only if it exists (for commands that read it or set its control
    /// record): a mistyped path is an error, and nothing is created.
    pub async fn open_existing(&self) -> anyhow::Result<Arc<dyn coordination::Store>> {
        engine::worker::with_store_retries(|| coordination::open_existing_store(&self.store))
            .await
            .with_context(|| format!("opening the coordination store {}", self.redacted()))
    }

    /// Opens the existing store and a coordinator on it.
    pub async fn existing_coordinator(
        &self,
        config: coordination::Config,
    ) -> anyhow::Result<coordination::Coordinator> {
        Ok(coordination::Coordinator::new(
            self.open_existing().await?,
            config,
        ))
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
    /// Where documents the target refuses for good are recorded (JSON lines).
    #[arg(
        long,
        env = "RFS_FAILURE_LOG",
        default_value = "rfs-failures.jsonl",
        value_name = "FILE"
    )]
    pub failure_log: PathBuf,
    /// Index with `op_type=create` (existing ids are kept, conflicts counted as done).
    #[arg(long, env = "RFS_CREATE_ONLY")]
    pub create_only: bool,
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

/// `--migration`: 1–100 characters, none of them a control character.
fn migration_name(s: &str) -> Result<String, String> {
    let n = s.chars().count();
    if !(1..=100).contains(&n) {
        return Err(format!("{n} characters; expected 1–100"));
    }
    if s.chars().any(char::is_control) {
        return Err("control characters are not allowed".into());
    }
    Ok(s.to_string())
}

/// A float flag's parser: a finite number within `min..=max` (so never NaN, infinite, or
/// 0 where 0 makes no sense); the error names the range.
pub fn float_in(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("not a number (expected {min}–{max})"))?;
        if v.is_finite() && (min..=max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{s} is not in {min}–{max}"))
        }
    }
}

/// An integer flag's parser for a `usize` field: within `min..=max`.
pub fn usize_in(min: u64, max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(min..=max)
}

/// `secs` as a Duration within `min..=max` seconds, whatever `secs` is (NaN: `min`).
fn seconds(secs: f64, min: f64, max: f64) -> Duration {
    let s = if secs.is_nan() {
        min
    } else {
        secs.clamp(min, max)
    };
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs_f64(min))
}

impl WorkerArgs {
    pub fn coordination_config(&self) -> coordination::Config {
        // The parser bounds --lease-seconds; the arithmetic saturates anyway.
        let lease = Duration::from_secs(self.lease_seconds.clamp(1, 86_400));
        coordination::Config {
            initial_lease: lease,
            renew_every: if self.renew_seconds > 0.0 {
                seconds(self.renew_seconds, 0.05, 3600.0)
            } else {
                Duration::ZERO
            },
            max_attempts: self.max_attempts.max(1),
            phase_lease: lease.max(Duration::from_secs(5)),
            keeper_lease: Duration::from_secs(30)
                .min(lease.saturating_mul(3))
                .max(Duration::from_secs(3)),
            ..coordination::Config::default()
        }
    }

    /// Item workers in this process.
    pub fn parallel(&self) -> usize {
        self.parallel
            .unwrap_or_else(engine::JobOptions::default_parallel)
    }

    /// How the job runs: N item workers, batch limits, checkpoints, the memory budget.
    pub fn job_options(&self, wait_for_leases: bool) -> engine::JobOptions {
        let parallel = self.parallel();
        let pipeline = engine::PipelineOptions {
            in_flight: self.concurrency.max(1),
            checkpoint_every: seconds(self.checkpoint_seconds, 0.05, 3600.0),
            control_every: seconds(self.control_seconds, 0.05, 60.0),
            ..engine::PipelineOptions::default()
        };
        engine::JobOptions {
            parallel,
            worker: engine::WorkerOptions {
                pipeline,
                wait_for_leases,
                poll: seconds(self.control_seconds, 0.05, 5.0),
                max_items: None,
            },
            coordination: self.coordination_config(),
            memory_budget: engine::JobOptions::memory_budget_for(
                self.memory_budget,
                self.max_batch_bytes,
                parallel,
            ),
            migration: self.migration.clone(),
            fleet_limits: engine::FleetLimits {
                docs_per_sec: self
                    .fleet_max_docs_per_sec
                    .filter(|r| r.is_finite() && *r > 0.0),
                bytes_per_sec: self
                    .fleet_max_bytes_per_sec
                    .filter(|r| r.is_finite() && *r > 0.0),
            },
        }
    }

    /// The batch limits every sink uses.
    pub fn batch_limits(&self) -> engine::BatchLimits {
        engine::BatchLimits {
            max_docs: self.max_batch_docs.max(1),
            max_bytes: self.max_batch_bytes.max(1),
        }
    }

    /// The failure log, opened for appending (with each document's source, so it can be
    /// re-driven).
    pub fn failure_log(&self) -> anyhow::Result<Arc<engine::FailureLog>> {
        let log = engine::FailureLog::open(&self.failure_log)?.with_sources(true);
        Ok(Arc::new(log))
    }

    /// What these flags say about the sinks the connector registry opens (batches, `_bulk`
    /// options, requests in flight, rates, DynamoDB's throttle budget, this process's
    /// file tag); the command adds what its own flags say.
    pub fn sink_settings(&self) -> connectors::Settings {
        let rate = |r: Option<f64>| r.filter(|r| r.is_finite() && *r > 0.0);
        connectors::Settings {
            batch: self.batch_limits(),
            bulk: self.bulk_options(),
            max_in_flight: self.concurrency.max(1).saturating_mul(self.parallel()),
            max_docs_per_sec: rate(self.max_docs_per_sec),
            max_bytes_per_sec: rate(self.max_bytes_per_sec),
            dynamo_throttle_budget: Some(super::table::throttle_budget(self.lease_seconds)),
            file_tag: Some(super::table::process_tag()),
            ..connectors::Settings::default()
        }
    }

    /// How `_bulk` requests are sent: requests in flight, rates, the retry budget,
    /// `--create-only`.
    pub fn bulk_options(&self) -> cluster::BulkOptions {
        let mut o = cluster::BulkOptions {
            max_in_flight: self.concurrency.max(1).saturating_mul(self.parallel()),
            max_docs_per_sec: self.max_docs_per_sec.filter(|r| r.is_finite() && *r > 0.0),
            max_bytes_per_sec: self.max_bytes_per_sec.filter(|r| r.is_finite() && *r > 0.0),
            retry_budget: Some(Duration::from_secs(
                self.bulk_retry_seconds.clamp(10, 86_400),
            )),
            ..cluster::BulkOptions::default()
        };
        if self.create_only {
            o.op_type = cluster::OpType::Create;
            o.accept_error_types
                .push("version_conflict_engine_exception".into());
        }
        o
    }
}

/// Serves Prometheus metrics on `addr` in the background.
pub fn serve_metrics(addr: std::net::SocketAddr, metrics: &Arc<engine::Metrics>) {
    let m = metrics.clone();
    tokio::spawn(async move {
        if let Err(e) = engine::metrics::serve(addr, m).await {
            tracing::error!("metrics server on {addr}: {e}");
        }
    });
}

/// A progress bar on stderr when it is a terminal: documents sent by this process, out of
/// the snapshot's live documents. [`TerminalProgress::finish`] draws the final count and leaves it.
pub struct TerminalProgress {
    bar: indicatif::ProgressBar,
    totals: Arc<std::sync::OnceLock<engine::Totals>>,
    metrics: Arc<engine::Metrics>,
    ticker: tokio::task::JoinHandle<()>,
}

impl TerminalProgress {
    /// Starts the bar, or returns `None` when disabled or stderr is not a terminal. Its
    /// length is the source's total once the items phase has planned it.
    pub fn start(
        enabled: bool,
        totals: Arc<std::sync::OnceLock<engine::Totals>>,
        metrics: Arc<engine::Metrics>,
    ) -> Option<TerminalProgress> {
        use std::io::IsTerminal;
        if !enabled || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} docs by this worker ({per_sec}) {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let ticker = {
            let (bar, totals, metrics) = (bar.clone(), totals.clone(), metrics.clone());
            tokio::spawn(async move {
                loop {
                    TerminalProgress::update(&bar, &totals, &metrics);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            })
        };
        Some(TerminalProgress {
            bar,
            totals,
            metrics,
            ticker,
        })
    }

    fn update(
        bar: &indicatif::ProgressBar,
        totals: &std::sync::OnceLock<engine::Totals>,
        m: &engine::Metrics,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(t) = totals.get() {
            bar.set_length(t.docs);
        }
        bar.set_position(
            m.docs_sent.load(Relaxed) + m.docs_refused.load(Relaxed) + m.docs_skipped.load(Relaxed),
        );
        bar.set_message(format!(
            "{} refused, {} skipped, {} in flight",
            m.docs_refused.load(Relaxed),
            m.docs_skipped.load(Relaxed),
            m.in_flight_batches.load(Relaxed)
        ));
    }

    /// Stops updating and draws the final position, which stays on the terminal.
    pub fn finish(self) {
        self.ticker.abort();
        TerminalProgress::update(&self.bar, &self.totals, &self.metrics);
        // `abandon` keeps the position drawn; `finish` would jump to the length.
        self.bar.abandon();
    }
}

/// A multi-threaded runtime for a command.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
