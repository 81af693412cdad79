//! `rfs copy --from http://…/PATTERN` reads every index the pattern names: an ordinary
//! index, a data stream (its backing indices, written into a data stream of the same name on
//! the target), an alias; what a wildcard reaches but leaves out (hidden, dot-named) is a
//! WARN naming it. Source and target are the project's test server; the target is read
//! back over plain HTTP and every document compared one by one.

mod common;

use std::collections::BTreeMap;

use common::{copy, run};
use reqwest::blocking::Client;
use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

fn http() -> Client {
    Client::new()
}

fn send(method: reqwest::Method, url: String, body: Option<Value>) -> Value {
    let mut r = http().request(method, &url);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().unwrap();
    let status = r.status();
    let v: Value = r.json().unwrap_or(Value::Null);
    assert!(status.is_success(), "{url}: {status} {v}");
    v
}

/// Writes `docs` with `action` (`index` or `create`) into `index` through `_bulk`.
fn bulk(
    server: &TestServer,
    index: &str,
    action: &str,
    docs: &BTreeMap<String, Value>,
    typed: bool,
) {
    let mut body = String::new();
    for (id, source) in docs {
        let mut meta = json!({action: {"_index": index, "_id": id}});
        if typed {
            meta[action]["_type"] = "doc".into();
        }
        body.push_str(&format!("{meta}\n{source}\n"));
    }
    let r: Value = http()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(r["errors"], false, "{r}");
}

fn docs(prefix: &str, range: std::ops::Range<usize>) -> BTreeMap<String, Value> {
    range
        .map(|i| {
            (
                format!("{prefix}-{i:03}"),
                json!({"@timestamp": format!("2026-11-{:02}T10:00:00Z", 1 + i % 28), "n": i, "msg": format!("{prefix} ü {i}")}),
            )
        })
        .collect()
}

/// Every document of `index` on `base`, by `_search` pages sorted by `_id`.
fn read_back(base: &str, index: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut after: Option<Value> = None;
    loop {
        let mut body = json!({"size": 100, "sort": [{"_id": "asc"}], "query": {"match_all": {}}});
        if let Some(a) = &after {
            body["search_after"] = a.clone();
        }
        let r = send(
            reqwest::Method::POST,
            format!("{base}/{index}/_search"),
            Some(body),
        );
        let hits = r["hits"]["hits"].as_array().unwrap().clone();
        if hits.is_empty() {
            return out;
        }
        for h in &hits {
            let id = h["_id"].as_str().unwrap().to_string();
            assert!(out.insert(id, h["_source"].clone()).is_none(), "{h}");
        }
        after = hits.last().map(|h| h["sort"].clone());
    }
}

struct Source {
    server: TestServer,
    books: BTreeMap<String, Value>,
    logs: BTreeMap<String, Value>,
}

/// Elasticsearch 8: `books`, the data stream `logs-app` (rolled over once: two backing
/// indices holding 30 and 20 documents), the hidden index `hidden-1`, the dot index `.tasks-x`.
fn source_with_a_stream() -> Source {
    let server = TestServer::start(ServerConfig::elasticsearch("8.15.0"));
    let url = server.url();
    send(
        reqwest::Method::PUT,
        format!("{url}/_component_template/logs-app-mappings"),
        Some(
            json!({"template": {"mappings": {"properties": {"@timestamp": {"type": "date"}, "msg": {"type": "keyword"}}}}}),
        ),
    );
    send(
        reqwest::Method::PUT,
        format!("{url}/_index_template/logs-app-template"),
        Some(
            json!({"index_patterns": ["logs-app*"], "data_stream": {}, "priority": 200,
                    "composed_of": ["logs-app-mappings"],
                    "template": {"settings": {"index": {"number_of_shards": 1}}}}),
        ),
    );
    send(
        reqwest::Method::PUT,
        format!("{url}/_data_stream/logs-app"),
        None,
    );
    let first = docs("log", 0..30);
    bulk(&server, "logs-app", "create", &first, false);
    send(
        reqwest::Method::POST,
        format!("{url}/logs-app/_rollover"),
        None,
    );
    let second = docs("log", 30..50);
    bulk(&server, "logs-app", "create", &second, false);
    let streams = server.data_streams();
    assert_eq!(streams["logs-app"].len(), 2, "{streams:?}");
    let books = docs("book", 0..40);
    bulk(&server, "books", "index", &books, false);
    send(
        reqwest::Method::PUT,
        format!("{url}/hidden-1"),
        Some(json!({"settings": {"index": {"hidden": true}}})),
    );
    bulk(&server, "hidden-1", "index", &docs("hidden", 0..5), false);
    bulk(&server, ".tasks-x", "index", &docs("task", 0..5), false);
    let mut logs = first;
    logs.extend(second);
    Source {
        server,
        books,
        logs,
    }
}

