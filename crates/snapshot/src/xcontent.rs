//! Decoding metadata content (SMILE as Elasticsearch writes it, or JSON) into typed
//! structs or `serde_json::Value`s, and SMILE values into JSON.

use base64::Engine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

const SMILE_HEADER: &[u8] = b":)\n";

/// Whether `content` starts with the SMILE header.
pub fn is_smile(content: &[u8]) -> bool {
    content.starts_with(SMILE_HEADER)
}

/// Decodes SMILE or JSON `content` of blob `blob` into `T`.
pub fn decode<T: DeserializeOwned>(blob: &str, content: &[u8]) -> Result<T> {
    if is_smile(content) {
        serde_smile::from_slice(content)
            .map_err(|e| Error::corrupt(blob, format!("SMILE metadata: {e}")))
    } else if content
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{' || b == b'[')
    {
        serde_json::from_slice(content)
            .map_err(|e| Error::corrupt(blob, format!("JSON metadata: {e}")))
    } else {
        Err(Error::Unsupported {
            blob: blob.to_string(),
            what: format!(
                "metadata content starting with {:02x?} (neither SMILE nor JSON)",
                &content[..content.len().min(4)]
            ),
        })
    }
}

/// Decodes SMILE or JSON into a JSON value; SMILE binary values become base64 strings.
pub fn decode_value(blob: &str, content: &[u8]) -> Result<serde_json::Value> {
    if is_smile(content) {
        let v: serde_smile::value::Value = serde_smile::from_slice(content)
            .map_err(|e| Error::corrupt(blob, format!("SMILE metadata: {e}")))?;
        Ok(smile_to_json(v))
    } else {
        decode(blob, content)
    }
}

/// Converts a SMILE value to JSON. Binary becomes standard base64 (as Elasticsearch
/// renders binary in JSON); big numbers become numbers when they fit, strings otherwise.
pub fn smile_to_json(v: serde_smile::value::Value) -> serde_json::Value {
    use serde_json::Value as J;
    use serde_smile::value::Value as S;
    match v {
        S::Null => J::Null,
        S::Boolean(b) => J::Bool(b),
        S::Integer(i) => J::from(i),
        S::Long(i) => J::from(i),
        S::BigInteger(b) => big_integer_to_json(b.as_be_bytes()),
        S::Float(f) => serde_json::Number::from_f64(f64::from(f)).map_or(J::Null, J::Number),
        S::Double(f) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        S::BigDecimal(d) => big_decimal_to_json(d.unscaled_value().as_be_bytes(), d.scale()),
        S::String(s) => J::String(s),
        S::Binary(b) => J::String(base64::engine::general_purpose::STANDARD.encode(b)),
        S::Array(a) => J::Array(a.into_iter().map(smile_to_json).collect()),
        S::Object(o) => J::Object(o.into_iter().map(|(k, v)| (k, smile_to_json(v))).collect()),
    }
}

/// Converts a CBOR value to JSON: byte strings become standard base64, tags are dropped,
/// integers outside 64 bits become strings, non-text map keys their JSON text.
pub fn cbor_to_json(v: ciborium::Value) -> serde_json::Value {
    use ciborium::Value as C;
    use serde_json::Value as J;
    match v {
        C::Integer(i) => {
            let i: i128 = i.into();
            i64::try_from(i)
                .map(J::from)
                .or_else(|_| u64::try_from(i).map(J::from))
                .unwrap_or_else(|_| J::String(i.to_string()))
        }
        C::Bytes(b) => J::String(base64::engine::general_purpose::STANDARD.encode(b)),
        C::Float(f) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        C::Text(s) => J::String(s),
        C::Bool(b) => J::Bool(b),
        C::Null => J::Null,
        C::Tag(_, inner) => cbor_to_json(*inner),
        C::Array(a) => J::Array(a.into_iter().map(cbor_to_json).collect()),
        C::Map(m) => J::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        C::Text(s) => s,
                        other => match cbor_to_json(other) {
                            J::String(s) => s,
                            j => j.to_string(),
                        },
                    };
                    (key, cbor_to_json(v))
                })
                .collect(),
        ),
        _ => J::Null,
    }
}

