//! A row (one JSON object) into an item, and the table's key.
//!
//! Each member of the object becomes an attribute: a string is `S` (or `B` in a column
//! hinted [`ColumnHint::Binary`], where strings hold base64), a number is `N` with its
//! text kept exactly (never through a float), `true`/`false` is `BOOL`, `null` is `NULL`,
//! an object is `M` and an array is `L`, recursively. The JSON is read here, byte by byte,
//! so numbers keep their digits and nothing is allocated from a length the input claims.

use std::collections::BTreeMap;
use std::str::FromStr;

use base64::Engine;

use crate::value::{item_size, AttributeValue, Item, Number, MAX_DEPTH, MAX_ITEM_BYTES};

/// What a source column holds, as far as the item mapping cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnHint {
    String,
    /// Integers, floats, exact decimals.
    Number,
    /// Bytes, given as base64 strings.
    Binary,
    Bool,
    /// Timestamps and dates, given as RFC 3339 (or `YYYY-MM-DD`) strings.
    Time,
    /// Embedded JSON (objects, arrays, scalars).
    Json,
}

impl FromStr for ColumnHint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "string" | "text" | "uuid" => ColumnHint::String,
            "number" | "integer" | "float" | "numeric" => ColumnHint::Number,
            "binary" | "bytes" | "bytea" => ColumnHint::Binary,
            "bool" | "boolean" => ColumnHint::Bool,
            "time" | "timestamp" | "date" => ColumnHint::Time,
            "json" => ColumnHint::Json,
            other => {
                return Err(format!(
                    "unknown column kind {other:?} (string, number, binary, bool, time, json)"
                ))
            }
        })
    }
}

impl ColumnHint {
    /// The key type a column of this kind makes.
    pub fn key_type(self) -> KeyType {
        match self {
            ColumnHint::Number => KeyType::N,
            ColumnHint::Binary => KeyType::B,
            _ => KeyType::S,
        }
    }
}

/// Column name → kind; columns not named are read by their JSON type alone.
pub type ColumnHints = BTreeMap<String, ColumnHint>;

/// The scalar types a key attribute may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    S,
    N,
    B,
}

impl KeyType {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::S => "S",
            KeyType::N => "N",
            KeyType::B => "B",
        }
    }

    pub fn parse(s: &str) -> Option<KeyType> {
        match s {
            "S" => Some(KeyType::S),
            "N" => Some(KeyType::N),
            "B" => Some(KeyType::B),
            _ => None,
        }
    }
}

/// One key attribute: its name and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAttribute {
    pub name: String,
    pub key_type: KeyType,
}

/// The table's primary key: a partition key and an optional sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySchema {
    pub partition: KeyAttribute,
    pub sort: Option<KeyAttribute>,
}

impl KeySchema {
    pub fn attributes(&self) -> impl Iterator<Item = &KeyAttribute> {
        std::iter::once(&self.partition).chain(self.sort.as_ref())
    }

    /// The key attributes of `item`, checked: present, not null, of the key's type, not
    /// empty.
    pub fn key_of(&self, item: &Item) -> Result<Item, ConvertError> {
        let mut key = Item::new();
        for k in self.attributes() {
            let v = match item.get(&k.name) {
                None => {
                    return Err(ConvertError::new(
                        "missing_key",
                        format!("no key attribute {:?}", k.name),
                    ))
                }
                Some(AttributeValue::Null) => {
                    return Err(ConvertError::new(
                        "missing_key",
                        format!("key attribute {:?} is null", k.name),
                    ))
                }
                Some(v) => v,
            };
            let (matches, empty) = match (k.key_type, v) {
                (KeyType::S, AttributeValue::S(s)) => (true, s.is_empty()),
                (KeyType::B, AttributeValue::B(b)) => (true, b.is_empty()),
                (KeyType::N, AttributeValue::N(_)) => (true, false),
                _ => (false, false),
            };
            if empty {
                return Err(empty_key(&k.name));
            }
            if !matches {
                return Err(ConvertError::new(
                    "key_type_mismatch",
                    format!(
                        "key attribute {:?} is {} but the table's key is {}",
                        k.name,
                        v.type_name(),
                        k.key_type.as_str()
                    ),
                ));
            }
            key.insert(k.name.clone(), v.clone());
        }
        Ok(key)
    }

