//! The doc-values metadata (`.dvm`) parsed into one entry per field: where each field's
//! docs-with-field set, values, addresses and terms dictionary lie in the data file.
//! Lucene70 and Lucene80 are big-endian, Lucene90 little-endian; every count and shift is
//! range-checked before anything is sized by it.

use std::collections::HashMap;

use crate::data_input::{DataInput, Endian};
use crate::error::Result;
use crate::field_infos::{FieldInfo, FieldInfos};

use super::region::{valid_bpv, MonotonicBlock, MonotonicMeta};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Family {
    L70,
    L80,
    L90,
}

/// Docs-with-field set location: −2 none, −1 all, else an IndexedDISI.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocsMeta {
    pub offset: i64,
    pub length: i64,
    pub dense_rank_power: i8,
}

#[derive(Debug, Clone)]
pub(crate) struct NumericMeta {
    pub docs: DocsMeta,
    pub num_values: i64,
    pub table: Option<Vec<i64>>,
    /// ≥ 0: values in blocks of `2^block_shift` with their own bits per value.
    pub block_shift: i32,
    pub bpv: u32,
    pub min: i64,
    pub gcd: i64,
    pub values_offset: i64,
    pub values_length: i64,
}

#[derive(Debug, Clone)]
pub(crate) struct BinaryMeta {
    pub data_offset: i64,
    pub data_length: i64,
    pub docs: DocsMeta,
    pub min_length: i32,
    pub max_length: i32,
    /// Lucene80 BEST_COMPRESSION: LZ4 chunks of `2^docs_per_chunk_shift` values.
    pub compressed: Option<CompressedBinary>,
    pub addresses: Option<(i64, i64, MonotonicMeta)>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CompressedBinary {
    pub docs_per_chunk_shift: u32,
    pub max_chunk_size: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct TermsMeta {
    pub size: u64,
    pub block_shift: u32,
    /// LZ4-compressed blocks (Lucene80 with the LZ4 code, always in Lucene90).
    pub lz4: bool,
    /// Lucene90 decompresses a block with its first term as the dictionary.
    pub first_term_dict: bool,
    pub addresses: MonotonicMeta,
    pub max_term_length: u32,
    pub max_block_length: u32,
    pub data_offset: i64,
    pub data_length: i64,
    pub addresses_offset: i64,
    pub addresses_length: i64,
}

/// Ords of a sorted field before Lucene90 (bit-packed, one per document with a value).
#[derive(Debug, Clone)]
pub(crate) struct OrdsMeta {
    pub docs: DocsMeta,
    pub bpv: u32,
    pub offset: i64,
    pub length: i64,
    /// Multi-valued: where each document's ords start.
    pub addresses: Option<(i64, i64, MonotonicMeta)>,
}

#[derive(Debug, Clone)]
pub(crate) enum Entry {
    Numeric(NumericMeta),
    Binary(BinaryMeta),
    /// Lucene70/80 ords.
    Sorted(OrdsMeta, TermsMeta),
    /// Lucene90 ords as a numeric entry.
    Sorted90(NumericMeta, TermsMeta),
    SortedSet(OrdsMeta, TermsMeta),
    SortedSet90(SortedNumericMeta, TermsMeta),
    SortedNumeric(SortedNumericMeta),
}

#[derive(Debug, Clone)]
pub(crate) struct SortedNumericMeta {
    pub numeric: NumericMeta,
    pub addresses: Option<(i64, i64, MonotonicMeta)>,
}

pub(crate) struct MetaParser<'a> {
    pub input: DataInput<'a>,
    pub family: Family,
    pub endian: Endian,
    pub version: i32,
}

impl MetaParser<'_> {
    fn i32(&mut self) -> Result<i32> {
        self.input.read_i32(self.endian)
    }
    fn i64(&mut self) -> Result<i64> {
        self.input.read_i64(self.endian)
    }

