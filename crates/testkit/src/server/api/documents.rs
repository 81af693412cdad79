//! `_bulk`, single-document writes and reads, `_mget`.

#[allow(unused_imports)]
use super::*;

pub(super) fn do_bulk(c: &Ctx<'_>, idx: Option<&str>, t: Option<&str>) -> Result<Resp, EsError> {
    c.shared
        .counters
        .bulk_requests
        .fetch_add(1, Ordering::Relaxed);
    let filter = c.filter_path();
    // an include-only filter is applied while the response is written (the fast path clients
    // use); one with exclusions goes through the general filter
    let (direct, general) = match filter {
        Some(f) if f.include_only() => (Some(f), None),
        other => (None, other),
    };
    let out = bulk::bulk(c.shared, idx, t, c.body.clone(), c.faults, direct.as_ref())?;
    if let Some(f) = general {
        let v: Value = serde_json::from_slice(&out)
            .map_err(|e| EsError::new(500, "exception", format!("bulk response: {e}")))?;
        return Ok(json_resp(c.shared, 200, &f.apply(v)));
    }
    Ok(respond(c.shared, 200, out))
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum DocOp {
    Index,
    Create,
    Update,
    Delete,
}

pub(super) fn doc_endpoint(
    c: &Ctx<'_>,
    idx: &str,
    t: Option<&str>,
    id: &str,
    segs: &[&str],
) -> Result<Resp, EsError> {
    match *c.method {
        Method::GET | Method::HEAD => get_doc(c, idx, t, id, false),
        Method::PUT | Method::POST => {
            let create = c.q("op_type") == Some("create");
            write_doc(
                c,
                idx,
                t,
                id,
                if create { DocOp::Create } else { DocOp::Index },
            )
        }
        Method::DELETE => write_doc(c, idx, t, id, DocOp::Delete),
        _ => Err(no_handler(c.method, segs)),
    }
}

pub(super) fn parse_i64(c: &Ctx<'_>, k: &str) -> Result<Option<i64>, EsError> {
    c.q(k)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| EsError::bad_request(format!("cannot parse [{k}]: [{v}]")))
        })
        .transpose()
}

pub(super) fn write_doc(
    c: &Ctx<'_>,
    idx: &str,
    t: Option<&str>,
    id: &str,
    op: DocOp,
) -> Result<Resp, EsError> {
    let d = &c.shared.dialect;
    let type_name = match t {
        Some(t) => Some(t.to_string()),
        None if d.typed() => Some("_doc".to_string()),
        None => None,
    };
    let kind = match op {
        DocOp::Index => OpKind::Index,
        DocOp::Create => OpKind::Create,
        DocOp::Delete => OpKind::Delete,
        DocOp::Update => {
            let v = c.json()?;
            if v.get("script").is_some() {
                return Err(EsError::bad_request(
                    "scripted updates are not supported by the testkit server",
                ));
            }
            OpKind::Update {
                doc: v.get("doc").cloned(),
                upsert: v.get("upsert").cloned(),
                doc_as_upsert: v.get("doc_as_upsert").and_then(Value::as_bool) == Some(true),
                detect_noop: v.get("detect_noop").and_then(Value::as_bool) != Some(false),
            }
        }
    };
    // OpenSearch Serverless time-series/vector-search collections: a write naming its id
    // is for search collections only (see `CollectionType`).
    if matches!(op, DocOp::Index | DocOp::Create)
        && !id.is_empty()
        && c.shared.config.serverless.is_some_and(|t| t.refuses_ids())
    {
        return Err(EsError::new(
            400,
            "illegal_argument_exception",
            crate::server::version::SERVERLESS_ID_REFUSAL,
        ));
    }
    if matches!(op, DocOp::Index | DocOp::Create | DocOp::Update)
        && c.faults.failing_ids.contains(id)
    {
        return Err(mapping_failure(id));
    }
    let mut source = Bytes::new();
    if matches!(op, DocOp::Index | DocOp::Create) {
        let trimmed = c.body.clone();
        let is_object = serde_json::from_slice::<&serde_json::value::RawValue>(&trimmed)
            .map(|r| r.get().starts_with('{'))
            .unwrap_or(false);
        if !is_object {
            return Err(EsError::new(
                400,
                "mapper_parsing_exception",
                "failed to parse: the document source must be a JSON object",
            ));
        }
        source = trimmed;
    }
    let external_gte = match c.q("version_type") {
        None | Some("internal") | Some("external") => false,
        Some("external_gte") => true,
        Some(other) => {
            return Err(EsError::bad_request(format!(
                "No version type match [{other}]"
            )))
        }
    };
    let version = if c.q("version_type").is_some() {
        parse_i64(c, "version")?
    } else {
        None
    };
    let wop = WriteOp {
        kind,
        id: id.to_string(),
        type_name: type_name.clone(),
        source,
        routing: c.q("routing").map(str::to_string),
        if_seq_no: parse_i64(c, "if_seq_no")?,
        if_primary_term: parse_i64(c, "if_primary_term")?,
        version,
        external_gte,
    };
    let mut index = idx.to_string();
    let (written, id) = {
        let mut st = c.state();
        let mut wop = wop;
        if wop.id.is_empty() {
            wop.id = st.next_auto_id();
        }
        let id = wop.id.clone();
        (apply_one(c.shared, &mut st, &mut index, wop)?, id)
    };
    c.ok(
        written.status,
        write_result(c, &index, type_name.as_deref(), &id, &written),
    )
}

