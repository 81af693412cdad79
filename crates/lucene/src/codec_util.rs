//! CodecUtil headers and footers, which open and close every Lucene 5+ file.
//!
//! Header: magic `0x3FD76C17`, codec name, format version (big-endian in every version).
//! Index header: header + 16-byte object id + suffix. Footer (last 16 bytes): magic
//! `!0x3FD76C17`, algorithm 0, and a 64-bit field whose low 32 bits are the CRC-32 of
//! every byte before it.

use crate::data_input::{DataInput, Endian};
use crate::directory::FileSlice;
use crate::error::{Error, Result};

/// Magic number at the start of every header.
pub const CODEC_MAGIC: u32 = 0x3FD7_6C17;
/// Magic number at the start of every footer.
pub const FOOTER_MAGIC: u32 = !CODEC_MAGIC;
/// Length of the footer in bytes.
pub const FOOTER_LEN: usize = 16;
/// Length of an object id in an index header.
pub const ID_LEN: usize = 16;

/// A header read without expectations, for dispatch on the file's own codec name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexHeader<'a> {
    pub codec: &'a str,
    pub version: i32,
    pub id: [u8; ID_LEN],
    pub suffix: &'a str,
}

/// Length in bytes of a header written for `codec`.
pub fn header_len(codec: &str) -> usize {
    9 + codec.len()
}

/// Length in bytes of an index header written for `codec` and `suffix`.
pub fn index_header_len(codec: &str, suffix: &str) -> usize {
    header_len(codec) + ID_LEN + 1 + suffix.len()
}

/// Reads a header and returns its codec name and version, checking only the magic.
pub fn read_header<'a>(input: &mut DataInput<'a>) -> Result<(&'a str, i32)> {
    let magic = input.read_i32(Endian::Big)? as u32;
    if magic != CODEC_MAGIC {
        return Err(input.corrupt(format!(
            "codec header magic {magic:#010x}, expected {CODEC_MAGIC:#010x}"
        )));
    }
    let name = input.read_string()?;
    let version = input.read_i32(Endian::Big)?;
    Ok((name, version))
}

/// Reads a header, checks its codec name is `codec` and its version lies in
/// `min..=max`, and returns the version.
pub fn check_header(input: &mut DataInput<'_>, codec: &str, min: i32, max: i32) -> Result<i32> {
    let (name, version) = read_header(input)?;
    check_name_version(input.file(), name, version, codec, min, max)?;
    Ok(version)
}

/// Reads an index header (header, id, suffix) without expectations.
pub fn read_index_header_any<'a>(input: &mut DataInput<'a>) -> Result<IndexHeader<'a>> {
    let (codec, version) = read_header(input)?;
    let id = input.read_array::<ID_LEN>()?;
    let n = input.read_u8()? as usize;
    let start = input.position();
    let suffix = std::str::from_utf8(input.read_bytes(n)?).map_err(|_| {
        Error::corrupt(
            input.file(),
            format!("index header suffix at offset {start} is not UTF-8"),
        )
    })?;
    Ok(IndexHeader {
        codec,
        version,
        id,
        suffix,
    })
}

/// Reads an index header, checks codec, version range, object id and suffix, and
/// returns the version.
pub fn check_index_header(
    input: &mut DataInput<'_>,
    codec: &str,
    min: i32,
    max: i32,
    expected_id: &[u8; ID_LEN],
    expected_suffix: &str,
) -> Result<i32> {
    let h = read_index_header_any(input)?;
    check_name_version(input.file(), h.codec, h.version, codec, min, max)?;
    check_id_suffix(input.file(), &h, expected_id, expected_suffix)?;
    Ok(h.version)
}

/// Checks that an already-read index header carries `expected_id` and `expected_suffix`.
pub fn check_id_suffix(
    file: &str,
    header: &IndexHeader<'_>,
    expected_id: &[u8; ID_LEN],
    expected_suffix: &str,
) -> Result<()> {
    if &header.id != expected_id {
        return Err(Error::corrupt(
            file,
            format!(
                "object id {} in header, expected {}",
                hex(&header.id),
                hex(expected_id)
            ),
        ));
    }
    if header.suffix != expected_suffix {
        return Err(Error::corrupt(
            file,
            format!(
                "header suffix {:?}, expected {:?}",
                header.suffix, expected_suffix
            ),
        ));
    }
    Ok(())
}

/// Checks that a codec name and version read from a header are the expected ones.
pub fn check_name_version(
    file: &str,
    name: &str,
    version: i32,
    codec: &str,
    min: i32,
    max: i32,
) -> Result<()> {
    if name != codec {
        return Err(Error::corrupt(
            file,
            format!("codec {name:?} in header, expected {codec:?}"),
        ));
    }
    if version < min || version > max {
        return Err(Error::unsupported(
            file,
            format!("{codec} format version {version} (supported: {min}..={max})"),
        ));
    }
    Ok(())
}

