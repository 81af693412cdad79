//! Bulk indexing: request bodies framed once ([`BulkEncoder`], [`BulkBody`]), sent under an
//! adaptive concurrency limit and optional rate limits, with per-item retries and backoff.
//! Documents the target refuses for good come back as [`Refused`]; what to do with them (a
//! failure log) is the caller's business.

mod body;
mod response;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::client::{error_details, gzip_bytes, is_retryable_status, Client, Method};
use crate::error::ClusterError;
pub use body::{BulkAction, BulkBody, BulkEncoder, DocMeta, EntryKeys, Framing, Unframed};
use body::{Framed, Part};
use pacing::RetryPolicy;
use pacing::Sometimes;
use pacing::{AimdLimiter, RateLimiter};
pub use response::ItemError;
use response::ItemResult;

/// One document to index, owned (for callers that do not frame bodies themselves).
#[derive(Debug, Clone, PartialEq)]
pub struct BulkDoc {
    pub index: Arc<str>,
    pub id: String,
    /// Mapping type; only sent to typed (ES ≤ 6) targets, where `None` means `_doc`.
    pub doc_type: Option<Arc<str>>,
    pub routing: Option<String>,
    /// External version, sent when `BulkOptions::external_versioning` is on.
    pub version: Option<u64>,
    /// The `_source` JSON (line breaks are replaced by spaces when sent).
    pub source: Bytes,
}

impl BulkDoc {
    pub fn new(index: impl Into<Arc<str>>, id: impl Into<String>, source: Bytes) -> BulkDoc {
        BulkDoc {
            index: index.into(),
            id: id.into(),
            doc_type: None,
            routing: None,
            version: None,
            source,
        }
    }
}

/// `index` overwrites, `create` refuses existing ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpType {
    #[default]
    Index,
    Create,
}

/// Whether `_bulk` action lines carry the document's `_id` or the target generates one.
///
/// OpenSearch Serverless time-series and vector-search collections refuse an id in
/// index/create requests (400 `illegal_argument_exception` "Document ID is not supported
/// in create/index operation request": AWS developer guide `serverless-genref.html`,
/// aoss:WriteDocument, where `PUT <index>/_doc/<id>` and `_create/<id>` are "for search
/// collection types only"; the item answer as reported in langchain-ai/langchainjs#4346
/// and opensearch-project/opensearch-py#792).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerGeneratedIds {
    /// Ids are sent (a resend overwrites: idempotent).
    #[default]
    Never,
    /// Ids are never sent; deletes cannot be sent.
    Always,
    /// Id-less when the target is OpenSearch Serverless (SigV4 service `aoss`): the
    /// collection type is not visible through the OpenSearch API, so every Serverless
    /// target is taken as time-series/vector-search; `Never` for a search collection.
    Auto,
}

impl ServerGeneratedIds {
    /// Whether action lines go without `_id` for `target`.
    pub fn resolve(self, target: &crate::version::Target) -> bool {
        match self {
            ServerGeneratedIds::Never => false,
            ServerGeneratedIds::Always => true,
            ServerGeneratedIds::Auto => target.serverless,
        }
    }
}

/// Knobs of a [`BulkSender`].
#[derive(Debug, Clone)]
pub struct BulkOptions {
    /// No entry is ever larger: a bigger document is refused when framed.
    pub hard_max_bytes: usize,
    /// Requests in flight at most, across all concurrent `send` calls (the AIMD limit
    /// starts here and halves on throttling).
    pub max_in_flight: usize,
    pub op_type: OpType,
    /// Send `version`/`version_type=external` from the document's version.
    pub external_versioning: bool,
    /// Item error types counted as success, e.g. `version_conflict_engine_exception` with create.
    pub accept_error_types: Vec<String>,
    /// Backoff for retryable items and failed requests.
    pub retry: RetryPolicy,
    /// Longest time one body is retried (from its first send); `None`: attempts only.
    pub retry_budget: Option<Duration>,
    /// When retries run out: `false` (default) fails the call — the target is unwell and the
    /// batch must be redone later; `true` refuses the remaining documents and goes on.
    pub refuse_exhausted_items: bool,
    pub max_docs_per_sec: Option<f64>,
    pub max_bytes_per_sec: Option<f64>,
    /// gzip request bodies; `None` follows the client (`RequestCompression` setting / detection).
    pub gzip: Option<bool>,
    /// Ask the target to return only `status`, `error` and `_id` per item.
    pub filter_response: bool,
    /// Whether documents are sent with their `_id` (see [`ServerGeneratedIds`]).
    pub server_generated_ids: ServerGeneratedIds,
}

