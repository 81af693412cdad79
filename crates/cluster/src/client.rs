//! The connection to a target: one pooled HTTP client, authentication, version detection,
//! and every request sent with bounded retries.

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use base64::Engine;
use bytes::Bytes;
use reqwest::header::{
    HeaderValue, AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, DATE, RETRY_AFTER,
};
pub use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::{debug, warn};
use url::Url;

use crate::config::{Auth, AwsService, ClientConfig, RequestCompression};
use crate::error::ClusterError;
use crate::version::{ProductVersion, Target};
use pacing::{parse_retry_after, RetryPolicy, Sometimes};

/// A cheap-to-clone handle on a target cluster. All clones share one connection pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("urls", &self.inner.bases)
            .field("target", &self.inner.target.get())
            .field("gzip", &self.gzip())
            .finish_non_exhaustive()
    }
}

struct Inner {
    http: reqwest::Client,
    request_timeout: Duration,
    /// Retries of control requests are logged at warn level, rate-limited.
    warnings: Sometimes,
    bases: Vec<String>,
    next: AtomicUsize,
    auth: ResolvedAuth,
    retry: RetryPolicy,
    compression: RequestCompression,
    gzip: AtomicBool,
    compression_checked: AtomicBool,
    target: OnceLock<Target>,
}

enum ResolvedAuth {
    None,
    Header(HeaderValue),
    SigV4(sigv4::ProvidedSigner),
}

/// A response with its body read. Any status; see [`Response::error_for_status`].
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Bytes,
    pub retry_after: Option<Duration>,
    /// The server's `Date` header (1 s resolution), for clocks estimated from the server.
    pub date: Option<SystemTime>,
    pub method: String,
    pub url: String,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// Decode the body as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ClusterError> {
        serde_json::from_slice(&self.body).map_err(|e| ClusterError::Response {
            method: self.method.clone(),
            url: self.url.clone(),
            reason: format!("invalid JSON body ({e}): {}", snippet(&self.body)),
        })
    }

    /// `Ok(self)` for 2xx, otherwise a [`ClusterError::Status`] with the server's error type and reason.
    pub fn error_for_status(self) -> Result<Response, ClusterError> {
        if self.is_success() {
            Ok(self)
        } else {
            Err(self.to_error())
        }
    }

    pub(crate) fn to_error(&self) -> ClusterError {
        let (error_type, reason) = error_details(&self.body);
        ClusterError::Status {
            method: self.method.clone(),
            url: self.url.clone(),
            status: self.status,
            error_type,
            reason,
        }
    }

    pub(crate) fn retryable(&self) -> bool {
        is_retryable_status(self.status)
    }
}

/// 429 and server errors other than "not implemented" may succeed later.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 429 || (status >= 500 && status != 501 && status != 505)
}

/// The `error.type` and a reason from an Elasticsearch error body (or the raw text).
pub(crate) fn error_details(body: &[u8]) -> (Option<String>, String) {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        match v.get("error") {
            Some(Value::Object(e)) => {
                let ty = e.get("type").and_then(Value::as_str).map(str::to_owned);
                let reason = e
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| Value::Object(e.clone()).to_string());
                return (ty, reason);
            }
            Some(Value::String(s)) => return (None, s.clone()),
            _ => {}
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return (None, m.to_owned());
        }
    }
    (None, snippet(body))
}

pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    if body.len() > 300 {
        format!("{text}…")
    } else if text.is_empty() {
        "(empty body)".into()
    } else {
        text
    }
}

/// One attempt that got no response.
#[derive(Debug)]
pub(crate) struct TransportFailure {
    pub url: String,
    pub reason: String,
    pub retryable: bool,
}

