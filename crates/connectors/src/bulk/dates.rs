//! Date values as epoch milliseconds, parsed the way the mapping's `format` reads them:
//! its `||` alternatives tried in order, the first that parses wins (a number is read as
//! its text, so `2024` is a year for `strict_date_optional_time||epoch_millis`). Only the
//! formats whose reading is known exactly are understood: `strict_date_optional_time`
//! (the default, with `epoch_millis`), `date_optional_time`,
//! `strict_date_optional_time_nanos`, `epoch_millis` and `epoch_second`. A `date` field
//! keeps milliseconds: finer fractions are cut off.

use serde_json::Value;

/// One alternative of a date mapping's `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateFormat {
    /// `yyyy[-MM[-dd[THH[:mm[:ss[.fraction]]][offset]]]]`; strict: fixed digit counts.
    OptionalTime {
        strict: bool,
    },
    EpochMillis,
    EpochSecond,
}

/// A date format (one alternative of a mapping's `format`) this comparison does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("date format {0} not understood")]
pub struct UnknownFormat(pub String);

/// The alternatives of a mapping's `format` (absent: the default); `Err` names the first
/// one not understood.
pub fn formats(format: Option<&str>) -> Result<Vec<DateFormat>, UnknownFormat> {
    let text = format.unwrap_or("strict_date_optional_time||epoch_millis");
    text.split("||")
        .map(|f| match f.trim() {
            "strict_date_optional_time" | "strict_date_optional_time_nanos" => {
                Ok(DateFormat::OptionalTime { strict: true })
            }
            "date_optional_time" => Ok(DateFormat::OptionalTime { strict: false }),
            "epoch_millis" => Ok(DateFormat::EpochMillis),
            "epoch_second" => Ok(DateFormat::EpochSecond),
            other => Err(UnknownFormat(other.to_string())),
        })
        .collect()
}

/// `v` (a string or a number of a document) in epoch milliseconds, by the first of
/// `formats` that reads it; `None` when none does.
pub fn to_millis(v: &Value, formats: &[DateFormat]) -> Option<i64> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    formats.iter().find_map(|f| match f {
        DateFormat::OptionalTime { strict } => optional_time(&text, *strict),
        DateFormat::EpochMillis => epoch(&text, 1),
        DateFormat::EpochSecond => epoch(&text, 1000),
    })
}

/// A target's `format: epoch_millis` answer (a string of digits, or a number).
pub fn answered_millis(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| epoch(&n.to_string(), 1)),
        Value::String(s) => epoch(s, 1),
        _ => None,
    }
}

/// `[-]digits[.digits]` times `unit` milliseconds, the fraction cut to milliseconds.
fn epoch(text: &str, unit: i64) -> Option<i64> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, f),
        None => (body, ""),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(frac.is_empty() || digits(frac)) {
        return None;
    }
    // milliseconds of the fraction (of one unit): cut, not rounded
    let mut frac_ms = 0i64;
    if unit == 1000 {
        let f: String = frac.chars().chain("000".chars()).take(3).collect();
        frac_ms = f.parse().ok()?;
    }
    let has_fraction = frac.bytes().any(|b| b != b'0');
    if neg && has_fraction {
        // where a negative fraction lands is not settled: claim nothing
        return None;
    }
    let w: i64 = whole.parse().ok()?;
    let ms = w.checked_mul(unit)?.checked_add(frac_ms)?;
    Some(if neg { -ms } else { ms })
}

/// Reads `n` digits (strict) or 1–2 (lenient, `n` 2) at the front of `s`.
fn number(s: &mut &str, n: usize, strict: bool) -> Option<i64> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let take = if strict || n != 2 {
        if len < n {
            return None;
        }
        n
    } else {
        len.min(2)
    };
    if take == 0 {
        return None;
    }
    let v = s[..take].parse().ok()?;
    *s = &s[take..];
    Some(v)
}

