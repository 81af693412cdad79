//! `_bulk`: action lines parsed into borrowed metadata, source lines kept as `Bytes` slices of
//! the request body (never parsed unless kept and checked), results written straight to text.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;

use super::error::EsError;
use super::filter::{FilterPath, Keep};
use super::state::{OpKind, State, WriteOp, Written};
use super::{Faults, Shared};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionLine<'a> {
    #[serde(borrow)]
    index: Option<Meta<'a>>,
    #[serde(borrow)]
    create: Option<Meta<'a>>,
    #[serde(borrow)]
    update: Option<Meta<'a>>,
    #[serde(borrow)]
    delete: Option<Meta<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Meta<'a> {
    #[serde(borrow, rename = "_index")]
    index: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "_id")]
    id: Option<IdValue<'a>>,
    #[serde(borrow, rename = "_type")]
    type_name: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "_routing")]
    routing: Option<Cow<'a, str>>,
    if_seq_no: Option<i64>,
    if_primary_term: Option<i64>,
    #[serde(alias = "_version")]
    version: Option<i64>,
    #[serde(borrow, alias = "_version_type")]
    version_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pipeline: Option<Cow<'a, str>>,
    require_alias: Option<bool>,
    #[serde(alias = "_retry_on_conflict")]
    retry_on_conflict: Option<u32>,
    #[serde(borrow)]
    op_type: Option<Cow<'a, str>>,
    dynamic_templates: Option<Value>,
}

/// Elasticsearch accepts numeric ids in action lines.
#[derive(Deserialize)]
#[serde(untagged)]
enum IdValue<'a> {
    #[serde(borrow)]
    Str(Cow<'a, str>),
    Num(serde_json::Number),
}

impl IdValue<'_> {
    fn into_string(self) -> String {
        match self {
            IdValue::Str(s) => s.into_owned(),
            IdValue::Num(n) => n.to_string(),
        }
    }
}

/// One parsed item, before it is applied.
struct ParsedItem {
    action: &'static str,
    index: String,
    op: WriteOp,
    /// Decided before the lock is taken: an error to report instead of applying.
    fail: Option<EsError>,
}

fn validation(msg: &str) -> EsError {
    EsError::new(
        400,
        "action_request_validation_exception",
        format!("Validation Failed: 1: {msg};"),
    )
}

/// Lines of the body as byte ranges without their `\n` (and a trailing `\r`), with their
/// 1-based numbers; blank lines skipped.
fn lines(body: &[u8]) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
    let mut start = 0;
    let mut n = 0;
    std::iter::from_fn(move || {
        while start < body.len() {
            let end = memchr::memchr(b'\n', &body[start..]).map_or(body.len(), |p| start + p);
            let mut line_end = end;
            if line_end > start && body[line_end - 1] == b'\r' {
                line_end -= 1;
            }
            let range = start..line_end;
            start = end + 1;
            n += 1;
            let line = &body[range.clone()];
            // a document line starts with '{': only lines that do not need the full blank check
            if line.first().is_none_or(u8::is_ascii_whitespace)
                && line.iter().all(u8::is_ascii_whitespace)
            {
                continue;
            }
            return Some((n, range));
        }
        None
    })
}

