//! Elasticsearch documents of one shard, read with the Lucene reader: live documents in
//! shard-global doc-id order, each turned into an [`EsDocument`]. Nested children are
//! skipped and counted; documents without `_source` (or with an undecodable one) are
//! counted, logged and listed — never dropped silently.

use std::ops::Range;
use std::sync::Arc;

use lucene::{
    DocValue, FieldInfo, FieldValues, IndexReader, NumericValues, OpenOptions, Selection,
    StoredFieldVisitor, StoredValue,
};
use serde::Serialize;

use crate::document::{decode_id, normalize_source_in, split_uid, EsDocument};
use crate::error::{Error, Result};
use crate::ignored_source::{self, IgnoredSourceLayout};
use crate::rebuild::{self, Encoding, RebuiltFields, SourcePlan};
use crate::repository::Shard;

/// Soft-deletes field of Elasticsearch 6.5+/7+ and OpenSearch.
pub const SOFT_DELETES_FIELD: &str = "__soft_deletes";
/// At most this many skipped documents are held between two drains: [`ShardDocuments::step`]
/// says so when the list is full (nothing is lost); the plain iterator keeps no more
/// (all are counted).
const MAX_SKIPPED_KEPT: usize = 10_000;

/// What [`ShardDocuments::step`] gives.
#[derive(Debug)]
pub enum Step {
    /// The next document.
    Doc(EsDocument),
    /// The skipped-documents list is full: take it ([`ShardDocuments::take_skipped`]) before
    /// the next step.
    SkipsFull,
}

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
    /// `_source` lacks a mapped vector field (left out by the index, see
    /// [`crate::vectors`]) whose vector files are in a format the reader does not know.
    VectorUnreadable,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Nested => "nested",
            SkipReason::NoSource => "no_source",
            SkipReason::BadSource => "bad_source",
            SkipReason::BadId => "bad_id",
            SkipReason::PartialSource => "partial_source",
            SkipReason::VectorUnreadable => "vector_unreadable",
        }
    }
}

/// A live document that was not produced, with its reason.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedDocument {
    pub global_doc_id: u64,
    pub id: Option<String>,
    /// The mapping type (ES ≤ 6), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
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
    /// Documents skipped because a vector left out of `_source` could not be read back.
    pub vector_unreadable: u64,
    /// Documents produced with vectors put back into `_source` (included in `documents`).
    pub vectors_restored: u64,
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
        self.vector_unreadable += other.vector_unreadable;
        self.vectors_restored += other.vectors_restored;
    }
    /// Documents skipped for any reason but nesting.
    pub fn skipped_not_nested(&self) -> u64 {
        self.without_source
            + self.bad_source
            + self.bad_id
            + self.partial_source
            + self.vector_unreadable
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
    /// Fields of the segment with doc values.
    pub doc_values_fields: Vec<String>,
    /// Why the segment's doc values cannot be read (Lucene 4.x–6.x formats), naming the
    /// file and format; `None` when they can, or the segment has none. Probed only for
    /// segments written before Lucene 7 (one `.dvm` read), whose formats the crate lacks.
    pub doc_values_unsupported: Option<String>,
    /// Vector fields and where their vectors are read from (see [`crate::vectors`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vector_fields: Vec<crate::vectors::VectorFieldSummary>,
}

/// The names of the segment's fields that have doc values.
fn doc_values_fields(seg: &lucene::SegmentReader) -> Vec<String> {
    seg.field_infos()
        .iter()
        .filter(|f| f.doc_values_type != lucene::DocValuesType::None)
        .map(|f| f.name.clone())
        .collect()
}

/// For a segment written before Lucene 7, whether its doc values can be read: the first
/// field with doc values is opened, and an unsupported format is the error's text.
fn doc_values_unsupported(seg: &lucene::SegmentReader) -> Option<String> {
    if seg.lucene_version().major >= 7 {
        return None;
    }
    let field = seg
        .field_infos()
        .iter()
        .find(|f| f.doc_values_type != lucene::DocValuesType::None)?;
    match seg.doc_values().field(&field.name) {
        Err(e @ lucene::Error::Unsupported { .. }) => Some(e.to_string()),
        _ => None,
    }
}

