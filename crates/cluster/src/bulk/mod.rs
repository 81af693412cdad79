//! Bulk indexing: batches bounded by documents and bytes, K requests in flight under an
//! adaptive limit, per-item retries with backoff, and a failure log for what cannot succeed.

mod body;
mod limiter;
mod response;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tracing::{debug, warn};

use crate::client::{error_details, gzip_bytes, is_retryable_status, Client, Method};
use crate::clock::UtcTime;
use crate::error::ClusterError;
use crate::failure_log::{source_value, FailureLog, FailureRecord};
use crate::retry::RetryPolicy;
use body::BodyEncoder;
use limiter::{AimdLimiter, RateLimiter};
use response::{ItemError, ItemResult};

/// One document to index.
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

/// Knobs of a [`BulkSender`].
#[derive(Debug, Clone)]
pub struct BulkOptions {
    /// Documents per request.
    pub max_docs: usize,
    /// Bytes per request, action lines included; a bigger document goes alone.
    pub max_bytes: usize,
    /// No request is ever larger: a document that does not fit is logged as failed.
    pub hard_max_bytes: usize,
    /// Requests in flight at most (K), across all concurrent `send` calls.
    pub max_in_flight: usize,
    pub op_type: OpType,
    /// Send `version`/`version_type=external` from `BulkDoc::version`.
    pub external_versioning: bool,
    /// Item error types counted as success, e.g. `version_conflict_engine_exception` with create.
    pub accept_error_types: Vec<String>,
    /// Backoff for retryable items and failed requests.
    pub retry: RetryPolicy,
    /// When retries run out: `false` (default) fails the call — the target is unwell and the
    /// batch must be redone later; `true` logs the remaining documents as failed and goes on.
    pub log_exhausted_items: bool,
    pub max_docs_per_sec: Option<f64>,
    pub max_bytes_per_sec: Option<f64>,
    /// gzip request bodies; `None` follows the client (`Compression` setting / detection).
    pub gzip: Option<bool>,
    /// Ask the target to return only `status`, `error` and `_id` per item.
    pub filter_response: bool,
}

/// The largest body most targets accept (`http.max_content_length` defaults to 100 MB).
pub const DEFAULT_HARD_MAX_BYTES: usize = 100 * 1024 * 1024;

impl Default for BulkOptions {
    fn default() -> Self {
        BulkOptions {
            max_docs: 1000,
            max_bytes: 10 * 1024 * 1024,
            hard_max_bytes: DEFAULT_HARD_MAX_BYTES,
            max_in_flight: 8,
            op_type: OpType::Index,
            external_versioning: false,
            accept_error_types: Vec::new(),
            retry: RetryPolicy::bulk_default(),
            log_exhausted_items: false,
            max_docs_per_sec: None,
            max_bytes_per_sec: None,
            gzip: None,
            filter_response: true,
        }
    }
}

/// What one `send` did. `docs == indexed + accepted + failed` always holds on success.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    pub docs: u64,
    /// Acknowledged with a 2xx item status.
    pub indexed: u64,
    /// Answered with an error type listed in `accept_error_types`.
    pub accepted: u64,
    /// Written to the failure log.
    pub failed: u64,
    /// Item re-sends (a document sent three times counts two).
    pub retries: u64,
    /// HTTP requests made.
    pub requests: u64,
    /// Throttling answers seen (429 requests or rejected items).
    pub throttled: u64,
    /// `_source` bytes of the documents.
    pub source_bytes: u64,
}

impl BulkOutcome {
    /// Documents that are on the target.
    pub fn acknowledged(&self) -> u64 {
        self.indexed + self.accepted
    }

    pub fn add(&mut self, o: &BulkOutcome) {
        self.docs += o.docs;
        self.indexed += o.indexed;
        self.accepted += o.accepted;
        self.failed += o.failed;
        self.retries += o.retries;
        self.requests += o.requests;
        self.throttled += o.throttled;
        self.source_bytes += o.source_bytes;
    }
}

/// Totals over every `send` of one sender, for progress reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BulkStats {
    pub indexed: u64,
    pub accepted: u64,
    pub failed: u64,
    pub retries: u64,
    pub requests: u64,
    pub throttled: u64,
    pub source_bytes: u64,
    /// Current adaptive concurrency limit (≤ `max_in_flight`).
    pub concurrency_limit: f64,
}

/// Sends documents in bulk. Cheap to clone; clones share limits, counters and the failure log.
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
    encoder: BodyEncoder,
    failures: Arc<FailureLog>,
    limiter: AimdLimiter,
    docs_rate: Option<RateLimiter>,
    bytes_rate: Option<RateLimiter>,
    gzip: bool,
    path: &'static str,
    totals: Totals,
}