/// Handles one `_bulk` request body; returns the response body, filtered by `filter` (an
/// include-only `filter_path`) when given.
pub(crate) fn bulk(
    shared: &Shared,
    path_index: Option<&str>,
    path_type: Option<&str>,
    body: Bytes,
    faults: &Faults,
    filter: Option<&FilterPath>,
) -> Result<Vec<u8>, EsError> {
    let started = Instant::now();
    let dialect = &shared.dialect;
    if body.is_empty() || body.iter().all(u8::is_ascii_whitespace) {
        return Err(validation("no requests added"));
    }
    if body.last() != Some(&b'\n') {
        return Err(EsError::bad_request(
            "The bulk request must be terminated by a newline [\\n]",
        ));
    }
    let discard = shared.config.discard_documents;
    let mut items: Vec<ParsedItem> = Vec::new();
    let mut source_bytes = 0u64;
    let mut it = lines(&body);
    while let Some((n, range)) = it.next() {
        let line = &body[range];
        let action: ActionLine = serde_json::from_slice(line).map_err(|e| {
            let msg = e.to_string();
            if let Some(field) = msg
                .strip_prefix("unknown field `")
                .and_then(|r| r.split('`').next())
            {
                EsError::bad_request(format!(
                    "Action/metadata line [{n}] contains an unknown parameter [{field}]"
                ))
            } else {
                EsError::bad_request(format!("Malformed action/metadata line [{n}]: {msg}"))
            }
        })?;
        let (name, meta) = match action {
            ActionLine {
                index: Some(m),
                create: None,
                update: None,
                delete: None,
            } => ("index", m),
            ActionLine {
                create: Some(m),
                index: None,
                update: None,
                delete: None,
            } => ("create", m),
            ActionLine {
                update: Some(m),
                index: None,
                create: None,
                delete: None,
            } => ("update", m),
            ActionLine {
                delete: Some(m),
                index: None,
                create: None,
                update: None,
            } => ("delete", m),
            _ => {
                return Err(EsError::bad_request(format!(
                    "Malformed action/metadata line [{n}], expected exactly one of index, create, update, delete"
                )))
            }
        };
        let _ = (&meta.pipeline, meta.require_alias, meta.retry_on_conflict);
        let _ = &meta.dynamic_templates;
        if meta.type_name.is_some() && !dialect.accepts_types() {
            return Err(EsError::bad_request(format!(
                "Action/metadata line [{n}] contains an unknown parameter [_type]"
            )));
        }
        let index = meta
            .index
            .as_deref()
            .or(path_index)
            .ok_or_else(|| validation("index is missing"))?
            .to_string();
        let type_name = meta.type_name.as_deref().or(path_type).map(str::to_string);
        if dialect.typed() && type_name.is_none() {
            return Err(validation("type is missing"));
        }
        let source = if name == "delete" {
            Bytes::new()
        } else {
            match it.next() {
                // in discard mode the source is counted, never kept
                Some((_, r)) if discard => {
                    source_bytes += r.len() as u64;
                    Bytes::new()
                }
                Some((_, r)) => {
                    source_bytes += r.len() as u64;
                    body.slice(r)
                }
                None => {
                    return Err(EsError::bad_request(format!(
                        "The bulk request must be terminated by a newline [\\n] (action line [{n}] has no source)"
                    )))
                }
            }
        };
        let mut kind = match name {
            "index" => OpKind::Index,
            "create" => OpKind::Create,
            "delete" => OpKind::Delete,
            _ => OpKind::Update {
                doc: None,
                upsert: None,
                doc_as_upsert: false,
                detect_noop: true,
            },
        };
        if name == "index" && meta.op_type.as_deref() == Some("create") {
            kind = OpKind::Create;
        }
        let meta_named_id = meta.id.is_some();
        let id = match meta.id {
            Some(id) => id.into_string(),
            None if matches!(kind, OpKind::Index | OpKind::Create) => String::new(),
            None => return Err(validation("id is missing")),
        };
        let external_gte = match meta.version_type.as_deref() {
            None | Some("internal") | Some("external") => false,
            Some("external_gte") => true,
            Some(other) => {
                return Err(EsError::bad_request(format!(
                    "No version type match [{other}]"
                )))
            }
        };
        let version = if meta.version_type.is_some() {
            meta.version
        } else {
            None
        };
        let mut fail = None;
        // OpenSearch Serverless time-series/vector-search collections refuse ids (see
        // `CollectionType`): per item, nothing applied.
        if meta_named_id
            && matches!(kind, OpKind::Index | OpKind::Create)
            && shared.config.serverless.is_some_and(|c| c.refuses_ids())
        {
            fail = Some(EsError::new(
                400,
                "illegal_argument_exception",
                super::version::SERVERLESS_ID_REFUSAL,
            ));
        }
        match &mut kind {
            OpKind::Index | OpKind::Create => {
                if fail.is_none()
                    && !discard
                    && serde_json::from_slice::<&serde_json::value::RawValue>(&source)
                        .map(|r| !r.get().starts_with('{'))
                        .unwrap_or(true)
                {
                    fail = Some(EsError::new(
                        400,
                        "mapper_parsing_exception",
                        format!(
                            "failed to parse: the source of document [{id}] is not a JSON object"
                        ),
                    ));
                }
            }
            OpKind::Update {
                doc,
                upsert,
                doc_as_upsert,
                detect_noop,
            } => match serde_json::from_slice::<Value>(&source) {
                Ok(v) if v.get("script").is_some() => {
                    fail = Some(EsError::bad_request(
                        "scripted updates are not supported by the testkit server",
                    ));
                }
                Ok(v) => {
                    *doc = v.get("doc").cloned();
                    *upsert = v.get("upsert").cloned();
                    *doc_as_upsert = v.get("doc_as_upsert").and_then(Value::as_bool) == Some(true);
                    *detect_noop = v.get("detect_noop").and_then(Value::as_bool) != Some(false);
                }
                Err(e) => {
                    return Err(EsError::parse(format!(
                        "failed to parse the update request on line [{}]: {e}",
                        n + 1
                    )))
                }
            },
            OpKind::Delete => {}
        }
        items.push(ParsedItem {
            action: name,
            index,
            op: WriteOp {
                kind,
                id,
                type_name,
                source,
                routing: meta.routing.map(Cow::into_owned),
                if_seq_no: meta.if_seq_no,
                if_primary_term: meta.if_primary_term,
                version,
                external_gte,
            },
            fail,
        });
    }
    shared
        .counters
        .bulk_items
        .fetch_add(items.len() as u64, Ordering::Relaxed);
    shared
        .counters
        .source_bytes
        .fetch_add(source_bytes, Ordering::Relaxed);

    // faults decided outside the state lock
    for item in &mut items {
        if item.fail.is_some() {
            continue;
        }
        let writes_doc = !matches!(item.op.kind, OpKind::Delete);
        if faults.write_blocked.contains(&item.index) {
            item.fail = Some(EsError::new(
                403,
                "cluster_block_exception",
                format!(
                    "index [{}] blocked by: [FORBIDDEN/8/index write (api)]; (testkit fault injection)",
                    item.index
                ),
            ));
        } else if writes_doc
            && !faults.failing_ids.is_empty()
            && faults.failing_ids.contains(&item.op.id)
        {
            item.fail = Some(mapping_failure(&item.op.id));
        } else if shared.roll_below(faults.bulk_item_429) {
            item.fail = Some(EsError::new(
                429,
                "es_rejected_execution_exception",
                "rejected execution of write operation: write queue is full (testkit fault injection)",
            ));
        } else if shared.roll_below(faults.bulk_item_503) {
            item.fail = Some(EsError::new(
                503,
                "unavailable_shards_exception",
                "primary shard is not active (testkit fault injection)",
            ));
        }
    }

    let mut results: Vec<Result<Written, EsError>> = Vec::with_capacity(items.len());
    {
        let mut st = shared.state();
        for item in &mut items {
            if let Some(e) = item.fail.take() {
                results.push(Err(e));
                continue;
            }
            if item.op.id.is_empty() {
                item.op.id = st.next_auto_id();
            }
            let op = WriteOp {
                kind: std::mem::replace(&mut item.op.kind, OpKind::Delete),
                id: item.op.id.clone(),
                type_name: item.op.type_name.clone(),
                source: std::mem::take(&mut item.op.source),
                routing: item.op.routing.take(),
                if_seq_no: item.op.if_seq_no,
                if_primary_term: item.op.if_primary_term,
                version: item.op.version,
                external_gte: item.op.external_gte,
            };
            results.push(apply_one(shared, &mut st, &mut item.index, op));
        }
    }

    let errors = results.iter().any(Result::is_err);
    let took = started.elapsed().as_millis();
    let out = match filter {
        Some(f) => write_response(took, errors, &items, &results, dialect, &Selection::new(f)),
        None => write_response(
            took,
            errors,
            &items,
            &results,
            dialect,
            &Selection::everything(),
        ),
    };
    Ok(out.into_bytes())
}

