//! The query subset the server evaluates: `match_all`, `match_none`, `term`, `terms`, `range`,
//! `exists`, `ids`, `prefix`, `match` (whitespace tokens, any-of), and `bool` with
//! `must`/`filter`/`should`/`must_not`/`minimum_should_match`; plus `sort`.

use std::cmp::Ordering;

use serde_json::Value;

use super::error::EsError;

/// A parsed query.
#[derive(Debug, Clone)]
pub(crate) enum Query {
    All,
    None,
    Term(String, Value),
    Terms(String, Vec<Value>),
    Range {
        field: String,
        gt: Option<Value>,
        gte: Option<Value>,
        lt: Option<Value>,
        lte: Option<Value>,
    },
    Exists(String),
    Ids(Vec<String>),
    Prefix(String, String),
    Match(String, String),
    Bool {
        must: Vec<Query>,
        should: Vec<Query>,
        must_not: Vec<Query>,
        minimum_should_match: Option<String>,
    },
}

fn one_field<'a>(q: &'a Value, kind: &str) -> Result<(&'a String, &'a Value), EsError> {
    match q.as_object() {
        Some(m) if m.len() == 1 => Ok(m.iter().next().expect("one entry")),
        _ => Err(EsError::parse(format!(
            "[{kind}] query must name exactly one field"
        ))),
    }
}

fn clauses(v: Option<&Value>) -> Result<Vec<Query>, EsError> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(Query::parse).collect(),
        Some(other) => Ok(vec![Query::parse(other)?]),
    }
}

