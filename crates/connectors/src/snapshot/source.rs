//! The snapshot source: live documents of a snapshot's shards. Partitions are shards (or
//! doc-id ranges of large shards); positions are shard-global Lucene doc ids (segments in
//! commit order, deleted documents counted). Documents the reader cannot turn into a
//! document (no `_source`, undecodable `_source`, bad `_id`) come out as skips with their
//! reason, in doc-id order with the documents.
//!
//! With [`SnapshotSource::since`] it is a delta from an earlier snapshot A of the same
//! repository: an index A has too is read as the changes since A, one item per shard
//! ([`super::delta`] describes its positions); an index created after A is read whole;
//! indices deleted after A are listed in the plan's totals (`removed`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use coordination::{Cursor, Position, WorkItem};
use snapshot::{ReadOptions, ShardDelta, ShardReader, Snapshot, SnapshotIndex};

use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;
use engine::source::{DeltaTotals, GroupTotals, Plan, Source, Totals};

/// Options of the snapshot source.
#[derive(Debug, Clone, Default)]
pub struct SnapshotOptions {
    /// Cut shards with more Lucene documents than this (deleted included) into doc-id
    /// ranges of this size, so several workers share one shard.
    pub split_docs: Option<u64>,
    /// Check every shard file the documents come from against its checksum: small files
    /// when a segment is opened, a segment's stored fields whole before its first
    /// document is read (once per process and file). A mismatch fails the item with the
    /// file named, before any document of that file is sent; since the file does not
    /// change, every retry fails the same way.
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
    since: Option<Since>,
    /// Stored-fields files whose whole checksum was found good in this process.
    verified: Arc<snapshot::VerifiedFiles>,
}

/// The earlier snapshot of a delta.
struct Since {
    snapshot: Snapshot,
    /// Its indices chosen by the same filter (to find the removed ones).
    indices: Vec<String>,
    /// Index name → the index in A, `None` when A does not have it.
    cache: Mutex<HashMap<String, Option<SnapshotIndex>>>,
    /// (index, shard) → delta, computed once per process.
    deltas: Mutex<HashMap<(String, u32), Arc<ShardDelta>>>,
}

impl SnapshotSource {
    /// A source over `indices` (names in the snapshot) of `snapshot`.
    pub fn new(snapshot: Snapshot, indices: Vec<String>, opts: SnapshotOptions) -> Self {
        SnapshotSource {
            snapshot,
            indices,
            opts,
            cache: Mutex::new(HashMap::new()),
            since: None,
            verified: Arc::default(),
        }
    }

    /// Makes this a delta from the earlier snapshot `since` (of the same repository):
    /// `indices` are its indices chosen by the same filter.
    pub fn since(mut self, since: Snapshot, indices: Vec<String>) -> Self {
        self.since = Some(Since {
            snapshot: since,
            indices,
            cache: Mutex::new(HashMap::new()),
            deltas: Mutex::new(HashMap::new()),
        });
        self
    }

    /// A delta: indices of the earlier snapshot (as filtered) that this one does not have.
    pub fn removed_indices(&self) -> Vec<String> {
        match &self.since {
            Some(s) => s
                .indices
                .iter()
                .filter(|n| !self.indices.contains(n))
                .cloned()
                .collect(),
            None => Vec::new(),
        }
    }

