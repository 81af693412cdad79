//! Doc values of Lucene 4.10 (`Lucene410DocValuesFormat`: `.dvm` codec
//! `Lucene410ValuesMetadata`, `.dvd` codec `Lucene410DocValuesData`, plain headers, big-endian),
//! the format Elasticsearch 1.x's `doc_values: true` fields are in (docs/specs/lucene4.md).
//!
//! Every type is read: NUMERIC (delta, GCD or table compressed, a value for every document
//! and a bitset of the documents that have one), BINARY (fixed or variable length),
//! SORTED, SORTED_SET and SORTED_NUMERIC (single-valued, or an ord/value index of
//! monotonic blocks per document). Terms dictionaries of 1 024 values and more of different
//! lengths are prefix compressed: not read (an error naming the `.dvd`).

use std::collections::HashMap;

use crate::data_input::{DataInput, Endian};
use crate::error::{Error, Result};
use crate::field_infos::FieldInfos;

use super::field::DocValue;
use super::region::{valid_bpv, Region};

const NUMERIC: u8 = 0;
const BINARY: u8 = 1;
const SORTED: u8 = 2;
const SORTED_SET: u8 = 3;
const SORTED_NUMERIC: u8 = 4;

const DELTA_COMPRESSED: i32 = 0;
const GCD_COMPRESSED: i32 = 1;
const TABLE_COMPRESSED: i32 = 2;
const MONOTONIC_COMPRESSED: i32 = 3;

const BINARY_FIXED: i32 = 0;
const BINARY_VARIABLE: i32 = 1;
const BINARY_PREFIX: i32 = 2;

const WITH_ADDRESSES: i32 = 0;
const SINGLE_VALUED: i32 = 1;

/// How the numbers of a numeric entry are stored.
#[derive(Debug, Clone)]
enum NumKind {
    Delta {
        min: i64,
        bpv: u32,
    },
    Gcd {
        min: i64,
        gcd: i64,
        bpv: u32,
    },
    Table {
        table: Vec<i64>,
        bpv: u32,
    },
    /// Monotonic blocks (ord and value indexes).
    Monotonic {
        packed_version: i32,
        block_size: u32,
    },
}

/// A numeric entry of the `.dvm`.
#[derive(Debug, Clone)]
pub(crate) struct Numeric {
    /// `.dvd` offset of the docs-with-value bitset; −1 when every document has one.
    missing: i64,
    offset: i64,
    count: u64,
    kind: NumKind,
    end: i64,
}

/// A binary entry of the `.dvm` (also the terms of SORTED and SORTED_SET).
#[derive(Debug, Clone)]
pub(crate) struct Binary {
    format: i32,
    missing: i64,
    min_len: u32,
    max_len: u32,
    count: u64,
    offset: i64,
    /// Variable length: `.dvd` offset of the monotonic addresses, packed version, block
    /// size.
    addresses: Option<(i64, i32, u32)>,
}

/// A field's entry in the `.dvm`.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    Numeric(Numeric),
    Binary(Binary),
    /// One ord per document (−1: none) into the terms.
    Sorted {
        terms: Binary,
        ords: Numeric,
        /// A single-valued SORTED_SET.
        set: bool,
    },
    /// `index` (monotonic, `max_doc + 1` values) gives each document's range of `ords`.
    SortedSet {
        terms: Binary,
        ords: Numeric,
        index: Numeric,
    },
    /// Single-valued: `index` is `None` and `values` holds one value per document.
    SortedNumeric {
        values: Numeric,
        index: Option<Numeric>,
    },
}

