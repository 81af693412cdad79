//! `rfs metadata evaluate|migrate`: templates and indices from a snapshot onto a target.
//! `evaluate` only reads the target (GET/HEAD) and prints what `migrate` would do;
//! `migrate` creates what is missing and never modifies what exists.

use std::sync::Arc;

use anyhow::Context;
use migrate::metadata::{Allowlist, MultiTypeMode, Options, Report, SourceMetadata};

use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Show what would be created, skipped or changed and why; writes nothing.
    Evaluate(Args),
    /// Create the missing templates and indices; print the same report with outcomes.
    Migrate(Args),
}

/// The target cluster and how to authenticate (reusable by other commands).
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// Target URL (`https://host:9200`); several separated by commas.
    #[arg(
        long,
        env = "RFS_TARGET",
        value_name = "URL",
        value_delimiter = ',',
        required = true
    )]
    pub target: Vec<String>,
    /// Basic-auth user name.
    #[arg(long, env = "RFS_TARGET_USERNAME", value_name = "USER")]
    pub target_username: Option<String>,
    /// Basic-auth password.
    #[arg(
        long,
        env = "RFS_TARGET_PASSWORD",
        value_name = "PASSWORD",
        hide_env_values = true
    )]
    pub target_password: Option<String>,
    /// API key (the base64 `id:key` the cluster returned).
    #[arg(
        long,
        env = "RFS_TARGET_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub target_api_key: Option<String>,
    /// Sign requests with AWS SigV4 for this service (`es` or `aoss`); credentials and
    /// region come from the standard AWS environment variables unless given.
    #[arg(long, env = "RFS_TARGET_AWS_SERVICE", value_name = "SERVICE", value_parser = ["es", "aoss"])]
    pub target_aws_service: Option<String>,
    /// AWS region for SigV4 (else AWS_REGION / AWS_DEFAULT_REGION).
    #[arg(long, env = "RFS_TARGET_AWS_REGION", value_name = "REGION")]
    pub target_aws_region: Option<String>,
    /// PEM file of CA certificates to trust.
    #[arg(long, env = "RFS_TARGET_CA_CERT", value_name = "FILE")]
    pub target_ca_cert: Option<std::path::PathBuf>,
    /// PEM client certificate for mutual TLS.
    #[arg(long, env = "RFS_TARGET_CLIENT_CERT", value_name = "FILE")]
    pub target_client_cert: Option<std::path::PathBuf>,
    /// PEM private key of the client certificate.
    #[arg(long, env = "RFS_TARGET_CLIENT_KEY", value_name = "FILE")]
    pub target_client_key: Option<std::path::PathBuf>,
    /// Accept any server certificate (tests and trusted networks only).
    #[arg(long, env = "RFS_TARGET_INSECURE")]
    pub target_insecure: bool,
}