    /// A key whose partition key is `id` read as the key's type (a delete of a table
    /// without a sort key, when only the document id is known).
    pub fn key_from_id(&self, id: &str) -> Result<Item, ConvertError> {
        if let Some(sort) = &self.sort {
            return Err(ConvertError::new(
                "missing_key",
                format!(
                    "a delete by id alone cannot name the sort key {:?}",
                    sort.name
                ),
            ));
        }
        let v = match self.partition.key_type {
            KeyType::S => AttributeValue::S(id.to_string()),
            KeyType::N => {
                Number::parse(id)
                    .map_err(|e| ConvertError::new("bad_number", format!("id {id:?}: {e}")))?;
                AttributeValue::N(id.to_string())
            }
            KeyType::B => AttributeValue::B(
                base64::engine::general_purpose::STANDARD
                    .decode(id)
                    .map_err(|e| {
                        ConvertError::new("bad_binary", format!("id is not base64: {e}"))
                    })?,
            ),
        };
        let key: Item = [(self.partition.name.clone(), v)].into();
        self.key_of(&key)
    }

    /// Bytes that identify a key among others: two items with equal keys (numbers by
    /// value) give equal signatures.
    pub fn signature(&self, key: &Item) -> Vec<u8> {
        let mut out = Vec::new();
        for k in self.attributes() {
            match key.get(&k.name) {
                Some(AttributeValue::N(n)) => {
                    out.push(b'N');
                    match Number::parse(n) {
                        Ok(n) => out.extend_from_slice(n.canonical().as_bytes()),
                        Err(_) => out.extend_from_slice(n.as_bytes()),
                    }
                }
                Some(AttributeValue::S(s)) => {
                    out.push(b'S');
                    out.extend_from_slice(s.as_bytes());
                }
                Some(AttributeValue::B(b)) => {
                    out.push(b'B');
                    out.extend_from_slice(b);
                }
                _ => out.push(b'-'),
            }
            out.push(0xff); // never inside UTF-8 text: separates the parts
        }
        out
    }
}

fn empty_key(name: &str) -> ConvertError {
    ConvertError::new("empty_key", format!("key attribute {name:?} is empty"))
}

/// Why a row cannot become an item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ConvertError {
    /// A short key for the failure log: `bad_json`, `bad_number`, `bad_binary`,
    /// `too_deep`, `missing_key`, `empty_key`, `key_type_mismatch`, `item_too_large`,
    /// `empty_attribute_name`.
    pub error_type: &'static str,
    pub reason: String,
}

impl ConvertError {
    pub fn new(error_type: &'static str, reason: String) -> Self {
        ConvertError { error_type, reason }
    }
}