impl Query {
    /// Parses a `query` object.
    pub fn parse(v: &Value) -> Result<Query, EsError> {
        let Some(m) = v.as_object() else {
            return Err(EsError::parse("query must be an object"));
        };
        if m.len() != 1 {
            return Err(EsError::parse(
                "query malformed, must start with a single query name",
            ));
        }
        let (kind, body) = m.iter().next().expect("one entry");
        match kind.as_str() {
            "match_all" => Ok(Query::All),
            "match_none" => Ok(Query::None),
            "term" => {
                let (f, v) = one_field(body, kind)?;
                let value = match v {
                    Value::Object(o) => o
                        .get("value")
                        .cloned()
                        .ok_or_else(|| EsError::parse("[term] query without value"))?,
                    other => other.clone(),
                };
                Ok(Query::Term(f.clone(), value))
            }
            "terms" => {
                let m = body
                    .as_object()
                    .ok_or_else(|| EsError::parse("[terms] query malformed"))?;
                let mut fields = m.iter().filter(|(k, _)| k.as_str() != "boost");
                match (fields.next(), fields.next()) {
                    (Some((f, Value::Array(vals))), None) => {
                        Ok(Query::Terms(f.clone(), vals.clone()))
                    }
                    _ => Err(EsError::parse(
                        "[terms] query requires one field with an array of values",
                    )),
                }
            }
            "range" => {
                let (f, r) = one_field(body, kind)?;
                let get = |k: &str| r.get(k).filter(|v| !v.is_null()).cloned();
                let mut q = Query::Range {
                    field: f.clone(),
                    gt: get("gt"),
                    gte: get("gte"),
                    lt: get("lt"),
                    lte: get("lte"),
                };
                // the older from/to/include_lower/include_upper form
                if let Query::Range {
                    gt, gte, lt, lte, ..
                } = &mut q
                {
                    let incl_lo = r
                        .get("include_lower")
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    let incl_hi = r
                        .get("include_upper")
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    if let Some(from) = get("from") {
                        *(if incl_lo { gte } else { gt }) = Some(from);
                    }
                    if let Some(to) = get("to") {
                        *(if incl_hi { lte } else { lt }) = Some(to);
                    }
                }
                Ok(q)
            }
            "exists" => body
                .get("field")
                .and_then(Value::as_str)
                .map(|f| Query::Exists(f.to_string()))
                .ok_or_else(|| EsError::parse("[exists] query requires a field")),
            "ids" => {
                let vals = body
                    .get("values")
                    .and_then(Value::as_array)
                    .ok_or_else(|| EsError::parse("[ids] query requires values"))?;
                Ok(Query::Ids(
                    vals.iter()
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect(),
                ))
            }
            "prefix" => {
                let (f, v) = one_field(body, kind)?;
                let p = match v {
                    Value::Object(o) => o.get("value").and_then(Value::as_str),
                    other => other.as_str(),
                }
                .ok_or_else(|| EsError::parse("[prefix] query requires a string value"))?;
                Ok(Query::Prefix(f.clone(), p.to_string()))
            }
            "match" => {
                let (f, v) = one_field(body, kind)?;
                let text = match v {
                    Value::Object(o) => o.get("query").cloned().unwrap_or(Value::Null),
                    other => other.clone(),
                };
                let text = match text {
                    Value::String(s) => s,
                    Value::Null => return Err(EsError::parse("[match] query without query")),
                    other => other.to_string(),
                };
                Ok(Query::Match(f.clone(), text))
            }
            "bool" => {
                let mut must = clauses(body.get("must"))?;
                must.extend(clauses(body.get("filter"))?);
                let msm = match body.get("minimum_should_match") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(other) => Some(other.to_string()),
                };
                Ok(Query::Bool {
                    must,
                    should: clauses(body.get("should"))?,
                    must_not: clauses(body.get("must_not"))?,
                    minimum_should_match: msm,
                })
            }
            other => Err(EsError::parse(format!("unknown query [{other}]"))
                .with("testkit", "query type not supported by the test server")),
        }
    }

    /// Whether a document (`_id` and parsed `_source`) matches.
    pub fn matches(&self, id: &str, source: &Value) -> bool {
        match self {
            Query::All => true,
            Query::None => false,
            Query::Term(f, v) => values(id, source, f).iter().any(|x| same(x, v)),
            Query::Terms(f, vs) => values(id, source, f)
                .iter()
                .any(|x| vs.iter().any(|v| same(x, v))),
            Query::Range {
                field,
                gt,
                gte,
                lt,
                lte,
            } => values(id, source, field).iter().any(|x| {
                let ok = |b: &Option<Value>, want: &[Ordering]| {
                    b.as_ref()
                        .is_none_or(|b| compare(x, b).is_some_and(|o| want.contains(&o)))
                };
                ok(gt, &[Ordering::Greater])
                    && ok(gte, &[Ordering::Greater, Ordering::Equal])
                    && ok(lt, &[Ordering::Less])
                    && ok(lte, &[Ordering::Less, Ordering::Equal])
            }),
            Query::Exists(f) => !values(id, source, f).is_empty(),
            Query::Ids(ids) => ids.iter().any(|i| i == id),
            Query::Prefix(f, p) => values(id, source, f)
                .iter()
                .any(|x| x.as_str().is_some_and(|s| s.starts_with(p.as_str()))),
            Query::Match(f, text) => {
                let wanted: Vec<String> = tokens(text);
                values(id, source, f).iter().any(|x| {
                    let have = match x {
                        Value::String(s) => tokens(s),
                        other => vec![other.to_string()],
                    };
                    wanted.iter().any(|w| have.contains(w))
                })
            }
            Query::Bool {
                must,
                should,
                must_not,
                minimum_should_match,
            } => {
                if !must.iter().all(|q| q.matches(id, source)) {
                    return false;
                }
                if must_not.iter().any(|q| q.matches(id, source)) {
                    return false;
                }
                let needed = min_should(
                    minimum_should_match.as_deref(),
                    should.len(),
                    must.is_empty(),
                );
                let hits = should.iter().filter(|q| q.matches(id, source)).count();
                hits >= needed
            }
        }
    }
}

fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn min_should(spec: Option<&str>, n: usize, no_must: bool) -> usize {
    let Some(spec) = spec else {
        return usize::from(no_must && n > 0);
    };
    let spec = spec.trim();
    let count = if let Some(pct) = spec.strip_suffix('%') {
        // beyond ±100 % means all clauses (and must not overflow below)
        let p: i64 = pct.trim().parse::<i64>().unwrap_or(0).clamp(-100, 100);
        let k = (n as i64 * p.abs()) / 100;
        if p < 0 {
            n as i64 - k
        } else {
            k
        }
    } else {
        let k: i64 = spec.parse().unwrap_or(0);
        if k < 0 {
            n as i64 + k
        } else {
            k
        }
    };
    count.clamp(0, n as i64) as usize
}

