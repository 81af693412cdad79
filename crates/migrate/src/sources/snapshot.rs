//! The snapshot source: live documents of a snapshot's shards. Partitions are shards (or
//! doc-id ranges of large shards); positions are shard-global Lucene doc ids (segments in
//! commit order, deleted documents counted). Documents the reader cannot turn into a
//! document (no `_source`, undecodable `_source`, bad `_id`) come out as skips with their
//! reason, in doc-id order with the documents.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use coordination::{Cursor, Position, WorkItem};
use snapshot::{ReadOptions, ShardReader, Snapshot, SnapshotIndex};

use crate::document::{Document, Op, Read, Skip};
use crate::error::SourceError;
use crate::source::{GroupTotals, Plan, Source, Totals};

/// Options of the snapshot source.
#[derive(Debug, Clone, Default)]
pub struct SnapshotOptions {
    /// Cut shards with more Lucene documents than this (deleted included) into doc-id
    /// ranges of this size, so several workers share one shard.
    pub split_docs: Option<u64>,
    /// Check every shard file against its checksum as it is read (small files when a
    /// segment is opened, stored fields as they stream). A mismatch fails the item with
    /// the file named; documents of that segment read before the end of the walk may
    /// already have been sent.
    pub verify_checksums: bool,
    /// Documents without `_source` (source disabled or synthetic): rebuilt from doc
    /// values and stored fields, taken from `_recovery_source`, or skipped.
    pub rebuild: snapshot::RebuildOptions,
}

/// Live documents of the chosen indices of a snapshot.
pub struct SnapshotSource {
    snapshot: Snapshot,
    indices: Vec<String>,
    opts: SnapshotOptions,
    cache: Mutex<HashMap<String, SnapshotIndex>>,
}

impl SnapshotSource {
    /// A source over `indices` (names in the snapshot) of `snapshot`.
    pub fn new(snapshot: Snapshot, indices: Vec<String>, opts: SnapshotOptions) -> Self {
        SnapshotSource {
            snapshot,
            indices,
            opts,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    pub fn indices(&self) -> &[String] {
        &self.indices
    }

    fn index(&self, name: &str) -> Result<SnapshotIndex, SourceError> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ix) = cache.get(name) {
            return Ok(ix.clone());
        }
        let ix = self
            .snapshot
            .index(name)
            .map_err(|e| SourceError::item(format!("index {name}: {e}")))?;
        cache.insert(name.to_string(), ix.clone());
        Ok(ix)
    }

    /// Opens a shard for reading, or says why it cannot be read.
    fn open(&self, index: &SnapshotIndex, shard: u32) -> Result<ShardReader, String> {
        if let Some(reason) = index.shard_failure(shard) {
            return Err(format!("the shard failed in the snapshot: {reason}"));
        }
        let s = index.open_shard(shard).map_err(|e| e.to_string())?;
        let opts = ReadOptions {
            verify_checksums: self.opts.verify_checksums,
            verify_all_files_first: false,
            rebuild: self.opts.rebuild,
        };
        ShardReader::open_with(&s, &opts).map_err(|e| e.to_string())
    }
}

impl SnapshotSource {
    /// The source's part of the migration identity, from the repository's location and
    /// the snapshot's name (also before the snapshot exists, to check a store first).
    pub fn identity_of(repository: &str, snapshot: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("kind".to_string(), "snapshot".to_string()),
            (
                "repository".to_string(),
                crate::job::identity_location(repository),
            ),
            ("snapshot".to_string(), snapshot.to_string()),
        ])
    }
}

