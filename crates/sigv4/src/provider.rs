//! One refreshing source of AWS credentials for every client that talks to AWS (S3
//! repositories, DynamoDB, SigV4 to clusters).
//!
//! [`CredentialsProvider::default_chain`] follows the order of the AWS SDKs' default chain
//! (read in `aws-config`'s `default_provider/credentials.rs`, awslabs/aws-sdk-rust), using
//! `aws-config`'s providers for each source:
//!
//! 1. the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`);
//! 2. the profile (`AWS_PROFILE`, else `default`) in the shared config and credentials
//!    files: static keys, assume-role (`role_arn` with `source_profile` or
//!    `credential_source`), `credential_process`, SSO, web identity;
//! 3. web identity (`AWS_ROLE_ARN` + `AWS_WEB_IDENTITY_TOKEN_FILE`, as IRSA sets them);
//! 4. container credentials (`AWS_CONTAINER_CREDENTIALS_FULL_URI` / `_RELATIVE_URI`, with
//!    `AWS_CONTAINER_AUTHORIZATION_TOKEN` or `_TOKEN_FILE`, as ECS and EKS Pod Identity
//!    set them);
//! 5. EC2 instance metadata (IMDSv2; off with `AWS_EC2_METADATA_DISABLED=true`).
//!
//! STS calls (assume-role, web identity) go to `AWS_ENDPOINT_URL_STS`, else
//! `AWS_ENDPOINT_URL`, else the regional STS endpoint.
//!
//! Credentials are cached and shared by all clones. Before they expire (5 minutes, or half
//! their lifetime when shorter) one background task fetches new ones while callers keep
//! using the current ones; only a caller that finds no valid credentials waits, and
//! concurrent callers then wait for one fetch, not one each. Errors name the source that
//! was tried and what it answered, never a key, secret or token.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, SystemTime};

use aws_config::provider_config::ProviderConfig;
use aws_credential_types::provider::error::CredentialsError as SdkError;
use aws_credential_types::provider::ProvideCredentials;
use aws_smithy_types::error::display::DisplayErrorContext;

use crate::credentials::{region, AwsCredentials};

/// Why no credentials could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// No source of the chain is set up.
    #[error(
        "no AWS credentials: none of these is set up: {tried} (set AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY, AWS_PROFILE, AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE, or \
         run where container or instance credentials are served)"
    )]
    NotFound { tried: String },
    /// A source is set up but gave no credentials.
    #[error("AWS credentials from {source_name}: {reason}")]
    Refused { source_name: String, reason: String },
}

/// A source of credentials, cheap to clone (clones share the cache).
#[derive(Clone)]
pub struct CredentialsProvider {
    inner: Arc<Inner>,
}

enum Inner {
    Fixed {
        credentials: Arc<AwsCredentials>,
        source: String,
    },
    Chain(Chain),
}

struct Chain {
    sources: Vec<Source>,
    cached: RwLock<Option<Cached>>,
    /// Held while fetching: one fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    /// A background refresh is under way.
    refreshing: AtomicBool,
}

struct Source {
    name: String,
    provider: Box<dyn ProvideCredentials>,
}

#[derive(Clone)]
struct Cached {
    credentials: Arc<AwsCredentials>,
    source: Arc<str>,
    /// When to fetch new ones in the background.
    refresh_at: Option<SystemTime>,
    /// From then on they are not used any more.
    stale_at: Option<SystemTime>,
}

/// Fetched this long before expiry at most …
const REFRESH_AHEAD: Duration = Duration::from_secs(300);
/// … and not used this close to it (a request signed now must arrive before).
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

impl Cached {
    fn new(credentials: AwsCredentials, source: &str, expiry: Option<SystemTime>) -> Cached {
        let now = SystemTime::now();
        let (refresh_at, stale_at) = match expiry {
            None => (None, None),
            Some(exp) => {
                let life = exp.duration_since(now).unwrap_or_default();
                (
                    Some(exp - REFRESH_AHEAD.min(life / 2)),
                    Some(exp - EXPIRY_MARGIN.min(life / 10)),
                )
            }
        };
        Cached {
            credentials: Arc::new(credentials),
            source: source.into(),
            refresh_at,
            stale_at,
        }
    }

    fn usable(&self, now: SystemTime) -> bool {
        self.stale_at.is_none_or(|t| now < t)
    }

