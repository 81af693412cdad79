//! Rebuilding `_source` for documents that have none (`_source.enabled: false`, or
//! Elasticsearch's synthetic source), from the index mapping, doc values and stored
//! fields — as Elasticsearch's synthetic source does. What comes out differs from what
//! was indexed in the ways `docs/sourceless.md` lists (arrays sorted, keyword arrays
//! without duplicates, one-element arrays as scalars, geo points quantized, …).
//!
//! [`SourcePlan::from_mapping`] decides, per mapped field, where its values come from;
//! fields with no doc values and no stored value cannot be rebuilt and are listed, so
//! `inspect` and `metadata evaluate` can report them before anything runs.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Number, Value};

/// How one mapped field is stored in Lucene, and so how its value is rebuilt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Encoding {
    /// SORTED_SET terms as UTF-8 strings (keyword, and text rebuilt from a keyword sub-field).
    Keyword,
    /// SORTED_NUMERIC longs (long, integer, short, byte).
    Long,
    /// SORTED_NUMERIC sortable doubles.
    Double,
    /// SORTED_NUMERIC sortable float bits.
    Float,
    /// SORTED_NUMERIC sortable half-float bits.
    HalfFloat,
    /// SORTED_NUMERIC `round(value × factor)`.
    ScaledFloat { factor: f64 },
    /// SORTED_NUMERIC with the sign bit flipped.
    UnsignedLong,
    /// SORTED_NUMERIC milliseconds (or nanoseconds) since the epoch.
    Date {
        nanos: bool,
        epoch: Option<EpochFormat>,
    },
    /// SORTED_NUMERIC 0 / 1.
    Boolean,
    /// SORTED_SET of 16-byte addresses (IPv4 mapped into IPv6).
    Ip,
    /// SORTED_NUMERIC latitude and longitude, 32 bits each.
    GeoPoint,
    /// A stored field (text or keyword with `store: true`), in stored order.
    Stored,
}

/// A date mapping whose first format is a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EpochFormat {
    Millis,
    Second,
}

/// One field of the rebuilt `_source`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedField {
    /// The JSON path (`user.name`).
    pub path: String,
    /// The Lucene field its values come from (`user.name`, `body.raw`).
    pub lucene_field: String,
    pub encoding: Encoding,
}

/// A mapped field whose value cannot be rebuilt, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LostField {
    pub path: String,
    pub reason: String,
}

/// Where every field of a rebuilt `_source` comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SourcePlan {
    pub fields: Vec<PlannedField>,
    pub lost: Vec<LostField>,
}

impl SourcePlan {
    /// The plan for a type-less mapping body (`{"properties": …}`).
    pub fn from_mapping(mapping: &Value) -> SourcePlan {
        let mut plan = SourcePlan::default();
        if let Some(props) = mapping.get("properties").and_then(Value::as_object) {
            walk(props, "", &mut plan);
        }
        plan
    }

    /// The Lucene fields read from doc values.
    pub fn doc_values_fields(&self) -> impl Iterator<Item = &PlannedField> {
        self.fields
            .iter()
            .filter(|f| f.encoding != Encoding::Stored)
    }

    /// Whether `name` is a stored field the plan reads.
    pub fn reads_stored(&self, name: &str) -> bool {
        self.fields
            .iter()
            .any(|f| f.encoding == Encoding::Stored && f.lucene_field == name)
    }

    /// For a stored field Elasticsearch's synthetic source keeps beside the doc values of
    /// a planned field (`<field>._original`: keyword values above `ignore_above`;
    /// `<field>._ignore_malformed`: values `ignore_malformed` did not index), the JSON
    /// path its values are added to, and which of the two it is.
    pub fn fallback_path(&self, stored_name: &str) -> Option<(&str, Fallback)> {
        let (base, kind) = if let Some(b) = stored_name.strip_suffix("._original") {
            (b, Fallback::Original)
        } else {
            (
                stored_name.strip_suffix("._ignore_malformed")?,
                Fallback::IgnoreMalformed,
            )
        };
        self.fields
            .iter()
            .find(|f| f.encoding != Encoding::Stored && f.lucene_field == base)
            .map(|f| (f.path.as_str(), kind))
    }
}

/// A stored field kept beside a field's doc values for synthetic source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// `<field>._original`: a keyword value longer than `ignore_above`, as UTF-8 bytes.
    Original,
    /// `<field>._ignore_malformed`: a value the field could not parse; strings and
    /// numbers as Lucene's own stored types, anything else typed as in `_ignored_source`.
    IgnoreMalformed,
}

