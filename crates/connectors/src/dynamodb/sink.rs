//! The DynamoDB sink: each document (a row as one JSON object) becomes an item, framed once
//! on the reader thread into its `BatchWriteItem` wire form, and delivered by
//! `dynamo::BatchWriter` (25 writes per request, several in flight under an AIMD limit,
//! `UnprocessedItems` / throttling / 5xx / lost connections retried with backoff).
//!
//! - Row → item: [`dynamo::row_to_item`] with the source's column hints (binary columns
//!   hold base64 and become `B`; numbers keep their exact text as `N`).
//! - The key: the table's key schema. A document without a key attribute, with a null or
//!   empty one, or one of the wrong type, an item over 400 KB, or a row that is not valid
//!   JSON is refused before sending (`Refusal`, status 0), so it reaches the failure log
//!   with its id; a write DynamoDB refuses (`ValidationException`) is refused with its message.
//! - Deletes (`Op::Delete`) remove the item of the document's key: read from its source when
//!   it has one, else from its id (tables without a sort key).
//! - Writes of one key within one batch: only the last is sent; each earlier one is refused
//!   as `key_collision` (it would have been overwritten: never counted as delivered).
//!   Across batches, writes of one key are not ordered and an overwrite cannot be seen
//!   here: `rfs table run` refuses a key mapping that is not unique in the source unless
//!   told to allow collisions.
//!
//! URL: `dynamodb://TABLE?region=R[&endpoint=URL][&partition-key=COL][&sort-key=COL]`
//! ([`DynamoUrl`]).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dynamo::{
    BatchWriter, Client, ClientConfig, ColumnHints, ConvertError, DynamoError, KeyAttribute,
    KeySchema, WriteRequest,
};
use pacing::{RateLimiter, RetryPolicy};
use sigv4::AwsCredentials;

use engine::document::{Document, Op};
use engine::error::SinkError;
pub use engine::sink::BatchLimits;
use engine::sink::{Delivered, Refusal, Sink, SinkWriter};

pub use crate::hints::hints_of;

/// Where the items go: `dynamodb://TABLE?region=R[&endpoint=URL][&partition-key=COL][&sort-key=COL]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoUrl {
    pub table: String,
    /// `None`: `AWS_REGION`, `AWS_DEFAULT_REGION`, or the profile's region.
    pub region: Option<String>,
    /// A DynamoDB-API server (`http://localhost:8000`); `None`: the region's AWS endpoint.
    pub endpoint: Option<String>,
    /// The attribute (column) that is the partition key; `None`: the source's key column,
    /// or the existing table's.
    pub partition_key: Option<String>,
    pub sort_key: Option<String>,
}

/// Why a DynamoDB sink URL is refused; URLs and endpoints in it are redacted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DynamoUrlError {
    #[error("{0}: a DynamoDB sink URL starts with dynamodb://")]
    Scheme(String),
    #[error(
        "dynamodb://{0}: a table name has 3 to 255 characters from a-z, A-Z, 0-9, `_`, `-`, `.`"
    )]
    TableName(String),
    #[error("dynamodb://{table}: `{param}` is not valid percent-encoded UTF-8")]
    Encoding { table: String, param: String },
    #[error("dynamodb://{table}: `{param}` needs a value")]
    Empty { table: String, param: String },
    #[error("dynamodb://{table}: unknown parameter `{param}` (region, endpoint, partition-key, sort-key)")]
    Unknown { table: String, param: String },
    #[error("dynamodb://{table}: `{param}` is given twice")]
    Twice { table: String, param: String },
    #[error("dynamodb://{table}: endpoint {endpoint} must be an http:// or https:// URL")]
    Endpoint { table: String, endpoint: String },
    #[error("dynamodb://{0}: sort-key needs partition-key too")]
    SortKeyAlone(String),
}

impl FromStr for DynamoUrl {
    type Err = DynamoUrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DynamoUrl::parse(s)
    }
}

