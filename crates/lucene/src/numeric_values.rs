//! The values of one NUMERIC doc-values field of a segment, for every document that has
//! one (Elasticsearch's `_seq_no`, `_version`, `_primary_term`), deleted documents
//! included.
//!
//! The `.dvm` entry (`Lucene70/80/90DocValuesMetadata`) gives the documents with a value
//! (none, all, or an IndexedDISI in the `.dvd`; the n-th document of the set has value
//! number n) and how values are packed in the `.dvd`: every value equal (0 bits), a table
//! of up to 256 distinct values indexed by packed ordinals, `min + gcd × packed`, or
//! blocks of `2^shift` values each with its own bit width and base (`bits u8, base i64,
//! [byte length i32, packed data]`; value = `gcd × packed + base`). Packed data is
//! DirectReader's: fixed-width values one after another, most significant bit first in a
//! big-endian stream before Lucene 9, least significant bit first in little-endian words
//! from Lucene90 on.

use crate::codec_util;
use crate::data_input::{DataInput, Endian};
use crate::directory::Directory;
use crate::doc_set::DocSet;
use crate::doc_values::{self, DocsWithField};
use crate::error::{Error, Result};
use crate::field_infos::DocValuesType;
use crate::names;
use crate::reader::SegmentReader;

/// Bit widths DirectReader writes.
const BITS: [u8; 14] = [1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64];

/// Values of one field of one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumericValues {
    /// Value by document (0 where there is none).
    values: Vec<i64>,
    /// Documents with a value; `None`: all.
    present: Option<DocSet>,
}

impl NumericValues {
    /// The value of `doc`, if it has one.
    #[inline]
    pub fn get(&self, doc: u32) -> Option<i64> {
        let v = *self.values.get(doc as usize)?;
        match &self.present {
            Some(p) if !p.contains(doc) => None,
            _ => Some(v),
        }
    }

    /// Documents of the segment (with or without a value).
    pub fn max_doc(&self) -> u32 {
        self.values.len() as u32
    }

    /// `(doc, value)` for every document with a value, in doc order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        (0..self.max_doc()).filter_map(|d| self.get(d).map(|v| (d, v)))
    }
}

