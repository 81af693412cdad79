//! Slots: the key range cut into pieces that workers lease one at a time. Slot `i` holds
//! the keys `k` with `after < k <= until` (a missing bound is open), so consecutive slots
//! share a bound and every key is in exactly one slot whatever the bounds are. Limits
//! from `--from`/`--until` (`from <= k < until`) apply on top, to every slot.
//!
//! - By time (`time:1h`): for keys that carry their time — ULID text (48-bit milliseconds in
//!   the first ten characters), UUIDv7 (`uuid` or its text), timestamps and dates — slot
//!   bounds are the keys of whole multiples of the width since the Unix epoch, so the
//!   slot of an hour holds that hour's rows.
//! - By quantiles (`--slots N`): any key; bounds are N−1 quantiles of a sample of keys.

use chrono::{DateTime, NaiveDate, Utc};

use crate::schema::ColumnKind;

/// How to cut the key range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRule {
    /// Slots of this many milliseconds of key time.
    Time { width_ms: i64 },
    /// About this many slots of equal row counts.
    Count(u32),
}

/// Why a `time:WIDTH` slot rule does not parse; names the input and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?}: {expected}")]
pub struct SlotRuleError {
    pub input: String,
    pub expected: &'static str,
}

/// Why a `--from`/`--until` value is not a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected an RFC 3339 time (2024-05-01T00:00:00Z) or a date (2024-05-01)")]
pub struct TimeError(pub String);

/// Why time slots cannot be cut over a key column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeKeyError {
    #[error("the table is empty: cannot tell how its text keys encode time; give --from and --until, or use --slots")]
    EmptyTable,
    #[error("key {0:?} is neither a ULID nor a UUIDv7: time slots need those or timestamp keys (use --slots N)")]
    NotTimeOrdered(String),
    #[error("time slots need ULID, UUIDv7, timestamp or date keys, not {0} (use --slots N)")]
    KeyType(String),
}

/// Most slots one plan may have.
pub const MAX_SLOTS: u64 = 1_000_000;

impl SlotRule {
    /// Parses `time:WIDTH` with WIDTH a positive number followed by `s`, `m`, `h` or `d`
    /// (`time:1h`, `time:15m`, `time:1d`).
    pub fn parse_time(s: &str) -> Result<SlotRule, SlotRuleError> {
        let bad = |expected| SlotRuleError {
            input: s.to_string(),
            expected,
        };
        let spec = s
            .strip_prefix("time:")
            .ok_or_else(|| bad("expected time:WIDTH such as time:1h"))?;
        // The unit is the last character, whatever its width (`time:1é` is refused, not cut
        // inside a character).
        let Some(unit_char) = spec.chars().next_back() else {
            return Err(bad("expected time:WIDTH such as time:1h"));
        };
        let num = &spec[..spec.len() - unit_char.len_utf8()];
        let unit = &spec[spec.len() - unit_char.len_utf8()..];
        if num.is_empty() || num.len() > 4 || !num.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(
                "expected a whole number of 1–3650 before the unit (time:1h)",
            ));
        }
        let n: i64 = num
            .parse()
            .map_err(|_| bad("expected a whole number before the unit (time:1h)"))?;
        let unit_ms = match unit {
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad("the unit must be s, m, h or d")),
        };
        if !(1..=3650).contains(&n) {
            return Err(bad("the width must be 1–3650 units"));
        }
        Ok(SlotRule::Time {
            width_ms: n * unit_ms,
        })
    }
}

/// One slot's bounds (key texts).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Slot {
    /// Keys strictly after this one (`None`: from the start).
    pub after: Option<String>,
    /// Keys up to and including this one (`None`: to the end).
    pub until: Option<String>,
}

/// `--from`/`--until` as key texts: `from <= k < until`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bounds {
    pub from: Option<String>,
    pub until: Option<String>,
}

