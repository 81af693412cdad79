//! `docvalue_fields` in `_search`: the values a field's doc values hold, taken from the
//! stored document and the index mapping, in the order Lucene returns them — `keyword`
//! sorted and distinct (sorted-set doc values), whole-number types, `boolean`, `float`
//! (the 32-bit value widened to a double), `double` and `date` sorted with repeated values
//! kept (sorted-numeric), `ip` distinct in the order of their 16-byte form with IPv6
//! compressed and v4-mapped addresses as IPv4. A date is answered in the mapping's first
//! format, or as `epoch_millis` text when the entry asks `"format": "epoch_millis"`;
//! dates mapped with a format other than the default or `epoch_millis`, other `format`s,
//! other field types and patterns are refused with a 400 naming the testkit server rather
//! than answered in a form the real servers would not use. Fields the mapping does not
//! hold return nothing, as on the real servers.

use serde_json::{Map, Value};

use super::error::EsError;

fn unsupported(what: String) -> EsError {
    EsError::new(
        400,
        "illegal_argument_exception",
        format!("{what} (not supported by the testkit server)"),
    )
}

/// One `docvalue_fields` entry.
#[derive(Debug, Clone)]
pub(crate) struct Requested {
    name: String,
    /// Only `epoch_millis`, for dates.
    epoch_millis: bool,
}

/// The entries of a `docvalue_fields` list (names, or `{"field": NAME}` with an optional
/// `"format": "epoch_millis"`).
pub(crate) fn requested(v: Option<&Value>) -> Result<Vec<Requested>, EsError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let Some(list) = v.as_array() else {
        return Err(EsError::parse("[docvalue_fields] must be an array"));
    };
    let mut out = Vec::new();
    for f in list {
        let (name, epoch_millis) = match f {
            Value::String(s) => (s.as_str(), false),
            Value::Object(o) => {
                if o.keys().any(|k| k != "field" && k != "format") {
                    return Err(unsupported(format!(
                        "docvalue_fields entry {f}: only [field] and [format] are understood"
                    )));
                }
                let format = match o.get("format") {
                    None => false,
                    Some(v) if v == "epoch_millis" => true,
                    Some(other) => {
                        return Err(unsupported(format!(
                            "docvalue_fields format {other}: only epoch_millis is understood"
                        )))
                    }
                };
                let name = o
                    .get("field")
                    .and_then(Value::as_str)
                    .ok_or_else(|| EsError::parse(format!("docvalue_fields entry {f}")))?;
                (name, format)
            }
            other => return Err(EsError::parse(format!("docvalue_fields entry {other}"))),
        };
        if name.contains('*') {
            return Err(unsupported(format!("docvalue_fields pattern [{name}]")));
        }
        out.push(Requested {
            name: name.to_string(),
            epoch_millis,
        });
    }
    Ok(out)
}

/// The mapping of the field at dotted `path` (through `properties`), if mapped.
fn field_mapping<'a>(
    mappings: &'a Value,
    type_name: Option<&str>,
    path: &str,
) -> Option<&'a Value> {
    let mut node = match type_name {
        Some(t) => mappings.get(t).unwrap_or(mappings),
        None => mappings,
    };
    for seg in path.split('.') {
        node = node.get("properties")?.get(seg)?;
    }
    Some(node)
}

/// The values at dotted `path` of `source`, arrays flattened at every level.
fn collect<'a>(v: &'a Value, segs: &[&str], out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| collect(x, segs, out)),
        Value::Null if segs.is_empty() => {}
        _ if segs.is_empty() => out.push(v),
        Value::Object(o) => {
            // `a.b` may be written as nested objects or as one dotted key
            for k in 1..=segs.len() {
                if let Some(x) = o.get(&segs[..k].join(".")) {
                    collect(x, &segs[k..], out);
                }
            }
        }
        _ => {}
    }
}