    /// Every entry until the `-1` terminator, by field number.
    pub fn entries(&mut self, field_infos: &FieldInfos) -> Result<HashMap<u32, Entry>> {
        let mut out = HashMap::new();
        loop {
            let number = self.i32()?;
            if number == -1 {
                break;
            }
            let info = u32::try_from(number)
                .ok()
                .and_then(|n| field_infos.by_number(n))
                .ok_or_else(|| {
                    self.input
                        .corrupt(format!("entry for unknown field number {number}"))
                })?;
            let kind = self.input.read_u8()?;
            if self.family == Family::L90 && info.doc_values_skip_index {
                // skipper: offset, length, max, min (Int64), doc count, max doc (Int32)
                self.input.skip(8 * 4 + 4 * 2)?;
                if self.version >= 2 {
                    self.input.skip(4)?;
                }
            }
            let entry = match kind {
                0 => Entry::Numeric(self.numeric()?),
                1 => Entry::Binary(self.binary(info)?),
                2 => self.sorted()?,
                3 => self.sorted_set()?,
                4 => Entry::SortedNumeric(self.sorted_numeric()?),
                _ => {
                    return Err(self
                        .input
                        .corrupt(format!("invalid doc values type {kind}")))
                }
            };
            if out.insert(info.number, entry).is_some() {
                return Err(self
                    .input
                    .corrupt(format!("two entries for field {:?}", info.name)));
            }
        }
        if self.input.remaining() != 0 {
            return Err(self.input.corrupt(format!(
                "{} unexpected bytes before the footer",
                self.input.remaining()
            )));
        }
        Ok(out)
    }

    fn docs(&mut self) -> Result<DocsMeta> {
        let offset = self.i64()?;
        let length = self.i64()?;
        let dense_rank_power = if self.family == Family::L70 {
            -1
        } else {
            self.input.read_i16(self.endian)?; // jump table entries
            self.input.read_u8()? as i8
        };
        if !(offset >= -2 && (offset < 0 || length >= 0)) {
            return Err(self.input.corrupt(format!(
                "invalid docs-with-field offset {offset} / length {length}"
            )));
        }
        if dense_rank_power != -1 && !(7..=15).contains(&dense_rank_power) {
            return Err(self
                .input
                .corrupt(format!("invalid dense rank power {dense_rank_power}")));
        }
        Ok(DocsMeta {
            offset,
            length,
            dense_rank_power,
        })
    }

    fn bpv(&mut self) -> Result<u32> {
        let b = u32::from(self.input.read_u8()?);
        if !valid_bpv(b) {
            return Err(self.input.corrupt(format!("invalid bits per value {b}")));
        }
        Ok(b)
    }

    pub fn numeric(&mut self) -> Result<NumericMeta> {
        let docs = self.docs()?;
        let num_values = self.i64()?;
        let table_size = self.i32()?;
        if table_size > 256 {
            return Err(self
                .input
                .corrupt(format!("invalid table size {table_size}")));
        }
        let table = if table_size >= 0 {
            let mut t = Vec::with_capacity(table_size as usize);
            for _ in 0..table_size {
                t.push(self.i64()?);
            }
            Some(t)
        } else {
            None
        };
        let block_shift = if table_size < -1 { -2 - table_size } else { -1 };
        if block_shift > 30 {
            return Err(self
                .input
                .corrupt(format!("invalid numeric block shift {block_shift}")));
        }
        let bpv = if block_shift >= 0 {
            u32::from(self.input.read_u8()?)
        } else {
            self.bpv()?
        };
        let min = self.i64()?;
        let gcd = self.i64()?;
        let values_offset = self.i64()?;
        let values_length = self.i64()?;
        if self.family != Family::L70 {
            self.i64()?; // value jump table offset (sequential reads walk the blocks)
        }
        if num_values < 0 {
            return Err(self
                .input
                .corrupt(format!("invalid number of values {num_values}")));
        }
        Ok(NumericMeta {
            docs,
            num_values,
            table,
            block_shift,
            bpv,
            min,
            gcd,
            values_offset,
            values_length,
        })
    }

