//! `_search`, `_count`, `_refresh`.

#[allow(unused_imports)]
use super::*;
use crate::server::state::{PageOpts, ScrollHit};

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
    "docvalue_fields",
    "track_scores",
    "explain",
    "pit",
    "slice",
];

pub(super) struct Hit<'a> {
    index: &'a str,
    id: &'a str,
    doc: &'a crate::server::state::Doc,
    /// `Null` when `lazy`: the query and the sort did not need it, so it is parsed only
    /// for the hits of the page.
    source: Value,
    lazy: bool,
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
    let sets = targets
        .iter()
        .filter_map(|name| st.indices.get(name).map(|i| (name.as_str(), &i.docs, None)))
        .collect();
    matching_in(sets, q, keys)
}

/// The documents of one index to search: live, or as a point in time holds them (then
/// with each document's `_shard_doc` in that point in time).
type DocSet<'a> = (
    &'a str,
    &'a BTreeMap<String, crate::server::state::Doc>,
    Option<&'a BTreeMap<String, i64>>,
);

/// Hits among documents of `(index, documents)` sets (live indices or a point in time).
fn matching_in<'a>(sets: Vec<DocSet<'a>>, q: &Query, keys: &[SortKey]) -> Vec<Hit<'a>> {
    let mut hits = Vec::new();
    let lazy = matches!(q, Query::All)
        && keys
            .iter()
            .all(|k| matches!(k.field.as_str(), "_doc" | "_shard_doc" | "_score"));
    for (name, docs, shard_doc) in sets {
        for (id, doc) in docs {
            // In a point in time, `_doc` and `_shard_doc` are the document's number there.
            let seq = shard_doc
                .and_then(|m| m.get(id).copied())
                .unwrap_or(doc.seq_no);
            let source = match lazy {
                true => Value::Null,
                false => source_value(&doc.source),
            };
            if q.matches(id, &source) {
                let sort = keys
                    .iter()
                    .map(|k| query::sort_value(id, &source, k, seq))
                    .collect();
                hits.push(Hit {
                    index: name,
                    id,
                    doc,
                    source,
                    lazy,
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
    if body.get("track_total_hits").is_some() && !c.shared.dialect.track_total_hits() {
        // before 6.0 the search body has no such key
        return Err(EsError::parse(
            "Unknown key for a VALUE_BOOLEAN in [track_total_hits].",
        ));
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
    if from + size > 10_000 && c.q("scroll").is_some() {
        return Err(super::scroll::all_shards_failed(
            400,
            "illegal_argument_exception",
            &format!("Batch size is too large, size must be less than or equal to: [10000] but was [{}]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.", from + size),
        ));
    }
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
    let doc_values = crate::server::doc_values::requested(body.get("docvalue_fields"))?;
    let opts = PageOpts {
        with_source,
        seq_no,
        with_version,
        sorted,
        doc_values,
    };
    let scroll = match c.q("scroll") {
        None => None,
        Some(k) => Some(keep_alive(k)?),
    };
    let pit = body.get("pit");
    if scroll.is_some() {
        check_scroll_search(c, &body, from, size, pit.is_some())?;
    }
    let slice = match body.get("slice") {
        None => None,
        Some(_) if pit.is_none() && scroll.is_none() => {
            return Err(EsError::new(
                400,
                "action_request_validation_exception",
                "Validation Failed: 1: [slice] can only be used with [scroll] or [point-in-time] requests;",
            ))
        }
        Some(v) => Some(parse_slice(v)?),
    };
    let d = &c.shared.dialect;
    if slice.is_some() && pit.is_some() && !d.pit_slicing() {
        // Before point-in-time slicing every shard refused a slice outside a scroll
        // (elastic/elasticsearch `SearchService.parseSource` before #74457; the same in
        // OpenSearch's before it accepted a PIT context). `SearchException` carries no
        // status of its own: 500 as derived.
        return Err(super::scroll::all_shards_failed(
            500,
            "search_exception",
            "`slice` cannot be used outside of a scroll context",
        ));
    }
    if keys.iter().any(|k| k.field == "_shard_doc") && !d.shard_doc() {
        // No such field before it was added (see `Dialect::shard_doc`): a sort on an
        // unmapped field fails on every shard.
        return Err(super::scroll::all_shards_failed(
            400,
            "query_shard_exception",
            "No mapping found for [_shard_doc] in order to sort on",
        ));
    }
    let mut guard = c.state();
    let pit_id = match pit {
        None => None,
        Some(p) => {
            if idx != "_all" {
                return Err(EsError::new(
                    400,
                    "action_request_validation_exception",
                    "Validation Failed: 1: [indices] cannot be used with point in time;",
                ));
            }
            let id = p
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| EsError::parse("[pit] needs an [id]"))?;
            let now = std::time::Instant::now();
            guard.pits.retain(|_, p| p.expires > now);
            let keep = match p.get("keep_alive").and_then(Value::as_str) {
                Some(k) => Some(keep_alive(k)?),
                None => None,
            };
            let Some(found) = guard.pits.get_mut(id) else {
                // Expired or closed: every shard misses its reader context, and the
                // search fails as a whole, 404 (`SearchContextMissingException`).
                return Err(super::scroll::all_shards_failed(
                    404,
                    "search_context_missing_exception",
                    &format!("No search context found for id [{id}]"),
                ));
            };
            if let Some(k) = keep {
                found.expires = now + k;
            }
            Some(id.to_string())
        }
    };
    let st = &*guard;
    let targets = match &pit_id {
        Some(_) => Vec::new(),
        None => search_targets(c, st, idx, types)?,
    };
    if let (Some((_, max)), Some(_)) = (slice, scroll) {
        // `index.max_slices_per_scroll` (default 1024) of each index searched
        for t in &targets {
            let limit = st.indices[t]
                .settings
                .get("index.max_slices_per_scroll")
                .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
                .unwrap_or(1024);
            if max > limit {
                return Err(super::scroll::all_shards_failed(
                    400,
                    "illegal_argument_exception",
                    &format!("The number of slices [{max}] is too large. It must be less than [{limit}]. This limit can be set by changing the [index.max_slices_per_scroll] index level setting."),
                ));
            }
        }
    }
    let mut hits = match &pit_id {
        Some(id) => matching_in(
            st.pits[id]
                .indices
                .iter()
                .zip(&st.pits[id].shard_doc)
                .map(|((n, d), r)| (n.as_str(), d, Some(r)))
                .collect(),
            &q,
            &keys,
        ),
        None => matching(st, &targets, &q, &keys),
    };
    if let Some((id, max)) = slice {
        hits.retain(|h| slice_of(h.id, max) == id);
    }
    // The faults below are meant for pages of hits: a count (`size: 0`, as a plan asks
    // for an index's total) is not given them, so that a test's faults meet its reads.
    let page = pit_id.is_some() && body.get("size").and_then(Value::as_u64) != Some(0);
    // The fault: shard 0 of five fails for this page of a point in time; its hits are in
    // neither the page nor the total.
    let lost_shard = page && c.shared.take_pit_shard_failure();
    // The fault: a shard times out; its hits are in neither the page nor the total, and
    // nothing but `timed_out` says so.
    let timed_out = page && !lost_shard && c.shared.take_timed_out_page();
    if lost_shard || timed_out {
        hits.retain(|h| super::scroll::lost_shard_of(h.id) != 0);
    }
    if let Some(after) = body.get("search_after").and_then(Value::as_array) {
        let after: Vec<Option<Value>> = after.iter().cloned().map(Some).collect();
        hits.retain(|h| query::order(&h.sort, &after, &keys) == std::cmp::Ordering::Greater);
    }
    let total = hits.len();
    if let Some(keep) = scroll {
        // A scroll holds every hit in order, as the documents are now.
        if sorted {
            hits.sort_by(|a, b| query::order(&a.sort, &b.sort, &keys));
        }
        let held = hits
            .into_iter()
            .map(|h| ScrollHit {
                index: h.index.to_string(),
                id: h.id.to_string(),
                doc: h.doc.clone(),
                sort: h.sort,
            })
            .collect();
        return super::scroll::open(c, guard, held, size, keep, opts);
    }
    if sorted {
        // only the first `from + size` hits in order are needed: select them, then sort
        // those (a page through a large point in time is not a sort of everything)
        let order = |a: &Hit<'_>, b: &Hit<'_>| query::order(&a.sort, &b.sort, &keys);
        let want = from.saturating_add(size);
        if want < hits.len() {
            hits.select_nth_unstable_by(want, order);
            hits.truncate(want);
        }
        hits.sort_by(order);
    }
    let page: Vec<Value> = hits
        .iter()
        .skip(from)
        .take(size)
        .map(|h| {
            let view = HitView {
                index: h.index,
                id: h.id,
                doc: h.doc,
                source: (!h.lazy).then_some(&h.source),
                sort: &h.sort,
            };
            render_hit(c, st, &view, &opts)
        })
        .collect::<Result<_, _>>()?;
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
    let mut out = json!({
        "took": 1,
        "timed_out": timed_out,
        "_shards": if lost_shard {
            let index = pit_id.as_ref().and_then(|id| st.pits[id].indices.first());
            super::scroll::failed_shard_header(index.map(|(n, _)| n.as_str()))
        } else {
            shards_header()
        },
        "hits": Value::Object(hits_obj),
    });
    if let Some(id) = pit_id {
        out["pit_id"] = json!(id);
    }
    c.ok(200, out)
}

/// What the real servers refuse in a search that opens a scroll.
fn check_scroll_search(
    c: &Ctx<'_>,
    body: &Value,
    from: usize,
    size: usize,
    pit: bool,
) -> Result<(), EsError> {
    let invalid = |m: &str| {
        EsError::new(
            400,
            "action_request_validation_exception",
            format!("Validation Failed: 1: {m};"),
        )
    };
    if pit {
        return Err(invalid(
            "using [point in time] is not allowed in a scroll context",
        ));
    }
    if from > 0 {
        return Err(invalid("using [from] is not allowed in a scroll context"));
    }
    if body.get("search_after").is_some() {
        return Err(invalid("[search_after] cannot be used in a scroll context"));
    }
    let d = &c.shared.dialect;
    if size == 0 && d.scroll_validation_7() {
        return Err(invalid("[size] cannot be [0] in a scroll context"));
    }
    let no_total = body.get("track_total_hits") == Some(&Value::Bool(false))
        || c.q("track_total_hits") == Some("false");
    if no_total && d.scroll_validation_7() {
        return Err(invalid(
            "disabling [track_total_hits] is not allowed in a scroll context",
        ));
    }
    if no_total && d.track_total_hits() {
        // 6.x refuses it on the shards (a search context exception, no status of its own)
        return Err(super::scroll::all_shards_failed(
            500,
            "search_context_exception",
            "disabling [track_total_hits] is not allowed in a scroll context",
        ));
    }
    Ok(())
}

/// One hit to show: a live or point-in-time hit, or one a scroll holds.
pub(super) struct HitView<'a> {
    pub index: &'a str,
    pub id: &'a str,
    pub doc: &'a crate::server::state::Doc,
    /// The parsed source when the search already has it.
    pub source: Option<&'a Value>,
    pub sort: &'a [Option<Value>],
}

/// A hit as the search answers show it.
pub(super) fn render_hit(
    c: &Ctx<'_>,
    st: &State,
    h: &HitView<'_>,
    o: &PageOpts,
) -> Result<Value, EsError> {
    let parsed;
    let source = match h.source {
        Some(s) => s,
        None => {
            parsed = source_value(&h.doc.source);
            &parsed
        }
    };
    let mut m = Map::new();
    m.insert("_index".into(), json!(h.index));
    if c.shared.dialect.accepts_types() {
        let t = st
            .indices
            .get(h.index)
            .and_then(|i| i.type_name.as_deref())
            .unwrap_or("_doc");
        m.insert("_type".into(), json!(t));
    }
    m.insert("_id".into(), json!(h.id));
    if o.with_version {
        m.insert("_version".into(), json!(h.doc.version));
    }
    if o.seq_no {
        m.insert("_seq_no".into(), json!(h.doc.seq_no));
        m.insert("_primary_term".into(), json!(h.doc.primary_term));
    }
    m.insert(
        "_score".into(),
        if o.sorted { Value::Null } else { json!(1.0) },
    );
    if let Some(r) = &h.doc.routing {
        m.insert("_routing".into(), json!(r));
    }
    let kept = st.indices.get(h.index).is_none_or(|i| i.source_enabled());
    if o.with_source && kept {
        m.insert(
            "_source".into(),
            super::raw_source::raw_source(&h.doc.source),
        );
    }
    if let Some(i) = st.indices.get(h.index).filter(|_| !o.doc_values.is_empty()) {
        let f = crate::server::doc_values::hit_fields(
            &o.doc_values,
            &i.mappings,
            i.type_name.as_deref(),
            source,
        )?;
        if !f.is_empty() {
            m.insert("fields".into(), Value::Object(f));
        }
    }
    if o.sorted {
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
    Ok(Value::Object(m))
}

/// `slice: {"id": N, "max": M}` as the real servers check it.
fn parse_slice(v: &Value) -> Result<(u64, u64), EsError> {
    let id = v.get("id").and_then(Value::as_u64);
    let max = v.get("max").and_then(Value::as_u64);
    match (id, max) {
        (Some(id), Some(max)) if max <= 1 => Err(EsError::bad_request(format!(
            "max must be greater than 1, got [{max}] (id [{id}])"
        ))),
        (Some(id), Some(max)) if id >= max => Err(EsError::bad_request(format!(
            "max must be greater than id, got max [{max}] and id [{id}]"
        ))),
        (Some(id), Some(max)) => Ok((id, max)),
        _ => Err(EsError::parse("[slice] needs [id] and [max]")),
    }
}

/// The slice a document falls in: a stable hash of its id.
fn slice_of(id: &str, max: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h % max
}

/// `30s`, `5m`, `1h`, `100ms`, `1d`.
pub(super) fn keep_alive(s: &str) -> Result<Duration, EsError> {
    let bad = || {
        EsError::parse(format!(
            "failed to parse setting [keep_alive] with value [{s}] as a time value"
        ))
    };
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    Ok(Duration::from_millis(n.saturating_mul(ms)))
}

/// Opens a point in time over the indices `idx` names (`keep_alive` required).
pub(super) fn open_pit(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let keep = c
        .q("keep_alive")
        .ok_or_else(|| {
            EsError::new(
                400,
                "action_request_validation_exception",
                "Validation Failed: 1: [keep_alive] is not specified;",
            )
        })
        .and_then(keep_alive)?;
    let mut st = c.state();
    let targets = st.resolve(idx, c.flag("ignore_unavailable").unwrap_or(false))?;
    let indices: Vec<(String, BTreeMap<String, crate::server::state::Doc>)> = targets
        .iter()
        .filter_map(|n| st.indices.get(n).map(|i| (n.clone(), i.docs.clone())))
        .collect();
    let shard_doc = indices
        .iter()
        .enumerate()
        .map(|(k, (_, docs))| {
            let mut order: Vec<(&String, i64)> =
                docs.iter().map(|(id, d)| (id, d.seq_no)).collect();
            order.sort_by_key(|(id, seq)| (*seq, (*id).clone()));
            order
                .into_iter()
                .enumerate()
                .map(|(rank, (id, _))| (id.clone(), ((k as i64) << 32) | rank as i64))
                .collect()
        })
        .collect();
    st.uuid_counter += 1;
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
        "pit-{}-{}",
        st.uuid_counter,
        targets.join(",")
    ));
    st.pits.insert(
        id.clone(),
        crate::server::state::Pit {
            indices,
            shard_doc,
            expires: std::time::Instant::now() + keep,
        },
    );
    if c.shared.dialect.es_pit() {
        c.ok(200, json!({"id": id}))
    } else {
        c.ok(
            200,
            json!({"pit_id": id, "_shards": shards_header(), "creation_time": 0}),
        )
    }
}

/// Closes points in time: `{"id": …}` (Elasticsearch) or `{"pit_id": [...]}` (OpenSearch).
pub(super) fn close_pit(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let ids: Vec<String> = match (body.get("id"), body.get("pit_id")) {
        (Some(Value::String(id)), _) => vec![id.clone()],
        (_, Some(Value::Array(a))) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        (_, Some(Value::String(id))) => vec![id.clone()],
        _ => return Err(EsError::parse("no point in time id given")),
    };
    let mut st = c.state();
    let closed: Vec<(String, bool)> = ids
        .iter()
        .map(|i| (i.clone(), st.pits.remove(i).is_some()))
        .collect();
    if c.shared.dialect.es_pit() {
        let n = closed.iter().filter(|(_, ok)| *ok).count();
        if n == 0 {
            return c.ok(404, json!({"succeeded": true, "num_freed": 0}));
        }
        c.ok(200, json!({"succeeded": true, "num_freed": n}))
    } else {
        let pits: Vec<Value> = closed
            .iter()
            .map(|(id, ok)| json!({"pit_id": id, "successful": ok}))
            .collect();
        c.ok(200, json!({"pits": pits}))
    }
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