/// The values a field path holds (`_id` is the document id; arrays are flattened).
pub(crate) fn values(id: &str, source: &Value, field: &str) -> Vec<Value> {
    if field == "_id" {
        return vec![Value::String(id.to_string())];
    }
    let mut out = Vec::new();
    collect(source, field, &mut out);
    out
}

fn collect(v: &Value, path: &str, out: &mut Vec<Value>) {
    match v {
        Value::Array(a) => {
            for x in a {
                collect(x, path, out);
            }
        }
        Value::Object(m) => {
            if let Some(x) = m.get(path) {
                push_leaf(x, out);
            }
            // a dotted path may also walk into objects: a.b.c → m["a"]["b.c"] …
            for (i, _) in path.match_indices('.') {
                if let Some(x) = m.get(&path[..i]) {
                    collect(x, &path[i + 1..], out);
                }
            }
        }
        _ => {}
    }
}

fn push_leaf(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Null => {}
        Value::Array(a) => {
            for x in a {
                push_leaf(x, out);
            }
        }
        other => out.push(other.clone()),
    }
}

/// Equality as a `term` query sees it: numbers numerically, a string against the text of a
/// number or boolean.
fn same(a: &Value, b: &Value) -> bool {
    compare(a, b) == Some(Ordering::Equal)
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Ordering between a stored value and a query value; `None` when not comparable.
pub(crate) fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return Some(x.cmp(&y));
            }
            x.as_f64()?.partial_cmp(&y.as_f64()?)
        }
        (Value::Number(_), Value::String(_)) | (Value::String(_), Value::Number(_)) => {
            as_f64(a)?.partial_cmp(&as_f64(b)?)
        }
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::String(s)) | (Value::String(s), Value::Bool(x)) => {
            (s == if *x { "true" } else { "false" }).then_some(Ordering::Equal)
        }
        _ => None,
    }
}

/// One `sort` key.
#[derive(Debug, Clone)]
pub(crate) struct SortKey {
    pub field: String,
    pub descending: bool,
}

/// Parses `sort` in its accepted forms: `"f"`, `{"f":"desc"}`, `{"f":{"order":"desc"}}`, or a list.
pub(crate) fn parse_sort(v: &Value) -> Result<Vec<SortKey>, EsError> {
    let items: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    let mut keys = Vec::new();
    for item in items {
        match item {
            Value::String(s) => {
                let (field, desc) = match s.split_once(':') {
                    Some((f, o)) => (f.to_string(), o == "desc"),
                    None => (s.clone(), s == "_score"),
                };
                keys.push(SortKey {
                    field,
                    descending: desc,
                });
            }
            Value::Object(m) if m.len() == 1 => {
                let (f, spec) = m.iter().next().expect("one entry");
                let order = match spec {
                    Value::String(o) => Some(o.as_str()),
                    Value::Object(o) => o.get("order").and_then(Value::as_str),
                    _ => None,
                };
                let descending = match order {
                    Some("desc") => true,
                    Some("asc") => false,
                    None => f == "_score",
                    Some(other) => {
                        return Err(EsError::parse(format!("unknown sort order [{other}]")))
                    }
                };
                keys.push(SortKey {
                    field: f.clone(),
                    descending,
                });
            }
            _ => return Err(EsError::parse("malformed sort")),
        }
    }
    Ok(keys)
}

/// The sort value of one document for one key (first value of the field; `None` if missing).
pub(crate) fn sort_value(id: &str, source: &Value, key: &SortKey, seq: i64) -> Option<Value> {
    match key.field.as_str() {
        "_doc" | "_shard_doc" => Some(Value::from(seq)),
        "_score" => Some(Value::from(1.0)),
        f => {
            let vals = values(id, source, f);
            if key.descending {
                vals.into_iter().max_by(sort_cmp)
            } else {
                vals.into_iter().min_by(sort_cmp)
            }
        }
    }
}

/// A total order over JSON values, for sorting (a comparison that is not total can make the
/// standard sort panic): booleans, then numbers, then strings, then anything else by its JSON
/// text. Numbers compare by value, integers exactly; a string is never read as a number here.
pub(crate) fn sort_cmp(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
        }
    }
    fn exact(n: &serde_json::Number) -> Option<i128> {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (fx, fy) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            fx.total_cmp(&fy).then_with(|| exact(x).cmp(&exact(y)))
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => rank(a)
            .cmp(&rank(b))
            .then_with(|| a.to_string().cmp(&b.to_string())),
    }
}

