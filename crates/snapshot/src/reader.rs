//! Elasticsearch documents of one shard, read with the Lucene reader: live documents in
//! shard-global doc-id order, each turned into an [`EsDocument`]. Nested children are
//! skipped and counted; documents without `_source` (or with an undecodable one) are
//! counted, logged and listed — never dropped silently.

use std::ops::Range;
use std::sync::Arc;

use lucene::{
    DocValue, FieldInfo, FieldValues, IndexReader, OpenOptions, StoredFieldVisitor, StoredValue,
};
use serde::Serialize;

use crate::document::{decode_id, normalize_source, split_uid, EsDocument};
use crate::error::{Error, Result};
use crate::rebuild::{self, Encoding, RebuiltFields, SourcePlan};
use crate::repository::Shard;

/// Soft-deletes field of Elasticsearch 6.5+/7+ and OpenSearch.
pub const SOFT_DELETES_FIELD: &str = "__soft_deletes";
/// At most this many skipped documents are kept for reporting (all are counted).
const MAX_SKIPPED_KEPT: usize = 10_000;

/// Why a live Lucene document was not produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// No `_id`/`_uid` and no `_source`: a child of a nested block.
    Nested,
    /// An `_id` but no `_source` (source disabled or synthetic).
    NoSource,
    /// `_source` present but not JSON, SMILE, CBOR or YAML, or undecodable.
    BadSource,
    /// `_id` present but undecodable, or `_source` without any `_id`.
    BadId,
    /// No `_source`, and some mapped fields of its segment cannot be rebuilt (not stored,
    /// no doc values); `--allow-partial-source` sends the rest.
    PartialSource,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Nested => "nested",
            SkipReason::NoSource => "no_source",
            SkipReason::BadSource => "bad_source",
            SkipReason::BadId => "bad_id",
            SkipReason::PartialSource => "partial_source",
        }
    }
}

/// A live document that was not produced, with its reason.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedDocument {
    pub global_doc_id: u64,
    pub id: Option<String>,
    pub reason: SkipReason,
    pub detail: String,
}

/// Counts of one read.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ShardStats {
    /// Documents produced.
    pub documents: u64,
    /// Bytes of produced `_source` (after normalisation).
    pub source_bytes: u64,
    pub nested_skipped: u64,
    pub without_source: u64,
    pub bad_source: u64,
    pub bad_id: u64,
    /// Documents produced with a rebuilt `_source` (included in `documents`).
    pub rebuilt: u64,
    /// Documents produced from `_recovery_source` (included in `documents`).
    pub recovery_source: u64,
    /// Documents skipped because their `_source` could only be rebuilt in part.
    pub partial_source: u64,
}

impl ShardStats {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &ShardStats) {
        self.documents += other.documents;
        self.source_bytes += other.source_bytes;
        self.nested_skipped += other.nested_skipped;
        self.without_source += other.without_source;
        self.bad_source += other.bad_source;
        self.bad_id += other.bad_id;
        self.rebuilt += other.rebuilt;
        self.recovery_source += other.recovery_source;
        self.partial_source += other.partial_source;
    }
    /// Documents skipped for any reason but nesting.
    pub fn skipped_not_nested(&self) -> u64 {
        self.without_source + self.bad_source + self.bad_id + self.partial_source
    }
}

/// Facts about one segment, for `inspect`.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentSummary {
    pub name: String,
    pub max_doc: u64,
    pub live_docs: u64,
    pub lucene_version: String,
    pub codec: String,
    pub compound: bool,
    pub stored_fields_format: String,
    pub stored_fields_mode: String,
    pub has_source_field: bool,
}

/// Where `_type` comes from.
#[derive(Debug, Clone)]
enum TypeRule {
    /// ES 7+: no types.
    None,
    /// ES ≤ 6: from `_uid` when present, else this (the index's single mapping type).
    Legacy(Option<String>),
}

/// `--rebuild-source`: whether documents without `_source` get one rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RebuildMode {
    /// Rebuild where `_source` is absent (source disabled or synthetic).
    #[default]
    Auto,
    /// Never: such documents are skipped as `no_source`.
    Off,
}