/// How a time-ordered key encodes its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeKey {
    /// 26-character Crockford base32 text; milliseconds in the first 10 characters.
    Ulid,
    /// A UUIDv7 (a `uuid` column, or its 36-character text); milliseconds in the first 48 bits.
    UuidV7,
    /// timestamp / timestamptz (microseconds).
    Timestamp,
    /// date (days).
    Date,
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

impl TimeKey {
    /// The encoding of a key column, given one of its keys (for text keys).
    pub fn detect(kind: &ColumnKind, sample: Option<&str>) -> Result<TimeKey, TimeKeyError> {
        match kind {
            ColumnKind::Timestamp | ColumnKind::TimestampTz => Ok(TimeKey::Timestamp),
            ColumnKind::Date => Ok(TimeKey::Date),
            ColumnKind::Uuid => Ok(TimeKey::UuidV7),
            ColumnKind::Text => {
                let Some(k) = sample else {
                    return Err(TimeKeyError::EmptyTable);
                };
                if ulid_ms(k).is_some() {
                    Ok(TimeKey::Ulid)
                } else if uuid_ms(k).is_some() {
                    Ok(TimeKey::UuidV7)
                } else {
                    Err(TimeKeyError::NotTimeOrdered(k.to_string()))
                }
            }
            other => Err(TimeKeyError::KeyType(format!("{other:?}"))),
        }
    }

    /// The time of a key, in Unix milliseconds.
    pub fn time_of(self, key: &str) -> Option<i64> {
        match self {
            TimeKey::Ulid => ulid_ms(key),
            TimeKey::UuidV7 => uuid_ms(key),
            TimeKey::Timestamp => DateTime::parse_from_rfc3339(key)
                .ok()
                .map(|t| t.timestamp_millis()),
            TimeKey::Date => NaiveDate::parse_from_str(key, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc().timestamp_millis()),
        }
    }

    /// The smallest key at Unix millisecond `ms` (or later): `k >= lowest(ms)` holds the
    /// keys from `ms` on.
    /// ULIDs and UUIDv7s hold no time before 1970 (their lowest key is the epoch's);
    /// timestamps and dates go back as far as the calendar does.
    pub fn lowest(self, ms: i64) -> String {
        match self {
            TimeKey::Ulid => {
                let ms = ms.max(0);
                let mut s = String::with_capacity(26);
                for i in (0..10).rev() {
                    s.push(CROCKFORD[((ms >> (5 * i)) & 31) as usize] as char);
                }
                s.push_str("0000000000000000");
                s
            }
            TimeKey::UuidV7 => {
                let h = format!("{:012x}", ms.max(0) & 0xffff_ffff_ffff);
                format!("{}-{}-0000-0000-000000000000", &h[..8], &h[8..])
            }
            TimeKey::Timestamp => rfc3339_ms(ms, 0),
            TimeKey::Date => date_of_ms(ms),
        }
    }

    /// A slot bound at `ms`: the greatest key before it where the encoding allows
    /// (timestamps: one microsecond before; dates: the day before), otherwise the lowest
    /// key at `ms` (a key equal to it, with all random bits zero, lands one slot early).
    pub fn bound(self, ms: i64) -> String {
        match self {
            TimeKey::Ulid | TimeKey::UuidV7 => self.lowest(ms),
            TimeKey::Timestamp => rfc3339_ms(ms, -1),
            TimeKey::Date => date_of_ms(ms - 86_400_000),
        }
    }
}

fn rfc3339_ms(ms: i64, plus_micros: i64) -> String {
    crate::value::format_unix_micros(ms.saturating_mul(1000).saturating_add(plus_micros))
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".into())
}

fn date_of_ms(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "1970-01-01".into())
}

/// The milliseconds of a ULID.
pub fn ulid_ms(key: &str) -> Option<i64> {
    let b = key.as_bytes();
    if b.len() != 26 || b[0] > b'7' {
        return None;
    }
    let mut ms: i64 = 0;
    for (i, &c) in b.iter().enumerate() {
        let c = c.to_ascii_uppercase();
        let v = CROCKFORD.iter().position(|&x| x == c)? as i64;
        if i < 10 {
            ms = (ms << 5) | v;
        }
    }
    Some(ms)
}