/// Why a document's `_id` cannot be known.
#[derive(Debug, thiserror::Error)]
enum DocIdError {
    /// The stored binary `_id` does not decode.
    #[error(transparent)]
    Stored(#[from] crate::document::IdError),
    /// An ES ≤ 6 `_uid` (as stored) without the `#` between type and id.
    #[error("_uid {0:?} has no '#'")]
    Uid(String),
    #[error("document has _source but no _id")]
    NoId,
}

/// A stored value kept beside doc values for synthetic source that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("stored field {field}")]
struct StoredFieldError {
    field: String,
    #[source]
    source: ignored_source::ValueError,
}

/// Where `_type` comes from.
#[derive(Debug, Clone)]
enum TypeRule {
    /// ES 7+: no types.
    None,
    /// ES ≤ 6: from `_uid` when present, else this (the index's single mapping type).
    Legacy(Option<String>),
}

impl TypeRule {
    /// `(mapping type, _id)` from a document's stored `_uid` / `_id`; `None` when it has
    /// neither (a nested child, a no-op tombstone).
    fn identity(
        &self,
        uid: Option<String>,
        id: Option<std::result::Result<String, DocIdError>>,
    ) -> Option<(Option<String>, std::result::Result<String, DocIdError>)> {
        match (uid, id) {
            (Some(uid), _) => Some(match split_uid(&uid) {
                Some((t, i)) => (Some(t.to_string()), Ok(i.to_string())),
                None => (None, Err(DocIdError::Uid(uid))),
            }),
            (None, Some(id)) => {
                let t = match self {
                    TypeRule::None => None,
                    TypeRule::Legacy(t) => t.clone(),
                };
                Some((t, id))
            }
            (None, None) => None,
        }
    }
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
    /// Check the CRC-32 of every shard file the documents come from (default: on).
    /// Small files are checked when opened; each segment's stored fields (`.fdt`, also
    /// inside a `.cfs`) whole before the first document of that segment comes out, however
    /// little of the segment a walk covers. A mismatch is an error naming the file, its
    /// blob and the shard. See [`lucene::OpenOptions::verify_checksums`].
    pub verify_checksums: bool,
    /// Files already found good (shared by the readers of one run, so a shard read in
    /// several items is checked once); `None`: the reader's own.
    pub verified: Option<Arc<lucene::VerifiedFiles>>,
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
            verified: None,
            verify_all_files_first: false,
            rebuild: RebuildOptions::default(),
        }
    }
}

