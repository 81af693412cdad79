//! Attribute values: the model, their DynamoDB JSON wire form (`{"S":"…"}`, `{"N":"…"}`, …),
//! numbers kept as exact decimal text, and item sizes counted the way DynamoDB counts them.

use std::collections::BTreeMap;

use base64::Engine;

/// One item: attribute name → value.
pub type Item = BTreeMap<String, AttributeValue>;

/// The largest item DynamoDB stores: 400 KB, names and values included.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// How deep lists and maps may nest inside one attribute.
pub const MAX_DEPTH: usize = 32;

/// A value of one attribute (sets are not used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    S(String),
    /// Decimal text, exactly as given (checked by [`Number::parse`] when it is built).
    N(String),
    B(Vec<u8>),
    Bool(bool),
    Null,
    M(BTreeMap<String, AttributeValue>),
    L(Vec<AttributeValue>),
}

impl AttributeValue {
    /// The one-letter type name of the wire form.
    pub fn type_name(&self) -> &'static str {
        match self {
            AttributeValue::S(_) => "S",
            AttributeValue::N(_) => "N",
            AttributeValue::B(_) => "B",
            AttributeValue::Bool(_) => "BOOL",
            AttributeValue::Null => "NULL",
            AttributeValue::M(_) => "M",
            AttributeValue::L(_) => "L",
        }
    }

    /// Appends the wire form: `{"S":"text"}`, `{"N":"1.5"}`, `{"B":"base64"}`,
    /// `{"BOOL":true}`, `{"NULL":true}`, `{"M":{…}}`, `{"L":[…]}`.
    pub fn write_wire(&self, out: &mut Vec<u8>) {
        match self {
            AttributeValue::S(s) => {
                out.extend_from_slice(br#"{"S":"#);
                write_json_string(s, out);
                out.push(b'}');
            }
            AttributeValue::N(n) => {
                out.extend_from_slice(br#"{"N":""#);
                // Checked number text holds only digits, sign, `.`, `e`/`E`: nothing to escape.
                out.extend_from_slice(n.as_bytes());
                out.extend_from_slice(b"\"}");
            }
            AttributeValue::B(b) => {
                out.extend_from_slice(br#"{"B":""#);
                let start = out.len();
                let len = base64::encoded_len(b.len(), true).unwrap_or(0);
                out.resize(start + len, 0);
                let written = base64::engine::general_purpose::STANDARD
                    .encode_slice(b, &mut out[start..])
                    .unwrap_or(0);
                out.truncate(start + written);
                out.extend_from_slice(b"\"}");
            }
            AttributeValue::Bool(true) => out.extend_from_slice(br#"{"BOOL":true}"#),
            AttributeValue::Bool(false) => out.extend_from_slice(br#"{"BOOL":false}"#),
            AttributeValue::Null => out.extend_from_slice(br#"{"NULL":true}"#),
            AttributeValue::M(m) => {
                out.extend_from_slice(br#"{"M":"#);
                write_item(m, out);
                out.push(b'}');
            }
            AttributeValue::L(l) => {
                out.extend_from_slice(br#"{"L":["#);
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write_wire(out);
                }
                out.extend_from_slice(b"]}");
            }
        }
    }

    /// Bytes DynamoDB counts for this value (not its name).
    pub fn size(&self) -> usize {
        match self {
            AttributeValue::S(s) => s.len(),
            AttributeValue::N(n) => Number::parse(n).map_or(n.len(), |n| n.size()),
            AttributeValue::B(b) => b.len(),
            AttributeValue::Bool(_) | AttributeValue::Null => 1,
            // 3 bytes of overhead, and 1 per element.
            AttributeValue::M(m) => {
                3 + m.iter().map(|(k, v)| 1 + k.len() + v.size()).sum::<usize>()
            }
            AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + v.size()).sum::<usize>(),
        }
    }

    /// Reads one value from its wire form (as `GetItem`, `Scan`, … return it).
    pub fn from_wire(v: &serde_json::Value) -> Result<AttributeValue, WireError> {
        let obj = v
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or(WireError::NotTyped)?;
        let (t, v) = obj.iter().next().ok_or(WireError::NotTyped)?;
        let text = || {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| WireError::NotString {
                    kind: t.clone(),
                    found: v.to_string(),
                })
        };
        Ok(match t.as_str() {
            "S" => AttributeValue::S(text()?),
            "N" => {
                let n = text()?;
                if let Err(cause) = Number::parse(&n) {
                    return Err(WireError::Number { text: n, cause });
                }
                AttributeValue::N(n)
            }
            "B" => AttributeValue::B(
                base64::engine::general_purpose::STANDARD
                    .decode(text()?)
                    .map_err(WireError::Base64)?,
            ),
            "BOOL" => AttributeValue::Bool(v.as_bool().ok_or(WireError::NotBool)?),
            "NULL" => AttributeValue::Null,
            "M" => AttributeValue::M(item_from_wire(v)?),
            "L" => AttributeValue::L(
                v.as_array()
                    .ok_or(WireError::NotList)?
                    .iter()
                    .map(AttributeValue::from_wire)
                    .collect::<Result<_, _>>()?,
            ),
            other => return Err(WireError::UnknownType(other.to_string())),
        })
    }

    /// Equality as DynamoDB sees it: numbers compare by value (`1.50` equals `1.5`).
    pub fn same_as(&self, other: &AttributeValue) -> bool {
        match (self, other) {
            (AttributeValue::N(a), AttributeValue::N(b)) => {
                match (Number::parse(a), Number::parse(b)) {
                    (Ok(x), Ok(y)) => x == y,
                    _ => a == b,
                }
            }
            (AttributeValue::M(a), AttributeValue::M(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && va.same_as(vb))
            }
            (AttributeValue::L(a), AttributeValue::L(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y))
            }
            _ => self == other,
        }
    }
}

/// Appends an item (or a map's content) in wire form: `{"name":{"S":"…"},…}`.
pub fn write_item(item: &Item, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (k, v)) in item.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_string(k, out);
        out.push(b':');
        v.write_wire(out);
    }
    out.push(b'}');
}

/// Reads an item from its wire form.
pub fn item_from_wire(v: &serde_json::Value) -> Result<Item, WireError> {
    v.as_object()
        .ok_or(WireError::NotObject)?
        .iter()
        .map(|(k, v)| {
            AttributeValue::from_wire(v)
                .map(|a| (k.clone(), a))
                .map_err(|e| WireError::Attribute {
                    name: k.clone(),
                    cause: Box::new(e),
                })
        })
        .collect()
}

/// Bytes DynamoDB counts for an item: every attribute's name and value.
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + v.size()).sum()
}

