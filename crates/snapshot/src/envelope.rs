//! The checksummed envelope around every `.dat` metadata blob and shard `index-*` blob:
//! Lucene-style header (magic, codec name, version), payload, footer (magic, algorithm,
//! CRC-32 of everything before the checksum). The payload may be compressed with
//! `DFL\0` (raw deflate) or `ZSTD\0`, detected from the bytes right after the header.

use std::io::Read;

use bytes::Bytes;

use crate::error::{Error, Result};

use lucene::codec_util::{CODEC_MAGIC, FOOTER_MAGIC};
const FOOTER_LEN: usize = 16;
/// Decompressed metadata larger than this is refused (a corrupt or hostile blob).
const MAX_DECOMPRESSED: u64 = 2 << 30;

/// Codec names of the envelope, by blob kind.
pub mod codec {
    /// Root and shard `snap-*.dat`.
    pub const SNAPSHOT: &str = "snapshot";
    /// Root `meta-*.dat` (global metadata).
    pub const METADATA: &str = "metadata";
    /// `indices/<id>/meta-*.dat`.
    pub const INDEX_METADATA: &str = "index-metadata";
    /// Shard `index-*` (all snapshots of a shard).
    pub const SNAPSHOTS: &str = "snapshots";
}

/// How the payload of an envelope is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeCompression {
    None,
    /// `DFL\0` then a raw deflate stream.
    Deflate,
    /// `ZSTD\0` then zstd frames (OpenSearch).
    Zstd,
}

/// The content of an envelope: what the header said and the (decompressed) payload,
/// SMILE or JSON.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub codec: String,
    pub version: i32,
    pub compression: EnvelopeCompression,
    pub content: Bytes,
}

