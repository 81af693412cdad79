//! The index reader: the latest commit, its segments in generation order, and the live
//! documents of the whole index in shard-global doc-id order.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use crate::codec_util::{self, ID_LEN};
use crate::commit::{self, CommitInfo, SegmentCommitInfo};
use crate::compound;
use crate::directory::{Directory, FileSlice};
use crate::doc_set::Selection;
use crate::doc_values;
use crate::error::{Error, Result};
use crate::field_infos::{self, DocValuesType, FieldInfo, FieldInfos};
use crate::live_docs::{self, LiveDocs};
use crate::names;
use crate::segment_info::{self, SegmentInfo};
use crate::stored_fields::{StoredFieldsCursor, StoredFieldsReader, StoredValue, VerifiedFiles};
use crate::version::LuceneVersion;

/// How to open an index.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The NUMERIC doc-values field that marks soft-deleted documents (Elasticsearch and
    /// OpenSearch: `__soft_deletes`). `None`: only hard deletes are applied.
    pub soft_deletes_field: Option<String>,
    /// Check the CRC-32 of the large files (default: on). Files read whole on open
    /// (`segments_N`, `.si`, `.fnm`, `.liv`, `.cfe`, `.fdx`, `.fdm`, `.dvm`) are always
    /// checked. With this on, the soft-deletes `.dvd` is checked on open when it is at
    /// most [`DOC_VALUES_VERIFY_MAX`] bytes or a doc-values update file, and every walk
    /// ([`IndexReader::documents`], [`IndexReader::selected`]) checks the whole CRC-32 of
    /// a segment's `.fdt` before it gives the first document of that segment, whatever
    /// part of the segment it covers: no document of a damaged `.fdt` ever comes out, the
    /// walk fails with [`Error::Checksum`] naming the file instead. Each file is checked
    /// once per [`OpenOptions::verified`] set.
    pub verify_checksums: bool,
    /// Files already found good, shared between readers of files that cannot change
    /// (one snapshot): a shard read as several items is checked once. `None`: a set of
    /// this reader's own.
    pub verified: Option<Arc<VerifiedFiles>>,
}

/// Largest base `.dvd` whose CRC-32 is checked on open when it holds the soft-deletes
/// field (an update file, which holds only that field, is always checked).
pub const DOC_VALUES_VERIFY_MAX: u64 = 16 << 20;

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            soft_deletes_field: None,
            verify_checksums: true,
            verified: None,
        }
    }
}

impl OpenOptions {
    /// Options with the soft-deletes field Elasticsearch and OpenSearch use, checksums on.
    pub fn elasticsearch() -> Self {
        OpenOptions {
            soft_deletes_field: Some("__soft_deletes".to_string()),
            verify_checksums: true,
            verified: None,
        }
    }
}