    /// A delta: index `name` in the earlier snapshot, when it has it.
    fn old_index(&self, name: &str) -> Result<Option<SnapshotIndex>, SourceError> {
        let Some(since) = &self.since else {
            return Ok(None);
        };
        let mut cache = since.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ix) = cache.get(name) {
            return Ok(ix.clone());
        }
        let ix = if since.snapshot.index_names().iter().any(|n| n == name) {
            Some(since.snapshot.index(name).map_err(|e| {
                SourceError::item(format!(
                    "index {name} in snapshot {}",
                    since.snapshot.name()
                ))
                .caused_by(e)
            })?)
        } else {
            None
        };
        cache.insert(name.to_string(), ix.clone());
        Ok(ix)
    }

    /// The delta of one shard (cached), with the two readers.
    fn shard_delta(
        &self,
        old: &SnapshotIndex,
        new: &SnapshotIndex,
        shard: u32,
    ) -> Result<(ShardReader, ShardReader, Arc<ShardDelta>), SourceError> {
        let since = self.since.as_ref().expect("a delta source");
        let b = self.open(new, shard)?;
        // A shard that failed in A never reached the target: all of B's is new. The
        // reader of B stands in for A's (the delete pass reads nothing from it).
        let a = if old.shard_failure(shard).is_some() {
            tracing::warn!(index = %new.name(), shard, "the shard failed in snapshot {}: sending all of it", since.snapshot.name());
            None
        } else {
            Some(self.open(old, shard).map_err(|e| SourceError {
                message: format!("in snapshot {}: {}", since.snapshot.name(), e.message),
                ..e
            })?)
        };
        let key = (new.name().to_string(), shard);
        let cached = since
            .deltas
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let delta = match cached {
            Some(d) => d,
            None => {
                let d = match &a {
                    Some(a) => ShardDelta::compute(a, &b)
                        .map_err(|e| SourceError::item("comparing the shards").caused_by(e))?,
                    None => ShardDelta::whole(&b),
                };
                let d = Arc::new(d);
                since
                    .deltas
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key, d.clone());
                d
            }
        };
        let a = match a {
            Some(a) => a,
            None => self.open(new, shard)?,
        };
        Ok((a, b, delta))
    }

    /// Plans a delta index: one item per shard, totals of what changed.
    fn plan_delta(
        &self,
        old: &SnapshotIndex,
        index: &SnapshotIndex,
        g: &mut GroupTotals,
        items: &mut Vec<WorkItem>,
    ) {
        let name = index.name();
        let mut delta = DeltaTotals::default();
        let refused = Self::delta_refused(old, index);
        for shard in 0..index.number_of_shards() {
            items.push(WorkItem::whole(name, shard));
            if let Some(reason) = &refused {
                g.broken.insert(shard, reason.clone());
                continue;
            }
            match self.shard_delta(old, index, shard) {
                Ok((a, b, d)) => {
                    let t = super::delta::totals(&d);
                    g.docs += t.index + t.delete_at_most;
                    g.bytes += new_bytes(&a, &b);
                    delta.add(&t);
                    tracing::info!(index = %name, shard, stats = ?d.stats, "delta planned");
                }
                Err(reason) => {
                    let reason = redact::chain(&reason);
                    tracing::warn!(index = %name, shard, "shard delta cannot be computed: {reason}");
                    g.broken.insert(shard, reason);
                }
            }
        }
        g.delta = Some(delta);
    }

    /// Why a delta of index `name` cannot be computed against `old`, if it cannot.
    fn delta_refused(old: &SnapshotIndex, new: &SnapshotIndex) -> Option<String> {
        (old.number_of_shards() != new.number_of_shards()).then(|| {
            format!(
                "index {} was deleted and created again with {} shards (it had {}): a delta cannot be computed; migrate it in full",
                new.name(),
                new.number_of_shards(),
                old.number_of_shards()
            )
        })
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
            .map_err(|e| source_error(format!("index {name}"), e))?;
        cache.insert(name.to_string(), ix.clone());
        Ok(ix)
    }

    /// Opens a shard for reading, or says why it cannot be read.
    /// A reason no retry can change (the shard failed in the snapshot, an unsupported
    /// format) is a [`SourceError::permanent`].
    fn open(&self, index: &SnapshotIndex, shard: u32) -> Result<ShardReader, SourceError> {
        if let Some(reason) = index.shard_failure(shard) {
            return Err(SourceError::permanent(format!(
                "the shard failed in the snapshot: {reason}"
            )));
        }
        let s = index
            .open_shard(shard)
            .map_err(|e| source_error("opening the shard".into(), e))?;
        let opts = ReadOptions {
            verify_checksums: self.opts.verify_checksums,
            verified: Some(self.verified.clone()),
            verify_all_files_first: false,
            rebuild: self.opts.rebuild,
        };
        ShardReader::open_with(&s, &opts).map_err(|e| source_error("reading the shard".into(), e))
    }
}