/// How long one bulk body is retried at most by default: a target that answers 500 or
/// does not answer for this long fails the batch (and the item's attempt).
pub const DEFAULT_RETRY_BUDGET: Duration = Duration::from_secs(300);

/// The largest body most targets accept (`http.max_content_length` defaults to 100 MB).
pub const DEFAULT_HARD_MAX_BYTES: usize = 100 * 1024 * 1024;

impl Default for BulkOptions {
    fn default() -> Self {
        BulkOptions {
            hard_max_bytes: DEFAULT_HARD_MAX_BYTES,
            max_in_flight: 8,
            op_type: OpType::Index,
            external_versioning: false,
            accept_error_types: Vec::new(),
            retry: RetryPolicy::bulk_default(),
            retry_budget: Some(DEFAULT_RETRY_BUDGET),
            refuse_exhausted_items: false,
            max_docs_per_sec: None,
            max_bytes_per_sec: None,
            gzip: None,
            filter_response: true,
            server_generated_ids: ServerGeneratedIds::Never,
        }
    }
}

/// A document the target refused for good (or that could not be framed).
#[derive(Debug, Clone)]
pub struct Refused {
    pub meta: DocMeta,
    pub error: ItemError,
    /// Times it was sent (0: refused before sending).
    pub attempts: u32,
    /// Its `_source` line as it was sent (empty for deletes and framing refusals).
    pub source: Bytes,
    /// It was a delete.
    pub delete: bool,
}

/// What one `send` did. `docs == indexed + accepted + refused.len()` always holds.
#[derive(Debug, Clone, Default)]
pub struct BulkResult {
    pub docs: u64,
    /// Acknowledged with a 2xx item status.
    pub indexed: u64,
    /// Answered with an error type listed in `accept_error_types` (or a delete of a
    /// missing document).
    pub accepted: u64,
    pub refused: Vec<Refused>,
    /// Item re-sends (a document sent three times counts two).
    pub retries: u64,
    /// HTTP requests made.
    pub requests: u64,
    /// Throttling answers seen (429 requests or rejected items).
    pub throttled: u64,
    /// Bytes of the body as framed.
    pub body_bytes: u64,
    /// `_source` bytes of the documents.
    pub source_bytes: u64,
    /// Documents sent again after a request whose fate was unknown — no answer (a
    /// transport error once the request may have gone out), an unreadable 2xx answer, or a
    /// server error — so that the target may have stored them already. Only a target that
    /// makes up ids (`--server-generated-ids`) stores such a document twice.
    pub unknown_fate_resent: u64,
}

impl BulkResult {
    /// Documents that are on the target as asked.
    pub fn acknowledged(&self) -> u64 {
        self.indexed + self.accepted
    }
}

/// Totals over every `send` of one sender, for progress reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BulkStats {
    pub indexed: u64,
    pub accepted: u64,
    pub refused: u64,
    pub retries: u64,
    pub requests: u64,
    pub throttled: u64,
    pub source_bytes: u64,
    /// Current adaptive concurrency limit (≤ `max_in_flight`).
    pub concurrency_limit: f64,
}

/// Sends bulk bodies. Cheap to clone; clones share limits and counters.
#[derive(Clone)]
pub struct BulkSender {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BulkSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkSender")
            .field("client", &self.inner.client)
            .field("options", &self.inner.opts)
            .finish_non_exhaustive()
    }
}