impl DynamoUrl {
    /// Parses and checks a sink URL; the error names what is wrong (without secrets).
    pub fn parse(s: &str) -> Result<DynamoUrl, DynamoUrlError> {
        let rest = s
            .strip_prefix("dynamodb://")
            .ok_or_else(|| DynamoUrlError::Scheme(redact::url(s)))?;
        let (table, query) = rest.split_once('?').unwrap_or((rest, ""));
        let table = table.trim_end_matches('/');
        if !(3..=255).contains(&table.len())
            || !table
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            return Err(DynamoUrlError::TableName(table.to_string()));
        }
        let mut url = DynamoUrl {
            table: table.to_string(),
            region: None,
            endpoint: None,
            partition_key: None,
            sort_key: None,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let at = |table: &str| (table.to_string(), k.to_string());
            let Some(v) = query_value(v) else {
                let (table, param) = at(table);
                return Err(DynamoUrlError::Encoding { table, param });
            };
            if v.is_empty() {
                let (table, param) = at(table);
                return Err(DynamoUrlError::Empty { table, param });
            }
            let slot = match k {
                "region" => &mut url.region,
                "endpoint" => &mut url.endpoint,
                "partition-key" => &mut url.partition_key,
                "sort-key" => &mut url.sort_key,
                _ => {
                    let (table, param) = at(table);
                    return Err(DynamoUrlError::Unknown { table, param });
                }
            };
            if slot.replace(v).is_some() {
                let (table, param) = at(table);
                return Err(DynamoUrlError::Twice { table, param });
            }
        }
        if let Some(e) = &url.endpoint {
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return Err(DynamoUrlError::Endpoint {
                    table: table.to_string(),
                    endpoint: redact::url(e),
                });
            }
        }
        if url.sort_key.is_some() && url.partition_key.is_none() {
            return Err(DynamoUrlError::SortKeyAlone(table.to_string()));
        }
        Ok(url)
    }

    /// The URL that parses back to `self` (the endpoint as given: not for showing).
    pub fn to_url(&self) -> String {
        let enc = |v: &str| -> String {
            v.bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                        char::from(b).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect()
        };
        let params: Vec<String> = [
            ("region", &self.region),
            ("endpoint", &self.endpoint),
            ("partition-key", &self.partition_key),
            ("sort-key", &self.sort_key),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| format!("{k}={}", enc(v))))
        .collect();
        if params.is_empty() {
            format!("dynamodb://{}", self.table)
        } else {
            format!("dynamodb://{}?{}", self.table, params.join("&"))
        }
    }

    /// The URL as shown and recorded: the endpoint redacted, nothing secret.
    pub fn display(&self) -> String {
        let mut s = format!("dynamodb://{}", self.table);
        let mut params: Vec<String> = Vec::new();
        if let Some(r) = &self.region {
            params.push(format!("region={r}"));
        }
        if let Some(e) = &self.endpoint {
            params.push(format!("endpoint={}", redact::url(e)));
        }
        if let Some(k) = &self.partition_key {
            params.push(format!("partition-key={k}"));
        }
        if let Some(k) = &self.sort_key {
            params.push(format!("sort-key={k}"));
        }
        if !params.is_empty() {
            s.push('?');
            s.push_str(&params.join("&"));
        }
        s
    }
}

/// A query value decoded as forms write it (`+` is a space), or `None` when an escape is
/// not two hex digits or the bytes are not UTF-8: a URL given by hand is checked, not
/// guessed at.
fn query_value(s: &str) -> Option<String> {
    let escapes_ok = s.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    let spaced = s.replace('+', " ");
    let decoded = percent_encoding::percent_decode_str(&spaced).decode_utf8();
    escapes_ok.then_some(decoded.ok()?.into_owned())
}

