//! The cluster sink: documents framed once into `_bulk` bodies by the reader thread, sent
//! by `cluster::BulkSender` (adaptive concurrency, rate limits, per-item retries).

use cluster::{BulkAction, BulkBody, BulkEncoder, BulkResult, BulkSender, ClusterError, DocMeta};

use engine::document::{Document, Op};
use engine::error::SinkError;
pub use engine::sink::BatchLimits;
use engine::sink::{Delivered, Refusal, Sink, SinkWriter};

/// Documents into a cluster through `_bulk`.
pub struct BulkSink {
    sender: BulkSender,
    limits: BatchLimits,
    target: String,
    /// Target indices that are data streams: their documents are sent with `create`.
    create_only: std::sync::Arc<std::collections::BTreeSet<String>>,
}

impl BulkSink {
    /// `target` names the cluster for the migration identity (a URL without credentials).
    pub fn new(sender: BulkSender, limits: BatchLimits, target: String) -> Self {
        BulkSink {
            sender,
            limits: BatchLimits {
                max_docs: limits.max_docs.max(1),
                max_bytes: limits.max_bytes.max(1),
            },
            target,
            create_only: Default::default(),
        }
    }

    /// Documents written as `index` into these (data streams, which take only `create`)
    /// are sent as `create`; one already there counts as delivered.
    pub fn with_create_only(mut self, indices: impl IntoIterator<Item = String>) -> Self {
        self.create_only = std::sync::Arc::new(indices.into_iter().collect());
        self
    }

    pub fn sender(&self) -> &BulkSender {
        &self.sender
    }
}

/// Frames documents into one `_bulk` body at a time.
pub struct BulkWriter {
    encoder: BulkEncoder,
    limits: BatchLimits,
    body: Option<BulkBody>,
    /// Bytes and documents of the last full batch.
    last: (usize, usize),
    create_only: std::sync::Arc<std::collections::BTreeSet<String>>,
}

impl SinkWriter for BulkWriter {
    type Batch = BulkBody;

    fn push(&mut self, doc: Document) -> Result<Option<BulkBody>, Box<Refusal>> {
        let limits = self.limits;
        // Sized like the previous batch (most batches of an item are alike), so it is
        // seldom grown and never reserves a full batch's bytes for a few documents.
        let (last_bytes, last_docs) = self.last;
        let body = self.body.get_or_insert_with(|| {
            BulkBody::with_capacity(
                (last_bytes + last_bytes / 8 + 4096).min(limits.max_bytes.min(64 << 20) + 4096),
                (last_docs + 1).min(limits.max_docs),
            )
        });
        let action = match doc.op {
            Op::Index if self.create_only.contains(&*doc.index) => BulkAction::Create,
            Op::Index => BulkAction::Write,
            Op::Delete => BulkAction::Delete,
            Op::Create => BulkAction::Create,
        };
        let meta = DocMeta {
            index: doc.index,
            id: doc.id,
            doc_type: doc.doc_type,
            routing: doc.routing,
        };
        if let Err(u) = self.encoder.push(body, action, meta, None, &doc.source) {
            let cluster::Unframed { meta, error: e } = *u;
            return Err(Box::new(Refusal {
                index: meta.index,
                id: meta.id,
                doc_type: meta.doc_type,
                routing: meta.routing,
                delete: action == BulkAction::Delete,
                error_type: e.error_type,
                reason: e.reason,
                status: e.status,
                attempts: 0,
                source: doc.source,
            }));
        }
        if body.docs() >= limits.max_docs || body.bytes() >= limits.max_bytes {
            self.last = (body.bytes(), body.docs());
            return Ok(self.body.take());
        }
        Ok(None)
    }

    fn finish(&mut self) -> Option<BulkBody> {
        self.body.take().filter(|b| !b.is_empty())
    }

    fn size(batch: &BulkBody) -> usize {
        batch.bytes()
    }
}

impl Sink for BulkSink {
    type Writer = BulkWriter;

    fn writer(&self) -> BulkWriter {
        BulkWriter {
            encoder: self.sender.encoder().clone(),
            limits: self.limits,
            body: None,
            last: (0, 0),
            create_only: self.create_only.clone(),
        }
    }

    async fn send(&self, batch: BulkBody) -> Result<Delivered, SinkError> {
        let r: BulkResult = self.sender.send_body(batch).await.map_err(sink_error)?;
        Ok(Delivered {
            pressure: Vec::new(),
            possible_duplicates: if self.resends_duplicate() {
                r.unknown_fate_resent
            } else {
                0
            },
            delivered: r.acknowledged(),
            bytes: r.body_bytes,
            source_bytes: r.source_bytes,
            refused: r
                .refused
                .into_iter()
                .map(|x| Refusal {
                    index: x.meta.index,
                    id: x.meta.id,
                    doc_type: x.meta.doc_type,
                    routing: x.meta.routing,
                    delete: x.delete,
                    error_type: x.error.error_type,
                    reason: x.error.reason,
                    status: x.error.status,
                    attempts: x.attempts,
                    source: x.source,
                })
                .collect(),
        })
    }

    fn identity(&self) -> String {
        engine::job::identity_location(&self.target)
    }

    /// Documents sent without `_id` (`--server-generated-ids`): the target makes up an id
    /// for each, so a batch sent again is stored again.
    fn resends_duplicate(&self) -> bool {
        self.sender.encoder().server_generated_ids()
    }
}

/// Credentials refused or a configuration that cannot work stop the worker; anything
/// else fails this item's attempt.
pub fn sink_error(e: ClusterError) -> SinkError {
    // The error holds no cause of its own and says everything (method, URL, answer):
    // it is the message, not also the source.
    if e.is_fatal() {
        SinkError::fatal(e.to_string())
    } else {
        SinkError::item(e.to_string())
    }
}