const ACTIONS: [&str; 4] = ["index", "create", "update", "delete"];
const FIELDS: [&str; 10] = [
    "_index",
    "_type",
    "_id",
    "_version",
    "result",
    "_shards",
    "_seq_no",
    "_primary_term",
    "status",
    "error",
];
const F_INDEX: usize = 0;
const F_TYPE: usize = 1;
const F_ID: usize = 2;
const F_VERSION: usize = 3;
const F_RESULT: usize = 4;
const F_SHARDS: usize = 5;
const F_SEQ_NO: usize = 6;
const F_TERM: usize = 7;
const F_STATUS: usize = 8;
const F_ERROR: usize = 9;

/// Which parts of the response `filter_path` keeps, decided once per request so that the
/// writer filters while it writes (no second pass over a parsed response).
pub(crate) struct Selection {
    took: bool,
    errors: bool,
    items: bool,
    /// Per action (in [`ACTIONS`] order): any of the item kept, and each field of [`FIELDS`].
    actions: [(bool, [Keep; FIELDS.len()]); ACTIONS.len()],
}

impl Selection {
    fn everything() -> Selection {
        Selection {
            took: true,
            errors: true,
            items: true,
            actions: std::array::from_fn(|_| (true, std::array::from_fn(|_| Keep::All))),
        }
    }