struct Inner {
    client: Client,
    opts: BulkOptions,
    encoder: BulkEncoder,
    limiter: AimdLimiter,
    docs_rate: Option<RateLimiter>,
    bytes_rate: Option<RateLimiter>,
    gzip: bool,
    path: &'static str,
    totals: Totals,
    /// Retries are logged at warn level, rate-limited.
    retry_warnings: Sometimes,
    /// So are requests the target is slow to answer.
    wait_warnings: Sometimes,
}

#[derive(Default)]
struct Totals {
    indexed: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    retries: AtomicU64,
    requests: AtomicU64,
    throttled: AtomicU64,
    source_bytes: AtomicU64,
}

/// Result of one request (after splitting on 400/413).
#[derive(Default)]
struct RequestReport {
    results: Vec<(usize, Verdict)>,
    /// Documents indexed by an answer that said so for all of its documents (the usual
    /// answer: see [`response::all_indexed`]), kept apart from `results` as a plain copy
    /// of the request's members.
    indexed: Vec<usize>,
    /// Documents of requests whose fate is unknown (see [`BulkResult::unknown_fate_resent`]).
    unknown_fate: Vec<usize>,
    requests: u64,
    throttled: u64,
    retry_after: Option<Duration>,
    hard_error: Option<ClusterError>,
}

/// What a request said about one document (errors boxed: one verdict per document, and
/// nearly all are `Indexed`).
enum Verdict {
    Indexed,
    Accepted,
    Retry(Box<ItemError>),
    Fail(Box<ItemError>),
}

/// Where each document of a body stands.
enum Fate {
    Pending {
        attempts: u32,
        last: Option<Box<ItemError>>,
    },
    Indexed,
    Accepted,
    Refused {
        error: Box<ItemError>,
        attempts: u32,
    },
}

const FILTERED_BULK_PATH: &str =
    "/_bulk?filter_path=errors,items.*.status,items.*._id,items.*.error";

/// Retries are logged at warn level at most this often per sender.
const RETRY_WARNING_EVERY: Duration = Duration::from_secs(10);

impl BulkSender {
    /// The client requests go through (for the other calls of a command that opened the
    /// sender by URL).
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// A sender for `client`'s detected target (call [`Client::detect`] or use
    /// [`Client::connect`] first: the dialect depends on the version).
    pub fn new(client: Client, options: BulkOptions) -> Result<BulkSender, ClusterError> {
        let target = client.target().cloned().ok_or_else(|| {
            ClusterError::Config(
                "the target version is unknown: call Client::detect before bulk indexing".into(),
            )
        })?;
        if options.external_versioning && options.op_type == OpType::Create {
            return Err(ClusterError::Config(
                "op_type create cannot be combined with external versioning".into(),
            ));
        }
        if options.hard_max_bytes == 0 || options.retry.max_attempts == 0 {
            return Err(ClusterError::Config(
                "bulk hard_max_bytes and retry attempts must be at least 1".into(),
            ));
        }
        let server_ids = options.server_generated_ids.resolve(&target);
        if server_ids && options.external_versioning {
            return Err(ClusterError::Config(
                "external versioning needs document ids; the target generates them \
                 (--server-generated-ids)"
                    .into(),
            ));
        }
        let opts = options;
        let encoder = BulkEncoder::new(
            &target,
            opts.op_type,
            opts.external_versioning,
            opts.hard_max_bytes,
        )
        .with_server_generated_ids(server_ids);
        let gzip = opts.gzip.unwrap_or_else(|| client.gzip());
        Ok(BulkSender {
            inner: Arc::new(Inner {
                limiter: AimdLimiter::new(opts.max_in_flight),
                docs_rate: opts.max_docs_per_sec.map(RateLimiter::new),
                bytes_rate: opts.max_bytes_per_sec.map(RateLimiter::new),
                path: if opts.filter_response {
                    FILTERED_BULK_PATH
                } else {
                    "/_bulk"
                },
                client,
                encoder,
                gzip,
                opts,
                totals: Totals::default(),
                retry_warnings: Sometimes::new(RETRY_WARNING_EVERY),
                wait_warnings: Sometimes::new(RETRY_WARNING_EVERY),
            }),
        })
    }

    pub fn options(&self) -> &BulkOptions {
        &self.inner.opts
    }