/// How to build the sink.
#[derive(Debug, Clone)]
pub struct DynamoSinkOptions {
    /// Create the table (on-demand billing) when it does not exist.
    pub create_table: bool,
    /// The source's key column: the partition key unless the URL names another.
    pub key_column: Option<String>,
    /// The sort key unless the URL names a partition key (documents: `_id`, under the
    /// partition key `_index`).
    pub sort_column: Option<String>,
    /// Column kinds of the source (binary columns, number columns).
    pub hints: ColumnHints,
    /// `None`: the AWS default chain (environment, profile, web identity, container,
    /// instance metadata), refreshed before expiry.
    pub credentials: Option<AwsCredentials>,
    /// Most `BatchWriteItem` requests in flight.
    pub max_in_flight: usize,
    pub retry: RetryPolicy,
    pub request_timeout: Duration,
    pub batch: BatchLimits,
    /// How long to wait for a created table to become ACTIVE.
    pub table_timeout: Duration,
    /// Documents per second at most (through this sink, all its writers together).
    pub max_docs_per_sec: Option<f64>,
    /// Bytes of row JSON per second at most.
    pub max_bytes_per_sec: Option<f64>,
    /// How long a batch is retried while DynamoDB throttles it (what the lease allows);
    /// `None`: the retry policy's attempts only.
    pub throttle_budget: Option<Duration>,
    /// Documents rather than rows: each item is the `_source` fields plus `_id` (the
    /// document's id) and `_index` (its index), which win over `_source` fields of those
    /// names.
    pub document_fields: bool,
}

impl Default for DynamoSinkOptions {
    fn default() -> Self {
        DynamoSinkOptions {
            create_table: false,
            key_column: None,
            sort_column: None,
            hints: ColumnHints::new(),
            credentials: None,
            max_in_flight: dynamo::client::DEFAULT_MAX_IN_FLIGHT,
            retry: dynamo::client::default_retry(),
            request_timeout: dynamo::client::DEFAULT_REQUEST_TIMEOUT,
            batch: BatchLimits::dynamo(),
            table_timeout: Duration::from_secs(300),
            max_docs_per_sec: None,
            max_bytes_per_sec: None,
            throttle_budget: None,
            document_fields: false,
        }
    }
}

/// Documents into a DynamoDB table.
pub struct DynamoSink {
    writer: BatchWriter,
    mapping: Arc<Mapping>,
    limits: BatchLimits,
    identity: String,
    docs_rate: Option<RateLimiter>,
    bytes_rate: Option<RateLimiter>,
}

/// What the reader threads need to frame writes.
struct Mapping {
    key: KeySchema,
    hints: ColumnHints,
    document_fields: bool,
}