/// A shard opened for reading documents.
pub struct ShardReader {
    shard: Shard,
    index: Arc<str>,
    /// `<index> shard <n> (<shard dir>)`, for errors.
    context: String,
    reader: IndexReader,
    types: TypeRule,
    rebuild: RebuildOptions,
    /// Where rebuilt `_source` fields come from (with `RebuildMode::Auto`).
    plan: Option<Arc<SourcePlan>>,
    /// How this index lays out `_ignored_source` (`None`: unknown creation version).
    ignored_layout: Option<IgnoredSourceLayout>,
    /// The index's vector fields, put back where `_source` lacks them.
    vector_plan: Option<Arc<crate::vectors::VectorPlan>>,
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
            verified: options.verified.clone(),
        };
        let dir: Arc<dyn lucene::Directory> = shard.directory().clone();
        let reader = IndexReader::open(dir, &opts).map_err(|source| Error::Lucene {
            context: context.clone(),
            source,
        })?;
        let created = md.created_version();
        let types = match created {
            Some(v) if !v.es_before(7) => TypeRule::None,
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
        let ignored_layout = IgnoredSourceLayout::for_index_version(
            md.setting("index.version.created")
                .and_then(|s| s.parse::<u64>().ok()),
        );
        Ok(ShardReader {
            shard: shard.clone(),
            index: Arc::from(index.name()),
            context,
            reader,
            types,
            rebuild: options.rebuild,
            plan,
            ignored_layout,
            vector_plan: crate::vectors::VectorPlan::from_metadata(md).map(Arc::new),
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

    /// Live documents (nested children included) whose shard-global doc id lies in
    /// `range`: what a walk over `range` must account for, one by one.
    pub fn live_in(&self, range: Range<u64>) -> u64 {
        let mut n = 0u64;
        for seg in self.reader.segments() {
            let (base, max) = (seg.doc_base(), u64::from(seg.max_doc()));
            let from = range.start.clamp(base, base + max) - base;
            let to = range.end.clamp(base, base + max) - base;
            if from >= to {
                continue;
            }
            if from == 0 && to == max {
                n += u64::from(seg.live_count());
                continue;
            }
            let mut d = from as u32;
            while let Some(live) = seg.next_live(d) {
                if u64::from(live) >= to {
                    break;
                }
                n += 1;
                d = live + 1;
            }
        }
        n
    }

    /// The segment (index in [`IndexReader::segments`]) and segment-local doc id of
    /// shard-global `doc`.
    fn locate(&self, doc: u64) -> (usize, u32) {
        let segments = self.reader.segments();
        let i = segments.partition_point(|s| s.doc_base() + u64::from(s.max_doc()) <= doc);
        let local = segments.get(i).map_or(0, |s| (doc - s.doc_base()) as u32);
        (i, local)
    }

    /// The Lucene reader.
    pub fn lucene(&self) -> &IndexReader {
        &self.reader
    }

    /// The shard this reader reads (its file list and directory).
    pub fn shard(&self) -> &Shard {
        &self.shard
    }

    /// `<index> shard <n> (<shard dir>)`, for messages.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// Every value of the NUMERIC doc-values field `field` (`_seq_no`) of segment `seg`
    /// (by position in [`IndexReader::segments`]); `None` when the segment has no such
    /// field.
    pub fn numeric_values(&self, seg: usize, field: &str) -> Result<Option<NumericValues>> {
        let segment =
            self.reader.segments().get(seg).ok_or_else(|| {
                Error::Config(format!("{}: no segment number {seg}", self.context))
            })?;
        lucene::read_numeric_values(segment, field).map_err(|source| Error::Lucene {
            context: self.context.clone(),
            source,
        })
    }

    /// The documents of `selection` (one set per segment), live or not, in doc-id order,
    /// as [`ShardReader::documents`] turns them into Elasticsearch documents.
    pub fn selected_documents<'a>(&'a self, selection: &'a Selection) -> ShardDocuments<'a> {
        ShardDocuments {
            reader: self,
            inner: self.reader.selected(selection),
            visitor: Fields {
                plan: self.plan.clone(),
                ..Fields::default()
            },
            stats: ShardStats::default(),
            skipped: Vec::new(),
            done: false,
            deliver: None,
            keys: Vec::new(),
            rebuild: RebuildState::default(),
            vectors: Default::default(),
        }
    }

    /// One walk over the documents of `walk` (live or not), in doc-id order: those also in
    /// `deliver` come out as [`ShardReader::selected_documents`] gives them; of the others
    /// only the identity is kept ([`ShardDocuments::take_keys`], as [`ShardReader::keys`] gives
    /// it: documents without an `_id` passed over, an undecodable `_id` an error) — they
    /// are neither counted nor logged as skipped. Their stored-fields chunks are read once.
    pub fn documents_and_keys<'a>(
        &'a self,
        walk: &'a Selection,
        deliver: &'a Selection,
    ) -> ShardDocuments<'a> {
        ShardDocuments {
            deliver: Some(deliver),
            ..self.selected_documents(walk)
        }
    }

    /// Whether `selection` holds the document of shard-global doc id `doc`.
    pub fn contains(&self, selection: &Selection, doc: u64) -> bool {
        let segments = self.reader.segments();
        let i = segments.partition_point(|s| s.doc_base() <= doc);
        let Some(seg) = i.checked_sub(1) else {
            return false;
        };
        let local = doc - segments[seg].doc_base();
        u32::try_from(local)
            .ok()
            .and_then(|d| selection.segment(seg).map(|s| s.contains(d)))
            .unwrap_or(false)
    }

    /// The documents of `selection` whose shard-global doc id is in `range`.
    pub fn restrict(&self, selection: &Selection, range: Range<u64>) -> Selection {
        let sets = selection
            .sets()
            .iter()
            .zip(self.reader.segments())
            .map(|(set, seg)| {
                let base = seg.doc_base();
                let mut out = lucene::DocSet::empty(set.max_doc());
                for d in set.iter() {
                    if range.contains(&(base + u64::from(d))) {
                        out.insert(d);
                    }
                }
                out
            })
            .collect();
        Selection::new(sets)
    }

    /// The identity (`_id`, `_type`, `_routing`) of the documents of `selection`, live or
    /// not, in doc-id order, without decoding `_source`. Documents without an `_id` (nested
    /// children, no-op tombstones) are passed over; an undecodable `_id` is an error.
    pub fn keys<'a>(&'a self, selection: &'a Selection) -> Keys<'a> {
        Keys {
            reader: self,
            inner: self.reader.selected(selection),
        }
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
                doc_values_fields: doc_values_fields(s),
                doc_values_unsupported: doc_values_unsupported(s),
                vector_fields: crate::vectors::summarize(s),
            })
            .collect()
    }

    /// Live documents whose shard-global doc id is in `range`, in order.
    pub fn documents(&self, range: Range<u64>) -> Result<ShardDocuments<'_>> {
        let inner = self
            .reader
            .documents(range)
            .map_err(|source| Error::Lucene {
                context: self.context.clone(),
                source,
            })?;
        Ok(ShardDocuments {
            reader: self,
            inner,
            visitor: Fields {
                plan: self.plan.clone(),
                ..Fields::default()
            },
            stats: ShardStats::default(),
            skipped: Vec::new(),
            done: false,
            deliver: None,
            keys: Vec::new(),
            rebuild: RebuildState::default(),
            vectors: Default::default(),
        })
    }
}

