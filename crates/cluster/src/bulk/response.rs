//! Per-item results of a `_bulk` response, classified as success, retry or terminal failure.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    items: Vec<WireItem<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireItem<'a> {
    #[serde(borrow)]
    Index(WireResult<'a>),
    #[serde(borrow)]
    Create(WireResult<'a>),
    #[serde(borrow)]
    Update(WireResult<'a>),
    #[serde(borrow)]
    Delete(WireResult<'a>),
}

#[derive(Deserialize)]
struct WireResult<'a> {
    #[serde(default)]
    status: u16,
    #[serde(rename = "_id", borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<Value>,
}

/// What happened to one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemResult {
    Indexed,
    /// An error whose type the caller counts as success.
    Accepted,
    Retry(ItemError),
    Fail(ItemError),
}

/// Why the target refused one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemError {
    /// HTTP status of the item (0 when the document was refused before sending).
    pub status: u16,
    pub error_type: String,
    pub reason: String,
}

/// Error types worth another try even when the status does not say so.
const RETRYABLE_TYPES: &[&str] = &[
    "es_rejected_execution_exception",
    "opensearch_rejected_execution_exception",
    "circuit_breaking_exception",
    "unavailable_shards_exception",
    "no_shard_available_action_exception",
    "node_not_connected_exception",
    "node_closed_exception",
    "connect_transport_exception",
    "process_cluster_event_timeout_exception",
    "receive_timeout_transport_exception",
];

pub(crate) fn is_retryable_item(status: u16, error_type: &str) -> bool {
    status == 429
        || status >= 500
        || RETRYABLE_TYPES.contains(&error_type)
        || error_type.ends_with("timeout_exception")
}

/// Parse a 2xx `_bulk` body whose items must answer `ids` in order; an id flagged `once`
/// was a create-if-absent, whose version conflict means the document is there.
///
/// Why a bulk response cannot be matched to the documents sent (their attempts are retried).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResponseError {
    #[error("invalid bulk response: {0}")]
    Json(serde_json::Error),
    #[error("bulk response has {items} items for {sent} documents")]
    Count { items: usize, sent: usize },
    #[error("bulk response item for id {got:?} where {sent:?} was sent")]
    Id { got: String, sent: String },
}

/// `no_deletes`: the request held no delete. Then a body that says `"errors": false`
/// before its items, with one `"status":` per document, is taken as every document
/// indexed without parsing the items (a delete of a missing document is no error but is
/// counted apart, so bodies with deletes are always parsed). This is the answer to almost
/// every request, and parsing its items cost a tenth of a worker's CPU. `check_ids`: each
/// item's `_id` must be the one sent (off when the target generates ids: the answer then
/// names the new id, matched by position).
pub(crate) fn parse<'i>(
    body: &[u8],
    ids: impl ExactSizeIterator<Item = (&'i str, bool)>,
    no_deletes: bool,
    check_ids: bool,
    accept: &[String],
) -> Result<Vec<ItemResult>, ResponseError> {
    if no_deletes && all_indexed(body, ids.len()) {
        return Ok(vec![ItemResult::Indexed; ids.len()]);
    }
    let wire: Wire<'_> = serde_json::from_slice(body).map_err(ResponseError::Json)?;
    if wire.items.len() != ids.len() {
        return Err(ResponseError::Count {
            items: wire.items.len(),
            sent: ids.len(),
        });
    }
    let mut out = Vec::with_capacity(wire.items.len());
    for (item, (id, once)) in wire.items.into_iter().zip(ids) {
        let (r, delete) = match item {
            WireItem::Index(r) | WireItem::Create(r) | WireItem::Update(r) => (r, false),
            WireItem::Delete(r) => (r, true),
        };
        if let (true, Some(got)) = (check_ids, &r.id) {
            if got != id {
                return Err(ResponseError::Id {
                    got: got.to_string(),
                    sent: id.to_string(),
                });
            }
        }
        // Deleting a document that is not there leaves the target as asked.
        if delete && r.status == 404 {
            out.push(ItemResult::Accepted);
            continue;
        }
        // Creating a document that is already there (a retry, a re-run) leaves it as asked.
        let conflict = r
            .error
            .as_ref()
            .and_then(|e| e.get("type"))
            .and_then(Value::as_str)
            == Some("version_conflict_engine_exception");
        if once && r.status == 409 && conflict {
            out.push(ItemResult::Accepted);
            continue;
        }
        out.push(classify(r.status, r.error.as_ref(), accept));
    }
    Ok(out)
}

/// Whether a 2xx `_bulk` body for `sent` documents, none of them a delete, says every
/// document was indexed: `"errors": false` before its items, and one `"status":` per
/// document (a body with another count is parsed, and refused as not matching). What
/// [`parse`] takes as every document indexed without reading the items.
pub(crate) fn all_indexed(body: &[u8], sent: usize) -> bool {
    top_level_errors(body) == Some(false)
        && memchr::memmem::find_iter(body, b"\"status\":").count() == sent
}

