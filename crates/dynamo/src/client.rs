//! The HTTP side: one signed `POST /` per operation in the DynamoDB JSON protocol
//! (`X-Amz-Target: DynamoDB_20120810.<Operation>`, `application/x-amz-json-1.0`), answers
//! classified (throttled, retry, auth, permanent), and retries with backoff and jitter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use pacing::{AimdLimiter, RetryPolicy};
use sigv4::{AwsCredentials, CredentialsProvider, ProvidedSigner};

use crate::error::{class_of, parse_error_body, Class, DynamoError};

/// How to reach DynamoDB.
#[derive(Clone)]
pub struct ClientConfig {
    /// `us-east-1`, …: part of the signature, and of the default endpoint.
    pub region: String,
    /// `http(s)://host[:port]` of a DynamoDB-API server; `None`: the region's AWS endpoint.
    pub endpoint: Option<String>,
    /// Asked before each request, so that refreshed credentials are used at once.
    pub credentials: CredentialsProvider,
    pub connect_timeout: Duration,
    /// One request, sent and answered.
    pub request_timeout: Duration,
    /// Throttling, 5xx and lost connections: how often and how patiently.
    pub retry: RetryPolicy,
    /// Most `BatchWriteItem` requests in flight (the AIMD limit starts here and halves on
    /// throttling).
    pub max_in_flight: usize,
    /// How long writes are retried while DynamoDB throttles them (throttling errors and
    /// unprocessed writes), whatever `retry.max_attempts` says; `None`: attempts only.
    /// Callers set it to what their lease allows.
    pub throttle_budget: Option<Duration>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("region", &self.region)
            .field("endpoint", &self.endpoint.as_deref().map(redact::url))
            .field("credentials", &self.credentials)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .field("max_in_flight", &self.max_in_flight)
            .field("throttle_budget", &self.throttle_budget)
            .finish_non_exhaustive()
    }
}

/// Writes in flight unless configured: DynamoDB takes many small requests well.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;

/// One request, sent and answered, unless configured.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// 10 attempts from 100 ms doubling to 20 s (about a minute of patience): DynamoDB asks
/// clients to retry throttling quickly and often.
pub fn default_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 10,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(20),
        max_retry_after: Duration::from_secs(60),
    }
}

impl ClientConfig {
    /// Defaults: 10 s to connect, [`DEFAULT_REQUEST_TIMEOUT`], [`default_retry`],
    /// [`DEFAULT_MAX_IN_FLIGHT`].
    pub fn new(
        region: impl Into<String>,
        credentials: impl Into<CredentialsProvider>,
    ) -> ClientConfig {
        ClientConfig {
            region: region.into(),
            endpoint: None,
            credentials: credentials.into(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            retry: default_retry(),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            throttle_budget: None,
        }
    }
}

/// A DynamoDB client; cheap to clone (clones share connections, limiter and counters).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    http: reqwest::Client,
    url: reqwest::Url,
    host: String,
    /// The endpoint as shown to people (redacted).
    shown: String,
    signer: ProvidedSigner,
    pub(crate) retry: RetryPolicy,
    pub(crate) limiter: AimdLimiter,
    pub(crate) stats: Counters,
    pub(crate) throttle_budget: Option<Duration>,
    /// When pressure (throttling, unprocessed writes, retries) was last reported at WARN,
    /// and the counters then.
    warned: std::sync::Mutex<(Option<std::time::Instant>, ClientStats)>,
}

/// Shortest time between two WARN lines about throttling.
const WARN_EVERY: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub throttled: AtomicU64,
    pub retries: AtomicU64,
    pub unprocessed: AtomicU64,
    pub splits: AtomicU64,
}

/// What the client did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// HTTP requests sent (every attempt).
    pub requests: u64,
    /// Answers that said "too fast" (throttling errors, or writes left unprocessed).
    pub throttled: u64,
    /// Requests sent again after throttling, a server error or a lost connection.
    pub retries: u64,
    /// Write requests DynamoDB returned unprocessed (and that were sent again).
    pub unprocessed: u64,
    /// Batches split to find the write a `ValidationException` is about.
    pub splits: u64,
}

/// Longest answer read (DynamoDB pages are at most a few MB).
const MAX_RESPONSE: usize = 64 << 20;

