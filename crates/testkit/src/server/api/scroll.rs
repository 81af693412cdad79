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
    page(c, &mut st, &id)
}

/// Answers the next page of a scroll context (`GET|POST /_search/scroll[/ID]`).
pub(super) fn next(c: &Ctx<'_>, path_id: Option<&str>) -> Result<Resp, EsError> {
    let (ids, keep) = request(c, path_id)?;
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
    page(c, &mut st, id)
}

/// Clears scroll contexts (`DELETE /_search/scroll[/IDS]`, `_all` for every one).
pub(super) fn clear(c: &Ctx<'_>, path_ids: Option<&str>) -> Result<Resp, EsError> {
    let (ids, _) = request(c, path_ids)?;
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
fn page(c: &Ctx<'_>, st: &mut State, id: &str) -> Result<Resp, EsError> {
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
    c.ok(
        200,
        json!({
            "_scroll_id": id,
            "took": 1,
            "timed_out": false,
            "_shards": shards_header(),
            "hits": {"total": total, "max_score": max_score, "hits": page},
        }),
    )
}

/// The scroll ids and keep-alive a continuation or clear request names.
fn request(c: &Ctx<'_>, path: Option<&str>) -> Result<(Vec<String>, Option<Duration>), EsError> {
    let mut ids: Vec<String> = Vec::new();
    let mut keep = c.q("scroll").map(str::to_string);
    let split = |s: &str| {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    if let Some(p) = path {
        ids.extend(split(p));
    }
    if let Some(q) = c.q("scroll_id") {
        ids.extend(split(q));
    }
    let text = std::str::from_utf8(&c.body).unwrap_or("").trim();
    if !text.is_empty() {
        if text.starts_with('{') {
            let body = c.json()?;
            match body.get("scroll_id") {
                None => {}
                Some(Value::String(s)) => ids.extend(split(s)),
                Some(Value::Array(a)) => {
                    ids.extend(a.iter().filter_map(Value::as_str).map(str::to_string))
                }
                Some(_) => return Err(EsError::parse("[scroll_id] must be a string or an array")),
            }
            if let Some(k) = body.get("scroll").and_then(Value::as_str) {
                keep = Some(k.to_string());
            }
        } else if c.shared.dialect.typed() {
            // Elasticsearch 5 and 6 still take the bare id as the body.
            ids.extend(split(text));
        } else {
            return Err(EsError::parse(
                "request body is not valid JSON (a plain-text scroll id is not accepted since 7.0)",
            ));
        }
    }
    if ids.is_empty() {
        return Err(EsError::new(
            400,
            "action_request_validation_exception",
            "Validation Failed: 1: scrollId is missing;",
        ));
    }
    let keep = keep.as_deref().map(keep_alive).transpose()?;
    Ok((ids, keep))
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
    let cause = json!({
        "type": "search_context_missing_exception",
        "reason": format!("No search context found for id [{n}]"),
    });
    EsError::new(404, "search_phase_execution_exception", "all shards failed")
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
