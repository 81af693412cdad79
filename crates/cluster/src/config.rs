//! How to reach a target: URLs, authentication, TLS, timeouts, compression, retries.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::version::Target;
use pacing::RetryPolicy;
use sigv4::AwsCredentials;

/// Everything `Client::new` needs. Start from [`ClientConfig::new`] and set fields.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// One or more base URLs (`https://host:9200`, optionally with a path prefix).
    /// Requests rotate over them; a transport error moves to the next one.
    pub urls: Vec<String>,
    pub auth: Auth,
    pub tls: TlsConfig,
    pub connect_timeout: Duration,
    /// Whole-request timeout (send and receive).
    pub request_timeout: Duration,
    /// gzip request bodies: always, never, or when the target enables `http.compression`.
    pub compression: RequestCompression,
    /// Retries for every call except bulk (which has its own in `BulkOptions`).
    pub retry: RetryPolicy,
    /// Idle connections kept per host in the pool.
    pub pool_max_idle_per_host: usize,
    /// Skip `GET /` and assume this target (needed for OpenSearch Serverless).
    pub assume_target: Option<Target>,
}

impl ClientConfig {
    pub fn new(url: impl Into<String>) -> ClientConfig {
        ClientConfig {
            urls: vec![url.into()],
            auth: Auth::None,
            tls: TlsConfig::default(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
            compression: RequestCompression::Auto,
            retry: RetryPolicy::default(),
            pool_max_idle_per_host: 64,
            assume_target: None,
        }
    }
}

/// How requests authenticate.
#[derive(Clone, Default)]
pub enum Auth {
    #[default]
    None,
    Basic {
        username: String,
        password: String,
    },
    /// `Authorization: ApiKey <value>`; `value` is the base64 `id:key` the cluster returned.
    ApiKey(String),
    SigV4(SigV4Config),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => write!(f, "None"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Auth::ApiKey(_) => write!(f, "ApiKey(<redacted>)"),
            Auth::SigV4(c) => write!(f, "SigV4({:?})", c),
        }
    }
}

/// AWS request signing.
#[derive(Debug, Clone)]
pub struct SigV4Config {
    /// `us-east-1`, …; `None` reads `AWS_REGION` / `AWS_DEFAULT_REGION`.
    pub region: Option<String>,
    pub service: AwsService,
    /// `None`: the AWS default chain (environment, profile with assume-role, SSO or
    /// `credential_process`, web identity, container credentials, instance metadata),
    /// shared by the process and refreshed before expiry.
    pub credentials: Option<AwsCredentials>,
}

/// The signing name of the AWS service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsService {
    /// Amazon OpenSearch Service (managed domains).
    Es,
    /// Amazon OpenSearch Serverless.
    Aoss,
}

impl AwsService {
    pub fn name(self) -> &'static str {
        match self {
            AwsService::Es => "es",
            AwsService::Aoss => "aoss",
        }
    }
}

/// TLS trust and client identity. Without a CA file the public web roots are trusted.
#[derive(Debug, Clone, Default)]
pub struct TlsConfig {
    /// PEM file with one or more CA certificates to trust in addition to the public roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (chain) for mutual TLS.
    pub client_cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) for `client_cert`.
    pub client_key: Option<PathBuf>,
    /// Accept any server certificate and host name. Only for tests and trusted networks.
    pub insecure: bool,
}

/// Request-body compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestCompression {
    Off,
    On,
    /// On when the target's cluster settings enable `http.compression`.
    Auto,
}
