//! Doc values: NUMERIC, BINARY, SORTED, SORTED_SET and SORTED_NUMERIC fields of the
//! Lucene70, Lucene80 and Lucene90 formats (Lucene 7 to 10), read forward document by
//! document ([`DocValuesReader`], [`FieldValues`]), every value of a NUMERIC field at once
//! for lookups by doc id in any order ([`NumericValues`]: `_seq_no` for deltas), and the
//! docs-with-field set of the soft-deletes field.
//!
//! The metadata file (`.dvm`: `Lucene70DocValuesMetadata`, `Lucene80DocValuesMetadata`
//! big-endian; `Lucene90DocValuesMetadata` little-endian) lists an entry per field; every
//! entry type is walked (and skipped) until the wanted field. Its docs-with-field set is
//! either empty, every document, or an IndexedDISI in the data file (`.dvd`): blocks of
//! 65 536 doc ids, each sparse (a list of 16-bit ids), dense (a 1024-word bitset,
//! optionally preceded by a rank table) or all.

pub(crate) mod disi;
mod field;
mod lucene4;
mod meta;
mod numeric;
pub(crate) mod region;
mod values;

pub use field::{DocValue, FieldValues};
pub use numeric::{read_numeric_values, NumericValues};

use std::collections::HashMap;
use std::sync::Arc;

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::directory::Directory;
use crate::error::{Error, Result};
use crate::field_infos::{FieldInfo, FieldInfos};
use crate::names;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    L70,
    L80,
    L90,
}

/// Where the documents having a value for a field are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocsWithField {
    /// No document has a value.
    None,
    /// Every document has a value.
    All,
    /// An IndexedDISI at `offset..offset+length` of the data file.
    Disi {
        offset: u64,
        length: u64,
        /// Dense blocks carry a rank table of `1 << (17 - power)` bytes (Lucene80/90).
        dense_rank_power: Option<u8>,
    },
}

/// The doc-values files of `field` and the parsed location of its docs-with-field set.
#[derive(Debug)]
pub struct NumericDocsWithField {
    /// Name of the data file, for errors.
    pub data_file: String,
    pub docs: DocsWithField,
    endian: Endian,
    data: crate::directory::FileSlice,
}

/// The segment suffix of `field`'s doc-values files (`Lucene90_0`, `1_Lucene90_0`).
pub fn doc_values_suffix(fnm_name: &str, field: &FieldInfo) -> Result<String> {
    let attr = |key: &str| {
        field.attributes.get(key).ok_or_else(|| {
            Error::unsupported(
                fnm_name,
                format!(
                    "field {:?} has doc values but no {key} attribute",
                    field.name
                ),
            )
        })
    };
    let format = attr("PerFieldDocValuesFormat.format")?;
    let suffix = attr("PerFieldDocValuesFormat.suffix")?;
    let base = format!("{format}_{suffix}");
    Ok(if field.doc_values_gen == -1 {
        base
    } else {
        format!("{}_{base}", names::base36(field.doc_values_gen as u64))
    })
}

