//! Scroll: `POST /IDX/_search?scroll=KEEP` opens a context holding every hit of the search
//! as the documents are then (sliced by `slice: {id, max}` as the point in time is, a stable
//! hash of `_id`), `/_search/scroll` pages through it, `DELETE /_search/scroll` clears it.
//!
//! The scroll id is read from the path, the `scroll_id` parameter, a JSON body
//! (`{"scroll": "1m", "scroll_id": "…"}`) or — Elasticsearch ≤ 6 only — a plain-text body.
//! A context not used for its keep-alive is gone: its id is answered 404
//! `search_context_missing_exception` (inside `search_phase_execution_exception`, as
//! Elasticsearch answers it), and so is one expired by [`Faults::expire_scrolls`].

use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use base64::Engine;

#[allow(unused_imports)]
use super::*;
use crate::server::state::{PageOpts, Scroll, ScrollHit};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE;

/// Stores a new scroll context over `hits` and answers its first page.
pub(super) fn open(
    c: &Ctx<'_>,
    mut st: MutexGuard<'_, State>,
    hits: Vec<ScrollHit>,
    size: usize,
    keep: Duration,
    opts: PageOpts,
) -> Result<Resp, EsError> {
    let mut hits = hits;
    let lost_shard = c.shared.take_scroll_shard_failure();
    if lost_shard {
        // one shard of five failed: its documents are in neither the hits nor the total
        hits.retain(|h| lost_shard_of(&h.id) != 0);
    }
    let now = Instant::now();
    st.scrolls.retain(|_, s| s.expires > now);
    st.uuid_counter += 1;
    let id = B64.encode(format!("scroll-{}", st.uuid_counter));
    st.scrolls.insert(
        id.clone(),
        Scroll {
            hits,
            next: 0,
            size,
            expires: now + keep,
            opts,
        },
    );
    page(c, &mut st, &id, lost_shard)
}

/// Which of five shards the faults [`Faults::scroll_shard_failures`] and
/// [`Faults::pit_shard_failures`] place a document in; shard 0 is the one that fails.
pub(super) fn lost_shard_of(id: &str) -> u64 {
    let mut h: u64 = 0x8422_2325_cbf2_9ce4;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h >> 17) % 5
}

/// Answers the next page of a scroll context (`GET|POST /_search/scroll[/ID]`).
pub(super) fn next(c: &Ctx<'_>, path_id: Option<&str>) -> Result<Resp, EsError> {
    let (ids, keep) = request(c, path_id, Use::Next)?;
    let [id] = ids.as_slice() else {
        return Err(EsError::bad_request("Cannot parse scroll id"));
    };
    let n = context_number(id)?;
    let mut st = c.state();
    let now = Instant::now();
    st.scrolls.retain(|_, s| s.expires > now);
    if st.scrolls.contains_key(id) && c.shared.take_scroll_expiry() {
        st.scrolls.remove(id);
    }
    let Some(s) = st.scrolls.get_mut(id) else {
        return Err(missing(n));
    };
    if let Some(k) = keep {
        s.expires = now + k;
    }
    page(c, &mut st, id, false)
}

/// Clears scroll contexts (`DELETE /_search/scroll[/IDS]`, `_all` for every one).
pub(super) fn clear(c: &Ctx<'_>, path_ids: Option<&str>) -> Result<Resp, EsError> {
    let (ids, _) = request(c, path_ids, Use::Clear)?;
    let mut st = c.state();
    let freed = if ids.iter().any(|i| i == "_all") {
        let n = st.scrolls.len();
        st.scrolls.clear();
        n
    } else {
        for id in &ids {
            context_number(id)?;
        }
        ids.iter()
            .filter(|id| st.scrolls.remove(id.as_str()).is_some())
            .count()
    };
    let status = if freed == 0 { 404 } else { 200 };
    c.ok(status, json!({"succeeded": true, "num_freed": freed}))
}

