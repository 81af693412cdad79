//! Values by index: numbers (constant, table, GCD and minimum, or blocks with their own
//! bits per value), binaries (fixed, addressed, or Lucene80's LZ4 chunks) and the terms
//! of sorted fields (blocks of prefix-coded terms, LZ4-compressed from Lucene 8.5).

use crate::compress::lz4;
use crate::data_input::Endian;
use crate::error::{Error, Result};

use super::meta::{CompressedBinary, NumericMeta, TermsMeta};
use super::region::{valid_bpv, Monotonic, Region};

/// The values of a numeric entry, read by index in increasing order.
#[derive(Debug)]
pub(crate) struct Numbers {
    kind: NumberKind,
    endian: Endian,
}

#[derive(Debug)]
enum NumberKind {
    Constant(i64),
    Packed {
        region: Region,
        bpv: u32,
        table: Option<Vec<i64>>,
        gcd: i64,
        min: i64,
    },
    Blocks {
        region: Region,
        shift: u32,
        gcd: i64,
        /// The block read last: its number, values offset, bits per value and delta.
        block: i64,
        at: u64,
        bpv: u32,
        delta: i64,
        /// Where the next block starts.
        next_at: u64,
    },
}

impl Numbers {
    pub fn new(m: &NumericMeta, data: &Region, endian: Endian) -> Result<Numbers> {
        let kind = if m.block_shift < 0 && m.bpv == 0 {
            NumberKind::Constant(m.min)
        } else {
            let region = data.sub(m.values_offset, m.values_length, "numeric values")?;
            if m.block_shift >= 0 {
                NumberKind::Blocks {
                    region,
                    shift: m.block_shift as u32,
                    gcd: m.gcd,
                    block: -1,
                    at: 0,
                    bpv: 0,
                    delta: 0,
                    next_at: 0,
                }
            } else {
                if let Some(t) = &m.table {
                    if t.is_empty() {
                        return Err(data.corrupt("numeric table is empty"));
                    }
                }
                NumberKind::Packed {
                    region,
                    bpv: m.bpv,
                    table: m.table.clone(),
                    gcd: m.gcd,
                    min: m.min,
                }
            }
        };
        Ok(Numbers { kind, endian })
    }

    pub fn get(&mut self, index: u64) -> Result<i64> {
        let endian = self.endian;
        match &mut self.kind {
            NumberKind::Constant(v) => Ok(*v),
            NumberKind::Packed {
                region,
                bpv,
                table,
                gcd,
                min,
            } => {
                let raw = region.packed(0, index, *bpv, endian)?;
                match table {
                    Some(t) => t.get(raw as usize).copied().ok_or_else(|| {
                        region.corrupt(format!("table index {raw} of {} values", t.len()))
                    }),
                    None => Ok(gcd.wrapping_mul(raw as i64).wrapping_add(*min)),
                }
            }
            NumberKind::Blocks {
                region,
                shift,
                gcd,
                block,
                at,
                bpv,
                delta,
                next_at,
            } => {
                let want = (index >> *shift) as i64;
                if want < *block {
                    *block = -1;
                    *next_at = 0;
                }
                while *block < want {
                    let start = *next_at;
                    let b = u32::from(region.u8(start)?);
                    if !valid_bpv(b) {
                        return Err(region.corrupt(format!(
                            "numeric block {} has {b} bits per value",
                            *block + 1
                        )));
                    }
                    *bpv = b;
                    *delta = region.i64(start + 1, endian)?;
                    if b == 0 {
                        *at = start + 9;
                        *next_at = start + 9;
                    } else {
                        let len = region.i32(start + 9, endian)?;
                        if len < 0 {
                            return Err(region.corrupt(format!("numeric block length {len}")));
                        }
                        *at = start + 13;
                        *next_at = start + 13 + len as u64;
                    }
                    *block += 1;
                }
                let within = index & ((1u64 << *shift) - 1);
                let raw = region.packed(*at, within, *bpv, endian)?;
                Ok(gcd.wrapping_mul(raw as i64).wrapping_add(*delta))
            }
        }
    }
}