    /// For an include-only filter (see [`FilterPath::include_only`]).
    pub(crate) fn new(f: &FilterPath) -> Selection {
        Selection {
            took: f.pick(&["took"]).all(),
            errors: f.pick(&["errors"]).all(),
            items: f.pick(&["items"]).any(),
            actions: std::array::from_fn(|a| {
                let action = ACTIONS[a];
                (
                    f.pick(&["items", action]).any(),
                    std::array::from_fn(|i| f.pick(&["items", action, FIELDS[i]])),
                )
            }),
        }
    }
}

/// Writes `"name":` after a comma unless it is the first member.
fn key(out: &mut String, first: &mut bool, name: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// Writes an object member when the selection keeps some of it.
fn object_field(
    out: &mut String,
    first: &mut bool,
    name: &str,
    keep: &Keep,
    v: impl FnOnce() -> Value,
) {
    if !keep.any() {
        return;
    }
    if let Some(v) = keep.apply(v()) {
        key(out, first, name);
        out.push_str(&v.to_string());
    }
}

fn write_response(
    took: u128,
    errors: bool,
    items: &[ParsedItem],
    results: &[Result<Written, EsError>],
    dialect: &super::version::Dialect,
    sel: &Selection,
) -> String {
    let mut out = String::with_capacity(64 + items.len() * 160);
    out.push('{');
    let mut first = true;
    if sel.took {
        key(&mut out, &mut first, "took");
        let _ = write!(out, "{took}");
    }
    if sel.errors {
        key(&mut out, &mut first, "errors");
        let _ = write!(out, "{errors}");
    }
    if sel.items {
        let mark = out.len();
        key(&mut out, &mut first, "items");
        out.push('[');
        let mut any_item = false;
        for (item, res) in items.iter().zip(results) {
            let a = ACTIONS.iter().position(|x| *x == item.action).unwrap_or(0);
            let (any, fields) = &sel.actions[a];
            if !any {
                continue;
            }
            let item_mark = out.len();
            if any_item {
                out.push(',');
            }
            let _ = write!(out, "{{\"{}\":{{", item.action);
            let inner = out.len();
            let mut f = true;
            if fields[F_INDEX].all() {
                key(&mut out, &mut f, "_index");
                push_json_str(&mut out, &item.index);
            }
            if dialect.accepts_types() && fields[F_TYPE].all() {
                key(&mut out, &mut f, "_type");
                push_json_str(&mut out, item.op.type_name.as_deref().unwrap_or("_doc"));
            }
            if fields[F_ID].all() {
                key(&mut out, &mut f, "_id");
                push_json_str(&mut out, &item.op.id);
            }
            match res {
                Ok(w) => {
                    if fields[F_VERSION].all() {
                        key(&mut out, &mut f, "_version");
                        let _ = write!(out, "{}", w.version);
                    }
                    if fields[F_RESULT].all() {
                        key(&mut out, &mut f, "result");
                        let _ = write!(out, "\"{}\"", w.result);
                    }
                    let noop = w.result == "noop";
                    if fields[F_SHARDS].all() {
                        key(&mut out, &mut f, "_shards");
                        out.push_str(if noop {
                            "{\"total\":0,\"successful\":0,\"failed\":0}"
                        } else {
                            "{\"total\":2,\"successful\":1,\"failed\":0}"
                        });
                    } else {
                        object_field(&mut out, &mut f, "_shards", &fields[F_SHARDS], || {
                            let ok = u8::from(!noop);
                            serde_json::json!({"total": 2 * ok, "successful": ok, "failed": 0})
                        });
                    }
                    if fields[F_SEQ_NO].all() {
                        key(&mut out, &mut f, "_seq_no");
                        let _ = write!(out, "{}", w.seq_no);
                    }
                    if fields[F_TERM].all() {
                        key(&mut out, &mut f, "_primary_term");
                        let _ = write!(out, "{}", w.primary_term);
                    }
                    if fields[F_STATUS].all() {
                        key(&mut out, &mut f, "status");
                        let _ = write!(out, "{}", w.status);
                    }
                }
                Err(e) => {
                    if fields[F_STATUS].all() {
                        key(&mut out, &mut f, "status");
                        let _ = write!(out, "{}", e.status);
                    }
                    object_field(&mut out, &mut f, "error", &fields[F_ERROR], || e.cause());
                }
            }
            if out.len() == inner {
                // nothing of this item is kept
                out.truncate(item_mark);
                continue;
            }
            out.push_str("}}");
            any_item = true;
        }
        if any_item {
            out.push(']');
        } else {
            // no item kept: no `items` member (the last member, so `first` needs no repair)
            out.truncate(mark);
        }
    }
    out.push('}');
    out
}

/// The error a configured failing id gets.
pub(crate) fn mapping_failure(id: &str) -> EsError {
    EsError::new(
        400,
        "mapper_parsing_exception",
        format!("failed to parse document with id '{id}' (testkit: id configured to fail)"),
    )
    .with(
        "caused_by",
        serde_json::json!({"type": "illegal_argument_exception", "reason": "injected mapping failure"}),
    )
}

/// Applies one write: resolves the target (creating the index if allowed), assigns an id.
pub(crate) fn apply_one(
    shared: &Shared,
    st: &mut State,
    index: &mut String,
    mut op: WriteOp,
) -> Result<Written, EsError> {
    // fast path: a concrete index (no allocation); else a data stream, an alias, or a
    // new index
    if !st.indices.contains_key(index.as_str()) {
        if !st.data_streams.contains_key(index.as_str())
            && st.write_target(index)?.is_none()
            && shared.config.auto_create_index
            && st.stream_template_for(index, &shared.dialect)
        {
            // A write to a new name that an index template with a `data_stream` section
            // matches creates the data stream (and only `create` may do so).
            if !matches!(op.kind, super::state::OpKind::Create) {
                return Err(EsError::bad_request(format!(
                    "only write ops with an op_type of create are allowed in data streams (data stream [{index}])"
                )));
            }
            st.create_data_stream(index, &shared.dialect)?;
        }
        st.check_data_stream_write(index, &op)?;
        match st.write_target(index)? {
            Some(t) => *index = t,
            None if shared.config.auto_create_index => {
                st.create_index(index, &Value::Null, &shared.dialect, None)?;
            }
            None => return Err(EsError::index_not_found(index)),
        }
    }
    if op.id.is_empty() {
        op.id = st.next_auto_id();
    }
    let idx = st
        .indices
        .get_mut(index.as_str())
        .ok_or_else(|| EsError::index_not_found(index))?;
    idx.apply(index, op, shared.config.discard_documents, &shared.dialect)
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    if s.bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f)
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
    }
}