/// How documents without `_source` are handled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RebuildOptions {
    pub mode: RebuildMode,
    /// Send documents whose `_source` could be rebuilt only in part (fields without doc
    /// values or stored value are missing) instead of skipping them as `partial_source`.
    pub allow_partial: bool,
    /// Use `_recovery_source` (the original source Elasticsearch keeps for a while for
    /// peer recovery) where a document has one, instead of rebuilding.
    pub prefer_recovery_source: bool,
}

/// How to open a shard for reading documents.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Check the CRC-32 of every shard file as it is read (default: on). Small files are
    /// checked when opened; each segment's stored fields (`.fdt`, also inside a `.cfs`)
    /// while [`ShardReader::documents`] walks them, completed when a walk covers a
    /// segment whole. A mismatch is an error naming the file, its blob and the shard.
    /// See [`lucene::OpenOptions::verify_checksums`].
    pub verify_checksums: bool,
    /// Before anything is read, recompute the CRC-32 of every file of the shard and
    /// compare it with the footer and the snapshot metadata: a second read of the whole
    /// shard, for `export --verify-checksums`.
    pub verify_all_files_first: bool,
    /// Documents without `_source`.
    pub rebuild: RebuildOptions,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            verify_checksums: true,
            verify_all_files_first: false,
            rebuild: RebuildOptions::default(),
        }
    }
}

/// A shard opened for reading documents.
pub struct ShardReader {
    index: Arc<str>,
    /// `<index> shard <n> (<shard dir>)`, for errors.
    context: String,
    reader: IndexReader,
    types: TypeRule,
    rebuild: RebuildOptions,
    /// Where rebuilt `_source` fields come from (with `RebuildMode::Auto`).
    plan: Option<Arc<SourcePlan>>,
}

impl std::fmt::Debug for ShardReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ShardReader({}, max_doc {})",
            self.index,
            self.reader.max_doc()
        )
    }
}

impl ShardReader {
    /// Opens the shard's latest commit with the default [`ReadOptions`] (checksums checked
    /// as the files are read). Soft deletes are applied when the index uses them.
    pub fn open(shard: &Shard) -> Result<ShardReader> {
        Self::open_with(shard, &ReadOptions::default())
    }

    /// As [`ShardReader::open`], with `options`.
    pub fn open_with(shard: &Shard, options: &ReadOptions) -> Result<ShardReader> {
        let index = shard.index();
        let md = index.metadata();
        let context = format!(
            "{} shard {} ({})",
            index.name(),
            shard.shard_number(),
            index.shard_dir(shard.shard_number())
        );
        if options.verify_all_files_first {
            shard.directory().verify_all()?;
        }
        let opts = OpenOptions {
            soft_deletes_field: md
                .soft_deletes_enabled()
                .then(|| SOFT_DELETES_FIELD.to_string()),
            verify_checksums: options.verify_checksums,
        };
        let dir: Arc<dyn lucene::Directory> = shard.directory().clone();
        let reader = IndexReader::open(dir, &opts).map_err(|source| Error::Lucene {
            context: context.clone(),
            source,
        })?;
        let created = md.created_version();
        let types = match created {
            Some(v) if v.opensearch || v.major >= 7 => TypeRule::None,
            // Unknown creation version: only `_uid` can tell.
            None => TypeRule::Legacy(None),
            Some(_) => {
                let types = md.mapping_types();
                TypeRule::Legacy(match types.as_slice() {
                    [one] => Some(one.to_string()),
                    [] => Some("_doc".to_string()),
                    _ => None,
                })
            }
        };
        let plan = (options.rebuild.mode == RebuildMode::Auto).then(|| Arc::new(md.source_plan()));
        Ok(ShardReader {
            index: Arc::from(index.name()),
            context,
            reader,
            types,
            rebuild: options.rebuild,
            plan,
        })
    }

    /// Documents in the shard, deleted ones included (the end of the doc-id space).
    pub fn max_doc(&self) -> u64 {
        self.reader.max_doc()
    }