/// `--from …/books,logs-app`: every document of `books` and of the data stream (both
/// backing indices) on the target, `logs-app` a data stream there, created from the
/// source's template; nothing else copied. Failed before: the `.ds-` backing indices were
/// dropped by name, `logs-app` never reached the target, and the copy exited 0.
#[test]
fn a_named_data_stream_is_copied_into_a_data_stream() {
    let src = source_with_a_stream();
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}/books,logs-app", src.server.url());
    let r = run(copy(dir.path(), &from, &target.url(), &["--slices", "2"]));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(read_back(&target.url(), "books"), src.books);
    assert_eq!(read_back(&target.url(), "logs-app"), src.logs);
    let streams = target.data_streams();
    assert!(streams.contains_key("logs-app"), "{streams:?}");
    let ds = send(
        reqwest::Method::GET,
        format!("{}/_data_stream/logs-app", target.url()),
        None,
    );
    assert_eq!(
        ds["data_streams"][0]["template"], "logs-app-template",
        "{ds}"
    );
    assert!(target.index_templates().contains_key("logs-app-template"));
    assert!(target
        .component_templates()
        .contains_key("logs-app-mappings"));
    // Only what the pattern names: no hidden or dot index, no source backing index by name.
    let mut names = target.index_names();
    names.retain(|n| !n.starts_with(".ds-logs-app-"));
    assert_eq!(names, vec!["books".to_string()]);
    let st = common::status(dir.path());
    assert_eq!(st["docs_refused"], 0, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    // A new store re-sends every document as `create` into the stream: those already
    // there count as delivered, none is doubled.
    let again = tempfile::tempdir().unwrap();
    let r = run(copy(again.path(), &from, &target.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(read_back(&target.url(), "logs-app"), src.logs);
}

/// `--from …/*`: the wildcard reaches `books`, the data stream, the hidden index and the dot
/// index; the last two are left out, each named in a WARN with its reason.
#[test]
fn a_wildcard_leaves_hidden_and_dot_indices_out_loudly() {
    let src = source_with_a_stream();
    let target = TestServer::start(ServerConfig::elasticsearch("8.15.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}/*", src.server.url());
    let r = run(copy(dir.path(), &from, &target.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    let all = r.all();
    let warned = |name: &str, why: &str| {
        all.lines()
            .any(|l| l.contains("WARN") && l.contains(name) && l.contains(why))
    };
    assert!(warned("hidden-1", "hidden index"), "{r}");
    assert!(warned(".tasks-x", "dot-prefixed"), "{r}");
    assert_eq!(read_back(&target.url(), "books"), src.books);
    assert_eq!(read_back(&target.url(), "logs-app"), src.logs);
    assert!(target.data_streams().contains_key("logs-app"));
    assert!(!target
        .index_names()
        .iter()
        .any(|n| n == "hidden-1" || n == ".tasks-x"));
    // Named, the hidden index is copied.
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}/hidden-1", src.server.url());
    let r = run(copy(dir.path(), &from, &target.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(read_back(&target.url(), "hidden-1").len(), 5);
}

/// Elasticsearch 6.8 has no `_resolve/index` (the path is a document GET on an index named
/// `_resolve`: 404) and no data streams: the same pattern, `logs-app` an alias there, is
/// resolved through `GET <pattern>/_settings`; the alias's index and `books` are copied.
#[test]
fn an_es6_source_resolves_the_pattern_by_its_settings() {
    let server = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let url = server.url();
    let r = http()
        .get(format!("{url}/_resolve/index/books"))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let books = docs("book", 0..40);
    bulk(&server, "books", "index", &books, true);
    let logs = docs("log", 0..25);
    bulk(&server, "logs-2026", "index", &logs, true);
    send(
        reqwest::Method::PUT,
        format!("{url}/logs-2026/_alias/logs-app"),
        None,
    );
    bulk(&server, ".kibana-x", "index", &docs("k", 0..3), true);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{url}/books,logs-app");
    let r = run(copy(dir.path(), &from, &target.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(read_back(&target.url(), "books"), books);
    assert_eq!(read_back(&target.url(), "logs-2026"), logs);
    // A wildcard leaves the dot index out, naming it.
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(dir.path(), &format!("{url}/*"), &target.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.all()
            .lines()
            .any(|l| l.contains("WARN") && l.contains(".kibana-x") && l.contains("dot-prefixed")),
        "{r}"
    );
    assert!(!target.index_names().iter().any(|n| n == ".kibana-x"));
}

/// `--create-metadata` from a live cluster: the index is created on the target before any
/// document, under its new name, with the source's mappings (an `integer` the target
/// would otherwise guess as `long`, a `keyword` it would guess as `text`), its shard
/// count and its aliases (the filter kept); its documents follow. Without the flag the
/// target guesses (the test server, like a real cluster, maps a number as `long`). A sink
/// URL naming one index, or a source without index definitions, is refused before anything
/// is read, naming why. Failed before: `copy` had no `--create-metadata`.
#[test]
fn create_metadata_from_a_live_cluster_creates_the_indices_first() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.15.0"));
    let url = source.url();
    send(
        reqwest::Method::PUT,
        format!("{url}/books"),
        Some(json!({
            "settings": {"index": {"number_of_shards": 3, "number_of_replicas": 0}},
            "mappings": {"properties": {
                "n": {"type": "integer"},
                "msg": {"type": "keyword"},
                "@timestamp": {"type": "date"}}},
            "aliases": {"recent": {"filter": {"range": {"n": {"gte": 10}}}}}
        })),
    );
    let books = docs("book", 0..25);
    bulk(&source, "books", "index", &books, false);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{url}/books");
    let r = run(copy(
        dir.path(),
        &from,
        &target.url(),
        &["--create-metadata", "--rename", "books=novels"],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(read_back(&target.url(), "novels"), books);
    let def = send(
        reqwest::Method::GET,
        format!("{}/novels?flat_settings=true", target.url()),
        None,
    );
    let novels = &def["novels"];
    let props = &novels["mappings"]["properties"];
    assert_eq!(props["n"]["type"], "integer", "{def}");
    assert_eq!(props["msg"]["type"], "keyword", "{def}");
    assert_eq!(props["@timestamp"]["type"], "date", "{def}");
    assert_eq!(novels["settings"]["index.number_of_shards"], "3", "{def}");
    assert_eq!(
        novels["aliases"]["recent"]["filter"],
        json!({"range": {"n": {"gte": 10}}}),
        "{def}"
    );
    assert_eq!(target.index_names(), vec!["novels".to_string()]);

    // Without the flag the target guesses the mapping: the check above can fail.
    let guessed = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let plain = tempfile::tempdir().unwrap();
    let r = run(copy(plain.path(), &from, &guessed.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    let def = send(
        reqwest::Method::GET,
        format!("{}/books", guessed.url()),
        None,
    );
    assert_ne!(
        def["books"]["mappings"]["properties"]["n"]["type"], "integer",
        "{def}"
    );

    // Refused before anything is read: a sink that names one index, a source without
    // index definitions.
    let one = tempfile::tempdir().unwrap();
    let r = run(copy(
        one.path(),
        &from,
        &format!("{}/everything", target.url()),
        &["--create-metadata"],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(
        r.all()
            .contains("sends every document into index everything"),
        "{r}"
    );
    let lines = tempfile::tempdir().unwrap();
    std::fs::write(
        lines.path().join("a.jsonl"),
        "{\"_id\":\"1\",\"_index\":\"a\",\"_source\":{}}\n",
    )
    .unwrap();
    let other = tempfile::tempdir().unwrap();
    let r = run(copy(
        other.path(),
        &lines.path().display().to_string(),
        &target.url(),
        &["--create-metadata"],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("holds no index definitions"), "{r}");
    assert!(!target.index_names().contains(&"a".to_string()));
}

/// A data stream whose backing indices are left out (`--exclude-index`) is not created on
/// the target, nor its templates; one that `--rename` would rename is refused before the
/// target is touched, naming the stream and the name it would get. Failed before: the
/// excluded stream was created (empty) with its templates, and the renamed one was
/// created under its own name while its documents went into an ordinary index
/// `logs-new`.
#[test]
fn an_excluded_stream_is_not_created_and_a_renamed_one_is_refused() {
    let src = source_with_a_stream();
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let from = format!("{}/books,logs-app", src.server.url());
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        &from,
        &target.url(),
        &["--exclude-index", ".ds-logs-app-*"],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(read_back(&target.url(), "books"), src.books);
    assert!(
        target.data_streams().is_empty(),
        "{:?}",
        target.data_streams()
    );
    assert!(!target.index_templates().contains_key("logs-app-template"));
    assert_eq!(target.index_names(), vec!["books".to_string()]);

    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        &from,
        &target.url(),
        &["--rename", "logs-app=logs-new"],
    ));
    assert_eq!(r.code, Some(1), "{r}");
    assert!(
        r.all()
            .contains("data stream logs-app would be renamed to logs-new"),
        "{r}"
    );
    assert!(
        target.data_streams().is_empty(),
        "{:?}",
        target.data_streams()
    );
    assert_eq!(target.index_names(), vec!["books".to_string()]);
}
