//! Vector fields (`KnnFloatVectorField`, `KnnByteVectorField`): each document's original
//! vector, read from the flat vector files every supported per-field format keeps beside its
//! graph or quantized copy ([`formats`], [`flat`]).
//!
//! Fields are found in the field infos (a vector dimension > 0); a field's format and files
//! come from its attributes `PerFieldKnnVectorsFormat.format` / `.suffix` (apache/lucene
//! `codecs/perfield/PerFieldKnnVectorsFormat.java`). A field whose format is not known to
//! keep flat vectors stays listed, with the reason it cannot be read: asking it for vectors
//! is an [`Error::Unsupported`] naming file, field and format. Deleted documents are the
//! caller's business (ask only for live ones).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use lucene::{FsDirectory, IndexReader, OpenOptions};
//! # fn main() -> lucene::Result<()> {
//! let reader = IndexReader::open(Arc::new(FsDirectory::open("/idx")?), &OpenOptions::default())?;
//! for seg in reader.segments() {
//!     let vectors = seg.vectors()?;
//!     for field in vectors.fields() {
//!         let mut cursor = field.cursor()?;
//!         for doc in 0..seg.max_doc() {
//!             if let (true, Some(v)) = (seg.is_live(doc), cursor.vector(doc)?) {
//!                 println!("{} {doc}: {:?}", field.name, v.to_f32());
//!             }
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod flat;
pub mod formats;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::directory::{Directory, FileSlice};
use crate::doc_values::disi::Disi;
use crate::doc_values::region::Region;
use crate::error::{Error, Result};
use crate::field_infos::{FieldInfos, VectorEncoding};
use crate::names;
use crate::stored_fields::VerifiedFiles;

use flat::{FlatEntry, OrdToDoc};

/// Field-info attribute naming a field's vector format.
pub const FORMAT_ATTRIBUTE: &str = "PerFieldKnnVectorsFormat.format";
/// Field-info attribute holding the per-format suffix number.
pub const SUFFIX_ATTRIBUTE: &str = "PerFieldKnnVectorsFormat.suffix";

/// The vector fields of one segment.
#[derive(Debug, Clone)]
pub struct SegmentVectors {
    fields: Vec<VectorField>,
}

impl SegmentVectors {
    /// Vector fields in field-number order.
    pub fn fields(&self) -> &[VectorField] {
        &self.fields
    }

    /// The vector field called `name`.
    pub fn field(&self, name: &str) -> Option<&VectorField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One vector field of a segment.
#[derive(Debug, Clone)]
pub struct VectorField {
    pub name: String,
    pub number: u32,
    /// The per-field format name (`Lucene99HnswVectorsFormat`, `ES818HnswBinaryQuantizedVectorsFormat`, …).
    pub format: String,
    pub encoding: VectorEncoding,
    pub dimension: u32,
    /// Lucene's `VectorSimilarityFunction` ordinal (0 euclidean, 1 dot product, 2 cosine,
    /// 3 maximum inner product).
    pub similarity: u8,
    /// The flat data file (`_0_Lucene99HnswVectorsFormat_0.vec`), named for errors and
    /// `rfs inspect`.
    pub data_file: String,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    Flat {
        entry: FlatEntry,
        data: FileSlice,
        max_doc: u32,
        verified: Option<Arc<VerifiedFiles>>,
    },
    /// Why the field cannot be read.
    Unreadable(String),
}

impl VectorField {
    /// Number of vectors (documents with a value, deleted ones included); `None` when
    /// the field cannot be read.
    pub fn count(&self) -> Option<u32> {
        match &self.source {
            Source::Flat { entry, .. } => Some(entry.size),
            Source::Unreadable(_) => None,
        }
    }

    /// Why the field's vectors cannot be read, if they cannot.
    pub fn unreadable(&self) -> Option<&str> {
        match &self.source {
            Source::Flat { .. } => None,
            Source::Unreadable(why) => Some(why),
        }
    }