    fn monotonic(&mut self, n: i64, shift: i64) -> Result<MonotonicMeta> {
        if n < 0 || !(2..=30).contains(&shift) {
            return Err(self.input.corrupt(format!(
                "invalid monotonic metadata ({n} values, block shift {shift})"
            )));
        }
        let blocks = (n as u64).div_ceil(1u64 << shift);
        let count = self
            .input
            .check_count(blocks as i64, 21, "DirectMonotonic block")?;
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let min = self.i64()?;
            let avg = f32::from_bits(self.i32()? as u32);
            let offset = self.i64()?;
            let bpv = u32::from(self.input.read_u8()?);
            if bpv > 64 {
                return Err(self
                    .input
                    .corrupt(format!("DirectMonotonic bits per value {bpv}")));
            }
            out.push(MonotonicBlock {
                min,
                avg,
                offset,
                bpv,
            });
        }
        Ok(MonotonicMeta {
            num_values: n as u64,
            shift: shift as u32,
            blocks: out,
        })
    }

    /// Addresses offset, DirectMonotonic of `n` values, addresses length.
    fn addresses(&mut self, n: i64) -> Result<(i64, i64, MonotonicMeta)> {
        let offset = self.i64()?;
        let shift = self.input.read_vint()?;
        let meta = self.monotonic(n, i64::from(shift))?;
        let length = self.i64()?;
        Ok((offset, length, meta))
    }

    fn binary(&mut self, info: &FieldInfo) -> Result<BinaryMeta> {
        let data_offset = self.i64()?;
        let data_length = self.i64()?;
        let docs = self.docs()?;
        let num_docs = self.i32()?;
        let min_length = self.i32()?;
        let max_length = self.i32()?;
        if num_docs < 0 || min_length < 0 || max_length < min_length {
            return Err(self.input.corrupt(format!(
                "invalid binary entry ({num_docs} docs, lengths {min_length}..{max_length})"
            )));
        }
        let compressed = self.family == Family::L80
            && match self.version {
                0 => false,
                1 => true,
                _ => info
                    .attributes
                    .get("Lucene80DocValuesFormat.mode")
                    .is_some_and(|m| m == "BEST_COMPRESSION"),
            };
        let mut meta = BinaryMeta {
            data_offset,
            data_length,
            docs,
            min_length,
            max_length,
            compressed: None,
            addresses: None,
        };
        if compressed && num_docs > 0 {
            let offset = self.i64()?;
            let chunks = self.input.read_vint()?;
            let docs_per_chunk_shift = self.input.read_vint()?;
            let max_chunk_size = self.input.read_vint()?;
            if chunks < 0 || !(0..=20).contains(&docs_per_chunk_shift) || max_chunk_size < 0 {
                return Err(self.input.corrupt(format!(
                    "invalid compressed binary entry ({chunks} chunks, shift {docs_per_chunk_shift}, max {max_chunk_size})"
                )));
            }
            let shift = self.input.read_vint()?;
            let m = self.monotonic(i64::from(chunks), i64::from(shift))?;
            let length = self.i64()?;
            meta.compressed = Some(CompressedBinary {
                docs_per_chunk_shift: docs_per_chunk_shift as u32,
                max_chunk_size: max_chunk_size as u32,
            });
            meta.addresses = Some((offset, length, m));
        } else if !compressed && min_length < max_length {
            meta.addresses = Some(self.addresses(i64::from(num_docs) + 1)?);
        } else if compressed {
            meta.compressed = Some(CompressedBinary {
                docs_per_chunk_shift: 0,
                max_chunk_size: 0,
            });
        }
        Ok(meta)
    }

    fn ords(&mut self) -> Result<OrdsMeta> {
        let docs = self.docs()?;
        self.i32()?; // documents with a value
        let bpv = self.bpv()?;
        let offset = self.i64()?;
        let length = self.i64()?;
        Ok(OrdsMeta {
            docs,
            bpv,
            offset,
            length,
            addresses: None,
        })
    }

    fn sorted(&mut self) -> Result<Entry> {
        if self.family == Family::L90 {
            let ords = self.numeric()?;
            let terms = self.terms()?;
            Ok(Entry::Sorted90(ords, terms))
        } else {
            let ords = self.ords()?;
            let terms = self.terms()?;
            Ok(Entry::Sorted(ords, terms))
        }
    }

    fn sorted_set(&mut self) -> Result<Entry> {
        match self.input.read_u8()? {
            0 => match self.sorted()? {
                Entry::Sorted(o, t) => Ok(Entry::SortedSet(o, t)),
                Entry::Sorted90(o, t) => Ok(Entry::SortedSet90(
                    SortedNumericMeta {
                        addresses: None,
                        numeric: o,
                    },
                    t,
                )),
                _ => unreachable!("sorted() returns a sorted entry"),
            },
            1 if self.family == Family::L90 => {
                let o = self.sorted_numeric()?;
                let t = self.terms()?;
                Ok(Entry::SortedSet90(o, t))
            }
            1 => {
                let docs = self.docs()?;
                let bpv = self.bpv()?;
                let offset = self.i64()?;
                let length = self.i64()?;
                let num_docs = self.i32()?;
                if num_docs < 0 {
                    return Err(self.input.corrupt(format!("invalid doc count {num_docs}")));
                }
                let addresses = Some(self.addresses(i64::from(num_docs) + 1)?);
                let t = self.terms()?;
                Ok(Entry::SortedSet(
                    OrdsMeta {
                        docs,
                        bpv,
                        offset,
                        length,
                        addresses,
                    },
                    t,
                ))
            }
            b => Err(self
                .input
                .corrupt(format!("invalid multi-valued marker {b}"))),
        }
    }

    fn sorted_numeric(&mut self) -> Result<SortedNumericMeta> {
        let numeric = self.numeric()?;
        let num_docs = self.i32()?;
        if num_docs < 0 {
            return Err(self.input.corrupt(format!("invalid doc count {num_docs}")));
        }
        let addresses = if i64::from(num_docs) != numeric.num_values {
            Some(self.addresses(i64::from(num_docs) + 1)?)
        } else {
            None
        };
        Ok(SortedNumericMeta { numeric, addresses })
    }

    fn terms(&mut self) -> Result<TermsMeta> {
        let size = self.input.read_vlong()? as u64;
        let (block_shift, lz4) = match self.family {
            Family::L70 => (i64::from(self.i32()?), false),
            Family::L80 => match self.i32()? {
                0x60001 => (6, true),
                s => (i64::from(s), false),
            },
            Family::L90 => (6, true),
        };
        if !(0..=16).contains(&block_shift) {
            return Err(self
                .input
                .corrupt(format!("invalid terms block shift {block_shift}")));
        }
        let shift = i64::from(self.i32()?);
        let blocks = size.div_ceil(1u64 << block_shift);
        let addresses = self.monotonic(blocks as i64, shift)?;
        let max_term_length = self.i32()?;
        let max_block_length = if lz4 { self.i32()? } else { 0 };
        if !(0..=1 << 24).contains(&max_term_length) || !(0..=1 << 28).contains(&max_block_length) {
            return Err(self.input.corrupt(format!(
                "invalid terms dictionary (max term {max_term_length}, max block {max_block_length})"
            )));
        }
        let data_offset = self.i64()?;
        let data_length = self.i64()?;
        let addresses_offset = self.i64()?;
        let addresses_length = self.i64()?;
        // the terms index (for seeking by term) is not needed to read values
        let index_shift = i64::from(self.i32()?);
        if !(0..=62).contains(&index_shift) {
            return Err(self
                .input
                .corrupt(format!("invalid terms index shift {index_shift}")));
        }
        let index_size = size.div_ceil(1u64 << index_shift);
        self.monotonic(index_size as i64 + 1, shift)?;
        self.input.skip(8 * 4)?;
        Ok(TermsMeta {
            size,
            block_shift: block_shift as u32,
            lz4,
            first_term_dict: self.family == Family::L90,
            addresses,
            max_term_length: max_term_length as u32,
            max_block_length: max_block_length as u32,
            data_offset,
            data_length,
            addresses_offset,
            addresses_length,
        })
    }
}