    fn due(&self, now: SystemTime) -> bool {
        self.refresh_at.is_some_and(|t| now >= t)
    }
}

impl fmt::Debug for CredentialsProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.inner {
            Inner::Fixed {
                credentials,
                source,
            } => f
                .debug_struct("CredentialsProvider")
                .field("source", source)
                .field("credentials", credentials)
                .finish(),
            Inner::Chain(c) => f
                .debug_struct("CredentialsProvider")
                .field(
                    "sources",
                    &c.sources.iter().map(|s| &s.name).collect::<Vec<_>>(),
                )
                .finish_non_exhaustive(),
        }
    }
}

impl From<AwsCredentials> for CredentialsProvider {
    fn from(c: AwsCredentials) -> Self {
        CredentialsProvider::fixed(c, "the configuration")
    }
}

impl CredentialsProvider {
    /// Credentials given explicitly (configuration, flags, tests); `source` names where
    /// they come from in errors.
    pub fn fixed(credentials: AwsCredentials, source: impl Into<String>) -> CredentialsProvider {
        CredentialsProvider {
            inner: Arc::new(Inner::Fixed {
                credentials: Arc::new(credentials),
                source: source.into(),
            }),
        }
    }

    /// The process's default chain, built once and shared by every client, so that all of
    /// them use (and refresh) the same credentials.
    pub fn shared() -> CredentialsProvider {
        static SHARED: OnceLock<CredentialsProvider> = OnceLock::new();
        SHARED.get_or_init(Self::default_chain).clone()
    }

