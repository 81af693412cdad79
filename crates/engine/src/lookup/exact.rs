//! Exact JSON values for verify: what the source sent and what the target holds are
//! compared from their JSON text, never through a 64-bit float. `serde_json::Value`
//! (without the `arbitrary_precision` feature, which would change the copy path) turns
//! every number that is not a 64-bit integer into an `f64`, so a `numeric(40,20)` or a
//! 30-digit integer changed beyond the 16th significant digit would compare equal.
//!
//! What counts as equal:
//! - numbers by their decimal value, read from their text: `1`, `1.0`, `1e0` and `10e-1`
//!   are equal (the same value), `-0` equals `0`; any digit that differs, however far
//!   down, makes them different;
//! - strings exactly (after JSON unescaping: `"\u00e9"` equals `"é"`);
//! - objects by their keys and values, key order irrelevant (a key given twice: the last
//!   wins, as every JSON reader of the sinks takes it);
//! - arrays element by element, in order.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON value with its numbers kept exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exact {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Exact>),
    Object(BTreeMap<String, Exact>),
}

/// A JSON number: its text as written, equal to another by decimal value.
#[derive(Debug, Clone)]
pub struct Number {
    text: String,
    value: Decimal,
}

/// `(-1)^negative × digits × 10^exponent`, with `digits` free of leading and trailing
/// zeros (empty for zero, which is never negative). A number whose exponent does not fit
/// an `i64` keeps its text as its value (compared as written).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decimal {
    Finite {
        negative: bool,
        digits: String,
        exponent: i64,
    },
    Text(String),
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for Number {}

impl Number {
    /// Reads a JSON number's text (as JSON writes it: `-?int(.frac)?([eE][+-]?exp)?`);
    /// `None` when it is not one.
    pub fn parse(text: &str) -> Option<Number> {
        let value = decimal(text)?;
        Some(Number {
            text: text.to_string(),
            value,
        })
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// One text for every way of writing the same decimal value (`1`, `1.0` and `10e-1`
    /// give `1e0`; zero gives `0`): what a content digest is taken of.
    pub fn canonical(&self) -> String {
        match &self.value {
            Decimal::Finite { digits, .. } if digits.is_empty() => "0".to_string(),
            Decimal::Finite {
                negative,
                digits,
                exponent,
            } => format!("{}{digits}e{exponent}", if *negative { "-" } else { "" }),
            Decimal::Text(t) => t.clone(),
        }
    }
}

fn decimal(text: &str) -> Option<Decimal> {
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
    let int = &text[int_start..i];
    if int.is_empty() || (int.len() > 1 && int.starts_with('0')) {
        return None;
    }
    let mut frac = "";
    if b.get(i) == Some(&b'.') {
        let s = i + 1;
        i = s;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac = &text[s..i];
        if frac.is_empty() {
            return None;
        }
    }
    let mut exp: Option<i64> = Some(0);
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let minus = match b.get(i) {
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
            i += 1;
        }
        if s == i {
            return None;
        }
        exp = text[s..i]
            .parse::<i64>()
            .ok()
            .map(|e| if minus { -e } else { e });
    }
    if i != b.len() {
        return None;
    }
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    let trailing = digits.len() - digits.trim_end_matches('0').len();
    digits.truncate(digits.len() - trailing);
    let digits = digits.trim_start_matches('0').to_string();
    if digits.is_empty() {
        return Some(Decimal::Finite {
            negative: false,
            digits,
            exponent: 0,
        });
    }
    let exponent = exp
        .and_then(|e| e.checked_sub(i64::try_from(frac.len()).ok()?))
        .and_then(|e| e.checked_add(i64::try_from(trailing).ok()?));
    Some(match exponent {
        Some(exponent) => Decimal::Finite {
            negative,
            digits,
            exponent,
        },
        None => Decimal::Text(text.to_string()),
    })
}

/// Why a text is not one JSON value.
#[derive(Debug, thiserror::Error)]
pub enum ExactError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("not a JSON number: {0}")]
    Number(String),
}

impl Exact {
    /// Reads one JSON value from its text, numbers exact.
    pub fn parse(json: &[u8]) -> Result<Exact, ExactError> {
        let raw: &RawValue = serde_json::from_slice(json)?;
        Exact::from_raw(raw)
    }

    /// Reads a value already held as raw JSON text.
    pub fn from_raw(raw: &RawValue) -> Result<Exact, ExactError> {
        // serde_json bounds the nesting of what it accepts (128 levels), so this
        // recursion is bounded by the same depth.
        let text = raw.get();
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let m: BTreeMap<String, &RawValue> = serde_json::from_str(text)?;
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    out.insert(k, Exact::from_raw(v)?);
                }
                Exact::Object(out)
            }
            Some(b'[') => {
                let a: Vec<&RawValue> = serde_json::from_str(text)?;
                Exact::Array(
                    a.into_iter()
                        .map(Exact::from_raw)
                        .collect::<Result<_, _>>()?,
                )
            }
            Some(b'"') => Exact::String(serde_json::from_str(text)?),
            Some(b't' | b'f') => Exact::Bool(serde_json::from_str(text)?),
            Some(b'n') => Exact::Null,
            _ => Exact::Number(
                Number::parse(text).ok_or_else(|| ExactError::Number(text.to_string()))?,
            ),
        })
    }

    /// From a `serde_json::Value`, for values that hold no number beyond what a `Value`
    /// keeps exactly (DynamoDB's wire form: numbers are strings there).
    pub fn from_value(v: &Value) -> Exact {
        match v {
            Value::Null => Exact::Null,
            Value::Bool(b) => Exact::Bool(*b),
            Value::Number(n) => {
                let text = n.to_string();
                Number::parse(&text).map_or(Exact::String(text), Exact::Number)
            }
            Value::String(s) => Exact::String(s.clone()),
            Value::Array(a) => Exact::Array(a.iter().map(Exact::from_value).collect()),
            Value::Object(o) => Exact::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), Exact::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Exact> {
        match self {
            Exact::Object(o) => o.get(key),
            _ => None,
        }
    }
}