/// Receives the stored fields of one document, in stored order.
pub trait StoredFieldVisitor {
    fn field(&mut self, field: &FieldInfo, value: StoredValue<'_>) -> Result<()>;

    /// What the reader calls: [`field`](Self::field) with the decompressed chunk a `Binary`
    /// value is a slice of. A visitor that keeps a value can take it as
    /// `chunk.slice_ref(value)` (no copy); the chunk is only borrowed for the call, so a
    /// document that keeps nothing costs no reference count.
    fn field_in(
        &mut self,
        field: &FieldInfo,
        value: StoredValue<'_>,
        _chunk: &Bytes,
    ) -> Result<()> {
        self.field(field, value)
    }
}

impl<F> StoredFieldVisitor for F
where
    F: FnMut(&FieldInfo, StoredValue<'_>) -> Result<()>,
{
    fn field(&mut self, field: &FieldInfo, value: StoredValue<'_>) -> Result<()> {
        self(field, value)
    }
}

/// An open index: one commit and its segments.
#[derive(Debug)]
pub struct IndexReader {
    commit: CommitInfo,
    segments: Vec<SegmentReader>,
    max_doc: u64,
    num_live_docs: u64,
    verify_checksums: bool,
    verified: Arc<VerifiedFiles>,
}

impl IndexReader {
    /// Opens the latest commit (`segments_N` with the highest N) of `dir`.
    pub fn open(dir: Arc<dyn Directory>, opts: &OpenOptions) -> Result<IndexReader> {
        let commit = commit::read_latest_commit(dir.as_ref())?;
        let mut order: Vec<usize> = (0..commit.segments.len()).collect();
        order.sort_by_key(|&i| (names::segment_counter(&commit.segments[i].name), i));
        let mut segments = Vec::with_capacity(order.len());
        let mut doc_base = 0u64;
        let verified = opts.verified.clone().unwrap_or_default();
        for i in order {
            let seg =
                SegmentReader::open(&dir, &commit.segments[i], doc_base, opts, verified.clone())?;
            doc_base += u64::from(seg.max_doc());
            segments.push(seg);
        }
        if opts.soft_deletes_field.is_none() {
            if let Some(f) = segments
                .iter()
                .find_map(|s| s.field_infos.soft_deletes_field())
            {
                tracing::warn!(
                    commit = %commit.file_name,
                    field = %f.name,
                    "the index declares soft-deletes field {:?} but no soft-deletes field was given; soft-deleted documents will be read as live",
                    f.name
                );
            }
        }
        let num_live_docs = segments.iter().map(|s| u64::from(s.live_count())).sum();
        Ok(IndexReader {
            commit,
            segments,
            max_doc: doc_base,
            num_live_docs,
            verify_checksums: opts.verify_checksums,
            verified,
        })
    }

    /// The commit that was opened.
    pub fn commit(&self) -> &CommitInfo {
        &self.commit
    }

    /// Segments in generation order (by the counter in their names), each with its doc base.
    pub fn segments(&self) -> &[SegmentReader] {
        &self.segments
    }

    /// Documents in all segments, deleted ones included.
    pub fn max_doc(&self) -> u64 {
        self.max_doc
    }

    /// Documents neither hard- nor soft-deleted.
    pub fn num_live_docs(&self) -> u64 {
        self.num_live_docs
    }

    /// Live documents whose shard-global doc id lies in `range`, in order. With
    /// [`OpenOptions::verify_checksums`], the `.fdt` of every segment the range reaches
    /// is checked whole before its first document (see there).
    pub fn documents(&self, range: Range<u64>) -> Result<Documents<'_>> {
        let end = range.end.min(self.max_doc);
        let start = range.start.min(end);
        let seg = self
            .segments
            .partition_point(|s| s.doc_base + u64::from(s.max_doc()) <= start);
        let next_doc = self
            .segments
            .get(seg)
            .map_or(0, |s| (start - s.doc_base) as u32);
        Ok(Documents {
            reader: self,
            seg,
            next_doc,
            end,
            cursor: None,
            select: None,
        })
    }

    /// The documents of `selection` (one set per segment, in [`IndexReader::segments`]
    /// order), live or not, in shard-global doc-id order. Stored fields are read only for
    /// the chunks that hold selected documents; with [`OpenOptions::verify_checksums`]
    /// the `.fdt` of a segment is checked whole before its first document.
    pub fn selected<'a>(&'a self, selection: &'a Selection) -> Documents<'a> {
        Documents {
            reader: self,
            seg: 0,
            next_doc: 0,
            end: self.max_doc,
            cursor: None,
            select: Some(selection),
        }
    }

    /// Verifies the CRC-32 of every large file the reader uses (small ones were verified
    /// on open).
    pub fn verify_checksums(&self) -> Result<()> {
        for s in &self.segments {
            s.verify_checksums()?;
        }
        Ok(())
    }
}

/// Iterator over live documents; see [`IndexReader::documents`].
pub struct Documents<'a> {
    reader: &'a IndexReader,
    seg: usize,
    next_doc: u32,
    end: u64,
    cursor: Option<StoredFieldsCursor<'a>>,
    /// Walk these documents instead of the live ones.
    select: Option<&'a Selection>,
}