/// Parses the `.dvm` body (after its header, before its footer).
pub(crate) fn parse_meta(
    input: &mut DataInput<'_>,
    field_infos: &FieldInfos,
) -> Result<HashMap<u32, Entry>> {
    let mut out = HashMap::new();
    loop {
        let number = input.read_vint()?;
        if number == -1 {
            break;
        }
        let number = u32::try_from(number)
            .ok()
            .filter(|n| field_infos.by_number(*n).is_some())
            .ok_or_else(|| input.corrupt(format!("doc values of unknown field {number}")))?;
        let ty = input.read_u8()?;
        let entry = match ty {
            NUMERIC => Entry::Numeric(numeric(input)?),
            BINARY => Entry::Binary(binary(input)?),
            SORTED => sorted(input, number, false)?,
            SORTED_SET => match input.read_vint()? {
                WITH_ADDRESSES => {
                    expect(input, number, BINARY)?;
                    let terms = binary(input)?;
                    expect(input, number, NUMERIC)?;
                    let ords = numeric(input)?;
                    expect(input, number, NUMERIC)?;
                    let index = numeric(input)?;
                    Entry::SortedSet { terms, ords, index }
                }
                SINGLE_VALUED => {
                    expect(input, number, SORTED)?;
                    sorted(input, number, true)?
                }
                f => return Err(input.corrupt(format!("sorted-set format {f}"))),
            },
            SORTED_NUMERIC => {
                let format = input.read_vint()?;
                expect(input, number, NUMERIC)?;
                let values = numeric(input)?;
                let index = match format {
                    WITH_ADDRESSES => {
                        expect(input, number, NUMERIC)?;
                        Some(numeric(input)?)
                    }
                    SINGLE_VALUED => None,
                    f => return Err(input.corrupt(format!("sorted-numeric format {f}"))),
                };
                Entry::SortedNumeric { values, index }
            }
            t => return Err(input.corrupt(format!("doc values type {t} of field {number}"))),
        };
        out.insert(number, entry);
    }
    Ok(out)
}

/// The next entry must be field `number`'s, of type `ty` (the parts of a composite entry).
fn expect(input: &mut DataInput<'_>, number: u32, ty: u8) -> Result<()> {
    let n = input.read_vint()?;
    let t = input.read_u8()?;
    if n != number as i32 || t != ty {
        return Err(input.corrupt(format!(
            "entry of field {number} goes on with field {n} type {t}, expected type {ty}"
        )));
    }
    Ok(())
}

fn sorted(input: &mut DataInput<'_>, number: u32, set: bool) -> Result<Entry> {
    expect(input, number, BINARY)?;
    let terms = binary(input)?;
    expect(input, number, NUMERIC)?;
    let ords = numeric(input)?;
    Ok(Entry::Sorted { terms, ords, set })
}

fn bpv(input: &mut DataInput<'_>) -> Result<u32> {
    let b = input.read_vint()?;
    u32::try_from(b)
        .ok()
        .filter(|b| valid_bpv(*b))
        .ok_or_else(|| input.corrupt(format!("{b} bits per value")))
}

fn numeric(input: &mut DataInput<'_>) -> Result<Numeric> {
    let format = input.read_vint()?;
    let missing = input.read_i64(Endian::Big)?;
    let offset = input.read_i64(Endian::Big)?;
    let count = input.read_vlong()?;
    let count = u64::try_from(count).map_err(|_| input.corrupt(format!("{count} values")))?;
    let kind = match format {
        DELTA_COMPRESSED => {
            let min = input.read_i64(Endian::Big)?;
            NumKind::Delta {
                min,
                bpv: bpv(input)?,
            }
        }
        GCD_COMPRESSED => {
            let min = input.read_i64(Endian::Big)?;
            let gcd = input.read_i64(Endian::Big)?;
            NumKind::Gcd {
                min,
                gcd,
                bpv: bpv(input)?,
            }
        }
        TABLE_COMPRESSED => {
            let n = input.read_vint()?;
            if !(0..=256).contains(&n) {
                return Err(input.corrupt(format!("table of {n} values (at most 256)")));
            }
            let mut table = Vec::with_capacity(n as usize);
            for _ in 0..n {
                table.push(input.read_i64(Endian::Big)?);
            }
            NumKind::Table {
                table,
                bpv: bpv(input)?,
            }
        }
        MONOTONIC_COMPRESSED => {
            let packed_version = input.read_vint()?;
            let block_size = input.read_vint()?;
            if !(64..=(1 << 27)).contains(&block_size) || block_size.count_ones() != 1 {
                return Err(input.corrupt(format!("monotonic block size {block_size}")));
            }
            NumKind::Monotonic {
                packed_version,
                block_size: block_size as u32,
            }
        }
        f => return Err(input.corrupt(format!("numeric format {f}"))),
    };
    let end = input.read_i64(Endian::Big)?;
    Ok(Numeric {
        missing,
        offset,
        count,
        kind,
        end,
    })
}