fn read_vint(data: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *data.get(*pos)?;
        *pos += 1;
        v |= u32::from(b & 0x7F).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn be_u32(data: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// Checks the header, footer and CRC-32 of `data` (the bytes of blob `blob`), requires
/// the codec name `expected_codec`, and returns the decompressed payload.
pub fn open(blob: &str, data: &[u8], expected_codec: &str) -> Result<Envelope> {
    let corrupt = |reason: String| Error::corrupt(blob, reason);
    if data.len() < 4 + 1 + 4 + FOOTER_LEN {
        return Err(corrupt(format!(
            "{} bytes is too short for an envelope",
            data.len()
        )));
    }
    let magic = be_u32(data, 0);
    if magic != CODEC_MAGIC {
        return Err(corrupt(format!(
            "header magic {magic:#010x}, expected {CODEC_MAGIC:#010x}"
        )));
    }
    let mut pos = 4;
    let name_len =
        read_vint(data, &mut pos).ok_or_else(|| corrupt("bad codec name length".into()))? as usize;
    if name_len > 128 || pos + name_len + 4 > data.len() - FOOTER_LEN {
        return Err(corrupt(format!(
            "codec name length {name_len} is impossible"
        )));
    }
    let codec = std::str::from_utf8(&data[pos..pos + name_len])
        .map_err(|_| corrupt("codec name is not UTF-8".into()))?
        .to_string();
    pos += name_len;
    let version = be_u32(data, pos) as i32;
    pos += 4;
    let footer = data.len() - FOOTER_LEN;
    let fmagic = be_u32(data, footer);
    if fmagic != FOOTER_MAGIC {
        return Err(corrupt(format!(
            "footer magic {fmagic:#010x}, expected {FOOTER_MAGIC:#010x} (truncated?)"
        )));
    }
    let algo = be_u32(data, footer + 4);
    if algo != 0 {
        return Err(corrupt(format!("unknown checksum algorithm {algo}")));
    }
    let stored = u64::from_be_bytes(data[footer + 8..].try_into().expect("8 bytes"));
    let actual = crc32fast::hash(&data[..data.len() - 8]);
    if stored != u64::from(actual) {
        return Err(corrupt(format!(
            "checksum mismatch: stored {stored:#x}, computed {actual:#010x}"
        )));
    }
    if codec != expected_codec {
        return Err(corrupt(format!(
            "codec {codec:?}, expected {expected_codec:?}"
        )));
    }
    if version != 1 {
        return Err(Error::Unsupported {
            blob: blob.to_string(),
            what: format!("envelope format version {version} (only 1 is known)"),
        });
    }
    let payload = &data[pos..footer];
    let (compression, content) = decompress(blob, payload)?;
    Ok(Envelope {
        codec,
        version,
        compression,
        content,
    })
}

/// Removes a `DFL\0` / `ZSTD\0` compression header if present.
pub fn decompress(blob: &str, payload: &[u8]) -> Result<(EnvelopeCompression, Bytes)> {
    if let Some(rest) = payload.strip_prefix(b"DFL\0") {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(rest)
            .take(MAX_DECOMPRESSED)
            .read_to_end(&mut out)
            .map_err(|e| Error::corrupt(blob, format!("DFL (raw deflate) payload: {e}")))?;
        return Ok((EnvelopeCompression::Deflate, Bytes::from(out)));
    }
    if payload.starts_with(b"ZSTD") {
        let rest = payload
            .strip_prefix(b"ZSTD\0")
            .ok_or_else(|| Error::corrupt(blob, "ZSTD header without its zero byte"))?;
        let mut out = Vec::new();
        zstd::stream::read::Decoder::new(rest)
            .map_err(|e| Error::corrupt(blob, format!("ZSTD payload: {e}")))?
            .take(MAX_DECOMPRESSED)
            .read_to_end(&mut out)
            .map_err(|e| Error::corrupt(blob, format!("ZSTD payload: {e}")))?;
        return Ok((EnvelopeCompression::Zstd, Bytes::from(out)));
    }
    Ok((EnvelopeCompression::None, Bytes::copy_from_slice(payload)))
}

/// Wraps `content` in an envelope with codec `codec`, compressing it as asked. Used by
/// the repository writer ([`crate::write`]).
pub fn seal(codec: &str, content: &[u8], compression: EnvelopeCompression) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 64);
    out.extend_from_slice(&CODEC_MAGIC.to_be_bytes());
    let mut n = codec.len() as u32;
    loop {
        if n < 0x80 {
            out.push(n as u8);
            break;
        }
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.extend_from_slice(codec.as_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    match compression {
        EnvelopeCompression::None => out.extend_from_slice(content),
        EnvelopeCompression::Deflate => {
            use std::io::Write;
            out.extend_from_slice(b"DFL\0");
            let mut enc = flate2::write::DeflateEncoder::new(&mut out, flate2::Compression::new(3));
            enc.write_all(content).expect("writing to a Vec");
            enc.finish().expect("writing to a Vec");
        }
        EnvelopeCompression::Zstd => {
            out.extend_from_slice(b"ZSTD\0");
            let z = zstd::bulk::compress(content, 3).expect("zstd compression of a buffer");
            out.extend_from_slice(&z);
        }
    }
    out.extend_from_slice(&FOOTER_MAGIC.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&u64::from(crc).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_compression_and_detects_damage() {
        let content = b":)\n\x05\xfa\x80a\x20\xfb".repeat(50);
        for c in [
            EnvelopeCompression::None,
            EnvelopeCompression::Deflate,
            EnvelopeCompression::Zstd,
        ] {
            let sealed = seal(codec::SNAPSHOT, &content, c);
            let env = open("b", &sealed, codec::SNAPSHOT).unwrap();
            assert_eq!(env.compression, c);
            assert_eq!(&env.content[..], &content[..]);
            assert!(open("b", &sealed, codec::METADATA).is_err());
            let mut bad = sealed.clone();
            let mid = bad.len() / 2;
            bad[mid] ^= 1;
            let err = open("indices/x/meta-1.dat", &bad, codec::SNAPSHOT).unwrap_err();
            assert!(err.to_string().contains("indices/x/meta-1.dat"), "{err}");
            assert!(open("b", &sealed[..sealed.len() - 1], codec::SNAPSHOT).is_err());
        }
        assert!(open("b", b"short", codec::SNAPSHOT).is_err());
    }
}