/// As JSON text (numbers as written).
impl fmt::Display for Exact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exact::Null => f.write_str("null"),
            Exact::Bool(b) => write!(f, "{b}"),
            Exact::Number(n) => f.write_str(&n.text),
            Exact::String(s) => write!(f, "{}", Value::String(s.clone())),
            Exact::Array(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Exact::Object(o) => {
                f.write_str("{")?;
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{v}", Value::String(k.clone()))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// The first place where `expected` and `held` differ, for the report: a path of object
/// keys and array positions (`field a.b[2]`) with both values; `None` when equal.
pub fn difference(expected: &Exact, held: &Exact) -> Option<String> {
    fn walk(path: &mut String, e: &Exact, h: &Exact) -> Option<String> {
        let at = |path: &str| {
            if path.is_empty() {
                String::new()
            } else {
                format!("field {path}: ")
            }
        };
        match (e, h) {
            (Exact::Object(eo), Exact::Object(ho)) => {
                for (k, ev) in eo {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                    let found = match ho.get(k) {
                        None => Some(format!("field {path} missing")),
                        Some(hv) => walk(path, ev, hv),
                    };
                    path.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                ho.keys().find(|k| !eo.contains_key(*k)).map(|k| {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    format!("field {p} only in the target")
                })
            }
            (Exact::Array(ea), Exact::Array(ha)) if ea.len() == ha.len() => {
                for (i, (ev, hv)) in ea.iter().zip(ha).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    let found = walk(path, ev, hv);
                    path.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            _ if e == h => None,
            _ => Some(format!("{}source {e}, target {h}", at(path))),
        }
    }
    walk(&mut String::new(), expected, held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(s: &str) -> Exact {
        Exact::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn numbers_equal_by_decimal_value_and_every_digit_counts() {
        for (a, b) in [
            ("1", "1.0"),
            ("1", "1e0"),
            ("1", "10e-1"),
            ("0", "-0.000"),
            ("123.4500", "1.2345E+2"),
            ("-7e3", "-7000"),
            ("0.1", "1e-1"),
        ] {
            assert_eq!(x(a), x(b), "{a} = {b}");
        }
        for (a, b) in [
            // A numeric(40,20) changed in its 20th fraction digit.
            (
                "12345678901234567890.12345678901234567890",
                "12345678901234567890.12345678901234567891",
            ),
            // A 30-digit integer changed in its 20th digit: equal as f64.
            (
                "123456789012345678901234567890",
                "123456789012345678911234567890",
            ),
            ("1", "-1"),
            ("1e400", "1e401"),
            ("0.1", "0.10000000000000001"),
        ] {
            assert_ne!(x(a), x(b), "{a} ≠ {b}");
        }
        // An exponent beyond i64: compared as written, never a panic.
        let big = "1e99999999999999999999999";
        assert_eq!(x(big), x(big));
        assert_ne!(x(big), x("1e99999999999999999999998"));
    }

    #[test]
    fn objects_ignore_key_order_and_strings_are_exact() {
        assert_eq!(x(r#"{"a":1,"b":[1,"x"]}"#), x(r#"{"b":[1.0,"x"],"a":1e0}"#));
        assert_eq!(x(r#""\u00e9""#), x(r#""é""#));
        assert_ne!(x(r#""a ""#), x(r#""a""#));
        assert_ne!(x("[1,2]"), x("[2,1]"));
        assert_ne!(x("null"), x("false"));
        assert_ne!(x(r#"{"a":null}"#), x("{}"));
    }

    #[test]
    fn the_difference_names_the_path_and_both_values() {
        let d = difference(
            &x(r#"{"a":{"b":[1,2.000000000000000000001]},"c":"x"}"#),
            &x(r#"{"c":"x","a":{"b":[1,2.000000000000000000002]}}"#),
        );
        assert_eq!(
            d.as_deref(),
            Some("field a.b[1]: source 2.000000000000000000001, target 2.000000000000000000002")
        );
        assert_eq!(
            difference(&x(r#"{"a":1}"#), &x(r#"{"a":1,"z":0}"#)).as_deref(),
            Some("field z only in the target")
        );
        assert_eq!(
            difference(&x(r#"{"a":1}"#), &x("{}")).as_deref(),
            Some("field a missing")
        );
        assert_eq!(difference(&x(r#"{"a":1}"#), &x(r#"{"a":1.0}"#)), None);
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        for bad in ["", "{", "01", "1.", "-", "[1,]", "\"\\x\"", "nul"] {
            assert!(Exact::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
