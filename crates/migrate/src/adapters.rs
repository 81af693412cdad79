//! The pipeline's ports connected to the real crates: documents from a `snapshot`
//! repository, batches into a `cluster::BulkSender`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cluster::{BulkDoc, BulkSender};
use snapshot::{ShardReader, Snapshot, SnapshotIndex};

use crate::metadata::DocumentRouting;
use crate::ports::{
    BulkSized, DocRange, DocumentSink, DocumentSource, SinkError, SinkOutcome, SourceError,
};

/// Fixed part of a bulk action line: `{"index":{"_index":"","_id":""}}\n` plus the newline
/// after the source; routing and type add their own lengths.
const ACTION_OVERHEAD: usize = 40;

impl BulkSized for BulkDoc {
    fn bulk_len(&self) -> usize {
        ACTION_OVERHEAD
            + self.index.len()
            + self.id.len()
            + self.routing.as_ref().map_or(0, |r| r.len() + 14)
            + self.doc_type.as_ref().map_or(0, |t| t.len() + 12)
            + self.source.len()
    }
}

/// Live documents of a snapshot's shards, sent to the index the routing names.
pub struct SnapshotSource {
    snapshot: Snapshot,
    routing: DocumentRouting,
    indices: Mutex<HashMap<String, SnapshotIndex>>,
}

impl SnapshotSource {
    pub fn new(snapshot: Snapshot, routing: DocumentRouting) -> Self {
        SnapshotSource {
            snapshot,
            routing,
            indices: Mutex::new(HashMap::new()),
        }
    }

    fn index(&self, name: &str) -> Result<SnapshotIndex, SourceError> {
        if let Some(ix) = self.indices.lock().expect("index cache lock").get(name) {
            return Ok(ix.clone());
        }
        let ix = self
            .snapshot
            .index(name)
            .map_err(|e| SourceError(e.to_string()))?;
        self.indices
            .lock()
            .expect("index cache lock")
            .insert(name.to_string(), ix.clone());
        Ok(ix)
    }
}

impl DocumentSource for SnapshotSource {
    type Doc = BulkDoc;

    fn read(
        &self,
        range: &DocRange,
        emit: &mut dyn FnMut(u64, BulkDoc) -> bool,
    ) -> Result<(), SourceError> {
        let err =
            |e: snapshot::Error| SourceError(format!("{} shard {}: {e}", range.index, range.shard));
        let index = self.index(&range.index)?;
        if let Some(reason) = index.shard_failure(range.shard) {
            return Err(SourceError(format!(
                "{} shard {} failed in the snapshot: {reason}",
                range.index, range.shard
            )));
        }
        let shard = index.open_shard(range.shard).map_err(err)?;
        let reader = ShardReader::open(&shard).map_err(err)?;
        let max = reader.max_doc();
        let ids = range.from.min(max)..range.to.unwrap_or(max).min(max);
        let mut docs = reader.documents(ids).map_err(err)?;
        let mut targets: HashMap<Option<String>, Option<Arc<str>>> = HashMap::new();
        let mut unrouted = 0u64;
        let mut stopped = false;
        for doc in docs.by_ref() {
            let doc = doc.map_err(err)?;
            let target = targets
                .entry(doc.doc_type.clone())
                .or_insert_with(|| {
                    self.routing
                        .target_index(&range.index, doc.doc_type.as_deref())
                        .map(Arc::from)
                })
                .clone();
            let Some(target) = target else {
                unrouted += 1;
                tracing::warn!(
                    index = %range.index,
                    id = %doc.id,
                    doc_type = doc.doc_type.as_deref().unwrap_or(""),
                    "document not migrated: no target index for its mapping type"
                );
                continue;
            };
            let bulk = BulkDoc {
                index: target,
                id: doc.id,
                doc_type: doc.doc_type.map(Arc::from),
                routing: doc.routing,
                version: None,
                source: doc.source,
            };
            if !emit(doc.global_doc_id, bulk) {
                stopped = true;
                break;
            }
        }
        let stats = docs.stats();
        tracing::debug!(index = %range.index, shard = range.shard, stopped, ?stats, "read a range");
        if unrouted > 0 {
            tracing::warn!(index = %range.index, shard = range.shard, unrouted, "documents without a target index");
        }
        Ok(())
    }
}

/// Batches go to the target through the cluster crate's bulk sender.
pub struct BulkSink(pub Arc<BulkSender>);

impl DocumentSink for BulkSink {
    type Doc = BulkDoc;

    async fn send(&self, docs: Vec<BulkDoc>) -> Result<SinkOutcome, SinkError> {
        let o = self
            .0
            .send(docs)
            .await
            .map_err(|e| SinkError(e.to_string()))?;
        Ok(SinkOutcome {
            indexed: o.indexed + o.accepted,
            failed: o.failed,
            source_bytes: o.source_bytes,
        })
    }
}