/// Reads every value of the NUMERIC doc-values field `field` of `segment`. `index_dir`
/// holds per-generation update files (a field updated in place); the segment's own files
/// come from its directory. `None` when the segment has no such field or the field has
/// no doc values; an error when it has doc values of another type.
pub fn read_numeric_values(
    index_dir: &dyn Directory,
    segment: &SegmentReader,
    field: &str,
) -> Result<Option<NumericValues>> {
    let fnm_name = names::segment_file_name(segment.name(), "", "fnm");
    let Some(info) = segment.field_infos().by_name(field) else {
        return Ok(None);
    };
    match info.doc_values_type {
        DocValuesType::None => return Ok(None),
        DocValuesType::Numeric => {}
        other => {
            return Err(Error::unsupported(
                fnm_name,
                format!("field {field:?} has {other:?} doc values, expected NUMERIC"),
            ))
        }
    }
    let suffix = doc_values::doc_values_suffix(&fnm_name, info)?;
    let dir: &dyn Directory = if info.doc_values_gen == -1 {
        segment.directory().as_ref()
    } else {
        index_dir
    };
    let name = segment.name();
    let meta = dir.open_file(&names::segment_file_name(name, &suffix, "dvm"))?;
    let meta_bytes = meta.read_all()?;
    let Some(at) = doc_values::locate_numeric_entry(
        meta.name(),
        &meta_bytes,
        segment.id(),
        &suffix,
        segment.field_infos(),
        info.number,
    )?
    else {
        return Err(Error::corrupt(
            meta.name(),
            format!("no entry for field {field:?} (number {})", info.number),
        ));
    };
    let entry = Entry::parse(
        &mut DataInput::new(meta.name(), &meta_bytes[at.offset..]),
        at.endian,
        at.jump_tables,
    )?;

    let data = dir.open_file(&names::segment_file_name(name, &suffix, "dvd"))?;
    let header_len = codec_util::index_header_len(at.data_codec, &suffix) as u64;
    let footer = codec_util::FOOTER_LEN as u64;
    if data.len() < header_len + footer {
        return Err(Error::corrupt(
            data.name(),
            format!(
                "{} bytes is too short for a doc values data file",
                data.len()
            ),
        ));
    }
    let head = data.read_bytes(0..header_len)?;
    codec_util::check_index_header(
        &mut DataInput::new(data.name(), &head),
        at.data_codec,
        at.version,
        at.version,
        segment.id(),
        &suffix,
    )?;
    codec_util::check_footer(&data)?;
    let body_end = data.len() - footer;
    let in_data = |offset: i64, length: i64, what: &str| -> Result<std::ops::Range<u64>> {
        let start = u64::try_from(offset).ok();
        let len = u64::try_from(length).ok();
        match (start, len) {
            (Some(s), Some(l))
                if s >= header_len && s.checked_add(l).is_some_and(|e| e <= body_end) =>
            {
                Ok(s..s + l)
            }
            _ => Err(Error::corrupt(
                meta.name(),
                format!(
                    "{what} at {offset}+{length} lies outside {} ({} bytes)",
                    data.name(),
                    data.len()
                ),
            )),
        }
    };

    let max_doc = segment.max_doc();
    let docs = match entry.docs_offset {
        -2 => DocsWithField::None,
        -1 => DocsWithField::All,
        o => {
            let r = in_data(o, entry.docs_length, "docs-with-field set")?;
            DocsWithField::Disi {
                offset: r.start,
                length: r.end - r.start,
                dense_rank_power: match entry.dense_rank_power {
                    -1 => None,
                    p @ 7..=15 => Some(p as u8),
                    p => {
                        return Err(Error::corrupt(
                            meta.name(),
                            format!("invalid dense rank power {p}"),
                        ))
                    }
                },
            }
        }
    };
    // Documents having a value, in order: the n-th has value number n.
    let present = match docs {
        DocsWithField::None => {
            return Ok(Some(NumericValues {
                values: vec![0; max_doc as usize],
                present: Some(DocSet::empty(max_doc)),
            }))
        }
        DocsWithField::All => None,
        DocsWithField::Disi {
            offset,
            length,
            dense_rank_power,
        } => {
            let bytes = data.read_bytes(offset..offset + length)?;
            let mut set = DocSet::empty(max_doc);
            doc_values::read_indexed_disi(
                data.name(),
                &bytes,
                at.endian,
                dense_rank_power,
                max_doc,
                &mut |d| {
                    set.insert(d);
                },
            )?;
            Some(set)
        }
    };
    let count = present.as_ref().map_or(max_doc, DocSet::len);
    if entry.num_values != i64::from(count) {
        return Err(Error::corrupt(
            meta.name(),
            format!(
                "field {field:?}: {} values for {count} documents with a value",
                entry.num_values
            ),
        ));
    }

    let mut by_ord = Vec::with_capacity(count as usize);
    if entry.bits == 0 {
        by_ord.resize(count as usize, entry.min);
    } else {
        let r = in_data(entry.values_offset, entry.values_length, "values")?;
        let packed = data.read_bytes(r)?;
        let packing = Packing {
            file: data.name(),
            lucene90: at.lucene90,
        };
        match entry.block_shift {
            Some(shift) => {
                packing.blocks(&packed, count, shift, entry.gcd, at.endian, &mut by_ord)?
            }
            None => {
                packing.check_bits(entry.bits)?;
                for i in 0..u64::from(count) {
                    let p = packing.get(&packed, entry.bits, 0, i)?;
                    by_ord.push(match &entry.table {
                        Some(t) => *t.get(p as usize).ok_or_else(|| {
                            Error::corrupt(
                                data.name(),
                                format!("table index {p} beyond {} entries", t.len()),
                            )
                        })?,
                        None => entry.min.wrapping_add(entry.gcd.wrapping_mul(p as i64)),
                    });
                }
            }
        }
    }

    let mut values = vec![0i64; max_doc as usize];
    match &present {
        None => values.copy_from_slice(&by_ord),
        Some(set) => {
            for (doc, v) in set.iter().zip(by_ord) {
                values[doc as usize] = v;
            }
        }
    }
    Ok(Some(NumericValues { values, present }))
}