impl DynamoSink {
    /// Connects, checks the table (or creates it) and its key against the mapping.
    pub async fn connect(
        url: &DynamoUrl,
        options: DynamoSinkOptions,
    ) -> Result<DynamoSink, SinkError> {
        let fatal = |m: String| SinkError::fatal(format!("{}: {m}", url.display()));
        // Errors of the calls below name the table and endpoint they were made to.
        let sink_error = |e: DynamoError| {
            let e = sink_error(e);
            SinkError {
                message: format!("{}: {}", url.display(), e.message),
                ..e
            }
        };
        let region = match &url.region {
            Some(r) => r.clone(),
            None => sigv4::region()
                .map_err(|e| fatal(e.to_string()))?
                .ok_or_else(|| fatal("no region: add ?region=… or set AWS_REGION".into()))?,
        };
        // Given ones, else the process's shared chain (fetched and refreshed per request).
        let credentials = match options.credentials {
            Some(c) => sigv4::CredentialsProvider::from(c),
            None => sigv4::CredentialsProvider::shared(),
        };
        let client = Client::new(ClientConfig {
            endpoint: url.endpoint.clone(),
            max_in_flight: options.max_in_flight.max(1),
            retry: options.retry,
            request_timeout: options.request_timeout,
            throttle_budget: options.throttle_budget,
            ..ClientConfig::new(region, credentials)
        })
        .map_err(|e| fatal(e.to_string()))?;
        let wanted = key_mapping(
            url,
            &options.key_column,
            &options.sort_column,
            &options.hints,
        );
        // Refused before a table is created or a document read.
        if let (true, Some(w)) = (options.document_fields, &wanted) {
            check_document_key(w).map_err(|e| fatal(e.to_string()))?;
        }
        let table = match client
            .describe_table(&url.table)
            .await
            .map_err(sink_error)?
        {
            Some(t) if t.status == "ACTIVE" => t,
            Some(_) => client
                .wait_active(&url.table, options.table_timeout)
                .await
                .map_err(sink_error)?,
            None if options.create_table => {
                let key = wanted.clone().ok_or_else(|| {
                    fatal("cannot create the table without a key: give partition-key=COL or the source's key column".into())
                })?;
                tracing::info!(table = %url.table, endpoint = %client.endpoint(), "creating the DynamoDB table (on-demand billing)");
                client
                    .create_table(&url.table, &key)
                    .await
                    .map_err(sink_error)?;
                client
                    .wait_active(&url.table, options.table_timeout)
                    .await
                    .map_err(sink_error)?
            }
            None => {
                return Err(fatal(format!(
                    "table {} does not exist at {}; create it or pass --create-table",
                    url.table,
                    client.endpoint()
                )))
            }
        };
        if let Some(w) = &wanted {
            check_key(&table.key, w).map_err(|e| fatal(e.to_string()))?;
        }
        if options.document_fields {
            check_document_key(&table.key).map_err(|e| fatal(e.to_string()))?;
        }
        let rate = |r: Option<f64>| {
            r.filter(|r| r.is_finite() && *r > 0.0)
                .map(RateLimiter::new)
        };
        Ok(DynamoSink {
            docs_rate: rate(options.max_docs_per_sec),
            bytes_rate: rate(options.max_bytes_per_sec),
            identity: url.display(),
            writer: BatchWriter::new(client, url.table.clone(), table.key.clone()),
            mapping: Arc::new(Mapping {
                key: table.key,
                hints: options.hints,
                document_fields: options.document_fields,
            }),
            limits: BatchLimits {
                max_docs: options.batch.max_docs.max(1),
                max_bytes: options.batch.max_bytes.max(1),
            },
        })
    }

    /// The client (its counters show throttling and retries).
    pub fn client(&self) -> &Client {
        self.writer.client()
    }

    /// The client's counters as Prometheus counters labelled with this sink, for
    /// [`engine::metrics::Metrics::add_sink_counters`].
    pub fn counters(&self) -> engine::metrics::SinkCounters {
        let client = self.client().clone();
        engine::metrics::SinkCounters {
            sink: self.identity.clone(),
            read: Arc::new(move || {
                let s = client.stats();
                vec![
                    (
                        "rfs_sink_throttled_total",
                        "Answers of the sink that said too fast (throttling errors, writes left unprocessed).",
                        s.throttled,
                    ),
                    (
                        "rfs_sink_unprocessed_total",
                        "Writes the sink returned unprocessed (sent again).",
                        s.unprocessed,
                    ),
                    (
                        "rfs_sink_retries_total",
                        "Requests to the sink sent again (throttling, server errors, lost connections).",
                        s.retries,
                    ),
                ]
            }),
        }
    }

    /// The table's key.
    pub fn key(&self) -> &KeySchema {
        &self.mapping.key
    }

    /// The column hints rows are converted with.
    pub fn hints(&self) -> &ColumnHints {
        &self.mapping.hints
    }

    /// The table written to.
    pub fn table(&self) -> &str {
        self.writer.table()
    }
}

/// The key the URL and the source ask for, typed by the hints; `None` when neither names one.
/// The source's sort column applies only when the URL names no partition key.
fn key_mapping(
    url: &DynamoUrl,
    key_column: &Option<String>,
    sort_column: &Option<String>,
    hints: &ColumnHints,
) -> Option<KeySchema> {
    let attr = |name: &String| KeyAttribute {
        name: name.clone(),
        key_type: hints.get(name).map_or(dynamo::KeyType::S, |k| k.key_type()),
    };
    let (partition, sort) = match &url.partition_key {
        Some(p) => (p, url.sort_key.as_ref()),
        None => (key_column.as_ref()?, sort_column.as_ref()),
    };
    Some(KeySchema {
        partition: attr(partition),
        sort: sort.map(attr),
    })
}

