//! The sink port: where documents go. A sink owns batching and framing (its writer frames
//! documents into request bodies on the reader thread, and decides when a batch is full),
//! and sending: concurrency limits, retries, and which documents the target refused. The
//! pipeline keeps positions, checkpoints and the failure log.
//!
//! A new sink implements [`SinkWriter`] (frame, cut) and [`Sink::send`] (deliver one
//! batch, report refusals); it knows nothing of sources, leases or the store.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;

use crate::document::Document;
use crate::error::SinkError;

/// When a sink's batch is full: whichever limit is reached first cuts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    pub max_docs: usize,
    /// Bytes of the framed batch as the sink writes it (a `_bulk` body with its action
    /// lines, a file's lines, DynamoDB write requests).
    pub max_bytes: usize,
}

impl Default for BatchLimits {
    /// 1,000 documents or 8 MiB: a `_bulk` request (and a files batch).
    fn default() -> Self {
        BatchLimits {
            max_docs: 1000,
            max_bytes: 8 << 20,
        }
    }
}

impl BatchLimits {
    /// 250 documents (10 `BatchWriteItem` requests of 25) or 4 MiB: DynamoDB's default.
    pub fn dynamo() -> Self {
        BatchLimits {
            max_docs: 250,
            max_bytes: 4 << 20,
        }
    }
}

/// A document a sink will not deliver, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub index: Arc<str>,
    pub id: String,
    pub doc_type: Option<Arc<str>>,
    pub routing: Option<String>,
    pub delete: bool,
    /// `mapper_parsing_exception`, `document_too_large`, …
    pub error_type: String,
    pub reason: String,
    /// The target's status for the document (0: refused before sending).
    pub status: u16,
    /// Times it was sent.
    pub attempts: u32,
    /// Its source as sent, when the sink has it cheaply (empty otherwise).
    pub source: Bytes,
}

/// What became of one batch.
#[derive(Debug, Clone, Default)]
pub struct Delivered {
    /// Documents the target acknowledged.
    pub delivered: u64,
    /// Bytes sent (request bodies as framed).
    pub bytes: u64,
    /// `_source` bytes of the documents.
    pub source_bytes: u64,
    /// Documents refused for good.
    pub refused: Vec<Refusal>,
    /// How hard the target pushed back while this batch was sent (`throttled`,
    /// `unprocessed`, `retries`), for the store's counts (`rfs status`); empty for sinks
    /// that do not tell.
    pub pressure: Vec<(&'static str, u64)>,
    /// Documents sent again because a request's fate was unknown (no answer, an
    /// unreadable one, a server error), to a target that stores a resent document twice
    /// ([`Sink::resends_duplicate`]): counted as possible duplicates. Zero otherwise.
    pub possible_duplicates: u64,
}

/// Frames documents into batches (one per reader thread; runs on it).
pub trait SinkWriter: Send + 'static {
    type Batch: Send + 'static;

    /// Frames `doc` into the current batch and returns the batch when it is full (this
    /// document included). `Err`: the document can never be sent; nothing was framed.
    fn push(&mut self, doc: Document) -> Result<Option<Self::Batch>, Box<Refusal>>;

    /// The partly filled batch, if any.
    fn finish(&mut self) -> Option<Self::Batch>;

    /// Bytes a batch holds in memory (for the process-wide memory budget).
    fn size(batch: &Self::Batch) -> usize;
}

/// Where documents go.
pub trait Sink: Send + Sync + 'static {
    type Writer: SinkWriter;

    /// A writer for one item's reader thread.
    fn writer(&self) -> Self::Writer;

    /// Delivers one batch and returns when every document of it is acknowledged or
    /// refused for good. An `Err` means the batch's fate is unknown: the pipeline stops
    /// without moving its cursor past it.
    fn send(
        &self,
        batch: <Self::Writer as SinkWriter>::Batch,
    ) -> impl Future<Output = Result<Delivered, SinkError>> + Send;

    /// What the sink writes to, for the migration's identity (no secrets).
    fn identity(&self) -> String;

    /// The sink's own counters (a DynamoDB sink's throttled and unprocessed writes), which
    /// the job adds to its metrics; `None` for a sink that keeps none.
    fn counters(&self) -> Option<crate::metrics::SinkCounters> {
        None
    }

    /// Whether a batch sent again stores its documents twice: the target gives each
    /// document an id of its own (a `_bulk` without `_id`, as OpenSearch Serverless
    /// time-series and vector collections require), so a resend is not an overwrite. The
    /// pipeline then records in the item, before each batch is sent, how many documents
    /// go beyond the checkpoint, and whoever resumes the item counts them as possible
    /// duplicates. `false` by default (ids, keys and files overwrite).
    fn resends_duplicate(&self) -> bool {
        false
    }

    /// Makes the sink ready for `groups` before any document arrives, so that a group
    /// without documents still shows on the target (the file sink creates each one's
    /// file). Nothing by default.
    fn prepare(&self, groups: &[String]) -> Result<(), SinkError> {
        let _ = groups;
        Ok(())
    }

    /// The follower (`--follow`) took over the change feed as its `claim`-th holder
    /// (counted from 1 over the fleet, in the order of the claims): what it writes from now
    /// on is newer than anything written before, by any process. A sink whose readers
    /// order writes by where they are (the file sink: files by name) starts writing where
    /// they come after. Nothing by default: a sink written in place needs nothing.
    fn follow_claimed(&self, claim: u64) -> Result<(), SinkError> {
        let _ = claim;
        Ok(())
    }
}