impl Region {
    /// A region of the same file, checked against this region's file bounds.
    pub(crate) fn sub(&self, offset: i64, length: i64, what: &str) -> Result<Region> {
        self.sibling(offset, length, what)
    }
}

/// Binary values by index.
#[derive(Debug)]
pub(crate) struct Binaries {
    data: Region,
    /// File offset of `data` (compressed chunk addresses are file offsets).
    base: i64,
    kind: BinaryKind,
}

#[derive(Debug)]
enum BinaryKind {
    Fixed(u32),
    Addressed(Monotonic),
    Chunks {
        addresses: Monotonic,
        c: CompressedBinary,
        chunk: i64,
        buf: Vec<u8>,
        starts: Vec<u32>,
    },
}

impl Binaries {
    pub fn new(
        data: Region,
        base: i64,
        fixed_length: Option<u32>,
        addresses: Option<Monotonic>,
        compressed: Option<CompressedBinary>,
    ) -> Result<Binaries> {
        let kind = match (compressed, addresses) {
            (Some(c), Some(addresses)) => BinaryKind::Chunks {
                addresses,
                c,
                chunk: -1,
                buf: Vec::new(),
                starts: Vec::new(),
            },
            (None, Some(a)) => BinaryKind::Addressed(a),
            (None, None) => BinaryKind::Fixed(fixed_length.unwrap_or(0)),
            (Some(_), None) => BinaryKind::Fixed(0),
        };
        Ok(Binaries { data, base, kind })
    }

    pub fn get(&mut self, index: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        match &mut self.kind {
            BinaryKind::Fixed(len) => {
                let at = index
                    .checked_mul(u64::from(*len))
                    .ok_or_else(|| self.data.corrupt("binary value offset overflows"))?;
                out.extend_from_slice(self.data.get(at, *len as usize)?);
            }
            BinaryKind::Addressed(a) => {
                let start = a.get(index)?;
                let end = a.get(index + 1)?;
                if start < 0 || end < start {
                    return Err(self
                        .data
                        .corrupt(format!("binary value {index} at {start}..{end}")));
                }
                out.extend_from_slice(self.data.get(start as u64, (end - start) as usize)?);
            }
            BinaryKind::Chunks {
                addresses,
                c,
                chunk,
                buf,
                starts,
            } => {
                let want = (index >> c.docs_per_chunk_shift) as i64;
                if want != *chunk {
                    let at = addresses.get(want as u64)? - self.base;
                    if at < 0 {
                        return Err(self.data.corrupt(format!("binary chunk at {at}")));
                    }
                    decode_chunk(&mut self.data, at as u64, *c, buf, starts)?;
                    *chunk = want;
                }
                let k = (index & ((1u64 << c.docs_per_chunk_shift) - 1)) as usize;
                let (s, e) = (starts[k] as usize, starts[k + 1] as usize);
                out.extend_from_slice(&buf[s..e]);
            }
        }
        Ok(())
    }
}

/// One LZ4 chunk of Lucene80 compressed binaries: the lengths (the first one shifted
/// left with a "all the same" bit), then the LZ4 block of all values.
fn decode_chunk(
    data: &mut Region,
    mut at: u64,
    c: CompressedBinary,
    buf: &mut Vec<u8>,
    starts: &mut Vec<u32>,
) -> Result<()> {
    let docs = 1usize << c.docs_per_chunk_shift;
    starts.clear();
    starts.push(0);
    let mut total: u64 = 0;
    let mut same = None;
    for i in 0..docs {
        let len = if i == 0 {
            let (v, n) = data.vint(at)?;
            at += n;
            if v & 1 == 1 {
                same = Some(v >> 1);
            }
            v >> 1
        } else if let Some(l) = same {
            l
        } else {
            let (v, n) = data.vint(at)?;
            at += n;
            v
        };
        total += u64::from(len);
        if total > u64::from(c.max_chunk_size) {
            return Err(data.corrupt(format!(
                "binary chunk of more than {} bytes",
                c.max_chunk_size
            )));
        }
        starts.push(total as u32);
    }
    let total = total as usize;
    buf.clear();
    buf.resize(total + lz4::SLACK, 0);
    if total > 0 {
        let name = data.file_name().to_string();
        let src = data.get_upto(at, total + total / 255 + 16)?;
        lz4::decompress(src, buf, 0..0, 0..total)
            .map_err(|e| Error::corrupt(name, format!("binary chunk at {at}: {e}")))?;
    }
    buf.truncate(total);
    Ok(())
}