/// A table whose key cannot hold the documents as asked.
#[derive(Debug, thiserror::Error)]
enum TableKeyError {
    /// The key's attribute names, joined by "and".
    #[error("the table is keyed by {0} without _index: documents of two indices with one _id would overwrite each other; documents are keyed by _index (partition key) and _id (sort key): write to a new table (--create-table makes it so) or one keyed that way")]
    WithoutIndex(String),
    #[error("the table has {table}, but the mapping asks for {wanted} (name the table's keys with partition-key/sort-key, or write to another table)")]
    Mismatch { table: String, wanted: String },
}

/// Documents of several indices share a table only if `_index` is part of its key: a key
/// of `_id` without `_index` would let a document of one index overwrite the one of
/// another index with the same id, across batches, where no collision can be seen.
fn check_document_key(table: &KeySchema) -> Result<(), TableKeyError> {
    let names: Vec<&str> = table.attributes().map(|a| a.name.as_str()).collect();
    if names.contains(&"_id") && !names.contains(&"_index") {
        return Err(TableKeyError::WithoutIndex(names.join(" and ")));
    }
    Ok(())
}

/// The existing table's key must be the one asked for (names and types).
fn check_key(table: &KeySchema, wanted: &KeySchema) -> Result<(), TableKeyError> {
    let show = |k: &KeySchema| {
        let a = |a: &KeyAttribute| format!("{} ({})", a.name, a.key_type.as_str());
        match &k.sort {
            Some(s) => format!("partition key {}, sort key {}", a(&k.partition), a(s)),
            None => format!("partition key {}", a(&k.partition)),
        }
    };
    let sort_matches = match (&table.sort, &wanted.sort) {
        (Some(t), Some(w)) => t == w,
        (None, None) => true,
        // The URL named no sort key: the table's stands.
        (Some(_), None) => true,
        (None, Some(_)) => false,
    };
    if table.partition == wanted.partition && sort_matches {
        Ok(())
    } else {
        Err(TableKeyError::Mismatch {
            table: show(table),
            wanted: show(wanted),
        })
    }
}

/// What the failure log needs about the document of a write.
struct Origin {
    index: Arc<str>,
    id: String,
    doc_type: Option<Arc<str>>,
    routing: Option<String>,
    source: Bytes,
}

/// Writes framed on the reader thread, delivered by one [`Sink::send`].
pub struct DynamoBatch {
    requests: Vec<WriteRequest>,
    /// `origins[i]` is the document of `requests[i]`.
    origins: Vec<Origin>,
    /// Wire bytes of the requests, and the sources kept.
    bytes: usize,
}

/// Frames documents into writes.
pub struct DynamoWriter {
    mapping: Arc<Mapping>,
    limits: BatchLimits,
    batch: Option<DynamoBatch>,
}

impl DynamoWriter {
    fn frame(&self, doc: &Document) -> Result<WriteRequest, ConvertError> {
        let m = &self.mapping;
        let has_source = doc.source.iter().any(|b| !b.is_ascii_whitespace());
        // A document's item: its `_source` fields (none for a delete without one), `_id`
        // and `_index`; its key is read from it like a row's.
        let document = || -> Result<dynamo::Item, ConvertError> {
            let mut item = if has_source {
                dynamo::row_to_item(&doc.source, &m.hints)?
            } else {
                dynamo::Item::new()
            };
            item.insert("_id".into(), dynamo::AttributeValue::S(doc.id.clone()));
            item.insert(
                "_index".into(),
                dynamo::AttributeValue::S(doc.index.to_string()),
            );
            Ok(item)
        };
        match doc.op {
            Op::Index if m.document_fields => WriteRequest::put(&document()?, &m.key),
            Op::Delete if m.document_fields => WriteRequest::delete(&document()?, &m.key),
            Op::Index => {
                let item = dynamo::row_to_item(&doc.source, &m.hints)?;
                WriteRequest::put(&item, &m.key)
            }
            Op::Delete if has_source => {
                let item = dynamo::row_to_item(&doc.source, &m.hints)?;
                WriteRequest::delete(&item, &m.key)
            }
            Op::Delete => WriteRequest::delete(&m.key.key_from_id(&doc.id)?, &m.key),
            // Only data streams ask for create-only writes, and BatchWriteItem has no
            // condition to make a put one: refused (failure log), never turned into a put.
            Op::Create => Err(ConvertError::new(
                "create_only_unsupported",
                "a create-only write (write if absent) cannot go to DynamoDB: BatchWriteItem \
                 puts overwrite"
                    .into(),
            )),
        }
    }
}