/// Opens the doc-values files of the NUMERIC `field` and locates its docs-with-field set.
/// `segment_dir` holds the segment's own files (the compound directory when compound),
/// `index_dir` the per-generation update files. The `.dvm` is fully verified, the `.dvd`
/// checked structurally (or fully with `verify`).
#[allow(clippy::too_many_arguments)]
pub fn open_numeric_docs_with_field(
    segment_dir: &dyn Directory,
    index_dir: &dyn Directory,
    segment: &str,
    segment_id: &[u8; ID_LEN],
    fnm_name: &str,
    field_infos: &FieldInfos,
    field: &FieldInfo,
    verify: bool,
) -> Result<NumericDocsWithField> {
    let suffix = doc_values_suffix(fnm_name, field)?;
    let dir = if field.doc_values_gen == -1 {
        segment_dir
    } else {
        index_dir
    };
    let meta = dir.open_file(&names::segment_file_name(segment, &suffix, "dvm"))?;
    let meta_bytes = meta.read_all()?;
    let (family, version, docs) = parse_meta(
        meta.name(),
        &meta_bytes,
        segment_id,
        &suffix,
        field_infos,
        field.number,
    )?;

    let data = dir.open_file(&names::segment_file_name(segment, &suffix, "dvd"))?;
    let data_codec = match family {
        Family::L70 => "Lucene70DocValuesData",
        Family::L80 => "Lucene80DocValuesData",
        Family::L90 => "Lucene90DocValuesData",
    };
    let header_len = codec_util::index_header_len(data_codec, &suffix) as u64;
    if data.len() < header_len + codec_util::FOOTER_LEN as u64 {
        return Err(Error::corrupt(
            data.name(),
            format!(
                "{} bytes is too short for a doc values data file",
                data.len()
            ),
        ));
    }
    let head = data.read_bytes(0..header_len)?;
    let mut input = DataInput::new(data.name(), &head);
    codec_util::check_index_header(
        &mut input, data_codec, version, version, segment_id, &suffix,
    )?;
    if verify {
        codec_util::verify_checksum(&data)?;
    } else {
        codec_util::check_footer(&data)?;
    }
    if let DocsWithField::Disi { offset, length, .. } = docs {
        let end = offset.checked_add(length);
        if offset < header_len || end.is_none_or(|e| e > data.len() - codec_util::FOOTER_LEN as u64)
        {
            return Err(Error::corrupt(
                meta.name(),
                format!(
                    "docs-with-field set at {offset}+{length} lies outside {} ({} bytes)",
                    data.name(),
                    data.len()
                ),
            ));
        }
    }
    let endian = if family == Family::L90 {
        Endian::Little
    } else {
        Endian::Big
    };
    Ok(NumericDocsWithField {
        data_file: data.name().to_string(),
        docs,
        endian,
        data,
    })
}

impl NumericDocsWithField {
    /// Calls `f` with every document (below `max_doc`) that has a value, in order.
    pub fn for_each_doc(&self, max_doc: u32, mut f: impl FnMut(u32)) -> Result<()> {
        match self.docs {
            DocsWithField::None => Ok(()),
            DocsWithField::All => {
                (0..max_doc).for_each(f);
                Ok(())
            }
            DocsWithField::Disi {
                offset,
                length,
                dense_rank_power,
            } => {
                let bytes = self.data.read_bytes(offset..offset + length)?;
                read_indexed_disi(
                    &self.data_file,
                    &bytes,
                    self.endian,
                    dense_rank_power,
                    max_doc,
                    &mut f,
                )
            }
        }
    }
}

/// Walks a `.dvm` (fully verified) to the entry of `field_number`, which must be NUMERIC,
/// and returns where its docs-with-field set is. `suffix` is the doc-values segment
/// suffix (see [`doc_values_suffix`]).
pub fn parse_numeric_meta(
    display: &str,
    bytes: &[u8],
    segment_id: &[u8; ID_LEN],
    suffix: &str,
    field_infos: &FieldInfos,
    field_number: u32,
) -> Result<DocsWithField> {
    parse_meta(
        display,
        bytes,
        segment_id,
        suffix,
        field_infos,
        field_number,
    )
    .map(|(_, _, d)| d)
}