fn binary(input: &mut DataInput<'_>) -> Result<Binary> {
    let format = input.read_vint()?;
    let missing = input.read_i64(Endian::Big)?;
    let min_len = input.read_vint()?;
    let max_len = input.read_vint()?;
    if min_len < 0 || max_len < min_len {
        return Err(input.corrupt(format!("binary lengths {min_len}..={max_len}")));
    }
    let count = input.read_vlong()?;
    let count = u64::try_from(count).map_err(|_| input.corrupt(format!("{count} values")))?;
    let offset = input.read_i64(Endian::Big)?;
    let addresses = match format {
        BINARY_FIXED => None,
        BINARY_VARIABLE | BINARY_PREFIX => {
            let at = input.read_i64(Endian::Big)?;
            let version = input.read_vint()?;
            let block = input.read_vint()?;
            if format == BINARY_PREFIX {
                input.read_i64(Endian::Big)?; // reverse index
            }
            if !(64..=(1 << 27)).contains(&block) || block.count_ones() != 1 {
                return Err(input.corrupt(format!("monotonic block size {block}")));
            }
            Some((at, version, block as u32))
        }
        f => return Err(input.corrupt(format!("binary format {f}"))),
    };
    Ok(Binary {
        format,
        missing,
        min_len: min_len as u32,
        max_len: max_len as u32,
        count,
        offset,
        addresses,
    })
}

/// The docs that have a value: all, or a bitset (bit `doc % 8` of byte `doc / 8`).
#[derive(Debug)]
pub(crate) struct Present(Option<Region>);

impl Present {
    fn new(data: &Region, missing: i64, max_doc: u32) -> Result<Present> {
        Ok(Present(match missing {
            -1 => None,
            o => Some(data.sibling(o, (i64::from(max_doc) + 7) / 8, "docs-with-value bitset")?),
        }))
    }

    fn has(&mut self, doc: u32) -> Result<bool> {
        match &mut self.0 {
            None => Ok(true),
            Some(r) => Ok(r.u8(u64::from(doc >> 3))? & (1 << (doc & 7)) != 0),
        }
    }
}

/// The values of a DELTA, GCD or TABLE compressed entry.
#[derive(Debug)]
pub(crate) struct Numbers {
    region: Region,
    count: u64,
    kind: NumKind,
}

impl Numbers {
    fn new(data: &Region, n: &Numeric) -> Result<Numbers> {
        if matches!(n.kind, NumKind::Monotonic { .. }) {
            return Err(data.corrupt("monotonic numbers where plain ones belong"));
        }
        let region = data.sibling(n.offset, n.end - n.offset, "numeric values")?;
        let bpv = match &n.kind {
            NumKind::Delta { bpv, .. } | NumKind::Gcd { bpv, .. } | NumKind::Table { bpv, .. } => {
                *bpv
            }
            NumKind::Monotonic { .. } => 0,
        };
        if (n.count as u128 * u128::from(bpv)).div_ceil(8) > u128::from(region.len()) {
            return Err(region.corrupt(format!(
                "{} values of {bpv} bits need more than the {} bytes of their area",
                n.count,
                region.len()
            )));
        }
        Ok(Numbers {
            region,
            count: n.count,
            kind: n.kind.clone(),
        })
    }

    fn get(&mut self, i: u64) -> Result<i64> {
        if i >= self.count {
            return Err(self
                .region
                .corrupt(format!("value {i} of {} requested", self.count)));
        }
        Ok(match &self.kind {
            NumKind::Delta { min, bpv } => {
                min.wrapping_add(self.region.packed(0, i, *bpv, Endian::Big)? as i64)
            }
            NumKind::Gcd { min, gcd, bpv } => {
                let q = self.region.packed(0, i, *bpv, Endian::Big)? as i64;
                min.wrapping_add(gcd.wrapping_mul(q))
            }
            NumKind::Table { table, bpv } => {
                let k = self.region.packed(0, i, *bpv, Endian::Big)?;
                *table.get(k as usize).ok_or_else(|| {
                    self.region
                        .corrupt(format!("table index {k} of {} values", table.len()))
                })?
            }
            NumKind::Monotonic { .. } => {
                return Err(self
                    .region
                    .corrupt("monotonic numbers where plain ones belong"))
            }
        })
    }
}

/// One block of a monotonic array: origin, average step, and bit-packed deltas at `at`.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    min: i64,
    avg: f32,
    bpv: u32,
    at: u64,
}

/// A MonotonicBlockPackedReader array: blocks of `block_size` values, each an origin, an
/// average slope and packed deltas from the line they draw.
#[derive(Debug)]
pub(crate) struct Monotonic {
    region: Region,
    count: u64,
    shift: u32,
    zigzag: bool,
    blocks: Vec<Block>,
}

