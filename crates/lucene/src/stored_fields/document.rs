//! Decoding one serialized document: `numStoredFields` × (field number and type as a
//! vLong, then the value). Strings and byte arrays are handed out as slices of the
//! decompressed chunk; numbers use Lucene's compact encodings (zig-zag ints, `TLong`
//! time-unit longs, `ZFloat`/`ZDouble` small-value floats), or, in Lucene 4.x files,
//! fixed-width big-endian ints, longs and IEEE bits.

use crate::data_input::Endian;
use crate::error::{Error, Result};

use super::StoredValue;

const STRING: u64 = 0;
const BYTE_ARR: u64 = 1;
const NUMERIC_INT: u64 = 2;
const NUMERIC_FLOAT: u64 = 3;
const NUMERIC_LONG: u64 = 4;
const NUMERIC_DOUBLE: u64 = 5;

const SECOND: i64 = 1000;
const HOUR: i64 = 60 * 60 * SECOND;
const DAY: i64 = 24 * HOUR;

/// Why a document's bytes could not be decoded; the reader adds file and doc.
pub(crate) struct DocError(pub &'static str);

type DocResult<T> = std::result::Result<T, DocError>;

const TRUNCATED: DocError = DocError("document bytes end inside a field");

/// Reads `num_fields` fields from `data` (exactly one document's bytes) and hands each
/// to `visitor`. Visitor errors pass through unchanged.
#[inline]
pub(crate) fn visit_fields<F>(
    data: &[u8],
    num_fields: u32,
    endian: Endian,
    fixed_width_numbers: bool,
    visitor: &mut F,
) -> std::result::Result<Result<()>, DocError>
where
    F: FnMut(u32, StoredValue<'_>) -> Result<()> + ?Sized,
{
    let mut r = Reader { data, pos: 0 };
    for _ in 0..num_fields {
        let info = r.vlong()?;
        let number = info >> 3;
        if number > u32::MAX as u64 {
            return Err(DocError("field number out of range"));
        }
        let value = match info & 7 {
            STRING => {
                let len = r.vint()? as usize;
                let bytes = r.bytes(len)?;
                StoredValue::String(
                    std::str::from_utf8(bytes)
                        .map_err(|_| DocError("string field is not UTF-8"))?,
                )
            }
            BYTE_ARR => {
                let len = r.vint()? as usize;
                StoredValue::Binary(r.bytes(len)?)
            }
            NUMERIC_INT if fixed_width_numbers => StoredValue::Int(i32::from_be_bytes(r.array()?)),
            NUMERIC_FLOAT if fixed_width_numbers => {
                StoredValue::Float(f32::from_bits(u32::from_be_bytes(r.array()?)))
            }
            NUMERIC_LONG if fixed_width_numbers => {
                StoredValue::Long(i64::from_be_bytes(r.array()?))
            }
            NUMERIC_DOUBLE if fixed_width_numbers => {
                StoredValue::Double(f64::from_bits(u64::from_be_bytes(r.array()?)))
            }
            NUMERIC_INT => {
                let z = r.vint()?;
                StoredValue::Int(((z >> 1) as i32) ^ -((z & 1) as i32))
            }
            NUMERIC_FLOAT => StoredValue::Float(r.zfloat(endian)?),
            NUMERIC_LONG => StoredValue::Long(r.tlong()?),
            NUMERIC_DOUBLE => StoredValue::Double(r.zdouble(endian)?),
            _ => return Err(DocError("unknown stored field type")),
        };
        if let Err(e) = visitor(number as u32, value) {
            return Ok(Err(e));
        }
    }
    if r.pos != data.len() {
        return Err(DocError("document has bytes after its last field"));
    }
    Ok(Ok(()))
}

/// Turns a [`DocError`] into the crate error naming the file and document.
pub(crate) fn doc_error(file: &str, doc: u32, e: DocError) -> Error {
    Error::corrupt(file, format!("doc {doc}: {}", e.0))
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    fn byte(&mut self) -> DocResult<u8> {
        let b = *self.data.get(self.pos).ok_or(TRUNCATED)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> DocResult<[u8; N]> {
        let s = self.data.get(self.pos..self.pos + N).ok_or(TRUNCATED)?;
        self.pos += N;
        Ok(s.try_into().expect("slice of length N"))
    }

    #[inline]
    fn bytes(&mut self, n: usize) -> DocResult<&'a [u8]> {
        if n > self.data.len() - self.pos {
            return Err(TRUNCATED);
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn vint(&mut self) -> DocResult<u32> {
        let b = self.byte()?;
        if b < 0x80 {
            return Ok(u32::from(b));
        }
        let mut v = u32::from(b & 0x7F);
        for shift in [7, 14, 21, 28] {
            let b = self.byte()?;
            if shift == 28 && b & 0xF0 != 0 {
                return Err(DocError("invalid vInt"));
            }
            v |= u32::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(DocError("invalid vInt"))
    }

    #[inline]
    fn vlong(&mut self) -> DocResult<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b & 0xFE != 0 {
                return Err(DocError("invalid vLong"));
            }
            v |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(DocError("invalid vLong"))
    }

    fn i16(&mut self, e: Endian) -> DocResult<u16> {
        let a = self.array::<2>()?;
        Ok(match e {
            Endian::Big => u16::from_be_bytes(a),
            Endian::Little => u16::from_le_bytes(a),
        })
    }

    fn i32(&mut self, e: Endian) -> DocResult<u32> {
        let a = self.array::<4>()?;
        Ok(match e {
            Endian::Big => u32::from_be_bytes(a),
            Endian::Little => u32::from_le_bytes(a),
        })
    }

    fn i64(&mut self, e: Endian) -> DocResult<u64> {
        let a = self.array::<8>()?;
        Ok(match e {
            Endian::Big => u64::from_be_bytes(a),
            Endian::Little => u64::from_le_bytes(a),
        })
    }

    /// `ZFloat`: 0xFF + raw bits (negative), 0x80|v+1 (small ints), else a positive
    /// float written as its top byte, a 16-bit and an 8-bit unit.
    fn zfloat(&mut self, e: Endian) -> DocResult<f32> {
        let h = self.byte()?;
        if h == 0xFF {
            Ok(f32::from_bits(self.i32(e)?))
        } else if h & 0x80 != 0 {
            Ok(((h & 0x7F) as i32 - 1) as f32)
        } else {
            let mid = self.i16(e)?;
            let low = self.byte()?;
            Ok(f32::from_bits(
                (u32::from(h) << 24) | (u32::from(mid) << 8) | u32::from(low),
            ))
        }
    }

    /// `ZDouble`: 0xFF + raw bits (negative), 0xFE + float bits, 0x80|v+1 (small
    /// ints), else a positive double as its top byte, a 32-, a 16- and an 8-bit unit.
    fn zdouble(&mut self, e: Endian) -> DocResult<f64> {
        let h = self.byte()?;
        if h == 0xFF {
            Ok(f64::from_bits(self.i64(e)?))
        } else if h == 0xFE {
            Ok(f64::from(f32::from_bits(self.i32(e)?)))
        } else if h & 0x80 != 0 {
            Ok(((h & 0x7F) as i32 - 1) as f64)
        } else {
            let high = self.i32(e)?;
            let mid = self.i16(e)?;
            let low = self.byte()?;
            Ok(f64::from_bits(
                (u64::from(h) << 56)
                    | (u64::from(high) << 24)
                    | (u64::from(mid) << 8)
                    | u64::from(low),
            ))
        }
    }

    /// `TLong`: low 5 bits of the zig-zag value in the header byte (more in a vLong if
    /// bit 0x20 is set), scaled by the time unit in the top two bits.
    fn tlong(&mut self) -> DocResult<i64> {
        let h = self.byte()?;
        let mut bits = u64::from(h & 0x1F);
        if h & 0x20 != 0 {
            bits |= self.vlong()?.wrapping_shl(5);
        }
        let v = ((bits >> 1) as i64) ^ -((bits & 1) as i64);
        Ok(match h & 0xC0 {
            0x40 => v.wrapping_mul(SECOND),
            0x80 => v.wrapping_mul(HOUR),
            0xC0 => v.wrapping_mul(DAY),
            _ => v,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(data: &[u8], endian: Endian) -> std::result::Result<(u32, String), &'static str> {
        let mut got = None;
        let r = visit_fields(data, 1, endian, false, &mut |n, v: StoredValue<'_>| {
            got = Some((n, format!("{v:?}")));
            Ok(())
        });
        match r {
            Ok(Ok(())) => Ok(got.unwrap()),
            Ok(Err(_)) => Err("visitor"),
            Err(e) => Err(e.0),
        }
    }

    #[test]
    fn numeric_encodings() {
        let be = Endian::Big;
        let le = Endian::Little;
        // field 3, int, zigzag(-3) = 5
        assert_eq!(one(&[3 << 3 | 2, 5], be).unwrap(), (3, "Int(-3)".into()));
        // float small int 0x80 | (7 + 1)
        assert_eq!(one(&[3, 0x88], be).unwrap().1, "Float(7.0)");
        // float negative: 0xFF + bits of -1.5
        let mut d = vec![3, 0xFF];
        d.extend_from_slice(&(-1.5f32).to_bits().to_be_bytes());
        assert_eq!(one(&d, be).unwrap().1, "Float(-1.5)");
        // positive float 0.1: bytes b3 b2 b1 b0 (BE) and b3 b1 b2 b0 (LE).
        let b = 0.1f32.to_bits().to_be_bytes();
        assert_eq!(
            one(&[3, b[0], b[1], b[2], b[3]], be).unwrap().1,
            "Float(0.1)"
        );
        assert_eq!(
            one(&[3, b[0], b[2], b[1], b[3]], le).unwrap().1,
            "Float(0.1)"
        );
        // double 0.1 LE: b7 b3 b4 b5 b6 b1 b2 b0 (b7 most significant)
        let b = 0.1f64.to_bits().to_be_bytes(); // b[0] = b7 .. b[7] = b0
        let le_bytes = [5, b[0], b[4], b[3], b[2], b[1], b[6], b[5], b[7]];
        assert_eq!(one(&le_bytes, le).unwrap().1, "Double(0.1)");
        let mut be_bytes = vec![5];
        be_bytes.extend_from_slice(&b);
        assert_eq!(one(&be_bytes, be).unwrap().1, "Double(0.1)");
        // double as float 0xFE, small int, negative
        let mut d = vec![5, 0xFE];
        d.extend_from_slice(&0.5f32.to_bits().to_le_bytes());
        assert_eq!(one(&d, le).unwrap().1, "Double(0.5)");
        assert_eq!(one(&[5, 0x80], le).unwrap().1, "Double(-1.0)");
        // tlong: days, value 2 → zigzag 4, header 0xC0 | 4
        assert_eq!(one(&[4, 0xC4], le).unwrap().1, format!("Long({})", 2 * DAY));
        // tlong with continuation: zigzag(1000) = 2000 = 0b11111010000 → low 5 bits 16,
        // rest 62, header 0x20 | 16
        assert_eq!(one(&[4, 0x30, 62], le).unwrap().1, "Long(1000)");
    }

    #[test]
    fn strings_bytes_and_errors() {
        assert_eq!(
            one(&[8, 2, b'h', b'i'], Endian::Big).unwrap(),
            (1, "String(\"hi\")".into())
        );
        assert_eq!(one(&[9, 1, 0xFF], Endian::Big).unwrap().1, "Binary([255])");
        assert!(one(&[8, 2, 0xFF, 0xFE], Endian::Big).is_err()); // not UTF-8
        assert!(one(&[9, 5, 1], Endian::Big).is_err()); // truncated
        assert!(one(&[6], Endian::Big).is_err()); // type 6
        assert!(one(&[9, 1, 1, 0], Endian::Big).is_err()); // trailing byte
        assert!(one(&[], Endian::Big).is_err());
    }
}