impl Documents<'_> {
    /// The next live document: its shard-global doc id, after passing each of its stored
    /// fields to `visitor`. `None` at the end of the range.
    pub fn next(&mut self, visitor: &mut dyn StoredFieldVisitor) -> Result<Option<u64>> {
        let reader = self.reader;
        loop {
            let Some(seg) = reader.segments.get(self.seg) else {
                return Ok(None);
            };
            if seg.doc_base >= self.end {
                return Ok(None);
            }
            let local_end = (self.end - seg.doc_base).min(u64::from(seg.max_doc())) as u32;
            let next = match self.select {
                Some(sel) => sel.next(self.seg, self.next_doc),
                None => seg.next_live(self.next_doc),
            };
            match next {
                Some(doc) if doc < local_end => {
                    if let Some(stored) = &seg.stored_fields {
                        if self.cursor.is_none() && reader.verify_checksums {
                            // before any document of the segment comes out
                            stored.verify_data(&reader.verified)?;
                        }
                        let cursor = self.cursor.get_or_insert_with(|| stored.cursor());
                        let fields = &seg.field_infos;
                        let fdt = &seg.fdt_name;
                        cursor.visit_in(doc, &mut |number, value, chunk| match fields
                            .by_number(number)
                        {
                            Some(info) => visitor.field_in(info, value, chunk),
                            None => Err(Error::corrupt(
                                fdt.as_str(),
                                format!(
                                    "doc {doc} has a stored field with unknown number {number}"
                                ),
                            )),
                        })?;
                    }
                    self.next_doc = doc + 1;
                    return Ok(Some(seg.doc_base + u64::from(doc)));
                }
                _ => {
                    self.cursor = None;
                    self.seg += 1;
                    self.next_doc = 0;
                }
            }
        }
    }
}

/// One segment of the commit, opened.
#[derive(Debug)]
pub struct SegmentReader {
    commit_info: SegmentCommitInfo,
    info: SegmentInfo,
    doc_base: u64,
    dir: Arc<dyn Directory>,
    field_infos: FieldInfos,
    /// `None` when every document is live.
    live_docs: Option<LiveDocs>,
    live_count: u32,
    soft_deleted: u32,
    stored_fields: Option<StoredFieldsReader>,
    fdt_name: String,
    /// The compound data file, when compound.
    cfs: Option<FileSlice>,
    /// The index directory (doc-values and field-infos update files live there).
    index_dir: Arc<dyn Directory>,
    /// The effective `.fnm`, for errors.
    fnm_name: String,
    verify_checksums: bool,
    /// Files found good (shared with the index reader and its siblings).
    verified: Arc<VerifiedFiles>,
}