/// The stored fields of one document that matter.
#[derive(Default)]
struct Fields {
    id: Option<std::result::Result<String, DocIdError>>,
    uid: Option<String>,
    routing: Option<String>,
    /// `_source` already normalised: a share of the decompressed chunk when it is
    /// single-line JSON (no copy), else the converted bytes.
    source: Option<std::result::Result<bytes::Bytes, crate::document::SourceBytesError>>,
    recovery_source: Option<bytes::Bytes>,
    /// Stored fields the rebuild plan reads, in stored order.
    stored: Vec<(String, serde_json::Value)>,
    /// Values Elasticsearch keeps beside doc values for synthetic source
    /// (`<field>._original`, `<field>._ignore_malformed`), by JSON path, in stored order;
    /// an error for a value that does not decode.
    fallback: Vec<(
        String,
        std::result::Result<Option<serde_json::Value>, StoredFieldError>,
    )>,
    /// The raw values of `_ignored_source`, in stored order.
    ignored: Vec<Vec<u8>>,
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
        self.fallback.clear();
        self.ignored.clear();
    }
}

/// Collects the fields of one document into the reused [`Fields`].
struct Visitor<'a> {
    f: &'a mut Fields,
}

impl StoredFieldVisitor for Visitor<'_> {
    fn field(&mut self, field: &FieldInfo, value: StoredValue<'_>) -> lucene::Result<()> {
        self.visit(field, value, None)
    }

    fn field_in(
        &mut self,
        field: &FieldInfo,
        value: StoredValue<'_>,
        chunk: &bytes::Bytes,
    ) -> lucene::Result<()> {
        self.visit(field, value, Some(chunk))
    }
}

impl Visitor<'_> {
    /// One stored field; `chunk`: what its bytes are a slice of, to share `_source` from.
    fn visit(
        &mut self,
        field: &FieldInfo,
        value: StoredValue<'_>,
        chunk: Option<&bytes::Bytes>,
    ) -> lucene::Result<()> {
        match (field.name.as_str(), value) {
            ("_id", StoredValue::Binary(b)) => {
                self.f.id = Some(decode_id(b).map_err(DocIdError::from))
            }
            ("_id", StoredValue::String(s)) => self.f.id = Some(Ok(s.to_string())),
            ("_uid", StoredValue::String(s)) => self.f.uid = Some(s.to_string()),
            ("_routing", StoredValue::String(s)) => self.f.routing = Some(s.to_string()),
            ("_source", StoredValue::Binary(b)) => {
                self.f.source = Some(normalize_source_in(b, chunk));
            }
            ("_recovery_source", StoredValue::Binary(b)) => {
                self.f.recovery_source = Some(bytes::Bytes::copy_from_slice(b));
            }
            (name, value) => {
                let Some(plan) = self.f.plan.as_ref() else {
                    return Ok(());
                };
                if name == ignored_source::FIELD {
                    if let StoredValue::Binary(b) = value {
                        self.f.ignored.push(b.to_vec());
                    }
                } else if plan.reads_stored(name) {
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
                } else if let Some((path, kind)) = plan.fallback_path(name) {
                    let v =
                        rebuild::fallback_value(kind, value).map_err(|source| StoredFieldError {
                            field: name.to_string(),
                            source,
                        });
                    let path = path.to_string();
                    self.f.fallback.push((path, v));
                }
            }
        }
        Ok(())
    }
}