fn optional_time(text: &str, strict: bool) -> Option<i64> {
    let mut s = text;
    if s.len() > 4 && s.bytes().all(|b| b.is_ascii_digit()) {
        // a longer run of digits is no four-digit year
        return None;
    }
    let year = number(&mut s, 4, true)?;
    let (mut month, mut day) = (1, 1);
    let (mut hour, mut minute, mut second, mut milli) = (0, 0, 0, 0);
    let mut offset_min = 0i64;
    if let Some(rest) = s.strip_prefix('-') {
        s = rest;
        month = number(&mut s, 2, strict)?;
        if let Some(rest) = s.strip_prefix('-') {
            s = rest;
            day = number(&mut s, 2, strict)?;
            if let Some(rest) = s.strip_prefix('T') {
                s = rest;
                hour = number(&mut s, 2, strict)?;
                if let Some(rest) = s.strip_prefix(':') {
                    s = rest;
                    minute = number(&mut s, 2, strict)?;
                    if let Some(rest) = s.strip_prefix(':') {
                        s = rest;
                        second = number(&mut s, 2, strict)?;
                        if let Some(rest) = s.strip_prefix(['.', ',']) {
                            let len = rest.bytes().take_while(u8::is_ascii_digit).count();
                            if !(1..=9).contains(&len) {
                                return None;
                            }
                            let f: String =
                                rest[..len].chars().chain("000".chars()).take(3).collect();
                            milli = f.parse().ok()?;
                            s = &rest[len..];
                        }
                    }
                }
                if let Some(rest) = s.strip_prefix('Z') {
                    s = rest;
                } else if let Some(sign) = s.chars().next().filter(|c| *c == '+' || *c == '-') {
                    s = &s[1..];
                    let h = number(&mut s, 2, true)?;
                    let mut m = 0;
                    if let Some(rest) = s.strip_prefix(':') {
                        s = rest;
                        m = number(&mut s, 2, true)?;
                    } else if !s.is_empty() {
                        m = number(&mut s, 2, true)?;
                    }
                    if h > 18 || m > 59 {
                        return None;
                    }
                    offset_min = (h * 60 + m) * if sign == '-' { -1 } else { 1 };
                }
            }
        }
    }
    if !s.is_empty()
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(
        days * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + milli
            - offset_min * 60_000,
    )
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d`.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_read_by_the_mapping_format() {
        let default = formats(None).unwrap();
        let ms = |v: Value| to_millis(&v, &default);
        assert_eq!(ms(json!("1970-01-01T00:00:00.000Z")), Some(0));
        assert_eq!(
            ms(json!("2021-03-04T05:06:07.890Z")),
            Some(1_614_834_367_890)
        );
        assert_eq!(
            ms(json!("2021-03-04T05:06:07.890+01:00")),
            Some(1_614_830_767_890)
        );
        assert_eq!(
            ms(json!("2021-03-04T05:06:07,8901234-0130")),
            Some(1_614_839_767_890)
        );
        assert_eq!(ms(json!("2021-03-04")), Some(1_614_816_000_000));
        assert_eq!(ms(json!("2021-03")), Some(1_614_556_800_000));
        assert_eq!(ms(json!("1969-12-31T23:59:59.999Z")), Some(-1));
        assert_eq!(ms(json!("2024-02-29T12:00Z")), Some(1_709_208_000_000));
        // a number's text: a year first, else epoch milliseconds
        assert_eq!(ms(json!(2024)), Some(1_704_067_200_000));
        assert_eq!(ms(json!(1_614_834_367_890_i64)), Some(1_614_834_367_890));
        assert_eq!(ms(json!("1614834367890")), Some(1_614_834_367_890));
        assert_eq!(ms(json!(-5)), Some(-5));
        assert_eq!(ms(json!("2021-02-29")), None);
        assert_eq!(ms(json!("2021-3-4")), None);
        assert_eq!(ms(json!("yesterday")), None);
        let lenient = formats(Some("date_optional_time")).unwrap();
        assert_eq!(
            to_millis(&json!("2021-3-4T5:06"), &lenient),
            Some(1_614_834_360_000)
        );
        let seconds = formats(Some("epoch_second")).unwrap();
        assert_eq!(
            to_millis(&json!(1_614_834_367.5), &seconds),
            Some(1_614_834_367_500)
        );
        assert_eq!(to_millis(&json!("12"), &seconds), Some(12_000));
        assert_eq!(
            formats(Some("yyyy/MM/dd||epoch_millis")),
            Err(UnknownFormat("yyyy/MM/dd".into()))
        );
        assert_eq!(
            answered_millis(&json!("1614830767890")),
            Some(1_614_830_767_890)
        );
        assert_eq!(answered_millis(&json!(-1)), Some(-1));
    }
}