impl Monotonic {
    /// `count` values whose blocks start at `offset` of the data.
    fn new(
        data: &Region,
        offset: i64,
        count: u64,
        packed_version: i32,
        block_size: u32,
    ) -> Result<Monotonic> {
        if !(1..=2).contains(&packed_version) {
            return Err(Error::unsupported(
                data.file_name(),
                format!(
                    "monotonic blocks of PackedInts version {packed_version} (supported: 1..=2)"
                ),
            ));
        }
        let mut region = data.sibling(offset, data.end() as i64 - offset, "monotonic blocks")?;
        let n_blocks = count.div_ceil(u64::from(block_size));
        // every block takes at least 6 bytes (origin, average, bits per value)
        if n_blocks.saturating_mul(6) > region.len() {
            return Err(region.corrupt(format!("{count} monotonic values overrun the file")));
        }
        let mut blocks = Vec::with_capacity(n_blocks as usize);
        let mut at = 0u64;
        let name = region.file_name().to_string();
        for b in 0..n_blocks {
            let head = region.get_upto(at, 32)?;
            let mut h = DataInput::new(&name, head);
            let min = if packed_version < 2 {
                h.read_vlong()?
            } else {
                h.read_zlong()?
            };
            let avg = f32::from_bits(h.read_i32(Endian::Big)? as u32);
            let bpv = h.read_vint()?;
            if !(0..=64).contains(&bpv) {
                return Err(h.corrupt(format!("monotonic block of {bpv} bits per value")));
            }
            let bpv = bpv as u32;
            at += h.position() as u64;
            let size = u64::from(block_size).min(count - b * u64::from(block_size));
            blocks.push(Block { min, avg, bpv, at });
            if bpv > 0 {
                at += (size * u64::from(bpv)).div_ceil(8);
            }
            if at > region.len() {
                return Err(Error::truncated(name));
            }
        }
        Ok(Monotonic {
            region,
            count,
            shift: block_size.trailing_zeros(),
            zigzag: packed_version < 2,
            blocks,
        })
    }

    fn get(&mut self, i: u64) -> Result<i64> {
        if i >= self.count {
            return Err(self
                .region
                .corrupt(format!("address {i} of {} requested", self.count)));
        }
        let block = &self.blocks[(i >> self.shift) as usize];
        let within = i & ((1u64 << self.shift) - 1);
        let raw = self
            .region
            .packed(block.at, within, block.bpv, Endian::Big)?;
        let delta = if self.zigzag {
            ((raw >> 1) as i64) ^ -((raw & 1) as i64)
        } else {
            raw as i64
        };
        Ok(block
            .min
            .wrapping_add((block.avg * within as f32) as i64)
            .wrapping_add(delta))
    }
}

/// The values of a binary entry, by index.
#[derive(Debug)]
pub(crate) struct Binaries {
    region: Region,
    count: u64,
    fixed: Option<u32>,
    addresses: Option<Monotonic>,
}

impl Binaries {
    fn new(data: &Region, b: &Binary) -> Result<Binaries> {
        match (b.format, b.addresses) {
            (BINARY_PREFIX, _) => Err(Error::unsupported(
                data.file_name(),
                format!(
                    "prefix-compressed Lucene 4.10 terms ({} values of {}..={} bytes)",
                    b.count, b.min_len, b.max_len
                ),
            )),
            (_, None) => {
                let len = u64::from(b.max_len)
                    .checked_mul(b.count)
                    .filter(|&l| l <= i64::MAX as u64)
                    .ok_or_else(|| data.corrupt("binary values overflow"))?;
                Ok(Binaries {
                    region: data.sibling(b.offset, len as i64, "binary values")?,
                    count: b.count,
                    fixed: Some(b.max_len),
                    addresses: None,
                })
            }
            (_, Some((at, version, block))) => Ok(Binaries {
                region: data.sibling(b.offset, at - b.offset, "binary values")?,
                count: b.count,
                fixed: None,
                addresses: Some(Monotonic::new(data, at, b.count + 1, version, block)?),
            }),
        }
    }

    fn get(&mut self, i: u64, out: &mut Vec<u8>) -> Result<()> {
        if i >= self.count {
            return Err(self
                .region
                .corrupt(format!("binary value {i} of {} requested", self.count)));
        }
        let (from, to) = match (&mut self.addresses, self.fixed) {
            (Some(a), _) => (a.get(i)?, a.get(i + 1)?),
            (None, Some(len)) => {
                let from = i * u64::from(len);
                (from as i64, (from + u64::from(len)) as i64)
            }
            (None, None) => {
                return Err(self
                    .region
                    .corrupt("binary values neither fixed nor addressed"))
            }
        };
        if from < 0 || to < from || to as u64 > self.region.len() {
            return Err(self
                .region
                .corrupt(format!("binary value {i} at {from}..{to}")));
        }
        out.clear();
        out.extend_from_slice(self.region.get(from as u64, (to - from) as usize)?);
        Ok(())
    }
}

