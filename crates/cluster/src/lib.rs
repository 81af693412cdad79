//! An HTTP client for Elasticsearch and OpenSearch targets: version detection and
//! dialects, authentication (basic, API key, AWS SigV4, mutual TLS), templates and
//! indices, and bulk indexing with per-item retries (bodies framed once, re-sent as slices).
//!
//! ```no_run
//! # async fn demo() -> Result<(), cluster::ClusterError> {
//! use cluster::{BulkDoc, BulkOptions, BulkSender, Client, ClientConfig};
//!
//! let client = Client::connect(ClientConfig::new("http://localhost:9200")).await?;
//! let sender = BulkSender::new(client.clone(), BulkOptions::default())?;
//! let docs = vec![BulkDoc::new("logs", "1", bytes::Bytes::from_static(br#"{"msg":"hi"}"#))];
//! let result = sender.send(docs).await?; // returns when every doc is indexed or refused
//! assert_eq!(result.docs, result.acknowledged() + result.refused.len() as u64);
//! # Ok(()) }
//! ```

mod api;
mod bulk;
mod client;
mod config;
mod error;
mod tls;
mod version;

pub use api::{Created, Doc, TemplateKind};
pub use bulk::{
    BulkAction, BulkBody, BulkDoc, BulkEncoder, BulkOptions, BulkResult, BulkSender, BulkStats,
    DocMeta, EntryKeys, Framing, ItemError, OpType, Refused, ServerGeneratedIds, Unframed,
    DEFAULT_HARD_MAX_BYTES,
};
pub use client::{encode_segment, Client, Method, Response};
pub use config::{Auth, AwsService, ClientConfig, RequestCompression, SigV4Config, TlsConfig};
pub use error::ClusterError;
pub use pacing::{parse_retry_after, RetryPolicy};
pub use sigv4::{AwsCredentials, UtcTime};
pub use version::{Distribution, DocAddressing, ProductVersion, Target};