fn parse_meta(
    display: &str,
    bytes: &[u8],
    segment_id: &[u8; ID_LEN],
    suffix: &str,
    field_infos: &FieldInfos,
    field_number: u32,
) -> Result<(Family, i32, DocsWithField)> {
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);
    let header = codec_util::read_index_header_any(&mut input)?;
    let (family, endian, max_version) = match header.codec {
        "Lucene70DocValuesMetadata" => (Family::L70, Endian::Big, 0),
        "Lucene80DocValuesMetadata" => (Family::L80, Endian::Big, 2),
        "Lucene90DocValuesMetadata" => (Family::L90, Endian::Little, 2),
        other => {
            return Err(Error::unsupported(
                display,
                format!(
                    "doc values metadata codec {other:?} (version {})",
                    header.version
                ),
            ))
        }
    };
    let version = header.version;
    codec_util::check_name_version(display, header.codec, version, header.codec, 0, max_version)?;
    codec_util::check_id_suffix(display, &header, segment_id, suffix)?;
    let mut w = Walker {
        input,
        family,
        endian,
        version,
    };
    let mut found = None;
    loop {
        let number = w.input.read_i32(endian)?;
        if number == -1 {
            break;
        }
        let info = u32::try_from(number)
            .ok()
            .and_then(|n| field_infos.by_number(n))
            .ok_or_else(|| {
                w.input
                    .corrupt(format!("entry for unknown field number {number}"))
            })?;
        let kind = w.input.read_u8()?;
        if family == Family::L90 && info.doc_values_skip_index {
            w.skip_fixed(8 * 4 + 4 * 2)?;
            if version >= 2 {
                w.skip_fixed(4)?;
            }
        }
        match kind {
            0 => {
                let e = w.numeric()?;
                if info.number == field_number {
                    found = Some(e);
                }
            }
            _ if info.number == field_number => {
                return Err(Error::unsupported(
                    display,
                    format!(
                        "field {:?} has doc values of type {kind}, soft deletes need NUMERIC (0)",
                        info.name
                    ),
                ))
            }
            1 => w.binary(info)?,
            2 => w.sorted()?,
            3 => w.sorted_set()?,
            4 => w.sorted_numeric()?,
            _ => return Err(w.input.corrupt(format!("invalid doc values type {kind}"))),
        }
    }
    if w.input.remaining() != 0 {
        return Err(w.input.corrupt(format!(
            "{} unexpected bytes before the footer",
            w.input.remaining()
        )));
    }
    let e = found.ok_or_else(|| {
        Error::corrupt(display, format!("no entry for field number {field_number}"))
    })?;
    let docs = match e.docs_offset {
        -2 => DocsWithField::None,
        -1 => DocsWithField::All,
        o if o >= 0 && e.docs_length >= 0 => DocsWithField::Disi {
            offset: o as u64,
            length: e.docs_length as u64,
            dense_rank_power: match e.dense_rank_power {
                -1 => None,
                p @ 7..=15 => Some(p as u8),
                p => {
                    return Err(Error::corrupt(
                        display,
                        format!("invalid dense rank power {p}"),
                    ))
                }
            },
        },
        o => {
            return Err(Error::corrupt(
                display,
                format!(
                    "invalid docs-with-field offset {o} / length {}",
                    e.docs_length
                ),
            ))
        }
    };
    Ok((family, version, docs))
}

struct NumericEntry {
    docs_offset: i64,
    docs_length: i64,
    dense_rank_power: i8,
    num_values: i64,
}

/// Skips doc-values metadata entries.
struct Walker<'a> {
    input: DataInput<'a>,
    family: Family,
    endian: Endian,
    version: i32,
}

