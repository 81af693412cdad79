//! An HTTP client for Elasticsearch and OpenSearch targets: version detection and
//! dialects, authentication (basic, API key, AWS SigV4, mutual TLS), templates and
//! indices, and bulk indexing with per-item retries and a failure log.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cluster::ClusterError> {
//! use std::sync::Arc;
//! use cluster::{BulkDoc, BulkOptions, BulkSender, Client, ClientConfig, FailureLog};
//!
//! let client = Client::connect(ClientConfig::new("http://localhost:9200")).await?;
//! let failures = Arc::new(FailureLog::open("failures.jsonl")?);
//! let sender = BulkSender::new(client.clone(), BulkOptions::default(), failures)?;
//! let docs = vec![BulkDoc::new("logs", "1", bytes::Bytes::from_static(br#"{"msg":"hi"}"#))];
//! let outcome = sender.send(docs).await?; // returns when every doc is indexed or logged
//! assert_eq!(outcome.docs, outcome.indexed + outcome.accepted + outcome.failed);
//! # Ok(()) }
//! ```

mod api;
mod bulk;
mod client;
mod clock;
mod config;
mod error;
mod failure_log;
mod retry;
pub mod sigv4;
mod version;

pub use api::{Created, Doc, TemplateKind};
pub use bulk::{
    BulkDoc, BulkOptions, BulkOutcome, BulkSender, BulkStats, OpType, DEFAULT_HARD_MAX_BYTES,
};
pub use client::{encode_segment, Client, Method, Response};
pub use config::{Auth, AwsService, ClientConfig, Compression, SigV4Config, TlsConfig};
pub use error::ClusterError;
pub use failure_log::{FailureLog, FailureRecord};
pub use retry::{parse_retry_after, RetryPolicy};
pub use sigv4::AwsCredentials;
pub use version::{Dialect, Distribution, Target, Version};