/// The item of one row (a JSON object), with `hints` saying which columns hold binary.
/// Refuses items over 400 KB.
pub fn row_to_item(json: &[u8], hints: &ColumnHints) -> Result<Item, ConvertError> {
    let mut p = Parser { b: json, i: 0 };
    p.ws();
    if p.peek() != Some(b'{') {
        return Err(p.err("a row must be a JSON object"));
    }
    p.i += 1;
    let mut item = Item::new();
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            p.ws();
            let name = p.string()?;
            if name.is_empty() {
                return Err(ConvertError::new(
                    "empty_attribute_name",
                    "a column has an empty name".into(),
                ));
            }
            p.ws();
            p.expect(b':')?;
            let binary = hints.get(&name) == Some(&ColumnHint::Binary);
            let number = hints.get(&name) == Some(&ColumnHint::Number);
            let v = p.value(0, binary, number)?;
            item.insert(name, v);
            p.ws();
            match p.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                _ => return Err(p.err("expected `,` or `}` after a column")),
            }
        }
    }
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err("text after the row's object"));
    }
    let size = item_size(&item);
    if size > MAX_ITEM_BYTES {
        return Err(ConvertError::new(
            "item_too_large",
            format!("the item is {size} bytes; DynamoDB stores at most {MAX_ITEM_BYTES}"),
        ));
    }
    Ok(item)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> ConvertError {
        ConvertError::new("bad_json", format!("{what} (byte {})", self.i))
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += 1;
        c
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), ConvertError> {
        if self.next() == Some(c) {
            Ok(())
        } else {
            Err(self.err(&format!("expected `{}`", c as char)))
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), ConvertError> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(self.err("not a JSON value"))
        }
    }

    /// `depth`: containers already open around this value (the row's object excluded).
    fn value(
        &mut self,
        depth: usize,
        binary: bool,
        number: bool,
    ) -> Result<AttributeValue, ConvertError> {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                let s = self.string()?;
                if binary {
                    base64::engine::general_purpose::STANDARD
                        .decode(s.as_bytes())
                        .map(AttributeValue::B)
                        .map_err(|e| {
                            ConvertError::new(
                                "bad_binary",
                                format!("a binary column holds a string that is not base64: {e}"),
                            )
                        })
                } else if number && Number::parse(&s).is_ok() {
                    Ok(AttributeValue::N(s))
                } else {
                    Ok(AttributeValue::S(s))
                }
            }
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => Err(ConvertError::new(
                "too_deep",
                format!("lists and maps nest deeper than DynamoDB's {MAX_DEPTH} levels"),
            )),
            Some(b'{') => {
                self.i += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(AttributeValue::M(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    self.expect(b':')?;
                    let v = self.value(depth + 1, binary, false)?;
                    m.insert(k, v);
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b'}') => return Ok(AttributeValue::M(m)),
                        _ => return Err(self.err("expected `,` or `}` in an object")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut l = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(AttributeValue::L(l));
                }
                loop {
                    l.push(self.value(depth + 1, binary, number)?);
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b']') => return Ok(AttributeValue::L(l)),
                        _ => return Err(self.err("expected `,` or `]` in an array")),
                    }
                }
            }
            Some(b't') => self.literal(b"true").map(|_| AttributeValue::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|_| AttributeValue::Bool(false)),
            Some(b'n') => self.literal(b"null").map(|_| AttributeValue::Null),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.i;
                while matches!(
                    self.peek(),
                    Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                ) {
                    self.i += 1;
                }
                // Checked above to hold only ASCII.
                let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or_default();
                if !json_number(text.as_bytes()) {
                    return Err(ConvertError::new(
                        "bad_json",
                        format!("{text:?} is not a JSON number"),
                    ));
                }
                Number::parse(text).map_err(|e| {
                    ConvertError::new(
                        "bad_number",
                        format!("{text} cannot be a DynamoDB number: {e}"),
                    )
                })?;
                Ok(AttributeValue::N(text.to_string()))
            }
            _ => Err(self.err("not a JSON value")),
        }
    }

    fn string(&mut self) -> Result<String, ConvertError> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a string"));
        }
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.i;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.extend_from_slice(&self.b[start..self.i]);
            match self.next() {
                Some(b'"') => break,
                Some(b'\\') => {
                    let c = self.next().ok_or_else(|| self.err("unterminated string"))?;
                    match c {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp) {
                                // a high surrogate must be followed by a low one
                                if self.b[self.i..].starts_with(b"\\u") {
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if !(0xdc00..0xe000).contains(&lo) {
                                        return Err(self.err("unpaired surrogate in a string"));
                                    }
                                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    return Err(self.err("unpaired surrogate in a string"));
                                }
                            } else if (0xdc00..0xe000).contains(&cp) {
                                return Err(self.err("unpaired surrogate in a string"));
                            }
                            let ch =
                                char::from_u32(cp).ok_or_else(|| self.err("bad \\u escape"))?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.err("bad escape in a string")),
                    }
                }
                Some(_) => return Err(self.err("control character in a string")),
                None => return Err(self.err("unterminated string")),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("a string is not UTF-8"))
    }

    fn hex4(&mut self) -> Result<u32, ConvertError> {
        let h = self
            .b
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.err("short \\u escape"))?;
        let s = std::str::from_utf8(h).map_err(|_| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(s, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }
}

/// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn json_number(b: &[u8]) -> bool {
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
    };
    if b.get(i) == Some(&b'0') {
        i += 1;
    } else if digits(&mut i) == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.into())
    }
    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.into())
    }

    #[test]
    fn every_json_type_maps() {
        let hints: ColumnHints = [
            ("blob".to_string(), ColumnHint::Binary),
            ("blobs".to_string(), ColumnHint::Binary),
        ]
        .into();
        let row =
            br#" {"id":"01J9ZK","n":-12.50,"big":123456789012345678901234567890.12345678,"e":1E+3,
            "ok":true,"no":false,"nil":null,"blob":"AP8=","blobs":["AQ==",null],"empty":"",
            "doc":{"a":[1,"x",{"b":null}],"u":"\u00e9\ud83d\ude00\n\"","o":{}},"arr":[]} "#;
        let item = row_to_item(row, &hints).unwrap();
        let expected: Item = [
            ("id", s("01J9ZK")),
            ("n", n("-12.50")),
            ("big", n("123456789012345678901234567890.12345678")),
            ("e", n("1E+3")),
            ("ok", AttributeValue::Bool(true)),
            ("no", AttributeValue::Bool(false)),
            ("nil", AttributeValue::Null),
            ("blob", AttributeValue::B(vec![0, 255])),
            (
                "blobs",
                AttributeValue::L(vec![AttributeValue::B(vec![1]), AttributeValue::Null]),
            ),
            ("empty", s("")),
            (
                "doc",
                AttributeValue::M(
                    [
                        (
                            "a".to_string(),
                            AttributeValue::L(vec![
                                n("1"),
                                s("x"),
                                AttributeValue::M([("b".to_string(), AttributeValue::Null)].into()),
                            ]),
                        ),
                        ("u".to_string(), s("é😀\n\"")),
                        ("o".to_string(), AttributeValue::M(BTreeMap::new())),
                    ]
                    .into(),
                ),
            ),
            ("arr", AttributeValue::L(vec![])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(item, expected);
    }

    #[test]
    fn bad_rows_are_refused_with_a_reason() {
        let h = ColumnHints::new();
        let cases: &[(&[u8], &str)] = &[
            (b"[1]", "bad_json"),
            (b"{\"a\":1", "bad_json"),
            (b"{\"a\":01}", "bad_json"),
            (b"{\"a\":1.}", "bad_json"),
            (b"{\"a\":\"\\ud800\"}", "bad_json"),
            (b"{\"a\":\"\xff\"}", "bad_json"),
            (b"{\"a\":tru}", "bad_json"),
            (b"{\"a\":1} x", "bad_json"),
            (b"{\"\":1}", "empty_attribute_name"),
            (b"{\"a\":1e200}", "bad_number"),
            (
                b"{\"a\":123456789012345678901234567890123456789}",
                "bad_number",
            ),
        ];
        for (row, kind) in cases {
            let e = row_to_item(row, &h).unwrap_err();
            assert_eq!(e.error_type, *kind, "{}: {e}", String::from_utf8_lossy(row));
        }
        let hb: ColumnHints = [("b".to_string(), ColumnHint::Binary)].into();
        assert_eq!(
            row_to_item(br#"{"b":"not base64!"}"#, &hb)
                .unwrap_err()
                .error_type,
            "bad_binary"
        );
        // 32 levels inside an attribute are fine, 33 are not
        let deep =
            |levels: usize| format!("{{\"a\":{}1{}}}", "[".repeat(levels), "]".repeat(levels));
        assert!(row_to_item(deep(32).as_bytes(), &h).is_ok());
        assert_eq!(
            row_to_item(deep(33).as_bytes(), &h).unwrap_err().error_type,
            "too_deep"
        );
        // a very deep input is refused without recursing through all of it
        assert_eq!(
            row_to_item(deep(100_000).as_bytes(), &h)
                .unwrap_err()
                .error_type,
            "too_deep"
        );
    }

    #[test]
    fn damaged_rows_give_errors_never_panics() {
        let hints: ColumnHints = [
            ("b".to_string(), ColumnHint::Binary),
            ("n".to_string(), ColumnHint::Number),
        ]
        .into();
        let row: &[u8] = br#"{"id":"a\u00e9\ud83d\ude00","n":"-1.5e3","b":"AP8=","m":{"l":[1,2.5e-3,true,null,{"x":[]}],"s":"\"q\""},"z":-0}"#;
        assert!(row_to_item(row, &hints).is_ok());
        // xorshift: reproducible damage without a dependency
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"{}[]\",:\\-+.eE0123456789tfnu \x00\xff";
        for _ in 0..20_000 {
            let mut r = row.to_vec();
            for _ in 0..1 + next() % 4 {
                let at = (next() % r.len() as u64) as usize;
                match next() % 3 {
                    0 => r[at] = alphabet[(next() % alphabet.len() as u64) as usize],
                    1 => {
                        r.remove(at);
                    }
                    _ => r.truncate(at),
                }
                if r.is_empty() {
                    break;
                }
            }
            if let Err(e) = row_to_item(&r, &hints) {
                assert!(!e.reason.is_empty());
            }
            let _ = Number::parse(&String::from_utf8_lossy(&r));
        }
    }

    #[test]
    fn items_over_400_kb_are_refused() {
        let h = ColumnHints::new();
        // name "id" (2) + "v" (1) + value: exactly at the limit, then one byte over
        let at = MAX_ITEM_BYTES - 2 - 1 - 1;
        let row = format!(r#"{{"id":"x","v":"{}"}}"#, "a".repeat(at));
        assert!(row_to_item(row.as_bytes(), &h).is_ok());
        let row = format!(r#"{{"id":"x","v":"{}"}}"#, "a".repeat(at + 1));
        let e = row_to_item(row.as_bytes(), &h).unwrap_err();
        assert_eq!(e.error_type, "item_too_large");
        assert!(e.reason.contains("409601"), "{e}");
    }

    #[test]
    fn column_kinds_parse_from_their_names() {
        for (name, kind) in [
            ("string", ColumnHint::String),
            ("number", ColumnHint::Number),
            ("binary", ColumnHint::Binary),
            ("bytea", ColumnHint::Binary),
            ("bool", ColumnHint::Bool),
            ("time", ColumnHint::Time),
            ("json", ColumnHint::Json),
        ] {
            assert_eq!(name.parse::<ColumnHint>(), Ok(kind));
        }
        assert!("xml"
            .parse::<ColumnHint>()
            .unwrap_err()
            .contains("unknown column kind"));
        assert_eq!(ColumnHint::Number.key_type(), KeyType::N);
        assert_eq!(ColumnHint::Time.key_type(), KeyType::S);
    }

    #[test]
    fn number_hints_read_numeric_strings_as_numbers() {
        let h: ColumnHints = [("amount".to_string(), ColumnHint::Number)].into();
        let item = row_to_item(br#"{"amount":"12.3400","other":"12"}"#, &h).unwrap();
        assert_eq!(item["amount"], n("12.3400"));
        assert_eq!(item["other"], s("12"));
        let item = row_to_item(br#"{"amount":"NaN"}"#, &h).unwrap();
        assert_eq!(
            item["amount"],
            s("NaN"),
            "not a number DynamoDB has: kept as text"
        );
    }

    #[test]
    fn keys_are_checked() {
        let schema = KeySchema {
            partition: KeyAttribute {
                name: "id".into(),
                key_type: KeyType::S,
            },
            sort: Some(KeyAttribute {
                name: "ts".into(),
                key_type: KeyType::N,
            }),
        };
        let h = ColumnHints::new();
        let item = row_to_item(br#"{"id":"a","ts":1.50,"x":1}"#, &h).unwrap();
        let key = schema.key_of(&item).unwrap();
        assert_eq!(key.len(), 2);
        let other = row_to_item(br#"{"id":"a","ts":15e-1}"#, &h).unwrap();
        assert_eq!(
            schema.signature(&key),
            schema.signature(&schema.key_of(&other).unwrap())
        );
        for (row, kind) in [
            (&br#"{"ts":1}"#[..], "missing_key"),
            (br#"{"id":null,"ts":1}"#, "missing_key"),
            (br#"{"id":"","ts":1}"#, "empty_key"),
            (br#"{"id":"a","ts":"1"}"#, "key_type_mismatch"),
            (br#"{"id":1,"ts":1}"#, "key_type_mismatch"),
        ] {
            let item = row_to_item(row, &h).unwrap();
            assert_eq!(
                schema.key_of(&item).unwrap_err().error_type,
                kind,
                "{}",
                String::from_utf8_lossy(row)
            );
        }
        assert_eq!(
            schema.key_from_id("a").unwrap_err().error_type,
            "missing_key"
        );
        let by_number = KeySchema {
            partition: KeyAttribute {
                name: "n".into(),
                key_type: KeyType::N,
            },
            sort: None,
        };
        assert_eq!(by_number.key_from_id("42").unwrap()["n"], n("42"));
        assert_eq!(
            by_number.key_from_id("x").unwrap_err().error_type,
            "bad_number"
        );
    }
}
