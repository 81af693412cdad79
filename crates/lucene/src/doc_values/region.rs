//! A bounded area of a doc-values data file read through a window: values are fetched
//! in increasing order, so one ranged read serves many of them and memory stays at one
//! window per stream whatever the size of the file.

use bytes::Bytes;

use crate::data_input::Endian;
use crate::directory::FileSlice;
use crate::error::{Error, Result};

/// Bytes fetched per read (more when one value is longer).
const WINDOW: u64 = 64 << 10;

/// `length` bytes of the data file from `offset`, checked to lie between its header and
/// its footer when created.
#[derive(Debug, Clone)]
pub(crate) struct Region {
    file: FileSlice,
    start: u64,
    len: u64,
    /// Where data may lie in the file (between its header and its footer).
    lo: u64,
    hi: u64,
    buf: Bytes,
    /// Offset of `buf` relative to `start`.
    buf_at: u64,
}

impl Region {
    /// Another area of the same file, with the same bounds.
    pub fn sibling(&self, offset: i64, length: i64, what: &str) -> Result<Region> {
        Region::new(&self.file, offset, length, self.lo, self.hi, what)
    }

    /// `offset..offset+length` of `file`, which must lie within `lo..hi` of it; `what`
    /// names the area in the error otherwise.
    pub fn new(
        file: &FileSlice,
        offset: i64,
        length: i64,
        lo: u64,
        hi: u64,
        what: &str,
    ) -> Result<Region> {
        let ok = offset >= 0
            && length >= 0
            && (offset as u64) >= lo
            && (offset as u64)
                .checked_add(length as u64)
                .is_some_and(|e| e <= hi);
        if !ok {
            return Err(Error::corrupt(
                file.name(),
                format!("{what} at {offset}+{length} lies outside the data ({lo}..{hi})"),
            ));
        }
        Ok(Region {
            file: file.clone(),
            start: offset as u64,
            len: length as u64,
            lo,
            hi,
            buf: Bytes::new(),
            buf_at: 0,
        })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// Where the file's data ends (its footer starts).
    pub fn end(&self) -> u64 {
        self.hi
    }

    pub fn file_name(&self) -> &str {
        self.file.name()
    }

    /// An error naming the data file.
    pub fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::corrupt(self.file.name(), reason)
    }

    /// `n` bytes at `at` (relative to the region); an error when they run past its end.
    pub fn get(&mut self, at: u64, n: usize) -> Result<&[u8]> {
        let end = at
            .checked_add(n as u64)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| Error::truncated(self.file.name()))?;
        if at < self.buf_at || end > self.buf_at + self.buf.len() as u64 {
            let to = self.len.min(at + (n as u64).max(WINDOW));
            self.buf = self.file.read_bytes(self.start + at..self.start + to)?;
            self.buf_at = at;
        }
        let from = (at - self.buf_at) as usize;
        Ok(&self.buf[from..from + n])
    }

    /// Up to `n` bytes at `at`, fewer at the end of the region.
    pub fn get_upto(&mut self, at: u64, n: usize) -> Result<&[u8]> {
        let n = (self.len.saturating_sub(at)).min(n as u64) as usize;
        self.get(at, n)
    }

    pub fn u8(&mut self, at: u64) -> Result<u8> {
        Ok(self.get(at, 1)?[0])
    }

    pub fn i32(&mut self, at: u64, e: Endian) -> Result<i32> {
        let a: [u8; 4] = self.get(at, 4)?.try_into().expect("4 bytes");
        Ok(match e {
            Endian::Big => i32::from_be_bytes(a),
            Endian::Little => i32::from_le_bytes(a),
        })
    }

    pub fn i64(&mut self, at: u64, e: Endian) -> Result<i64> {
        let a: [u8; 8] = self.get(at, 8)?.try_into().expect("8 bytes");
        Ok(match e {
            Endian::Big => i64::from_be_bytes(a),
            Endian::Little => i64::from_le_bytes(a),
        })
    }

    /// A VInt at `at`; returns it and its length in bytes.
    pub fn vint(&mut self, at: u64) -> Result<(u32, u64)> {
        let name = self.file.name().to_string();
        let b = self.get_upto(at, 5)?;
        let mut v: u32 = 0;
        for (i, &byte) in b.iter().enumerate() {
            if i == 4 && byte & 0xF0 != 0 {
                break;
            }
            v |= u32::from(byte & 0x7F) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok((v, i as u64 + 1));
            }
        }
        Err(Error::corrupt(name, format!("invalid vInt at offset {at}")))
    }

    /// Value `index` of a bit-packed array of `bpv`-bit values starting at `at`
    /// (DirectReader: MSB-first big-endian bit stream before Lucene 9, LSB-first
    /// little-endian words from Lucene 9).
    pub fn packed(&mut self, at: u64, index: u64, bpv: u32, e: Endian) -> Result<u64> {
        if bpv == 0 {
            return Ok(0);
        }
        let bit = index
            .checked_mul(u64::from(bpv))
            .ok_or_else(|| self.corrupt(format!("packed value {index} out of range")))?;
        let byte = at + (bit >> 3);
        let shift = (bit & 7) as u32;
        let need = (shift + bpv).div_ceil(8) as usize;
        let avail = self.get_upto(byte, 16)?;
        if avail.len() < need {
            return Err(Error::truncated(self.file.name()));
        }
        let mut w = [0u8; 16];
        w[..avail.len()].copy_from_slice(avail);
        Ok(match e {
            Endian::Big => {
                let v = u128::from_be_bytes(w);
                ((v << shift) >> (128 - bpv)) as u64
            }
            Endian::Little => {
                let v = u128::from_le_bytes(w) >> shift;
                let mask = if bpv == 64 {
                    u64::MAX
                } else {
                    (1u64 << bpv) - 1
                };
                (v as u64) & mask
            }
        })
    }
}