/// The JSON value of one stored value of a [`Fallback`] field (`None`: nothing to add).
pub fn fallback_value(
    kind: Fallback,
    value: lucene::StoredValue<'_>,
) -> Result<Option<Value>, crate::ignored_source::ValueError> {
    use lucene::StoredValue as S;
    Ok(Some(match (kind, value) {
        (Fallback::Original, S::Binary(b)) => Value::String(
            std::str::from_utf8(b)
                .map_err(crate::ignored_source::ValueError::NotUtf8)?
                .to_string(),
        ),
        (_, S::String(s)) => Value::String(s.to_string()),
        (Fallback::IgnoreMalformed, S::Binary(b)) => {
            return crate::ignored_source::decode_value(b);
        }
        (_, S::Int(i)) => Value::from(i),
        (_, S::Long(l)) => Value::from(l),
        (_, S::Float(f)) => crate::ignored_source::float(f),
        (_, S::Double(d)) => crate::ignored_source::double(d),
    }))
}

fn flag(v: &Value, key: &str, default: bool) -> bool {
    match v.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => default,
    }
}

fn walk(props: &Map<String, Value>, prefix: &str, plan: &mut SourcePlan) {
    for (name, def) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let ty = def.get("type").and_then(Value::as_str);
        let lost = |plan: &mut SourcePlan, reason: String| {
            plan.lost.push(LostField {
                path: path.clone(),
                reason,
            })
        };
        match ty {
            None | Some("object") => {
                if !flag(def, "enabled", true) {
                    lost(
                        plan,
                        "object with enabled: false (never indexed; Elasticsearch 8.15+ synthetic source keeps it in _ignored_source)"
                            .into(),
                    );
                } else if let Some(p) = def.get("properties").and_then(Value::as_object) {
                    walk(p, &path, plan);
                }
            }
            Some("nested") => lost(
                plan,
                "nested objects are separate Lucene documents; not rebuilt".into(),
            ),
            Some(t) => {
                let doc_values = flag(def, "doc_values", true);
                let stored = flag(def, "store", false);
                let dv = |enc: Encoding| PlannedField {
                    path: path.clone(),
                    lucene_field: path.clone(),
                    encoding: enc,
                };
                // Elasticsearch 1.x/2.x `string`: not analyzed it is a keyword, else text.
                let string_keyword = t == "string"
                    && def.get("index").and_then(Value::as_str) == Some("not_analyzed");
                let encoding = match t {
                    "keyword" | "constant_keyword" | "wildcard" => Some(Encoding::Keyword),
                    "string" if string_keyword => Some(Encoding::Keyword),
                    "long" | "integer" | "short" | "byte" => Some(Encoding::Long),
                    "double" => Some(Encoding::Double),
                    "float" => Some(Encoding::Float),
                    "half_float" => Some(Encoding::HalfFloat),
                    "scaled_float" => def
                        .get("scaling_factor")
                        .and_then(|f| f.as_f64().or_else(|| f.as_str()?.parse().ok()))
                        .filter(|f| *f > 0.0 && f.is_finite())
                        .map(|factor| Encoding::ScaledFloat { factor }),
                    "unsigned_long" => Some(Encoding::UnsignedLong),
                    "date" | "date_nanos" => Some(Encoding::Date {
                        nanos: t == "date_nanos",
                        epoch: epoch_format(def),
                    }),
                    "boolean" => Some(Encoding::Boolean),
                    "ip" => Some(Encoding::Ip),
                    "geo_point" => Some(Encoding::GeoPoint),
                    _ => None,
                };
                let text_like =
                    matches!(t, "text" | "match_only_text") || (t == "string" && !string_keyword);
                if (t == "keyword" || string_keyword) && stored && !doc_values {
                    plan.fields.push(dv(Encoding::Stored));
                } else if let (Some(enc), true) = (encoding.clone(), doc_values) {
                    plan.fields.push(dv(enc));
                } else if text_like && stored {
                    plan.fields.push(dv(Encoding::Stored));
                } else if let Some(sub) = text_like.then(|| keyword_subfield(def)).flatten() {
                    plan.fields.push(PlannedField {
                        path: path.clone(),
                        lucene_field: format!("{path}.{sub}"),
                        encoding: Encoding::Keyword,
                    });
                } else if text_like {
                    lost(
                        plan,
                        "text without store: true or a keyword sub-field with doc values".into(),
                    );
                } else if encoding.is_some() {
                    lost(plan, format!("{t} with doc_values: false"));
                } else {
                    lost(plan, format!("type {t} is not rebuilt"));
                }
            }
        }
    }
}