/// Percent-encode one path segment (an index, template or id) for a URL.
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for &b in segment.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b',' | b'*' | b':')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client {
    /// Build the client (no request is made). Fails on unreadable TLS files or missing credentials.
    pub fn new(config: ClientConfig) -> Result<Client, ClusterError> {
        if config.urls.is_empty() {
            return Err(ClusterError::Config("no target URL given".into()));
        }
        let mut bases = Vec::new();
        for u in &config.urls {
            let parsed = Url::parse(u)
                .map_err(|e| ClusterError::Config(format!("target URL {u:?}: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(ClusterError::Config(format!(
                    "target URL {u:?}: scheme must be http or https"
                )));
            }
            bases.push(u.trim_end_matches('/').to_string());
        }

        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .pool_max_idle_per_host(config.pool_max_idle_per_host)
            .tcp_nodelay(true)
            .user_agent(concat!("rfs/", env!("CARGO_PKG_VERSION")));
        let tls = &config.tls;
        match &tls.ca_file {
            // A CA file: rustls configured here, so that a server whose certificate is in
            // the file itself (self-signed, even marked as a CA) is trusted too.
            Some(ca) if !tls.insecure => {
                let cas = pem_certificates(ca)?;
                let client = match (&tls.client_cert, &tls.client_key) {
                    (Some(cert), Some(key)) => Some((pem_certificates(cert)?, pem_key(key)?)),
                    (None, None) => None,
                    _ => {
                        return Err(ClusterError::Config(
                            "mutual TLS needs both a client certificate and its key".into(),
                        ))
                    }
                };
                let tls_config = crate::tls::client_config(cas, client).map_err(|reason| {
                    ClusterError::TlsFile {
                        path: ca.clone(),
                        reason: reason.to_string(),
                    }
                })?;
                builder = builder.use_preconfigured_tls(tls_config);
            }
            _ => builder = reqwest_identity(builder, tls)?,
        }
        if tls.insecure {
            warn!("TLS certificate verification is disabled for the target (insecure)");
            builder = builder
                .danger_accept_invalid_certs(true)
                .danger_accept_invalid_hostnames(true);
        }
        let http = builder
            .build()
            .map_err(|e| ClusterError::Config(format!("HTTP client: {e}")))?;

        let mut assume_target = config.assume_target.clone();
        let auth = match &config.auth {
            Auth::None => ResolvedAuth::None,
            Auth::Basic { username, password } => {
                let token = base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{password}"));
                ResolvedAuth::Header(sensitive(&format!("Basic {token}"))?)
            }
            Auth::ApiKey(key) => ResolvedAuth::Header(sensitive(&format!("ApiKey {key}"))?),
            Auth::SigV4(c) => {
                let region = c
                    .region
                    .clone()
                    .map_or_else(sigv4::region, |r| Ok(Some(r)))
                    .map_err(|e| ClusterError::Config(format!("SigV4: {e}")))?
                    .ok_or_else(|| {
                        ClusterError::Config(
                            "SigV4 needs a region: set it in the configuration, AWS_REGION or \
                             the profile in ~/.aws/config"
                                .into(),
                        )
                    })?;
                // Given ones, else the process's shared chain, asked before each request so
                // that refreshed credentials are used at once.
                let credentials = match &c.credentials {
                    Some(c) => sigv4::CredentialsProvider::from(c.clone()),
                    None => sigv4::CredentialsProvider::shared(),
                };
                if c.service == AwsService::Aoss && assume_target.is_none() {
                    // Serverless has no `GET /`; it speaks the current OpenSearch API.
                    assume_target = Some(Target {
                        version: ProductVersion::os(2, 0),
                        serverless: true,
                    });
                }
                ResolvedAuth::SigV4(sigv4::ProvidedSigner {
                    region,
                    service: c.service.name(),
                    provider: credentials,
                })
            }
        };

        let target = OnceLock::new();
        if let Some(t) = assume_target {
            let _ = target.set(t);
        }
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                request_timeout: config.request_timeout,
                warnings: Sometimes::new(Duration::from_secs(10)),
                bases,
                next: AtomicUsize::new(0),
                auth,
                retry: config.retry.clone(),
                compression: config.compression,
                gzip: AtomicBool::new(config.compression == RequestCompression::On),
                compression_checked: AtomicBool::new(false),
                target,
            }),
        })
    }

    /// [`Client::new`] then [`Client::detect`].
    pub async fn connect(config: ClientConfig) -> Result<Client, ClusterError> {
        let client = Client::new(config)?;
        client.detect().await?;
        Ok(client)
    }

    /// The target found by [`Client::detect`] (or assumed by the configuration).
    pub fn target(&self) -> Option<&Target> {
        self.inner.target.get()
    }

    /// The whole-request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// The first configured URL (for messages).
    pub fn base_url(&self) -> &str {
        &self.inner.bases[0]
    }

    /// Whether request bodies are gzip-compressed.
    pub fn gzip(&self) -> bool {
        self.inner.gzip.load(Ordering::Relaxed)
    }

    /// `GET /` to learn distribution and version (once; later calls return the cached value),
    /// and with `RequestCompression::Auto` whether the target enables `http.compression`.
    pub async fn detect(&self) -> Result<Target, ClusterError> {
        if let Some(t) = self.inner.target.get() {
            if self.inner.compression == RequestCompression::Auto && !t.serverless {
                self.detect_compression().await;
            }
            return Ok(t.clone());
        }
        let resp = self
            .execute(Method::GET, "/", None, None)
            .await?
            .error_for_status()?;
        let root: Value = resp.json()?;
        let target = Target::from_root(&root).ok_or_else(|| ClusterError::Response {
            method: "GET".into(),
            url: resp.url.clone(),
            reason: format!(
                "no version.number in the root document: {}",
                snippet(&resp.body)
            ),
        })?;
        debug!(%target, "target detected");
        let _ = self.inner.target.set(target.clone());
        if self.inner.compression == RequestCompression::Auto {
            self.detect_compression().await;
        }
        Ok(target)
    }

    async fn detect_compression(&self) {
        if self.inner.compression_checked.swap(true, Ordering::Relaxed) {
            return;
        }
        // nested, not flat_settings: filter_path never matches a flat key such as
        // `http.compression` (it is one property name), so a flat request comes back `{}`
        let path = "/_cluster/settings?include_defaults=true&filter_path=*.http.compression";
        let enabled = match self.execute(Method::GET, path, None, None).await {
            Ok(r) if r.is_success() => {
                let v: Value = r.json().unwrap_or(Value::Null);
                ["transient", "persistent", "defaults"]
                    .iter()
                    .find_map(|k| {
                        let scope = v.get(k)?;
                        scope
                            .pointer("/http/compression")
                            .or_else(|| scope.get("http.compression"))
                            .cloned()
                    })
                    .map(|s| s == Value::String("true".into()) || s == Value::Bool(true))
                    .unwrap_or(false)
            }
            Ok(r) => {
                debug!(
                    status = r.status,
                    "cluster settings unavailable; gzip stays off"
                );
                false
            }
            Err(e) => {
                debug!(error = %e, "cluster settings unavailable; gzip stays off");
                false
            }
        };
        self.inner.gzip.store(enabled, Ordering::Relaxed);
    }

    /// Send any request (with retries for 429, 5xx and transport errors) and return the
    /// response whatever its status. `path` starts with `/` and may carry a query.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, ClusterError> {
        let body = body.map(|b| Bytes::from(serde_json::to_vec(b).expect("JSON values serialise")));
        self.execute(method, path, body, None).await
    }

    /// Like [`Client::request`] with a raw body (`application/json` or `application/x-ndjson`).
    pub async fn request_bytes(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: &str,
    ) -> Result<Response, ClusterError> {
        self.execute_with(method, path, Some(body), content_type, None)
            .await
    }

    pub(crate) async fn execute(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        timeout: Option<Duration>,
    ) -> Result<Response, ClusterError> {
        self.execute_with(method, path, body, "application/json", timeout)
            .await
    }

    async fn execute_with(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
        timeout: Option<Duration>,
    ) -> Result<Response, ClusterError> {
        let gzip = self.gzip() && body.as_ref().is_some_and(|b| b.len() >= 1024);
        let body = match body {
            Some(b) if gzip => Some(gzip_bytes(&b)),
            other => other,
        };
        let policy = &self.inner.retry;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self
                .send_once(&method, path, body.clone(), content_type, gzip, timeout)
                .await;
            let (last, retry_after, url) = match result {
                Ok(resp) if resp.retryable() => {
                    let (ty, reason) = error_details(&resp.body);
                    let last = format!(
                        "HTTP {}{}: {reason}",
                        resp.status,
                        ty.map(|t| format!(" {t}")).unwrap_or_default()
                    );
                    (last, resp.retry_after, resp.url)
                }
                Ok(resp) => return Ok(resp),
                Err(f) if f.retryable => (f.reason, None, f.url),
                Err(f) => {
                    return Err(ClusterError::Transport {
                        method: method.to_string(),
                        url: f.url,
                        reason: f.reason,
                    })
                }
            };
            if attempt >= policy.max_attempts {
                return Err(ClusterError::RetriesExhausted {
                    method: method.to_string(),
                    url,
                    attempts: attempt,
                    last,
                });
            }
            let wait = policy.delay(attempt, retry_after);
            if self.inner.warnings.due() {
                warn!(%method, %url, attempt, of = policy.max_attempts, next_in = ?wait, "request to the cluster failed, retrying: {last}");
            } else {
                debug!(%method, %url, attempt, ?wait, %last, "retrying");
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// One attempt, no retry. `body` is sent as is (already compressed when `gzip`).
    pub(crate) async fn send_once(
        &self,
        method: &Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
        gzip: bool,
        timeout: Option<Duration>,
    ) -> Result<Response, TransportFailure> {
        let inner = &self.inner;
        let n = inner.bases.len();
        let base = &inner.bases[inner.next.fetch_add(1, Ordering::Relaxed) % n];
        let url_string = format!("{base}{path}");
        let url = Url::parse(&url_string).map_err(|e| TransportFailure {
            url: url_string.clone(),
            reason: format!("invalid URL: {e}"),
            retryable: false,
        })?;
        let mut req = inner.http.request(method.clone(), url.clone());
        if let Some(t) = timeout {
            req = req.timeout(t);
        }
        if body.is_some() {
            req = req.header(CONTENT_TYPE, content_type);
            if gzip {
                req = req.header(CONTENT_ENCODING, "gzip");
            }
        }
        match &inner.auth {
            ResolvedAuth::None => {}
            ResolvedAuth::Header(h) => req = req.header(AUTHORIZATION, h.clone()),
            ResolvedAuth::SigV4(signer) => {
                let host = match url.port() {
                    Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
                    None => url.host_str().unwrap_or_default().to_string(),
                };
                let headers = signer
                    .headers(
                        SystemTime::now(),
                        method.as_str(),
                        &host,
                        (url.path(), url.query().unwrap_or("")),
                        body.as_deref().unwrap_or(b""),
                    )
                    .await
                    .map_err(|e| TransportFailure {
                        url: url_string.clone(),
                        reason: format!("SigV4: {e}"),
                        retryable: false,
                    })?;
                for (name, value) in headers {
                    req = req.header(name, value);
                }
            }
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let fail = |e: reqwest::Error, what: &str| {
            let reason = format!("{what}: {}", error_chain(&e));
            // A certificate that is refused now will be refused on every retry.
            let tls_refusal = reason.to_ascii_lowercase().contains("certificate");
            TransportFailure {
                url: url_string.clone(),
                retryable: !e.is_builder() && !tls_refusal,
                reason,
            }
        };
        let resp = req.send().await.map_err(|e| fail(e, "request failed"))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let date = resp
            .headers()
            .get(DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|d| httpdate::parse_http_date(d).ok());
        let body = resp
            .bytes()
            .await
            .map_err(|e| fail(e, "reading the response failed"))?;
        Ok(Response {
            status,
            body,
            retry_after,
            date,
            method: method.to_string(),
            url: url_string,
        })
    }
}

fn sensitive(value: &str) -> Result<HeaderValue, ClusterError> {
    let mut h = HeaderValue::from_str(value).map_err(|_| {
        ClusterError::Config("credentials contain characters not allowed in a header".into())
    })?;
    h.set_sensitive(true);
    Ok(h)
}

/// The certificates of a PEM file; none is an error naming the file.
fn pem_certificates(
    path: &std::path::Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, ClusterError> {
    use rustls::pki_types::pem::PemObject;
    let pem = read_file(path)?;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ClusterError::TlsFile {
            path: path.to_path_buf(),
            reason: format!("not a PEM certificate bundle: {e}"),
        })?;
    if certs.is_empty() {
        return Err(ClusterError::TlsFile {
            path: path.to_path_buf(),
            reason: "no certificate found".into(),
        });
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn pem_key(
    path: &std::path::Path,
) -> Result<rustls::pki_types::PrivateKeyDer<'static>, ClusterError> {
    use rustls::pki_types::pem::PemObject;
    let pem = read_file(path)?;
    rustls::pki_types::PrivateKeyDer::from_pem_slice(&pem).map_err(|e| ClusterError::TlsFile {
        path: path.to_path_buf(),
        reason: format!("no usable private key: {e}"),
    })
}

/// A client certificate for mutual TLS through reqwest's own TLS set-up (no CA file).
fn reqwest_identity(
    builder: reqwest::ClientBuilder,
    tls: &crate::config::TlsConfig,
) -> Result<reqwest::ClientBuilder, ClusterError> {
    match (&tls.client_cert, &tls.client_key) {
        (Some(cert), Some(key)) => {
            let mut pem = read_file(cert)?;
            pem.push(b'\n');
            pem.extend_from_slice(&read_file(key)?);
            let identity =
                reqwest::Identity::from_pem(&pem).map_err(|e| ClusterError::TlsFile {
                    path: cert.clone(),
                    reason: format!("client certificate or key not usable: {e}"),
                })?;
            Ok(builder.identity(identity))
        }
        (None, None) => Ok(builder),
        _ => Err(ClusterError::Config(
            "mutual TLS needs both a client certificate and its key".into(),
        )),
    }
}

fn read_file(path: &std::path::Path) -> Result<Vec<u8>, ClusterError> {
    std::fs::read(path).map_err(|e| ClusterError::TlsFile {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// `e` and its sources, so "error sending request" says why (refused, reset, certificate…).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        cur = c.source();
    }
    s
}

/// gzip at the fastest level: bulk bodies are large and compress well even so.
pub(crate) fn gzip_bytes(data: &[u8]) -> Bytes {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    enc.write_all(data).expect("writing to memory");
    Bytes::from(enc.finish().expect("writing to memory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_details_read_es_bodies() {
        let (t, r) = error_details(
            br#"{"error":{"root_cause":[],"type":"resource_already_exists_exception","reason":"index [a/x] already exists"},"status":400}"#,
        );
        assert_eq!(t.as_deref(), Some("resource_already_exists_exception"));
        assert_eq!(r, "index [a/x] already exists");
        assert_eq!(
            error_details(br#"{"error":"old style"}"#),
            (None, "old style".into())
        );
        assert_eq!(error_details(b"Bad Gateway"), (None, "Bad Gateway".into()));
        assert_eq!(error_details(b""), (None, "(empty body)".into()));
    }

    #[test]
    fn segments_are_encoded() {
        assert_eq!(encode_segment("logs-2024.01,b*"), "logs-2024.01,b*");
        assert_eq!(encode_segment("a/b c?#é"), "a%2Fb%20c%3F%23%C3%A9");
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let data = b"{\"a\":1}\n".repeat(1000);
        let z = gzip_bytes(&data);
        assert!(z.len() < data.len() / 10);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&z[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn config_errors_are_clear() {
        let mut c = ClientConfig::new("ftp://x");
        assert!(
            matches!(Client::new(c.clone()), Err(ClusterError::Config(m)) if m.contains("scheme"))
        );
        c.urls = vec!["http://localhost:9200".into()];
        c.tls.ca_file = Some("/nonexistent/ca.pem".into());
        let e = Client::new(c.clone()).err().unwrap();
        assert!(e.to_string().starts_with("/nonexistent/ca.pem:"), "{e}");
        c.tls.ca_file = None;
        c.tls.client_cert = Some("/x".into());
        assert!(matches!(Client::new(c), Err(ClusterError::Config(m)) if m.contains("both")));
    }
}
