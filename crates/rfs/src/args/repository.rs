//! Where a snapshot repository is and how it is read: `--repo` and the object-store
//! flags, the snapshot, how documents without `_source` are rebuilt, `--since`.

use super::parsers::masked;

/// Where a snapshot repository is and how to reach it: the same flags and `RFS_*` names
/// for every command that reads one (`inspect`, `export`, `metadata`, `documents`, `run`,
/// `verify`).
#[derive(Clone, clap::Args)]
pub struct RepositoryArgs {
    /// Snapshot repository: a path, `file:///path`, `s3://bucket/base_path[?region=R&endpoint=URL]`,
    /// `gs://bucket/base_path[?endpoint=URL]` or `az://container/base_path`. S3 credentials
    /// come from the flags below or the AWS default chain (environment, AWS_PROFILE with
    /// assume-role, SSO or credential_process, web identity, container credentials, IMDS);
    /// GCS ones from --gcs-service-account or the usual Google
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
