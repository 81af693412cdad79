//! Field infos (`.fnm`): field names, numbers, doc-values types and generations.
//!
//! Formats: Lucene 4.x `Lucene42FieldInfos` v0 and `Lucene46FieldInfos` v0–2 (plain
//! header; docs/specs/lucene4.md), `Lucene50FieldInfos` v0–1, `Lucene60FieldInfos` v0–2 (big-endian),
//! `Lucene90FieldInfos` v0, `Lucene94FieldInfos` v0–2 (little-endian). Stored documents
//! name fields by number; this maps numbers back to names.

use std::collections::BTreeMap;

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::error::{Error, Result};

/// Doc-values type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocValuesType {
    None,
    Numeric,
    Binary,
    Sorted,
    SortedSet,
    SortedNumeric,
}

/// One field of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    pub name: String,
    pub number: u32,
    pub doc_values_type: DocValuesType,
    /// Generation of this field's doc values (−1: the segment's base doc-values files).
    pub doc_values_gen: i64,
    /// Whether the field has a doc-values skip index (Lucene94 v2, 10.x).
    pub doc_values_skip_index: bool,
    /// Whether the field is declared as the soft-deletes field (7.4+ formats).
    pub soft_deletes: bool,
    pub attributes: BTreeMap<String, String>,
    /// Dimension of the field's vectors (0: the field has no vectors; Lucene90/94 formats).
    pub vector_dimension: u32,
    /// How the vectors are encoded (Lucene90FieldInfos: always float32).
    pub vector_encoding: VectorEncoding,
    /// Ordinal of the vector similarity function (Lucene's `VectorSimilarityFunction`).
    pub vector_similarity: u8,
}

/// Encoding of a field's vectors (Lucene's `VectorEncoding`, by ordinal: `BYTE` = 0,
/// `FLOAT32` = 1; read in `Lucene94FieldInfosFormat`, apache/lucene).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorEncoding {
    Byte,
    Float32,
}

impl VectorEncoding {
    /// From the ordinal Lucene writes (field infos byte, flat vectors meta int).
    pub fn from_ordinal(ord: i32) -> Option<VectorEncoding> {
        match ord {
            0 => Some(VectorEncoding::Byte),
            1 => Some(VectorEncoding::Float32),
            _ => None,
        }
    }

    /// Bytes per dimension.
    pub fn bytes_per_dimension(self) -> u32 {
        match self {
            VectorEncoding::Byte => 1,
            VectorEncoding::Float32 => 4,
        }
    }
}

/// All fields of a segment, looked up by number or name.
#[derive(Debug, Clone, Default)]
pub struct FieldInfos {
    /// Header codec and version, e.g. `Lucene94FieldInfos v2`.
    pub format: String,
    fields: Vec<FieldInfo>,
    /// Index into `fields` by field number, when numbers are small (they always are).
    by_number: Vec<u32>,
}

const NO_FIELD: u32 = u32::MAX;

impl FieldInfos {
    /// Builds the lookup tables; field numbers and names must be unique.
    pub fn new(file: &str, format: String, mut fields: Vec<FieldInfo>) -> Result<FieldInfos> {
        fields.sort_by_key(|f| f.number);
        for w in fields.windows(2) {
            if w[0].number == w[1].number {
                return Err(Error::corrupt(
                    file,
                    format!(
                        "fields {:?} and {:?} share number {}",
                        w[0].name, w[1].name, w[0].number
                    ),
                ));
            }
        }
        let mut names = std::collections::HashSet::new();
        for f in &fields {
            if !names.insert(f.name.as_str()) {
                return Err(Error::corrupt(
                    file,
                    format!("field {:?} appears twice", f.name),
                ));
            }
        }
        let max = fields.last().map_or(0, |f| f.number as usize + 1);
        let by_number = if max <= 4 * fields.len() + 1024 {
            let mut t = vec![NO_FIELD; max];
            for (i, f) in fields.iter().enumerate() {
                t[f.number as usize] = i as u32;
            }
            t
        } else {
            Vec::new()
        };
        Ok(FieldInfos {
            format,
            fields,
            by_number,
        })
    }