    /// A forward cursor over the field's vectors. With checksums on, the whole `.vec` is
    /// checked first (once per verified set). Fails for a field that cannot be read.
    pub fn cursor(&self) -> Result<VectorCursor> {
        let (entry, data, max_doc, verified) = match &self.source {
            Source::Flat {
                entry,
                data,
                max_doc,
                verified,
            } => (entry, data, *max_doc, verified),
            Source::Unreadable(why) => {
                return Err(Error::unsupported(self.data_file.as_str(), why.clone()))
            }
        };
        if let Some(v) = verified {
            v.verify_once(data)?;
        }
        // Offsets were checked against the header and footer when the field was opened.
        let lo = 0;
        let hi = data.len() - codec_util::FOOTER_LEN as u64;
        let what = format!("vectors of field {:?}", self.name);
        let vectors = Region::new(
            data,
            entry.data_offset as i64,
            entry.data_length as i64,
            lo,
            hi,
            &what,
        )?;
        let docs = match entry.ord_to_doc {
            OrdToDoc::Empty => Docs::Empty,
            OrdToDoc::Dense => Docs::Dense,
            OrdToDoc::Sparse {
                offset,
                length,
                dense_rank_power,
            } => {
                let (Ok(o), Ok(l)) = (i64::try_from(offset), i64::try_from(length)) else {
                    return Err(Error::corrupt(data.name(), format!("{what}: bad offsets")));
                };
                let region = Region::new(data, o, l, lo, hi, "docs-with-vector set")?;
                Docs::Sparse(Box::new(Disi::new(
                    region,
                    Endian::Little,
                    Some(dense_rank_power),
                    max_doc,
                )))
            }
            OrdToDoc::Reordered => {
                return Err(Error::unsupported(
                    data.name(),
                    format!(
                        "field {:?} (format {}): vectors stored in a reordered (graph) order",
                        self.name, self.format
                    ),
                ))
            }
        };
        Ok(VectorCursor {
            vectors,
            docs,
            encoding: entry.encoding,
            vector_bytes: entry.vector_bytes(),
            size: entry.size,
            last: None,
        })
    }
}

#[derive(Debug)]
enum Docs {
    Empty,
    Dense,
    Sparse(Box<Disi>),
}

/// Reads one field's vectors by doc id, in non-decreasing doc order.
#[derive(Debug)]
pub struct VectorCursor {
    vectors: Region,
    docs: Docs,
    encoding: VectorEncoding,
    vector_bytes: u64,
    size: u32,
    last: Option<u32>,
}

/// One document's vector: its raw little-endian bytes as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vector<'a> {
    pub encoding: VectorEncoding,
    /// `dimension × 4` little-endian IEEE floats, or `dimension` signed bytes.
    pub raw: &'a [u8],
}

impl Vector<'_> {
    /// The float values (bit-exact); byte vectors widened.
    pub fn to_f32(&self) -> Vec<f32> {
        match self.encoding {
            VectorEncoding::Float32 => self
                .raw
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            VectorEncoding::Byte => self.raw.iter().map(|&b| f32::from(b as i8)).collect(),
        }
    }

    /// The byte values (signed), for byte vectors.
    pub fn to_i8(&self) -> Option<Vec<i8>> {
        (self.encoding == VectorEncoding::Byte).then(|| self.raw.iter().map(|&b| b as i8).collect())
    }
}

impl VectorCursor {
    /// The vector of `doc` (segment-local), `None` when the document has none. Documents
    /// must be asked for in non-decreasing order.
    pub fn vector(&mut self, doc: u32) -> Result<Option<Vector<'_>>> {
        if self.last.is_some_and(|l| doc < l) {
            return Err(self.vectors.corrupt(format!(
                "vector of doc {doc} asked after doc {}",
                self.last.unwrap_or(0)
            )));
        }
        self.last = Some(doc);
        let ord = match &mut self.docs {
            Docs::Empty => None,
            Docs::Dense => (doc < self.size).then_some(u64::from(doc)),
            Docs::Sparse(disi) => disi.advance_exact(doc)?,
        };
        let Some(ord) = ord else { return Ok(None) };
        if ord >= u64::from(self.size) {
            return Err(self
                .vectors
                .corrupt(format!("doc {doc} has vector {ord} of {}", self.size)));
        }
        let n = self.vector_bytes as usize;
        let at = ord * self.vector_bytes;
        let encoding = self.encoding;
        Ok(Some(Vector {
            encoding,
            raw: self.vectors.get(at, n)?,
        }))
    }
}