/// The milliseconds of a UUIDv7 in its text form.
pub fn uuid_ms(key: &str) -> Option<i64> {
    let b = key.as_bytes();
    if b.len() != 36 || b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    if b[14] != b'7' {
        return None;
    }
    let hex: String = key[..8].chars().chain(key[9..13].chars()).collect();
    i64::from_str_radix(&hex, 16).ok()
}

/// More time slots than a table is cut into would be needed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{needed} slots of {width_s} s would be needed; at most {MAX_SLOTS} (use a wider time:WIDTH)"
)]
pub struct TooManySlots {
    pub needed: u64,
    pub width_s: i64,
}

/// Time slots covering `[lo_ms, hi_ms]`: bounds at every multiple of `width_ms` inside;
/// the first slot is open below, the last open above.
pub fn time_slots(
    key: TimeKey,
    width_ms: i64,
    lo_ms: i64,
    hi_ms: i64,
) -> Result<Vec<Slot>, TooManySlots> {
    let width = width_ms.max(1);
    let first = lo_ms
        .div_euclid(width)
        .saturating_add(1)
        .saturating_mul(width);
    let n = if hi_ms < first {
        0
    } else {
        ((hi_ms - first) / width) as u64 + 1
    };
    if n + 1 > MAX_SLOTS {
        return Err(TooManySlots {
            needed: n + 1,
            width_s: width / 1000,
        });
    }
    let bounds: Vec<String> = (0..n)
        .map(|i| key.bound(first + i as i64 * width))
        .collect();
    Ok(slots_between(bounds))
}

/// Slots between sorted, distinct bounds: `(None, b0], (b0, b1], …, (bn, None)`.
pub fn slots_between(bounds: Vec<String>) -> Vec<Slot> {
    let mut slots = Vec::with_capacity(bounds.len() + 1);
    let mut after = None;
    for b in bounds {
        slots.push(Slot {
            after: after.clone(),
            until: Some(b.clone()),
        });
        after = Some(b);
    }
    slots.push(Slot { after, until: None });
    slots
}

/// N−1 bounds from a sorted sample of keys (duplicates dropped).
pub fn quantile_bounds(sample: &[String], n: u32) -> Vec<String> {
    let mut bounds: Vec<String> = Vec::new();
    if sample.is_empty() || n <= 1 {
        return bounds;
    }
    for i in 1..n as usize {
        let at = i * sample.len() / n as usize;
        if let Some(k) = sample.get(at.min(sample.len() - 1)) {
            if bounds.last() != Some(k) {
                bounds.push(k.clone());
            }
        }
    }
    bounds
}