/// The `fields` of one hit: each requested field's doc values, omitted when empty.
pub(crate) fn hit_fields(
    asked: &[Requested],
    mappings: &Value,
    type_name: Option<&str>,
    source: &Value,
) -> Result<Map<String, Value>, EsError> {
    let mut out = Map::new();
    for Requested { name, epoch_millis } in asked {
        let Some(m) = field_mapping(mappings, type_name, name) else {
            continue;
        };
        let ty = m.get("type").and_then(Value::as_str).unwrap_or("object");
        if m.get("doc_values").and_then(Value::as_bool) == Some(false) {
            return Err(EsError::new(
                400,
                "illegal_argument_exception",
                format!("Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{ty}]. Use doc values instead."),
            ));
        }
        let mut raw = Vec::new();
        collect(source, &name.split('.').collect::<Vec<_>>(), &mut raw);
        let values: Vec<Value> = match ty {
            "keyword" => {
                if m.get("normalizer").is_some() {
                    return Err(unsupported(format!(
                        "doc values of the normalized keyword [{name}]"
                    )));
                }
                let above = m.get("ignore_above").and_then(Value::as_u64);
                let mut v: Vec<String> = raw
                    .iter()
                    .map(|x| match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .filter(|s| above.is_none_or(|n| s.chars().count() as u64 <= n))
                    .collect();
                v.sort();
                v.dedup();
                v.into_iter().map(Value::String).collect()
            }
            "long" | "integer" | "short" | "byte" => {
                let mut v: Vec<i64> = raw
                    .iter()
                    .filter_map(|x| match x {
                        Value::Number(n) => {
                            n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64))
                        }
                        Value::String(s) => s.parse::<f64>().ok().map(|f| f.trunc() as i64),
                        _ => None,
                    })
                    .collect();
                v.sort();
                v.into_iter().map(Value::from).collect()
            }
            "boolean" => {
                let mut v: Vec<bool> = raw
                    .iter()
                    .filter_map(|x| match x {
                        Value::Bool(b) => Some(*b),
                        Value::String(s) if s == "true" => Some(true),
                        Value::String(s) if s == "false" || s.is_empty() => Some(false),
                        _ => None,
                    })
                    .collect();
                v.sort();
                v.into_iter().map(Value::Bool).collect()
            }
            "float" | "double" => {
                let mut v: Vec<f64> = raw
                    .iter()
                    .filter_map(|x| match x {
                        Value::Number(n) => n.as_f64(),
                        Value::String(s) => s.trim().parse::<f64>().ok(),
                        _ => None,
                    })
                    .map(|d| if ty == "float" { d as f32 as f64 } else { d })
                    .collect();
                v.sort_by(f64::total_cmp);
                v.into_iter().map(Value::from).collect()
            }
            "ip" => {
                let mut v: Vec<std::net::IpAddr> = Vec::new();
                for x in &raw {
                    let ip = x
                        .as_str()
                        .and_then(|s| s.parse::<std::net::IpAddr>().ok())
                        .ok_or_else(|| {
                            EsError::parse(format!("'{x}' is not an IP string literal."))
                        })?;
                    v.push(ip.to_canonical());
                }
                let bytes = |ip: &std::net::IpAddr| match ip {
                    std::net::IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
                    std::net::IpAddr::V6(a) => a.octets(),
                };
                v.sort_by_key(bytes);
                v.dedup();
                v.into_iter()
                    .map(|ip| Value::String(ip.to_string()))
                    .collect()
            }
            "date" => {
                let format = m
                    .get("format")
                    .and_then(Value::as_str)
                    .unwrap_or("strict_date_optional_time||epoch_millis");
                let iso_first = match format {
                    "strict_date_optional_time||epoch_millis" | "strict_date_optional_time" => true,
                    "epoch_millis" => false,
                    other => {
                        return Err(unsupported(format!(
                            "doc values of the date [{name}] with format [{other}]"
                        )))
                    }
                };
                let mut v = Vec::new();
                for x in &raw {
                    v.push(
                        date_millis(x, iso_first)
                            .ok_or_else(|| unsupported(format!("date value {x} of [{name}]")))?,
                    );
                }
                v.sort();
                v.into_iter()
                    .map(|ms| {
                        Value::String(if *epoch_millis || !iso_first {
                            ms.to_string()
                        } else {
                            iso_millis(ms)
                        })
                    })
                    .collect()
            }
            other => {
                return Err(unsupported(format!(
                    "doc values of [{name}], a field of type [{other}]"
                )))
            }
        };
        if !values.is_empty() {
            out.insert(name.clone(), Value::Array(values));
        }
    }
    Ok(out)
}

