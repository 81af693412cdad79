//! One row as one JSON object, columns in table order:
//!
//! | PostgreSQL | JSON |
//! |---|---|
//! | text, varchar, char, name, uuid | string |
//! | smallint, integer, bigint, real, double precision | number (NaN and ±Infinity: the row is refused) |
//! | numeric | number, written exactly as PostgreSQL prints it (NaN, ±Infinity refused) |
//! | boolean | true / false |
//! | NULL | null |
//! | bytea | string, standard base64 with padding |
//! | timestamp, timestamptz | string, RFC 3339 in UTC (`2024-05-01T12:00:00.123456Z`; no fraction when zero); ±infinity refused |
//! | date | string `YYYY-MM-DD`; ±infinity refused |
//! | json, jsonb | the JSON itself, embedded (line breaks between tokens become spaces) |
//! | anything else | string: PostgreSQL's text form (arrays, intervals, enums, inet, …) |
//!
//! The key column's rendering (a string's content, a number's digits) is the row's key:
//! its id in the target and its position in the slot; PostgreSQL reads it back with a
//! cast to the key's type.

use base64::Engine;
use chrono::{DateTime, NaiveDate, SecondsFormat};
use tokio_postgres::types::{FromSql, Type};

use crate::schema::{ColumnKind, Schema};

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// Days from 0001-01-01 (CE day 1) to 2000-01-01.
const PG_EPOCH_CE_DAYS: i32 = 730_120;

/// A column's value as the server sent it (any type; `None` for NULL).
pub struct Raw<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The JSON prefix of every column (`{"a":`, `,"b":`), built once per table.
#[derive(Debug, Clone)]
pub struct Renderer {
    kinds: Vec<ColumnKind>,
    /// `None`: the column is read (the key) but not written.
    prefixes: Vec<Option<Vec<u8>>>,
    key: usize,
}