/// A big-endian two's-complement integer as a JSON number when it fits 64 bits, else as
/// its decimal text (up to 128 bits) or base64.
pub(crate) fn big_integer_to_json(be: &[u8]) -> serde_json::Value {
    if be.is_empty() {
        return serde_json::Value::from(0);
    }
    if be.len() <= 16 {
        let fill = if be[0] & 0x80 != 0 { 0xFF } else { 0 };
        let mut buf = [fill; 16];
        buf[16 - be.len()..].copy_from_slice(be);
        let v = i128::from_be_bytes(buf);
        if let Ok(i) = i64::try_from(v) {
            return serde_json::Value::from(i);
        }
        if let Ok(u) = u64::try_from(v) {
            return serde_json::Value::from(u);
        }
        return serde_json::Value::String(v.to_string());
    }
    serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(be))
}

/// `unscaled × 10^-scale` (big-endian two's-complement unscaled value) as a JSON number;
/// the unscaled value as [`big_integer_to_json`] gives it when that is not a number.
pub(crate) fn big_decimal_to_json(unscaled_be: &[u8], scale: i32) -> serde_json::Value {
    let unscaled = big_integer_to_json(unscaled_be);
    match unscaled.as_f64() {
        Some(f) => serde_json::Number::from_f64(f / 10f64.powi(scale))
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        None => unscaled,
    }
}

/// The XContent types Elasticsearch embeds in stored values (a leading type byte says
/// which; see `docs/specs/ignored-source.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XContentType {
    Json,
    Smile,
    Cbor,
    Yaml,
}

/// Why an embedded XContent value does not parse: the message names the format, the
/// parser's error is the cause.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("JSON")]
    Json(#[source] serde_json::Error),
    #[error("SMILE")]
    Smile(#[source] serde_smile::Error),
    #[error("CBOR")]
    Cbor(#[source] ciborium::de::Error<std::io::Error>),
    #[error("YAML")]
    Yaml(#[source] serde_yaml_ng::Error),
}

/// Decodes one complete XContent value (an object, an array or a scalar) of type `ty`
/// into JSON. SMILE and CBOR binary values become base64 strings.
pub fn decode_embedded(
    ty: XContentType,
    bytes: &[u8],
) -> std::result::Result<serde_json::Value, EmbeddedError> {
    match ty {
        XContentType::Json => serde_json::from_slice(bytes).map_err(EmbeddedError::Json),
        XContentType::Smile => {
            let v: serde_smile::value::Value =
                serde_smile::from_slice(bytes).map_err(EmbeddedError::Smile)?;
            Ok(smile_to_json(v))
        }
        XContentType::Cbor => {
            let v: ciborium::Value = ciborium::from_reader(bytes).map_err(EmbeddedError::Cbor)?;
            Ok(cbor_to_json(v))
        }
        XContentType::Yaml => serde_yaml_ng::from_slice(bytes).map_err(EmbeddedError::Yaml),
    }
}

/// Binary metadata values (`meta_hash`): raw SMILE binary, or base64 in JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binary(pub Vec<u8>);

impl<'de> Deserialize<'de> for Binary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Binary;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("binary bytes or a base64 string")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> std::result::Result<Binary, E> {
                Ok(Binary(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(
                self,
                v: Vec<u8>,
            ) -> std::result::Result<Binary, E> {
                Ok(Binary(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Binary, E> {
                base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map(Binary)
                    .map_err(|e| E::custom(format!("bad base64: {e}")))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Binary, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Binary(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl serde::Serialize for Binary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// Encodes `value` as SMILE the way Elasticsearch does (shared names, raw binary: flags 0x05).
pub fn to_smile<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_smile::ser::Serializer::builder()
        .raw_binary(true)
        .shared_properties(true)
        .shared_strings(false)
        .build(&mut out);
    value
        .serialize(&mut ser)
        .expect("SMILE serialization of in-memory metadata");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, serde::Serialize, PartialEq)]
    struct T {
        name: String,
        hash: Binary,
        n: u64,
    }

    #[test]
    fn smile_round_trip_with_raw_binary() {
        let t = T {
            name: "x".into(),
            hash: Binary(vec![0, 0xFF, 0xFD, 0xFB]),
            n: u64::MAX >> 1,
        };
        let bytes = to_smile(&t);
        assert_eq!(&bytes[..4], b":)\n\x05");
        let back: T = decode("b", &bytes).unwrap();
        assert_eq!(back, t);
        let v = decode_value("b", &bytes).unwrap();
        assert_eq!(v["hash"], "AP/9+w==");
        let from_json: T = decode(
            "b",
            br#"{"name":"x","hash":"AP/9+w==","n":9223372036854775807}"#,
        )
        .unwrap();
        assert_eq!(from_json, t);
        assert!(decode::<T>("blob-name", b"\x00\x01")
            .unwrap_err()
            .to_string()
            .contains("blob-name"));
    }
}
