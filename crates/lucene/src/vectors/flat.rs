//! Lucene's flat vector files (`Lucene99FlatVectorsFormat`, Lucene 9.9 to 10.x): the
//! metadata file `.vemf` and the data file `.vec`.
//!
//! Read in apache/lucene `lucene/core/src/java/org/apache/lucene/codecs/lucene99/`
//! `Lucene99FlatVectorsFormat.java` (layout notes), `Lucene99FlatVectorsReader.java`
//! (entry fields and checks) and `codecs/lucene95/OrdToDocDISIReaderConfiguration.java`
//! (the ord-to-doc part). Everything is little-endian (Lucene 9+ `DataInput`), the
//! CodecUtil header and footer big-endian.
//!
//! `.vemf`: index header `Lucene99FlatVectorsFormatMeta` v0 (id = segment id, suffix =
//! `<format>_<n>`), then per field until a field number of −1:
//!
//! | type | field |
//! |---|---|
//! | i32 | field number |
//! | i32 | vector encoding ordinal (0 byte, 1 float32) |
//! | i32 | similarity ordinal |
//! | vlong, vlong | offset and length of the field's vectors in `.vec` |
//! | vint | dimension |
//! | i32 | number of vectors (`size`) |
//! | i64 | docs-with-field: −2 none, −1 every doc, −3 every doc *reordered*, ≥ 0 offset of an IndexedDISI in `.vec` |
//! | i64, i16, i8 | its length, jump-table entry count, dense rank power |
//! | sparse only | i64 ord-to-doc offset, vint block shift, DirectMonotonic metadata (21 bytes per block of 2^shift) when the shift is > 0, i64 ord-to-doc length, and with a shift of 0 (reordered) i64 doc-to-ord length |
//! | −3 only | i64 offset, vint 0, i64 length, i64 doc-to-ord length |
//!
//! `.vec`: index header `Lucene99FlatVectorsFormatData` (same version), then per field
//! `size` vectors of `dimension × (1 or 4)` bytes in ordinal order, and the sparse
//! structures. Without reordering (everything written before Lucene 10.4's reordering
//! option), ordinal order is doc-id order: the vector of the k-th document of the
//! docs-with-field set is vector k. Reordered fields are refused.

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::error::Result;
use crate::field_infos::{FieldInfos, VectorEncoding};

pub const META_CODEC: &str = "Lucene99FlatVectorsFormatMeta";
pub const DATA_CODEC: &str = "Lucene99FlatVectorsFormatData";
pub const META_EXT: &str = "vemf";
pub const DATA_EXT: &str = "vec";
const VERSION_MAX: i32 = 0;

/// Which documents have a vector, and how ordinals map to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrdToDoc {
    /// No document has a vector.
    Empty,
    /// Every document has one; ordinal = doc id.
    Dense,
    /// The documents of an IndexedDISI in `.vec`; ordinal = rank in the set.
    Sparse {
        offset: u64,
        length: u64,
        dense_rank_power: u8,
    },
    /// Ordinals were permuted (Lucene's reordering): not read.
    Reordered,
}

/// One field's entry in `.vemf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatEntry {
    pub field_number: u32,
    pub encoding: VectorEncoding,
    pub similarity: i32,
    pub data_offset: u64,
    pub data_length: u64,
    pub dimension: u32,
    pub size: u32,
    pub ord_to_doc: OrdToDoc,
}

impl FlatEntry {
    /// Bytes of one vector.
    pub fn vector_bytes(&self) -> u64 {
        u64::from(self.dimension) * u64::from(self.encoding.bytes_per_dimension())
    }
}