/// Checks the footer at the end of `bytes` (structure only: magic, algorithm 0, high
/// checksum bits 0) and returns the CRC-32 it records.
pub fn check_footer_bytes(file: &str, bytes: &[u8]) -> Result<u32> {
    if bytes.len() < FOOTER_LEN {
        return Err(Error::corrupt(
            file,
            format!(
                "{} bytes is too short to hold a {FOOTER_LEN}-byte footer",
                bytes.len()
            ),
        ));
    }
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    let mut input = DataInput::new(file, footer);
    let magic = input.read_i32(Endian::Big)? as u32;
    if magic != FOOTER_MAGIC {
        return Err(Error::corrupt(
            file,
            format!(
                "footer magic {magic:#010x}, expected {FOOTER_MAGIC:#010x} (truncated or not a Lucene file)"
            ),
        ));
    }
    let algorithm = input.read_i32(Endian::Big)?;
    if algorithm != 0 {
        return Err(Error::corrupt(
            file,
            format!("footer checksum algorithm {algorithm}, expected 0"),
        ));
    }
    let checksum = input.read_i64(Endian::Big)? as u64;
    if checksum >> 32 != 0 {
        return Err(Error::corrupt(
            file,
            format!("footer checksum {checksum:#x} has high bits set"),
        ));
    }
    Ok(checksum as u32)
}

/// Checks the footer of `slice` (structure only) reading just its last 16 bytes, and
/// returns the CRC-32 it records.
pub fn check_footer(slice: &FileSlice) -> Result<u32> {
    let len = slice.len();
    if len < FOOTER_LEN as u64 {
        return Err(Error::corrupt(
            slice.name(),
            format!("{len} bytes is too short to hold a {FOOTER_LEN}-byte footer"),
        ));
    }
    let tail = slice.read_bytes(len - FOOTER_LEN as u64..len)?;
    check_footer_bytes(slice.name(), &tail)
}

/// Checks the footer of `bytes` and the CRC-32 of everything but its last 8 bytes.
pub fn verify_checksum_bytes(file: &str, bytes: &[u8]) -> Result<u32> {
    let expected = check_footer_bytes(file, bytes)?;
    let actual = crc32fast::hash(&bytes[..bytes.len() - 8]);
    if actual != expected {
        return Err(Error::Checksum {
            file: file.to_string(),
            expected,
            actual,
        });
    }
    Ok(actual)
}

/// Checks a Lucene 4.0–4.7 commit checksum: the last 8 bytes of `bytes` are the CRC-32 of
/// every byte before them as a big-endian long (no footer magic).
pub fn verify_legacy_checksum_bytes(file: &str, bytes: &[u8]) -> Result<u32> {
    if bytes.len() < 8 {
        return Err(Error::corrupt(
            file,
            format!("{} bytes is too short to hold a checksum", bytes.len()),
        ));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 8);
    let stored = u64::from_be_bytes(tail.try_into().expect("8 bytes"));
    let actual = crc32fast::hash(body);
    if stored >> 32 != 0 || stored as u32 != actual {
        return Err(Error::Checksum {
            file: file.to_string(),
            expected: stored as u32,
            actual,
        });
    }
    Ok(actual)
}

/// Checks the footer of `slice` and the CRC-32 of the whole file, read in pieces through
/// one buffer (no allocation per piece; a local file is read straight into it), so remote
/// backends never hold the whole file at once.
pub fn verify_checksum(slice: &FileSlice) -> Result<u32> {
    let expected = check_footer(slice)?;
    let end = slice.len() - 8;
    slice.will_need(0..end);
    let mut hasher = crc32fast::Hasher::new();
    hash_slice(slice, 0..end, &mut hasher)?;
    let actual = hasher.finalize();
    if actual != expected {
        return Err(Error::Checksum {
            file: slice.name().to_string(),
            expected,
            actual,
        });
    }
    Ok(actual)
}

/// Bytes hashed per read by [`hash_slice`]: small enough that a piece is still in the
/// CPU's cache when it is hashed after the read copied it in, large enough that the
/// system calls do not count.
pub const HASH_PIECE: usize = 1 << 20;

/// Adds `slice[range]` to `hasher`, read in [`HASH_PIECE`] pieces through one buffer.
pub fn hash_slice(
    slice: &FileSlice,
    range: std::ops::Range<u64>,
    hasher: &mut crc32fast::Hasher,
) -> Result<()> {
    let len = range.end.saturating_sub(range.start);
    // Bounded by HASH_PIECE whatever the file's length.
    let mut buf = vec![0u8; (len.min(HASH_PIECE as u64)) as usize];
    let mut pos = range.start;
    while pos < range.end {
        let n = ((range.end - pos) as usize).min(buf.len());
        slice.read_into(pos, &mut buf[..n])?;
        hasher.update(&buf[..n]);
        pos += n as u64;
    }
    Ok(())
}