#[derive(Default)]
struct Totals {
    indexed: AtomicU64,
    accepted: AtomicU64,
    failed: AtomicU64,
    retries: AtomicU64,
    requests: AtomicU64,
    throttled: AtomicU64,
    source_bytes: AtomicU64,
}

/// A document waiting for its next attempt.
struct Pending {
    doc: BulkDoc,
    attempts: u32,
    last: Option<ItemError>,
}

/// Result of one request (after splitting on 400/413).
#[derive(Default)]
struct RequestReport {
    results: Vec<(usize, Verdict)>,
    requests: u64,
    throttled: u64,
    retry_after: Option<Duration>,
    hard_error: Option<ClusterError>,
}

enum Verdict {
    Indexed,
    Accepted,
    Retry(ItemError),
    Fail(ItemError),
    /// Never sent (invalid or too large); already recorded.
    Refused,
}

const FILTERED_BULK_PATH: &str =
    "/_bulk?filter_path=errors,items.*.status,items.*._id,items.*.error";

impl BulkSender {
    /// A sender for `client`'s detected target (call [`Client::detect`] or use
    /// [`Client::connect`] first: the dialect depends on the version).
    pub fn new(
        client: Client,
        options: BulkOptions,
        failures: Arc<FailureLog>,
    ) -> Result<BulkSender, ClusterError> {
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
        if options.max_docs == 0 || options.max_bytes == 0 || options.retry.max_attempts == 0 {
            return Err(ClusterError::Config(
                "bulk max_docs, max_bytes and retry attempts must be at least 1".into(),
            ));
        }
        let mut opts = options;
        opts.max_bytes = opts.max_bytes.min(opts.hard_max_bytes);
        let encoder = BodyEncoder::new(&target, opts.op_type, opts.external_versioning);
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
                failures,
                gzip,
                opts,
                totals: Totals::default(),
            }),
        })
    }

    pub fn options(&self) -> &BulkOptions {
        &self.inner.opts
    }

    pub fn failure_log(&self) -> &Arc<FailureLog> {
        &self.inner.failures
    }

    pub fn stats(&self) -> BulkStats {
        let t = &self.inner.totals;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BulkStats {
            indexed: g(&t.indexed),
            accepted: g(&t.accepted),
            failed: g(&t.failed),
            retries: g(&t.retries),
            requests: g(&t.requests),
            throttled: g(&t.throttled),
            source_bytes: g(&t.source_bytes),
            concurrency_limit: self.inner.limiter.limit(),
        }
    }

    /// Index `docs` and return once every one of them is acknowledged or written to the
    /// failure log. Requests are split by `max_docs`/`max_bytes` and run concurrently
    /// (within the shared in-flight limit). An error means the batch is not done (target
    /// down past the retry budget, authentication refused, failure log unwritable):
    /// some documents may be indexed, none is reported as done.
    pub async fn send(&self, docs: Vec<BulkDoc>) -> Result<BulkOutcome, ClusterError> {
        let inner = &*self.inner;
        let mut outcome = BulkOutcome {
            docs: docs.len() as u64,
            source_bytes: docs.iter().map(|d| d.source.len() as u64).sum(),
            ..BulkOutcome::default()
        };
        let mut pending: Vec<Pending> = docs
            .into_iter()
            .map(|doc| Pending {
                doc,
                attempts: 0,
                last: None,
            })
            .collect();
        let mut round = 0u32;
        let result = loop {
            if pending.is_empty() {
                break Ok(());
            }
            round += 1;
            let mut terminal: Vec<FailureRecord> = Vec::new();
            let mut verdicts: Vec<Option<Verdict>> = (0..pending.len()).map(|_| None).collect();
            let chunks = self.chunk(&pending, &mut terminal, &mut verdicts);
            let reports = futures::future::join_all(
                chunks
                    .into_iter()
                    .map(|(members, body)| self.run_request(&pending, members, body)),
            )
            .await;

            let mut hard_error = None;
            let mut retry_after: Option<Duration> = None;
            for r in reports {
                outcome.requests += r.requests;
                outcome.throttled += r.throttled;
                retry_after = retry_after.max(r.retry_after);
                if hard_error.is_none() {
                    hard_error = r.hard_error;
                }
                for (i, v) in r.results {
                    verdicts[i] = Some(v);
                }
            }
            let mut next = Vec::new();
            for (p, v) in pending.drain(..).zip(verdicts) {
                match v {
                    // Refused before sending; `chunk` already wrote its record.
                    Some(Verdict::Refused) => outcome.failed += 1,
                    None => next.push(p), // not sent: a hard error stopped its request
                    Some(Verdict::Indexed) => outcome.indexed += 1,
                    Some(Verdict::Accepted) => outcome.accepted += 1,
                    Some(Verdict::Fail(e)) => {
                        terminal.push(self.record(&p.doc, &e, p.attempts + 1));
                        outcome.failed += 1;
                    }
                    Some(Verdict::Retry(e)) => next.push(Pending {
                        attempts: p.attempts + 1,
                        last: Some(e),
                        doc: p.doc,
                    }),
                }
            }
            if let Err(e) = inner.failures.append(&terminal) {
                break Err(e);
            }
            pending = next;
            if let Some(e) = hard_error {
                break Err(e);
            }
            if pending.is_empty() {
                break Ok(());
            }
            if pending
                .iter()
                .any(|p| p.attempts >= inner.opts.retry.max_attempts)
            {
                let last = pending
                    .iter()
                    .find_map(|p| p.last.as_ref())
                    .map(|e| format!("{} {}: {}", e.status, e.error_type, e.reason))
                    .unwrap_or_default();
                if inner.opts.log_exhausted_items {
                    let (done, keep): (Vec<_>, Vec<_>) = pending
                        .into_iter()
                        .partition(|p| p.attempts >= inner.opts.retry.max_attempts);
                    let recs: Vec<_> = done
                        .iter()
                        .map(|p| {
                            let e = p.last.clone().unwrap_or(ItemError {
                                status: 0,
                                error_type: "retries_exhausted".into(),
                                reason: String::new(),
                            });
                            let mut rec = self.record(&p.doc, &e, p.attempts);
                            rec.reason = format!("retries exhausted; last error: {}", rec.reason);
                            rec
                        })
                        .collect();
                    outcome.failed += recs.len() as u64;
                    if let Err(e) = inner.failures.append(&recs) {
                        break Err(e);
                    }
                    pending = keep;
                    if pending.is_empty() {
                        break Ok(());
                    }
                } else {
                    break Err(ClusterError::RetriesExhausted {
                        method: "POST".into(),
                        url: format!("{}/_bulk", inner.client.base_url()),
                        attempts: inner.opts.retry.max_attempts,
                        last: format!(
                            "{} documents still unacknowledged; last error: {last}",
                            pending.len()
                        ),
                    });
                }
            }
            outcome.retries += pending.len() as u64;
            let wait = inner.opts.retry.delay(round, retry_after);
            debug!(
                docs = pending.len(),
                round,
                ?wait,
                "re-sending retryable bulk items"
            );
            tokio::time::sleep(wait).await;
        };
        let t = &inner.totals;
        t.indexed.fetch_add(outcome.indexed, Ordering::Relaxed);
        t.accepted.fetch_add(outcome.accepted, Ordering::Relaxed);
        t.failed.fetch_add(outcome.failed, Ordering::Relaxed);
        t.retries.fetch_add(outcome.retries, Ordering::Relaxed);
        t.requests.fetch_add(outcome.requests, Ordering::Relaxed);
        t.throttled.fetch_add(outcome.throttled, Ordering::Relaxed);
        result.map(|()| {
            t.source_bytes
                .fetch_add(outcome.source_bytes, Ordering::Relaxed);
            outcome
        })
    }

    fn record(&self, doc: &BulkDoc, e: &ItemError, attempts: u32) -> FailureRecord {
        FailureRecord {
            time: UtcTime::from_system(SystemTime::now()).rfc3339(),
            index: doc.index.to_string(),
            id: doc.id.clone(),
            doc_type: doc.doc_type.as_deref().map(str::to_owned),
            routing: doc.routing.clone(),
            error_type: e.error_type.clone(),
            reason: e.reason.clone(),
            status: e.status,
            attempts,
            source: self
                .inner
                .failures
                .include_source()
                .then(|| source_value(&doc.source)),
        }
    }

    /// Split pending documents into request bodies; documents that can never be sent go
    /// straight to `terminal`.
    fn chunk(
        &self,
        pending: &[Pending],
        terminal: &mut Vec<FailureRecord>,
        verdicts: &mut [Option<Verdict>],
    ) -> Vec<(Vec<usize>, Vec<u8>)> {
        let opts = &self.inner.opts;
        let mut chunks = Vec::new();
        let mut members = Vec::new();
        // Sized for what is to come rather than for the ceiling: a mostly empty 10 MB
        // buffer per request costs page faults on every batch.
        let estimate: usize = pending
            .iter()
            .map(|p| p.doc.source.len() + p.doc.id.len() + p.doc.index.len() + 64)
            .sum();
        let mut buf = Vec::with_capacity(estimate.min(opts.max_bytes).min(1 << 24) + 4096);
        for (i, p) in pending.iter().enumerate() {
            let before = buf.len();
            if let Err(reason) = self.inner.encoder.encode(&mut buf, &p.doc) {
                buf.truncate(before);
                terminal.push(self.local_failure(&p.doc, "invalid_document", reason));
                verdicts[i] = Some(Verdict::Refused);
                continue;
            }
            let len = buf.len() - before;
            if len > opts.hard_max_bytes {
                buf.truncate(before);
                let reason = format!(
                    "the bulk entry takes {len} bytes, more than the {} byte request ceiling",
                    opts.hard_max_bytes
                );
                terminal.push(self.local_failure(&p.doc, "document_too_large", &reason));
                verdicts[i] = Some(Verdict::Refused);
                continue;
            }
            if !members.is_empty() && buf.len() > opts.max_bytes {
                let tail = buf.split_off(before);
                chunks.push((
                    std::mem::take(&mut members),
                    std::mem::replace(&mut buf, tail),
                ));
            }
            members.push(i);
            if members.len() >= opts.max_docs {
                chunks.push((std::mem::take(&mut members), std::mem::take(&mut buf)));
            }
        }
        if !members.is_empty() {
            chunks.push((members, buf));
        }
        chunks
    }

    fn local_failure(&self, doc: &BulkDoc, error_type: &str, reason: &str) -> FailureRecord {
        self.record(
            doc,
            &ItemError {
                status: 0,
                error_type: error_type.into(),
                reason: reason.into(),
            },
            0,
        )
    }

    /// Send one body; on 400/413 for several documents, split it in halves to isolate the
    /// culprit (a lone document with such an answer fails terminally).
    async fn run_request(
        &self,
        pending: &[Pending],
        members: Vec<usize>,
        body: Vec<u8>,
    ) -> RequestReport {
        let mut report = RequestReport::default();
        let mut work = vec![(members, Some(body))];
        while let Some((members, body)) = work.pop() {
            let body = match body {
                Some(b) => b,
                None => {
                    let mut b = Vec::new();
                    for &i in &members {
                        // Encoded once already, so it cannot fail now.
                        let _ = self.inner.encoder.encode(&mut b, &pending[i].doc);
                    }
                    b
                }
            };
            match self.send_one(pending, &members, body, &mut report).await {
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
        pending: &[Pending],
        members: &[usize],
        body: Vec<u8>,
        report: &mut RequestReport,
    ) -> Split {
        let inner = &*self.inner;
        let source_bytes: usize = members.iter().map(|&i| pending[i].doc.source.len()).sum();
        if let Some(r) = &inner.docs_rate {
            r.acquire(members.len() as f64).await;
        }
        if let Some(r) = &inner.bytes_rate {
            r.acquire(source_bytes as f64).await;
        }
        let body = if inner.gzip {
            tokio::task::spawn_blocking(move || gzip_bytes(&body))
                .await
                .expect("gzip task does not panic")
        } else {
            Bytes::from(body)
        };
        let permit = inner.limiter.acquire().await;
        report.requests += 1;
        let result = inner
            .client
            .send_once(
                &Method::POST,
                inner.path,
                Some(body),
                "application/x-ndjson",
                inner.gzip,
                None,
            )
            .await;
        let all_retry = |report: &mut RequestReport, status: u16, ty: &str, reason: String| {
            for &i in members {
                report.results.push((
                    i,
                    Verdict::Retry(ItemError {
                        status,
                        error_type: ty.to_string(),
                        reason: reason.clone(),
                    }),
                ));
            }
        };
        let resp = match result {
            Err(f) if f.retryable => {
                drop(permit);
                debug!(url = %f.url, reason = %f.reason, "bulk request failed; will retry");
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
            let ids = members.iter().map(|&i| pending[i].doc.id.as_str());
            match response::parse(&resp.body, ids, &inner.opts.accept_error_types) {
                Ok(items) => {
                    let mut throttled = false;
                    for (&i, item) in members.iter().zip(items) {
                        let v = match item {
                            ItemResult::Indexed => Verdict::Indexed,
                            ItemResult::Accepted => Verdict::Accepted,
                            ItemResult::Retry(e) => {
                                throttled |=
                                    e.status == 429 || e.error_type.contains("rejected_execution");
                                Verdict::Retry(e)
                            }
                            ItemResult::Fail(e) => Verdict::Fail(e),
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
                    all_retry(report, resp.status, "invalid_bulk_response", reason);
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
                Verdict::Fail(ItemError {
                    status: resp.status,
                    error_type: ty,
                    reason,
                }),
            ));
            return Split::Done;
        }
        report.hard_error = Some(resp.to_error());
        Split::Stop
    }
}

enum Split {
    Done,
    Halve,
    Stop,
}