/// The fields of a NUMERIC entry.
struct Entry {
    docs_offset: i64,
    docs_length: i64,
    dense_rank_power: i8,
    num_values: i64,
    table: Option<Vec<i64>>,
    block_shift: Option<u32>,
    bits: u8,
    min: i64,
    gcd: i64,
    values_offset: i64,
    values_length: i64,
}

impl Entry {
    fn parse(input: &mut DataInput<'_>, endian: Endian, jump_tables: bool) -> Result<Entry> {
        let docs_offset = input.read_i64(endian)?;
        let docs_length = input.read_i64(endian)?;
        let dense_rank_power = if jump_tables {
            input.read_i16(endian)?;
            input.read_u8()? as i8
        } else {
            -1
        };
        let num_values = input.read_i64(endian)?;
        let table_size = input.read_i32(endian)?;
        if table_size > 256 {
            return Err(input.corrupt(format!("invalid table size {table_size}")));
        }
        let table = if table_size >= 0 {
            let mut t = Vec::with_capacity(table_size as usize);
            for _ in 0..table_size {
                t.push(input.read_i64(endian)?);
            }
            Some(t)
        } else {
            None
        };
        let block_shift = if table_size < -1 {
            let s = -2i64 - i64::from(table_size);
            if !(0..=30).contains(&s) {
                return Err(input.corrupt(format!("invalid block shift {s}")));
            }
            Some(s as u32)
        } else {
            None
        };
        let bits = input.read_u8()?;
        let min = input.read_i64(endian)?;
        let gcd = input.read_i64(endian)?;
        let values_offset = input.read_i64(endian)?;
        let values_length = input.read_i64(endian)?;
        Ok(Entry {
            docs_offset,
            docs_length,
            dense_rank_power,
            num_values,
            table,
            block_shift,
            bits,
            min,
            gcd,
            values_offset,
            values_length,
        })
    }
}

/// DirectReader's packing of one `.dvd`.
struct Packing<'a> {
    file: &'a str,
    lucene90: bool,
}