/// What identifies a document on a target: its `_id`, mapping type and routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocKey {
    pub global_doc_id: u64,
    pub id: String,
    pub doc_type: Option<String>,
    pub routing: Option<String>,
}

/// Iterator over the keys of selected documents; see [`ShardReader::keys`].
pub struct Keys<'a> {
    reader: &'a ShardReader,
    inner: lucene::Documents<'a>,
}

/// Collects `_id`, `_uid` and `_routing` only.
#[derive(Default)]
struct KeyFields {
    id: Option<std::result::Result<String, DocIdError>>,
    uid: Option<String>,
    routing: Option<String>,
}

impl StoredFieldVisitor for KeyFields {
    fn field(&mut self, field: &FieldInfo, value: StoredValue<'_>) -> lucene::Result<()> {
        match (field.name.as_str(), value) {
            ("_id", StoredValue::Binary(b)) => {
                self.id = Some(decode_id(b).map_err(DocIdError::from))
            }
            ("_id", StoredValue::String(s)) => self.id = Some(Ok(s.to_string())),
            ("_uid", StoredValue::String(s)) => self.uid = Some(s.to_string()),
            ("_routing", StoredValue::String(s)) => self.routing = Some(s.to_string()),
            _ => {}
        }
        Ok(())
    }
}

impl Iterator for Keys<'_> {
    type Item = Result<DocKey>;

    fn next(&mut self) -> Option<Result<DocKey>> {
        loop {
            let mut f = KeyFields::default();
            let doc = match self.inner.next(&mut f) {
                Ok(Some(d)) => d,
                Ok(None) => return None,
                Err(source) => {
                    return Some(Err(Error::Lucene {
                        context: self.reader.context.clone(),
                        source,
                    }))
                }
            };
            let Some((doc_type, id)) = self.reader.types.identity(f.uid, f.id) else {
                continue;
            };
            return Some(key(self.reader, doc, doc_type, id, f.routing));
        }
    }
}

/// The key of document `doc`, or the error of its undecodable `_id`.
fn key(
    reader: &ShardReader,
    doc: u64,
    doc_type: Option<String>,
    id: std::result::Result<String, DocIdError>,
    routing: Option<String>,
) -> Result<DocKey> {
    match id {
        Ok(id) => Ok(DocKey {
            global_doc_id: doc,
            id,
            doc_type,
            routing,
        }),
        Err(e) => Err(Error::corrupt(
            &reader.context,
            format!("document {doc}: {}", redact::Chain(&e)),
        )),
    }
}

/// Iterator over the documents of a range of a shard. Stops after the first error.
pub struct ShardDocuments<'a> {
    reader: &'a ShardReader,
    inner: lucene::Documents<'a>,
    visitor: Fields,
    stats: ShardStats,
    skipped: Vec<SkippedDocument>,
    done: bool,
    /// With [`ShardReader::documents_and_keys`]: the documents to produce; the others
    /// walked give only their key, into `keys`.
    deliver: Option<&'a Selection>,
    keys: Vec<DocKey>,
    rebuild: RebuildState,
    vectors: crate::vectors::VectorState,
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
    /// The decoded `_ignored_source` of the document being rebuilt.
    entries: Vec<ignored_source::IgnoredValue>,
}

