//! Elasticsearch documents as stored in Lucene: `_id` decoding (binary ids of ES 6+,
//! `_uid` of ES ≤ 5), and `_source` turned into single-line JSON.

use base64::Engine;
use bytes::Bytes;

use crate::json;

/// One live document of a snapshot (of the index the reader was opened on).
#[derive(Debug, Clone, PartialEq)]
pub struct EsDocument {
    pub id: String,
    /// The mapping type: from `_uid` (ES ≤ 5) or the index's single mapping type (ES 6);
    /// `None` for indices created by ES 7+.
    pub doc_type: Option<String>,
    pub routing: Option<String>,
    /// JSON on one line (no `\n` or `\r` bytes).
    pub source: Bytes,
    /// Shard-global Lucene doc id (segments in commit order, deleted docs counted): the
    /// resumable cursor of a work item.
    pub global_doc_id: u64,
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Why a stored binary `_id` cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("empty _id")]
    Empty,
    #[error("numeric _id without digits")]
    NoDigits,
    #[error("numeric _id with nibble {0:#x}")]
    Nibble(u8),
    #[error("UTF-8 _id is not valid UTF-8")]
    NotUtf8(#[source] std::string::FromUtf8Error),
}

/// Why a stored `_source` cannot be sent as JSON.
#[derive(Debug, thiserror::Error)]
pub enum SourceBytesError {
    #[error("LZF-compressed _source")]
    Lzf(#[source] Box<crate::Error>),
    #[error("DEFLATE-compressed _source")]
    Deflate(#[source] Box<crate::Error>),
    #[error("_source is not valid JSON")]
    Json(#[source] json::JsonError),
    #[error("SMILE _source")]
    Smile(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("CBOR _source")]
    Cbor(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("YAML _source")]
    Yaml(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The first bytes, to tell what it is.
    #[error("_source is not JSON, SMILE, CBOR or YAML (starts with {0:02x?})")]
    Unknown(Vec<u8>),
    #[error("_source is not an object")]
    NotObject,
    #[error("_source as JSON")]
    Encode(#[source] serde_json::Error),
}

/// Decodes the binary `_id` of indices created by ES 6+: `0xFE` + packed decimal digits,
/// `0xFF` + UTF-8, `0xFD` + bytes of a base64url id that began with a byte ≥ 0xFD, or the
/// bytes of a base64url id.
pub fn decode_id(bytes: &[u8]) -> Result<String, IdError> {
    match bytes.first() {
        None => Err(IdError::Empty),
        Some(0xFE) => {
            let digits = &bytes[1..];
            if digits.is_empty() {
                return Err(IdError::NoDigits);
            }
            let mut s = String::with_capacity(digits.len() * 2);
            for (i, b) in digits.iter().enumerate() {
                let (hi, lo) = (b >> 4, b & 0x0F);
                if hi > 9 {
                    return Err(IdError::Nibble(hi));
                }
                s.push((b'0' + hi) as char);
                if lo == 0x0F && i + 1 == digits.len() {
                    break;
                }
                if lo > 9 {
                    return Err(IdError::Nibble(lo));
                }
                s.push((b'0' + lo) as char);
            }
            Ok(s)
        }
        Some(0xFF) => String::from_utf8(bytes[1..].to_vec()).map_err(IdError::NotUtf8),
        Some(0xFD) => Ok(B64.encode(&bytes[1..])),
        Some(_) => Ok(B64.encode(bytes)),
    }
}

/// The encoding of `id` that ES 6+ stores (inverse of [`decode_id`]); used by the
/// repository writer and tests.
pub fn encode_id(id: &str) -> Vec<u8> {
    let b = id.as_bytes();
    if !b.is_empty() && b.iter().all(u8::is_ascii_digit) {
        let mut out = vec![0xFE];
        for pair in b.chunks(2) {
            let hi = pair[0] - b'0';
            let lo = pair.get(1).map_or(0x0F, |d| d - b'0');
            out.push(hi << 4 | lo);
        }
        return out;
    }
    let b64_ok = !b.is_empty()
        && b.len() % 4 != 1
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_');
    if b64_ok {
        if let Ok(decoded) = B64.decode(b) {
            // Only canonical encodings round-trip (unused trailing bits zero).
            if B64.encode(&decoded) == id {
                if decoded.first().is_some_and(|&f| f >= 0xFD) {
                    let mut out = vec![0xFD];
                    out.extend_from_slice(&decoded);
                    return out;
                }
                return decoded;
            }
        }
    }
    let mut out = vec![0xFF];
    out.extend_from_slice(b);
    out
}

/// Splits an ES ≤ 5 `_uid` (`type#id`) at the first `#`.
pub fn split_uid(uid: &str) -> Option<(&str, &str)> {
    uid.split_once('#')
}

/// What a stored `_source` was encoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    Json,
    Smile,
    Cbor,
    Yaml,
}

/// Detects the content type of a stored `_source`.
pub fn sniff_source(raw: &[u8]) -> Option<SourceFormat> {
    if raw.starts_with(b":)\n") {
        return Some(SourceFormat::Smile);
    }
    if raw.starts_with(&[0xD9, 0xD9, 0xF7])
        || raw.first().is_some_and(|&b| (0xA0..=0xBF).contains(&b))
    {
        return Some(SourceFormat::Cbor);
    }
    if raw.starts_with(b"---") {
        return Some(SourceFormat::Yaml);
    }
    match raw.iter().find(|b| !b.is_ascii_whitespace()) {
        // A comment may come first (Elasticsearch's JSON parser allows comments).
        Some(b'{' | b'/') => Some(SourceFormat::Json),
        _ => None,
    }
}

/// `_source` as single-line JSON: checked to be one valid JSON value, then passed through
/// when it has no line breaks and no comments, minified (same JSON value, same bytes
/// otherwise, comments dropped) when it has; converted from SMILE, CBOR or YAML. The error
/// says why the bytes cannot be sent.
pub fn normalize_source(raw: &[u8]) -> Result<Bytes, SourceBytesError> {
    normalize_source_in(raw, None)
}

/// [`normalize_source`] of `raw` lying in `owner`: JSON that needs no change is returned
/// as a share of `owner` (no copy) instead of a copy.
pub fn normalize_source_in(raw: &[u8], owner: Option<&Bytes>) -> Result<Bytes, SourceBytesError> {
    // Elasticsearch 1.x `_source: {compress: true}` stored LZF chunks (`ZV\0`/`ZV\1`); a
    // `DFL\0` header is the raw-DEFLATE form of the same wrapper (docs/specs/es-legacy.md).
    if crate::lzf::is_lzf(raw) {
        let plain = crate::lzf::decompress("_source", raw)
            .map_err(|e| SourceBytesError::Lzf(Box::new(e)))?;
        return normalize_uncompressed(&plain, None);
    }
    if raw.starts_with(b"DFL\0") {
        let (_, plain) = crate::envelope::decompress("_source", raw)
            .map_err(|e| SourceBytesError::Deflate(Box::new(e)))?;
        return normalize_uncompressed(&plain, None);
    }
    normalize_uncompressed(raw, owner)
}

/// [`normalize_source_in`] of bytes that are not compressed.
fn normalize_uncompressed(raw: &[u8], owner: Option<&Bytes>) -> Result<Bytes, SourceBytesError> {
    match sniff_source(raw) {
        Some(SourceFormat::Json) => {
            let scan = json::check_value(raw).map_err(SourceBytesError::Json)?;
            if !scan.line_breaks && !scan.comments {
                let source = share(owner, raw);
                json::note_checked(&source);
                return Ok(source);
            }
            Ok(Bytes::from(minify_json(raw)))
        }
        Some(SourceFormat::Smile) => {
            let v: serde_smile::value::Value =
                serde_smile::from_slice(raw).map_err(|e| SourceBytesError::Smile(e.into()))?;
            to_json_bytes(&crate::xcontent::smile_to_json(v))
        }
        Some(SourceFormat::Cbor) => {
            let v: ciborium::Value =
                ciborium::from_reader(raw).map_err(|e| SourceBytesError::Cbor(e.into()))?;
            to_json_bytes(&crate::xcontent::cbor_to_json(v))
        }
        Some(SourceFormat::Yaml) => {
            let v: serde_json::Value =
                serde_yaml_ng::from_slice(raw).map_err(|e| SourceBytesError::Yaml(e.into()))?;
            to_json_bytes(&v)
        }
        None => Err(SourceBytesError::Unknown(raw[..raw.len().min(8)].to_vec())),
    }
}

/// `part` as bytes sharing `owner` when it lies inside it, else a copy.
fn share(owner: Option<&Bytes>, part: &[u8]) -> Bytes {
    match owner {
        Some(o)
            if o.as_ptr_range().start <= part.as_ptr_range().start
                && part.as_ptr_range().end <= o.as_ptr_range().end =>
        {
            o.slice_ref(part)
        }
        _ => Bytes::copy_from_slice(part),
    }
}

fn to_json_bytes(v: &serde_json::Value) -> Result<Bytes, SourceBytesError> {
    if !v.is_object() {
        return Err(SourceBytesError::NotObject);
    }
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(SourceBytesError::Encode)
}

/// Drops whitespace and comments outside strings of JSON already checked to be valid
/// (by [`json::check_value`], so a `/` outside a string starts a closed comment);
/// everything else is kept byte for byte.
fn minify_json(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        i += 1;
        if b == b'/' && !in_string {
            let rest = &raw[i..];
            i += match rest.first() {
                // `/*/` does not close: the search starts after the `*`.
                Some(b'*') => {
                    memchr::memmem::find(&rest[1..], b"*/").map_or(rest.len(), |k| 1 + k + 2)
                }
                _ => memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len()),
            };
            continue;
        }
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b'"' => {
                    in_string = true;
                    out.push(b);
                }
                _ => out.push(b),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_from_the_fixtures_decode() {
        // unchangeddoc is valid base64url: stored as its 9 decoded bytes.
        assert_eq!(encode_id("unchangeddoc").len(), 9);
        assert_eq!(
            decode_id(&encode_id("unchangeddoc")).unwrap(),
            "unchangeddoc"
        );
        assert_eq!(encode_id("complexdoc")[0], 0xFF);
        assert_eq!(encode_id("12345"), vec![0xFE, 0x12, 0x34, 0x5F]);
        assert_eq!(decode_id(&[0xFE, 0x12, 0x34, 0x5F]).unwrap(), "12345");
        assert_eq!(decode_id(&[0xFE, 0x12, 0x34]).unwrap(), "1234");
        assert_eq!(
            encode_id("_w")[0],
            0xFD,
            "decodes to 0xFF…, needs the escape"
        );
        assert!(decode_id(&[]).is_err());
        assert!(decode_id(&[0xFE, 0xA1]).is_err());
        assert_eq!(split_uid("type1#a#b"), Some(("type1", "a#b")));
    }

    proptest! {
        #[test]
        fn any_id_round_trips(id in "[a-zA-Z0-9_#\\-é ]{1,30}") {
            prop_assert_eq!(decode_id(&encode_id(&id)).unwrap(), id);
        }

        #[test]
        fn minify_keeps_the_json_value(v in proptest::collection::btree_map("[a-z\\n \"\\\\]{0,6}", "[a-z0-9 \\n\"]{0,8}", 0..6)) {
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            let out = normalize_source(pretty.as_bytes()).unwrap();
            prop_assert!(!out.contains(&b'\n'));
            let back: std::collections::BTreeMap<String, String> = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(back, v);
        }
    }

    proptest! {
        /// Comments at every line end and before the value (as Elasticsearch accepts
        /// them) are dropped; what remains is the compact JSON of the same value.
        #[test]
        fn comments_are_dropped(v in proptest::collection::btree_map("[a-z/*\n \"\\\\]{0,6}", "[a-z0-9/* \n\"]{0,8}", 0..6)) {
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            let commented = format!("/* head */ {}", pretty.replace('\n', " // note */ /*\n"));
            let out = normalize_source(commented.as_bytes()).unwrap();
            prop_assert_eq!(&out[..], &serde_json::to_vec(&v).unwrap()[..]);
        }
    }

    /// Single-line JSON inside its chunk is shared, not copied; anything changed, or not
    /// inside the owner, is new bytes.
    #[test]
    fn single_line_json_is_shared_from_its_chunk() {
        let chunk = Bytes::from_static(b"xx{\"a\":1}yy{\n\"b\": 2}zz");
        let within = |b: &Bytes| chunk.as_ptr_range().contains(&b.as_ptr());
        let one = normalize_source_in(&chunk[2..9], Some(&chunk)).unwrap();
        assert_eq!(&one[..], br#"{"a":1}"#);
        assert!(within(&one));
        let pretty = normalize_source_in(&chunk[11..20], Some(&chunk)).unwrap();
        assert_eq!(&pretty[..], br#"{"b":2}"#);
        assert!(!within(&pretty));
        let elsewhere = br#"{"c":3}"#;
        let copied = normalize_source_in(elsewhere, Some(&chunk)).unwrap();
        assert_eq!(&copied[..], elsewhere);
        assert!(!within(&copied));
    }

    #[test]
    fn sources_are_normalized() {
        let single = br#"{"a":1}"#;
        assert_eq!(&normalize_source(single).unwrap()[..], single);
        let padded = b"\n\n\n{\n  \"content\": \"x\\ny\"\n}\n\n";
        assert_eq!(
            &normalize_source(padded).unwrap()[..],
            br#"{"content":"x\ny"}"#
        );
        let smile = crate::xcontent::to_smile(&serde_json::json!({"a": [1, "b"]}));
        assert_eq!(&normalize_source(&smile).unwrap()[..], br#"{"a":[1,"b"]}"#);
        let mut cbor = Vec::new();
        ciborium::into_writer(&serde_json::json!({"k": true}), &mut cbor).unwrap();
        assert_eq!(&normalize_source(&cbor).unwrap()[..], br#"{"k":true}"#);
        assert_eq!(
            &normalize_source(b"---\nk: 2\n").unwrap()[..],
            br#"{"k":2}"#
        );
        // Comments (Elasticsearch's parser allows them) are dropped, also first.
        assert_eq!(
            &normalize_source(b"/* v2 */ {\"a\": /* n */ 1, // note\n\"b\":\"/* kept */\"}")
                .unwrap()[..],
            br#"{"a":1,"b":"/* kept */"}"#
        );
        assert!(normalize_source(b"{\"a\":1 /* open}").is_err());
        assert!(normalize_source(b"noop reason").is_err());
        assert!(normalize_source(b"{\"a\":\"x\ny\"}").is_err());
    }

    #[test]
    fn compressed_sources_are_decompressed() {
        use std::io::Write;
        let json = br#"{"title":"compressed","n":[1,2,3]}"#;
        let mut dfl = b"DFL\0".to_vec();
        let mut enc = flate2::write::DeflateEncoder::new(&mut dfl, flate2::Compression::new(3));
        enc.write_all(json).unwrap();
        enc.finish().unwrap();
        assert_eq!(&normalize_source(&dfl).unwrap()[..], json);
        let e = normalize_source(&dfl[..dfl.len() / 2])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("DEFLATE-compressed _source"), "{e}");
        // An LZF chunk header with nothing behind it is an error, never a panic.
        let e = normalize_source(b"ZV\x01\x00\x09").unwrap_err().to_string();
        assert!(e.starts_with("LZF-compressed _source"), "{e}");
    }

    #[test]
    fn invalid_json_sources_are_refused_with_the_reason() {
        for (raw, reason) in [
            (&br#"{"title":"mountai"#[..], "string is not closed"),
            (br#"{"a":1,}"#, "expected a key"),
            (br#"{"a":01}"#, "leading zero"),
            (b"{\"a\":\"\xff\"}", "not valid UTF-8"),
            (br#"{"a":1} {"b":2}"#, "trailing characters"),
            (b"{\n\"a\": tru\n}", "invalid literal"),
            (b"{\"a\":\"x\x01\"}", "control character"),
        ] {
            let e = normalize_source(raw).unwrap_err();
            assert!(matches!(e, SourceBytesError::Json(_)), "{e}");
            let e = redact::chain(&e);
            assert!(e.starts_with("_source is not valid JSON: "), "{e}");
            assert!(e.contains(reason), "{e}");
        }
    }
}