impl SegmentReader {
    fn open(
        index_dir: &Arc<dyn Directory>,
        sci: &SegmentCommitInfo,
        doc_base: u64,
        opts: &OpenOptions,
        verified: Arc<VerifiedFiles>,
    ) -> Result<SegmentReader> {
        let name = sci.name.as_str();
        let si_file = index_dir.open_file(&names::segment_file_name(name, "", "si"))?;
        let si_bytes = si_file.read_all()?;
        let info = segment_info::parse_segment_info(si_file.name(), &si_bytes, &sci.id)?;
        let max_doc = info.max_doc;
        if u64::from(sci.del_count) + u64::from(sci.soft_del_count) > u64::from(max_doc) {
            return Err(Error::corrupt(
                si_file.name(),
                format!(
                    "segment {name} has {max_doc} docs but the commit counts {} hard and {} soft deletes",
                    sci.del_count, sci.soft_del_count
                ),
            ));
        }

        let dir: Arc<dyn Directory> = if info.is_compound && sci.lucene4 {
            Arc::new(compound::open_compound_4x(index_dir.as_ref(), name)?)
        } else if info.is_compound {
            Arc::new(compound::open_compound(index_dir.as_ref(), name, &sci.id)?)
        } else {
            index_dir.clone()
        };

        // Field infos: the segment's own, or the latest update generation.
        let (fnm_dir, fnm_suffix) = if sci.field_infos_gen == -1 {
            (dir.as_ref(), String::new())
        } else {
            (
                index_dir.as_ref(),
                names::base36(sci.field_infos_gen as u64),
            )
        };
        let fnm = fnm_dir.open_file(&names::segment_file_name(name, &fnm_suffix, "fnm"))?;
        let fnm_bytes = fnm.read_all()?;
        let field_infos =
            field_infos::parse_field_infos(fnm.name(), &fnm_bytes, &sci.id, &fnm_suffix)?;

        // Hard deletes.
        let mut live_docs = if sci.del_gen == -1 {
            None
        } else if sci.lucene4 {
            let suffix = names::base36(sci.del_gen as u64);
            let del = index_dir.open_file(&names::segment_file_name(name, &suffix, "del"))?;
            let bytes = del.read_all()?;
            Some(live_docs::parse_bit_vector(
                del.name(),
                &bytes,
                max_doc,
                sci.del_count,
            )?)
        } else {
            let suffix = names::base36(sci.del_gen as u64);
            let liv = index_dir.open_file(&names::segment_file_name(name, &suffix, "liv"))?;
            let bytes = liv.read_all()?;
            Some(live_docs::parse_live_docs(
                liv.name(),
                &bytes,
                &sci.id,
                &suffix,
                max_doc,
                sci.del_count,
            )?)
        };

        // Soft deletes: docs with a value for the soft-deletes field.
        let mut soft_deleted = 0u32;
        if let Some(field) = opts
            .soft_deletes_field
            .as_deref()
            .and_then(|f| field_infos.by_name(f))
        {
            match field.doc_values_type {
                DocValuesType::None => {}
                DocValuesType::Numeric => {
                    let verify = opts.verify_checksums
                        && (field.doc_values_gen != -1
                            || dvd_len(dir.as_ref(), name, fnm.name(), field)?
                                <= DOC_VALUES_VERIFY_MAX);
                    let docs = doc_values::open_numeric_docs_with_field(
                        dir.as_ref(),
                        index_dir.as_ref(),
                        name,
                        &sci.id,
                        fnm.name(),
                        &field_infos,
                        field,
                        verify,
                    )?;
                    let live = live_docs.get_or_insert_with(|| LiveDocs::all(max_doc));
                    docs.for_each_doc(max_doc, |doc| {
                        if live.delete(doc) {
                            soft_deleted += 1;
                        }
                    })?;
                }
                other => {
                    return Err(Error::unsupported(
                        fnm.name(),
                        format!(
                            "soft-deletes field {:?} has {other:?} doc values, expected NUMERIC",
                            field.name
                        ),
                    ))
                }
            }
            if soft_deleted != sci.soft_del_count {
                tracing::warn!(
                    segment = name,
                    from_doc_values = soft_deleted,
                    from_commit = sci.soft_del_count,
                    "soft-deleted document count differs from the commit's; using the doc values"
                );
            }
        }
        let live_count = live_docs.as_ref().map_or(max_doc, |l| l.count());

        // Stored fields: present unless the segment has none at all.
        let fdt_file = names::segment_file_name(name, "", "fdt");
        let has_fdt = if info.is_compound {
            dir.exists(&fdt_file)?
        } else {
            info.files.contains(&fdt_file)
        };
        let (stored_fields, fdt_name) = if has_fdt {
            let fdt_name = dir.open_file(&fdt_file)?.name().to_string();
            let sf = StoredFieldsReader::open(dir.as_ref(), name, &sci.id, max_doc)?;
            (Some(sf), fdt_name)
        } else {
            (None, fdt_file)
        };
        // The compound data file, kept for a full checksum when it has a footer (all but
        // Lucene 4.0–4.7 compound files do).
        let cfs = if info.is_compound {
            let cfs = index_dir.open_file(&names::segment_file_name(name, "", "cfs"))?;
            (!sci.lucene4 || codec_util::check_footer(&cfs).is_ok()).then_some(cfs)
        } else {
            None
        };

        Ok(SegmentReader {
            commit_info: sci.clone(),
            info,
            doc_base,
            dir,
            field_infos,
            live_docs,
            live_count,
            soft_deleted,
            stored_fields,
            fdt_name,
            cfs,
            index_dir: index_dir.clone(),
            fnm_name: fnm.name().to_string(),
            verify_checksums: opts.verify_checksums,
            verified,
        })
    }

    /// The segment's doc values, opened field by field. With checksums on, each `.dvd`
    /// is checked whole when first used (whatever its size), once per
    /// [`OpenOptions::verified`] set: no value of a damaged file comes out.
    pub fn doc_values(&self) -> crate::doc_values::DocValuesReader {
        crate::doc_values::DocValuesReader::new(
            self.dir.clone(),
            self.index_dir.clone(),
            self.name(),
            self.commit_info.id,
            &self.fnm_name,
            self.field_infos.clone(),
            self.info.max_doc,
            self.verify_checksums.then(|| self.verified.clone()),
        )
    }