impl Walker<'_> {
    fn i32(&mut self) -> Result<i32> {
        self.input.read_i32(self.endian)
    }
    fn i64(&mut self) -> Result<i64> {
        self.input.read_i64(self.endian)
    }
    fn skip_fixed(&mut self, n: u64) -> Result<()> {
        self.input.skip(n)
    }

    /// DirectMonotonic metadata of `n` values in blocks of `2^shift`: 21 bytes per block.
    fn skip_monotonic(&mut self, n: i64, shift: i64) -> Result<()> {
        if n < 0 || !(0..=62).contains(&shift) {
            return Err(self.input.corrupt(format!(
                "invalid monotonic metadata ({n} values, block shift {shift})"
            )));
        }
        let blocks = (n as u64).div_ceil(1u64 << shift);
        let bytes = blocks
            .checked_mul(21)
            .ok_or_else(|| self.input.corrupt("monotonic metadata too large"))?;
        self.input.skip(bytes)
    }

    fn jump_table(&mut self) -> Result<i8> {
        if self.family == Family::L70 {
            return Ok(-1);
        }
        self.input.read_i16(self.endian)?;
        Ok(self.input.read_u8()? as i8)
    }

    fn numeric(&mut self) -> Result<NumericEntry> {
        let docs_offset = self.i64()?;
        let docs_length = self.i64()?;
        let dense_rank_power = self.jump_table()?;
        let num_values = self.i64()?;
        let table_size = self.i32()?;
        if table_size > 256 {
            return Err(self
                .input
                .corrupt(format!("invalid table size {table_size}")));
        }
        if table_size > 0 {
            self.skip_fixed(8 * table_size as u64)?;
        }
        // bits per value, min value, gcd, values offset, values length
        self.skip_fixed(1 + 8 * 4)?;
        if self.family != Family::L70 {
            self.skip_fixed(8)?; // value jump table offset
        }
        Ok(NumericEntry {
            docs_offset,
            docs_length,
            dense_rank_power,
            num_values,
        })
    }

    fn binary(&mut self, info: &FieldInfo) -> Result<()> {
        self.skip_fixed(8 * 4)?; // data offset/length, docs-with-field offset/length
        self.jump_table()?;
        let num_docs = self.i32()?;
        let min_length = self.i32()?;
        let max_length = self.i32()?;
        let compressed = self.family == Family::L80
            && match self.version {
                0 => false,
                1 => true,
                _ => info
                    .attributes
                    .get("Lucene80DocValuesFormat.mode")
                    .is_some_and(|m| m == "BEST_COMPRESSION"),
            };
        if compressed {
            if num_docs > 0 {
                self.skip_fixed(8)?; // addresses offset
                let chunks = self.input.read_vint()?;
                self.input.read_vint()?; // docs per chunk shift
                self.input.read_vint()?; // max uncompressed chunk size
                let shift = self.input.read_vint()?;
                self.skip_monotonic(i64::from(chunks), i64::from(shift))?;
                self.skip_fixed(8)?; // addresses length
            }
        } else if min_length < max_length {
            self.skip_fixed(8)?;
            let shift = self.input.read_vint()?;
            self.skip_monotonic(i64::from(num_docs) + 1, i64::from(shift))?;
            self.skip_fixed(8)?;
        }
        Ok(())
    }

    fn sorted(&mut self) -> Result<()> {
        if self.family == Family::L90 {
            self.numeric()?;
        } else {
            self.skip_fixed(8 * 2)?; // docs-with-field offset/length
            self.jump_table()?;
            self.skip_fixed(4 + 1 + 8 * 2)?; // num docs, bits per value, ords offset/length
        }
        self.terms_dict()
    }

    fn sorted_set(&mut self) -> Result<()> {
        match self.input.read_u8()? {
            0 => self.sorted(),
            1 => {
                if self.family == Family::L90 {
                    self.sorted_numeric()?;
                } else {
                    self.skip_fixed(8 * 2)?;
                    self.jump_table()?;
                    self.skip_fixed(1 + 8 * 2)?; // bits per value, ords offset/length
                    let num_docs = self.i32()?;
                    self.skip_fixed(8)?; // addresses offset
                    let shift = self.input.read_vint()?;
                    self.skip_monotonic(i64::from(num_docs) + 1, i64::from(shift))?;
                    self.skip_fixed(8)?; // addresses length
                }
                self.terms_dict()
            }
            b => Err(self
                .input
                .corrupt(format!("invalid multi-valued marker {b}"))),
        }
    }

    fn sorted_numeric(&mut self) -> Result<()> {
        let e = self.numeric()?;
        let num_docs = self.i32()?;
        if i64::from(num_docs) != e.num_values {
            self.skip_fixed(8)?;
            let shift = self.input.read_vint()?;
            self.skip_monotonic(i64::from(num_docs) + 1, i64::from(shift))?;
            self.skip_fixed(8)?;
        }
        Ok(())
    }

    fn terms_dict(&mut self) -> Result<()> {
        let size = self.input.read_vlong()?;
        let (terms_shift, lz4) = match self.family {
            Family::L70 => (i64::from(self.i32()?), false),
            Family::L80 => match self.i32()? {
                0x60001 => (6, true),
                s => (i64::from(s), false),
            },
            Family::L90 => (6, true),
        };
        let shift = i64::from(self.i32()?);
        if !(0..=62).contains(&terms_shift) {
            return Err(self
                .input
                .corrupt(format!("invalid terms block shift {terms_shift}")));
        }
        let addresses = (size as u64).div_ceil(1u64 << terms_shift);
        self.skip_monotonic(addresses as i64, shift)?;
        self.skip_fixed(4)?; // max term length
        if lz4 {
            self.skip_fixed(4)?; // max block length
        }
        self.skip_fixed(8 * 4)?;
        let index_shift = i64::from(self.i32()?);
        if !(0..=62).contains(&index_shift) {
            return Err(self
                .input
                .corrupt(format!("invalid terms index shift {index_shift}")));
        }
        let index_size = (size as u64).div_ceil(1u64 << index_shift);
        self.skip_monotonic(index_size as i64 + 1, shift)?;
        self.skip_fixed(8 * 4)
    }
}