impl TargetArgs {
    pub fn config(&self) -> anyhow::Result<cluster::ClientConfig> {
        let mut c = cluster::ClientConfig::new(self.target.first().cloned().unwrap_or_default());
        c.urls = self.target.clone();
        c.auth = match (
            &self.target_username,
            &self.target_api_key,
            &self.target_aws_service,
        ) {
            (Some(u), None, None) => cluster::Auth::Basic {
                username: u.clone(),
                password: self.target_password.clone().unwrap_or_default(),
            },
            (None, Some(k), None) => cluster::Auth::ApiKey(k.clone()),
            (None, None, Some(s)) => cluster::Auth::SigV4(cluster::SigV4Config {
                region: self.target_aws_region.clone(),
                service: if s == "aoss" {
                    cluster::AwsService::Aoss
                } else {
                    cluster::AwsService::Es
                },
                credentials: None,
            }),
            (None, None, None) => cluster::Auth::None,
            _ => anyhow::bail!(
                "choose one of --target-username, --target-api-key and --target-aws-service"
            ),
        };
        c.tls = cluster::TlsConfig {
            ca_file: self.target_ca_cert.clone(),
            client_cert: self.target_client_cert.clone(),
            client_key: self.target_client_key.clone(),
            insecure: self.target_insecure,
        };
        Ok(c)
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repository: a path, `file:///path` or `s3://bucket/base_path[?region=R&endpoint=URL]`.
    #[arg(long, env = "RFS_REPO", value_name = "REPO")]
    pub repo: String,
    /// Snapshot name.
    #[arg(long, env = "RFS_SNAPSHOT", value_name = "NAME")]
    pub snapshot: String,
    /// S3 region (else `?region=`, AWS_REGION, AWS_DEFAULT_REGION).
    #[arg(long, env = "RFS_S3_REGION", value_name = "REGION")]
    pub s3_region: Option<String>,
    /// S3-compatible endpoint URL.
    #[arg(long, env = "RFS_S3_ENDPOINT", value_name = "URL")]
    pub s3_endpoint: Option<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Indices to migrate: exact names, or `regex:PATTERN` (whole-name match); separated
    /// by commas. Default: every index except system and dot-prefixed ones.
    #[arg(
        long,
        env = "RFS_INDEX_ALLOWLIST",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub index_allowlist: Vec<String>,
    /// Legacy (`_template`) templates to migrate, as for --index-allowlist.
    #[arg(
        long,
        env = "RFS_LEGACY_TEMPLATE_ALLOWLIST",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub legacy_template_allowlist: Vec<String>,
    /// Component templates to migrate (those an index template needs are added).
    #[arg(
        long,
        env = "RFS_COMPONENT_TEMPLATE_ALLOWLIST",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub component_template_allowlist: Vec<String>,
    /// Composable index templates to migrate.
    #[arg(
        long,
        env = "RFS_INDEX_TEMPLATE_ALLOWLIST",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub index_template_allowlist: Vec<String>,
    /// Number of replicas for every created index (default: as in the snapshot).
    #[arg(long, env = "RFS_REPLICAS", value_name = "N")]
    pub replicas: Option<u32>,
    /// Indices with several mapping types (ES ≤ 6): `merge` them into one mapping, or
    /// `split` them into one index per type named `<index>_<type>`.
    #[arg(long, env = "RFS_MULTI_TYPE_MODE", default_value = "merge", value_parser = ["merge", "split"])]
    pub multi_type_mode: String,
    /// Print the report as one JSON document instead of a table.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
}

impl Args {
    /// The metadata options these flags describe.
    pub fn options(&self) -> anyhow::Result<Options> {
        Ok(Options {
            indices: Allowlist::parse(&self.index_allowlist)?,
            legacy_templates: Allowlist::parse(&self.legacy_template_allowlist)?,
            component_templates: Allowlist::parse(&self.component_template_allowlist)?,
            index_templates: Allowlist::parse(&self.index_template_allowlist)?,
            replicas: self.replicas,
            multi_type_mode: self
                .multi_type_mode
                .parse::<MultiTypeMode>()
                .map_err(anyhow::Error::msg)?,
        })
    }

    /// Reads the snapshot's templates and index metadata.
    pub fn source(&self) -> anyhow::Result<SourceMetadata> {
        let opts = snapshot::StoreOptions {
            s3_region: self.s3_region.clone(),
            s3_endpoint: self.s3_endpoint.clone(),
            ..Default::default()
        };
        let store: Arc<dyn snapshot::BlobStore> = snapshot::open_store(&self.repo, &opts)
            .with_context(|| format!("opening repository {}", self.repo))?;
        let repo = snapshot::Repository::open(store)
            .with_context(|| format!("reading repository {}", self.repo))?;
        let snap = repo
            .snapshot(&self.snapshot)
            .with_context(|| format!("snapshot {} in {}", self.snapshot, self.repo))?;
        SourceMetadata::from_snapshot(&snap)
            .with_context(|| format!("metadata of snapshot {}", self.snapshot))
    }
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    let (args, write) = match cmd {
        Command::Evaluate(a) => (a, false),
        Command::Migrate(a) => (a, true),
    };
    let options = args.options()?;
    let source = args.source()?;
    let config = args.target.config()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report: Report = rt.block_on(async {
        let client = cluster::Client::new(config).context("target client")?;
        let r = if write {
            migrate::metadata::migrate(&source, &client, &options).await
        } else {
            migrate::metadata::evaluate(&source, &client, &options).await
        };
        r.context("metadata migration")
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.to_table());
    }
    Ok(if report.has_errors() { exit::FATAL } else { 0 })
}
