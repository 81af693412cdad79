//! How a cluster is reached: the target (`--target-*`), the source cluster a snapshot is
//! taken on (`--source-*`), and `rfs copy`'s two ends (`--from-*`, `--to-*`, one parser).

use std::path::PathBuf;

use super::parsers::masked;

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
    /// AWS default chain (environment, AWS_PROFILE with assume-role, SSO or
    /// credential_process, web identity, container credentials, IMDS), refreshed before
    /// they expire; region from --target-aws-region, AWS_REGION or the profile.
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
    /// from the AWS default chain (environment, AWS_PROFILE with assume-role, SSO or
    /// credential_process, web identity, container credentials, IMDS), refreshed before
    /// they expire; region from --source-aws-region, AWS_REGION or the profile.
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

/// One end of `rfs copy` (and `verify --from`): which flags reach it.
pub trait End: Clone + Send + Sync + 'static {
    /// The flags' prefix (`from` gives `--from-ca`, `RFS_FROM_CA`).
    const PREFIX: &'static str;
    /// What the end is called in help texts (`source`, `sink`).
    const WHAT: &'static str;
    /// Whether the end takes `--gzip` (request bodies are sent to sinks only).
    const GZIP: bool;
}

/// `--from-*`: a live-cluster source.
#[derive(Debug, Clone, Default)]
pub struct From_;

impl End for From_ {
    const PREFIX: &'static str = "from";
    const WHAT: &'static str = "source";
    const GZIP: bool = false;
}

/// `--to-*`: a cluster sink.
#[derive(Debug, Clone, Default)]
pub struct To;

impl End for To {
    const PREFIX: &'static str = "to";
    const WHAT: &'static str = "sink";
    const GZIP: bool = true;
}

/// How `rfs copy` reaches a cluster at one of its ends (`--from http(s)://…`,
/// `--to http(s)://…`): the connection options of [`TargetArgs`], spelled `--from-*` /
/// `RFS_FROM_*` or `--to-*` / `RFS_TO_*`, one parser for both. The URL's
/// `user:password@` still works; an authentication flag wins over it.
#[derive(Clone, Default)]
pub struct EndConnectionArgs<E> {
    pub username: Option<String>,
    pub password: Option<String>,
    pub api_key: Option<String>,
    pub sigv4: Option<SigV4Service>,
    pub aws_region: Option<String>,
    pub ca: Option<PathBuf>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub insecure: bool,
    /// `None`: the client's default (8).
    pub max_attempts: Option<u32>,
    /// Seconds; `None`: the client's default (120).
    pub timeout: Option<u64>,
    /// `None`: not given (the client's default, `auto`), or an end without `--gzip`.
    pub gzip: Option<Gzip>,
    end: std::marker::PhantomData<E>,
}

/// `--from-*` (the source of `rfs copy` and `rfs verify --from`).
pub type FromConnectionArgs = EndConnectionArgs<From_>;
/// `--to-*` (the sink of `rfs copy`).
pub type ToConnectionArgs = EndConnectionArgs<To>;

impl<E: End> EndConnectionArgs<E> {
    /// The id (and config-file key) of the flag `--<prefix>-<name>`.
    fn id(name: &str) -> String {
        format!("{}_{}", E::PREFIX, name.replace('-', "_"))
    }

    fn arg(name: &str, help: String) -> clap::Arg {
        clap::Arg::new(Self::id(name))
            .long(format!("{}-{name}", E::PREFIX))
            .env(format!(
                "RFS_{}_{}",
                E::PREFIX.to_ascii_uppercase(),
                name.replace('-', "_").to_ascii_uppercase()
            ))
            .help(help)
    }