/// A keyword sub-field with doc values and no `ignore_above` (which would drop long values).
fn keyword_subfield(def: &Value) -> Option<String> {
    def.get("fields")?.as_object()?.iter().find_map(|(n, d)| {
        (d.get("type").and_then(Value::as_str) == Some("keyword")
            && flag(d, "doc_values", true)
            && d.get("ignore_above").is_none()
            && d.get("normalizer").is_none())
        .then(|| n.clone())
    })
}

fn epoch_format(def: &Value) -> Option<EpochFormat> {
    let first = def.get("format")?.as_str()?.split("||").next()?.trim();
    match first {
        "epoch_millis" => Some(EpochFormat::Millis),
        "epoch_second" => Some(EpochFormat::Second),
        _ => None,
    }
}

/// The JSON value of one Lucene value of a field.
pub fn decode_number(encoding: &Encoding, v: i64) -> Option<Value> {
    Some(match encoding {
        Encoding::Long => Value::from(v),
        Encoding::Double => float(f64::from_bits(sortable_to_bits(v) as u64))?,
        Encoding::Float => {
            let bits = sortable_to_bits32(v as i32) as u32;
            float32(f32::from_bits(bits))?
        }
        Encoding::HalfFloat => float32(half_to_f32(sortable_to_bits16(v as i16) as u16))?,
        Encoding::ScaledFloat { factor } => float(v as f64 / factor)?,
        Encoding::UnsignedLong => Value::from((v as u64) ^ (1u64 << 63)),
        Encoding::Date { nanos, epoch } => match epoch {
            Some(EpochFormat::Millis) => Value::from(if *nanos { v / 1_000_000 } else { v }),
            Some(EpochFormat::Second) => {
                Value::from(if *nanos { v / 1_000_000_000 } else { v / 1000 })
            }
            None => Value::String(format_date(v, *nanos)),
        },
        Encoding::Boolean => Value::Bool(v != 0),
        Encoding::GeoPoint => {
            let lat = f64::from((v >> 32) as i32) * (90.0 / f64::from(1u32 << 31));
            let lon = f64::from(v as i32) * (180.0 / f64::from(1u32 << 31));
            let mut m = Map::new();
            m.insert("lat".into(), float(lat)?);
            m.insert("lon".into(), float(lon)?);
            Value::Object(m)
        }
        Encoding::Keyword | Encoding::Ip | Encoding::Stored => return None,
    })
}

/// The JSON value of one term of a SORTED_SET field.
pub fn decode_term(encoding: &Encoding, b: &[u8]) -> Option<Value> {
    match encoding {
        Encoding::Keyword => Some(Value::String(String::from_utf8_lossy(b).into_owned())),
        Encoding::Ip => Some(Value::String(format_ip(b)?)),
        _ => None,
    }
}

fn float(f: f64) -> Option<Value> {
    Number::from_f64(f).map(Value::Number)
}

/// A float printed with the fewest digits that read back as the same float.
fn float32(f: f32) -> Option<Value> {
    if !f.is_finite() {
        return None;
    }
    let text = format!("{f}");
    let v: f64 = text.parse().ok()?;
    float(v)
}

/// Lucene's sortable long back to double bits.
fn sortable_to_bits(v: i64) -> i64 {
    v ^ ((v >> 63) & 0x7fff_ffff_ffff_ffff)
}

fn sortable_to_bits32(v: i32) -> i32 {
    v ^ ((v >> 31) & 0x7fff_ffff)
}

fn sortable_to_bits16(v: i16) -> i16 {
    v ^ ((v >> 15) & 0x7fff)
}

fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let mant = f32::from(h & 0x3ff);
    sign * match exp {
        0 => mant * 2f32.powi(-24),
        31 => {
            if mant == 0.0 {
                f32::INFINITY
            } else {
                f32::NAN
            }
        }
        e => (1.0 + mant / 1024.0) * 2f32.powi(e - 15),
    }
}

/// `yyyy-MM-ddTHH:mm:ss.SSSZ` (or nine fraction digits for nanoseconds), UTC.
pub fn format_date(v: i64, nanos: bool) -> String {
    let per_sec: i64 = if nanos { 1_000_000_000 } else { 1000 };
    let secs = v.div_euclid(per_sec);
    let frac = v.rem_euclid(per_sec);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let time = format!("{:02}:{:02}:{:02}", sod / 3600, (sod / 60) % 60, sod % 60);
    if nanos {
        format!("{y:04}-{m:02}-{d:02}T{time}.{frac:09}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{time}.{frac:03}Z")
    }
}

/// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// An address from its 16-byte form: IPv4-mapped addresses as dotted quads.
pub fn format_ip(b: &[u8]) -> Option<String> {
    let a: [u8; 16] = b.try_into().ok()?;
    let v6 = std::net::Ipv6Addr::from(a);
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => v6.to_string(),
    })
}

/// Collected values of one document, by JSON path, in plan order.
#[derive(Debug, Default)]
pub struct RebuiltFields {
    values: BTreeMap<String, Vec<Value>>,
    order: Vec<String>,
}

impl RebuiltFields {
    pub fn clear(&mut self) {
        self.values.clear();
        self.order.clear();
    }

    pub fn push(&mut self, path: &str, v: Value) {
        match self.values.get_mut(path) {
            Some(list) => list.push(v),
            None => {
                self.order.push(path.to_string());
                self.values.insert(path.to_string(), vec![v]);
            }
        }
    }

    /// The `_source` object: dotted paths become nested objects, one value is a scalar,
    /// several an array.
    pub fn to_json(&self) -> Value {
        let mut root = Map::new();
        for path in &self.order {
            let vals = &self.values[path];
            let value = if vals.len() == 1 {
                vals[0].clone()
            } else {
                Value::Array(vals.clone())
            };
            insert_path(&mut root, path, value);
        }
        Value::Object(root)
    }
}

fn insert_path(root: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut cur = root;
    while let Some(p) = parts.next() {
        if parts.peek().is_none() {
            cur.insert(p.to_string(), value);
            return;
        }
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        cur = entry.as_object_mut().expect("just made an object");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plan_follows_the_mapping() {
        let m = json!({"properties": {
            "k": {"type": "keyword"},
            "t": {"type": "text", "store": true},
            "b": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            "n": {"type": "text"},
            "u": {"properties": {"age": {"type": "integer"}}},
            "nest": {"type": "nested"},
            "off": {"type": "long", "doc_values": false},
            "s": {"type": "scaled_float", "scaling_factor": 100}
        }});
        let p = SourcePlan::from_mapping(&m);
        let by = |path: &str| p.fields.iter().find(|f| f.path == path).cloned();
        assert_eq!(by("k").unwrap().encoding, Encoding::Keyword);
        assert_eq!(by("t").unwrap().encoding, Encoding::Stored);
        assert_eq!(by("b").unwrap().lucene_field, "b.raw");
        assert_eq!(by("u.age").unwrap().encoding, Encoding::Long);
        assert_eq!(
            by("s").unwrap().encoding,
            Encoding::ScaledFloat { factor: 100.0 }
        );
        let lost: Vec<_> = p.lost.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(lost, vec!["n", "nest", "off"]);
    }

    #[test]
    fn values_decode_as_elasticsearch_encodes_them() {
        assert_eq!(format_date(0, false), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_date(1_614_834_367_890, false),
            "2021-03-04T05:06:07.890Z"
        );
        assert_eq!(format_date(-1, false), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            format_date(1_000_000_001, true),
            "1970-01-01T00:00:01.000000001Z"
        );
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        v4[12..].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(format_ip(&v4).unwrap(), "10.0.0.1");
        assert_eq!(
            decode_number(&Encoding::UnsignedLong, i64::MAX).unwrap(),
            json!(u64::MAX)
        );
        assert_eq!(decode_number(&Encoding::Boolean, 1).unwrap(), json!(true));
        // 1.5 as a half float: 0x3E00, sortable form unchanged for positive values
        assert_eq!(
            decode_number(&Encoding::HalfFloat, 0x3E00).unwrap(),
            json!(1.5)
        );
        let sortable = |d: f64| {
            let b = d.to_bits() as i64;
            b ^ ((b >> 63) & 0x7fff_ffff_ffff_ffff)
        };
        assert_eq!(
            decode_number(&Encoding::Double, sortable(-2.25)).unwrap(),
            json!(-2.25)
        );
    }

    #[test]
    fn dotted_paths_nest() {
        let mut r = RebuiltFields::default();
        r.push("user.name", json!("a"));
        r.push("user.age", json!(3));
        r.push("tag", json!("x"));
        r.push("tag", json!("y"));
        assert_eq!(
            r.to_json(),
            json!({"user": {"name": "a", "age": 3}, "tag": ["x", "y"]})
        );
    }
}