/// An item in wire form as a JSON value, numbers in their canonical text: two items that
/// DynamoDB holds as equal (`1.50` and `1.5`) give equal values, and two that differ show
/// where, attribute by attribute.
pub fn canonical_json(item: &Item) -> serde_json::Value {
    fn canonical(v: &AttributeValue) -> AttributeValue {
        match v {
            AttributeValue::N(n) => {
                AttributeValue::N(Number::parse(n).map_or_else(|_| n.clone(), |n| n.canonical()))
            }
            AttributeValue::M(m) => {
                AttributeValue::M(m.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
            }
            AttributeValue::L(l) => AttributeValue::L(l.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    let canonical: Item = item
        .iter()
        .map(|(k, v)| (k.clone(), canonical(v)))
        .collect();
    let mut buf = Vec::new();
    write_item(&canonical, &mut buf);
    // The writer above produces valid JSON by construction.
    serde_json::from_slice(&buf).unwrap_or_default()
}

/// Items equal as DynamoDB sees them (numbers by value).
pub fn items_same(a: &Item, b: &Item) -> bool {
    AttributeValue::M(a.clone()).same_as(&AttributeValue::M(b.clone()))
}

/// Appends `s` as a JSON string.
pub fn write_json_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A decimal number as DynamoDB keeps it: sign, significant digits (no leading or trailing
/// zeros) and the power of ten of the first digit. Two texts of the same value (`1.50`,
/// `15e-1`) give equal `Number`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number {
    pub negative: bool,
    /// Significant digits, `b'0'..=b'9'`; empty for zero.
    pub digits: Vec<u8>,
    /// The value is `0.d1d2… × 10^(exponent + 1)`, i.e. `d1.d2… × 10^exponent`.
    pub exponent: i64,
}

/// Why a value or item in wire form (`{"S":"…"}`) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("an attribute value must be an object with one type")]
    NotTyped,
    #[error("{kind} holds {found}, not a string")]
    NotString { kind: String, found: String },
    #[error("N {text:?}")]
    Number {
        text: String,
        #[source]
        cause: NumberError,
    },
    #[error("B")]
    Base64(#[source] base64::DecodeError),
    #[error("BOOL holds no boolean")]
    NotBool,
    #[error("L holds no array")]
    NotList,
    #[error("attribute type {0} is not supported")]
    UnknownType(String),
    #[error("an item must be an object")]
    NotObject,
    #[error("attribute {name:?}")]
    Attribute {
        name: String,
        #[source]
        cause: Box<WireError>,
    },
}

/// Why a text is not a number DynamoDB stores.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumberError {
    #[error("not a decimal number")]
    Syntax,
    #[error("more than 38 significant digits")]
    TooPrecise,
    #[error("magnitude above 9.99…E+125")]
    Overflow,
    #[error("magnitude below 1E-130")]
    Underflow,
}

impl Number {
    /// Parses decimal text (`-12.5`, `1e10`, `0.000`, `007`) and checks that DynamoDB can
    /// store it: at most 38 significant digits, magnitude within `1E-130 ..= 9.99…E+125`.
    pub fn parse(text: &str) -> Result<Number, NumberError> {
        let b = text.as_bytes();
        let mut i = 0;
        let negative = b.first() == Some(&b'-');
        if negative {
            i += 1;
        }
        let int_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let int = &b[int_start..i];
        let mut frac: &[u8] = &[];
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            frac = &b[s..i];
            if frac.is_empty() {
                return Err(NumberError::Syntax);
            }
        }
        if int.is_empty() {
            return Err(NumberError::Syntax);
        }
        let mut exp: i64 = 0;
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            let neg = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                // Saturates far outside the range: the range check refuses it.
                exp = (exp * 10 + i64::from(b[i] - b'0')).min(1 << 40);
                i += 1;
            }
            if s == i {
                return Err(NumberError::Syntax);
            }
            if neg {
                exp = -exp;
            }
        }
        if i != b.len() {
            return Err(NumberError::Syntax);
        }
        // All digits in order; the decimal point sits after `int.len()` of them.
        let all = int.iter().chain(frac).copied();
        let lead = all.clone().take_while(|d| *d == b'0').count();
        let mut digits: Vec<u8> = all.skip(lead).collect();
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        if digits.is_empty() {
            return Ok(Number {
                negative: false,
                digits,
                exponent: 0,
            });
        }
        let exponent = int.len() as i64 - lead as i64 - 1 + exp;
        if digits.len() > 38 {
            return Err(NumberError::TooPrecise);
        }
        if exponent > 125 {
            return Err(NumberError::Overflow);
        }
        if exponent < -130 {
            return Err(NumberError::Underflow);
        }
        Ok(Number {
            negative,
            digits,
            exponent,
        })
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Bytes DynamoDB counts: digits packed two to a byte (aligned on even powers of ten),
    /// one byte more, and one more for a negative number.
    pub fn size(&self) -> usize {
        if self.is_zero() {
            return 1;
        }
        let d = self.digits.len();
        let aligned = d.is_multiple_of(2) && self.exponent % 2 == 0;
        1 + d.div_ceil(2) + usize::from(aligned) + usize::from(self.negative)
    }

    /// One canonical text of the value (`-1.5E+3` style is not used: `-1500`, `0.015`).
    pub fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let digits = std::str::from_utf8(&self.digits).unwrap_or("0");
        let mut s = String::new();
        if self.negative {
            s.push('-');
        }
        let point = self.exponent + 1; // digits before the decimal point
        if point <= 0 {
            s.push_str("0.");
            s.extend(std::iter::repeat_n('0', (-point) as usize));
            s.push_str(digits);
        } else if point as usize >= digits.len() {
            s.push_str(digits);
            s.extend(std::iter::repeat_n('0', point as usize - digits.len()));
        } else {
            s.push_str(&digits[..point as usize]);
            s.push('.');
            s.push_str(&digits[point as usize..]);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(v: &AttributeValue) -> String {
        let mut out = Vec::new();
        v.write_wire(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn canonical_json_shows_equal_items_equal() {
        let item = |n: &str| -> Item {
            [
                ("a".to_string(), AttributeValue::N(n.into())),
                (
                    "m".to_string(),
                    AttributeValue::M(
                        [(
                            "l".to_string(),
                            AttributeValue::L(vec![AttributeValue::N(n.into())]),
                        )]
                        .into(),
                    ),
                ),
                ("b".to_string(), AttributeValue::B(vec![0, 255])),
            ]
            .into()
        };
        assert_eq!(
            canonical_json(&item("1.50")),
            canonical_json(&item("15e-1"))
        );
        assert_ne!(canonical_json(&item("1.50")), canonical_json(&item("1.51")));
        assert_eq!(
            canonical_json(&item("100")).to_string(),
            r#"{"a":{"N":"100"},"b":{"B":"AP8="},"m":{"M":{"l":{"L":[{"N":"100"}]}}}}"#
        );
    }

    #[test]
    fn numbers_parse_exactly_and_compare_by_value() {
        let n = Number::parse("-0012.3400").unwrap();
        assert_eq!(
            (n.negative, n.digits.as_slice(), n.exponent),
            (true, &b"1234"[..], 1)
        );
        assert_eq!(n.canonical(), "-12.34");
        assert_eq!(
            Number::parse("1.50").unwrap(),
            Number::parse("15e-1").unwrap()
        );
        assert_eq!(Number::parse("1e5").unwrap().canonical(), "100000");
        assert_eq!(Number::parse("0.00012").unwrap().canonical(), "0.00012");
        assert_eq!(Number::parse("-0.0").unwrap(), Number::parse("0").unwrap());
        let big = "12345678901234567890123456789012345678";
        assert_eq!(Number::parse(big).unwrap().canonical(), big);
        assert_eq!(
            Number::parse("123456789012345678901234567890123456789"),
            Err(NumberError::TooPrecise)
        );
        assert_eq!(Number::parse("1e126"), Err(NumberError::Overflow));
        assert!(Number::parse("9.9999999999999999999999999999999999999E+125").is_ok());
        assert!(Number::parse("1E-130").is_ok());
        assert_eq!(Number::parse("1E-131"), Err(NumberError::Underflow));
        assert_eq!(
            Number::parse("1e99999999999999999999999"),
            Err(NumberError::Overflow)
        );
        for bad in [
            "", "-", "+1", "1.", ".5", "1e", "1e+", "0x10", "1 ", "NaN", "Infinity", "1.2.3",
        ] {
            assert_eq!(Number::parse(bad), Err(NumberError::Syntax), "{bad:?}");
        }
    }

    #[test]
    fn number_sizes_follow_the_base_100_packing() {
        // (text, size) as DynamoDB counts them
        for (text, size) in [
            ("0", 1),
            ("1", 2),
            ("10", 2),
            ("12", 2),
            ("123", 3),
            ("1234", 3),
            ("1.2", 3),
            ("120", 3),
            ("-1", 3),
            ("0.5", 2),
            ("12345678901234567890123456789012345678", 20),
        ] {
            assert_eq!(Number::parse(text).unwrap().size(), size, "{text}");
        }
    }

    #[test]
    fn wire_form_of_every_type() {
        let mut m = BTreeMap::new();
        m.insert(
            "a\"b".to_string(),
            AttributeValue::L(vec![AttributeValue::Null, AttributeValue::Bool(false)]),
        );
        let cases = [
            (
                AttributeValue::S("x\n\u{1}é\\".into()),
                r#"{"S":"x\n\u0001é\\"}"#,
            ),
            (AttributeValue::N("-1.5e3".into()), r#"{"N":"-1.5e3"}"#),
            (AttributeValue::B(vec![0, 255, 16]), r#"{"B":"AP8Q"}"#),
            (AttributeValue::B(vec![]), r#"{"B":""}"#),
            (AttributeValue::Bool(true), r#"{"BOOL":true}"#),
            (AttributeValue::Null, r#"{"NULL":true}"#),
            (
                AttributeValue::M(m),
                r#"{"M":{"a\"b":{"L":[{"NULL":true},{"BOOL":false}]}}}"#,
            ),
        ];
        for (v, expected) in cases {
            let w = wire(&v);
            assert_eq!(w, expected);
            let back = AttributeValue::from_wire(&serde_json::from_str(&w).unwrap()).unwrap();
            assert_eq!(back, v);
        }
        assert_eq!(
            AttributeValue::from_wire(&serde_json::json!({"SS": ["a"]})).unwrap_err(),
            WireError::UnknownType("SS".into())
        );
        assert!(AttributeValue::from_wire(&serde_json::json!({"N": "abc"})).is_err());
    }

    #[test]
    fn item_sizes() {
        let item: Item = [
            ("id".to_string(), AttributeValue::S("abc".into())),
            ("n".to_string(), AttributeValue::N("12".into())),
            ("ok".to_string(), AttributeValue::Bool(true)),
            (
                "l".to_string(),
                AttributeValue::L(vec![AttributeValue::S("xy".into()), AttributeValue::Null]),
            ),
            (
                "m".to_string(),
                AttributeValue::M([("k".to_string(), AttributeValue::B(vec![1, 2, 3]))].into()),
            ),
        ]
        .into();
        // id 2+3, n 1+2, ok 2+1, l 1+(3+1+2+1+1), m 1+(3+1+1+3)
        assert_eq!(item_size(&item), 5 + 3 + 3 + 9 + 9);
    }
}
