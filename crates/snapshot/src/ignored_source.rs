//! Elasticsearch's `_ignored_source` stored field (8.15+ synthetic source): the values
//! of a document that synthetic source cannot rebuild from doc values (fields of objects
//! with `enabled: false`, values of unmapped fields under `dynamic: false`, arrays kept
//! as sent with `synthetic_source_keep`, fields of types without a native synthetic
//! source), kept with the path they belong at. The byte layouts are written down in
//! `docs/specs/ignored-source.md`; this module decodes them and merges the values into a
//! rebuilt `_source` the way synthetic source does (an entry replaces whatever doc values
//! give for its path).
//!
//! Every length read is checked against the bytes that are left, so nothing is allocated
//! from an unchecked length; a malformed value is an error saying what is wrong.

use base64::Engine;
use serde_json::{Map, Value};

use crate::xcontent::{self, XContentType};

/// The name of the stored field.
pub const FIELD: &str = "_ignored_source";

/// The first index version (`index.version.created`, Elasticsearch 9.x numbering) whose
/// `_ignored_source` values are coalesced (one stored value per field path).
pub const COALESCED_FROM_INDEX_VERSION: u64 = 9_039_000;

/// How one stored `_ignored_source` value is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoredSourceLayout {
    /// One value per stored field value: a little-endian int packing the name length and
    /// the parent offset, the UTF-8 name, the encoded value (8.15 up to the 9.x index
    /// version [`COALESCED_FROM_INDEX_VERSION`]).
    Singular,
    /// Every value of one path in one stored field value: a vint count, the name as an
    /// Elasticsearch stream string, then per value a vint parent offset and a
    /// vint-length-prefixed encoded value.
    Coalesced,
}

impl IgnoredSourceLayout {
    /// The layout an index writes, from its `index.version.created` id; `None` when the
    /// id is unknown (the layout is then recognised from the bytes).
    pub fn for_index_version(id: Option<u64>) -> Option<IgnoredSourceLayout> {
        let id = id?;
        // OpenSearch ids carry a marker bit; OpenSearch has no `_ignored_source`.
        if id & (1 << 27) != 0 {
            return Some(IgnoredSourceLayout::Singular);
        }
        Some(if id >= COALESCED_FROM_INDEX_VERSION {
            IgnoredSourceLayout::Coalesced
        } else {
            IgnoredSourceLayout::Singular
        })
    }
}

/// Why a stored `_ignored_source` value decodes in neither layout: why not in each, the
/// one tried first first (both said here, so there is no single cause in `source()`).
#[derive(Debug, thiserror::Error)]
#[error(
    "{:?} layout: {}; {:?} layout: {}",
    first.0,
    redact::Chain(&*first.1),
    second.0,
    redact::Chain(&*second.1)
)]
pub struct IgnoredSourceError {
    pub first: (IgnoredSourceLayout, Box<LayoutError>),
    pub second: (IgnoredSourceLayout, Box<LayoutError>),
}