/// A `--from`/`--until` value as Unix milliseconds: RFC 3339 (`2024-05-01T00:00:00Z`) or a
/// date (`2024-05-01`, midnight UTC).
pub fn parse_time(s: &str) -> Result<i64, TimeError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
        .ok_or_else(|| TimeError(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_ranges() {
        assert_eq!(
            SlotRule::parse_time("time:1h").unwrap(),
            SlotRule::Time {
                width_ms: 3_600_000
            }
        );
        assert_eq!(
            SlotRule::parse_time("time:15m").unwrap(),
            SlotRule::Time { width_ms: 900_000 }
        );
        for bad in [
            "1h",
            "time:",
            "time:0h",
            "time:1y",
            "time:-1h",
            "time:h",
            "time:9999d",
            "time:1é",
            "time:é",
            "time:+1h",
            "time:１h",
            "time:99999999999999999999h",
        ] {
            assert!(SlotRule::parse_time(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// No input panics; whatever parses is in range and prints back the same width.
        #[test]
        fn any_slot_rule_text_parses_or_is_refused(s in "\\PC{0,12}", tail in "\\PC{0,3}") {
            for text in [s.clone(), format!("time:{s}"), format!("time:{s}{tail}")] {
                if let Ok(SlotRule::Time { width_ms }) = SlotRule::parse_time(&text) {
                    proptest::prop_assert!((1_000..=3650 * 86_400_000).contains(&width_ms));
                }
            }
        }
    }

    #[test]
    fn time_keys_round_trip() {
        let ms = 1_714_564_800_123; // 2024-05-01T12:00:00.123Z
        let u = TimeKey::Ulid.lowest(ms);
        assert_eq!(u.len(), 26);
        assert_eq!(ulid_ms(&u), Some(ms));
        assert_eq!(
            TimeKey::Ulid.time_of("01HWR5Q8ZV7W2X3Y4Z5A6B7C8D"),
            ulid_ms("01HWR5Q8ZV7W2X3Y4Z5A6B7C8D")
        );
        assert!(ulid_ms("not-a-ulid").is_none());
        assert!(ulid_ms("8ZZZZZZZZZZZZZZZZZZZZZZZZZ").is_none());
        let v = TimeKey::UuidV7.lowest(ms);
        assert_eq!(v, "018f3406-9e7b-0000-0000-000000000000");
        assert_eq!(uuid_ms("018f3406-9e7b-7000-8000-000000000000"), Some(ms));
        assert!(uuid_ms(&v).is_none(), "version 0 is not a v7");
        assert_eq!(TimeKey::Timestamp.lowest(ms), "2024-05-01T12:00:00.123Z");
        assert_eq!(
            TimeKey::Timestamp.bound(ms - 123),
            "2024-05-01T11:59:59.999999Z"
        );
        assert_eq!(TimeKey::Date.bound(1_714_521_600_000), "2024-04-30");
        assert_eq!(
            TimeKey::Timestamp.time_of("2024-05-01T12:00:00.123Z"),
            Some(ms)
        );
        assert_eq!(parse_time("2024-05-01").unwrap(), 1_714_521_600_000);
        // Before 1970: timestamps and dates keep their time, ULIDs and UUIDv7s start at 0.
        let sixties = parse_time("1960-01-01").unwrap();
        assert!(sixties < 0);
        assert_eq!(TimeKey::Timestamp.lowest(sixties), "1960-01-01T00:00:00Z");
        assert_eq!(TimeKey::Date.lowest(sixties), "1960-01-01");
        assert_eq!(TimeKey::Date.bound(sixties), "1959-12-31");
        assert_eq!(TimeKey::Ulid.lowest(sixties), "00000000000000000000000000");
        assert_eq!(
            TimeKey::UuidV7.lowest(sixties),
            "00000000-0000-0000-0000-000000000000"
        );
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn slots_partition_the_range() {
        let h = 3_600_000;
        let slots = time_slots(TimeKey::Timestamp, h, 10 * h + 5, 12 * h + 1).unwrap();
        // bounds at 11h and 12h: three slots
        assert_eq!(slots.len(), 3);
        assert_eq!(slots[0].after, None);
        assert_eq!(slots[0].until, slots[1].after);
        assert_eq!(slots[2].until, None);
        assert_eq!(
            slots[1].until.as_deref(),
            Some("1970-01-01T11:59:59.999999Z")
        );
        assert_eq!(time_slots(TimeKey::Timestamp, h, 5, 5).unwrap().len(), 1);
        assert!(time_slots(TimeKey::Timestamp, 1000, 0, 2_000_000_000).is_err());
        let sample: Vec<String> = (0..100).map(|i| format!("{i:03}")).collect();
        let b = quantile_bounds(&sample, 4);
        assert_eq!(b, vec!["025", "050", "075"]);
        assert_eq!(slots_between(b).len(), 4);
        assert!(quantile_bounds(&[], 4).is_empty());
        assert_eq!(quantile_bounds(&sample[..2], 10), vec!["000", "001"]);
    }
}