impl SnapshotSource {
    /// The source's part of the migration identity, from the repository's location and
    /// the snapshot's name, and for a delta the snapshot it starts from (also before the
    /// snapshot exists, to check a store first).
    pub fn identity_of(
        repository: &str,
        snapshot: &str,
        since: Option<&str>,
    ) -> BTreeMap<String, String> {
        let mut id = BTreeMap::from([
            ("kind".to_string(), "snapshot".to_string()),
            (
                "repository".to_string(),
                engine::job::identity_location(repository),
            ),
            ("snapshot".to_string(), snapshot.to_string()),
        ]);
        if let Some(since) = since {
            id.insert("since".to_string(), since.to_string());
        }
        id
    }
}

impl Source for SnapshotSource {
    fn identity(&self) -> BTreeMap<String, String> {
        Self::identity_of(
            &self.snapshot.repository().location(),
            self.snapshot.name(),
            self.since.as_ref().map(|s| s.snapshot.name()),
        )
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
            if let Some(old) = self.old_index(name)? {
                self.plan_delta(&old, &index, &mut g, &mut plan.items);
                totals.add(name, g);
                continue;
            }
            for shard in 0..index.number_of_shards() {
                let reader = match self.open(&index, shard) {
                    Ok(r) => r,
                    Err(reason) => {
                        // The shard's item fails with the reason; other shards go on.
                        let reason = redact::chain(&reason);
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
                                extent: None,
                            });
                            from = to;
                        }
                    }
                    None => plan.items.push(WorkItem::whole(name.clone(), shard)),
                }
            }
            totals.add(name, g);
        }
        if let Some(since) = &self.since {
            totals.since = Some(since.snapshot.name().to_string());
            totals.removed = self.removed_indices();
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
        self.read_counting_nested(item, after, emit, &mut 0)
    }

    /// Exact for a full read; a delta's counts are an upper bound (changes + deletes).
    fn exact_totals(&self) -> bool {
        self.since.is_none()
    }

    fn read_counting_nested(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
        nested_seen: &mut u64,
    ) -> Result<(), SourceError> {
        let name = &item.group;
        let where_ = || format!("index {name} shard {}", item.part);
        let index = self.index(name)?;
        let first_after = |after: &Cursor| match after {
            None => Ok(0),
            Some(Position::Doc(d)) => Ok(d.saturating_add(1)),
            Some(Position::Key(k)) => Err(SourceError::fatal(format!(
                "{}: key cursor {k:?} on a snapshot shard",
                where_()
            ))),
        };
        if let Some(old) = self.old_index(name)? {
            if let Some(reason) = Self::delta_refused(&old, &index) {
                return Err(SourceError::item(reason));
            }
            let (a, b, delta) =
                self.shard_delta(&old, &index, item.part)
                    .map_err(|e| SourceError {
                        // as before: worth a retry, whatever the shard's own error says
                        severity: engine::error::Severity::Item,
                        message: format!("{}: {}", where_(), e.message),
                        ..e
                    })?;
            let group: Arc<str> = Arc::from(name.as_str());
            return super::delta::read_shard(&group, &a, &b, &delta, first_after(after)?, emit)
                .map_err(|e| SourceError {
                    message: format!("{}: {}", where_(), e.message),
                    ..e
                });
        }
        let reader = self.open(&index, item.part).map_err(|e| SourceError {
            message: format!("{}: {}", where_(), e.message),
            ..e
        })?;
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
        let range = first.min(end)..end;
        let mut docs = reader
            .documents(range.clone())
            .map_err(|e| source_error(where_(), e))?;
        let group: Arc<str> = Arc::from(name.as_str());
        let mut given = 0u64;
        let whole = emit_documents(&group, &mut docs, &mut |read| {
            given += 1;
            emit(read)
        })
        .map_err(|e| SourceError {
            message: format!("{}: {}", where_(), e.message),
            ..e
        });
        // the reader counts each nested child it passes over, also when emit stopped early
        *nested_seen += docs.stats().nested_skipped;
        let whole = whole?;
        tracing::debug!(index = %name, shard = item.part, stats = ?docs.stats(), "read a range");
        if whole {
            // every live document of the range is given (a document or a skip) or is a
            // nested child: nothing is dropped on the way
            let nested = docs.stats().nested_skipped;
            let live = reader.live_in(range.clone());
            if given + nested != live {
                return Err(SourceError::coverage(format!(
                    "{}: doc ids {range:?} hold {live} live documents, but {given} were given and {nested} are nested children: documents were lost on the way; the item fails rather than end as done",
                    where_()
                )));
            }
        }
        Ok(())
    }
}