/// A date of a document in epoch milliseconds: `yyyy-MM-dd` with an optional
/// `THH:mm[:ss[.fraction]]` and `Z` or `±HH:mm` (`iso`), else whole epoch milliseconds.
fn date_millis(v: &Value, iso: bool) -> Option<i64> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_i64()?.to_string(),
        _ => return None,
    };
    let digits = |s: &str| -> Option<i64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if !iso
        || (text.len() != 4
            && text
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit()))
    {
        return match text.strip_prefix('-') {
            Some(rest) => digits(rest).map(|n| -n),
            None => digits(&text),
        };
    }
    let (date, time) = text.split_once('T').unwrap_or((&text, ""));
    let mut ymd = date.split('-');
    let y = digits(ymd.next()?)?;
    let mo = ymd.next().map_or(Some(1), digits)?;
    let d = ymd.next().map_or(Some(1), digits)?;
    if ymd.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let (clock, offset_ms) = if time.is_empty() {
        ("", 0)
    } else if let Some(c) = time.strip_suffix('Z') {
        (c, 0)
    } else if let Some(at) = time.rfind(['+', '-']) {
        let (c, off) = time.split_at(at);
        let (h, m) = off[1..].split_once(':').unwrap_or((&off[1..], "0"));
        let ms = (digits(h)? * 60 + digits(m)?) * 60_000;
        (c, if off.starts_with('-') { -ms } else { ms })
    } else {
        (time, 0)
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    // a date alone is midnight
    let mut parts = hms.split(':').take(if hms.is_empty() { 0 } else { 3 });
    let mut next = || parts.next().map_or(Some(0), digits);
    let (h, mi, s) = (next()?, next()?, next()?);
    let frac_ms = if frac.is_empty() {
        0
    } else if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    } else {
        digits(&format!("{frac:0<3}")[..3])?
    };
    // days since 1970-01-01 of the proleptic Gregorian calendar
    let (yy, mm) = if mo <= 2 { (y - 1, mo + 12) } else { (y, mo) };
    let days = 365 * yy + yy.div_euclid(4) - yy.div_euclid(100)
        + yy.div_euclid(400)
        + (153 * (mm - 3) + 2) / 5
        + d
        - 719_469;
    Some(days * 86_400_000 + ((h * 60 + mi) * 60 + s) * 1000 + frac_ms - offset_ms)
}

/// `ms` as `strict_date_optional_time` prints it: `yyyy-MM-ddTHH:mm:ss.SSSZ`.
fn iso_millis(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // civil date of a day count (proleptic Gregorian)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_as_opensearch_answers_them() {
        assert_eq!(date_millis(&json!("1970-01-01T00:00:00Z"), true), Some(0));
        assert_eq!(
            date_millis(&json!("2021-03-04T05:06:07.890+01:00"), true),
            Some(1_614_830_767_890)
        );
        assert_eq!(
            date_millis(&json!("2024-02-29"), true),
            Some(1_709_164_800_000)
        );
        assert_eq!(
            date_millis(&json!(1_614_830_767_890_i64), true),
            Some(1_614_830_767_890)
        );
        assert_eq!(iso_millis(1_614_830_767_890), "2021-03-04T04:06:07.890Z");
        assert_eq!(iso_millis(-1), "1969-12-31T23:59:59.999Z");
    }
}