    /// Live documents (after hard and soft deletes), nested children included.
    pub fn live_docs(&self) -> u64 {
        self.reader.num_live_docs()
    }

    /// The Lucene reader.
    pub fn lucene(&self) -> &IndexReader {
        &self.reader
    }

    /// One summary per segment.
    pub fn segments(&self) -> Vec<SegmentSummary> {
        self.reader
            .segments()
            .iter()
            .map(|s| SegmentSummary {
                name: s.name().to_string(),
                max_doc: s.max_doc() as u64,
                live_docs: s.live_count() as u64,
                lucene_version: s.lucene_version().to_string(),
                codec: s.codec().to_string(),
                compound: s.is_compound(),
                stored_fields_format: s.stored_fields_format().unwrap_or("none").to_string(),
                stored_fields_mode: s.stored_fields_mode().unwrap_or("").to_string(),
                has_source_field: s.field_infos().by_name("_source").is_some(),
            })
            .collect()
    }

    /// Live documents whose shard-global doc id is in `range`, in order.
    pub fn documents(&self, range: Range<u64>) -> Result<Documents<'_>> {
        let inner = self
            .reader
            .documents(range)
            .map_err(|source| Error::Lucene {
                context: self.context.clone(),
                source,
            })?;
        Ok(Documents {
            reader: self,
            inner,
            visitor: Fields {
                plan: self.plan.clone(),
                ..Fields::default()
            },
            stats: ShardStats::default(),
            skipped: Vec::new(),
            done: false,
            rebuild: RebuildState::default(),
        })
    }
}

/// The stored fields of one document that matter.
#[derive(Default)]
struct Fields {
    id: Option<std::result::Result<String, String>>,
    uid: Option<String>,
    routing: Option<String>,
    /// `_source` already normalised (one copy, straight from the decompressed chunk).
    source: Option<std::result::Result<bytes::Bytes, String>>,
    recovery_source: Option<bytes::Bytes>,
    /// Stored fields the rebuild plan reads, in stored order.
    stored: Vec<(String, serde_json::Value)>,
    plan: Option<Arc<SourcePlan>>,
}

impl Fields {
    fn clear(&mut self) {
        self.id = None;
        self.uid = None;
        self.routing = None;
        self.source = None;
        self.recovery_source = None;
        self.stored.clear();
    }
}

/// Collects the fields of one document into the reused [`Fields`].
struct Visitor<'a> {
    f: &'a mut Fields,
}

impl StoredFieldVisitor for Visitor<'_> {
    fn field(&mut self, field: &FieldInfo, value: StoredValue<'_>) -> lucene::Result<()> {
        match (field.name.as_str(), value) {
            ("_id", StoredValue::Binary(b)) => self.f.id = Some(decode_id(b)),
            ("_id", StoredValue::String(s)) => self.f.id = Some(Ok(s.to_string())),
            ("_uid", StoredValue::String(s)) => self.f.uid = Some(s.to_string()),
            ("_routing", StoredValue::String(s)) => self.f.routing = Some(s.to_string()),
            ("_source", StoredValue::Binary(b)) => {
                self.f.source = Some(normalize_source(b));
            }
            ("_recovery_source", StoredValue::Binary(b)) => {
                self.f.recovery_source = Some(bytes::Bytes::copy_from_slice(b));
            }
            (name, value) if self.f.plan.as_ref().is_some_and(|p| p.reads_stored(name)) => {
                let v = match value {
                    StoredValue::String(s) => serde_json::Value::from(s),
                    StoredValue::Int(i) => serde_json::Value::from(i),
                    StoredValue::Long(l) => serde_json::Value::from(l),
                    StoredValue::Float(f) => serde_json::Value::from(f64::from(f)),
                    StoredValue::Double(d) => serde_json::Value::from(d),
                    StoredValue::Binary(b) => {
                        serde_json::Value::from(String::from_utf8_lossy(b).into_owned())
                    }
                };
                self.f.stored.push((name.to_string(), v));
            }
            _ => {}
        }
        Ok(())
    }
}

