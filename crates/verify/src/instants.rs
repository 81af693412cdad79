//! Timestamps compared as instants: a table's `timestamp`/`timestamptz` column is one
//! instant however it is written (`2024-05-01T02:00:00+02:00` is
//! `2024-05-01T00:00:00Z`; `…:00.500Z` is `…:00.5Z`), so where both sides of such a
//! column hold a timestamp text, verify compares the instants (to the nanosecond) instead
//! of the texts. Any other text stays a string compared exactly.

use std::collections::BTreeSet;

use super::exact::Exact;

/// Nanoseconds since 1970-01-01T00:00:00Z of an ISO 8601 / RFC 3339 timestamp
/// (`YYYY-MM-DD[T ]HH:MM[:SS[.fraction]][Z|±HH[:MM]]`; without an offset, UTC: both sides
/// are the same column); `None` when the text is not one.
pub fn nanos(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    let mut i = 0;
    let num = |n: usize, i: &mut usize| -> Option<i64> {
        let s = b.get(*i..*i + n)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *i += n;
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    let expect = |c: u8, i: &mut usize| -> Option<()> { (b.get(*i) == Some(&c)).then(|| *i += 1) };
    let y = num(4, &mut i)?;
    expect(b'-', &mut i)?;
    let mo = num(2, &mut i)?;
    expect(b'-', &mut i)?;
    let d = num(2, &mut i)?;
    if !matches!(b.get(i), Some(b'T' | b't' | b' ')) {
        return None;
    }
    i += 1;
    let h = num(2, &mut i)?;
    expect(b':', &mut i)?;
    let mi = num(2, &mut i)?;
    let mut s = 0;
    let mut frac: i128 = 0;
    if b.get(i) == Some(&b':') {
        i += 1;
        s = num(2, &mut i)?;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let digits = &text[start..i];
            if digits.is_empty() {
                return None;
            }
            // Nanoseconds: beyond 9 digits must be zeros (else not one instant of ours).
            let (ns, rest) = digits.split_at(digits.len().min(9));
            if !rest.bytes().all(|c| c == b'0') {
                return None;
            }
            frac = format!("{ns:0<9}").parse().ok()?;
        }
    }
    let offset_min: i64 = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            i += 1;
            let oh = num(2, &mut i)?;
            if b.get(i) == Some(&b':') {
                i += 1;
            }
            let om = if i < b.len() { num(2, &mut i)? } else { 0 };
            let m = oh * 60 + om;
            if sign == b'-' {
                -m
            } else {
                m
            }
        }
        Some(_) => return None,
    };
    if i != b.len() || !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    if h > 24 || mi > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    Some(i128::from(secs) * 1_000_000_000 + frac)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 (proleptic Gregorian; Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The text of a timestamp member: a string, or DynamoDB's wire form `{"S": "…"}`.
fn text_of(v: &Exact) -> Option<&str> {
    match v {
        Exact::String(s) => Some(s),
        Exact::Object(o) if o.len() == 1 => match o.get("S") {
            Some(Exact::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// For each of `fields` (top-level members holding a timestamp column) where both
/// `expected` and `held` hold a timestamp text, the held text is replaced by the
/// expected one when both are the same instant, so the exact comparison that follows
/// finds them equal; any other value is left as it is (and compared exactly).
pub fn align(fields: &BTreeSet<String>, expected: &Exact, held: &mut Exact) {
    let (Exact::Object(e), Exact::Object(h)) = (expected, held) else {
        return;
    };
    for field in fields {
        let (Some(ev), Some(hv)) = (e.get(field), h.get_mut(field)) else {
            continue;
        };
        let same = match (text_of(ev).and_then(nanos), text_of(hv).and_then(nanos)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
        if same {
            *hv = ev.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_instant_written_otherwise_is_equal_and_one_nanosecond_is_not() {
        let z = nanos("2024-05-01T00:00:00Z").unwrap();
        for same in [
            "2024-05-01T02:00:00+02:00",
            "2024-04-30T20:00:00-0400",
            "2024-05-01 00:00:00.000000",
            "2024-05-01T00:00:00.000000000000Z",
            "2024-05-01T00:00Z",
        ] {
            assert_eq!(nanos(same), Some(z), "{same}");
        }
        assert_eq!(nanos("2024-05-01T00:00:00.000000001Z"), Some(z + 1));
        assert_eq!(nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(nanos("1969-12-31T23:59:59.5Z"), Some(-500_000_000));
        for not in [
            "2024-02-30T00:00:00Z",
            "2024-05-01",
            "yesterday",
            "2024-05-01T00:00:00.0000000001Z",
            "2024-05-01T00:00:00Zz",
        ] {
            assert_eq!(nanos(not), None, "{not}");
        }
    }

    #[test]
    fn align_rewrites_only_equal_instants_of_the_named_fields() {
        let fields = BTreeSet::from(["at".to_string(), "dyn".to_string()]);
        let e = Exact::parse(
            br#"{"at":"2024-05-01T00:00:00Z","dyn":{"S":"2024-05-01T00:00:00Z"},"other":"2024-05-01T00:00:00Z"}"#,
        )
        .unwrap();
        let mut h = Exact::parse(
            br#"{"at":"2024-05-01T02:00:00+02:00","dyn":{"S":"2024-05-01T00:00:00.000Z"},"other":"2024-05-01T02:00:00+02:00"}"#,
        )
        .unwrap();
        align(&fields, &e, &mut h);
        assert_eq!(
            super::super::exact::difference(&e, &h).as_deref(),
            Some(
                r#"field other: source "2024-05-01T00:00:00Z", target "2024-05-01T02:00:00+02:00""#
            )
        );
        let mut h2 = Exact::parse(
            br#"{"at":"2024-05-01T00:00:01Z","dyn":{"S":"x"},"other":"2024-05-01T00:00:00Z"}"#,
        )
        .unwrap();
        align(&fields, &e, &mut h2);
        assert!(
            super::super::exact::difference(&e, &h2).is_some_and(|d| d.starts_with("field at:"))
        );
    }
}