/// The next `size` hits of the context `id` (present), moving it on.
fn page(c: &Ctx<'_>, st: &mut State, id: &str, lost_shard: bool) -> Result<Resp, EsError> {
    let s = st
        .scrolls
        .get_mut(id)
        .expect("the caller checked the context");
    let from = s.next;
    s.next = (from + s.size).min(s.hits.len());
    let to = s.next;
    let st = &*st;
    let s = &st.scrolls[id];
    let page = s.hits[from..to]
        .iter()
        .map(|h| {
            let view = HitView {
                index: &h.index,
                id: &h.id,
                doc: &h.doc,
                source: None,
                sort: &h.sort,
            };
            render_hit(c, st, &view, &s.opts)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let total = s.hits.len();
    // A scroll always counts its hits exactly.
    let total = if c.shared.dialect.typed() || c.flag("rest_total_hits_as_int") == Some(true) {
        json!(total)
    } else {
        json!({"value": total, "relation": "eq"})
    };
    let max_score = if s.opts.sorted || s.hits.is_empty() {
        Value::Null
    } else {
        json!(1.0)
    };
    let shards = if lost_shard {
        failed_shard_header(s.hits.first().map(|h| h.index.as_str()))
    } else {
        shards_header()
    };
    c.ok(
        200,
        json!({
            "_scroll_id": id,
            "took": 1,
            "timed_out": false,
            "_shards": shards,
            "hits": {"total": total, "max_score": max_score, "hits": page},
        }),
    )
}

/// The `_shards` header of a search in which shard 0 of five failed (of `index`, when
/// known), as a real cluster answers 200 with the other shards' hits.
pub(super) fn failed_shard_header(index: Option<&str>) -> Value {
    json!({"total": 5, "successful": 4, "skipped": 0, "failed": 1, "failures": [{
        "shard": 0,
        "index": index,
        "node": "testkit",
        "reason": {"type": "node_disconnected_exception", "reason": "[testkit] disconnected"},
    }]})
}

/// Which request names scroll ids: a continuation (one id, `scroll_id` a string in a JSON
/// body) or a clear (any number, `scroll_id` an array — or a string since ES 5.5).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Next,
    Clear,
}

/// The scroll ids and keep-alive a continuation or clear request names. As the real servers
/// read them: the path or `scroll_id` parameter, replaced by the body's when it has one.
fn request(
    c: &Ctx<'_>,
    path: Option<&str>,
    what: Use,
) -> Result<(Vec<String>, Option<Duration>), EsError> {
    let mut keep = c.q("scroll").map(str::to_string);
    let split = |s: &str| {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let mut ids: Vec<String> = path.or(c.q("scroll_id")).map(split).unwrap_or_default();
    let text = std::str::from_utf8(&c.body).unwrap_or("").trim();
    if !text.is_empty() {
        if text.starts_with('{') {
            ids = body_ids(c, what, &mut keep)?;
        } else if c.shared.dialect.typed() {
            // Elasticsearch 5 and 6 still take the bare id (a clear: ids, comma-separated)
            // as the body.
            ids = match what {
                Use::Next => vec![text.to_string()],
                Use::Clear => split(text),
            };
        } else {
            return Err(EsError::parse(
                "request body is not valid JSON (a plain-text scroll id is not accepted since 7.0)",
            ));
        }
    }
    if ids.is_empty() {
        let missing = match what {
            Use::Next => "scrollId is missing",
            Use::Clear => "no scroll ids specified",
        };
        return Err(EsError::new(
            400,
            "action_request_validation_exception",
            format!("Validation Failed: 1: {missing};"),
        ));
    }
    let keep = keep.as_deref().map(keep_alive).transpose()?;
    Ok((ids, keep))
}

/// The ids of a JSON body: `{"scroll_id": "…", "scroll": "1m"}` for a continuation,
/// `{"scroll_id": ["…"]}` for a clear; any other key or form is refused, as the real
/// servers refuse it.
fn body_ids(c: &Ctx<'_>, what: Use, keep: &mut Option<String>) -> Result<Vec<String>, EsError> {
    let body = c.json()?;
    let Some(fields) = body.as_object() else {
        return Err(EsError::bad_request(
            "Malformed content, must start with an object",
        ));
    };
    let wrong = |key: &str, token: &str| {
        EsError::bad_request(format!(
            "Unknown parameter [{key}] in request body or parameter is of the wrong type[{token}] "
        ))
    };
    let token = |v: &Value| match v {
        Value::String(_) => "VALUE_STRING",
        Value::Array(_) => "START_ARRAY",
        Value::Object(_) => "START_OBJECT",
        Value::Number(_) => "VALUE_NUMBER",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Null => "VALUE_NULL",
    };
    let mut ids = Vec::new();
    for (k, v) in fields {
        match (what, k.as_str(), v) {
            (Use::Next, "scroll_id", Value::String(s)) => ids = vec![s.clone()],
            (Use::Next, "scroll", Value::String(s)) => *keep = Some(s.clone()),
            (Use::Clear, "scroll_id", Value::Array(a)) => {
                for i in a {
                    match i {
                        Value::String(s) => ids.push(s.clone()),
                        _ => {
                            return Err(EsError::bad_request(
                                "scroll_id array element should only contain scroll_id",
                            ))
                        }
                    }
                }
            }
            (Use::Clear, "scroll_id", Value::String(s))
                if c.shared.dialect.clear_scroll_string_id() =>
            {
                ids.push(s.clone())
            }
            _ => return Err(wrong(k, token(v))),
        }
    }
    Ok(ids)
}

/// The context number inside a scroll id; a 400 for anything this server did not hand out.
fn context_number(id: &str) -> Result<u64, EsError> {
    B64.decode(id)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.strip_prefix("scroll-").and_then(|n| n.parse().ok()))
        .ok_or_else(|| EsError::bad_request("Cannot parse scroll id"))
}

/// The answer to a scroll id whose context is gone.
fn missing(n: u64) -> EsError {
    all_shards_failed(
        404,
        "search_context_missing_exception",
        &format!("No search context found for id [{n}]"),
    )
}

/// A search every shard of which failed with `kind`: `search_phase_execution_exception`
/// with the shard's failure as its root cause and `status` taken from it, as the real
/// servers answer an error raised on the shards (an expired context, a limit of an index
/// setting).
pub(super) fn all_shards_failed(status: u16, kind: &str, reason: &str) -> EsError {
    let cause = json!({"type": kind, "reason": reason});
    EsError::new(
        status,
        "search_phase_execution_exception",
        "all shards failed",
    )
    .with("phase", "query")
    .with("grouped", true)
    .with(
        "failed_shards",
        json!([{"shard": -1, "index": null, "reason": cause.clone()}]),
    )
    .with("root_cause", json!([cause.clone()]))
    .with("caused_by", cause)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{json, Value};

    use crate::server::{Faults, ServerConfig, TestServer};

    struct Http {
        base: String,
        client: reqwest::blocking::Client,
    }

    impl Http {
        fn new(server: &TestServer) -> Http {
            Http {
                base: server.url(),
                client: reqwest::blocking::Client::new(),
            }
        }

        fn send(&self, method: reqwest::Method, path: &str, body: Option<String>) -> (u16, Value) {
            let mut r = self.client.request(method, format!("{}{path}", self.base));
            if let Some(b) = body {
                r = r.header("content-type", "application/json").body(b);
            }
            let r = r.send().unwrap();
            let status = r.status().as_u16();
            (status, r.json().unwrap())
        }

        fn post(&self, path: &str, body: Value) -> (u16, Value) {
            self.send(reqwest::Method::POST, path, Some(body.to_string()))
        }

        /// `n` documents `0..n` into `index` (typed `doc` when `typed`).
        fn load(&self, index: &str, n: usize, typed: bool) {
            let mut body = String::new();
            for i in 0..n {
                let mut meta = json!({"index": {"_index": index, "_id": i.to_string()}});
                if typed {
                    meta["index"]["_type"] = json!("doc");
                }
                body.push_str(&format!("{meta}\n{}\n", json!({"n": i})));
            }
            let r = self
                .client
                .post(format!("{}/_bulk", self.base))
                .header("content-type", "application/x-ndjson")
                .body(body)
                .send()
                .unwrap();
            assert!(r.status().is_success());
            let v: Value = r.json().unwrap();
            assert_eq!(v["errors"], false, "{v}");
        }
    }

    fn ids(page: &Value) -> Vec<String> {
        page["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_id"].as_str().unwrap().to_string())
            .collect()
    }

    fn root_cause(v: &Value) -> &str {
        v["error"]["root_cause"][0]["type"].as_str().unwrap_or("")
    }

    /// Elasticsearch 6.8: three slices of a scroll partition the index, pages follow in
    /// `_doc` order by the JSON and the plain-text continuation, `hits.total` is the slice's
    /// count as a number, writes after the opening are not seen, and a cleared context is gone.
    #[test]
    fn es6_sliced_scroll_partitions_the_index_as_of_its_opening() {
        let server = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
        let http = Http::new(&server);
        http.load("s", 100, true);
        let mut seen = BTreeSet::new();
        let mut contexts = Vec::new();
        let mut firsts = Vec::new();
        for slice in 0..3 {
            let body = json!({"size": 7, "sort": ["_doc"], "slice": {"id": slice, "max": 3},
                              "query": {"match_all": {}}});
            let (status, first) = http.post("/s/_search?scroll=1m", body);
            assert_eq!(status, 200, "{first}");
            firsts.push(first);
        }
        // written after the scrolls opened: not part of them
        http.load("s", 120, true);
        assert_eq!(http.send(reqwest::Method::DELETE, "/s/doc/0", None).0, 200);
        for first in firsts {
            let total = first["hits"]["total"].as_u64().expect("a number on ES 6");
            let id = first["_scroll_id"].as_str().unwrap().to_string();
            assert_eq!(first["hits"]["hits"][0]["_type"], "doc", "{first}");
            let mut got = ids(&first);
            let mut sorts = Vec::new();
            for h in first["hits"]["hits"].as_array().unwrap() {
                sorts.push(h["sort"][0].as_u64().unwrap());
            }
            let mut plain = true;
            loop {
                let (status, page) = if plain {
                    // Elasticsearch 6 still takes the bare id as a plain-text body
                    plain = false;
                    http.send(
                        reqwest::Method::POST,
                        "/_search/scroll?scroll=1m",
                        Some(id.clone()),
                    )
                } else {
                    http.post("/_search/scroll", json!({"scroll": "1m", "scroll_id": id}))
                };
                assert_eq!(status, 200, "{page}");
                assert_eq!(page["hits"]["total"], total);
                assert_eq!(page["_scroll_id"], id.as_str());
                if ids(&page).is_empty() {
                    break;
                }
                for h in page["hits"]["hits"].as_array().unwrap() {
                    sorts.push(h["sort"][0].as_u64().unwrap());
                }
                got.extend(ids(&page));
            }
            assert!(sorts.windows(2).all(|w| w[0] < w[1]), "{sorts:?}");
            assert_eq!(got.len() as u64, total);
            for i in &got {
                assert!(i.parse::<usize>().unwrap() < 100, "{i} was written later");
                assert!(seen.insert(i.clone()), "{i} in two slices");
            }
            contexts.push(id);
        }
        assert_eq!(seen.len(), 100);
        // Clearing: by JSON body (an array), then by path; each freed once.
        let (status, v) = http.send(
            reqwest::Method::DELETE,
            "/_search/scroll",
            Some(json!({"scroll_id": [contexts[0]]}).to_string()),
        );
        assert_eq!((status, v["num_freed"].as_u64()), (200, Some(1)), "{v}");
        let (status, v) = http.send(
            reqwest::Method::DELETE,
            &format!("/_search/scroll/{}", contexts[1]),
            None,
        );
        assert_eq!((status, v["num_freed"].as_u64()), (200, Some(1)), "{v}");
        let (status, v) = http.send(
            reqwest::Method::DELETE,
            "/_search/scroll",
            Some(json!({"scroll_id": contexts[0]}).to_string()),
        );
        assert_eq!((status, v["num_freed"].as_u64()), (404, Some(0)), "{v}");
        let (status, v) = http.post(
            "/_search/scroll",
            json!({"scroll": "1m", "scroll_id": contexts[0]}),
        );
        assert_eq!(status, 404, "{v}");
        assert_eq!(root_cause(&v), "search_context_missing_exception", "{v}");
        let (status, v) = http.send(reqwest::Method::DELETE, "/_search/scroll/_all", None);
        assert_eq!((status, v["num_freed"].as_u64()), (200, Some(1)), "{v}");
        // An id this server never handed out cannot be parsed.
        let (status, v) = http.post("/_search/scroll", json!({"scroll_id": "bogus"}));
        assert_eq!(status, 400, "{v}");
    }

    /// Elasticsearch 7.9: `hits.total` an object (a number with `rest_total_hits_as_int`),
    /// the id in the path, a plain-text body and what a scroll cannot do refused.
    #[test]
    fn es7_scroll_answers_and_refusals() {
        let server = TestServer::start(ServerConfig::elasticsearch("7.9.3"));
        let http = Http::new(&server);
        http.load("s", 25, false);
        let (status, first) = http.post(
            "/s/_search?scroll=1m",
            json!({"size": 10, "sort": ["_doc"]}),
        );
        assert_eq!(status, 200, "{first}");
        assert_eq!(
            first["hits"]["total"],
            json!({"value": 25, "relation": "eq"})
        );
        let id = first["_scroll_id"].as_str().unwrap().to_string();
        let (status, page) = http.send(
            reqwest::Method::GET,
            &format!("/_search/scroll/{id}?scroll=1m&rest_total_hits_as_int=true"),
            None,
        );
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["hits"]["total"], 25);
        assert_eq!(ids(&page).len(), 10);
        let (status, v) = http.send(reqwest::Method::POST, "/_search/scroll", Some(id.clone()));
        assert_eq!(status, 400, "{v}");
        let (status, page) = http.post("/_search/scroll", json!({"scroll_id": id}));
        assert_eq!((status, ids(&page).len()), (200, 5), "{page}");
        for (body, why) in [
            (json!({"from": 5}), "[from]"),
            (json!({"track_total_hits": false}), "track_total_hits"),
            (
                json!({"search_after": [1], "sort": ["_doc"]}),
                "search_after",
            ),
        ] {
            let (status, v) = http.post("/s/_search?scroll=1m", body);
            assert_eq!(status, 400, "{v}");
            assert!(v.to_string().contains(why), "{v}");
        }
        let (status, v) = http.post("/s/_search", json!({"slice": {"id": 0, "max": 2}}));
        assert_eq!(status, 400, "{v}");
    }

    /// Elasticsearch 5.4 (before elastic/elasticsearch#24242): the request forms a real 5.x
    /// refuses are refused — a clear by a string id, a continuation by an array, the
    /// `track_total_hits` key (6.0+), more slices than `index.max_slices_per_scroll`, a
    /// page over `index.max_result_window` — and those it accepts are accepted: a clear by
    /// an array, a body id over the path's, `size: 0`, an index of two mapping types.
    #[test]
    fn es5_scroll_request_forms() {
        let server = TestServer::start(ServerConfig::elasticsearch("5.4.3"));
        let http = Http::new(&server);
        http.load("s", 40, true);
        let reason = |v: &Value| {
            v["error"]["root_cause"][0]["reason"]
                .as_str()
                .unwrap_or("")
                .to_string()
        };
        let open = |body: Value| http.post("/s/_search?scroll=1m", body);
        let (status, first) =
            open(json!({"size": 10, "sort": ["_doc"], "slice": {"id": 0, "max": 1024}}));
        assert_eq!(status, 200, "{first}");
        assert!(first["hits"]["total"].is_u64(), "{first}");
        let id = first["_scroll_id"].as_str().unwrap().to_string();
        // continuation: the id a string, never an array; a body's id wins over the path's
        let (status, v) = http.post(
            "/_search/scroll",
            json!({"scroll": "1m", "scroll_id": [id]}),
        );
        assert_eq!(status, 400, "{v}");
        assert!(reason(&v).contains("wrong type[START_ARRAY]"), "{v}");
        let (status, v) = http.post(
            "/_search/scroll/bogus",
            json!({"scroll": "1m", "scroll_id": id}),
        );
        assert_eq!(status, 200, "{v}");
        let (status, v) = http.post(
            "/_search/scroll",
            json!({"scroll": "1m", "scroll_id": id, "size": 5}),
        );
        assert_eq!(status, 400, "{v}");
        assert!(reason(&v).contains("Unknown parameter [size]"), "{v}");
        // clear: an array; a string only from 5.5
        let clear = |body: Value| {
            http.send(
                reqwest::Method::DELETE,
                "/_search/scroll",
                Some(body.to_string()),
            )
        };
        let (status, v) = clear(json!({"scroll_id": id}));
        assert_eq!(status, 400, "{v}");
        assert!(reason(&v).contains("wrong type[VALUE_STRING]"), "{v}");
        let (status, v) = clear(json!({"scroll_id": [id]}));
        assert_eq!((status, v["num_freed"].as_u64()), (200, Some(1)), "{v}");
        let (status, v) = clear(json!({"scroll_id": []}));
        assert_eq!(status, 400, "{v}");
        assert!(reason(&v).contains("no scroll ids specified"), "{v}");
        // what a 5.x search refuses
        let (status, v) = open(json!({"size": 10, "track_total_hits": true}));
        assert_eq!(
            (status, v["error"]["type"].as_str()),
            (400, Some("parsing_exception")),
            "{v}"
        );
        let (status, v) = open(json!({"size": 10, "slice": {"id": 0, "max": 1025}}));
        assert_eq!(status, 400, "{v}");
        assert_eq!(
            v["error"]["type"], "search_phase_execution_exception",
            "{v}"
        );
        assert!(
            reason(&v).contains("The number of slices [1025] is too large"),
            "{v}"
        );
        let (status, v) = open(json!({"size": 10_001}));
        assert_eq!(status, 400, "{v}");
        assert!(reason(&v).contains("Batch size is too large"), "{v}");
        let (status, v) = open(json!({"size": 0}));
        assert_eq!(status, 200, "{v}");
        // an index of two mapping types: accepted by 5.x (not by 6.x)
        let two = json!({"mappings": {"a": {"properties": {"x": {"type": "keyword"}}},
                                      "b": {"properties": {"y": {"type": "long"}}}}});
        let (status, v) = http.send(reqwest::Method::PUT, "/two", Some(two.to_string()));
        assert_eq!(status, 200, "{v}");
        let (_, m) = http.send(reqwest::Method::GET, "/two/_mapping", None);
        let types: Vec<&String> = m["two"]["mappings"].as_object().unwrap().keys().collect();
        assert_eq!(types, ["a", "b"], "{m}");
        let es6 = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
        let (status, v) = Http::new(&es6).send(reqwest::Method::PUT, "/two", Some(two.to_string()));
        assert_eq!(status, 400, "{v}");
        // the shard-failure fault: 200, one shard failed, its documents in neither the
        // hits nor the total
        server.set_faults(Faults {
            scroll_shard_failures: 1,
            ..Faults::default()
        });
        let (status, v) = open(json!({"size": 100}));
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["_shards"]["failed"], 1, "{v}");
        let total = v["hits"]["total"].as_u64().unwrap();
        assert!(total < 40 && total > 20, "{v}");
        assert_eq!(ids(&v).len() as u64, total);
        let (_, v) = open(json!({"size": 100}));
        assert_eq!(
            (v["_shards"]["failed"].as_u64(), v["hits"]["total"].as_u64()),
            (Some(0), Some(40)),
            "{v}"
        );
    }

    /// The shard-failure fault on a point in time (Elasticsearch 7.10 and OpenSearch 2.11):
    /// the faulted page is answered 200 with one shard of five failed, its documents in
    /// neither the page nor `hits.total`; the next page is whole again.
    #[test]
    fn a_pit_page_loses_a_shard_under_the_fault() {
        for (config, open_path, key) in [
            (
                ServerConfig::elasticsearch("7.17.9"),
                "/p/_pit?keep_alive=1m",
                "id",
            ),
            (
                ServerConfig::opensearch("3.3.0"),
                "/p/_search/point_in_time?keep_alive=1m",
                "pit_id",
            ),
        ] {
            let server = TestServer::start(config);
            let http = Http::new(&server);
            http.load("p", 40, false);
            let (status, v) = http.post(open_path, json!({}));
            assert_eq!(status, 200, "{v}");
            let pit = v[key].as_str().unwrap().to_string();
            let search = || {
                http.post(
                    "/_search",
                    json!({"size": 100, "sort": [{"_shard_doc": "asc"}],
                           "pit": {"id": pit, "keep_alive": "1m"}, "track_total_hits": true}),
                )
            };
            server.set_faults(Faults {
                pit_shard_failures: 1,
                ..Faults::default()
            });
            let (status, v) = search();
            assert_eq!(status, 200, "{v}");
            assert_eq!(v["_shards"]["failed"], 1, "{v}");
            assert_eq!(v["_shards"]["failures"][0]["index"], "p", "{v}");
            let total = v["hits"]["total"]["value"].as_u64().unwrap();
            assert!(total < 40 && total > 20, "{v}");
            assert_eq!(ids(&v).len() as u64, total);
            assert_eq!(server.faults().pit_shard_failures, 0);
            let (status, v) = search();
            assert_eq!(status, 200, "{v}");
            assert_eq!(
                (v["_shards"]["failed"].as_u64(), ids(&v).len()),
                (Some(0), 40),
                "{v}"
            );
            // a search without a point in time is not touched by the fault
            server.set_faults(Faults {
                pit_shard_failures: 1,
                ..Faults::default()
            });
            let (_, v) = http.post("/p/_search", json!({"size": 100}));
            assert_eq!(ids(&v).len(), 40, "{v}");
            assert_eq!(server.faults().pit_shard_failures, 1);
        }
    }

    /// What 6.8 and 7.9 refuse that 5.x did not: `track_total_hits: false` in a scroll
    /// (6.x on the shards, 7.x in validation), `size: 0` in a scroll (7.0+); a clear by a
    /// string id is accepted.
    #[test]
    fn es6_and_es7_scroll_refusals() {
        for (version, status_off) in [("6.8.23", 500), ("7.9.3", 400)] {
            let server = TestServer::start(ServerConfig::elasticsearch(version));
            let http = Http::new(&server);
            http.load("s", 5, version.starts_with('6'));
            let (status, v) = http.post(
                "/s/_search?scroll=1m",
                json!({"size": 2, "track_total_hits": false}),
            );
            assert_eq!(status, status_off, "{version}: {v}");
            assert!(
                v.to_string().contains("disabling [track_total_hits]"),
                "{version}: {v}"
            );
            let (status, v) = http.post("/s/_search?scroll=1m", json!({"size": 0}));
            assert_eq!(status == 400, version.starts_with('7'), "{version}: {v}");
            let (status, v) = http.post("/s/_search?scroll=1m", json!({"size": 2}));
            assert_eq!(status, 200, "{version}: {v}");
            let id = v["_scroll_id"].as_str().unwrap();
            let (status, v) = http.send(
                reqwest::Method::DELETE,
                "/_search/scroll",
                Some(json!({"scroll_id": id}).to_string()),
            );
            assert_eq!(
                (status, v["num_freed"].as_u64()),
                (200, Some(1)),
                "{version}: {v}"
            );
        }
    }

    /// A context not used for its keep-alive is gone; so is one the fault expires, once.
    #[test]
    fn scroll_contexts_expire() {
        let server = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
        let http = Http::new(&server);
        http.load("s", 30, true);
        let open = |keep: &str| {
            let (status, v) = http.post(&format!("/s/_search?scroll={keep}"), json!({"size": 10}));
            assert_eq!(status, 200, "{v}");
            v["_scroll_id"].as_str().unwrap().to_string()
        };
        let next = |id: &str, keep: &str| {
            http.post("/_search/scroll", json!({"scroll": keep, "scroll_id": id}))
        };
        // Used within its keep-alive, each use extending it: alive; then left unused
        // longer than the last keep-alive asked: gone.
        let id = open("2s");
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(next(&id, "2s").0, 200);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(next(&id, "100ms").0, 200);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let (status, v) = next(&id, "1m");
        assert_eq!(status, 404, "{v}");
        assert_eq!(root_cause(&v), "search_context_missing_exception", "{v}");
        // The fault: the next continuation finds its context expired, then no more.
        server.set_faults(Faults {
            expire_scrolls: 1,
            ..Faults::default()
        });
        let id = open("1m");
        let (status, v) = next(&id, "1m");
        assert_eq!(status, 404, "{v}");
        assert_eq!(next(&id, "1m").0, 404);
        assert_eq!(server.faults().expire_scrolls, 0);
        let id = open("1m");
        let (status, v) = next(&id, "1m");
        assert_eq!((status, ids(&v).len()), (200, 10), "{v}");
    }
}