/// Iterator over the documents of a range of a shard. Stops after the first error.
pub struct Documents<'a> {
    reader: &'a ShardReader,
    inner: lucene::Documents<'a>,
    visitor: Fields,
    stats: ShardStats,
    skipped: Vec<SkippedDocument>,
    done: bool,
    rebuild: RebuildState,
}

/// Doc-values cursors of the segment being read, for rebuilding `_source`.
#[derive(Default)]
struct RebuildState {
    /// Index of the segment the cursors belong to.
    segment: Option<usize>,
    /// Per planned doc-values field (in plan order), its cursor in this segment.
    cursors: Vec<(usize, FieldValues)>,
    /// Mapped fields of this segment that cannot be rebuilt.
    lost: Vec<String>,
    value: DocValue,
    fields: RebuiltFields,
}

impl Documents<'_> {
    /// Counts so far.
    pub fn stats(&self) -> &ShardStats {
        &self.stats
    }

    /// Skipped documents (other than nested children) since the last call; at most
    /// 10,000 are kept between calls, all are counted in [`Documents::stats`].
    pub fn take_skipped(&mut self) -> Vec<SkippedDocument> {
        std::mem::take(&mut self.skipped)
    }

    /// The `_source` of a document that has none stored: its `_recovery_source` (when
    /// preferred), or one rebuilt from doc values and stored fields; or why not.
    #[allow(clippy::type_complexity)]
    fn without_source(
        &mut self,
        global: u64,
    ) -> lucene::Result<std::result::Result<bytes::Bytes, (SkipReason, String)>> {
        let opts = self.reader.rebuild;
        if opts.prefer_recovery_source {
            if let Some(r) = self.visitor.recovery_source.take() {
                match normalize_source(&r) {
                    Ok(s) => {
                        self.stats.recovery_source += 1;
                        return Ok(Ok(s));
                    }
                    Err(e) => {
                        return Ok(Err((
                            SkipReason::BadSource,
                            format!("_recovery_source: {e}"),
                        )))
                    }
                }
            }
        }
        let Some(plan) = self.reader.plan.clone() else {
            return Ok(Err((
                SkipReason::NoSource,
                "document has no _source (source disabled or synthetic; --rebuild-source is off)"
                    .into(),
            )));
        };
        let segments = self.reader.reader.segments();
        let seg_index =
            segments.partition_point(|s| s.doc_base() + u64::from(s.max_doc()) <= global);
        let Some(seg) = segments.get(seg_index) else {
            return Ok(Err((
                SkipReason::NoSource,
                "document outside every segment".into(),
            )));
        };
        let st = &mut self.rebuild;
        if st.segment != Some(seg_index) {
            st.segment = Some(seg_index);
            st.cursors.clear();
            let mut dv = seg.doc_values();
            for (i, f) in plan.fields.iter().enumerate() {
                if f.encoding == Encoding::Stored {
                    continue;
                }
                if let Some(c) = dv.field(&f.lucene_field)? {
                    st.cursors.push((i, c));
                }
            }
            st.lost = plan
                .lost
                .iter()
                .filter(|l| seg.field_infos().by_name(&l.path).is_some())
                .map(|l| l.path.clone())
                .collect();
        }
        if !st.lost.is_empty() && !opts.allow_partial {
            return Ok(Err((
                SkipReason::PartialSource,
                format!(
                    "no _source, and these fields cannot be rebuilt (no doc values, not stored): {}",
                    st.lost.join(", ")
                ),
            )));
        }
        let local = (global - seg.doc_base()) as u32;
        st.fields.clear();
        let mut cursor = 0;
        for (i, f) in plan.fields.iter().enumerate() {
            if f.encoding == Encoding::Stored {
                for (name, v) in &self.visitor.stored {
                    if *name == f.lucene_field {
                        st.fields.push(&f.path, v.clone());
                    }
                }
                continue;
            }
            while cursor < st.cursors.len() && st.cursors[cursor].0 < i {
                cursor += 1;
            }
            let Some((ci, c)) = st.cursors.get_mut(cursor) else {
                continue;
            };
            if *ci != i || !c.read(local, &mut st.value)? {
                continue;
            }
            if f.encoding == Encoding::GeoPoint || !st.value.numbers.is_empty() {
                for n in &st.value.numbers {
                    if let Some(v) = rebuild::decode_number(&f.encoding, *n) {
                        st.fields.push(&f.path, v);
                    }
                }
            }
            for b in &st.value.bytes {
                if let Some(v) = rebuild::decode_term(&f.encoding, b) {
                    st.fields.push(&f.path, v);
                }
            }
        }
        let json = st.fields.to_json();
        self.stats.rebuilt += 1;
        Ok(Ok(bytes::Bytes::from(
            serde_json::to_vec(&json).expect("a JSON value serializes"),
        )))
    }

    fn skip(&mut self, global_doc_id: u64, id: Option<String>, reason: SkipReason, detail: String) {
        match reason {
            SkipReason::Nested => {
                self.stats.nested_skipped += 1;
                return;
            }
            SkipReason::NoSource => self.stats.without_source += 1,
            SkipReason::BadSource => self.stats.bad_source += 1,
            SkipReason::BadId => self.stats.bad_id += 1,
            SkipReason::PartialSource => self.stats.partial_source += 1,
        }
        tracing::warn!(
            index = %self.reader.index,
            doc = global_doc_id,
            id = id.as_deref().unwrap_or(""),
            reason = reason.as_str(),
            "{detail}"
        );
        if self.skipped.len() < MAX_SKIPPED_KEPT {
            self.skipped.push(SkippedDocument {
                global_doc_id,
                id,
                reason,
                detail,
            });
        }
    }
}