/// Decodes an IndexedDISI, calling `f` for every doc id, in order.
pub fn read_indexed_disi(
    file: &str,
    bytes: &[u8],
    endian: Endian,
    dense_rank_power: Option<u8>,
    max_doc: u32,
    f: &mut dyn FnMut(u32),
) -> Result<()> {
    const NO_MORE_DOCS: u32 = i32::MAX as u32;
    let mut input = DataInput::new(file, bytes);
    let mut prev_block: i32 = -1;
    loop {
        let block = input.read_i16(endian)? as u16 as u32;
        let n = input.read_i16(endian)? as u16 as u32 + 1;
        if block as i32 <= prev_block {
            return Err(input.corrupt(format!(
                "IndexedDISI block {block} after block {prev_block}"
            )));
        }
        prev_block = block as i32;
        let base = block << 16;
        if n <= 4095 {
            let mut prev: i32 = -1;
            for _ in 0..n {
                let low = input.read_i16(endian)? as u16 as u32;
                if low as i32 <= prev {
                    return Err(
                        input.corrupt("IndexedDISI sparse block is not in increasing order")
                    );
                }
                prev = low as i32;
                let doc = base | low;
                if doc == NO_MORE_DOCS {
                    return Ok(());
                }
                if doc >= max_doc {
                    return Err(
                        input.corrupt(format!("IndexedDISI doc {doc} is beyond max doc {max_doc}"))
                    );
                }
                f(doc);
            }
        } else if n == 65536 {
            if u64::from(base) + 65536 > u64::from(max_doc) {
                return Err(input.corrupt(format!(
                    "IndexedDISI full block {block} is beyond max doc {max_doc}"
                )));
            }
            (base..base + 65536).for_each(&mut *f);
        } else {
            if let Some(p) = dense_rank_power {
                input.skip(1u64 << (17 - u32::from(p)))?;
            }
            let words = input.read_bytes(1024 * 8)?;
            let mut count = 0u32;
            for (w, chunk) in words.chunks_exact(8).enumerate() {
                let a: [u8; 8] = chunk.try_into().expect("chunks of 8");
                let mut word = match endian {
                    Endian::Big => u64::from_be_bytes(a),
                    Endian::Little => u64::from_le_bytes(a),
                };
                count += word.count_ones();
                while word != 0 {
                    let doc = base + (w as u32) * 64 + word.trailing_zeros();
                    if doc >= max_doc {
                        return Err(input.corrupt(format!(
                            "IndexedDISI doc {doc} is beyond max doc {max_doc}"
                        )));
                    }
                    f(doc);
                    word &= word - 1;
                }
            }
            if count != n {
                return Err(input.corrupt(format!(
                    "IndexedDISI dense block {block} has {count} bits set, header says {n}"
                )));
            }
        }
    }
}

/// One doc-values producer: a `.dvm`/`.dvd` pair (one per format suffix and generation).
#[derive(Debug)]
struct Producer {
    entries: HashMap<u32, meta::Entry>,
    /// The entries of a Lucene 4.10 `.dvm` (then `entries` is empty).
    lucene4: Option<HashMap<u32, lucene4::Entry>>,
    data: region::Region,
    endian: Endian,
}