/// One failed attempt.
#[derive(Debug)]
pub(crate) struct Failure {
    pub class: Class,
    pub status: u16,
    pub error_type: String,
    pub message: String,
}

impl Failure {
    pub fn into_error(self, operation: &'static str) -> DynamoError {
        DynamoError::Rejected {
            operation,
            status: self.status,
            error_type: self.error_type,
            message: self.message,
        }
    }

    fn describe(&self) -> String {
        if self.status == 0 {
            self.message.clone()
        } else {
            format!("HTTP {} {}: {}", self.status, self.error_type, self.message)
        }
    }
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Client, DynamoError> {
        if config.region.is_empty() {
            return Err(DynamoError::Config("no region".into()));
        }
        let endpoint = config
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://dynamodb.{}.amazonaws.com", config.region));
        let shown = redact::url(&endpoint);
        let url = reqwest::Url::parse(&endpoint)
            .map_err(|e| DynamoError::Config(format!("endpoint {shown}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(DynamoError::Config(format!(
                "endpoint {shown}: the scheme must be http or https"
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(DynamoError::Config(format!(
                "endpoint {shown}: credentials do not go in the URL (use the AWS environment or profile)"
            )));
        }
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => return Err(DynamoError::Config(format!("endpoint {shown}: no host"))),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .pool_max_idle_per_host(config.max_in_flight.max(1) * 2)
            .build()
            .map_err(|e| DynamoError::Config(format!("HTTP client: {e}")))?;
        let retry = RetryPolicy {
            max_attempts: config.retry.max_attempts.max(1),
            ..config.retry
        };
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                url,
                host,
                shown,
                signer: ProvidedSigner {
                    provider: config.credentials,
                    region: config.region,
                    service: "dynamodb",
                },
                retry,
                limiter: AimdLimiter::new(config.max_in_flight),
                stats: Counters::default(),
                throttle_budget: config.throttle_budget,
                warned: std::sync::Mutex::new((None, ClientStats::default())),
            }),
        })
    }

    /// The endpoint, redacted.
    pub fn endpoint(&self) -> &str {
        &self.inner.shown
    }

    pub fn region(&self) -> &str {
        &self.inner.signer.region
    }

    pub fn stats(&self) -> ClientStats {
        let s = &self.inner.stats;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ClientStats {
            requests: g(&s.requests),
            throttled: g(&s.throttled),
            retries: g(&s.retries),
            unprocessed: g(&s.unprocessed),
            splits: g(&s.splits),
        }
    }

    /// Reports throttling, unprocessed writes and retries at WARN, at most once per
    /// [`WARN_EVERY`], with the counts since the last report: call after each of them.
    pub(crate) fn warn_pressure(&self, table: &str, last: &str) {
        let now = std::time::Instant::now();
        let stats = self.stats();
        let Ok(mut w) = self.inner.warned.lock() else {
            return;
        };
        if w.0.is_some_and(|t| now.duration_since(t) < WARN_EVERY) {
            return;
        }
        let before = w.1;
        let since = w.0.map_or_else(
            || "so far".to_string(),
            |t| format!("in the last {} s", now.duration_since(t).as_secs()),
        );
        *w = (Some(now), stats);
        drop(w);
        tracing::warn!(
            table,
            throttled = stats.throttled - before.throttled,
            unprocessed = stats.unprocessed - before.unprocessed,
            retries = stats.retries - before.retries,
            "DynamoDB is pushing back {since}: {} throttled answers, {} writes left unprocessed, {} requests retried (totals {}, {}, {}; write concurrency now {:.1}); last: {last}",
            stats.throttled - before.throttled,
            stats.unprocessed - before.unprocessed,
            stats.retries - before.retries,
            stats.throttled,
            stats.unprocessed,
            stats.retries,
            self.write_concurrency(),
        );
    }

    /// How long writes are retried while throttled (`None`: attempts only).
    pub fn throttle_budget(&self) -> Option<Duration> {
        self.inner.throttle_budget
    }

    /// The current concurrency limit of writes (halved on throttling).
    pub fn write_concurrency(&self) -> f64 {
        self.inner.limiter.limit()
    }

    /// One attempt: the answer's body on 200, else what went wrong.
    pub(crate) async fn send_once(
        &self,
        operation: &'static str,
        body: Bytes,
    ) -> Result<Bytes, Failure> {
        let inner = &self.inner;
        inner.stats.requests.fetch_add(1, Ordering::Relaxed);
        let target = format!("DynamoDB_20120810.{operation}");
        let mut req = inner
            .http
            .post(inner.url.clone())
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amz-target", &target);
        let credentials = inner
            .signer
            .provider
            .credentials()
            .await
            .map_err(|e| Failure {
                class: Class::Auth,
                status: 0,
                error_type: String::new(),
                message: e.to_string(),
            })?;
        for (name, value) in sigv4::signed_headers(
            &credentials,
            &inner.signer.region,
            inner.signer.service,
            SystemTime::now(),
            "POST",
            &inner.host,
            (inner.url.path(), ""),
            &body,
        ) {
            req = req.header(name, value);
        }
        let lost = |what: &str, e: &reqwest::Error| {
            // The chain names the cause (reset, timeout, refused); it holds no secret.
            let mut reason = format!("{what}: {e}");
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                reason.push_str(&format!(": {s}"));
                source = s.source();
            }
            Failure {
                class: if e.is_builder() {
                    Class::Permanent
                } else {
                    Class::Retry
                },
                status: 0,
                error_type: String::new(),
                message: redact::text(&reason).into_owned(),
            }
        };
        let mut resp = req
            .body(body)
            .send()
            .await
            .map_err(|e| lost(&format!("POST {}", inner.shown), &e))?;
        let status = resp.status().as_u16();
        let mut out = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if out.len() + chunk.len() > MAX_RESPONSE {
                        return Err(Failure {
                            class: Class::Permanent,
                            status,
                            error_type: String::new(),
                            message: format!("the answer is longer than {MAX_RESPONSE} bytes"),
                        });
                    }
                    out.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(lost("reading the answer", &e)),
            }
        }
        if status == 200 {
            return Ok(Bytes::from(out));
        }
        let (error_type, message) = parse_error_body(&out);
        let class = class_of(status, &error_type);
        let mut message = scrub(&credentials, message);
        if class == Class::Auth {
            message.push_str(&format!(
                " (AWS credentials {} from {})",
                credentials.access_key_id,
                inner.signer.provider.source()
            ));
        }
        Err(Failure {
            class,
            status,
            error_type,
            message,
        })
    }

    /// Calls `operation` with a JSON `body`, retrying throttling, server errors and lost
    /// connections with backoff; returns the answer's body.
    pub async fn call(
        &self,
        operation: &'static str,
        body: impl Into<Bytes>,
    ) -> Result<Bytes, DynamoError> {
        let body = body.into();
        let policy = &self.inner.retry;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.send_once(operation, body.clone()).await {
                Ok(b) => return Ok(b),
                Err(f) => f,
            };
            match failure.class {
                Class::Throttled | Class::Retry if attempt < policy.max_attempts => {
                    if failure.class == Class::Throttled {
                        self.inner.stats.throttled.fetch_add(1, Ordering::Relaxed);
                    }
                    self.inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(
                        operation,
                        attempt,
                        "DynamoDB: {}; retrying",
                        failure.describe()
                    );
                    tokio::time::sleep(policy.delay(attempt, None)).await;
                }
                Class::Throttled | Class::Retry => {
                    return Err(DynamoError::RetriesExhausted {
                        operation,
                        attempts: attempt,
                        last: failure.describe(),
                    })
                }
                Class::Auth | Class::Permanent => return Err(failure.into_error(operation)),
            }
        }
    }

    /// [`Client::call`] with the answer parsed as JSON.
    pub async fn call_json(
        &self,
        operation: &'static str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, DynamoError> {
        let answer = self
            .call(operation, serde_json::to_vec(body).unwrap_or_default())
            .await?;
        serde_json::from_slice(&answer).map_err(|e| DynamoError::Response {
            operation,
            reason: format!("not JSON: {e}"),
        })
    }
}

/// `message` without the secret key or session token of `c`, should a server quote them.
fn scrub(c: &AwsCredentials, mut message: String) -> String {
    for secret in std::iter::once(&c.secret_access_key).chain(&c.session_token) {
        if secret.len() >= 4 && message.contains(secret.as_str()) {
            message = message.replace(secret.as_str(), redact::MASK);
        }
    }
    message
}