    /// The field with `number`.
    #[inline]
    pub fn by_number(&self, number: u32) -> Option<&FieldInfo> {
        if !self.by_number.is_empty() || self.fields.is_empty() {
            let i = *self.by_number.get(number as usize)?;
            return self.fields.get(i as usize);
        }
        self.fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()
            .map(|i| &self.fields[i])
    }

    /// The field called `name`.
    pub fn by_name(&self, name: &str) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field flagged as the soft-deletes field, if any.
    pub fn soft_deletes_field(&self) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.soft_deletes)
    }

    /// All fields in number order.
    pub fn iter(&self) -> impl Iterator<Item = &FieldInfo> {
        self.fields.iter()
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    L50,
    L60,
    L90,
    L94,
}

/// Parses (and fully verifies) a `.fnm` file. `suffix` is `""` for the segment's own
/// file and the base-36 generation for a field-infos update.
pub fn parse_field_infos(
    display: &str,
    bytes: &[u8],
    segment_id: &[u8; ID_LEN],
    suffix: &str,
) -> Result<FieldInfos> {
    {
        let mut probe = DataInput::new(display, bytes);
        let (codec, version) = codec_util::read_header(&mut probe)?;
        match codec {
            "Lucene42FieldInfos" | "Lucene46FieldInfos" => {
                return parse_field_infos_4x(display, bytes, codec, version)
            }
            "Lucene40FieldInfos" => {
                return Err(Error::unsupported(
                    display,
                    format!("field infos codec {codec:?} (Lucene 4.0–4.1) version {version}"),
                ))
            }
            _ => {}
        }
    }
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);
    let header = codec_util::read_index_header_any(&mut input)?;
    let (family, endian, max_version) = match header.codec {
        "Lucene50FieldInfos" => (Family::L50, Endian::Big, 1),
        "Lucene60FieldInfos" => (Family::L60, Endian::Big, 2),
        "Lucene90FieldInfos" => (Family::L90, Endian::Little, 0),
        "Lucene94FieldInfos" => (Family::L94, Endian::Little, 2),
        other => {
            return Err(Error::unsupported(
                display,
                format!("field infos codec {other:?} (version {})", header.version),
            ))
        }
    };
    let version = header.version;
    codec_util::check_name_version(display, header.codec, version, header.codec, 0, max_version)?;
    codec_util::check_id_suffix(display, &header, segment_id, suffix)?;

    let n = input.read_count(13, "field")?;
    let mut fields = Vec::with_capacity(n);
    for _ in 0..n {
        let name = input.read_string()?.to_string();
        let number = input.read_vint()?;
        if number < 0 {
            return Err(input.corrupt(format!("field {name:?} has negative number {number}")));
        }
        let bits = input.read_u8()?;
        let soft_deletes = match family {
            Family::L50 => false,
            Family::L60 => version >= 1 && bits & 0x08 != 0,
            Family::L90 | Family::L94 => bits & 0x08 != 0,
        };
        let index_options = input.read_u8()?;
        if index_options > 4 {
            return Err(input.corrupt(format!(
                "field {name:?}: invalid index options {index_options}"
            )));
        }
        let dv = input.read_u8()?;
        let doc_values_type = match dv {
            0 => DocValuesType::None,
            1 => DocValuesType::Numeric,
            2 => DocValuesType::Binary,
            3 => DocValuesType::Sorted,
            4 => DocValuesType::SortedSet,
            5 => DocValuesType::SortedNumeric,
            _ => return Err(input.corrupt(format!("field {name:?}: invalid doc values type {dv}"))),
        };
        let doc_values_skip_index = if family == Family::L94 && version >= 2 {
            match input.read_u8()? {
                0 => false,
                1 => true,
                b => {
                    return Err(input.corrupt(format!(
                        "field {name:?}: invalid doc values skip index type {b}"
                    )))
                }
            }
        } else {
            false
        };
        let doc_values_gen = input.read_i64(endian)?;
        if doc_values_gen < -1 {
            return Err(input.corrupt(format!(
                "field {name:?}: invalid doc values generation {doc_values_gen}"
            )));
        }
        let attributes = if family == Family::L50 && version == 0 {
            input.read_legacy_map_of_strings()?
        } else {
            input.read_map_of_strings()?
        };
        if family != Family::L50 {
            let dims = input.read_vint()?;
            if dims != 0 {
                if family != Family::L60 || version >= 2 {
                    input.read_vint()?; // index dimension count
                }
                input.read_vint()?; // bytes per dimension
            }
        }
        let (vector_dimension, vector_encoding, vector_similarity) = match family {
            Family::L90 | Family::L94 => {
                let dim = input.read_vint()?;
                let encoding = if family == Family::L94 {
                    let e = input.read_u8()?;
                    VectorEncoding::from_ordinal(i32::from(e)).ok_or_else(|| {
                        input.corrupt(format!("field {name:?}: invalid vector encoding {e}"))
                    })?
                } else {
                    VectorEncoding::Float32
                };
                let similarity = input.read_u8()?;
                let dim = u32::try_from(dim).map_err(|_| {
                    input.corrupt(format!("field {name:?}: negative vector dimension {dim}"))
                })?;
                (dim, encoding, similarity)
            }
            _ => (0, VectorEncoding::Float32, 0),
        };
        fields.push(FieldInfo {
            name,
            number: number as u32,
            doc_values_type,
            doc_values_gen,
            doc_values_skip_index,
            soft_deletes,
            attributes,
            vector_dimension,
            vector_encoding,
            vector_similarity,
        });
    }
    if input.remaining() != 0 {
        return Err(input.corrupt(format!(
            "{} unexpected bytes before the footer",
            input.remaining()
        )));
    }
    FieldInfos::new(display, format!("{} v{}", header.codec, version), fields)
}