/// A field's doc values, read by doc id.
#[derive(Debug)]
pub(crate) enum Values {
    Numeric(Present, Numbers),
    Binary(Present, Binaries),
    Sorted(Numbers, Binaries),
    SortedSet(Monotonic, Numbers, Binaries),
    SortedNumericSingle(Present, Numbers),
    SortedNumeric(Monotonic, Numbers),
}

impl Values {
    pub fn new(entry: &Entry, data: &Region, max_doc: u32) -> Result<Values> {
        let index = |n: &Numeric| -> Result<Monotonic> {
            match n.kind {
                NumKind::Monotonic {
                    packed_version,
                    block_size,
                } => {
                    if n.count != u64::from(max_doc) {
                        return Err(data.corrupt(format!(
                            "an index of {} documents in a segment of {max_doc}",
                            n.count
                        )));
                    }
                    Monotonic::new(data, n.offset, n.count + 1, packed_version, block_size)
                }
                _ => Err(data.corrupt("an ord index that is not monotonic")),
            }
        };
        Ok(match entry {
            Entry::Numeric(n) => Values::Numeric(
                Present::new(data, n.missing, max_doc)?,
                Numbers::new(data, n)?,
            ),
            Entry::Binary(b) => Values::Binary(
                Present::new(data, b.missing, max_doc)?,
                Binaries::new(data, b)?,
            ),
            Entry::Sorted { terms, ords, .. } => {
                Values::Sorted(Numbers::new(data, ords)?, Binaries::new(data, terms)?)
            }
            Entry::SortedSet {
                terms,
                ords,
                index: ix,
            } => Values::SortedSet(
                index(ix)?,
                Numbers::new(data, ords)?,
                Binaries::new(data, terms)?,
            ),
            Entry::SortedNumeric {
                values,
                index: None,
            } => Values::SortedNumericSingle(
                Present::new(data, values.missing, max_doc)?,
                Numbers::new(data, values)?,
            ),
            Entry::SortedNumeric {
                values,
                index: Some(ix),
            } => Values::SortedNumeric(index(ix)?, Numbers::new(data, values)?),
        })
    }

    /// The values of `doc` into `out` (cleared by the caller); `false` when it has none.
    pub fn read(&mut self, doc: u32, out: &mut DocValue, scratch: &mut Vec<u8>) -> Result<bool> {
        let d = u64::from(doc);
        match self {
            Values::Numeric(p, n) | Values::SortedNumericSingle(p, n) => {
                if !p.has(doc)? {
                    return Ok(false);
                }
                out.numbers.push(n.get(d)?);
            }
            Values::Binary(p, b) => {
                if !p.has(doc)? {
                    return Ok(false);
                }
                b.get(d, scratch)?;
                out.bytes.push(scratch.clone());
            }
            Values::Sorted(ords, terms) => {
                let ord = ords.get(d)?;
                if ord < 0 {
                    return Ok(false);
                }
                terms.get(ord as u64, scratch)?;
                out.bytes.push(scratch.clone());
            }
            Values::SortedSet(index, ords, terms) => {
                let (from, to) = range(index, doc, terms.count)?;
                for i in from..to {
                    let ord = ords.get(i)?;
                    if ord < 0 {
                        return Err(terms.region.corrupt(format!("doc {doc} has ord {ord}")));
                    }
                    terms.get(ord as u64, scratch)?;
                    out.bytes.push(scratch.clone());
                }
            }
            Values::SortedNumeric(index, values) => {
                let (from, to) = range(index, doc, 1 << 24)?;
                for i in from..to {
                    out.numbers.push(values.get(i)?);
                }
            }
        }
        Ok(!out.is_empty())
    }
}

/// The range of `doc`'s values from an index, at most `most` long.
fn range(index: &mut Monotonic, doc: u32, most: u64) -> Result<(u64, u64)> {
    let (from, to) = (index.get(u64::from(doc))?, index.get(u64::from(doc) + 1)?);
    if from < 0 || to < from || (to - from) as u64 > most.max(1) {
        return Err(index
            .region
            .corrupt(format!("doc {doc} has values {from}..{to}")));
    }
    Ok((from as u64, to as u64))
}
