//! `_source` answered byte for byte as it was indexed. A real cluster keeps the bytes it
//! was sent and returns them unparsed in GET, `_mget` and search hits (elastic/elasticsearch
//! `SearchHit.toXContent` and `GetResult.toXContent` write `_source` with
//! `XContentHelper.writeRawField`, which copies JSON bytes into a JSON answer as they
//! are); parsing them into a `serde_json::Value` would turn every
//! number that is not a 64-bit integer into an `f64` (serde_json's default parser can
//! also be one unit in the last place off for 17-digit input) and print it anew, so the
//! server would hand back digits it was never sent.
//!
//! Answers are built as `Value`s, so a stored source goes in as a marker string holding
//! its bytes (hex) and [`splice`] puts the bytes themselves in its place when the answer
//! is written. With `filter_path`, [`parse_all`] turns the markers into parsed values
//! first (the filter walks into `_source`).

use bytes::Bytes;
use serde_json::Value;

/// What a marker string starts and ends with (NUL bytes: written `\u0000` in JSON).
const OPEN: &str = "\u{0}rfs-testkit-raw-source:";
const CLOSE: char = '\u{0}';
/// The marker's opening as the JSON text of a string holds it.
const OPEN_JSON: &[u8] = b"\"\\u0000rfs-testkit-raw-source:";
const CLOSE_JSON: &[u8] = b"\\u0000\"";

/// The stored source `b` for an answer: written back exactly by [`splice`].
pub(super) fn raw_source(b: &Bytes) -> Value {
    let mut s = String::with_capacity(OPEN.len() + b.len() * 2 + 1);
    s.push_str(OPEN);
    for byte in b.iter() {
        s.push_str(&format!("{byte:02x}"));
    }
    s.push(CLOSE);
    Value::String(s)
}

fn unhex(h: &[u8]) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    h.chunks(2)
        .map(|p| {
            let s = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

/// The source bytes a marker string holds.
fn marked(s: &str) -> Option<Vec<u8>> {
    unhex(s.strip_prefix(OPEN)?.strip_suffix(CLOSE)?.as_bytes())
}

/// Every marker in `json` (an answer's text) replaced by the bytes it holds.
pub(super) fn splice(json: Vec<u8>) -> Vec<u8> {
    let Some(first) = find(&json, OPEN_JSON, 0) else {
        return json;
    };
    let mut out = Vec::with_capacity(json.len());
    let mut at = 0;
    let mut next = Some(first);
    while let Some(start) = next {
        let hex_from = start + OPEN_JSON.len();
        let Some(end) = find(&json, CLOSE_JSON, hex_from) else {
            break;
        };
        match unhex(&json[hex_from..end]) {
            Some(bytes) => {
                out.extend_from_slice(&json[at..start]);
                out.extend_from_slice(&bytes);
            }
            None => out.extend_from_slice(&json[at..end + CLOSE_JSON.len()]),
        }
        at = end + CLOSE_JSON.len();
        next = find(&json, OPEN_JSON, at);
    }
    out.extend_from_slice(&json[at..]);
    out
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Every marker in `v` replaced by its source parsed (for `filter_path`, which walks into
/// the values).
pub(super) fn parse_all(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Some(bytes) = marked(s) {
                *v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(parse_all),
        Value::Object(o) => o.values_mut().for_each(parse_all),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_back_byte_for_byte() {
        let a = Bytes::from_static(br#"{"lat":100.26189993135631,"n":1.0,"s":"\u00e9"}"#);
        let b = Bytes::from_static(br#"{"big":123456789012345678901234567890}"#);
        let answer = serde_json::json!({"docs": [
            {"_id": "a", "_source": raw_source(&a)},
            {"_id": "b\u{0}", "_source": raw_source(&b)}
        ]});
        let text = splice(serde_json::to_vec(&answer).unwrap());
        let want = format!(
            r#"{{"docs":[{{"_id":"a","_source":{}}},{{"_id":"b\u0000","_source":{}}}]}}"#,
            std::str::from_utf8(&a).unwrap(),
            std::str::from_utf8(&b).unwrap()
        );
        assert_eq!(String::from_utf8(text).unwrap(), want);

        let mut v = answer.clone();
        parse_all(&mut v);
        assert_eq!(v["docs"][0]["_source"]["s"], "é");
    }
}