    /// The encoder that frames bodies for this sender's target.
    pub fn encoder(&self) -> &BulkEncoder {
        &self.inner.encoder
    }

    pub fn stats(&self) -> BulkStats {
        let t = &self.inner.totals;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BulkStats {
            indexed: g(&t.indexed),
            accepted: g(&t.accepted),
            refused: g(&t.refused),
            retries: g(&t.retries),
            requests: g(&t.requests),
            throttled: g(&t.throttled),
            source_bytes: g(&t.source_bytes),
            concurrency_limit: self.inner.limiter.limit(),
        }
    }

    /// Frames `docs` into one body and sends it (see [`BulkSender::send_body`]); documents
    /// that cannot be framed come back refused with status 0.
    pub async fn send(&self, docs: Vec<BulkDoc>) -> Result<BulkResult, ClusterError> {
        let estimate: usize = docs
            .iter()
            .map(|d| d.source.len() + d.id.len() + d.index.len() + 48)
            .sum();
        let mut body =
            BulkBody::with_capacity(estimate.min(self.inner.opts.hard_max_bytes), docs.len());
        let mut early = Vec::new();
        for d in docs {
            let meta = DocMeta {
                index: d.index,
                id: d.id,
                doc_type: d.doc_type,
                routing: d.routing,
            };
            if let Err(u) =
                self.inner
                    .encoder
                    .push(&mut body, BulkAction::Write, meta, d.version, &d.source)
            {
                let Unframed { meta, error } = *u;
                early.push(Refused {
                    meta,
                    error,
                    attempts: 0,
                    source: Bytes::new(),
                    delete: false,
                });
            }
        }
        let mut result = self.send_body(body).await?;
        result.docs += early.len() as u64;
        self.inner
            .totals
            .refused
            .fetch_add(early.len() as u64, Ordering::Relaxed);
        result.refused.extend(early);
        Ok(result)
    }

