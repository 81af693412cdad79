//! Every id of a cluster's index, ids only: a scroll sorted by `_doc` (the cheapest order,
//! every version from Elasticsearch 5 and OpenSearch 1 has it) with `_source: false`, so
//! no document body is fetched, page after page, cleared at the end. A page answered with
//! a failed shard (`_shards.failed` > 0: that shard's hits left out) fails the listing,
//! and the ids listed must number the scroll's own `hits.total` (a number before
//! Elasticsearch 7, `{value, relation: "eq"}` after: scrolls count exactly), so a listing
//! that lost a page is an error, never ids reported missing. [`sources`] walks the same
//! scroll with `_source`, for a verify by content (a target that generated the ids).

use cluster::{encode_segment, Client, ClusterError, Method};
use serde::Deserialize;
use serde_json::{json, Value};

use engine::lookup::ids::IdRuns;

/// Hits per scroll page (the default `index.max_result_window` allows 10 000).
const PAGE: u32 = 5000;
const KEEP_ALIVE: &str = "2m";

#[derive(Deserialize)]
struct Page {
    #[serde(rename = "_scroll_id", default)]
    scroll_id: Option<String>,
    #[serde(rename = "_shards", default)]
    shards: Option<Shards>,
    hits: Hits,
}

#[derive(Deserialize)]
struct Shards {
    #[serde(default)]
    failed: u64,
}

#[derive(Deserialize)]
struct Hits {
    #[serde(default)]
    total: Option<Value>,
    #[serde(default)]
    hits: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(rename = "_id")]
    id: String,
    #[serde(rename = "_source", default)]
    source: Option<Box<serde_json::value::RawValue>>,
}

/// What each hit of the scroll is given to.
enum Each<'a> {
    Id(&'a mut IdRuns),
    Source(&'a mut (dyn FnMut(&[u8]) + Send)),
}

/// Why a listing failed.
pub(super) enum ListError {
    Cluster(ClusterError),
    Answer(String),
    Spill(std::io::Error),
}

impl From<ClusterError> for ListError {
    fn from(e: ClusterError) -> Self {
        ListError::Cluster(e)
    }
}

/// Lists every id of `index` into `into`; returns how many were listed.
pub(super) async fn list(
    client: &Client,
    index: &str,
    into: &mut IdRuns,
) -> Result<u64, ListError> {
    walk(client, index, Each::Id(into)).await
}

/// Hands the `_source` of every document of `index` to `each`; returns how many. A hit
/// without `_source` (a mapping that disables it) fails the walk: there is no content to
/// count it by.
pub(super) async fn sources(
    client: &Client,
    index: &str,
    each: &mut (dyn FnMut(&[u8]) + Send),
) -> Result<u64, ListError> {
    walk(client, index, Each::Source(each)).await
}

async fn walk(client: &Client, index: &str, mut each: Each<'_>) -> Result<u64, ListError> {
    let path = format!("/{}/_search?scroll={KEEP_ALIVE}", encode_segment(index));
    let body = json!({
        "size": PAGE,
        "_source": matches!(each, Each::Source(_)),
        "sort": ["_doc"],
        "query": {"match_all": {}},
    });
    let mut scroll_id: Option<String> = None;
    let result = pages(client, index, &path, &body, &mut scroll_id, &mut each).await;
    if let Some(id) = scroll_id {
        let body = json!({ "scroll_id": [id] });
        if let Err(e) = client
            .request(Method::DELETE, "/_search/scroll", Some(&body))
            .await
        {
            tracing::debug!(index, "clearing the id scroll: {e}");
        }
    }
    result
}

async fn pages(
    client: &Client,
    index: &str,
    path: &str,
    body: &Value,
    scroll_id: &mut Option<String>,
    each: &mut Each<'_>,
) -> Result<u64, ListError> {
    let mut listed = 0u64;
    let mut total: Option<u64> = None;
    loop {
        let r = match scroll_id.as_deref() {
            None => client.request(Method::POST, path, Some(body)).await?,
            Some(id) => {
                let b = json!({"scroll": KEEP_ALIVE, "scroll_id": id});
                client
                    .request(Method::POST, "/_search/scroll", Some(&b))
                    .await?
            }
        };
        let page: Page = r.error_for_status()?.json()?;
        if let Some(failed) = page.shards.as_ref().map(|s| s.failed).filter(|f| *f > 0) {
            return Err(ListError::Answer(format!(
                "{index}: listing ids, {failed} shard(s) failed: their ids would be missing"
            )));
        }
        if total.is_none() {
            total = Some(exact_total(page.hits.total.as_ref()).ok_or_else(|| {
                ListError::Answer(format!("{index}: the id scroll gave no exact hits.total"))
            })?);
        }
        if page.scroll_id.is_some() {
            *scroll_id = page.scroll_id;
        }
        if page.hits.hits.is_empty() {
            break;
        }
        for h in page.hits.hits {
            listed += 1;
            match each {
                Each::Id(into) => into.push(h.id).map_err(ListError::Spill)?,
                Each::Source(f) => match &h.source {
                    Some(raw) => f(raw.get().as_bytes()),
                    None => {
                        return Err(ListError::Answer(format!(
                            "{index}: document {} came back without _source: nothing to \
                             compare its content by",
                            h.id
                        )))
                    }
                },
            }
        }
        if scroll_id.is_none() {
            return Err(ListError::Answer(format!(
                "{index}: a scroll page without _scroll_id"
            )));
        }
    }
    match total {
        Some(t) if t == listed => Ok(listed),
        t => Err(ListError::Answer(format!(
            "{index}: the id scroll counts {} hits but {listed} ids were listed",
            t.unwrap_or(0)
        ))),
    }
}

/// A number (before Elasticsearch 7) or `{value, relation: "eq"}`.
fn exact_total(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::Object(o) if o.get("relation").and_then(Value::as_str) == Some("eq") => {
            o.get("value").and_then(Value::as_u64)
        }
        _ => None,
    }
}
