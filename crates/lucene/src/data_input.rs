//! Bounds-checked decoding of Lucene's primitive types from a byte slice.
//!
//! Fixed-width integers take an explicit [`Endian`]: Lucene 5–8 formats are big-endian,
//! Lucene 9+ formats little-endian, CodecUtil headers and `segments_N` always big-endian.
//! Every read that would run past the end returns [`Error::Truncated`]; every malformed
//! value returns [`Error::Corrupt`]; both name the file. Counts read from the file are
//! checked against the bytes that remain before anything is allocated for them.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Byte order of fixed-width integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Big,
    Little,
}

/// A cursor over the bytes of one file (or a part of one), named for error messages.
#[derive(Debug, Clone)]
pub struct DataInput<'a> {
    file: &'a str,
    data: &'a [u8],
    pos: usize,
}

impl<'a> DataInput<'a> {
    /// A cursor at the start of `data`; `file` names it in errors.
    pub fn new(file: &'a str, data: &'a [u8]) -> Self {
        DataInput { file, data, pos: 0 }
    }

    /// The file name used in errors.
    pub fn file(&self) -> &'a str {
        self.file
    }

    /// All the bytes this cursor reads from.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Total length in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there are no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Current offset from the start.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current position.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Moves to `pos` (at most the length).
    pub fn seek(&mut self, pos: u64) -> Result<()> {
        if pos > self.data.len() as u64 {
            return Err(self.truncated());
        }
        self.pos = pos as usize;
        Ok(())
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: u64) -> Result<()> {
        if n > self.remaining() as u64 {
            return Err(self.truncated());
        }
        self.pos += n as usize;
        Ok(())
    }

    /// An error naming this file as truncated.
    pub fn truncated(&self) -> Error {
        Error::truncated(self.file)
    }

    /// An error naming this file as corrupt for `reason`, with the current offset.
    pub fn corrupt(&self, reason: impl std::fmt::Display) -> Error {
        Error::corrupt(self.file, format!("{reason} (at offset {})", self.pos))
    }

    /// One byte.
    #[inline]
    pub fn read_u8(&mut self) -> Result<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.truncated()),
        }
    }

    /// The next `n` bytes, borrowed.
    #[inline]
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated());
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn read_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.read_bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// A 16-bit integer.
    pub fn read_i16(&mut self, endian: Endian) -> Result<i16> {
        let a = self.read_array::<2>()?;
        Ok(match endian {
            Endian::Big => i16::from_be_bytes(a),
            Endian::Little => i16::from_le_bytes(a),
        })
    }

    /// A 32-bit integer.
    #[inline]
    pub fn read_i32(&mut self, endian: Endian) -> Result<i32> {
        let a = self.read_array::<4>()?;
        Ok(match endian {
            Endian::Big => i32::from_be_bytes(a),
            Endian::Little => i32::from_le_bytes(a),
        })
    }

    /// A 64-bit integer.
    #[inline]
    pub fn read_i64(&mut self, endian: Endian) -> Result<i64> {
        let a = self.read_array::<8>()?;
        Ok(match endian {
            Endian::Big => i64::from_be_bytes(a),
            Endian::Little => i64::from_le_bytes(a),
        })
    }

    /// A variable-length int: 7 bits per byte, low groups first, at most 5 bytes.
    /// Negative values (5 bytes) are accepted, as Lucene writes them.
    #[inline]
    pub fn read_vint(&mut self) -> Result<i32> {
        let mut result: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.read_u8()?;
            if shift == 28 && b & 0xF0 != 0 {
                return Err(self.corrupt("invalid vInt (more than 32 bits)"));
            }
            result |= u32::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(result as i32);
            }
        }
        unreachable!("the fifth byte either ends the vInt or is rejected")
    }

    /// A variable-length long: at most 9 bytes, never negative.
    #[inline]
    pub fn read_vlong(&mut self) -> Result<i64> {
        let v = self.read_var_u64()?;
        if v > i64::MAX as u64 {
            return Err(self.corrupt("invalid vLong (negative)"));
        }
        Ok(v as i64)
    }

    /// A zig-zag encoded variable-length int.
    pub fn read_zint(&mut self) -> Result<i32> {
        let u = self.read_vint()? as u32;
        Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
    }

    /// A zig-zag encoded variable-length long (up to 10 bytes).
    pub fn read_zlong(&mut self) -> Result<i64> {
        let u = self.read_var_u64()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn read_var_u64(&mut self) -> Result<u64> {
        let mut result: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = self.read_u8()?;
            if shift == 63 && b & 0xFE != 0 {
                return Err(self.corrupt("invalid vLong (more than 64 bits)"));
            }
            result |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(result);
            }
        }
        unreachable!("the tenth byte either ends the vLong or is rejected")
    }

    /// A non-negative vInt used as a length or count, checked to be at most the bytes
    /// remaining divided by `min_bytes_each` (the smallest encoding of one element).
    pub fn read_count(&mut self, min_bytes_each: usize, what: &str) -> Result<usize> {
        let n = self.read_vint()?;
        self.check_count(i64::from(n), min_bytes_each, what)
    }

    /// Checks a count read from the file (by any means) against the remaining bytes.
    pub fn check_count(&self, n: i64, min_bytes_each: usize, what: &str) -> Result<usize> {
        if n < 0 {
            return Err(self.corrupt(format!("negative {what} count {n}")));
        }
        let max = self.remaining() / min_bytes_each.max(1);
        if n as u64 > max as u64 {
            return Err(Error::Corrupt {
                file: self.file.to_string(),
                reason: format!(
                    "{what} count {n} exceeds what the remaining {} bytes can hold (at offset {})",
                    self.remaining(),
                    self.pos
                ),
            });
        }
        Ok(n as usize)
    }

    /// A string: vInt byte length, then UTF-8.
    pub fn read_string(&mut self) -> Result<&'a str> {
        let n = self.read_vint()?;
        let n = self.check_count(i64::from(n), 1, "string byte")?;
        let start = self.pos;
        let bytes = self.read_bytes(n)?;
        std::str::from_utf8(bytes).map_err(|e| {
            Error::corrupt(
                self.file,
                format!("string at offset {start} is not UTF-8: {e}"),
            )
        })
    }

    /// A map of strings: vInt count, then (key, value) pairs.
    pub fn read_map_of_strings(&mut self) -> Result<BTreeMap<String, String>> {
        let n = self.read_count(2, "map entry")?;
        self.read_map_entries(n)
    }

    /// A set of strings: vInt count, then strings (kept in file order, duplicates removed).
    pub fn read_set_of_strings(&mut self) -> Result<Vec<String>> {
        let n = self.read_count(1, "set element")?;
        self.read_set_elements(n)
    }

    /// The Lucene 5.0-era map: Int32 (big-endian) count, then (key, value) pairs.
    pub fn read_legacy_map_of_strings(&mut self) -> Result<BTreeMap<String, String>> {
        let n = self.read_i32(Endian::Big)?;
        let n = self.check_count(i64::from(n), 2, "map entry")?;
        self.read_map_entries(n)
    }

    /// The Lucene 5.0-era set: Int32 (big-endian) count, then strings.
    pub fn read_legacy_set_of_strings(&mut self) -> Result<Vec<String>> {
        let n = self.read_i32(Endian::Big)?;
        let n = self.check_count(i64::from(n), 1, "set element")?;
        self.read_set_elements(n)
    }

    fn read_map_entries(&mut self, n: usize) -> Result<BTreeMap<String, String>> {
        let mut map = BTreeMap::new();
        for _ in 0..n {
            let k = self.read_string()?;
            let v = self.read_string()?;
            map.insert(k.to_string(), v.to_string());
        }
        Ok(map)
    }

    fn read_set_elements(&mut self, n: usize) -> Result<Vec<String>> {
        let mut seen = std::collections::HashSet::new();
        let mut set: Vec<String> = Vec::with_capacity(n.min(self.remaining()));
        for _ in 0..n {
            let s = self.read_string()?;
            if seen.insert(s) {
                set.push(s.to_string());
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vint(mut v: u32) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8 & 0x7F) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    fn vlong(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8 & 0x7F) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    #[test]
    fn fixed_width_both_orders() {
        let b = [1, 2, 3, 4, 5, 6, 7, 8];
        let mut i = DataInput::new("f", &b);
        assert_eq!(i.read_i32(Endian::Big).unwrap(), 0x01020304);
        assert_eq!(i.read_i32(Endian::Little).unwrap(), 0x08070605);
        i.seek(0).unwrap();
        assert_eq!(i.read_i64(Endian::Big).unwrap(), 0x0102030405060708);
        i.seek(0).unwrap();
        assert_eq!(i.read_i64(Endian::Little).unwrap(), 0x0807060504030201);
        i.seek(6).unwrap();
        assert_eq!(i.read_i16(Endian::Big).unwrap(), 0x0708);
        assert!(matches!(i.read_u8(), Err(Error::Truncated { .. })));
        assert!(i.seek(9).is_err());
        assert!(i.skip(1).is_err());
    }

    #[test]
    fn vints_roundtrip() {
        for v in [
            0u32,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX >> 1,
            u32::MAX,
        ] {
            let b = vint(v);
            let mut i = DataInput::new("f", &b);
            assert_eq!(i.read_vint().unwrap() as u32, v);
            assert_eq!(i.remaining(), 0);
        }
        for v in [0u64, 1, 1 << 35, i64::MAX as u64] {
            let b = vlong(v);
            let mut i = DataInput::new("f", &b);
            assert_eq!(i.read_vlong().unwrap() as u64, v);
        }
        // six-byte vint and over-long vlongs are corrupt, not panics
        let mut i = DataInput::new("f", &[0xFF, 0xFF, 0xFF, 0xFF, 0x1F]);
        assert!(matches!(i.read_vint(), Err(Error::Corrupt { .. })));
        let b = vlong(u64::MAX);
        assert!(DataInput::new("f", &b).read_vlong().is_err());
        let mut i = DataInput::new("f", &[0xFF; 12]);
        assert!(i.read_zlong().is_err());
        // truncated in the middle
        assert!(matches!(
            DataInput::new("f", &[0x80]).read_vint(),
            Err(Error::Truncated { .. })
        ));
    }

    #[test]
    fn zigzag() {
        for (enc, dec) in [(0u32, 0i32), (1, -1), (2, 1), (3, -2), (u32::MAX, i32::MIN)] {
            let b = vint(enc);
            assert_eq!(DataInput::new("f", &b).read_zint().unwrap(), dec);
        }
        for (enc, dec) in [(0u64, 0i64), (1, -1), (4, 2), (u64::MAX, i64::MIN)] {
            let b = vlong(enc);
            assert_eq!(DataInput::new("f", &b).read_zlong().unwrap(), dec);
        }
    }

    #[test]
    fn strings_maps_sets() {
        let mut b = vec![2];
        b.extend(vint(1));
        b.extend(b"a");
        b.extend(vint(2));
        b.extend(b"bc");
        b.extend(vint(1));
        b.extend(b"x");
        b.extend(vint(0));
        // set of 2
        b.extend(vint(2));
        b.extend(vint(1));
        b.extend(b"s");
        b.extend(vint(1));
        b.extend(b"s");
        // legacy map with 1 entry
        b.extend(1i32.to_be_bytes());
        b.extend(vint(1));
        b.extend(b"k");
        b.extend(vint(1));
        b.extend(b"v");
        let mut i = DataInput::new("f", &b);
        let m = i.read_map_of_strings().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m["a"], "bc");
        assert_eq!(m["x"], "");
        assert_eq!(i.read_set_of_strings().unwrap(), vec!["s".to_string()]);
        let m = i.read_legacy_map_of_strings().unwrap();
        assert_eq!(m["k"], "v");
        assert_eq!(i.remaining(), 0);
    }

    #[test]
    fn huge_counts_are_rejected_before_allocation() {
        let b = vint(1 << 30);
        let e = DataInput::new("seg.fnm", &b)
            .read_set_of_strings()
            .unwrap_err();
        assert!(e.to_string().starts_with("seg.fnm:"), "{e}");
        let b = [0x7F, 0xFF, 0xFF, 0xFF];
        assert!(DataInput::new("f", &b)
            .read_legacy_set_of_strings()
            .is_err());
        let b = [0xFF, 0xFF, 0xFF, 0xFF, 0x0F];
        assert!(DataInput::new("f", &b).read_string().is_err());
        let b = [2, 0xC3, 0x28];
        assert!(matches!(
            DataInput::new("f", &b).read_string(),
            Err(Error::Corrupt { .. })
        ));
    }
}