impl Source for SnapshotSource {
    fn identity(&self) -> BTreeMap<String, String> {
        Self::identity_of(&self.snapshot.repository().location(), self.snapshot.name())
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let mut plan = Plan::default();
        let mut totals = Totals::default();
        for name in &self.indices {
            let index = self.index(name)?;
            let mut g = GroupTotals {
                parts: index.number_of_shards(),
                ..GroupTotals::default()
            };
            for shard in 0..index.number_of_shards() {
                let reader = match self.open(&index, shard) {
                    Ok(r) => r,
                    Err(reason) => {
                        // The shard's item fails with the reason; other shards go on.
                        tracing::warn!(index = %name, shard, "shard cannot be read: {reason}");
                        g.broken.insert(shard, reason);
                        plan.items.push(WorkItem::whole(name.clone(), shard));
                        continue;
                    }
                };
                if let Ok(s) = index.shard_snapshot(shard) {
                    g.bytes += s.size_in_bytes();
                }
                let max_doc = reader.max_doc();
                g.docs += reader.live_docs();
                match self.opts.split_docs.filter(|&n| n > 0 && max_doc > n) {
                    Some(n) => {
                        let mut from = 0u64;
                        while from < max_doc {
                            let to = from.saturating_add(n);
                            plan.items.push(WorkItem {
                                group: name.clone(),
                                part: shard,
                                after: from.checked_sub(1).map(Position::Doc),
                                until: (to < max_doc).then_some(Position::Doc(to)),
                            });
                            from = to;
                        }
                    }
                    None => plan.items.push(WorkItem::whole(name.clone(), shard)),
                }
            }
            totals.add(name, g);
        }
        plan.totals = totals;
        Ok(plan)
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let name = &item.group;
        let where_ = || format!("index {name} shard {}", item.part);
        let index = self.index(name)?;
        let reader = self
            .open(&index, item.part)
            .map_err(|e| SourceError::item(format!("{}: {e}", where_())))?;
        let max = reader.max_doc();
        let first = match after {
            None => 0,
            Some(Position::Doc(d)) => d.saturating_add(1),
            Some(Position::Key(k)) => {
                return Err(SourceError::fatal(format!(
                    "{}: key cursor {k:?} on a snapshot shard",
                    where_()
                )))
            }
        };
        let end = match &item.until {
            None => max,
            Some(Position::Doc(u)) => (*u).min(max),
            Some(Position::Key(k)) => {
                return Err(SourceError::fatal(format!(
                    "{}: key bound {k:?} on a snapshot shard",
                    where_()
                )))
            }
        };
        let mut docs = reader
            .documents(first.min(end)..end)
            .map_err(|e| SourceError::item(format!("{}: {e}", where_())))?;
        let group: Arc<str> = Arc::from(name.as_str());
        let mut types = TypeNames::default();
        loop {
            let next = docs.next();
            // Skips come out of the reader between documents; their doc ids are smaller
            // than the next document's.
            for s in docs.take_skipped() {
                let skip = Skip {
                    position: Position::Doc(s.global_doc_id),
                    index: group.clone(),
                    id: s.id,
                    doc_type: None,
                    routing: None,
                    reason: s.reason.as_str(),
                    detail: s.detail,
                    source: None,
                };
                if !emit(Read::Skip(skip)) {
                    return Ok(());
                }
            }
            let Some(doc) = next else { break };
            let doc = doc.map_err(|e| SourceError::item(format!("{}: {e}", where_())))?;
            let d = Document {
                position: Position::Doc(doc.global_doc_id),
                op: Op::Index,
                index: group.clone(),
                id: doc.id,
                doc_type: doc.doc_type.map(|t| types.get(t)),
                routing: doc.routing,
                source: doc.source,
            };
            if !emit(Read::Doc(d)) {
                break;
            }
        }
        tracing::debug!(index = %name, shard = item.part, stats = ?docs.stats(), "read a range");
        Ok(())
    }
}

/// Mapping-type names shared between documents (one allocation per type, not per doc).
#[derive(Default)]
struct TypeNames(Vec<Arc<str>>);

impl TypeNames {
    fn get(&mut self, t: String) -> Arc<str> {
        if let Some(a) = self.0.iter().find(|a| ***a == *t) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(t);
        self.0.push(a.clone());
        a
    }
}
