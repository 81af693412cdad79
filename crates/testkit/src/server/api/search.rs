//! `_search`, `_count`, `_refresh`.

#[allow(unused_imports)]
use super::*;

pub(super) const SEARCH_KEYS: &[&str] = &[
    "query",
    "size",
    "from",
    "sort",
    "seq_no_primary_term",
    "track_total_hits",
    "_source",
    "version",
    "timeout",
    "search_after",
    "stored_fields",
    "track_scores",
    "explain",
];

pub(super) struct Hit<'a> {
    index: &'a str,
    id: &'a str,
    doc: &'a crate::server::state::Doc,
    source: Value,
    sort: Vec<Option<Value>>,
}

pub(super) fn shards_header() -> Value {
    json!({"total": 1, "successful": 1, "skipped": 0, "failed": 0})
}

pub(super) fn matching<'a>(
    st: &'a State,
    targets: &'a [String],
    q: &Query,
    keys: &[SortKey],
) -> Vec<Hit<'a>> {
    let mut hits = Vec::new();
    for name in targets {
        let Some(index) = st.indices.get(name) else {
            continue;
        };
        for (id, doc) in &index.docs {
            let source = source_value(&doc.source);
            if q.matches(id, &source) {
                let sort = keys
                    .iter()
                    .map(|k| query::sort_value(id, &source, k, doc.seq_no))
                    .collect();
                hits.push(Hit {
                    index: name,
                    id,
                    doc,
                    source,
                    sort,
                });
            }
        }
    }
    hits
}

/// Concrete indices of `idx` whose mapping type is in the comma-separated `types` (`_all` or
/// none: every index).
pub(super) fn search_targets(
    c: &Ctx<'_>,
    st: &State,
    idx: &str,
    types: Option<&str>,
) -> Result<Vec<String>, EsError> {
    let mut targets = st.resolve(idx, c.flag("ignore_unavailable").unwrap_or(false))?;
    if let Some(types) = types.filter(|t| *t != "_all") {
        targets.retain(|n| {
            let t = st
                .indices
                .get(n)
                .and_then(|i| i.type_name.as_deref())
                .unwrap_or("_doc");
            types.split(',').any(|x| x == t)
        });
    }
    Ok(targets)
}

pub(super) fn search(c: &Ctx<'_>, idx: &str, types: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    if let Some(m) = body.as_object() {
        for k in m.keys() {
            if !SEARCH_KEYS.contains(&k.as_str()) {
                return Err(EsError::parse(format!(
                    "Unknown key [{k}] in the search body (not supported by the testkit server)"
                )));
            }
        }
    }
    let q = match body.get("query") {
        Some(v) => Query::parse(v)?,
        None => Query::All,
    };
    let num = |k: &str, dflt: i64| -> Result<i64, EsError> {
        if let Some(v) = c.q(k) {
            return v
                .parse()
                .map_err(|_| EsError::bad_request(format!("cannot parse [{k}]")));
        }
        Ok(body.get(k).and_then(Value::as_i64).unwrap_or(dflt))
    };
    let size = num("size", 10)?.max(0) as usize;
    let from = num("from", 0)?.max(0) as usize;
    if from + size > 10_000 {
        return Err(EsError::new(
            400,
            "illegal_argument_exception",
            format!("Result window is too large, from + size must be less than or equal to: [10000] but was [{}].", from + size),
        ));
    }
    let keys = match body.get("sort") {
        Some(s) => query::parse_sort(s)?,
        None => Vec::new(),
    };
    let sorted = !keys.is_empty();
    let seq_no = c.flag("seq_no_primary_term").unwrap_or(false)
        || body.get("seq_no_primary_term").and_then(Value::as_bool) == Some(true);
    let with_version = body.get("version").and_then(Value::as_bool) == Some(true);
    let with_source = !matches!(body.get("_source"), Some(Value::Bool(false)));
    let st = c.state();
    let targets = search_targets(c, &st, idx, types)?;
    let mut hits = matching(&st, &targets, &q, &keys);
    if sorted {
        hits.sort_by(|a, b| query::order(&a.sort, &b.sort, &keys));
    }
    if let Some(after) = body.get("search_after").and_then(Value::as_array) {
        let after: Vec<Option<Value>> = after.iter().cloned().map(Some).collect();
        hits.retain(|h| query::order(&h.sort, &after, &keys) == std::cmp::Ordering::Greater);
    }
    let total = hits.len();
    let page: Vec<Value> = hits
        .iter()
        .skip(from)
        .take(size)
        .map(|h| {
            let mut m = Map::new();
            m.insert("_index".into(), json!(h.index));
            if c.shared.dialect.accepts_types() {
                let t = st.indices[h.index].type_name.as_deref().unwrap_or("_doc");
                m.insert("_type".into(), json!(t));
            }
            m.insert("_id".into(), json!(h.id));
            if with_version {
                m.insert("_version".into(), json!(h.doc.version));
            }
            if seq_no {
                m.insert("_seq_no".into(), json!(h.doc.seq_no));
                m.insert("_primary_term".into(), json!(h.doc.primary_term));
            }
            m.insert(
                "_score".into(),
                if sorted { Value::Null } else { json!(1.0) },
            );
            if let Some(r) = &h.doc.routing {
                m.insert("_routing".into(), json!(r));
            }
            if with_source {
                m.insert("_source".into(), h.source.clone());
            }
            if sorted {
                m.insert(
                    "sort".into(),
                    Value::Array(
                        h.sort
                            .iter()
                            .map(|v| v.clone().unwrap_or(Value::Null))
                            .collect(),
                    ),
                );
            }
            Value::Object(m)
        })
        .collect();
    let mut hits_obj = Map::new();
    if c.shared.dialect.typed() {
        hits_obj.insert("total".into(), json!(total));
    } else {
        let track = body.get("track_total_hits").cloned().or_else(|| {
            c.q("track_total_hits")
                .map(|v| v.parse().unwrap_or(json!(v)))
        });
        match track {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                hits_obj.insert("total".into(), json!({"value": total, "relation": "eq"}));
            }
            other => {
                let limit = other.and_then(|v| v.as_u64()).unwrap_or(10_000) as usize;
                let (value, rel) = if total > limit {
                    (limit, "gte")
                } else {
                    (total, "eq")
                };
                hits_obj.insert("total".into(), json!({"value": value, "relation": rel}));
            }
        }
    }
    hits_obj.insert(
        "max_score".into(),
        if sorted || total == 0 {
            Value::Null
        } else {
            json!(1.0)
        },
    );
    hits_obj.insert("hits".into(), Value::Array(page));
    c.ok(
        200,
        json!({
            "took": 1,
            "timed_out": false,
            "_shards": shards_header(),
            "hits": Value::Object(hits_obj),
        }),
    )
}

pub(super) fn count(c: &Ctx<'_>, idx: &str, types: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let q = match body.get("query") {
        Some(v) => Query::parse(v)?,
        None => Query::All,
    };
    let st = c.state();
    let targets = search_targets(c, &st, idx, types)?;
    let mut n: u64 = matching(&st, &targets, &q, &[]).len() as u64;
    if matches!(q, Query::All) {
        n += targets
            .iter()
            .filter_map(|t| st.indices.get(t))
            .map(|i| i.discarded)
            .sum::<u64>();
    }
    c.ok(200, json!({"count": n, "_shards": shards_header()}))
}

pub(super) fn refresh(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let n = c
        .state()
        .resolve(idx, c.flag("ignore_unavailable").unwrap_or(false))?
        .len();
    c.ok(
        200,
        json!({"_shards": {"total": n * 2, "successful": n, "failed": 0}}),
    )
}