impl SinkWriter for DynamoWriter {
    type Batch = DynamoBatch;

    fn push(&mut self, doc: Document) -> Result<Option<DynamoBatch>, Box<Refusal>> {
        let request = match self.frame(&doc) {
            Ok(r) => r,
            Err(e) => {
                return Err(Box::new(Refusal {
                    delete: doc.op == Op::Delete,
                    index: doc.index,
                    id: doc.id,
                    doc_type: doc.doc_type,
                    routing: doc.routing,
                    error_type: e.error_type.to_string(),
                    reason: e.reason,
                    status: 0,
                    attempts: 0,
                    source: doc.source,
                }))
            }
        };
        let capacity = self.limits.max_docs.min(1024);
        let batch = self.batch.get_or_insert_with(|| DynamoBatch {
            requests: Vec::with_capacity(capacity),
            origins: Vec::with_capacity(capacity),
            bytes: 0,
        });
        batch.bytes += request.len() + doc.source.len();
        batch.requests.push(request);
        batch.origins.push(Origin {
            index: doc.index,
            id: doc.id,
            doc_type: doc.doc_type,
            routing: doc.routing,
            source: doc.source,
        });
        if batch.requests.len() >= self.limits.max_docs || batch.bytes >= self.limits.max_bytes {
            return Ok(self.batch.take());
        }
        Ok(None)
    }

    fn finish(&mut self) -> Option<DynamoBatch> {
        self.batch.take().filter(|b| !b.requests.is_empty())
    }

    fn size(batch: &DynamoBatch) -> usize {
        batch.bytes
    }
}

impl Sink for DynamoSink {
    type Writer = DynamoWriter;

    fn writer(&self) -> DynamoWriter {
        DynamoWriter {
            mapping: Arc::clone(&self.mapping),
            limits: self.limits,
            batch: None,
        }
    }