pub(super) fn write_result(
    c: &Ctx<'_>,
    index: &str,
    t: Option<&str>,
    id: &str,
    w: &Written,
) -> Value {
    let mut m = Map::new();
    m.insert("_index".into(), json!(index));
    if c.shared.dialect.accepts_types() {
        m.insert("_type".into(), json!(t.unwrap_or("_doc")));
    }
    m.insert("_id".into(), json!(id));
    m.insert("_version".into(), json!(w.version));
    m.insert("result".into(), json!(w.result));
    let shards = if w.result == "noop" {
        json!({"total": 0, "successful": 0, "failed": 0})
    } else {
        json!({"total": 2, "successful": 1, "failed": 0})
    };
    m.insert("_shards".into(), shards);
    m.insert("_seq_no".into(), json!(w.seq_no));
    m.insert("_primary_term".into(), json!(w.primary_term));
    Value::Object(m)
}

pub(super) fn source_value(b: &Bytes) -> Value {
    serde_json::from_slice(b).unwrap_or(Value::Null)
}

/// The body of a GET for one document, and whether it was found. With `want_type`, a document
/// of an index whose mapping type differs is not found (as with typed GETs on ES ≤ 7).
pub(super) fn doc_json(
    c: &Ctx<'_>,
    st: &State,
    idx: &str,
    want_type: Option<&str>,
    id: &str,
) -> Result<(Value, bool), EsError> {
    let targets = st.resolve(idx, false)?;
    if targets.len() != 1 {
        return Err(EsError::bad_request(format!(
            "alias [{idx}] has more than one index associated with it, can't execute a single index op"
        )));
    }
    let name = &targets[0];
    let index = &st.indices[name];
    let mut m = Map::new();
    m.insert("_index".into(), json!(name));
    let index_type = index.type_name.as_deref().unwrap_or("_doc");
    let type_matches = want_type.is_none_or(|t| t == index_type);
    if c.shared.dialect.accepts_types() {
        m.insert("_type".into(), json!(want_type.unwrap_or(index_type)));
    }
    m.insert("_id".into(), json!(id));
    match index.docs.get(id).filter(|_| type_matches) {
        Some(d) => {
            m.insert("_version".into(), json!(d.version));
            m.insert("_seq_no".into(), json!(d.seq_no));
            m.insert("_primary_term".into(), json!(d.primary_term));
            if let Some(r) = &d.routing {
                m.insert("_routing".into(), json!(r));
            }
            m.insert("found".into(), json!(true));
            if index.source_enabled() {
                m.insert("_source".into(), super::raw_source::raw_source(&d.source));
            }
            Ok((Value::Object(m), true))
        }
        None => {
            m.insert("found".into(), json!(false));
            Ok((Value::Object(m), false))
        }
    }
}

pub(super) fn get_doc(
    c: &Ctx<'_>,
    idx: &str,
    t: Option<&str>,
    id: &str,
    source_only: bool,
) -> Result<Resp, EsError> {
    let st = c.state();
    let (v, found) = doc_json(c, &st, idx, t, id)?;
    let status = if found { 200 } else { 404 };
    if source_only {
        if !found {
            return Err(EsError::new(
                404,
                "resource_not_found_exception",
                format!("Document not found [{idx}]/[{id}]"),
            ));
        }
        return match v.get("_source") {
            Some(s) => c.ok(200, s.clone()),
            None => Err(EsError::new(
                404,
                "resource_not_found_exception",
                format!("Source not found [{idx}]/[{id}]"),
            )),
        };
    }
    c.ok(status, v)
}

/// `_mget` by `docs` or `ids`; `t` (typed paths, ES ≤ 7) or a doc's `_type` restricts the
/// mapping type, `_all` meaning any.
pub(super) fn mget(c: &Ctx<'_>, idx: Option<&str>, t: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let id_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut wanted: Vec<(String, Option<String>, String)> = Vec::new();
    if let Some(docs) = body.get("docs").and_then(Value::as_array) {
        for (n, d) in docs.iter().enumerate() {
            let index = d
                .get("_index")
                .and_then(Value::as_str)
                .or(idx)
                .ok_or_else(|| validation(&format!("index is missing for doc {n}")))?;
            let id = d
                .get("_id")
                .map(id_of)
                .ok_or_else(|| validation(&format!("id is missing for doc {n}")))?;
            let doc_type = d.get("_type").and_then(Value::as_str).or(t);
            wanted.push((index.to_string(), doc_type.map(str::to_string), id));
        }
    } else if let Some(ids) = body.get("ids").and_then(Value::as_array) {
        let index = idx.ok_or_else(|| validation("index is missing for doc 0"))?;
        for id in ids {
            wanted.push((index.to_string(), t.map(str::to_string), id_of(id)));
        }
    } else {
        return Err(validation("no documents to get"));
    }
    let st = c.state();
    let docs: Vec<Value> = wanted
        .iter()
        .map(|(i, doc_type, id)| {
            let doc_type = doc_type.as_deref().filter(|t| *t != "_all");
            match doc_json(c, &st, i, doc_type, id) {
                Ok((v, _)) => v,
                Err(e) => json!({"_index": i, "_id": id, "error": e.cause()}),
            }
        })
        .collect();
    c.ok(200, json!({ "docs": docs }))
}

pub(super) fn validation(msg: &str) -> EsError {
    EsError::new(
        400,
        "action_request_validation_exception",
        format!("Validation Failed: 1: {msg};"),
    )
}
