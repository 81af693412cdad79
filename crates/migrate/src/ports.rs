//! The two ports of the document pipeline: where documents come from and where batches go.
//!
//! The pipeline knows nothing of snapshots or clusters; [`crate::adapters`] connect these
//! traits to the `snapshot` and `cluster` crates, and tests connect them to memory.

use std::future::Future;
use std::ops::Range;

/// The part of a shard one work item covers: shard-global Lucene doc ids `from..to`
/// (`to = None`: to the end of the shard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRange {
    pub index: String,
    pub shard: u32,
    pub from: u64,
    pub to: Option<u64>,
}

impl DocRange {
    /// The doc-id range to read, as a half-open range.
    pub fn ids(&self) -> Range<u64> {
        self.from..self.to.unwrap_or(u64::MAX)
    }
}

/// A document's size in a bulk request body, action line included; the batcher bounds
/// batches by it.
pub trait BulkSized {
    fn bulk_len(&self) -> usize;
}

/// Live documents of a range of a shard, with their shard-global doc ids. Reading is
/// blocking CPU/IO work: the pipeline calls it on a blocking thread.
pub trait DocumentSource: Send + Sync + 'static {
    type Doc: BulkSized + Send + 'static;

    /// Calls `emit` with every live document of `range`, in increasing doc-id order, until
    /// the range ends or `emit` returns `false`.
    fn read(
        &self,
        range: &DocRange,
        emit: &mut dyn FnMut(u64, Self::Doc) -> bool,
    ) -> Result<(), SourceError>;
}

/// Sends one batch and returns when every document of it is acknowledged by the target
/// or recorded as a terminal failure (failure log). An `Err` means the batch's fate is
/// unknown (the target is unreachable for good, credentials refused…): the pipeline
/// stops without moving its cursor past that batch.
pub trait DocumentSink: Send + Sync + 'static {
    type Doc: Send + 'static;

    fn send(
        &self,
        docs: Vec<Self::Doc>,
    ) -> impl Future<Output = Result<SinkOutcome, SinkError>> + Send;
}

/// What became of one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkOutcome {
    /// Documents the target acknowledged (created, updated, or an error type counted as success).
    pub indexed: u64,
    /// Documents recorded in the failure log.
    pub failed: u64,
    /// `_source` bytes of the batch.
    pub source_bytes: u64,
}

/// A document source could not produce a document (corrupt or unsupported input).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// A batch could not be delivered and was not recorded as failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);