/// The doc values of one segment, opened field by field.
#[derive(Debug)]
pub struct DocValuesReader {
    segment_dir: Arc<dyn Directory>,
    index_dir: Arc<dyn Directory>,
    segment: String,
    segment_id: [u8; ID_LEN],
    fnm_name: String,
    field_infos: FieldInfos,
    max_doc: u32,
    /// With checksums on: the files found good so far (each `.dvd` is checked whole once).
    verify: Option<Arc<crate::stored_fields::VerifiedFiles>>,
    producers: HashMap<String, Arc<Producer>>,
}

impl DocValuesReader {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        segment_dir: Arc<dyn Directory>,
        index_dir: Arc<dyn Directory>,
        segment: &str,
        segment_id: [u8; ID_LEN],
        fnm_name: &str,
        field_infos: FieldInfos,
        max_doc: u32,
        verify: Option<Arc<crate::stored_fields::VerifiedFiles>>,
    ) -> DocValuesReader {
        DocValuesReader {
            segment_dir,
            index_dir,
            segment: segment.to_string(),
            segment_id,
            fnm_name: fnm_name.to_string(),
            field_infos,
            max_doc,
            verify,
            producers: HashMap::new(),
        }
    }

    /// A `.dvd` about to be read: with checksums on, its whole CRC-32 (once per process,
    /// whatever the size: a rebuilt `_source` is made of these values); else its footer.
    fn check_data(&self, data: &crate::directory::FileSlice) -> Result<()> {
        match &self.verify {
            Some(verified) => verified.verify_once(data),
            None => codec_util::check_footer(data).map(|_| ()),
        }
    }

    /// The values of the field called `name`; `None` when the segment has no such field
    /// or it has no doc values.
    pub fn field(&mut self, name: &str) -> Result<Option<FieldValues>> {
        let Some(info) = self.field_infos.by_name(name).cloned() else {
            return Ok(None);
        };
        if info.doc_values_type == crate::field_infos::DocValuesType::None {
            return Ok(None);
        }
        let suffix = doc_values_suffix(&self.fnm_name, &info)?;
        let producer = match self.producers.get(&suffix) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(self.open_producer(&info, &suffix)?);
                self.producers.insert(suffix.clone(), p.clone());
                p
            }
        };
        if let Some(entries) = &producer.lucene4 {
            let entry = entries.get(&info.number).ok_or_else(|| {
                Error::corrupt(
                    producer.data.file_name(),
                    format!("no doc-values entry for field {name:?}"),
                )
            })?;
            return FieldValues::lucene4(name, entry, &producer.data, self.max_doc).map(Some);
        }
        let entry = producer.entries.get(&info.number).ok_or_else(|| {
            Error::corrupt(
                producer.data.file_name(),
                format!("no doc-values entry for field {name:?}"),
            )
        })?;
        FieldValues::new(name, entry, &producer.data, producer.endian, self.max_doc).map(Some)
    }

    fn open_producer(&self, info: &FieldInfo, suffix: &str) -> Result<Producer> {
        let dir = if info.doc_values_gen == -1 {
            self.segment_dir.as_ref()
        } else {
            self.index_dir.as_ref()
        };
        let meta_file = dir.open_file(&names::segment_file_name(&self.segment, suffix, "dvm"))?;
        let bytes = meta_file.read_all()?;
        let (codec, version) =
            codec_util::read_header(&mut DataInput::new(meta_file.name(), &bytes))?;
        if codec == "Lucene410ValuesMetadata" {
            return self.open_lucene410(dir, suffix, meta_file.name(), &bytes, version);
        }
        if codec.starts_with("Lucene4") {
            return Err(Error::unsupported(
                meta_file.name(),
                format!(
                    "doc values of Lucene 4.x before 4.10 are not supported (metadata codec {codec:?} version {version}; \
                     supported: Lucene410ValuesMetadata): an index with _source disabled cannot be rebuilt from them"
                ),
            ));
        }
        codec_util::verify_checksum_bytes(meta_file.name(), &bytes)?;
        let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
        let mut input = DataInput::new(meta_file.name(), body);
        let header = codec_util::read_index_header_any(&mut input)?;
        let (family, endian, max_version, data_codec) = match header.codec {
            "Lucene70DocValuesMetadata" => {
                (meta::Family::L70, Endian::Big, 0, "Lucene70DocValuesData")
            }
            "Lucene80DocValuesMetadata" => {
                (meta::Family::L80, Endian::Big, 2, "Lucene80DocValuesData")
            }
            "Lucene90DocValuesMetadata" => (
                meta::Family::L90,
                Endian::Little,
                2,
                "Lucene90DocValuesData",
            ),
            other => {
                return Err(Error::unsupported(
                    meta_file.name(),
                    format!(
                        "doc values metadata codec {other:?} (version {})",
                        header.version
                    ),
                ))
            }
        };
        let version = header.version;
        codec_util::check_name_version(
            meta_file.name(),
            header.codec,
            version,
            header.codec,
            0,
            max_version,
        )?;
        codec_util::check_id_suffix(meta_file.name(), &header, &self.segment_id, suffix)?;
        let mut parser = meta::MetaParser {
            input,
            family,
            endian,
            version,
        };
        let entries = parser.entries(&self.field_infos)?;

        let data = dir.open_file(&names::segment_file_name(&self.segment, suffix, "dvd"))?;
        let header_len = codec_util::index_header_len(data_codec, suffix) as u64;
        if data.len() < header_len + codec_util::FOOTER_LEN as u64 {
            return Err(Error::corrupt(
                data.name(),
                format!(
                    "{} bytes is too short for a doc values data file",
                    data.len()
                ),
            ));
        }
        let head = data.read_bytes(0..header_len)?;
        let mut hin = DataInput::new(data.name(), &head);
        codec_util::check_index_header(
            &mut hin,
            data_codec,
            version,
            version,
            &self.segment_id,
            suffix,
        )?;
        self.check_data(&data)?;
        let hi = data.len() - codec_util::FOOTER_LEN as u64;
        let region = region::Region::new(&data, header_len as i64, 0, header_len, hi, "data")?;
        Ok(Producer {
            entries,
            lucene4: None,
            data: region,
            endian,
        })
    }

    /// The `.dvm`/`.dvd` pair of Lucene 4.10 (plain headers, footers, big-endian).
    fn open_lucene410(
        &self,
        dir: &dyn Directory,
        suffix: &str,
        meta_name: &str,
        bytes: &[u8],
        version: i32,
    ) -> Result<Producer> {
        if version != 0 {
            return Err(Error::unsupported(
                meta_name,
                format!("Lucene410ValuesMetadata version {version} (supported: 0)"),
            ));
        }
        codec_util::verify_checksum_bytes(meta_name, bytes)?;
        let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
        let mut input = DataInput::new(meta_name, body);
        codec_util::read_header(&mut input)?;
        let entries = lucene4::parse_meta(&mut input, &self.field_infos)?;
        if input.remaining() != 0 {
            return Err(input.corrupt(format!(
                "{} bytes after the last doc-values entry",
                input.remaining()
            )));
        }
        let data = dir.open_file(&names::segment_file_name(&self.segment, suffix, "dvd"))?;
        let head = data.read_bytes(0..data.len().min(64))?;
        let mut hin = DataInput::new(data.name(), &head);
        codec_util::check_header(&mut hin, "Lucene410DocValuesData", version, version)?;
        let header_len = hin.position() as u64;
        if data.len() < header_len + codec_util::FOOTER_LEN as u64 {
            return Err(Error::truncated(data.name()));
        }
        self.check_data(&data)?;
        let hi = data.len() - codec_util::FOOTER_LEN as u64;
        let region = region::Region::new(&data, header_len as i64, 0, header_len, hi, "data")?;
        Ok(Producer {
            entries: HashMap::new(),
            lucene4: Some(entries),
            data: region,
            endian: Endian::Big,
        })
    }
}