/// Why a stored `_ignored_source` value does not decode in one layout.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{len} bytes, shorter than the 4-byte header")]
    ShortHeader { len: usize },
    #[error("negative header {0}")]
    NegativeHeader(i32),
    /// The name is not this many UTF-16 units of UTF-8.
    #[error("the name is not {0} UTF-16 units of UTF-8")]
    NameUnits(usize),
    #[error("the name is not UTF-8")]
    NameNotUtf8(#[source] std::str::Utf8Error),
    /// More values than the bytes can hold (or none).
    #[error("{count} values in {len} bytes is impossible")]
    Count { count: usize, len: usize },
    /// Value `index` (from 0) of a coalesced entry is wrong.
    #[error("value {index}")]
    Value {
        index: usize,
        #[source]
        source: Box<LayoutError>,
    },
    #[error("{0} bytes after the last value")]
    Trailing(usize),
    #[error("empty field name")]
    EmptyName,
    #[error("parent offset {units} does not end a parent path of {name:?}")]
    ParentOffset { units: usize, name: String },
    /// The value of the field `name` does not decode.
    #[error("{name:?}")]
    Field {
        name: String,
        #[source]
        source: ValueError,
    },
    /// The bytes end at this offset, before a byte that must be there.
    #[error("ends at byte {0}")]
    End(usize),
    #[error("vint over 31 bits at byte {0}")]
    VintOverflow(usize),
    #[error("vint longer than 5 bytes at byte {0}")]
    VintTooLong(usize),
    #[error("{wanted} bytes wanted, {left} left")]
    Take { wanted: usize, left: usize },
    #[error("a string of {units} characters in {left} bytes")]
    StringLength { units: usize, left: usize },
    #[error("bad string byte 0x{byte:02x} at {at}")]
    StringByte { byte: u8, at: usize },
    #[error("string")]
    String(#[source] std::string::FromUtf16Error),
}

/// Why one encoded field value (a type byte, then the value) does not decode.
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("empty value (no type byte)")]
    Empty,
    /// The type (its byte) takes `expected` bytes, the value has `got`.
    #[error("type {:?} takes {expected} bytes, {got} here", *ty as char)]
    Length { ty: u8, expected: usize, got: usize },
    #[error("string not UTF-8")]
    StringNotUtf8(#[source] std::str::Utf8Error),
    #[error("big integer without bytes")]
    EmptyBigInteger,
    #[error("big decimal of {0} bytes")]
    ShortBigDecimal(usize),
    /// An embedded JSON, SMILE, CBOR or YAML value does not parse.
    #[error(transparent)]
    Embedded(#[from] xcontent::EmbeddedError),
    #[error("unknown type byte 0x{0:02x}")]
    UnknownType(u8),
    /// A `<field>._original` value that is not UTF-8.
    #[error("not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
}

/// One decoded value of `_ignored_source`.
#[derive(Debug, Clone, PartialEq)]
pub struct IgnoredValue {
    /// The full dotted path of the field (or object) the value belongs to.
    pub name: String,
    /// Byte offset in `name` where the name relative to the parent object starts (0 for
    /// a field of the root object; else just after the parent path and its dot).
    pub parent_offset: usize,
    /// The value; `None` for the "void" marker, which says the path must not appear.
    pub value: Option<Value>,
}

impl IgnoredValue {
    /// The parent object's path (`""` for the root).
    pub fn parent(&self) -> &str {
        if self.parent_offset == 0 {
            ""
        } else {
            &self.name[..self.parent_offset - 1]
        }
    }

    /// The name under the parent object (may itself contain dots).
    pub fn leaf(&self) -> &str {
        &self.name[self.parent_offset..]
    }
}

/// Decodes one stored value of `_ignored_source` into `out`: in `layout` (the one the
/// index's creation version says) when the bytes fit it, else in the other one (snapshot
/// builds wrote the coalesced layout from earlier index versions); with `layout` unknown,
/// the singular layout is tried first. Each layout checks every length, that the parent
/// offset ends at a dot and that nothing trails, so bytes of one do not pass as the other.
pub fn decode_stored(
    bytes: &[u8],
    layout: Option<IgnoredSourceLayout>,
    out: &mut Vec<IgnoredValue>,
) -> Result<(), IgnoredSourceError> {
    let (first, second) = match layout {
        Some(IgnoredSourceLayout::Coalesced) => (
            IgnoredSourceLayout::Coalesced,
            IgnoredSourceLayout::Singular,
        ),
        _ => (
            IgnoredSourceLayout::Singular,
            IgnoredSourceLayout::Coalesced,
        ),
    };
    let decode = |l: IgnoredSourceLayout, out: &mut Vec<IgnoredValue>| match l {
        IgnoredSourceLayout::Singular => decode_singular(bytes, out),
        IgnoredSourceLayout::Coalesced => decode_coalesced(bytes, out),
    };
    let before = out.len();
    let Err(e1) = decode(first, out) else {
        return Ok(());
    };
    out.truncate(before);
    decode(second, out).map_err(|e2| {
        out.truncate(before);
        IgnoredSourceError {
            first: (first, Box::new(e1)),
            second: (second, Box::new(e2)),
        }
    })
}

const PARENT_OFFSET_FACTOR: u32 = 1 << 16;

fn decode_singular(bytes: &[u8], out: &mut Vec<IgnoredValue>) -> Result<(), LayoutError> {
    let Some(header) = bytes.get(..4) else {
        return Err(LayoutError::ShortHeader { len: bytes.len() });
    };
    let header = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    if header > i32::MAX as u32 {
        return Err(LayoutError::NegativeHeader(header as i32));
    }
    let name_units = (header % PARENT_OFFSET_FACTOR) as usize;
    let parent_units = (header / PARENT_OFFSET_FACTOR) as usize;
    let rest = &bytes[4..];
    let name_len = utf8_prefix_len(rest, name_units).ok_or(LayoutError::NameUnits(name_units))?;
    let name = std::str::from_utf8(&rest[..name_len]).map_err(LayoutError::NameNotUtf8)?;
    let value = &rest[name_len..];
    let entry = entry(name, parent_units, value)?;
    out.push(entry);
    Ok(())
}

fn decode_coalesced(bytes: &[u8], out: &mut Vec<IgnoredValue>) -> Result<(), LayoutError> {
    let mut r = Reader { bytes, pos: 0 };
    let count = r.vint()? as usize;
    // every value takes at least two bytes (its parent offset and its length)
    if count == 0 || count > r.left() / 2 {
        return Err(LayoutError::Count {
            count,
            len: bytes.len(),
        });
    }
    let name = r.es_string()?;
    let before = out.len();
    for i in 0..count {
        let parent_units = r.vint()? as usize;
        let len = r.vint()? as usize;
        let in_value = |e: LayoutError| LayoutError::Value {
            index: i,
            source: Box::new(e),
        };
        let value = r.take(len).map_err(in_value)?;
        match entry(&name, parent_units, value) {
            Ok(e) => out.push(e),
            Err(e) => {
                out.truncate(before);
                return Err(in_value(e));
            }
        }
    }
    if r.left() != 0 {
        out.truncate(before);
        return Err(LayoutError::Trailing(r.left()));
    }
    Ok(())
}

/// An entry from its name, its parent offset in UTF-16 units and its encoded value.
fn entry(name: &str, parent_units: usize, value: &[u8]) -> Result<IgnoredValue, LayoutError> {
    if name.is_empty() {
        return Err(LayoutError::EmptyName);
    }
    let parent_offset = utf16_to_byte_offset(name, parent_units)
        .filter(|&o| o == 0 || (o < name.len() && name.as_bytes()[o - 1] == b'.'))
        .ok_or_else(|| LayoutError::ParentOffset {
            units: parent_units,
            name: name.to_string(),
        })?;
    let value = decode_value(value).map_err(|source| LayoutError::Field {
        name: name.to_string(),
        source,
    })?;
    Ok(IgnoredValue {
        name: name.to_string(),
        parent_offset,
        value,
    })
}

/// The byte length of the UTF-8 prefix of `bytes` holding `units` UTF-16 code units.
fn utf8_prefix_len(bytes: &[u8], units: usize) -> Option<usize> {
    let (mut pos, mut seen) = (0usize, 0usize);
    while seen < units {
        let lead = *bytes.get(pos)?;
        let len = match lead {
            0x00..=0x7F => 1,
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return None,
        };
        let c = std::str::from_utf8(bytes.get(pos..pos + len)?)
            .ok()?
            .chars()
            .next()?;
        seen += c.len_utf16();
        pos += len;
    }
    (seen == units).then_some(pos)
}

/// The byte offset in `s` after `units` UTF-16 code units.
fn utf16_to_byte_offset(s: &str, units: usize) -> Option<usize> {
    let mut seen = 0;
    for (i, c) in s.char_indices() {
        if seen == units {
            return Some(i);
        }
        seen += c.len_utf16();
    }
    (seen == units).then_some(s.len())
}

/// Decodes one value as Elasticsearch encodes field values for synthetic source (a type
/// byte, then the value): `None` for the void marker `v`. Also the layout of binary
/// `<field>._ignore_malformed` stored values.
pub fn decode_value(b: &[u8]) -> Result<Option<Value>, ValueError> {
    let Some((&ty, rest)) = b.split_first() else {
        return Err(ValueError::Empty);
    };
    let exact = |n: usize| -> Result<&[u8], ValueError> {
        if rest.len() == n {
            Ok(rest)
        } else {
            Err(ValueError::Length {
                ty,
                expected: n,
                got: rest.len(),
            })
        }
    };
    Ok(Some(match ty {
        b'S' => Value::String(
            std::str::from_utf8(rest)
                .map_err(ValueError::StringNotUtf8)?
                .to_string(),
        ),
        b'I' => {
            let r = exact(4)?;
            Value::from(i32::from_le_bytes([r[0], r[1], r[2], r[3]]))
        }
        b'L' => {
            let r = exact(8)?;
            Value::from(i64::from_le_bytes(r.try_into().expect("8 bytes")))
        }
        b'D' => {
            let r = exact(8)?;
            double(f64::from_le_bytes(r.try_into().expect("8 bytes")))
        }
        b'F' => {
            let r = exact(4)?;
            float(f32::from_le_bytes([r[0], r[1], r[2], r[3]]))
        }
        b'i' => {
            if rest.is_empty() {
                return Err(ValueError::EmptyBigInteger);
            }
            xcontent::big_integer_to_json(rest)
        }
        b'd' => {
            if rest.len() < 5 {
                return Err(ValueError::ShortBigDecimal(rest.len()));
            }
            let scale = i32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            xcontent::big_decimal_to_json(&rest[4..], scale)
        }
        b't' | b'f' => {
            exact(0)?;
            Value::Bool(ty == b't')
        }
        b'n' => Value::Null,
        b'v' => return Ok(None),
        b'b' => Value::String(base64::engine::general_purpose::STANDARD.encode(rest)),
        b'j' | b's' | b'c' | b'y' => {
            let kind = match ty {
                b'j' => XContentType::Json,
                b's' => XContentType::Smile,
                b'c' => XContentType::Cbor,
                _ => XContentType::Yaml,
            };
            xcontent::decode_embedded(kind, rest)?
        }
        other => return Err(ValueError::UnknownType(other)),
    }))
}

/// A double as Jackson prints it: non-finite values as the quoted strings Jackson writes.
pub(crate) fn double(f: f64) -> Value {
    match serde_json::Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::String("NaN".into()),
        None if f > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

/// A float printed with the fewest digits that read back as the same float (as Java's
/// `Float.toString` does).
pub(crate) fn float(f: f32) -> Value {
    if !f.is_finite() {
        return double(f64::from(f));
    }
    format!("{f}")
        .parse::<f64>()
        .map(double)
        .unwrap_or(Value::Null)
}

/// Reads Elasticsearch stream primitives with every length checked.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn byte(&mut self) -> Result<u8, LayoutError> {
        let b = *self.bytes.get(self.pos).ok_or(LayoutError::End(self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    /// A non-negative int in 1–5 bytes, 7 bits a byte, least significant first.
    fn vint(&mut self) -> Result<u32, LayoutError> {
        let mut v: u32 = 0;
        for shift in [0, 7, 14, 21, 28] {
            let b = self.byte()?;
            v |= u32::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                if shift == 28 && b > 0x07 {
                    return Err(LayoutError::VintOverflow(self.pos - 1));
                }
                return Ok(v);
            }
        }
        Err(LayoutError::VintTooLong(self.pos))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], LayoutError> {
        if n > self.left() {
            return Err(LayoutError::Take {
                wanted: n,
                left: self.left(),
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// `StreamOutput.writeString`: a vint count of UTF-16 units, each unit in 1 to 3 bytes
    /// (surrogates one by one, as modified UTF-8 does).
    fn es_string(&mut self) -> Result<String, LayoutError> {
        let units = self.vint()? as usize;
        if units > self.left() {
            return Err(LayoutError::StringLength {
                units,
                left: self.left(),
            });
        }
        let mut buf = Vec::with_capacity(units);
        for _ in 0..units {
            let b = self.byte()?;
            let u = match b >> 4 {
                0..=7 => u16::from(b),
                12 | 13 => {
                    let b2 = self.continuation()?;
                    (u16::from(b & 0x1F) << 6) | b2
                }
                14 => {
                    let b2 = self.continuation()?;
                    let b3 = self.continuation()?;
                    (u16::from(b & 0x0F) << 12) | (b2 << 6) | b3
                }
                _ => {
                    return Err(LayoutError::StringByte {
                        byte: b,
                        at: self.pos - 1,
                    })
                }
            };
            buf.push(u);
        }
        String::from_utf16(&buf).map_err(LayoutError::String)
    }

    fn continuation(&mut self) -> Result<u16, LayoutError> {
        let b = self.byte()?;
        if b & 0xC0 != 0x80 {
            return Err(LayoutError::StringByte {
                byte: b,
                at: self.pos - 1,
            });
        }
        Ok(u16::from(b & 0x3F))
    }
}

/// Whether an entry holds the whole value of `path`: an entry for the path itself or
/// for an object above it.
pub fn covers(entries: &[IgnoredValue], path: &str) -> bool {
    entries.iter().any(|e| {
        path == e.name
            || (path.len() > e.name.len()
                && path.starts_with(e.name.as_str())
                && path.as_bytes()[e.name.len()] == b'.')
    })
}

/// Merges `entries` into the rebuilt `_source` object `root` as synthetic source does:
/// the entries of one path replace whatever doc values and stored fields gave for it;
/// one value is written as it is, several become one array (arrays among them are
/// flattened into it); a path whose entries are all void is removed.
pub fn merge(root: &mut Map<String, Value>, entries: &[IgnoredValue]) {
    // group by path, in the order paths first appear
    let mut groups: Vec<(&IgnoredValue, Vec<&Value>)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in entries {
        let g = *index.entry(e.name.as_str()).or_insert_with(|| {
            groups.push((e, Vec::new()));
            groups.len() - 1
        });
        if let Some(v) = &e.value {
            groups[g].1.push(v);
        }
    }
    for (e, values) in groups {
        let merged = match values.as_slice() {
            [] => None,
            [one] => Some((*one).clone()),
            many => {
                let mut out = Vec::new();
                for v in many {
                    match v {
                        Value::Array(a) => out.extend(a.iter().cloned()),
                        other => out.push((*other).clone()),
                    }
                }
                Some(Value::Array(out))
            }
        };
        let leaf = e.leaf();
        if leaf.contains('.') {
            // rebuilt values of the same path were nested by its dots: they give way
            remove_nested(root, &e.name);
        }
        let parent = object_at(root, e.parent());
        match merged {
            Some(v) => {
                parent.insert(leaf.to_string(), v);
            }
            None => {
                parent.remove(leaf);
            }
        }
    }
}

/// The object at dotted `path` under `root`, made (or made an object) as needed.
fn object_at<'a>(root: &'a mut Map<String, Value>, path: &str) -> &'a mut Map<String, Value> {
    let mut cur = root;
    if path.is_empty() {
        return cur;
    }
    for part in path.split('.') {
        let slot = cur
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        cur = slot.as_object_mut().expect("made an object just above");
    }
    cur
}

/// Removes the value at dotted `path`, and objects left empty on the way.
fn remove_nested(root: &mut Map<String, Value>, path: &str) {
    fn go(m: &mut Map<String, Value>, parts: &[&str]) {
        match parts {
            [] => {}
            [last] => {
                m.remove(*last);
            }
            [first, rest @ ..] => {
                if let Some(Value::Object(child)) = m.get_mut(*first) {
                    go(child, rest);
                    if child.is_empty() {
                        m.remove(*first);
                    }
                }
            }
        }
    }
    let parts: Vec<&str> = path.split('.').collect();
    go(root, &parts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn singular(name: &str, parent_units: u32, value: &[u8]) -> Vec<u8> {
        let units = name.encode_utf16().count() as u32;
        let mut b = (units + PARENT_OFFSET_FACTOR * parent_units)
            .to_le_bytes()
            .to_vec();
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(value);
        b
    }

    fn vint(mut v: u32, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8 & 0x7F) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn coalesced(name: &str, values: &[(u32, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        vint(values.len() as u32, &mut b);
        let units: Vec<u16> = name.encode_utf16().collect();
        vint(units.len() as u32, &mut b);
        for u in units {
            let c = u32::from(u);
            if c <= 0x7F {
                b.push(c as u8);
            } else if c > 0x7FF {
                b.push((0xE0 | (c >> 12) & 0x0F) as u8);
                b.push((0x80 | (c >> 6) & 0x3F) as u8);
                b.push((0x80 | c & 0x3F) as u8);
            } else {
                b.push((0xC0 | (c >> 6) & 0x1F) as u8);
                b.push((0x80 | c & 0x3F) as u8);
            }
        }
        for (p, v) in values {
            vint(*p, &mut b);
            vint(v.len() as u32, &mut b);
            b.extend_from_slice(v);
        }
        b
    }

    fn typed(t: u8, rest: &[u8]) -> Vec<u8> {
        let mut v = vec![t];
        v.extend_from_slice(rest);
        v
    }

    #[test]
    fn typed_values_decode() {
        let cases: Vec<(Vec<u8>, Value)> = vec![
            (typed(b'S', "héllo".as_bytes()), json!("héllo")),
            (typed(b'I', &(-7i32).to_le_bytes()), json!(-7)),
            (typed(b'L', &(1i64 << 40).to_le_bytes()), json!(1u64 << 40)),
            (typed(b'D', &2.5f64.to_le_bytes()), json!(2.5)),
            (typed(b'F', &0.1f32.to_le_bytes()), json!(0.1)),
            (typed(b'i', &[0x01, 0x00]), json!(256)),
            (typed(b'i', &[0xFF]), json!(-1)),
            // 12345 × 10^-2
            (typed(b'd', &[2, 0, 0, 0, 0x30, 0x39]), json!(123.45)),
            (vec![b't'], json!(true)),
            (vec![b'f'], json!(false)),
            (vec![b'n'], Value::Null),
            (typed(b'b', &[0, 0xFF]), json!("AP8=")),
            (typed(b'j', br#"{"a":[1,"x"]}"#), json!({"a": [1, "x"]})),
            (typed(b'y', b"a: 1\n"), json!({"a": 1})),
        ];
        for (bytes, want) in cases {
            assert_eq!(decode_value(&bytes).unwrap(), Some(want), "{bytes:?}");
        }
        let mut cbor = vec![b'c'];
        ciborium::into_writer(&json!(["x", {"k": 2}]), &mut cbor).unwrap();
        assert_eq!(decode_value(&cbor).unwrap(), Some(json!(["x", {"k": 2}])));
        let mut smile = vec![b's'];
        smile.extend(xcontent::to_smile(&json!({"k": [1, 2]})));
        assert_eq!(decode_value(&smile).unwrap(), Some(json!({"k": [1, 2]})));
        assert_eq!(decode_value(b"v").unwrap(), None);
        for bad in [
            &b""[..],
            b"I\x01",
            b"L\x01\x02",
            b"tt",
            b"Z",
            b"d\x01",
            b"j{",
            b"S\xFF",
        ] {
            assert!(decode_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn singular_layout_counts_the_name_in_utf16_units() {
        // "größe.😀" is 7 UTF-16 units, 11 UTF-8 bytes; the parent "größe" ends at unit 6
        let name = "größe.😀";
        let b = singular(name, 6, &typed(b'S', b"v"));
        let mut out = Vec::new();
        decode_stored(&b, Some(IgnoredSourceLayout::Singular), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, name);
        assert_eq!(out[0].parent(), "größe");
        assert_eq!(out[0].leaf(), "😀");
        assert_eq!(out[0].value, Some(json!("v")));
        // unknown layout: recognised
        out.clear();
        decode_stored(&b, None, &mut out).unwrap();
        assert_eq!(out[0].name, name);
    }

    #[test]
    fn coalesced_layout_holds_several_values_of_one_path() {
        let b = coalesced(
            "a.ü",
            &[(2, &typed(b'I', &3i32.to_le_bytes())), (2, b"j[4,5]")],
        );
        let mut out = Vec::new();
        decode_stored(&b, Some(IgnoredSourceLayout::Coalesced), &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|e| e.name == "a.ü" && e.parent() == "a"));
        assert_eq!(out[1].value, Some(json!([4, 5])));
        out.clear();
        decode_stored(&b, None, &mut out).unwrap();
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn malformed_bytes_are_errors_not_panics() {
        let good = singular("a.b", 2, b"S1");
        let mut out = Vec::new();
        for n in 0..good.len() - 1 {
            // every truncation fails, for both layouts
            assert!(
                decode_stored(&good[..n], Some(IgnoredSourceLayout::Singular), &mut out).is_err()
            );
        }
        // parent offset not at a dot
        assert!(decode_stored(
            &singular("ab", 1, b"S1"),
            Some(IgnoredSourceLayout::Singular),
            &mut out
        )
        .is_err());
        // a count the bytes cannot hold
        let mut huge = Vec::new();
        vint(1 << 30, &mut huge);
        assert!(decode_stored(&huge, Some(IgnoredSourceLayout::Coalesced), &mut out).is_err());
        // a string length beyond the bytes
        let mut b = vec![1];
        vint(1 << 20, &mut b);
        assert!(decode_stored(&b, Some(IgnoredSourceLayout::Coalesced), &mut out).is_err());
        // a value length beyond the bytes
        let mut v = coalesced("x", &[(0, b"S1")]);
        let len_at = v.len() - 3;
        v[len_at] = 0x7F;
        assert!(decode_stored(&v, Some(IgnoredSourceLayout::Coalesced), &mut out).is_err());
        assert!(out.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48)) {
            let mut out = Vec::new();
            for layout in [None, Some(IgnoredSourceLayout::Singular), Some(IgnoredSourceLayout::Coalesced)] {
                let _ = decode_stored(&bytes, layout, &mut out);
            }
            let _ = decode_value(&bytes);
        }
    }

    fn e(name: &str, parent_offset: usize, value: Option<Value>) -> IgnoredValue {
        IgnoredValue {
            name: name.into(),
            parent_offset,
            value,
        }
    }

    #[test]
    fn entries_replace_rebuilt_values_of_their_path() {
        let mut root = json!({
            "codes": ["a", "b"],
            "user": {"name": "x", "age": 3},
            "gone": 1,
            "m": {"cpu": {"user": 5}}
        })
        .as_object()
        .unwrap()
        .clone();
        let entries = vec![
            // keep-arrays: the array as sent replaces the sorted doc values
            e("codes", 0, Some(json!(["b", "a", "b"]))),
            // an unmapped field under a mapped object
            e("user.nick", 5, Some(json!("n"))),
            // a disabled object, in two parts
            e("meta", 0, Some(json!({"k": 1}))),
            e("meta", 0, Some(json!([{"k": 2}, {"k": 3}]))),
            // void: the path must not appear
            e("gone", 0, None),
            // a dotted leaf under its parent
            e("m.cpu.user", 2, Some(json!(7))),
        ];
        merge(&mut root, &entries);
        assert_eq!(
            Value::Object(root),
            json!({
                "codes": ["b", "a", "b"],
                "user": {"name": "x", "age": 3, "nick": "n"},
                "meta": [{"k": 1}, {"k": 2}, {"k": 3}],
                "m": {"cpu.user": 7}
            })
        );
        assert!(covers(&entries, "meta.k"));
        assert!(covers(&entries, "codes"));
        assert!(!covers(&entries, "code"));
        assert!(!covers(&entries, "user"));
    }
}