/// The top-level `errors` flag of a bulk response, when it comes before `items` and
/// every member before it is a plain scalar (as Elasticsearch and OpenSearch write it:
/// `{"took":3,"errors":false,"items":[…]}`); `None` otherwise.
fn top_level_errors(body: &[u8]) -> Option<bool> {
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while body.get(*i).is_some_and(|b| b.is_ascii_whitespace()) {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if body.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        skip_ws(&mut i);
        // A key without escapes.
        if body.get(i) != Some(&b'"') {
            return None;
        }
        let start = i + 1;
        let len = memchr::memchr2(b'"', b'\\', body.get(start..)?)?;
        if body[start + len] != b'"' {
            return None;
        }
        let key = &body[start..start + len];
        i = start + len + 1;
        skip_ws(&mut i);
        if body.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        skip_ws(&mut i);
        let rest = body.get(i..)?;
        if key == b"errors" {
            return if rest.starts_with(b"false") {
                Some(false)
            } else if rest.starts_with(b"true") {
                Some(true)
            } else {
                None
            };
        }
        if key == b"items" {
            return None;
        }
        // A number, `true`, `false` or `null` (`took`, `ingest_took`): up to the next
        // separator. Anything else (strings, objects, arrays) ends the search.
        let n = rest
            .iter()
            .position(|&b| b == b',' || b == b'}' || b.is_ascii_whitespace())?;
        if n == 0
            || !rest[..n]
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        {
            return None;
        }
        i += n;
        skip_ws(&mut i);
        match body.get(i) {
            Some(b',') => i += 1,
            _ => return None,
        }
    }
}