    async fn send(&self, batch: DynamoBatch) -> Result<Delivered, SinkError> {
        if let Some(r) = &self.docs_rate {
            r.acquire(batch.requests.len() as f64).await;
        }
        if let Some(r) = &self.bytes_rate {
            r.acquire(batch.origins.iter().map(|o| o.source.len()).sum::<usize>() as f64)
                .await;
        }
        let outcome = self.writer.write(&batch.requests).await.map_err(|e| {
            let e = sink_error(e);
            SinkError {
                message: format!("{}: {}", self.identity, e.message),
                ..e
            }
        })?;
        let source_bytes = batch.origins.iter().map(|w| w.source.len() as u64).sum();
        let requests = batch.requests;
        let mut origins: Vec<Option<Origin>> = batch.origins.into_iter().map(Some).collect();
        let collisions: Vec<Refusal> = outcome
            .superseded_by
            .iter()
            .filter_map(|&(i, by)| {
                let w = origins.get_mut(i)?.take()?;
                let by_id = origins
                    .get(by)
                    .and_then(|o| o.as_ref())
                    .map_or("", |o| o.id.as_str());
                Some(Refusal {
                    delete: requests[i].is_delete(),
                    index: w.index,
                    reason: format!(
                        "overwritten in the same batch by a later write of its key (document {by_id}): the key mapping is not unique"
                    ),
                    id: w.id,
                    doc_type: w.doc_type,
                    routing: w.routing,
                    error_type: "key_collision".into(),
                    status: 0,
                    attempts: 0,
                    source: w.source,
                })
            })
            .collect();
        if !collisions.is_empty() {
            tracing::debug!(
                table = %self.writer.table(),
                collisions = collisions.len(),
                "writes overwritten by later writes of their key in the same batch"
            );
        }
        let refused = collisions
            .into_iter()
            .chain(outcome.refused.into_iter().filter_map(|r| {
                let w = origins.get_mut(r.index)?.take()?;
                Some(Refusal {
                    delete: requests[r.index].is_delete(),
                    index: w.index,
                    id: w.id,
                    doc_type: w.doc_type,
                    routing: w.routing,
                    error_type: r.error_type,
                    reason: r.reason,
                    status: 400,
                    attempts: r.attempts,
                    source: w.source,
                })
            }))
            .collect();
        Ok(Delivered {
            possible_duplicates: 0,
            delivered: (outcome.written - outcome.superseded) as u64,
            bytes: outcome.bytes,
            source_bytes,
            refused,
            pressure: vec![
                ("throttled", outcome.throttled),
                ("unprocessed", outcome.unprocessed),
                ("retries", outcome.retries),
            ],
        })
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn counters(&self) -> Option<engine::metrics::SinkCounters> {
        Some(DynamoSink::counters(self))
    }
}

/// Refused credentials, a missing table or a configuration that cannot work stop the
/// worker; anything else fails this item's attempt.
pub fn sink_error(e: DynamoError) -> SinkError {
    // The error holds no cause of its own and says everything (method, URL, answer):
    // it is the message, not also the source.
    if e.is_fatal() {
        SinkError::fatal(e.to_string())
    } else {
        SinkError::item(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::columns::{ColumnShape, ColumnShapes};

    #[test]
    fn sink_urls_print_back_to_what_they_parse_from() {
        let u = DynamoUrl {
            table: "rooms.v2".into(),
            region: Some("eu-west-1".into()),
            endpoint: Some("http://u:p%w@h:8000/x?y=1&z".into()),
            partition_key: Some("room id+1".into()),
            sort_key: Some("ts".into()),
        };
        assert_eq!(DynamoUrl::parse(&u.to_url()).unwrap(), u);
        let bare = DynamoUrl::parse("dynamodb://tab").unwrap();
        assert_eq!(bare.to_url(), "dynamodb://tab");
    }

    #[test]
    fn sink_urls_parse_and_show_no_secret() {
        let u = DynamoUrl::parse(
            "dynamodb://room_events?region=eu-west-1&endpoint=http%3A%2F%2Fu%3Apw%40localhost%3A8000&partition-key=room_id&sort-key=id",
        )
        .unwrap();
        assert_eq!(u.table, "room_events");
        assert_eq!(u.region.as_deref(), Some("eu-west-1"));
        assert_eq!(u.endpoint.as_deref(), Some("http://u:pw@localhost:8000"));
        assert_eq!(u.partition_key.as_deref(), Some("room_id"));
        assert_eq!(u.sort_key.as_deref(), Some("id"));
        let shown = u.display();
        assert!(!shown.contains("pw"), "{shown}");
        assert_eq!(
            shown,
            "dynamodb://room_events?region=eu-west-1&endpoint=http://u:***@localhost:8000&partition-key=room_id&sort-key=id"
        );
        let plain: DynamoUrl = "dynamodb://t.1-x_".parse().unwrap();
        assert_eq!(plain.display(), "dynamodb://t.1-x_");
        for (bad, why) in [
            ("http://x", "starts with dynamodb://"),
            ("dynamodb://ab", "3 to 255"),
            ("dynamodb://a/b", "3 to 255"),
            ("dynamodb://tab?regoin=x", "unknown parameter `regoin`"),
            ("dynamodb://tab?region=", "needs a value"),
            ("dynamodb://tab?region=a&region=b", "given twice"),
            (
                "dynamodb://tab?endpoint=localhost:8000",
                "http:// or https://",
            ),
            ("dynamodb://tab?sort-key=s", "needs partition-key"),
            ("dynamodb://tab?region=%zz", "percent-encoded"),
        ] {
            let e = DynamoUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn create_only_writes_are_refused_not_overwritten() {
        let writer = DynamoWriter {
            mapping: Arc::new(Mapping {
                key: KeySchema {
                    partition: KeyAttribute {
                        name: "id".into(),
                        key_type: dynamo::KeyType::S,
                    },
                    sort: None,
                },
                hints: ColumnHints::new(),
                document_fields: false,
            }),
            limits: BatchLimits::dynamo(),
            batch: None,
        };
        let mut doc = Document {
            position: coordination::Position::Key("a".into()),
            op: Op::Index,
            index: "t".into(),
            id: "a".into(),
            doc_type: None,
            routing: None,
            source: bytes::Bytes::from_static(br#"{"id":"a","n":1}"#),
        };
        assert!(writer.frame(&doc).is_ok());
        doc.op = Op::Create;
        let e = writer.frame(&doc).unwrap_err();
        assert_eq!(e.error_type, "create_only_unsupported");
        assert!(e.reason.contains("create-only"), "{}", e.reason);
    }

    #[test]
    fn table_column_shapes_become_item_hints() {
        use dynamo::ColumnHint as K;
        let columns: ColumnShapes = [
            ("s", ColumnShape::String),
            ("n", ColumnShape::Number),
            ("t", ColumnShape::Bool),
            ("b", ColumnShape::Binary),
            ("at", ColumnShape::Time),
            ("j", ColumnShape::Json),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let hints = hints_of(&columns);
        let want: ColumnHints = [
            ("s", K::String),
            ("n", K::Number),
            ("t", K::Bool),
            ("b", K::Binary),
            ("at", K::Time),
            ("j", K::Json),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(hints, want);
    }

    #[test]
    fn the_key_mapping_comes_from_the_url_then_the_key_column() {
        let hints: ColumnHints = [("n".to_string(), dynamo::ColumnHint::Number)].into();
        let url: DynamoUrl = "dynamodb://tab?partition-key=n&sort-key=s".parse().unwrap();
        let k = key_mapping(&url, &Some("id".into()), &None, &hints).unwrap();
        assert_eq!(k.partition.name, "n");
        assert_eq!(k.partition.key_type, dynamo::KeyType::N);
        assert_eq!(k.sort.as_ref().unwrap().key_type, dynamo::KeyType::S);
        let plain: DynamoUrl = "dynamodb://tab".parse().unwrap();
        assert_eq!(
            key_mapping(&plain, &Some("id".into()), &None, &hints)
                .unwrap()
                .partition
                .name,
            "id"
        );
        assert!(key_mapping(&plain, &None, &None, &hints).is_none());
        // Documents: `_index` then `_id`, unless the URL names the key.
        let docs =
            key_mapping(&plain, &Some("_index".into()), &Some("_id".into()), &hints).unwrap();
        assert_eq!(docs.partition.name, "_index");
        assert_eq!(docs.sort.as_ref().unwrap().name, "_id");
        assert!(check_document_key(&docs).is_ok());
        let named = key_mapping(&url, &Some("_index".into()), &Some("_id".into()), &hints).unwrap();
        assert_eq!(
            (
                named.partition.name.as_str(),
                named.sort.unwrap().name.as_str()
            ),
            ("n", "s")
        );
        let by_id: DynamoUrl = "dynamodb://tab?partition-key=_id".parse().unwrap();
        let by_id =
            key_mapping(&by_id, &Some("_index".into()), &Some("_id".into()), &hints).unwrap();
        assert!(by_id.sort.is_none());
        let e = check_document_key(&by_id).unwrap_err().to_string();
        assert!(e.contains("keyed by _id without _index"), "{e}");

        let table = key_mapping(&url, &None, &None, &hints).unwrap();
        assert!(check_key(&table, &table).is_ok());
        let other = key_mapping(&plain, &Some("id".into()), &None, &hints).unwrap();
        let e = check_key(&table, &other).unwrap_err().to_string();
        assert!(
            e.contains("partition key n (N), sort key s (S)") && e.contains("partition key id (S)"),
            "{e}"
        );
    }
}