/// Bits per value DirectReader supports.
pub(crate) fn valid_bpv(bpv: u32) -> bool {
    matches!(
        bpv,
        0 | 1 | 2 | 4 | 8 | 12 | 16 | 20 | 24 | 28 | 32 | 40 | 48 | 56 | 64
    )
}

/// One block of a DirectMonotonic array.
#[derive(Debug, Clone)]
pub(crate) struct MonotonicBlock {
    pub min: i64,
    pub avg: f32,
    pub offset: i64,
    pub bpv: u32,
}

/// DirectMonotonic metadata: `num_values` values in blocks of `2^shift`.
#[derive(Debug, Clone, Default)]
pub(crate) struct MonotonicMeta {
    pub num_values: u64,
    pub shift: u32,
    pub blocks: Vec<MonotonicBlock>,
}

/// A DirectMonotonic array over its data region.
#[derive(Debug, Clone)]
pub(crate) struct Monotonic {
    meta: MonotonicMeta,
    region: Region,
    endian: Endian,
}

impl Monotonic {
    pub fn new(meta: MonotonicMeta, region: Region, endian: Endian) -> Result<Monotonic> {
        for (b, block) in meta.blocks.iter().enumerate() {
            let first = (b as u64) << meta.shift;
            let count = (1u64 << meta.shift).min(meta.num_values - first);
            let bytes = (count * u64::from(block.bpv)).div_ceil(8);
            if block.offset < 0 || (block.offset as u64).saturating_add(bytes) > region.len() {
                return Err(region.corrupt(format!(
                    "monotonic block {b} at {} needs {bytes} bytes, its area has {}",
                    block.offset,
                    region.len()
                )));
            }
        }
        Ok(Monotonic {
            meta,
            region,
            endian,
        })
    }

    pub fn get(&mut self, index: u64) -> Result<i64> {
        if index >= self.meta.num_values {
            return Err(self.region.corrupt(format!(
                "address {index} of {} requested",
                self.meta.num_values
            )));
        }
        let b = (index >> self.meta.shift) as usize;
        let within = index & ((1u64 << self.meta.shift) - 1);
        let block = &self.meta.blocks[b];
        let (min, avg, offset, bpv) = (block.min, block.avg, block.offset, block.bpv);
        let delta = self
            .region
            .packed(offset as u64, within, bpv, self.endian)?;
        Ok(min
            .wrapping_add((avg * within as f32) as i64)
            .wrapping_add(delta as i64))
    }
}