/// Orders two documents' sort values (a total order, see [`sort_cmp`]); missing values sort
/// last in both directions.
pub(crate) fn order(a: &[Option<Value>], b: &[Option<Value>], keys: &[SortKey]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => {
                let o = sort_cmp(x, y);
                if k.descending {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(v: Value) -> Query {
        Query::parse(&v).unwrap()
    }

    #[test]
    fn bool_with_range_exists_and_should() {
        let doc = json!({"status": "open", "n": 5, "lease": {"expiry": 100}, "tags": ["a", "b"]});
        assert!(q(json!({"term": {"status": "open"}})).matches("1", &doc));
        assert!(q(json!({"term": {"tags": "b"}})).matches("1", &doc));
        assert!(q(json!({"term": {"n": "5"}})).matches("1", &doc));
        assert!(q(json!({"range": {"lease.expiry": {"lt": 101, "gte": 100}}})).matches("1", &doc));
        assert!(!q(json!({"range": {"lease.expiry": {"gt": 100}}})).matches("1", &doc));
        assert!(!q(json!({"exists": {"field": "missing"}})).matches("1", &doc));
        let b = json!({"bool": {"filter": [{"exists": {"field": "n"}}],
            "must_not": {"term": {"status": "closed"}},
            "should": [{"term": {"n": 1}}, {"term": {"n": 5}}], "minimum_should_match": 1}});
        assert!(q(b).matches("1", &doc));
        let b = json!({"bool": {"should": [{"term": {"n": 1}}, {"term": {"n": 2}}]}});
        assert!(!q(b).matches("1", &doc));
        assert!(q(json!({"ids": {"values": ["1", "2"]}})).matches("1", &doc));
        assert!(Query::parse(&json!({"script": {}})).is_err());
    }

    #[test]
    fn sorting_puts_missing_last() {
        let keys = parse_sort(&json!([{"n": {"order": "desc"}}])).unwrap();
        let a = vec![Some(json!(1))];
        let b = vec![None];
        let c = vec![Some(json!(3))];
        assert_eq!(order(&a, &b, &keys), Ordering::Less);
        assert_eq!(order(&c, &a, &keys), Ordering::Less);
    }

    #[test]
    fn sort_order_is_total_over_mixed_values() {
        let vals = [
            json!("10"),
            json!(9),
            json!("9"),
            json!(9.5),
            json!(true),
            json!(9007199254740993i64),
            json!(9007199254740992.0),
            json!(9007199254740992i64),
            json!(u64::MAX),
            json!(-1),
            json!("abc"),
            json!({"a": 1}),
            json!([1]),
            json!(null),
        ];
        // antisymmetric and transitive on every triple
        for a in &vals {
            assert_eq!(sort_cmp(a, a), Ordering::Equal);
            for b in &vals {
                assert_eq!(sort_cmp(a, b), sort_cmp(b, a).reverse(), "{a} {b}");
                for c in &vals {
                    if sort_cmp(a, b) != Ordering::Greater && sort_cmp(b, c) != Ordering::Greater {
                        assert_ne!(sort_cmp(a, c), Ordering::Greater, "{a} {b} {c}");
                    }
                }
            }
        }
        let mut sorted = vals.to_vec();
        sorted.sort_by(sort_cmp);
        assert_eq!(
            sorted,
            vec![
                json!(null),
                json!(true),
                json!(-1),
                json!(9),
                json!(9.5),
                json!(9007199254740992.0),
                json!(9007199254740992i64),
                json!(9007199254740993i64),
                json!(u64::MAX),
                json!("10"),
                json!("9"),
                json!("abc"),
                json!([1]),
                json!({"a": 1}),
            ]
        );
        // percentages past 100 % (or any i64) do not overflow
        assert_eq!(min_should(Some("-9223372036854775808%"), 3, true), 0);
        assert_eq!(min_should(Some("9223372036854775807%"), 3, true), 3);
        assert_eq!(min_should(Some("-9223372036854775808"), 3, true), 0);
    }
}