/// Why one value cannot be written as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The binary value has the wrong length for its type.
    #[error("{what} value of {got} bytes, expected {expected}")]
    Length {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// NaN, ±Infinity: JSON has no number for them.
    #[error("{0} has no JSON form")]
    NoJsonNumber(String),
    /// A timestamp or date at ±infinity.
    #[error("an infinite {0} has no calendar form")]
    Infinite(&'static str),
    #[error("{0} out of range")]
    OutOfRange(&'static str),
    #[error("bytea too large")]
    TooLarge,
    #[error("base64")]
    Base64(#[source] base64::EncodeSliceError),
}

/// Why a row cannot be rendered: the column and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub String);

impl Renderer {
    pub fn new(schema: &Schema) -> Renderer {
        let names: Vec<Option<String>> = schema
            .columns
            .iter()
            .map(|c| Some(c.name.clone()))
            .collect();
        Renderer::with_names(schema, &names)
    }

    /// A renderer writing column `i` as `names[i]` (`None`: not written).
    pub fn with_names(schema: &Schema, names: &[Option<String>]) -> Renderer {
        let mut first = true;
        let prefixes = names
            .iter()
            .map(|name| {
                let name = name.as_ref()?;
                let mut p = Vec::with_capacity(name.len() + 4);
                p.push(if first { b'{' } else { b',' });
                first = false;
                // Writing into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut p, name);
                p.push(b':');
                Some(p)
            })
            .collect();
        Renderer {
            kinds: schema.columns.iter().map(|c| c.kind.clone()).collect(),
            prefixes,
            key: schema.key,
        }
    }

    /// Renders a row into `out` (appending) and returns its key. On error `out` may hold
    /// part of the row; the key is returned when it could be read.
    pub fn render(
        &self,
        row: &tokio_postgres::Row,
        out: &mut Vec<u8>,
    ) -> Result<String, (Option<String>, BadValue)> {
        let key = self.key_of(row).map_err(|e| (None, e))?;
        let names = row.columns();
        let mut written = false;
        for (i, kind) in self.kinds.iter().enumerate() {
            let Some(prefix) = &self.prefixes[i] else {
                continue;
            };
            written = true;
            out.extend_from_slice(prefix);
            let raw: Raw = row.try_get(i).map_err(|e| {
                (
                    Some(key.clone()),
                    BadValue(format!("column {}: {e}", names[i].name())),
                )
            })?;
            write_value(kind, raw.0, out).map_err(|e| {
                (
                    Some(key.clone()),
                    BadValue(format!("column {}: {}", names[i].name(), redact::Chain(&e))),
                )
            })?;
        }
        if !written {
            out.push(b'{');
        }
        out.push(b'}');
        Ok(key)
    }

    /// The key of a row (its key column's text).
    pub fn key_of(&self, row: &tokio_postgres::Row) -> Result<String, BadValue> {
        let raw: Raw = row
            .try_get(self.key)
            .map_err(|e| BadValue(format!("key column: {e}")))?;
        key_text(&self.kinds[self.key], raw.0)
    }
}

/// A key value as text (no JSON quoting); NULL keys are refused. A key without a JSON form
/// (timestamps and dates at ±infinity, numeric NaN and ±Infinity) is given in PostgreSQL's
/// own text form (`infinity`, `-infinity`, `NaN`), which casts back to the key: the row
/// itself is refused when rendered, but pages can step over it.
pub fn key_text(kind: &ColumnKind, raw: Option<&[u8]>) -> Result<String, BadValue> {
    let Some(bytes) = raw else {
        return Err(BadValue("the key is NULL".into()));
    };
    let mut out = Vec::new();
    if let Err(e) = write_value(kind, raw, &mut out) {
        return special_key_text(kind, bytes).ok_or(BadValue(redact::chain(&e)));
    }
    let text = if out.first() == Some(&b'"') {
        serde_json::from_slice::<String>(&out).map_err(|e| BadValue(format!("key: {e}")))?
    } else {
        String::from_utf8(out).map_err(|e| BadValue(format!("key: {e}")))?
    };
    Ok(text)
}

/// PostgreSQL's text of a key value that has no JSON form, when it is one of those.
fn special_key_text(kind: &ColumnKind, raw: &[u8]) -> Option<String> {
    let t = match kind {
        ColumnKind::Timestamp | ColumnKind::TimestampTz => {
            match i64::from_be_bytes(raw.try_into().ok()?) {
                i64::MAX => "infinity",
                i64::MIN => "-infinity",
                _ => return None,
            }
        }
        ColumnKind::Date => match i32::from_be_bytes(raw.try_into().ok()?) {
            i32::MAX => "infinity",
            i32::MIN => "-infinity",
            _ => return None,
        },
        ColumnKind::Numeric => match std::str::from_utf8(raw).ok()? {
            t @ ("NaN" | "Infinity" | "-Infinity") => t,
            _ => return None,
        },
        _ => return None,
    };
    Some(t.to_string())
}

fn short<const N: usize>(raw: &[u8], what: &'static str) -> Result<[u8; N], ValueError> {
    raw.try_into().map_err(|_| ValueError::Length {
        what,
        got: raw.len(),
        expected: N,
    })
}

fn utf8(raw: &[u8]) -> Result<&str, ValueError> {
    std::str::from_utf8(raw).map_err(ValueError::NotUtf8)
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes one value as JSON.
pub fn write_value(
    kind: &ColumnKind,
    raw: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<(), ValueError> {
    let Some(raw) = raw else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    match kind {
        ColumnKind::Bool => {
            let [b] = short::<1>(raw, "boolean")?;
            out.extend_from_slice(if b != 0 { b"true" } else { b"false" });
        }
        ColumnKind::Int2 => {
            let v = i16::from_be_bytes(short(raw, "smallint")?);
            out.extend_from_slice(itoa(v as i64).as_bytes());
        }
        ColumnKind::Int4 => {
            let v = i32::from_be_bytes(short(raw, "integer")?);
            out.extend_from_slice(itoa(v as i64).as_bytes());
        }
        ColumnKind::Int8 => {
            let v = i64::from_be_bytes(short(raw, "bigint")?);
            out.extend_from_slice(itoa(v).as_bytes());
        }
        ColumnKind::Float4 => {
            let v = f32::from_be_bytes(short(raw, "real")?);
            if !v.is_finite() {
                return Err(ValueError::NoJsonNumber(v.to_string()));
            }
            let _ = serde_json::to_writer(&mut *out, &v);
        }
        ColumnKind::Float8 => {
            let v = f64::from_be_bytes(short(raw, "double precision")?);
            if !v.is_finite() {
                return Err(ValueError::NoJsonNumber(v.to_string()));
            }
            let _ = serde_json::to_writer(&mut *out, &v);
        }
        ColumnKind::Numeric => {
            let s = utf8(raw)?;
            if !is_json_number(s) {
                return Err(ValueError::NoJsonNumber(format!("numeric {s}")));
            }
            out.extend_from_slice(s.as_bytes());
        }
        ColumnKind::Text | ColumnKind::Other(_) => json_string(out, utf8(raw)?),
        ColumnKind::Uuid => {
            let b = short::<16>(raw, "uuid")?;
            out.push(b'"');
            out.extend_from_slice(format_uuid(&b).as_bytes());
            out.push(b'"');
        }
        ColumnKind::Bytea => {
            out.push(b'"');
            let start = out.len();
            let n = base64::encoded_len(raw.len(), true).ok_or(ValueError::TooLarge)?;
            out.resize(start + n, 0);
            base64::engine::general_purpose::STANDARD
                .encode_slice(raw, &mut out[start..])
                .map_err(ValueError::Base64)?;
            out.push(b'"');
        }
        ColumnKind::Timestamp | ColumnKind::TimestampTz => {
            let v = i64::from_be_bytes(short(raw, "timestamp")?);
            out.push(b'"');
            out.extend_from_slice(format_micros(v)?.as_bytes());
            out.push(b'"');
        }
        ColumnKind::Date => {
            let d = i32::from_be_bytes(short(raw, "date")?);
            out.push(b'"');
            out.extend_from_slice(format_date(d)?.as_bytes());
            out.push(b'"');
        }
        ColumnKind::Json | ColumnKind::Jsonb => {
            let s = utf8(raw)?;
            // Raw line breaks can only be whitespace between tokens in valid JSON (inside
            // strings they are escaped): make the row one line.
            out.extend(
                s.bytes()
                    .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
            );
        }
    }
    Ok(())
}

fn itoa(v: i64) -> String {
    v.to_string()
}

/// Whether PostgreSQL's numeric text is a JSON number (not NaN or ±Infinity).
fn is_json_number(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && digits.as_bytes()[0].is_ascii_digit()
        && !digits.ends_with('.')
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower case.
pub fn format_uuid(b: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(HEX[(byte >> 4) as usize] as char);
        s.push(HEX[(byte & 15) as usize] as char);
    }
    s
}

/// PostgreSQL timestamp microseconds (from 2000-01-01) as RFC 3339 UTC.
pub fn format_micros(pg_micros: i64) -> Result<String, ValueError> {
    if pg_micros == i64::MAX || pg_micros == i64::MIN {
        return Err(ValueError::Infinite("timestamp"));
    }
    let range = ValueError::OutOfRange("timestamp");
    let unix = pg_micros
        .checked_add(PG_EPOCH_MICROS)
        .ok_or(range.clone())?;
    let t = DateTime::from_timestamp_micros(unix).ok_or(range)?;
    Ok(t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// Unix milliseconds as RFC 3339 UTC.
pub fn format_unix_micros(unix: i64) -> Option<String> {
    DateTime::from_timestamp_micros(unix).map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// PostgreSQL date days (from 2000-01-01) as `YYYY-MM-DD`.
pub fn format_date(pg_days: i32) -> Result<String, ValueError> {
    if pg_days == i32::MAX || pg_days == i32::MIN {
        return Err(ValueError::Infinite("date"));
    }
    let range = ValueError::OutOfRange("date");
    let ce = pg_days.checked_add(PG_EPOCH_CE_DAYS).ok_or(range.clone())?;
    let d = NaiveDate::from_num_days_from_ce_opt(ce).ok_or(range)?;
    Ok(d.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(kind: ColumnKind, raw: &[u8]) -> Result<String, ValueError> {
        let mut out = Vec::new();
        write_value(&kind, Some(raw), &mut out).map(|()| String::from_utf8(out).unwrap())
    }

    #[test]
    fn values_render_as_json() {
        assert_eq!(
            render(ColumnKind::Int8, &(-5i64).to_be_bytes()).unwrap(),
            "-5"
        );
        assert_eq!(render(ColumnKind::Int2, &7i16.to_be_bytes()).unwrap(), "7");
        assert_eq!(
            render(ColumnKind::Float4, &0.1f32.to_be_bytes()).unwrap(),
            "0.1"
        );
        assert!(render(ColumnKind::Float8, &f64::NAN.to_be_bytes()).is_err());
        assert_eq!(
            render(ColumnKind::Numeric, b"-12.3400").unwrap(),
            "-12.3400"
        );
        assert!(render(ColumnKind::Numeric, b"NaN").is_err());
        assert!(render(ColumnKind::Numeric, b"-Infinity").is_err());
        assert_eq!(render(ColumnKind::Bytea, &[0, 255, 1]).unwrap(), "\"AP8B\"");
        assert_eq!(
            render(ColumnKind::Text, "a\"\n".as_bytes()).unwrap(),
            "\"a\\\"\\n\""
        );
        assert!(render(ColumnKind::Text, &[0xff]).is_err());
        assert_eq!(render(ColumnKind::Bool, &[1]).unwrap(), "true");
        assert_eq!(
            render(ColumnKind::Json, b"{\"a\":\n [1,\r\n2]}").unwrap(),
            "{\"a\":  [1,  2]}"
        );
        assert_eq!(
            render(ColumnKind::TimestampTz, &0i64.to_be_bytes()).unwrap(),
            "\"2000-01-01T00:00:00Z\""
        );
        assert_eq!(
            render(ColumnKind::Timestamp, &1_500_000i64.to_be_bytes()).unwrap(),
            "\"2000-01-01T00:00:01.500Z\""
        );
        assert!(render(ColumnKind::Timestamp, &i64::MAX.to_be_bytes()).is_err());
        assert_eq!(
            render(ColumnKind::Date, &(-1i32).to_be_bytes()).unwrap(),
            "\"1999-12-31\""
        );
        let mut u = [0u8; 16];
        u[0] = 0x01;
        u[15] = 0xab;
        assert_eq!(
            render(ColumnKind::Uuid, &u).unwrap(),
            "\"01000000-0000-0000-0000-0000000000ab\""
        );
        // Short input is an error, never a panic.
        assert!(render(ColumnKind::Int8, &[1, 2]).is_err());
        assert!(render(ColumnKind::Uuid, &[1]).is_err());
        let mut out = Vec::new();
        write_value(&ColumnKind::Int4, None, &mut out).unwrap();
        assert_eq!(out, b"null");
        assert_eq!(key_text(&ColumnKind::Text, Some(b"01HX")).unwrap(), "01HX");
        assert_eq!(
            key_text(&ColumnKind::Int8, Some(&42i64.to_be_bytes())).unwrap(),
            "42"
        );
        assert!(key_text(&ColumnKind::Int8, None).is_err());
    }
}