/// Parses (and fully verifies) a `.vemf`. `suffix` is the per-field segment suffix
/// (`Lucene99HnswVectorsFormat_0`); `max_doc` bounds sizes. Returns the header version
/// (the `.vec` must carry the same) and the entries.
pub fn parse_meta(
    display: &str,
    bytes: &[u8],
    segment_id: &[u8; ID_LEN],
    suffix: &str,
    field_infos: &FieldInfos,
    max_doc: u32,
) -> Result<(i32, Vec<FlatEntry>)> {
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);
    let version =
        codec_util::check_index_header(&mut input, META_CODEC, 0, VERSION_MAX, segment_id, suffix)?;
    let le = Endian::Little;
    let mut entries: Vec<FlatEntry> = Vec::new();
    loop {
        let number = input.read_i32(le)?;
        if number == -1 {
            break;
        }
        let info = u32::try_from(number)
            .ok()
            .and_then(|n| field_infos.by_number(n))
            .ok_or_else(|| input.corrupt(format!("entry for unknown field number {number}")))?;
        if entries.iter().any(|e| e.field_number == info.number) {
            return Err(input.corrupt(format!("field {:?} has two entries", info.name)));
        }
        let enc = input.read_i32(le)?;
        let encoding = VectorEncoding::from_ordinal(enc).ok_or_else(|| {
            input.corrupt(format!(
                "field {:?}: invalid vector encoding {enc}",
                info.name
            ))
        })?;
        let similarity = input.read_i32(le)?;
        let data_offset = input.read_vlong()?;
        let data_length = input.read_vlong()?;
        let dimension = input.read_vint()?;
        let size = input.read_i32(le)?;
        let (Ok(data_offset), Ok(data_length), Ok(dimension), Ok(size)) = (
            u64::try_from(data_offset),
            u64::try_from(data_length),
            u32::try_from(dimension),
            u32::try_from(size),
        ) else {
            return Err(input.corrupt(format!(
                "field {:?}: negative offset {data_offset}, length {data_length}, dimension {dimension} or count {size}",
                info.name
            )));
        };
        // What Lucene checks when it opens the field (Lucene99FlatVectorsReader.FieldEntry).
        if encoding != info.vector_encoding || dimension != info.vector_dimension {
            return Err(input.corrupt(format!(
                "field {:?}: {encoding:?} vectors of dimension {dimension}, the field infos say {:?} of dimension {}",
                info.name, info.vector_encoding, info.vector_dimension
            )));
        }
        if size > max_doc {
            return Err(input.corrupt(format!(
                "field {:?}: {size} vectors in a segment of {max_doc} documents",
                info.name
            )));
        }
        let expect = u64::from(dimension)
            .checked_mul(u64::from(encoding.bytes_per_dimension()))
            .and_then(|b| b.checked_mul(u64::from(size)));
        if expect != Some(data_length) {
            return Err(input.corrupt(format!(
                "field {:?}: {data_length} bytes of vectors for {size} vectors of dimension {dimension} ({encoding:?})",
                info.name
            )));
        }
        let docs_offset = input.read_i64(le)?;
        let docs_length = input.read_i64(le)?;
        let _jump_table_entries = input.read_i16(le)?;
        let rank_power = input.read_u8()? as i8;
        let ord_to_doc = match docs_offset {
            -2 => {
                if size != 0 {
                    return Err(input.corrupt(format!(
                        "field {:?}: no documents but {size} vectors",
                        info.name
                    )));
                }
                OrdToDoc::Empty
            }
            -1 => {
                if size != max_doc {
                    return Err(input.corrupt(format!(
                        "field {:?}: every document has a vector but there are {size} of {max_doc}",
                        info.name
                    )));
                }
                OrdToDoc::Dense
            }
            -3 => {
                input.read_i64(le)?; // ord-to-doc offset
                input.read_vint()?; // block shift (0)
                input.read_i64(le)?; // ord-to-doc length
                input.read_i64(le)?; // doc-to-ord length
                OrdToDoc::Reordered
            }
            o if o >= 0 => {
                input.read_i64(le)?; // ord-to-doc offset
                let shift = input.read_vint()?;
                if !(0..=62).contains(&shift) {
                    return Err(input.corrupt(format!(
                        "field {:?}: invalid block shift {shift}",
                        info.name
                    )));
                }
                if shift > 0 {
                    let blocks = u64::from(size).div_ceil(1u64 << shift);
                    input.skip(blocks * 21)?; // DirectMonotonic metadata
                }
                input.read_i64(le)?; // ord-to-doc length
                let reordered = shift == 0;
                if reordered {
                    input.read_i64(le)?; // doc-to-ord length
                }
                let Ok(length) = u64::try_from(docs_length) else {
                    return Err(input.corrupt(format!(
                        "field {:?}: negative docs-with-field length {docs_length}",
                        info.name
                    )));
                };
                if !(7..=15).contains(&rank_power) {
                    return Err(input.corrupt(format!(
                        "field {:?}: invalid dense rank power {rank_power}",
                        info.name
                    )));
                }
                if reordered {
                    OrdToDoc::Reordered
                } else {
                    OrdToDoc::Sparse {
                        offset: o as u64,
                        length,
                        dense_rank_power: rank_power as u8,
                    }
                }
            }
            o => {
                return Err(input.corrupt(format!(
                    "field {:?}: invalid docs-with-field offset {o}",
                    info.name
                )))
            }
        };
        entries.push(FlatEntry {
            field_number: info.number,
            encoding,
            similarity,
            data_offset,
            data_length,
            dimension,
            size,
            ord_to_doc,
        });
    }
    if input.remaining() != 0 {
        return Err(input.corrupt(format!(
            "{} unexpected bytes before the footer",
            input.remaining()
        )));
    }
    Ok((version, entries))
}