/// Lower-case hex of `bytes` (for ids in messages).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file built the way Lucene writes one: index header, body, footer.
    pub(crate) fn file_with(
        codec: &str,
        version: i32,
        id: &[u8; 16],
        suffix: &str,
        body: &[u8],
    ) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(CODEC_MAGIC.to_be_bytes());
        b.push(codec.len() as u8);
        b.extend(codec.as_bytes());
        b.extend(version.to_be_bytes());
        b.extend(id);
        b.push(suffix.len() as u8);
        b.extend(suffix.as_bytes());
        b.extend(body);
        b.extend(FOOTER_MAGIC.to_be_bytes());
        b.extend(0i32.to_be_bytes());
        let crc = crc32fast::hash(&b);
        b.extend(u64::from(crc).to_be_bytes());
        b
    }

    #[test]
    fn index_header_and_footer_roundtrip() {
        let id = [7u8; 16];
        let b = file_with("Lucene90FieldInfos", 3, &id, "1", b"body");
        assert_eq!(
            b.len(),
            index_header_len("Lucene90FieldInfos", "1") + 4 + FOOTER_LEN
        );
        let mut i = DataInput::new("_0_1.fnm", &b);
        let v = check_index_header(&mut i, "Lucene90FieldInfos", 0, 3, &id, "1").unwrap();
        assert_eq!(v, 3);
        assert_eq!(i.read_bytes(4).unwrap(), b"body");
        let crc = verify_checksum_bytes("_0_1.fnm", &b).unwrap();
        let slice = FileSlice::from_bytes("_0_1.fnm", b.clone());
        assert_eq!(check_footer(&slice).unwrap(), crc);
        assert_eq!(verify_checksum(&slice).unwrap(), crc);

        let mut i = DataInput::new("f", &b);
        let h = read_index_header_any(&mut i).unwrap();
        assert_eq!(
            (h.codec, h.version, h.id, h.suffix),
            ("Lucene90FieldInfos", 3, id, "1")
        );
    }

    #[test]
    fn header_mismatches_are_errors_naming_the_file() {
        let id = [7u8; 16];
        let b = file_with("Lucene90FieldInfos", 3, &id, "", b"");
        let cases: [(&str, i32, i32, [u8; 16], &str); 4] = [
            ("Other", 0, 3, id, ""),
            ("Lucene90FieldInfos", 0, 2, id, ""),
            ("Lucene90FieldInfos", 0, 3, [0; 16], ""),
            ("Lucene90FieldInfos", 0, 3, id, "x"),
        ];
        for (codec, min, max, eid, suffix) in cases {
            let mut i = DataInput::new("x.fnm", &b);
            let e = check_index_header(&mut i, codec, min, max, &eid, suffix).unwrap_err();
            assert_eq!(e.file(), "x.fnm");
        }
        let mut i = DataInput::new("x.fnm", &b);
        assert!(matches!(
            check_index_header(&mut i, "Lucene90FieldInfos", 0, 2, &id, ""),
            Err(Error::Unsupported { .. })
        ));
        let mut bad = b.clone();
        bad[0] ^= 1;
        assert!(read_header(&mut DataInput::new("x", &bad)).is_err());
    }

    #[test]
    fn footer_corruption() {
        let b = file_with("C", 0, &[0; 16], "", b"payload");
        let n = b.len();
        let mut flipped = b.clone();
        flipped[n - 20] ^= 0x40;
        assert!(matches!(
            verify_checksum_bytes("f", &flipped),
            Err(Error::Checksum { .. })
        ));
        // structural check still passes: only the body changed
        assert!(check_footer_bytes("f", &flipped).is_ok());
        let mut high = b.clone();
        high[n - 8] = 1;
        assert!(check_footer_bytes("f", &high).is_err());
        let mut algo = b.clone();
        algo[n - 9] = 1;
        assert!(check_footer_bytes("f", &algo).is_err());
        assert!(check_footer_bytes("f", &b[..n - 1]).is_err());
        assert!(check_footer_bytes("f", &b[..3]).is_err());
        let slice = FileSlice::from_bytes("g", b[..10].to_vec());
        assert_eq!(check_footer(&slice).unwrap_err().file(), "g");
        let slice = FileSlice::from_bytes("g", flipped);
        assert!(matches!(
            verify_checksum(&slice),
            Err(Error::Checksum { .. })
        ));
    }
}