impl Iterator for Documents<'_> {
    type Item = Result<EsDocument>;

    fn next(&mut self) -> Option<Result<EsDocument>> {
        loop {
            if self.done {
                return None;
            }
            self.visitor.clear();
            let mut v = Visitor {
                f: &mut self.visitor,
            };
            let doc = match self.inner.next(&mut v) {
                Ok(Some(d)) => d,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(source) => {
                    self.done = true;
                    return Some(Err(Error::Lucene {
                        context: self.reader.context.clone(),
                        source,
                    }));
                }
            };
            let has_source = self.visitor.source.is_some();
            let uid = self.visitor.uid.take();
            let stored_id = self.visitor.id.take();
            let routing = self.visitor.routing.take();
            let (doc_type, id) = match (uid, stored_id) {
                (Some(uid), _) => match split_uid(&uid) {
                    Some((t, i)) => (Some(t.to_string()), Ok(i.to_string())),
                    None => (None, Err(format!("_uid {uid:?} has no '#'"))),
                },
                (None, Some(id)) => {
                    let t = match &self.reader.types {
                        TypeRule::None => None,
                        TypeRule::Legacy(t) => t.clone(),
                    };
                    (t, id)
                }
                (None, None) if !has_source => {
                    self.skip(doc, None, SkipReason::Nested, String::new());
                    continue;
                }
                (None, None) => (None, Err("document has _source but no _id".to_string())),
            };
            let id = match id {
                Ok(id) => id,
                Err(e) => {
                    self.skip(doc, None, SkipReason::BadId, e);
                    continue;
                }
            };
            let normalized = match self.visitor.source.take() {
                Some(n) => n,
                None => match self.without_source(doc) {
                    Ok(Ok(s)) => Ok(s),
                    Ok(Err((reason, detail))) => {
                        self.skip(doc, Some(id), reason, detail);
                        continue;
                    }
                    Err(source) => {
                        self.done = true;
                        return Some(Err(Error::Lucene {
                            context: self.reader.context.clone(),
                            source,
                        }));
                    }
                },
            };
            let source = match normalized {
                Ok(s) => s,
                Err(e) => {
                    self.skip(doc, Some(id), SkipReason::BadSource, e);
                    continue;
                }
            };
            self.stats.documents += 1;
            self.stats.source_bytes += source.len() as u64;
            return Some(Ok(EsDocument {
                index: self.reader.index.clone(),
                id,
                doc_type,
                routing,
                source,
                global_doc_id: doc,
            }));
        }
    }
}