/// Parses a Lucene 4.x `.fnm`: `Lucene42FieldInfos` v0 (4.2–4.5) or `Lucene46FieldInfos`
/// v0–2 (4.6–4.10; v1 adds the footer, v2 the SORTED_NUMERIC type). Per field: name,
/// number, flag bits, a byte with the doc-values type (low 4 bits) and norms type (high 4
/// bits), the doc-values generation (46 only), attributes.
fn parse_field_infos_4x(
    display: &str,
    bytes: &[u8],
    codec: &str,
    version: i32,
) -> Result<FieldInfos> {
    let l46 = codec == "Lucene46FieldInfos";
    let body = if l46 && version >= 1 {
        codec_util::verify_checksum_bytes(display, bytes)?;
        &bytes[..bytes.len() - codec_util::FOOTER_LEN]
    } else {
        bytes
    };
    let mut input = DataInput::new(display, body);
    codec_util::check_header(&mut input, codec, 0, if l46 { 2 } else { 0 })?;
    let n = input.read_count(8, "field")?;
    let mut fields = Vec::with_capacity(n);
    for _ in 0..n {
        let name = input.read_string()?.to_string();
        let number = input.read_vint()?;
        if number < 0 {
            return Err(input.corrupt(format!("field {name:?} has negative number {number}")));
        }
        let _bits = input.read_u8()?;
        let types = input.read_u8()?;
        let doc_values_type = match types & 0x0F {
            0 => DocValuesType::None,
            1 => DocValuesType::Numeric,
            2 => DocValuesType::Binary,
            3 => DocValuesType::Sorted,
            4 => DocValuesType::SortedSet,
            5 if l46 && version >= 2 => DocValuesType::SortedNumeric,
            dv => {
                return Err(input.corrupt(format!("field {name:?}: invalid doc values type {dv}")))
            }
        };
        if types >> 4 > 5 {
            return Err(input.corrupt(format!("field {name:?}: invalid norms type {}", types >> 4)));
        }
        let doc_values_gen = if l46 {
            input.read_i64(Endian::Big)?
        } else {
            -1
        };
        if doc_values_gen < -1 {
            return Err(input.corrupt(format!(
                "field {name:?}: invalid doc values generation {doc_values_gen}"
            )));
        }
        let attributes = input.read_legacy_map_of_strings()?;
        fields.push(FieldInfo {
            name,
            number: number as u32,
            doc_values_type,
            doc_values_gen,
            doc_values_skip_index: false,
            soft_deletes: false,
            attributes,
            vector_dimension: 0,
            vector_encoding: VectorEncoding::Float32,
            vector_similarity: 0,
        });
    }
    if input.remaining() != 0 {
        return Err(input.corrupt(format!("{} unexpected bytes at the end", input.remaining())));
    }
    FieldInfos::new(display, format!("{codec} v{version}"), fields)
}