    /// The segment's vector fields (see [`crate::vectors`]). With checksums on, a field's
    /// `.vec` is checked whole before its first vector (once per verified set).
    pub fn vectors(&self) -> Result<crate::vectors::SegmentVectors> {
        crate::vectors::open_segment_vectors(
            self.dir.as_ref(),
            self.name(),
            &self.commit_info.id,
            &self.fnm_name,
            &self.field_infos,
            self.info.max_doc,
            self.verify_checksums.then(|| self.verified.clone()),
        )
    }

    /// Segment name (`_0`).
    pub fn name(&self) -> &str {
        &self.commit_info.name
    }

    /// Segment id.
    pub fn id(&self) -> &[u8; ID_LEN] {
        &self.commit_info.id
    }

    /// Shard-global doc id of this segment's doc 0.
    pub fn doc_base(&self) -> u64 {
        self.doc_base
    }

    /// Documents in the segment, deleted ones included.
    pub fn max_doc(&self) -> u32 {
        self.info.max_doc
    }

    /// Documents neither hard- nor soft-deleted.
    pub fn live_count(&self) -> u32 {
        self.live_count
    }

    /// Hard-deleted documents.
    pub fn hard_deleted_count(&self) -> u32 {
        self.info.max_doc - self.live_count - self.soft_deleted
    }

    /// Documents soft-deleted (and not hard-deleted).
    pub fn soft_deleted_count(&self) -> u32 {
        self.soft_deleted
    }

    /// Whether `doc` (segment-local) is live.
    #[inline]
    pub fn is_live(&self, doc: u32) -> bool {
        match &self.live_docs {
            Some(l) => l.is_live(doc),
            None => doc < self.info.max_doc,
        }
    }

    /// The first live doc at or after `from` (segment-local).
    #[inline]
    pub fn next_live(&self, from: u32) -> Option<u32> {
        match &self.live_docs {
            Some(l) => l.next_live(from),
            None => (from < self.info.max_doc).then_some(from),
        }
    }

    /// Lucene version that wrote the segment.
    pub fn lucene_version(&self) -> LuceneVersion {
        self.info.version
    }

    /// Codec name recorded in the commit (informational).
    pub fn codec(&self) -> &str {
        &self.commit_info.codec
    }

    pub fn is_compound(&self) -> bool {
        self.info.is_compound
    }

    /// The `.fdt` codec and version, e.g. `Lucene90StoredFieldsFastData v1`; `None` when
    /// the segment has no stored-fields files.
    pub fn stored_fields_format(&self) -> Option<&str> {
        self.stored_fields.as_ref().map(|s| s.format())
    }

    /// `BEST_SPEED`, `BEST_COMPRESSION`, `ZSTD`, …
    pub fn stored_fields_mode(&self) -> Option<&str> {
        self.stored_fields.as_ref().map(|s| s.mode())
    }

    /// The stored-fields reader, for direct use.
    pub fn stored_fields(&self) -> Option<&StoredFieldsReader> {
        self.stored_fields.as_ref()
    }

    pub fn field_infos(&self) -> &FieldInfos {
        &self.field_infos
    }

    /// What the `.si` file says.
    pub fn segment_info(&self) -> &SegmentInfo {
        &self.info
    }

    /// What the commit says.
    pub fn commit_info(&self) -> &SegmentCommitInfo {
        &self.commit_info
    }

    /// The directory holding the segment's own files (the compound file's when compound).
    pub fn directory(&self) -> &Arc<dyn Directory> {
        &self.dir
    }

    fn verify_checksums(&self) -> Result<()> {
        if let Some(sf) = &self.stored_fields {
            sf.verify_checksums()?;
        }
        if let Some(cfs) = &self.cfs {
            codec_util::verify_checksum(cfs)?;
        }
        Ok(())
    }
}

/// Length of the segment's (non-update) `.dvd` holding `field`.
fn dvd_len(dir: &dyn Directory, segment: &str, fnm_name: &str, field: &FieldInfo) -> Result<u64> {
    let suffix = doc_values::doc_values_suffix(fnm_name, field)?;
    Ok(dir
        .open_file(&names::segment_file_name(segment, &suffix, "dvd"))?
        .len())
}