impl Packing<'_> {
    fn check_bits(&self, bits: u8) -> Result<()> {
        if BITS.contains(&bits) {
            Ok(())
        } else {
            Err(Error::corrupt(
                self.file,
                format!("invalid bits per value {bits}"),
            ))
        }
    }

    /// Value `index` of `bits` bits packed from byte `base` of `data`. Bytes past the end
    /// read as zero (writers pad, but a short file must not panic).
    #[inline]
    fn get(&self, data: &[u8], bits: u8, base: usize, index: u64) -> Result<u64> {
        let bit = index
            .checked_mul(u64::from(bits))
            .ok_or_else(|| Error::corrupt(self.file, "packed value index overflows"))?;
        let start = base as u64 + bit / 8;
        let shift = (bit % 8) as u32;
        let need = (shift + u32::from(bits)).div_ceil(8) as u64;
        if start + need > data.len() as u64 {
            return Err(Error::corrupt(
                self.file,
                format!(
                    "packed value {index} ({bits} bits) lies beyond the values ({} bytes)",
                    data.len()
                ),
            ));
        }
        let mut window = [0u8; 16];
        let avail = (data.len() as u64 - start).min(16) as usize;
        window[..avail].copy_from_slice(&data[start as usize..start as usize + avail]);
        let mask = if bits == 64 {
            u128::from(u64::MAX)
        } else {
            (1u128 << bits) - 1
        };
        let v = if self.lucene90 {
            (u128::from_le_bytes(window) >> shift) & mask
        } else {
            (u128::from_be_bytes(window) >> (128 - shift - u32::from(bits))) & mask
        };
        Ok(v as u64)
    }

    /// Values in blocks of `2^shift`, each `bits u8, base i64, [length i32, packed]`.
    fn blocks(
        &self,
        data: &[u8],
        count: u32,
        shift: u32,
        gcd: i64,
        endian: Endian,
        out: &mut Vec<i64>,
    ) -> Result<()> {
        let mut input = DataInput::new(self.file, data);
        let per_block = 1u64 << shift;
        let mut done = 0u64;
        while done < u64::from(count) {
            let n = per_block.min(u64::from(count) - done);
            let bits = input.read_u8()?;
            let base = input.read_i64(endian)?;
            if bits == 0 {
                out.extend(std::iter::repeat_n(base, n as usize));
            } else {
                self.check_bits(bits)?;
                let length = input.read_i32(endian)?;
                let length = usize::try_from(length)
                    .map_err(|_| input.corrupt(format!("negative block length {length}")))?;
                let at = input.position();
                input.skip(length as u64)?;
                let block = &data[at..at + length];
                for i in 0..n {
                    let p = self.get(block, bits, 0, i)?;
                    out.push(base.wrapping_add(gcd.wrapping_mul(p as i64)));
                }
            }
            done += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(values: &[u64], bits: u8, lucene90: bool) -> Vec<u8> {
        let total = values.len() * bits as usize;
        let mut out = vec![0u8; total.div_ceil(8) + 8];
        for (i, v) in values.iter().enumerate() {
            for b in 0..bits as usize {
                let bit_set = (v >> b) & 1 == 1;
                if !bit_set {
                    continue;
                }
                let pos = if lucene90 {
                    i * bits as usize + b
                } else {
                    // MSB first: the value's top bit comes first in the stream.
                    i * bits as usize + (bits as usize - 1 - b)
                };
                if lucene90 {
                    out[pos / 8] |= 1 << (pos % 8);
                } else {
                    out[pos / 8] |= 0x80 >> (pos % 8);
                }
            }
        }
        out
    }

    #[test]
    fn direct_reader_both_orders_every_width() {
        for lucene90 in [false, true] {
            let p = Packing {
                file: "t",
                lucene90,
            };
            for bits in BITS {
                let max = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let values: Vec<u64> = (0..37u64)
                    .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & max)
                    .collect();
                let data = pack(&values, bits, lucene90);
                for (i, v) in values.iter().enumerate() {
                    assert_eq!(
                        p.get(&data, bits, 0, i as u64).unwrap(),
                        *v,
                        "bits {bits} i {i} lucene90 {lucene90}"
                    );
                }
            }
        }
        // Lucene ≤ 8, 4 bits: value 0 is the high nibble of byte 0.
        let p = Packing {
            file: "t",
            lucene90: false,
        };
        assert_eq!(p.get(&[0xA5, 0, 0], 4, 0, 0).unwrap(), 0xA);
        assert_eq!(p.get(&[0xA5, 0, 0], 4, 0, 1).unwrap(), 0x5);
        // Beyond the data: an error, not a panic.
        assert!(p.get(&[0xA5], 16, 0, 3).is_err());
    }

    #[test]
    fn varying_blocks() {
        // Two blocks of 4 values (shift 2): one of width 0 (all = base), one of 8 bits.
        let mut data = vec![0u8];
        data.extend_from_slice(&100i64.to_le_bytes());
        data.push(8);
        data.extend_from_slice(&(-5i64).to_le_bytes());
        data.extend_from_slice(&4i32.to_le_bytes());
        data.extend_from_slice(&[1, 2, 3, 4]);
        data.extend_from_slice(&[0; 8]);
        let p = Packing {
            file: "t",
            lucene90: true,
        };
        let mut out = Vec::new();
        p.blocks(&data, 7, 2, 10, Endian::Little, &mut out).unwrap();
        assert_eq!(out, vec![100, 100, 100, 100, 5, 15, 25]);
        // A truncated block is an error.
        let mut out = Vec::new();
        assert!(p
            .blocks(&data[..12], 7, 2, 10, Endian::Little, &mut out)
            .is_err());
    }
}