impl ShardDocuments<'_> {
    /// Counts so far.
    pub fn stats(&self) -> &ShardStats {
        &self.stats
    }

    /// Skipped documents (other than nested children) since the last call. Read with
    /// [`ShardDocuments::step`], every one is here (the list holds at most 10,000: `step` says
    /// when to take it); read as an iterator, at most 10,000 are kept between calls, all
    /// are counted in [`ShardDocuments::stats`].
    pub fn take_skipped(&mut self) -> Vec<SkippedDocument> {
        std::mem::take(&mut self.skipped)
    }

    /// With [`ShardReader::documents_and_keys`]: the keys of the documents walked outside
    /// `deliver` since the last call, in doc-id order (all of them, none dropped).
    pub fn take_keys(&mut self) -> Vec<DocKey> {
        std::mem::take(&mut self.keys)
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
                match normalize_source_in(&r, Some(&r)) {
                    Ok(s) => {
                        self.stats.recovery_source += 1;
                        return Ok(Ok(s));
                    }
                    Err(e) => {
                        return Ok(Err((
                            SkipReason::BadSource,
                            format!("_recovery_source: {}", redact::Chain(&e)),
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
        let local = (global - seg.doc_base()) as u32;
        // where a bad stored value of this document is: the segment's stored-fields file
        let file = || {
            format!(
                "{}: segment {} stored fields ({}.{}), document {local}",
                self.reader.context,
                seg.name(),
                seg.name(),
                if seg.is_compound() { "cfs" } else { "fdt" }
            )
        };
        st.entries.clear();
        for raw in &self.visitor.ignored {
            if let Err(e) =
                ignored_source::decode_stored(raw, self.reader.ignored_layout, &mut st.entries)
            {
                return Ok(Err((
                    SkipReason::BadSource,
                    format!("{}: {}: {e}", file(), ignored_source::FIELD),
                )));
            }
        }
        if let Some((_, Err(e))) = self.visitor.fallback.iter().find(|(_, v)| v.is_err()) {
            return Ok(Err((
                SkipReason::BadSource,
                format!("{}: {}", file(), redact::Chain(e)),
            )));
        }
        // a field the segment has but doc values cannot give is only complete when
        // _ignored_source holds it (or an object above it) for this document
        let lost: Vec<&str> = st
            .lost
            .iter()
            .map(String::as_str)
            .filter(|p| !ignored_source::covers(&st.entries, p))
            .collect();
        if !lost.is_empty() && !opts.allow_partial {
            return Ok(Err((
                SkipReason::PartialSource,
                format!(
                    "no _source, and these fields cannot be rebuilt (no doc values, not stored, not in _ignored_source): {}",
                    lost.join(", ")
                ),
            )));
        }
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
            let has_values = match st.cursors.get_mut(cursor) {
                Some((ci, c)) if *ci == i => c.read(local, &mut st.value)?,
                _ => false,
            };
            if has_values {
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
            // values synthetic source keeps beside the doc values come after them
            for (path, v) in &self.visitor.fallback {
                if *path == f.path {
                    if let Ok(Some(v)) = v {
                        st.fields.push(&f.path, v.clone());
                    }
                }
            }
        }
        let mut json = st.fields.to_json();
        if let serde_json::Value::Object(root) = &mut json {
            ignored_source::merge(root, &st.entries);
        }
        self.stats.rebuilt += 1;
        Ok(Ok(bytes::Bytes::from(
            serde_json::to_vec(&json).expect("a JSON value serializes"),
        )))
    }

    /// `source` with the vectors `_source` lacks put back (see [`crate::vectors`]).
    fn restore_vectors(
        &mut self,
        global: u64,
        children: &[u32],
        source: bytes::Bytes,
    ) -> lucene::Result<std::result::Result<bytes::Bytes, crate::vectors::Refusal>> {
        let Some(plan) = self.reader.vector_plan.as_deref() else {
            return Ok(Ok(source));
        };
        let (seg_index, local) = self.reader.locate(global);
        let Some(seg) = self.reader.reader.segments().get(seg_index) else {
            return Ok(Ok(source));
        };
        let before = source.as_ptr();
        let out = self.vectors.restore(
            plan,
            &self.reader.index,
            seg,
            seg_index,
            local,
            children,
            source,
        )?;
        // an unchanged source comes back as the same bytes
        if matches!(&out, Ok(s) if s.as_ptr() != before) {
            self.stats.vectors_restored += 1;
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn skip(
        &mut self,
        global_doc_id: u64,
        id: Option<String>,
        doc_type: Option<String>,
        routing: Option<String>,
        reason: SkipReason,
        detail: String,
    ) {
        match reason {
            SkipReason::Nested => {
                self.stats.nested_skipped += 1;
                return;
            }
            SkipReason::NoSource => self.stats.without_source += 1,
            SkipReason::BadSource => self.stats.bad_source += 1,
            SkipReason::BadId => self.stats.bad_id += 1,
            SkipReason::PartialSource => self.stats.partial_source += 1,
            SkipReason::VectorUnreadable => self.stats.vector_unreadable += 1,
        }
        tracing::warn!(
            index = %self.reader.index,
            doc = global_doc_id,
            id = id.as_deref().unwrap_or(""),
            reason = reason.as_str(),
            "{detail}"
        );
        // `step` hands the list out before it grows past the limit
        self.skipped.push(SkippedDocument {
            global_doc_id,
            id,
            doc_type,
            routing,
            reason,
            detail,
        });
    }
}

impl Iterator for ShardDocuments<'_> {
    type Item = Result<EsDocument>;

    fn next(&mut self) -> Option<Result<EsDocument>> {
        loop {
            match self.step()? {
                Ok(Step::Doc(d)) => return Some(Ok(d)),
                Ok(Step::SkipsFull) => self.skipped.truncate(MAX_SKIPPED_KEPT - 1),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl ShardDocuments<'_> {
    /// The next document, or [`Step::SkipsFull`] when the skipped documents should be
    /// taken first; `None` at the end. Stops after the first error.
    pub fn step(&mut self) -> Option<Result<Step>> {
        loop {
            if self.done {
                return None;
            }
            if self.skipped.len() >= MAX_SKIPPED_KEPT {
                return Some(Ok(Step::SkipsFull));
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
            let identity = self.reader.types.identity(uid, stored_id);
            // a root document: the nested children walked since the last one are its own
            let children =
                if self.reader.vector_plan.is_some() && (identity.is_some() || has_source) {
                    let (seg_index, _) = self.reader.locate(doc);
                    self.vectors.take_children(seg_index)
                } else {
                    Vec::new()
                };
            if self
                .deliver
                .is_some_and(|deliver| !self.reader.contains(deliver, doc))
            {
                let Some((doc_type, id)) = identity else {
                    continue;
                };
                match key(self.reader, doc, doc_type, id, routing) {
                    Ok(k) => self.keys.push(k),
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            let (doc_type, id) = match identity {
                Some(identity) => identity,
                None if !has_source => {
                    if self.reader.vector_plan.is_some() {
                        let (seg_index, local) = self.reader.locate(doc);
                        self.vectors.note_child(seg_index, local);
                    }
                    self.skip(doc, None, None, None, SkipReason::Nested, String::new());
                    continue;
                }
                None => (None, Err(DocIdError::NoId)),
            };
            let id = match id {
                Ok(id) => id,
                Err(e) => {
                    let e = redact::chain(&e);
                    self.skip(doc, None, None, routing, SkipReason::BadId, e);
                    continue;
                }
            };
            let normalized = match self.visitor.source.take() {
                Some(n) => n,
                None => match self.without_source(doc) {
                    Ok(Ok(s)) => Ok(s),
                    Ok(Err((reason, detail))) => {
                        self.skip(doc, Some(id), doc_type, routing, reason, detail);
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
                    let e = redact::chain(&e);
                    self.skip(doc, Some(id), doc_type, routing, SkipReason::BadSource, e);
                    continue;
                }
            };
            let source = match self.restore_vectors(doc, &children, source) {
                Ok(Ok(s)) => s,
                Ok(Err(why)) => {
                    self.skip(
                        doc,
                        Some(id),
                        doc_type,
                        routing,
                        SkipReason::VectorUnreadable,
                        redact::chain(&why),
                    );
                    continue;
                }
                Err(source) => {
                    self.done = true;
                    return Some(Err(Error::Lucene {
                        context: self.reader.context.clone(),
                        source,
                    }));
                }
            };
            self.stats.documents += 1;
            self.stats.source_bytes += source.len() as u64;
            return Some(Ok(Step::Doc(EsDocument {
                id,
                doc_type,
                routing,
                source,
                global_doc_id: doc,
            })));
        }
    }
}