    /// Sends `body` and returns once every document of it is acknowledged or refused for
    /// good. Retryable items are re-sent alone (slices of the body, never re-encoded) with
    /// backoff; a request refused with 400/413 is split in halves to isolate the culprit.
    /// An error means the body is not done (target down past the retry budget,
    /// authentication refused): some documents may be indexed, none is reported as done.
    pub async fn send_body(&self, body: BulkBody) -> Result<BulkResult, ClusterError> {
        let inner = &*self.inner;
        let mut result = BulkResult {
            docs: body.docs() as u64,
            body_bytes: body.bytes() as u64,
            source_bytes: body.source_bytes(),
            ..BulkResult::default()
        };
        let Framed {
            buf,
            parts,
            indices,
            any_delete,
        } = body.into_parts();
        let mut fates: Vec<Fate> = parts
            .iter()
            .map(|_| Fate::Pending {
                attempts: 0,
                last: None,
            })
            .collect();
        // Documents whose last request may have been stored without an answer.
        let mut maybe_stored = vec![false; parts.len()];
        let started = Instant::now();
        let mut round = 0u32;
        let outcome = loop {
            // Every document in the first round (an exact allocation, not a filter's).
            let members: Vec<usize> = if round == 0 {
                (0..fates.len()).collect()
            } else {
                fates
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| matches!(f, Fate::Pending { .. }))
                    .map(|(i, _)| i)
                    .collect()
            };
            if members.is_empty() {
                break Ok(());
            }
            round += 1;
            let whole = members.len() == parts.len();
            let request_body = if whole {
                buf.clone()
            } else {
                slices(&buf, &parts, &members)
            };
            let report = self
                .run_request(&buf, &parts, any_delete, members, request_body)
                .await;
            result.requests += report.requests;
            result.throttled += report.throttled;
            for &i in &report.unknown_fate {
                maybe_stored[i] = true;
            }
            for &i in &report.indexed {
                if let Fate::Pending { .. } = fates[i] {
                    fates[i] = Fate::Indexed;
                }
            }
            for (i, v) in report.results {
                let Fate::Pending { attempts, .. } = fates[i] else {
                    continue;
                };
                fates[i] = match v {
                    Verdict::Indexed => Fate::Indexed,
                    Verdict::Accepted => Fate::Accepted,
                    Verdict::Fail(error) => Fate::Refused {
                        error,
                        attempts: attempts + 1,
                    },
                    Verdict::Retry(e) => Fate::Pending {
                        attempts: attempts + 1,
                        last: Some(e),
                    },
                };
            }
            if let Some(e) = report.hard_error {
                break Err(e);
            }
            let pending: Vec<usize> = fates
                .iter()
                .enumerate()
                .filter(|(_, f)| matches!(f, Fate::Pending { .. }))
                .map(|(i, _)| i)
                .collect();
            if pending.is_empty() {
                break Ok(());
            }
            let exhausted = |f: &Fate| matches!(f, Fate::Pending { attempts, .. } if *attempts >= inner.opts.retry.max_attempts);
            let last_error = pending
                .iter()
                .find_map(|&i| match &fates[i] {
                    Fate::Pending { last: Some(e), .. } => Some(ItemError::clone(e)),
                    _ => None,
                })
                .unwrap_or(ItemError {
                    status: 0,
                    error_type: "retries_exhausted".into(),
                    reason: String::new(),
                });
            let wait = inner.opts.retry.delay(round, report.retry_after);
            // Waiting again would pass the time budget: as good as out of attempts.
            let out_of_time = inner
                .opts
                .retry_budget
                .is_some_and(|budget| started.elapsed() + wait > budget);
            if out_of_time || pending.iter().any(|&i| exhausted(&fates[i])) {
                let why = if out_of_time {
                    format!(
                        "the retry budget of {:?} would be passed",
                        inner.opts.retry_budget.unwrap_or_default()
                    )
                } else {
                    format!("{} attempts", inner.opts.retry.max_attempts)
                };
                if !inner.opts.refuse_exhausted_items {
                    break Err(ClusterError::RetriesExhausted {
                        method: "POST".into(),
                        url: format!("{}/_bulk", inner.client.base_url()),
                        attempts: round,
                        last: format!(
                            "{} documents still unacknowledged after {:.0?} ({why}); last error: {} {}: {}",
                            pending.len(),
                            started.elapsed(),
                            last_error.status,
                            last_error.error_type,
                            last_error.reason
                        ),
                    });
                }
                for &i in &pending {
                    if let Fate::Pending { attempts, last } = &fates[i] {
                        if out_of_time || *attempts >= inner.opts.retry.max_attempts {
                            let mut error =
                                last.clone().unwrap_or_else(|| Box::new(last_error.clone()));
                            error.reason =
                                format!("retries exhausted ({why}); last error: {}", error.reason);
                            fates[i] = Fate::Refused {
                                error,
                                attempts: *attempts,
                            };
                        }
                    }
                }
                continue;
            }
            result.retries += pending.len() as u64;
            for &i in &pending {
                if std::mem::take(&mut maybe_stored[i]) {
                    result.unknown_fate_resent += 1;
                }
            }
            self.log_retry(pending.len(), round, wait, started, &last_error);
            tokio::time::sleep(wait).await;
        };
        for (fate, part) in fates.into_iter().zip(parts) {
            match fate {
                Fate::Indexed => result.indexed += 1,
                Fate::Accepted => result.accepted += 1,
                Fate::Refused { error, attempts } => result.refused.push(Refused {
                    delete: part.delete,
                    // The source line without its newline (empty for a delete).
                    source: buf.slice(part.source_at..(part.range.end - 1).max(part.source_at)),
                    meta: part.meta(&buf, &indices),
                    error: *error,
                    attempts,
                }),
                Fate::Pending { .. } => {}
            }
        }
        let t = &inner.totals;
        t.indexed.fetch_add(result.indexed, Ordering::Relaxed);
        t.accepted.fetch_add(result.accepted, Ordering::Relaxed);
        t.refused
            .fetch_add(result.refused.len() as u64, Ordering::Relaxed);
        t.retries.fetch_add(result.retries, Ordering::Relaxed);
        t.requests.fetch_add(result.requests, Ordering::Relaxed);
        t.throttled.fetch_add(result.throttled, Ordering::Relaxed);
        outcome.map(|()| {
            t.source_bytes
                .fetch_add(result.source_bytes, Ordering::Relaxed);
            result
        })
    }

    /// Retries are worth a line at the default level, but not one per round: the first,
    /// then at most one every [`RETRY_WARNING_EVERY`] per sender.
    fn log_retry(&self, docs: usize, round: u32, wait: Duration, since: Instant, e: &ItemError) {
        if self.inner.retry_warnings.due() {
            warn!(
                docs,
                round,
                elapsed = ?since.elapsed(),
                next_in = ?wait,
                "bulk documents not acknowledged yet, retrying: {} {}: {}",
                e.status,
                e.error_type,
                e.reason
            );
        } else {
            debug!(docs, round, ?wait, "re-sending retryable bulk items");
        }
    }

    /// Awaits `request`, saying (rate-limited) when the target is slow to answer: after
    /// half the request timeout (at most 10 s), then every 30 s.
    async fn awaiting_answer<T>(&self, request: impl Future<Output = T>, docs: usize) -> T {
        tokio::pin!(request);
        let timeout = self.inner.client.request_timeout();
        let since = Instant::now();
        let mut next = (timeout / 2).clamp(Duration::from_secs(1), Duration::from_secs(10));
        loop {
            tokio::select! {
                out = &mut request => return out,
                _ = tokio::time::sleep_until(since + next) => {
                    if self.inner.wait_warnings.due() {
                        warn!(
                            docs,
                            waited = ?since.elapsed(),
                            ?timeout,
                            "no answer from the target to a bulk request yet"
                        );
                    }
                    next += Duration::from_secs(30);
                }
            }
        }
    }

    /// Send one body; on 400/413 for several documents, split it in halves to isolate the
    /// culprit (a lone document with such an answer fails terminally).
    async fn run_request(
        &self,
        buf: &Bytes,
        parts: &[Part],
        any_delete: bool,
        members: Vec<usize>,
        body: Bytes,
    ) -> RequestReport {
        let mut report = RequestReport::default();
        let mut work = vec![(members, Some(body))];
        while let Some((members, body)) = work.pop() {
            let body = body.unwrap_or_else(|| slices(buf, parts, &members));
            match self
                .send_one(buf, parts, any_delete, &members, body, &mut report)
                .await
            {
                Split::Done => {}
                Split::Halve if members.len() > 1 => {
                    let (a, b) = members.split_at(members.len() / 2);
                    work.push((b.to_vec(), None));
                    work.push((a.to_vec(), None));
                }
                Split::Halve => unreachable!("send_one never asks to halve a single document"),
                Split::Stop => break,
            }
        }
        report
    }

    async fn send_one(
        &self,
        buf: &Bytes,
        parts: &[Part],
        any_delete: bool,
        members: &[usize],
        body: Bytes,
        report: &mut RequestReport,
    ) -> Split {
        let inner = &*self.inner;
        if let Some(r) = &inner.docs_rate {
            r.acquire(members.len() as f64).await;
        }
        if let Some(r) = &inner.bytes_rate {
            // Summed only here: the walk over the parts is a cache miss per document.
            let source_bytes: usize = members
                .iter()
                .map(|&i| parts[i].range.end - parts[i].source_at)
                .sum();
            r.acquire(source_bytes as f64).await;
        }
        let body = if inner.gzip {
            match tokio::task::spawn_blocking(move || gzip_bytes(&body)).await {
                Ok(b) => b,
                Err(e) => {
                    report.hard_error = Some(ClusterError::Config(format!(
                        "compressing a bulk body failed: {e}"
                    )));
                    return Split::Stop;
                }
            }
        } else {
            body
        };
        let permit = inner.limiter.acquire().await;
        report.requests += 1;
        let request = inner.client.send_once(
            &Method::POST,
            inner.path,
            Some(body),
            "application/x-ndjson",
            inner.gzip,
            None,
        );
        let result = self.awaiting_answer(request, members.len()).await;
        let all_retry = |report: &mut RequestReport, status: u16, ty: &str, reason: String| {
            for &i in members {
                report.results.push((
                    i,
                    Verdict::Retry(Box::new(ItemError {
                        status,
                        error_type: ty.to_string(),
                        reason: reason.clone(),
                    })),
                ));
            }
        };
        let resp = match result {
            Err(f) if f.retryable => {
                drop(permit);
                debug!(url = %f.url, reason = %f.reason, "bulk request failed; will retry");
                report.unknown_fate.extend_from_slice(members);
                all_retry(report, 0, "transport_error", f.reason);
                return Split::Done;
            }
            Err(f) => {
                report.hard_error = Some(ClusterError::Transport {
                    method: "POST".into(),
                    url: f.url,
                    reason: f.reason,
                });
                return Split::Stop;
            }
            Ok(r) => r,
        };
        if resp.is_success() {
            let no_deletes = !any_delete || !members.iter().any(|&i| parts[i].delete);
            if no_deletes && response::all_indexed(&resp.body, members.len()) {
                report.indexed.extend_from_slice(members);
                permit.succeeded();
                return Split::Done;
            }
            let ids = members.iter().map(|&i| (parts[i].id(buf), parts[i].once));
            let check_ids = !inner.encoder.server_generated_ids();
            match response::parse(
                &resp.body,
                ids,
                no_deletes,
                check_ids,
                &inner.opts.accept_error_types,
            ) {
                Ok(items) => {
                    report.results.reserve(items.len());
                    let mut throttled = false;
                    for (&i, item) in members.iter().zip(items) {
                        let v = match item {
                            ItemResult::Indexed => Verdict::Indexed,
                            ItemResult::Accepted => Verdict::Accepted,
                            ItemResult::Retry(e) => {
                                throttled |=
                                    e.status == 429 || e.error_type.contains("rejected_execution");
                                Verdict::Retry(Box::new(e))
                            }
                            ItemResult::Fail(e) => Verdict::Fail(Box::new(e)),
                        };
                        report.results.push((i, v));
                    }
                    if throttled {
                        report.throttled += 1;
                        permit.throttled();
                    } else {
                        permit.succeeded();
                    }
                }
                Err(reason) => {
                    warn!(url = %resp.url, %reason, "unusable bulk response; retrying its documents");
                    report.unknown_fate.extend_from_slice(members);
                    all_retry(
                        report,
                        resp.status,
                        "invalid_bulk_response",
                        reason.to_string(),
                    );
                }
            }
            return Split::Done;
        }
        let (ty, reason) = error_details(&resp.body);
        let ty = ty.unwrap_or_else(|| format!("http_{}", resp.status));
        if resp.status == 429 {
            report.throttled += 1;
            permit.throttled();
            report.retry_after = report.retry_after.max(resp.retry_after);
            all_retry(report, 429, &ty, reason);
            return Split::Done;
        }
        if is_retryable_status(resp.status) {
            report.retry_after = report.retry_after.max(resp.retry_after);
            // A server error may come after the documents were written (a proxy's 502
            // or 504 on a request the cluster went on with).
            report.unknown_fate.extend_from_slice(members);
            all_retry(report, resp.status, &ty, reason);
            return Split::Done;
        }
        if resp.status == 400 || resp.status == 413 {
            if members.len() > 1 {
                debug!(
                    status = resp.status,
                    docs = members.len(),
                    "bulk request refused; splitting it"
                );
                return Split::Halve;
            }
            report.results.push((
                members[0],
                Verdict::Fail(Box::new(ItemError {
                    status: resp.status,
                    error_type: ty,
                    reason,
                })),
            ));
            return Split::Done;
        }
        report.hard_error = Some(resp.to_error());
        Split::Stop
    }
}

/// The entries `members` of `buf`, concatenated into a new body.
fn slices(buf: &Bytes, parts: &[Part], members: &[usize]) -> Bytes {
    let len = members.iter().map(|&i| parts[i].range.len()).sum();
    let mut out = Vec::with_capacity(len);
    for &i in members {
        out.extend_from_slice(&buf[parts[i].range.clone()]);
    }
    Bytes::from(out)
}

enum Split {
    Done,
    Halve,
    Stop,
}