/// `message` (where) caused by `e` as an error of this item: one no retry can heal when `e` says so (an
/// unsupported format), else one worth retrying (I/O, a bad transfer, a checksum).
pub(crate) fn source_error(message: String, e: snapshot::Error) -> SourceError {
    if e.is_permanent() {
        SourceError::permanent(message).caused_by(e)
    } else {
        SourceError::item(message).caused_by(e)
    }
}

/// Bytes of the newer shard's files that the older one does not hold (same Lucene name,
/// length and checksum): what a delta may have to read.
fn new_bytes(old: &ShardReader, new: &ShardReader) -> u64 {
    let held: std::collections::HashSet<(&str, u64, Option<&str>)> = old
        .shard()
        .files()
        .files
        .iter()
        .map(|f| (f.physical_name.as_str(), f.length, f.checksum.as_deref()))
        .collect();
    new.shard()
        .files()
        .files
        .iter()
        .filter(|f| !held.contains(&(f.physical_name.as_str(), f.length, f.checksum.as_deref())))
        .map(|f| f.length)
        .sum()
}

/// Passes the documents and skips of `docs` to `emit` in doc-id order (skips come out of
/// the reader between documents, with smaller doc ids than the next document). Returns
/// `false` when `emit` asked to stop.
pub(crate) fn emit_documents(
    group: &Arc<str>,
    docs: &mut snapshot::reader::ShardDocuments<'_>,
    emit: &mut dyn FnMut(Read) -> bool,
) -> Result<bool, SourceError> {
    let mut types = TypeNames::default();
    loop {
        let next = docs.step();
        for s in docs.take_skipped() {
            let skip = Skip {
                position: Position::Doc(s.global_doc_id),
                index: group.clone(),
                id: s.id,
                doc_type: s.doc_type.map(|t| types.get(t)),
                routing: s.routing,
                reason: s.reason.as_str(),
                detail: s.detail,
                source: None,
            };
            if !emit(Read::Skip(skip)) {
                return Ok(false);
            }
        }
        let doc = match next {
            None => return Ok(true),
            Some(Err(e)) => return Err(source_error("reading a document".into(), e)),
            // the skips just taken
            Some(Ok(snapshot::Step::SkipsFull)) => continue,
            Some(Ok(snapshot::Step::Doc(doc))) => doc,
        };
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
            return Ok(false);
        }
    }
}

/// Mapping-type names shared between documents (one allocation per type, not per doc).
#[derive(Default)]
pub(crate) struct TypeNames(Vec<Arc<str>>);

impl TypeNames {
    pub(crate) fn get(&mut self, t: String) -> Arc<str> {
        if let Some(a) = self.0.iter().find(|a| ***a == *t) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(t);
        self.0.push(a.clone());
        a
    }
}