/// Opens the vector fields of a segment. `dir` holds the segment's own files (the
/// compound directory when compound). Metadata files are read whole and verified; data
/// files are checked for header and footer, and whole when a cursor is made with
/// `verified` set.
pub(crate) fn open_segment_vectors(
    dir: &dyn Directory,
    segment: &str,
    segment_id: &[u8; ID_LEN],
    fnm_name: &str,
    field_infos: &FieldInfos,
    max_doc: u32,
    verified: Option<Arc<VerifiedFiles>>,
) -> Result<SegmentVectors> {
    // Files shared by the fields of one format and suffix, parsed once.
    // A permanent failure is kept (shared) and makes every field of the files unreadable.
    type Opened = std::result::Result<(Vec<FlatEntry>, FileSlice), Arc<Error>>;
    let mut by_suffix: BTreeMap<String, Opened> = BTreeMap::new();
    let mut fields = Vec::new();
    for info in field_infos.iter().filter(|f| f.vector_dimension > 0) {
        let format = info.attributes.get(FORMAT_ATTRIBUTE);
        let suffix = info.attributes.get(SUFFIX_ATTRIBUTE);
        let (Some(format), Some(suffix)) = (format, suffix) else {
            fields.push(VectorField {
                name: info.name.clone(),
                number: info.number,
                format: format.cloned().unwrap_or_default(),
                encoding: info.vector_encoding,
                dimension: info.vector_dimension,
                similarity: info.vector_similarity,
                data_file: fnm_name.to_string(),
                source: Source::Unreadable(format!(
                    "vector field {:?} has no {FORMAT_ATTRIBUTE}/{SUFFIX_ATTRIBUTE} attributes",
                    info.name
                )),
            });
            continue;
        };
        let seg_suffix = format!("{format}_{suffix}");
        let data_name = names::segment_file_name(segment, &seg_suffix, flat::DATA_EXT);
        let source = if !formats::keeps_flat_vectors(format) {
            Source::Unreadable(format!(
                "vector field {:?} is stored in format {format:?}, which this reader does not know to keep the original vectors",
                info.name
            ))
        } else {
            if !by_suffix.contains_key(&seg_suffix) {
                let opened = open_flat(dir, segment, segment_id, &seg_suffix, field_infos, max_doc);
                let opened = match opened {
                    Ok(v) => Ok(v),
                    Err(e) if e.is_permanent() => Err(Arc::new(e)),
                    Err(e) => return Err(e),
                };
                by_suffix.insert(seg_suffix.clone(), opened);
            }
            match &by_suffix[&seg_suffix] {
                Err(why) => Source::Unreadable(why.to_string()),
                Ok((entries, data)) => match entries.iter().find(|e| e.field_number == info.number)
                {
                    Some(entry) => Source::Flat {
                        entry: entry.clone(),
                        data: data.clone(),
                        max_doc,
                        verified: verified.clone(),
                    },
                    // A field with vectors in the field infos but none in this segment's
                    // files cannot happen in a file Lucene wrote.
                    None => {
                        return Err(Error::corrupt(
                            names::segment_file_name(segment, &seg_suffix, flat::META_EXT),
                            format!("no entry for vector field {:?}", info.name),
                        ))
                    }
                },
            }
        };
        fields.push(VectorField {
            name: info.name.clone(),
            number: info.number,
            format: format.clone(),
            encoding: info.vector_encoding,
            dimension: info.vector_dimension,
            similarity: info.vector_similarity,
            data_file: match &source {
                Source::Flat { data, .. } => data.name().to_string(),
                Source::Unreadable(_) => data_name,
            },
            source,
        });
    }
    Ok(SegmentVectors { fields })
}

fn open_flat(
    dir: &dyn Directory,
    segment: &str,
    segment_id: &[u8; ID_LEN],
    seg_suffix: &str,
    field_infos: &FieldInfos,
    max_doc: u32,
) -> Result<(Vec<FlatEntry>, FileSlice)> {
    let meta = dir.open_file(&names::segment_file_name(
        segment,
        seg_suffix,
        flat::META_EXT,
    ))?;
    let meta_bytes = meta.read_all()?;
    let (version, entries) = flat::parse_meta(
        meta.name(),
        &meta_bytes,
        segment_id,
        seg_suffix,
        field_infos,
        max_doc,
    )?;
    let data = dir.open_file(&names::segment_file_name(
        segment,
        seg_suffix,
        flat::DATA_EXT,
    ))?;
    let header_len = codec_util::index_header_len(flat::DATA_CODEC, seg_suffix) as u64;
    if data.len() < header_len + codec_util::FOOTER_LEN as u64 {
        return Err(Error::corrupt(
            data.name(),
            format!("{} bytes is too short for a vector data file", data.len()),
        ));
    }
    let head = data.read_bytes(0..header_len)?;
    let mut input = DataInput::new(data.name(), &head);
    codec_util::check_index_header(
        &mut input,
        flat::DATA_CODEC,
        version,
        version,
        segment_id,
        seg_suffix,
    )?;
    codec_util::check_footer(&data)?;
    let end = data.len() - codec_util::FOOTER_LEN as u64;
    for e in &entries {
        if e.data_offset < header_len
            || e.data_offset
                .checked_add(e.data_length)
                .is_none_or(|x| x > end)
        {
            return Err(Error::corrupt(
                meta.name(),
                format!(
                    "vectors of field number {} at {}+{} lie outside {} ({} bytes)",
                    e.field_number,
                    e.data_offset,
                    e.data_length,
                    data.name(),
                    data.len()
                ),
            ));
        }
    }
    Ok((entries, data))
}