/// Bytes of decoded term blocks a [`Terms`] keeps besides the current one: a dictionary of
/// a few thousand terms stays decoded whole, so values of random ords (sorted-set fields)
/// do not decompress a block each; a larger one keeps the blocks it met first.
const TERMS_CACHE_BYTES: usize = 1 << 20;

/// A decoded block of terms: the terms concatenated, and where each ends.
#[derive(Debug, Clone, Default)]
struct TermBlock {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

/// What a cached block of `bytes` term bytes and `terms` terms costs.
fn block_footprint(bytes: usize, terms: usize) -> usize {
    bytes + terms * std::mem::size_of::<usize>() + 64
}

/// The terms of a sorted or sorted-set field, looked up by ord; the current block is kept
/// decoded, and other blocks up to [`TERMS_CACHE_BYTES`].
#[derive(Debug)]
pub(crate) struct Terms {
    m: TermsMeta,
    data: Region,
    addresses: Monotonic,
    block: i64,
    /// Terms of the current block, concatenated, and where each ends.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    scratch: Vec<u8>,
    cache: std::collections::HashMap<u64, TermBlock>,
    cached_bytes: usize,
}

impl Terms {
    pub fn new(m: &TermsMeta, data: &Region, endian: Endian) -> Result<Terms> {
        let region = data.sub(m.data_offset, m.data_length, "terms")?;
        let addr_region = data.sub(m.addresses_offset, m.addresses_length, "terms addresses")?;
        let addresses = Monotonic::new(m.addresses.clone(), addr_region, endian)?;
        Ok(Terms {
            m: m.clone(),
            data: region,
            addresses,
            block: -1,
            bytes: Vec::new(),
            ends: Vec::new(),
            scratch: Vec::new(),
            cache: std::collections::HashMap::new(),
            cached_bytes: 0,
        })
    }

    pub fn size(&self) -> u64 {
        self.m.size
    }

    /// The term with `ord`.
    pub fn get(&mut self, ord: u64) -> Result<&[u8]> {
        if ord >= self.m.size {
            return Err(self.data.corrupt(format!(
                "ord {ord} of a dictionary of {} terms",
                self.m.size
            )));
        }
        let block = (ord >> self.m.block_shift) as i64;
        if block != self.block {
            self.switch_block(block as u64)?;
        }
        let k = (ord & ((1u64 << self.m.block_shift) - 1)) as usize;
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        Ok(&self.bytes[start..self.ends[k]])
    }

    /// Makes `block` the current one: from the cache, else decoded (the block it replaces
    /// is cached while the budget lasts).
    fn switch_block(&mut self, block: u64) -> Result<()> {
        if self.block >= 0 {
            let old = self.block as u64;
            let cost = block_footprint(self.bytes.len(), self.ends.len());
            if self.cached_bytes + cost <= TERMS_CACHE_BYTES && !self.cache.contains_key(&old) {
                self.cached_bytes += cost;
                let b = TermBlock {
                    bytes: self.bytes.clone(),
                    ends: self.ends.clone(),
                };
                self.cache.insert(old, b);
            }
        }
        self.block = -1;
        if let Some(b) = self.cache.get(&block) {
            self.bytes.clear();
            self.bytes.extend_from_slice(&b.bytes);
            self.ends.clear();
            self.ends.extend_from_slice(&b.ends);
        } else {
            self.read_block(block)?;
        }
        self.block = block as i64;
        Ok(())
    }