    fn args() -> Vec<clap::Arg> {
        use clap::builder::{EnumValueParser, PathBufValueParser};
        let (what, p) = (E::WHAT, E::PREFIX);
        let mut args = vec![
            Self::arg(
                "username",
                format!(
                    "Basic-auth user name on an http(s) {what} (wins over the URL's `user:password@`)"
                ),
            )
            .value_name("USER")
            .hide_env_values(true)
            .conflicts_with_all([Self::id("api-key"), Self::id("sigv4")]),
            Self::arg("password", format!("Basic-auth password of --{p}-username"))
                .value_name("PASSWORD")
                .hide_env_values(true)
                .requires(Self::id("username")),
            Self::arg(
                "api-key",
                format!(
                    "API key for an http(s) {what} (the base64 `id:key`; wins over the URL's \
                     `user:password@`)"
                ),
            )
            .value_name("KEY")
            .hide_env_values(true)
            .conflicts_with(Self::id("sigv4")),
            Self::arg(
                "sigv4",
                format!(
                    "Sign {what} requests with AWS SigV4 for this service (`es` or `aoss`); \
                     credentials from the AWS default chain (environment, AWS_PROFILE with \
                     assume-role, SSO or credential_process, web identity, container \
                     credentials, IMDS), refreshed before they expire; region from \
                     --{p}-aws-region, AWS_REGION or the profile"
                ),
            )
            .value_name("SERVICE")
            .value_parser(EnumValueParser::<SigV4Service>::new()),
            Self::arg("aws-region", format!("AWS region for SigV4 on the {what}"))
                .value_name("REGION")
                .requires(Self::id("sigv4")),
            Self::arg(
                "ca",
                format!("PEM CA certificate(s) to trust for an https {what}"),
            )
            .value_name("FILE")
            .value_parser(PathBufValueParser::new()),
            Self::arg(
                "client-cert",
                format!("PEM client certificate for mutual TLS with an https {what}"),
            )
            .value_name("FILE")
            .value_parser(PathBufValueParser::new())
            .requires(Self::id("client-key")),
            Self::arg("client-key", format!("PEM private key of --{p}-client-cert"))
                .value_name("FILE")
                .value_parser(PathBufValueParser::new())
                .requires(Self::id("client-cert")),
            Self::arg(
                "insecure",
                format!(
                    "Accept any certificate from an https {what} (tests and trusted networks only)"
                ),
            )
            .action(clap::ArgAction::SetTrue),
            Self::arg(
                "max-attempts",
                format!(
                    "Attempts per request to an http(s) {what} before giving up (1–100; default \
                     8), with exponential backoff from 0.5 s"
                ),
            )
            .value_name("N")
            .value_parser(clap::value_parser!(u32).range(1..=100)),
            Self::arg(
                "timeout",
                format!(
                    "Seconds to wait for an http(s) {what}'s answer to one request (1–3600; \
                     default 120)"
                ),
            )
            .value_name("SECS")
            .value_parser(clap::value_parser!(u64).range(1..=3600)),
        ];
        if E::GZIP {
            args.push(
                clap::Arg::new("gzip")
                    .long("gzip")
                    .env("RFS_GZIP")
                    .help(
                        "gzip request bodies to an http(s) sink: `on`, `off`, or `auto` (when \
                         the sink enables http.compression; the default)",
                    )
                    .value_name("GZIP")
                    .value_parser(EnumValueParser::<Gzip>::new()),
            );
        }
        args
    }

    fn string(m: &clap::ArgMatches, name: &str) -> Option<String> {
        m.get_one::<String>(&Self::id(name)).cloned()
    }

    fn path(m: &clap::ArgMatches, name: &str) -> Option<PathBuf> {
        m.get_one::<PathBuf>(&Self::id(name)).cloned()
    }
}

impl<E: End> clap::FromArgMatches for EndConnectionArgs<E> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(EndConnectionArgs {
            username: Self::string(m, "username"),
            password: Self::string(m, "password"),
            api_key: Self::string(m, "api-key"),
            sigv4: m.get_one::<SigV4Service>(&Self::id("sigv4")).copied(),
            aws_region: Self::string(m, "aws-region"),
            ca: Self::path(m, "ca"),
            client_cert: Self::path(m, "client-cert"),
            client_key: Self::path(m, "client-key"),
            insecure: m.get_flag(&Self::id("insecure")),
            max_attempts: m.get_one::<u32>(&Self::id("max-attempts")).copied(),
            timeout: m.get_one::<u64>(&Self::id("timeout")).copied(),
            gzip: if E::GZIP {
                m.get_one::<Gzip>("gzip").copied()
            } else {
                None
            },
            end: std::marker::PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<E: End> clap::Args for EndConnectionArgs<E> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.args(Self::args())
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.args(Self::args())
    }
}

impl<E: End> std::fmt::Debug for EndConnectionArgs<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndConnectionArgs")
            .field("end", &E::PREFIX)
            .field("username", &self.username)
            .field("password", &masked(&self.password))
            .field("api_key", &masked(&self.api_key))
            .field("sigv4", &self.sigv4)
            .field("aws_region", &self.aws_region)
            .field("ca", &self.ca)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .field("insecure", &self.insecure)
            .field("max_attempts", &self.max_attempts)
            .field("timeout", &self.timeout)
            .field("gzip", &self.gzip)
            .finish()
    }
}