fn classify(status: u16, error: Option<&Value>, accept: &[String]) -> ItemResult {
    if (200..300).contains(&status) && error.is_none() {
        return ItemResult::Indexed;
    }
    let (error_type, reason) = match error {
        Some(Value::Object(e)) => (
            e.get("type")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_owned(),
            e.get("reason")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| Value::Object(e.clone()).to_string()),
        ),
        Some(Value::String(s)) => {
            // ES 1.x/2.x: "MapperParsingException[failed to parse]".
            let ty = s.split('[').next().unwrap_or("unknown").to_owned();
            (ty, s.clone())
        }
        Some(other) => ("unknown".to_owned(), other.to_string()),
        None => (
            "unknown".to_owned(),
            format!("status {status} without error"),
        ),
    };
    if accept.contains(&error_type) {
        return ItemResult::Accepted;
    }
    let e = ItemError {
        status,
        error_type,
        reason,
    };
    if is_retryable_item(status, &e.error_type) {
        ItemResult::Retry(e)
    } else {
        ItemResult::Fail(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_items() {
        let body = br#"{"took":3,"errors":true,"items":[
            {"index":{"_index":"i","_id":"1","_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":201}},
            {"create":{"_index":"i","_id":"2","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[2]: version conflict"}}},
            {"index":{"_index":"i","_id":"3","status":429,"error":{"type":"es_rejected_execution_exception","reason":"rejected"}}},
            {"index":{"_index":"i","_id":"4","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [n]"}}},
            {"index":{"_index":"i","_id":"5","status":503,"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"}}},
            {"index":{"_index":"i","_id":"a\"b","status":200}},
            {"index":{"_index":"i","_id":"7","status":400,"error":"MapperParsingException[failed]"}}
        ]}"#;
        let ids = ["1", "2", "3", "4", "5", "a\"b", "7"];
        let accept = vec!["version_conflict_engine_exception".to_string()];
        let r = parse(body, ids.iter().map(|&i| (i, false)), true, true, &accept).unwrap();
        assert_eq!(r[0], ItemResult::Indexed);
        assert_eq!(r[1], ItemResult::Accepted);
        assert!(matches!(&r[2], ItemResult::Retry(e) if e.status == 429));
        assert_eq!(
            r[3],
            ItemResult::Fail(ItemError {
                status: 400,
                error_type: "mapper_parsing_exception".into(),
                reason: "failed to parse field [n]".into()
            })
        );
        assert!(
            matches!(&r[4], ItemResult::Retry(e) if e.error_type == "unavailable_shards_exception")
        );
        assert_eq!(r[5], ItemResult::Indexed);
        assert!(matches!(&r[6], ItemResult::Fail(e) if e.error_type == "MapperParsingException"));

        let deletes = br#"{"items":[{"delete":{"_id":"1","status":404,"result":"not_found"}},{"delete":{"_id":"2","status":200}}]}"#;
        let r = parse(
            deletes,
            [("1", false), ("2", false)].into_iter(),
            false,
            true,
            &[],
        )
        .unwrap();
        assert_eq!(r, vec![ItemResult::Accepted, ItemResult::Indexed]);

        let r = parse(body, ids.iter().map(|&i| (i, false)), true, true, &[]).unwrap();
        assert!(matches!(&r[1], ItemResult::Fail(e) if e.status == 409));
        // A create-if-absent (BulkAction::Create) that finds its document is delivered,
        // whatever the accept list.
        let r = parse(body, ids.iter().map(|&i| (i, i == "2")), true, true, &[]).unwrap();
        assert_eq!(r[1], ItemResult::Accepted);
    }

    #[test]
    fn reads_the_top_level_errors_flag() {
        assert_eq!(
            top_level_errors(br#"{"took":3,"errors":false,"items":[]}"#),
            Some(false)
        );
        assert_eq!(
            top_level_errors(b" {\n \"errors\" : true , \"items\": []}"),
            Some(true)
        );
        assert_eq!(
            top_level_errors(br#"{"took":3,"ingest_took":-1,"errors":false}"#),
            Some(false)
        );
        // Items first, a nested or string member before it, escapes, garbage: not known.
        assert_eq!(top_level_errors(br#"{"items":[],"errors":false}"#), None);
        assert_eq!(
            top_level_errors(br#"{"x":{"errors":false},"errors":true}"#),
            None
        );
        assert_eq!(top_level_errors(br#"{"x":"a","errors":false}"#), None);
        assert_eq!(top_level_errors(br#"{"err\u006frs":false}"#), None);
        assert_eq!(top_level_errors(br#"{"errors":fals"#), None);
        assert_eq!(top_level_errors(b"<html>"), None);
        assert_eq!(top_level_errors(b""), None);
        assert_eq!(top_level_errors(br#"{"took":"#), None);
    }

    #[test]
    fn a_body_without_errors_is_read_without_its_items() {
        // Every document indexed: the items are counted, not parsed (the ids do not match
        // and would be refused by a full parse).
        let body = br#"{"took":1,"errors":false,"items":[{"index":{"_id":"x","status":201}},{"index":{"_id":"y","status":200}}]}"#;
        let r = parse(
            body,
            [("1", false), ("2", false)].into_iter(),
            true,
            true,
            &[],
        )
        .unwrap();
        assert_eq!(r, vec![ItemResult::Indexed, ItemResult::Indexed]);
        // With deletes in the request, the items are parsed.
        assert!(parse(
            body,
            [("1", false), ("2", false)].into_iter(),
            false,
            true,
            &[]
        )
        .is_err());
        // One "status" per document or the items are parsed.
        let short = br#"{"errors":false,"items":[{"index":{"_id":"1","status":201}}]}"#;
        assert!(parse(
            short,
            [("1", false), ("2", false)].into_iter(),
            true,
            true,
            &[]
        )
        .unwrap_err()
        .to_string()
        .contains("1 items for 2"));
        // errors: true is always parsed item by item.
        let failed = br#"{"errors":true,"items":[{"index":{"_id":"1","status":400,"error":{"type":"mapper_parsing_exception","reason":"r"}}}]}"#;
        // What the sender takes as every document indexed, without a per-item result.
        assert!(all_indexed(body, 2));
        assert!(!all_indexed(body, 3));
        assert!(!all_indexed(short, 2));
        assert!(!all_indexed(failed, 1));
        assert!(!all_indexed(
            br#"{"items":[{"index":{"status":201}}],"errors":false}"#,
            1
        ));
        let r = parse(failed, [("1", false)].into_iter(), true, true, &[]).unwrap();
        assert!(matches!(&r[0], ItemResult::Fail(e) if e.status == 400));
    }

    #[test]
    fn rejects_mismatched_responses() {
        let body = br#"{"errors":false,"items":[{"index":{"_id":"1","status":201}}]}"#;
        assert!(parse(
            body,
            [("1", false), ("2", false)].into_iter(),
            true,
            true,
            &[]
        )
        .unwrap_err()
        .to_string()
        .contains("1 items for 2"));
        // The target generated the ids: matched by position.
        assert!(parse(body, [("9", false)].into_iter(), false, false, &[]).is_ok());
        assert!(parse(body, [("9", false)].into_iter(), false, true, &[])
            .unwrap_err()
            .to_string()
            .contains("\"9\""));
        assert!(parse(b"<html>", [("1", false)].into_iter(), true, true, &[]).is_err());
        // filter_path responses carry only what was asked for.
        let body = br#"{"errors":false,"items":[{"index":{"status":201}}]}"#;
        assert_eq!(
            parse(body, [("1", false)].into_iter(), true, true, &[]).unwrap(),
            vec![ItemResult::Indexed]
        );
    }
}