    /// A new default chain (see the module documentation), with a cache of its own.
    /// Nothing is read before the first [`CredentialsProvider::credentials`].
    pub fn default_chain() -> CredentialsProvider {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        // The region of STS calls: a bad config file shows up again when profiles are read.
        let region = region().ok().flatten().map(aws_config::Region::new);
        let conf = ProviderConfig::default()
            .with_http_client(http)
            .with_region(region);
        let home = env("HOME").unwrap_or_else(|| "~".into());
        let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
        let files = format!(
            "{} and {}",
            env("AWS_CONFIG_FILE").unwrap_or_else(|| format!("{home}/.aws/config")),
            env("AWS_SHARED_CREDENTIALS_FILE")
                .unwrap_or_else(|| format!("{home}/.aws/credentials"))
        );
        let web_identity = match (env("AWS_ROLE_ARN"), env("AWS_WEB_IDENTITY_TOKEN_FILE")) {
            (Some(role), Some(file)) => format!("web identity (role {role}, token file {file})"),
            _ => "web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE)".into(),
        };
        let container = match (
            env("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
            env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        ) {
            (_, Some(rel)) => format!(
                "container credentials (http://169.254.170.2{})",
                without_query(&rel)
            ),
            (Some(full), None) => format!("container credentials ({})", without_query(&full)),
            (None, None) => "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI, \
                             AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)"
                .into(),
        };
        use aws_config::{
            ecs::EcsCredentialsProvider, environment::EnvironmentVariableCredentialsProvider,
            imds::credentials::ImdsCredentialsProvider, profile::ProfileFileCredentialsProvider,
            web_identity_token::WebIdentityTokenCredentialsProvider,
        };
        let sources = vec![
            Source {
                name: "the environment (AWS_ACCESS_KEY_ID)".into(),
                provider: Box::new(EnvironmentVariableCredentialsProvider::new()),
            },
            Source {
                name: format!("profile {profile:?} in {files}"),
                provider: Box::new(
                    ProfileFileCredentialsProvider::builder()
                        .configure(&conf)
                        .build(),
                ),
            },
            Source {
                name: web_identity,
                provider: Box::new(
                    WebIdentityTokenCredentialsProvider::builder()
                        .configure(&conf)
                        .build(),
                ),
            },
            Source {
                name: container,
                provider: Box::new(EcsCredentialsProvider::builder().configure(&conf).build()),
            },
            Source {
                name: "EC2 instance metadata (IMDSv2)".into(),
                provider: Box::new(ImdsCredentialsProvider::builder().configure(&conf).build()),
            },
        ];
        CredentialsProvider {
            inner: Arc::new(Inner::Chain(Chain {
                sources,
                cached: RwLock::new(None),
                fetching: tokio::sync::Mutex::new(()),
                refreshing: AtomicBool::new(false),
            })),
        }
    }

    /// Current credentials: cached ones while they are valid, else fetched (once for all
    /// concurrent callers). Credentials due for refresh are still handed out while one
    /// background task fetches their successors.
    pub async fn credentials(&self) -> Result<Arc<AwsCredentials>, ProviderError> {
        let chain = match &*self.inner {
            Inner::Fixed { credentials, .. } => return Ok(credentials.clone()),
            Inner::Chain(c) => c,
        };
        let now = SystemTime::now();
        if let Some(c) = chain.current().filter(|c| c.usable(now)) {
            if c.due(now) {
                self.refresh_in_background();
            }
            return Ok(c.credentials);
        }
        let _one = chain.fetching.lock().await;
        if let Some(c) = chain.current().filter(|c| c.usable(SystemTime::now())) {
            return Ok(c.credentials); // fetched while this caller waited
        }
        Ok(chain.fetch().await?.credentials)
    }

    /// Where the credentials come from, for messages: the source that gave the current
    /// ones, else the chain's sources.
    pub fn source(&self) -> String {
        match &*self.inner {
            Inner::Fixed { source, .. } => source.clone(),
            Inner::Chain(c) => match c.current() {
                Some(cached) => cached.source.to_string(),
                None => format!(
                    "the default chain ({})",
                    c.sources
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        }
    }

    fn refresh_in_background(&self) {
        let Inner::Chain(chain) = &*self.inner else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if chain.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        /// Clears the flag however the task ends (even when its runtime shuts down).
        struct Done(CredentialsProvider);
        impl Drop for Done {
            fn drop(&mut self) {
                if let Inner::Chain(c) = &*self.0.inner {
                    c.refreshing.store(false, Ordering::Release);
                }
            }
        }
        let done = Done(self.clone());
        rt.spawn(async move {
            let Inner::Chain(chain) = &*done.0.inner else {
                return;
            };
            let _one = chain.fetching.lock().await;
            let now = SystemTime::now();
            if chain.current().is_none_or(|c| c.due(now) || !c.usable(now)) {
                if let Err(e) = chain.fetch().await {
                    tracing::warn!(
                        error = %e,
                        "refreshing AWS credentials failed; the current ones are used until they expire"
                    );
                }
            }
        });
    }
}

impl Chain {
    fn current(&self) -> Option<Cached> {
        self.cached.read().ok().and_then(|c| c.clone())
    }

    /// Asks the sources in order; the first that is set up answers.
    async fn fetch(&self) -> Result<Cached, ProviderError> {
        let mut tried = Vec::new();
        for s in &self.sources {
            match s.provider.provide_credentials().await {
                Ok(c) => {
                    let cached = Cached::new(
                        AwsCredentials {
                            access_key_id: c.access_key_id().to_string(),
                            secret_access_key: c.secret_access_key().to_string(),
                            // An empty token is none (a container endpoint may send `"Token": ""`).
                            session_token: c
                                .session_token()
                                .filter(|t| !t.is_empty())
                                .map(str::to_string),
                        },
                        &s.name,
                        c.expiry(),
                    );
                    tracing::debug!(
                        source = %s.name,
                        access_key_id = %c.access_key_id(),
                        expiry = ?c.expiry(),
                        "AWS credentials fetched"
                    );
                    if let Ok(mut slot) = self.cached.write() {
                        *slot = Some(cached.clone());
                    }
                    return Ok(cached);
                }
                Err(SdkError::CredentialsNotLoaded(_)) => tried.push(s.name.clone()),
                Err(e) => {
                    return Err(ProviderError::Refused {
                        source_name: s.name.clone(),
                        reason: DisplayErrorContext(&e).to_string(),
                    })
                }
            }
        }
        Err(ProviderError::NotFound {
            tried: tried.join("; "),
        })
    }
}

/// A URL without its query and userinfo (which may hold tokens), for messages.
fn without_query(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) if !host.contains('/') || rest.find('@') < rest.find('/') => {
                format!("{scheme}://{host}")
            }
            _ => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_messages_lose_query_and_userinfo() {
        assert_eq!(
            without_query("http://u:p@127.0.0.1:80/creds?token=x"),
            "http://127.0.0.1:80/creds"
        );
        assert_eq!(without_query("/v2/credentials/abc"), "/v2/credentials/abc");
    }

    #[tokio::test]
    async fn fixed_credentials_are_handed_out_and_never_shown() {
        let p = CredentialsProvider::fixed(
            AwsCredentials {
                access_key_id: "AKIDFIXED".into(),
                secret_access_key: "SECRET-FIXED".into(),
                session_token: Some("TOKEN-FIXED".into()),
            },
            "the test",
        );
        assert_eq!(p.credentials().await.unwrap().access_key_id, "AKIDFIXED");
        assert_eq!(p.source(), "the test");
        let shown = format!("{p:?}");
        assert!(
            !shown.contains("SECRET-FIXED") && !shown.contains("TOKEN-FIXED"),
            "{shown}"
        );
    }

    /// A chain of one source, the profile `profile` of a credentials file holding `text`
    /// (not the machine's files).
    #[allow(deprecated)] // aws-config's names for aws-runtime's profile files
    fn profile_chain(text: &str, profile: &str) -> CredentialsProvider {
        use aws_config::profile::profile_file::{ProfileFileKind, ProfileFiles};
        use aws_config::profile::ProfileFileCredentialsProvider;
        let files = ProfileFiles::builder()
            .include_default_config_file(false)
            .include_default_credentials_file(false)
            .with_contents(ProfileFileKind::Credentials, text)
            .build();
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let conf = ProviderConfig::empty()
            .with_http_client(http)
            .with_region(Some(aws_config::Region::new("us-east-1")));
        let provider = ProfileFileCredentialsProvider::builder()
            .configure(&conf)
            .profile_files(files)
            .profile_name(profile)
            .build();
        CredentialsProvider {
            inner: Arc::new(Inner::Chain(Chain {
                sources: vec![Source {
                    name: format!("profile {profile:?}"),
                    provider: Box::new(provider),
                }],
                cached: RwLock::new(None),
                fetching: tokio::sync::Mutex::new(()),
                refreshing: AtomicBool::new(false),
            })),
        }
    }

    /// Static keys of a profile come through the chain as they are written (a secret
    /// with `/`, `+` and `=`, a session token), the source named; a profile that lacks a
    /// key is refused naming the source, one that is not there is not set up.
    #[tokio::test]
    async fn a_profile_with_static_keys_through_the_chain() {
        let text = "# comment\n[default]\naws_access_key_id=DEFKEY\naws_secret_access_key = DEFSECRET\n\n\
                    [dev]\n; another comment\naws_access_key_id = DEVKEY\naws_secret_access_key = DEV/SECRET+x=\n\
                    aws_session_token = DEVTOKEN\n[half]\naws_access_key_id = HALF\n";
        let dev = profile_chain(text, "dev");
        let c = dev.credentials().await.unwrap();
        assert_eq!(
            (
                c.access_key_id.as_str(),
                c.secret_access_key.as_str(),
                c.session_token.as_deref()
            ),
            ("DEVKEY", "DEV/SECRET+x=", Some("DEVTOKEN"))
        );
        assert_eq!(dev.source(), "profile \"dev\"");
        let c = profile_chain(text, "default").credentials().await.unwrap();
        assert_eq!(
            (c.access_key_id.as_str(), c.session_token.as_deref()),
            ("DEFKEY", None)
        );

        match profile_chain(text, "half").credentials().await {
            Err(ProviderError::Refused {
                source_name,
                reason,
            }) => {
                assert_eq!(source_name, "profile \"half\"");
                assert!(reason.contains("aws_secret_access_key"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        match profile_chain(text, "nope").credentials().await {
            Err(ProviderError::NotFound { tried }) => assert_eq!(tried, "profile \"nope\""),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refresh_comes_before_expiry_and_stale_credentials_are_not_used() {
        let now = SystemTime::now();
        let c = |secs| {
            Cached::new(
                AwsCredentials {
                    access_key_id: "K".into(),
                    secret_access_key: "S".into(),
                    session_token: None,
                },
                "test",
                Some(now + Duration::from_secs(secs)),
            )
        };
        let hour = c(3600);
        assert!(hour.usable(now) && !hour.due(now));
        assert!(hour.due(now + Duration::from_secs(3600 - 299)));
        assert!(hour.usable(now + Duration::from_secs(3600 - 11)));
        assert!(!hour.usable(now + Duration::from_secs(3600 - 9)));
        let short = c(20);
        assert!(!short.due(now + Duration::from_secs(9)));
        assert!(
            short.due(now + Duration::from_secs(11)) && short.usable(now + Duration::from_secs(11))
        );
        assert!(!short.usable(now + Duration::from_secs(19)));
    }
}