    fn read_block(&mut self, block: u64) -> Result<()> {
        let count = ((self.m.size - (block << self.m.block_shift)).min(1u64 << self.m.block_shift))
            as usize;
        let at = self.addresses.get(block)?;
        if at < 0 {
            return Err(self.data.corrupt(format!("terms block at {at}")));
        }
        let mut at = at as u64;
        let max = self.m.max_term_length as usize;
        self.bytes.clear();
        self.ends.clear();
        // the first term, whole
        let (len, n) = self.data.vint(at)?;
        at += n;
        if len as usize > max {
            return Err(self
                .data
                .corrupt(format!("term of {len} bytes, longest is {max}")));
        }
        let first = self.data.get(at, len as usize)?;
        self.bytes.extend_from_slice(first);
        self.ends.push(self.bytes.len());
        at += u64::from(len);
        if count == 1 && !self.m.lz4 {
            return Ok(());
        }
        // the others, prefix-coded: inline, or in an LZ4 block
        let mut rest = std::mem::take(&mut self.scratch);
        rest.clear();
        let rest_start;
        if self.m.lz4 {
            if at >= self.data.len().saturating_sub(1) {
                self.scratch = rest;
                return Ok(());
            }
            let (dlen, n) = self.data.vint(at)?;
            at += n;
            let dlen = dlen as usize;
            if dlen > self.m.max_block_length as usize {
                return Err(self.data.corrupt(format!(
                    "terms block of {dlen} bytes, largest is {}",
                    self.m.max_block_length
                )));
            }
            let dict = if self.m.first_term_dict {
                self.bytes.len()
            } else {
                0
            };
            rest.resize(dict + dlen + lz4::SLACK, 0);
            rest[..dict].copy_from_slice(&self.bytes[..dict]);
            let name = self.data.file_name().to_string();
            let src = self.data.get_upto(at, dlen + dlen / 255 + 16)?;
            lz4::decompress(src, &mut rest, 0..dict, dict..dict + dlen)
                .map_err(|e| Error::corrupt(name, format!("terms block {block}: {e}")))?;
            rest.truncate(dict + dlen);
            rest_start = dict;
        } else {
            // uncompressed: the terms follow inline; fetch generously and parse
            let want = (count - 1) * (max + 10);
            rest.extend_from_slice(self.data.get_upto(at, want)?);
            rest_start = 0;
        }
        let mut p = rest_start;
        let name = self.data.file_name().to_string();
        let bad = |what: &str| Error::corrupt(name.clone(), format!("terms block {block}: {what}"));
        for _ in 1..count {
            let token = *rest.get(p).ok_or_else(|| bad("truncated"))?;
            p += 1;
            let mut prefix = usize::from(token & 0x0F);
            let mut suffix = 1 + usize::from(token >> 4);
            if prefix == 15 {
                let (v, n) = vint_in(&rest, p).ok_or_else(|| bad("bad prefix length"))?;
                prefix += v as usize;
                p += n;
            }
            if suffix == 16 {
                let (v, n) = vint_in(&rest, p).ok_or_else(|| bad("bad suffix length"))?;
                suffix += v as usize;
                p += n;
            }
            let prev_start = self.ends.len().checked_sub(2).map_or(0, |i| self.ends[i]);
            let prev_len = self.bytes.len() - prev_start;
            if prefix > prev_len || prefix + suffix > max || p + suffix > rest.len() {
                return Err(bad("term longer than its block"));
            }
            self.bytes
                .extend_from_within(prev_start..prev_start + prefix);
            self.bytes.extend_from_slice(&rest[p..p + suffix]);
            p += suffix;
            self.ends.push(self.bytes.len());
        }
        self.scratch = rest;
        Ok(())
    }
}

fn vint_in(b: &[u8], mut p: usize) -> Option<(u32, usize)> {
    let start = p;
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let byte = *b.get(p)?;
        p += 1;
        v |= u32::from(byte & 0x7F).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some((v, p - start));
        }
    }
    None
}
