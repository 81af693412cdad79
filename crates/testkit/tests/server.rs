//! The test server driven by a real HTTP client: API behaviour compared field by field with what
//! Elasticsearch answers, and every fault kind.

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};
use testkit::server::{Faults, ServerConfig, TestServer};

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(20))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

fn call(c: &Client, method: &str, url: &str, body: Option<&Value>) -> (u16, Value) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut rb = c.request(m, url);
    if let Some(b) = body {
        rb = rb.json(b);
    }
    let r = rb.send().unwrap();
    let status = r.status().as_u16();
    let text = r.text().unwrap();
    let v = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, v)
}

fn ndjson(lines: &[Value]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(&l.to_string());
        s.push('\n');
    }
    s
}

fn bulk(c: &Client, url: &str, body: String) -> (u16, Value) {
    let r = c
        .post(format!("{url}/_bulk"))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().unwrap())
}

#[test]
fn root_reports_distribution_version_and_headers() {
    let c = client();
    let es = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
    let r = c.get(es.url()).send().unwrap();
    assert!(r.headers().get("date").is_some(), "no Date header");
    assert!(r.headers().get("x-elastic-product").is_none());
    let v: Value = r.json().unwrap();
    assert_eq!(v["version"]["number"], "7.10.2");
    assert!(v["version"].get("distribution").is_none());
    assert_eq!(v["tagline"], "You Know, for Search");

    let es8 = TestServer::start(ServerConfig::elasticsearch("8.15.0"));
    let r = c.get(es8.url()).send().unwrap();
    assert_eq!(r.headers()["x-elastic-product"], "Elasticsearch");

    let os = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let (s, v) = call(&c, "GET", &os.url(), None);
    assert_eq!(s, 200);
    assert_eq!(v["version"]["distribution"], "opensearch");
    assert_eq!(v["version"]["number"], "2.11.0");
    // errors carry a Date header too
    let r = c
        .get(format!("{}/missing/_doc/1", os.url()))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert!(r.headers().get("date").is_some());
}

#[test]
fn bulk_results_match_elasticsearch() {
    let s = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
    let c = client();
    let body = ndjson(&[
        json!({"index": {"_index": "idx", "_id": "1"}}),
        json!({"a": 1}),
        json!({"create": {"_index": "idx", "_id": "2"}}),
        json!({"a": 2}),
        json!({"index": {"_index": "idx", "_id": "1"}}),
        json!({"a": 11}),
        json!({"create": {"_index": "idx", "_id": "2"}}),
        json!({"a": 22}),
        json!({"delete": {"_index": "idx", "_id": "3"}}),
        json!({"update": {"_index": "idx", "_id": "2"}}),
        json!({"doc": {"b": true}}),
        json!({"delete": {"_index": "idx", "_id": "1"}}),
    ]);
    let (status, v) = bulk(&c, &s.url(), body);
    assert_eq!(status, 200);
    assert_eq!(v["errors"], true);
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 7);
    let i0 = &items[0]["index"];
    assert_eq!(
        (i0["_index"].clone(), i0["_id"].clone(), i0["_type"].clone()),
        (json!("idx"), json!("1"), json!("_doc"))
    );
    assert_eq!(
        (
            i0["status"].clone(),
            i0["result"].clone(),
            i0["_version"].clone(),
            i0["_seq_no"].clone(),
            i0["_primary_term"].clone()
        ),
        (json!(201), json!("created"), json!(1), json!(0), json!(1))
    );
    assert_eq!(
        i0["_shards"],
        json!({"total": 2, "successful": 1, "failed": 0})
    );
    assert_eq!(items[1]["create"]["status"], 201);
    let i2 = &items[2]["index"];
    assert_eq!(
        (
            i2["status"].clone(),
            i2["result"].clone(),
            i2["_version"].clone(),
            i2["_seq_no"].clone()
        ),
        (json!(200), json!("updated"), json!(2), json!(2))
    );
    let i3 = &items[3]["create"];
    assert_eq!(i3["status"], 409);
    assert_eq!(i3["error"]["type"], "version_conflict_engine_exception");
    assert!(i3["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("document already exists"));
    assert!(i3.get("_seq_no").is_none());
    let i4 = &items[4]["delete"];
    assert_eq!(
        (i4["status"].clone(), i4["result"].clone()),
        (json!(404), json!("not_found"))
    );
    let i5 = &items[5]["update"];
    assert_eq!(
        (i5["status"].clone(), i5["result"].clone()),
        (json!(200), json!("updated"))
    );
    let i6 = &items[6]["delete"];
    assert_eq!(
        (i6["status"].clone(), i6["result"].clone()),
        (json!(200), json!("deleted"))
    );

    let docs = s.documents("idx");
    assert_eq!(docs.len(), 1);
    assert_eq!(docs["2"], json!({"a": 2, "b": true}));
    assert_eq!(s.doc_count("idx"), 1);
    assert_eq!(s.index_names(), vec!["idx".to_string()]);

    // path index, auto ids, numeric ids, exact source bytes kept
    let body = "{\"index\":{}}\n{\"x\": 1,  \"y\":\"é\"}\n{\"index\":{\"_id\":7}}\n{\"z\":0}\n";
    let r = c
        .post(format!("{}/other/_bulk", s.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    let v: Value = r.json().unwrap();
    assert_eq!(v["errors"], false);
    let auto = v["items"][0]["index"]["_id"].as_str().unwrap().to_string();
    assert!(!auto.is_empty());
    assert_eq!(
        s.document_bytes("other", &auto).unwrap().as_ref(),
        "{\"x\": 1,  \"y\":\"é\"}".as_bytes()
    );
    assert_eq!(s.documents("other")["7"], json!({"z": 0}));

    // request-level errors
    let (st, v) = bulk(&c, &s.url(), "{\"index\":{\"_index\":\"idx\"}}\n{}".into());
    assert_eq!(st, 400, "{v}");
    let (st, v) = bulk(&c, &s.url(), "{\"index\":{\"_id\":\"1\"}}\n{}\n".into());
    assert_eq!(st, 400);
    assert_eq!(v["error"]["type"], "action_request_validation_exception");
    // invalid source is a per-item mapping error
    let (st, v) = bulk(
        &c,
        &s.url(),
        "{\"index\":{\"_index\":\"idx\",\"_id\":\"9\"}}\n[1]\n".into(),
    );
    assert_eq!(st, 200);
    assert_eq!(v["items"][0]["index"]["status"], 400);
    assert_eq!(
        v["items"][0]["index"]["error"]["type"],
        "mapper_parsing_exception"
    );
}

#[test]
fn bulk_types_follow_the_version() {
    let c = client();
    let es6 = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let (st, v) = bulk(
        &c,
        &es6.url(),
        ndjson(&[json!({"index": {"_index": "i", "_id": "1"}}), json!({})]),
    );
    assert_eq!(st, 400);
    assert!(v["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("type is missing"));
    let (st, v) = bulk(
        &c,
        &es6.url(),
        ndjson(&[
            json!({"index": {"_index": "i", "_type": "doc", "_id": "1"}}),
            json!({"f": 1}),
            json!({"index": {"_index": "i", "_type": "other", "_id": "2"}}),
            json!({"f": 2}),
        ]),
    );
    assert_eq!(st, 200);
    assert_eq!(v["items"][0]["index"]["_type"], "doc");
    assert_eq!(v["items"][0]["index"]["status"], 201);
    assert_eq!(v["items"][1]["index"]["status"], 400);
    assert!(v["items"][1]["index"]["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("more than 1 type"));
    // typed document path and ES 6 search totals as numbers
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{}/i/doc/3", es6.url()),
        Some(&json!({"f": 3})),
    );
    assert_eq!((st, v["_type"].clone()), (201, json!("doc")));
    let (_, v) = call(&c, "GET", &format!("{}/i/_search", es6.url()), None);
    assert_eq!(v["hits"]["total"], 2);
    assert_eq!(v["hits"]["hits"][0]["_type"], "doc");

    let os2 = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let (st, v) = bulk(
        &c,
        &os2.url(),
        ndjson(&[
            json!({"index": {"_index": "i", "_type": "_doc", "_id": "1"}}),
            json!({}),
        ]),
    );
    assert_eq!(st, 400);
    assert!(v["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("unknown parameter [_type]"));
    let (st, v) = bulk(
        &c,
        &os2.url(),
        ndjson(&[json!({"index": {"_index": "i", "_id": "1"}}), json!({})]),
    );
    assert_eq!(st, 200);
    assert!(v["items"][0]["index"].get("_type").is_none());
}

#[test]
fn doc_api_create_conflicts_and_seq_no_compare_and_set() {
    let s = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let c = client();
    let u = s.url();
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/w1?op_type=create"),
        Some(&json!({"owner": "a"})),
    );
    assert_eq!((st, v["result"].clone()), (201, json!("created")));
    let (seq, term) = (
        v["_seq_no"].as_i64().unwrap(),
        v["_primary_term"].as_i64().unwrap(),
    );
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/w1?op_type=create"),
        Some(&json!({"owner": "b"})),
    );
    assert_eq!(st, 409);
    assert_eq!(v["error"]["type"], "version_conflict_engine_exception");
    assert_eq!(v["status"], 409);
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/store/_create/w1"),
        Some(&json!({"owner": "b"})),
    );
    assert_eq!(st, 409);

    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/w1?if_seq_no={seq}&if_primary_term={term}"),
        Some(&json!({"owner": "c"})),
    );
    assert_eq!(
        (st, v["result"].clone(), v["_version"].clone()),
        (200, json!("updated"), json!(2))
    );
    let new_seq = v["_seq_no"].as_i64().unwrap();
    assert!(new_seq > seq);
    // stale compare-and-set loses
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/w1?if_seq_no={seq}&if_primary_term={term}"),
        Some(&json!({"owner": "d"})),
    );
    assert_eq!(st, 409);
    assert!(v["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("required seqNo"));
    // CAS on a missing document loses too
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/nope?if_seq_no=0&if_primary_term=1"),
        Some(&json!({})),
    );
    assert_eq!(st, 409);
    // partial update guarded by seq_no
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/store/_update/w1?if_seq_no={new_seq}&if_primary_term={term}"),
        Some(&json!({"doc": {"lease": 5}})),
    );
    assert_eq!((st, v["result"].clone()), (200, json!("updated")));
    let (st, v) = call(&c, "GET", &format!("{u}/store/_doc/w1"), None);
    assert_eq!(st, 200);
    assert_eq!(v["found"], true);
    assert_eq!(v["_source"], json!({"owner": "c", "lease": 5}));
    assert_eq!(v["_version"], 3);
    let (st, v) = call(&c, "GET", &format!("{u}/store/_doc/missing"), None);
    assert_eq!((st, v["found"].clone()), (404, json!(false)));
    let r = c.head(format!("{u}/store/_doc/w1")).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/store/_update/w1"),
        Some(&json!({"script": "x"})),
    );
    assert_eq!(st, 400, "{v}");
    let (st, v) = call(&c, "DELETE", &format!("{u}/store/_doc/w1"), None);
    assert_eq!((st, v["result"].clone()), (200, json!("deleted")));
    // ids with reserved characters survive percent-encoding
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/a%2Fb%20c"),
        Some(&json!({"k": 1})),
    );
    assert_eq!(st, 201);
    assert!(s.documents("store").contains_key("a/b c"));
    // external versions
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/e?version=5&version_type=external"),
        Some(&json!({})),
    );
    assert_eq!(st, 201);
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/store/_doc/e?version=5&version_type=external"),
        Some(&json!({})),
    );
    assert_eq!(st, 409);
}

fn seed_search_docs(c: &Client, u: &str) {
    let mut lines = Vec::new();
    for i in 0..20 {
        lines.push(json!({"index": {"_index": "work", "_id": format!("item{i:02}")}}));
        let mut d = json!({"n": i, "status": if i % 2 == 0 { "open" } else { "done" }, "name": format!("item {i}")});
        if i % 5 != 0 {
            d["lease"] = json!({"expiry": 1000 + i});
        }
        lines.push(d);
    }
    let (st, v) = bulk(c, u, ndjson(&lines));
    assert_eq!((st, v["errors"].clone()), (200, json!(false)));
}

fn ids(v: &Value) -> Vec<String> {
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn search_queries_sort_paging_and_count() {
    let s = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
    let c = client();
    let u = s.url();
    seed_search_docs(&c, &u);
    let search = |q: Value| call(&c, "POST", &format!("{u}/work/_search"), Some(&q)).1;

    let v = search(json!({"query": {"match_all": {}}, "size": 100}));
    assert_eq!(v["hits"]["total"], json!({"value": 20, "relation": "eq"}));
    assert_eq!(ids(&v).len(), 20);

    let v = search(json!({"query": {"bool": {
        "filter": [{"term": {"status": "open"}}, {"range": {"lease.expiry": {"gte": 1004, "lt": 1012}}}],
        "must_not": [{"ids": {"values": ["item06"]}}]}}, "sort": [{"n": {"order": "desc"}}], "size": 10}));
    assert_eq!(ids(&v), vec!["item08", "item04"]);
    assert_eq!(v["hits"]["hits"][0]["sort"], json!([8]));
    assert_eq!(v["hits"]["hits"][0]["_score"], Value::Null);

    let v = search(
        json!({"query": {"bool": {"must_not": {"exists": {"field": "lease"}}}}, "sort": ["n"]}),
    );
    assert_eq!(ids(&v), vec!["item00", "item05", "item10", "item15"]);

    let v = search(
        json!({"query": {"bool": {"should": [{"term": {"n": 1}}, {"terms": {"n": [2, 3]}}, {"prefix": {"name": "item 1"}}],
        "minimum_should_match": 2}}, "sort": [{"n": "asc"}]}),
    );
    assert_eq!(ids(&v), vec!["item01"]);

    let v = search(
        json!({"query": {"range": {"status": {"gt": "done"}}}, "size": 3, "from": 2,
        "sort": [{"n": "asc"}], "seq_no_primary_term": true, "track_total_hits": true}),
    );
    assert_eq!(ids(&v), vec!["item04", "item06", "item08"]);
    assert_eq!(v["hits"]["total"]["value"], 10);
    let hit = &v["hits"]["hits"][0];
    assert!(hit["_seq_no"].is_i64() && hit["_primary_term"] == 1);
    assert_eq!(hit["_source"]["n"], 4);

    let v = search(json!({"query": {"match_all": {}}, "track_total_hits": 5, "size": 0}));
    assert_eq!(v["hits"]["total"], json!({"value": 5, "relation": "gte"}));
    let v = search(json!({"size": 2, "sort": [{"n": "asc"}], "search_after": [17]}));
    assert_eq!(ids(&v), vec!["item18", "item19"]);

    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/work/_search"),
        Some(&json!({"query": {"script": {}}})),
    );
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("parsing_exception"))
    );
    let (st, _) = call(
        &c,
        "POST",
        &format!("{u}/nothere/_search"),
        Some(&json!({})),
    );
    assert_eq!(st, 404);

    let (_, v) = call(
        &c,
        "POST",
        &format!("{u}/work/_count"),
        Some(&json!({"query": {"term": {"status": "done"}}})),
    );
    assert_eq!(v["count"], 10);
    let (_, v) = call(&c, "GET", &format!("{u}/_count"), None);
    assert_eq!(v["count"], 20);
    let (_, v) = call(&c, "POST", &format!("{u}/work/_refresh"), None);
    assert_eq!(v["_shards"]["failed"], 0);
    let (_, v) = call(
        &c,
        "POST",
        &format!("{u}/_mget"),
        Some(
            &json!({"docs": [{"_index": "work", "_id": "item03"}, {"_index": "work", "_id": "zz"}]}),
        ),
    );
    assert_eq!(v["docs"][0]["_source"]["n"], 3);
    assert_eq!(v["docs"][1]["found"], false);
    let (_, v) = call(
        &c,
        "POST",
        &format!("{u}/work/_mget"),
        Some(&json!({"ids": ["item01"]})),
    );
    assert_eq!(v["docs"][0]["found"], true);

    // reads are not writes
    s.clear_requests();
    search(json!({}));
    let _ = call(&c, "GET", &format!("{u}/work"), None);
    assert!(s.write_requests().is_empty(), "{:?}", s.write_requests());
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn indices_and_templates_crud() {
    let s = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let c = client();
    let u = s.url();
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/books"),
        Some(&json!({
        "settings": {"index": {"number_of_shards": 2}, "number_of_replicas": 0},
        "mappings": {"properties": {"title": {"type": "text"}}},
        "aliases": {"library": {}}})),
    );
    assert_eq!(
        (st, v["acknowledged"].clone(), v["index"].clone()),
        (200, json!(true), json!("books"))
    );
    let (st, v) = call(&c, "PUT", &format!("{u}/books"), Some(&json!({})));
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("resource_already_exists_exception"))
    );
    let (_, v) = call(&c, "GET", &format!("{u}/books"), None);
    assert_eq!(v["books"]["settings"]["index"]["number_of_shards"], "2");
    assert_eq!(v["books"]["settings"]["index"]["number_of_replicas"], "0");
    assert_eq!(
        v["books"]["mappings"]["properties"]["title"]["type"],
        "text"
    );
    assert_eq!(v["books"]["aliases"], json!({"library": {}}));
    let info = s.index("books").unwrap();
    assert_eq!(info.settings["index.number_of_shards"], "2");
    assert!(c
        .head(format!("{u}/books"))
        .send()
        .unwrap()
        .status()
        .is_success());
    assert_eq!(
        c.head(format!("{u}/nope"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    let (_, v) = call(&c, "GET", &format!("{u}/books/_mapping"), None);
    assert_eq!(
        v["books"]["mappings"]["properties"]["title"]["type"],
        "text"
    );
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/library/_settings?flat_settings=true"),
        None,
    );
    assert_eq!(v["books"]["settings"]["index.number_of_shards"], "2");
    let (_, v) = call(&c, "GET", &format!("{u}/_alias/library"), None);
    assert_eq!(v, json!({"books": {"aliases": {"library": {}}}}));
    // writes through the alias land in the index
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/library/_doc/1"),
        Some(&json!({"title": "x"})),
    );
    assert_eq!(st, 201);
    assert_eq!(s.doc_count("books"), 1);
    // rejected mappings and settings, like the real thing
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/old"),
        Some(&json!({"mappings": {"_doc": {"properties": {}}}})),
    );
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("mapper_parsing_exception"))
    );
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/old"),
        Some(&json!({"mappings": {"properties": {"s": {"type": "string"}}}})),
    );
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("mapper_parsing_exception"))
    );
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/old"),
        Some(&json!({"settings": {"index.uuid": "x"}})),
    );
    assert_eq!(st, 400);
    let (st, v) = call(&c, "PUT", &format!("{u}/Upper"), None);
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("invalid_index_name_exception"))
    );
    let (st, _) = call(&c, "DELETE", &format!("{u}/books"), None);
    assert_eq!(st, 200);
    assert!(s.index_names().is_empty());

    // templates, in the order a migration creates them
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_template/legacy"),
        Some(&json!({
        "index_patterns": ["logs-*"], "order": 1, "settings": {"number_of_shards": 3},
        "mappings": {"properties": {"msg": {"type": "keyword"}}}})),
    );
    assert_eq!(st, 200);
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_index_template/it"),
        Some(&json!({
        "index_patterns": ["metrics-*"], "composed_of": ["ct"], "priority": 5})),
    );
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("invalid_index_template_exception"))
    );
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_component_template/ct"),
        Some(&json!({
        "template": {"settings": {"number_of_replicas": 2}, "mappings": {"properties": {"v": {"type": "long"}}}}})),
    );
    assert_eq!(st, 200);
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_index_template/it"),
        Some(&json!({
        "index_patterns": ["metrics-*"], "composed_of": ["ct"], "priority": 5,
        "template": {"aliases": {"metrics": {}}}})),
    );
    assert_eq!(st, 200);
    let (_, v) = call(&c, "GET", &format!("{u}/_template/legacy"), None);
    assert_eq!(v["legacy"]["index_patterns"], json!(["logs-*"]));
    assert_eq!(v["legacy"]["settings"]["index"]["number_of_shards"], "3");
    let (_, v) = call(&c, "GET", &format!("{u}/_component_template/ct"), None);
    assert_eq!(v["component_templates"][0]["name"], "ct");
    let (_, v) = call(&c, "GET", &format!("{u}/_index_template/it"), None);
    assert_eq!(
        v["index_templates"][0]["index_template"]["composed_of"],
        json!(["ct"])
    );
    let (st, _) = call(&c, "GET", &format!("{u}/_index_template/none"), None);
    assert_eq!(st, 404);
    assert_eq!(s.legacy_templates().len(), 1);
    assert_eq!(s.component_templates().len(), 1);
    assert_eq!(s.index_templates().len(), 1);
    // templates apply to new indices
    let (st, _) = call(&c, "PUT", &format!("{u}/logs-1"), None);
    assert_eq!(st, 200);
    let info = s.index("logs-1").unwrap();
    assert_eq!(info.settings["index.number_of_shards"], "3");
    assert_eq!(info.mappings["properties"]["msg"]["type"], "keyword");
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/metrics-1/_doc/1"),
        Some(&json!({"v": 1})),
    );
    assert_eq!(st, 201);
    let info = s.index("metrics-1").unwrap();
    assert_eq!(info.settings["index.number_of_replicas"], "2");
    assert!(info.aliases.contains_key("metrics"));
    let (st, _) = call(&c, "DELETE", &format!("{u}/_component_template/ct"), None);
    assert_eq!(st, 400, "component in use");
    let (st, _) = call(&c, "DELETE", &format!("{u}/_index_template/it"), None);
    assert_eq!(st, 200);
    let (st, _) = call(&c, "DELETE", &format!("{u}/_template/legacy"), None);
    assert_eq!(st, 200);

    // ES 6: typed mappings, no composable templates
    let es6 = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{}/t6", es6.url()),
        Some(&json!({"mappings": {"doc": {"properties": {"a": {"type": "keyword"}}}}})),
    );
    assert_eq!(st, 200);
    let (_, v) = call(&c, "GET", &format!("{}/t6/_mapping", es6.url()), None);
    assert_eq!(
        v["t6"]["mappings"]["doc"]["properties"]["a"]["type"],
        "keyword"
    );
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{}/t7", es6.url()),
        Some(&json!({"mappings": {"a": {}, "b": {}}})),
    );
    assert_eq!(st, 400);
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{}/_index_template/x", es6.url()),
        Some(&json!({"index_patterns": ["x"]})),
    );
    assert_eq!(st, 400);
}

#[test]
fn gzip_request_bodies_are_decoded() {
    use flate2::{write::GzEncoder, Compression};
    let s = TestServer::start(ServerConfig::default());
    let body = ndjson(&[
        json!({"index": {"_index": "g", "_id": "1"}}),
        json!({"zipped": true}),
    ]);
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(body.as_bytes()).unwrap();
    let zipped = enc.finish().unwrap();
    let r = client()
        .post(format!("{}/_bulk", s.url()))
        .header("content-type", "application/x-ndjson")
        .header("content-encoding", "gzip")
        .body(zipped.clone())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().unwrap();
    assert_eq!(v["errors"], false);
    assert_eq!(s.documents("g")["1"], json!({"zipped": true}));
    let stats = s.stats();
    assert_eq!(
        (stats.gzip_requests, stats.gzip_bulk_requests),
        (1, 1),
        "{stats:?}"
    );
    assert_eq!(stats.gzip_decoded_bytes, body.len() as u64);
    assert_eq!(stats.body_bytes, zipped.len() as u64);
    // a plain request is not counted as gzip
    let (st, _) = bulk(&client(), &s.url(), body.clone());
    assert_eq!(st, 200);
    let stats = s.stats();
    assert_eq!((stats.bulk_requests, stats.gzip_bulk_requests), (2, 1));
    let r = client()
        .post(format!("{}/_bulk", s.url()))
        .header("content-encoding", "gzip")
        .body("not gzip")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
}

#[test]
fn whole_request_faults_429_500_503_and_latency() {
    let s = TestServer::start(ServerConfig::default());
    let c = client();
    s.set_faults(Faults {
        reject_429: 1.0,
        retry_after_secs: 7,
        ..Faults::default()
    });
    let r = c.get(s.url()).send().unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(r.headers()["retry-after"], "7");
    let v: Value = r.json().unwrap();
    assert_eq!(v["error"]["type"], "es_rejected_execution_exception");
    s.set_faults(Faults {
        error_500: 1.0,
        ..Faults::default()
    });
    assert_eq!(c.get(s.url()).send().unwrap().status().as_u16(), 500);
    s.set_faults(Faults {
        error_503: 1.0,
        ..Faults::default()
    });
    assert_eq!(c.get(s.url()).send().unwrap().status().as_u16(), 503);
    // bulk_only leaves other requests alone
    s.set_faults(Faults {
        error_503: 1.0,
        bulk_only: true,
        ..Faults::default()
    });
    assert_eq!(c.get(s.url()).send().unwrap().status().as_u16(), 200);
    let (st, _) = bulk(
        &c,
        &s.url(),
        ndjson(&[json!({"index": {"_index": "x", "_id": "1"}}), json!({})]),
    );
    assert_eq!(st, 503);
    assert_eq!(
        s.doc_count("x"),
        0,
        "a rejected request must not be applied"
    );
    s.set_faults(Faults {
        latency_ms: 150,
        ..Faults::default()
    });
    let t = Instant::now();
    assert_eq!(c.get(s.url()).send().unwrap().status().as_u16(), 200);
    assert!(t.elapsed() >= Duration::from_millis(150));
    let faults: Vec<Option<String>> = s.requests().into_iter().map(|r| r.fault).collect();
    assert_eq!(faults[0].as_deref(), Some("429"));
    assert_eq!(faults[1].as_deref(), Some("500"));
}

#[test]
fn probabilities_are_deterministic_with_a_seed() {
    let run = || {
        let s = TestServer::start(ServerConfig {
            seed: Some(42),
            faults: Faults {
                reject_429: 0.5,
                ..Faults::default()
            },
            ..ServerConfig::default()
        });
        let c = client();
        (0..30)
            .map(|_| c.get(s.url()).send().unwrap().status().as_u16())
            .collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run());
    let n429 = a.iter().filter(|s| **s == 429).count();
    assert!(n429 > 3 && n429 < 27, "{n429} of 30 rejected at p=0.5");
}

#[test]
fn per_item_faults_429_and_failing_ids() {
    let s = TestServer::start(ServerConfig::default());
    let c = client();
    s.set_faults(Faults {
        failing_ids: ["bad".to_string()].into_iter().collect(),
        ..Faults::default()
    });
    let (_, v) = bulk(
        &c,
        &s.url(),
        ndjson(&[
            json!({"index": {"_index": "f", "_id": "good"}}),
            json!({"a": 1}),
            json!({"index": {"_index": "f", "_id": "bad"}}),
            json!({"a": 2}),
        ]),
    );
    assert_eq!(v["errors"], true);
    assert_eq!(v["items"][0]["index"]["status"], 201);
    let bad = &v["items"][1]["index"];
    assert_eq!(
        (bad["status"].clone(), bad["error"]["type"].clone()),
        (json!(400), json!("mapper_parsing_exception"))
    );
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{}/f/_doc/bad", s.url()),
        Some(&json!({})),
    );
    assert_eq!(
        (st, v["error"]["type"].clone()),
        (400, json!("mapper_parsing_exception"))
    );
    assert_eq!(s.documents("f").keys().collect::<Vec<_>>(), vec!["good"]);

    s.set_faults(Faults {
        bulk_item_429: 1.0,
        ..Faults::default()
    });
    let (st, v) = bulk(
        &c,
        &s.url(),
        ndjson(&[json!({"index": {"_index": "f", "_id": "x"}}), json!({})]),
    );
    assert_eq!(st, 200);
    let it = &v["items"][0]["index"];
    assert_eq!(
        (it["status"].clone(), it["error"]["type"].clone()),
        (json!(429), json!("es_rejected_execution_exception"))
    );
    assert!(
        !s.documents("f").contains_key("x"),
        "a rejected item must not be applied"
    );
    s.set_faults(Faults {
        bulk_item_503: 1.0,
        ..Faults::default()
    });
    let (_, v) = bulk(
        &c,
        &s.url(),
        ndjson(&[json!({"create": {"_index": "f", "_id": "y"}}), json!({})]),
    );
    let it = &v["items"][0]["create"];
    assert_eq!(
        (it["status"].clone(), it["error"]["type"].clone()),
        (json!(503), json!("unavailable_shards_exception"))
    );
    assert!(!s.documents("f").contains_key("y"));

    // a partial mix at p = 0.5: exactly the items reported successful are stored
    s.set_faults(Faults {
        bulk_item_429: 0.5,
        ..Faults::default()
    });
    let mut lines = Vec::new();
    for i in 0..200 {
        lines.push(json!({"create": {"_index": "mix", "_id": i.to_string()}}));
        lines.push(json!({"i": i}));
    }
    let (_, v) = bulk(&c, &s.url(), ndjson(&lines));
    let ok: Vec<String> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|it| it["create"]["status"] == 201)
        .map(|it| it["create"]["_id"].as_str().unwrap().to_string())
        .collect();
    assert!(ok.len() > 50 && ok.len() < 150);
    assert_eq!(s.documents("mix").into_keys().collect::<Vec<_>>(), {
        let mut k = ok.clone();
        k.sort();
        k
    });
}

#[test]
fn dropped_connections_before_and_after_applying() {
    let s = TestServer::start(ServerConfig {
        seed: Some(7),
        ..ServerConfig::default()
    });
    let c = client();
    s.set_faults(Faults {
        drop_connection: 1.0,
        ..Faults::default()
    });
    assert!(
        c.get(s.url()).send().is_err(),
        "a dropped request must not get a response"
    );
    let mut errors = 0;
    for i in 0..24 {
        let r = c
            .post(format!("{}/_bulk", s.url()))
            .header("content-type", "application/x-ndjson")
            .body(ndjson(&[
                json!({"index": {"_index": "d", "_id": i.to_string()}}),
                json!({}),
            ]))
            .send();
        errors += usize::from(r.is_err());
    }
    assert_eq!(errors, 24);
    let recs = s.requests();
    let after = recs
        .iter()
        .filter(|r| r.fault.as_deref() == Some("drop-after"))
        .count();
    let before = recs
        .iter()
        .filter(|r| r.fault.as_deref() == Some("drop-before"))
        .count();
    assert_eq!(before + after, 25);
    assert!(after > 0 && before > 1, "after {after}, before {before}");
    // exactly the requests dropped after applying left their document
    assert_eq!(s.doc_count("d"), after as u64);
    s.set_faults(Faults::default());
    assert_eq!(c.get(s.url()).send().unwrap().status().as_u16(), 200);
}

#[test]
fn going_down_and_coming_back_keeps_data_and_port() {
    let s = TestServer::start(ServerConfig::default());
    let c = client();
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{}/k/_doc/1", s.url()),
        Some(&json!({"v": 1})),
    );
    assert_eq!(st, 201);
    s.set_down(true);
    assert!(s.is_down());
    std::thread::sleep(Duration::from_millis(50));
    let e = c.get(s.url()).send().unwrap_err();
    assert!(e.is_connect() || e.is_request(), "{e}");
    assert!(
        std::net::TcpStream::connect(s.addr()).is_err(),
        "listener still open while down"
    );
    s.set_down(false);
    let deadline = Instant::now() + Duration::from_secs(5);
    let v = loop {
        if let Ok(r) = c.get(format!("{}/k/_doc/1", s.url())).send() {
            break r.json::<Value>().unwrap();
        }
        assert!(Instant::now() < deadline, "server did not come back");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(v["_source"], json!({"v": 1}));

    // through the admin endpoint, with automatic recovery
    let admin = s.admin_url();
    let r = c
        .post(format!("{admin}/_testkit/down"))
        .json(&json!({"down": true, "seconds": 0.3}))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    assert!(c.get(s.url()).send().is_err());
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.get(s.url()).send().is_err() {
        assert!(
            Instant::now() < deadline,
            "server did not come back by itself"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // faults through the admin endpoint
    let r = c
        .post(format!("{}/_testkit/faults", s.url()))
        .json(&json!({"error_503": 1.0}))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    assert_eq!(s.faults().error_503, 1.0);
    assert_eq!(c.get(s.url()).send().unwrap().status().as_u16(), 503);
    let r = c
        .post(format!("{admin}/_testkit/faults"))
        .json(&json!({"bogus": 1}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);

    // a duration past what a Duration holds means down until told otherwise
    s.set_faults(Faults::default());
    let r = c
        .post(format!("{admin}/_testkit/down"))
        .json(&json!({"down": true, "seconds": 1e300}))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    std::thread::sleep(Duration::from_millis(100));
    assert!(s.is_down());
    let r = c.post(format!("{admin}/_testkit/up")).send().unwrap();
    assert!(r.status().is_success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.get(s.url()).send().is_err() {
        assert!(Instant::now() < deadline, "server did not come back");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn discard_mode_counts_without_keeping() {
    let s = TestServer::start(ServerConfig {
        discard_documents: true,
        ..ServerConfig::default()
    });
    let c = client();
    let mut lines = Vec::new();
    for i in 0..100 {
        lines.push(json!({"index": {"_index": "sink", "_id": i.to_string()}}));
        lines.push(json!({"i": i}));
    }
    let (_, v) = bulk(&c, &s.url(), ndjson(&lines));
    assert_eq!(v["errors"], false);
    assert_eq!(s.doc_count("sink"), 100);
    assert!(s.documents("sink").is_empty());
    let st = s.stats();
    assert_eq!((st.bulk_requests, st.bulk_items), (1, 100));
    let (_, v) = call(&c, "GET", &format!("{}/sink/_count", s.url()), None);
    assert_eq!(v["count"], 100);
}

#[test]
fn snapshots_copy_the_configured_repository() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("index.latest"), 1i64.to_be_bytes()).unwrap();
    std::fs::write(
        src.path().join("index-1"),
        json!({"snapshots": [{"name": "s0", "uuid": "u"}], "indices": {"posts": {"id": "x"}}})
            .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(src.path().join("indices/x/0")).unwrap();
    std::fs::write(src.path().join("indices/x/0/__blob"), b"blob").unwrap();
    let target = tempfile::tempdir().unwrap();
    let loc = target.path().join("repo");
    let s = TestServer::start(ServerConfig {
        snapshot_source: Some(src.path().to_path_buf()),
        snapshot_duration: Duration::from_millis(200),
        ..ServerConfig::elasticsearch("7.10.2")
    });
    let c = client();
    let u = s.url();
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_snapshot/r1/s1?wait_for_completion=true"),
        Some(&json!({})),
    );
    assert_eq!(st, 404, "unregistered repository");
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_snapshot/r1"),
        Some(&json!({"type": "fs", "settings": {"location": loc}})),
    );
    assert_eq!(st, 200);
    let (_, v) = call(&c, "GET", &format!("{u}/_snapshot/r1"), None);
    assert_eq!(v["r1"]["type"], "fs");
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_snapshot/r1/s1?wait_for_completion=true"),
        Some(&json!({"indices": "*"})),
    );
    assert_eq!(st, 200);
    assert_eq!(v["snapshot"]["state"], "SUCCESS");
    assert_eq!(v["snapshot"]["indices"], json!(["posts"]));
    assert_eq!(
        std::fs::read(loc.join("indices/x/0/__blob")).unwrap(),
        b"blob"
    );
    assert!(loc.join("index-1").is_file());
    let (st, _) = call(&c, "PUT", &format!("{u}/_snapshot/r1/s1"), Some(&json!({})));
    assert_eq!(st, 400, "same name twice");

    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_snapshot/r1/s2?wait_for_completion=false"),
        Some(&json!({})),
    );
    assert_eq!((st, v["accepted"].clone()), (200, json!(true)));
    let (_, v) = call(&c, "GET", &format!("{u}/_snapshot/r1/s2"), None);
    assert_eq!(v["snapshots"][0]["state"], "IN_PROGRESS");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, v) = call(&c, "GET", &format!("{u}/_snapshot/r1/s2/_status"), None);
        if v["snapshots"][0]["state"] == "SUCCESS" {
            break;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(30));
    }
    let (st, _) = call(&c, "GET", &format!("{u}/_snapshot/r1/zzz"), None);
    assert_eq!(st, 404);
}

#[test]
fn binary_prints_its_url_and_serves() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_testkit-server"))
        .args([
            "--distribution",
            "elasticsearch",
            "--server-version",
            "8.15.0",
            "--failing-id",
            "b",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    let admin = lines.next().unwrap().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(admin.starts_with("admin http://127.0.0.1:"), "{admin}");
    let c = client();
    let (st, v) = call(&c, "GET", &url, None);
    assert_eq!((st, v["version"]["number"].clone()), (200, json!("8.15.0")));
    let (st, _) = call(&c, "PUT", &format!("{url}/i/_doc/b"), Some(&json!({})));
    assert_eq!(st, 400);
    let (_, v) = call(&c, "GET", &format!("{url}/_testkit/faults"), None);
    assert_eq!(v["failing_ids"], json!(["b"]));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn binary_exits_with_its_parent() {
    // the parent is a shell that is killed; the server must notice and exit
    let mut parent = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_testkit-server"))
        .args(["--parent-pid", &parent.id().to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    assert_eq!(call(&client(), "GET", &url, None).0, 200);
    parent.kill().unwrap();
    parent.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "server outlived its parent");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn malformed_requests_get_errors_and_the_server_stays_up() {
    let s = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
    let c = client();
    let u = s.url();
    let cases: Vec<(&str, String, Vec<u8>)> = vec![
        ("POST", format!("{u}/_bulk"), b"\xff\xfe\n".to_vec()),
        (
            "POST",
            format!("{u}/_bulk"),
            b"{\"index\":{\"_index\":\"a\"}}\n".to_vec(),
        ),
        (
            "POST",
            format!("{u}/_bulk"),
            b"{\"index\":{},\"delete\":{}}\n{}\n".to_vec(),
        ),
        (
            "POST",
            format!("{u}/_bulk"),
            b"{\"frobnicate\":{\"_index\":\"a\"}}\n".to_vec(),
        ),
        ("POST", format!("{u}/_bulk"), b"[]\n".to_vec()),
        ("PUT", format!("{u}/idx"), b"{\"settings\": 5}".to_vec()),
        ("PUT", format!("{u}/idx"), b"not json".to_vec()),
        ("PUT", format!("{u}/idx2"), b"{\"mappings\": []}".to_vec()),
        (
            "POST",
            format!("{u}/_search"),
            b"{\"query\": {\"bool\": {\"must\": 7}}}".to_vec(),
        ),
        (
            "POST",
            format!("{u}/_search"),
            b"{\"query\": {\"term\": {}}}".to_vec(),
        ),
        (
            "POST",
            format!("{u}/_search"),
            b"{\"sort\": [{\"a\": \"sideways\"}]}".to_vec(),
        ),
        (
            "POST",
            format!("{u}/_search"),
            b"{\"size\": 20000}".to_vec(),
        ),
        ("POST", format!("{u}/_search"), b"{\"aggs\": {}}".to_vec()),
        ("POST", format!("{u}/_mget"), b"{}".to_vec()),
        (
            "POST",
            format!("{u}/_aliases"),
            b"{\"actions\": [{\"explode\": {}}]}".to_vec(),
        ),
        ("PUT", format!("{u}/_template/t"), b"{}".to_vec()),
        (
            "PUT",
            format!("{u}/_component_template/t"),
            b"{\"template\": 1}".to_vec(),
        ),
        (
            "PUT",
            format!("{u}/_snapshot/r"),
            b"{\"type\": \"s3\"}".to_vec(),
        ),
        ("GET", format!("{u}/a/b/c/d/e"), Vec::new()),
        ("PUT", format!("{u}/x/_doc/1?if_seq_no=abc"), b"{}".to_vec()),
        ("PUT", format!("{u}/x/_doc/1"), b"[1,2]".to_vec()),
    ];
    for (method, url, body) in cases {
        let r = c
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                &url,
            )
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        assert!(
            (400..500).contains(&status)
                || (status == 200 && text.contains("\"errors\":true"))
                // Elasticsearch answers an unknown repository type with a 500
                || (status == 500 && text.contains("repository_exception")),
            "{method} {url} {:?} -> {status} {text}",
            String::from_utf8_lossy(&body)
        );
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: not JSON ({e}): {text}"));
        assert!(
            v.get("error").is_some() || v["errors"] == true,
            "{url}: {v}"
        );
    }
    assert_eq!(call(&c, "GET", &u, None).0, 200);
    assert!(s.index_names().is_empty(), "{:?}", s.index_names());
}

#[test]
fn snapshot_of_a_real_repository_reports_its_indices() {
    let Some(fixtures) =
        testkit::fixtures::require_fixtures("snapshot_of_a_real_repository_reports_its_indices")
    else {
        return;
    };
    let source = fixtures.join("snapshots").join("ES_7_10_Single");
    let target = tempfile::tempdir().unwrap();
    let s = TestServer::start(ServerConfig {
        snapshot_source: Some(source.clone()),
        ..ServerConfig::elasticsearch("7.10.2")
    });
    let c = client();
    let u = s.url();
    let loc = target.path().join("repo");
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_snapshot/fs"),
        Some(&json!({"type": "fs", "settings": {"location": loc}})),
    );
    assert_eq!(st, 200);
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_snapshot/fs/global_state_snapshot?wait_for_completion=true"),
        Some(&json!({})),
    );
    assert_eq!(st, 200);
    assert_eq!(v["snapshot"]["state"], "SUCCESS");
    assert_eq!(
        v["snapshot"]["indices"],
        json!(["posts_2023_02_25", "posts_2024_01_01"])
    );
    // the copy is byte for byte
    for name in ["index.latest", "index-1"] {
        assert_eq!(
            std::fs::read(source.join(name)).unwrap(),
            std::fs::read(loc.join(name)).unwrap()
        );
    }
}

#[test]
fn typed_gets_with_all_and_head_requests() {
    let c = client();
    let es6 = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let u = es6.url();
    let (st, _) = call(&c, "PUT", &format!("{u}/i/doc/1"), Some(&json!({"f": 1})));
    assert_eq!(st, 201);
    // `_all` finds the document whatever its type
    let (st, v) = call(&c, "GET", &format!("{u}/i/_all/1"), None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["_type"].clone(), v["found"].clone(), v["_source"].clone()),
        (json!("doc"), json!(true), json!({"f": 1}))
    );
    let (st, v) = call(&c, "GET", &format!("{u}/i/_all/1/_source"), None);
    assert_eq!((st, v), (200, json!({"f": 1})));
    let (st, v) = call(&c, "GET", &format!("{u}/i/_all/2"), None);
    assert_eq!((st, v["found"].clone()), (404, json!(false)));
    // the typed path with the index's type finds it, another type does not
    let (st, v) = call(&c, "GET", &format!("{u}/i/doc/1"), None);
    assert_eq!((st, v["_source"].clone()), (200, json!({"f": 1})));
    let (st, v) = call(&c, "GET", &format!("{u}/i/doc/1/_source"), None);
    assert_eq!((st, v), (200, json!({"f": 1})));
    let (st, v) = call(&c, "GET", &format!("{u}/i/other/1"), None);
    assert_eq!(
        (st, v["found"].clone(), v["_type"].clone()),
        (404, json!(false), json!("other"))
    );
    let (st, _) = call(&c, "GET", &format!("{u}/i/other/1/_source"), None);
    assert_eq!(st, 404);
    // typed search and count list only indices of that type
    let (_, other) = call(&c, "PUT", &format!("{u}/o/other/1"), Some(&json!({"f": 9})));
    assert_eq!(other["result"], "created");
    for (path, want) in [
        ("i,o/doc/_search", vec!["i"]),
        ("i,o/other/_search", vec!["o"]),
        ("i,o/doc,other/_search", vec!["i", "o"]),
        ("i,o/_all/_search", vec!["i", "o"]),
        ("_all/nothing/_search", vec![]),
    ] {
        let (st, v) = call(&c, "GET", &format!("{u}/{path}"), None);
        assert_eq!(st, 200, "{path}: {v}");
        let mut got: Vec<&str> = v["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_index"].as_str().unwrap())
            .collect();
        got.sort();
        assert_eq!(got, want, "{path}");
        let count_path = path.replace("_search", "_count");
        let (st, v) = call(&c, "GET", &format!("{u}/{count_path}"), None);
        assert_eq!(
            (st, v["count"].clone()),
            (200, json!(want.len())),
            "{count_path}"
        );
    }
    // typed mget: the path's type, or each doc's `_type`
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/i/doc/_mget"),
        Some(&json!({"ids": ["1", "2"]})),
    );
    assert_eq!(st, 200, "{v}");
    let found: Vec<Value> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["found"].clone())
        .collect();
    assert_eq!(found, vec![json!(true), json!(false)]);
    let (_, v) = call(
        &c,
        "POST",
        &format!("{u}/_mget"),
        Some(&json!({"docs": [
            {"_index": "i", "_type": "doc", "_id": "1"},
            {"_index": "i", "_type": "other", "_id": "1"},
            {"_index": "o", "_type": "_all", "_id": "1"},
            {"_index": "o", "_id": "1"}
        ]})),
    );
    let found: Vec<Value> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["found"].clone())
        .collect();
    assert_eq!(
        found,
        vec![json!(true), json!(false), json!(true), json!(true)],
        "{v}"
    );
    let (_, v) = call(
        &c,
        "POST",
        &format!("{u}/i/other/_mget"),
        Some(&json!({"ids": ["1"]})),
    );
    assert_eq!(v["docs"][0]["found"], false);
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/_mget"),
        Some(&json!({"docs": [{"_index": "i", "_id": "1"}, {"_index": "i"}]})),
    );
    assert_eq!(st, 400);
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("id is missing for doc 1"),
        "{v}"
    );
    // HEAD: status only, no body
    for (path, want) in [
        ("i/doc/1", 200),
        ("i/_all/1", 200),
        ("i/other/1", 404),
        ("i/doc/9", 404),
    ] {
        let r = c.head(format!("{u}/{path}")).send().unwrap();
        assert_eq!(r.status().as_u16(), want, "HEAD {path}");
        assert!(r.bytes().unwrap().is_empty(), "HEAD {path} has a body");
    }

    // ES 7: typed paths still read (the type is `_doc`); ES 8 and OpenSearch 2 have no types
    let es7 = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{}/j/_doc/1", es7.url()),
        Some(&json!({"g": 1})),
    );
    assert_eq!(st, 201);
    let (st, v) = call(&c, "GET", &format!("{}/j/_all/1", es7.url()), None);
    assert_eq!((st, v["_source"].clone()), (200, json!({"g": 1})));
    let (st, v) = call(&c, "GET", &format!("{}/j/_doc/_search", es7.url()), None);
    assert_eq!(
        (st, v["hits"]["total"]["value"].clone()),
        (200, json!(1)),
        "{v}"
    );
    for srv in [
        TestServer::start(ServerConfig::elasticsearch("8.15.0")),
        TestServer::start(ServerConfig::opensearch("2.11.0")),
    ] {
        let u = srv.url();
        let (st, _) = call(&c, "PUT", &format!("{u}/k/_doc/1"), Some(&json!({"h": 1})));
        assert_eq!(st, 201);
        let r = c.head(format!("{u}/k/_doc/1")).send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert!(r.bytes().unwrap().is_empty());
        let r = c.head(format!("{u}/k/_doc/2")).send().unwrap();
        assert_eq!(r.status().as_u16(), 404);
        let r = c.head(format!("{u}/missing/_doc/1")).send().unwrap();
        assert_eq!(r.status().as_u16(), 404);
        let (st, v) = call(&c, "GET", &format!("{u}/k/_all/1"), None);
        assert_eq!(st, 400, "{v}");
        assert_eq!(v["error"]["type"], "no_handler_found");
    }
}

#[test]
fn cluster_settings_defaults_flat_and_nested() {
    let c = client();
    let s = TestServer::start(ServerConfig {
        http_compression: true,
        max_content_length: 10 * 1024 * 1024,
        ..ServerConfig::elasticsearch("7.10.2")
    });
    let u = s.url();
    let (st, v) = call(&c, "GET", &format!("{u}/_cluster/settings"), None);
    assert_eq!((st, v), (200, json!({"persistent": {}, "transient": {}})));
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?include_defaults=true"),
        None,
    );
    assert_eq!(v["defaults"]["http"]["compression"], "true");
    assert_eq!(v["defaults"]["http"]["max_content_length"], "10mb");
    assert_eq!(v["defaults"]["cluster"]["name"], "testkit");
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?include_defaults=true&flat_settings=true"),
        None,
    );
    assert_eq!(v["defaults"]["http.compression"], "true");
    // filter_path matches whole property names, as on the real servers: a flat key is one name
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?include_defaults=true&flat_settings=true&filter_path=**.http.compression"),
        None,
    );
    assert_eq!(v, json!({}));
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?include_defaults=true&filter_path=*.http.compression"),
        None,
    );
    assert_eq!(v, json!({"defaults": {"http": {"compression": "true"}}}));
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?include_defaults=true&flat_settings=true&filter_path=defaults.http\\.compression"),
        None,
    );
    assert_eq!(v, json!({"defaults": {"http.compression": "true"}}));

    // dynamic settings are stored; node settings are refused; null removes
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_cluster/settings"),
        Some(
            &json!({"persistent": {"cluster": {"routing": {"allocation": {"enable": "all"}}}},
                     "transient": {"indices.recovery.max_bytes_per_sec": "50mb"}}),
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["acknowledged"], true);
    assert_eq!(
        v["persistent"]["cluster"]["routing"]["allocation"]["enable"],
        "all"
    );
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?flat_settings=true"),
        None,
    );
    assert_eq!(
        v,
        json!({"persistent": {"cluster.routing.allocation.enable": "all"},
               "transient": {"indices.recovery.max_bytes_per_sec": "50mb"}})
    );
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_cluster/settings"),
        Some(&json!({"persistent": {"http.compression": false}})),
    );
    assert_eq!(st, 400);
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("not dynamically updateable"),
        "{v}"
    );
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_cluster/settings"),
        Some(&json!({"transient": {"indices.recovery.max_bytes_per_sec": null}})),
    );
    assert_eq!(st, 200);
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/_cluster/settings?flat_settings=true"),
        None,
    );
    assert_eq!(v["transient"], json!({}));
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/_cluster/settings"),
        Some(&json!({"other": {}})),
    );
    assert_eq!(st, 400);

    // the default server reports compression off
    let plain = TestServer::start(ServerConfig::default());
    let (_, v) = call(
        &c,
        "GET",
        &format!(
            "{}/_cluster/settings?include_defaults=true&flat_settings=true",
            plain.url()
        ),
        None,
    );
    assert_eq!(v["defaults"]["http.compression"], "false");
}

#[test]
fn filter_path_applies_to_answers_not_to_errors() {
    let c = client();
    let s = TestServer::start(ServerConfig::default());
    let u = s.url();
    let (st, v) = c
        .post(format!(
            "{u}/_bulk?filter_path=errors,items.*.status,items.*._id,items.*.error"
        ))
        .header("content-type", "application/x-ndjson")
        .body(ndjson(&[
            json!({"create": {"_index": "f", "_id": "1"}}),
            json!({"a": 1}),
            json!({"create": {"_index": "f", "_id": "1"}}),
            json!({"a": 2}),
        ]))
        .send()
        .map(|r| (r.status().as_u16(), r.json::<Value>().unwrap()))
        .unwrap();
    assert_eq!(st, 200);
    assert_eq!(v["errors"], true);
    assert_eq!(
        v["items"][0],
        json!({"create": {"_id": "1", "status": 201}})
    );
    assert_eq!(v["items"][1]["create"]["status"], 409);
    assert_eq!(
        v["items"][1]["create"]["error"]["type"],
        "version_conflict_engine_exception"
    );
    assert!(v.get("took").is_none());
    let (_, v) = call(
        &c,
        "GET",
        &format!("{u}/f/_search?filter_path=hits.hits._id,-hits.total"),
        None,
    );
    assert_eq!(v, json!({"hits": {"hits": [{"_id": "1"}]}}));
    let (_, v) = call(&c, "GET", &format!("{u}/?filter_path=version.number"), None);
    assert_eq!(v, json!({"version": {"number": "2.11.0"}}));
    // errors keep their body
    let (st, v) = call(
        &c,
        "GET",
        &format!("{u}/missing/_search?filter_path=hits"),
        None,
    );
    assert_eq!(st, 404);
    assert_eq!(v["error"]["type"], "index_not_found_exception");
}

#[test]
fn extreme_values_are_answered_not_crashed_on() {
    let s = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
    let c = client();
    let u = s.url();
    // a version at i64::MAX, then a write that would increment it
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/v/_doc/1?version=9223372036854775807&version_type=external"),
        Some(&json!({"a": 1})),
    );
    assert_eq!(st, 201, "{v}");
    let (st, v) = call(&c, "PUT", &format!("{u}/v/_doc/1"), Some(&json!({"a": 2})));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["_version"], i64::MAX);
    // percentages far past 100 %
    for msm in [
        "-9223372036854775808%",
        "9223372036854775807%",
        "-9223372036854775808",
    ] {
        let (st, v) = call(
            &c,
            "POST",
            &format!("{u}/v/_search"),
            Some(
                &json!({"query": {"bool": {"should": [{"term": {"a": 2}}], "minimum_should_match": msm}}}),
            ),
        );
        assert_eq!(st, 200, "{msm}: {v}");
    }
    // sorting on a field holding numbers, numeric strings, strings and booleans: numbers first
    // (by value), then strings (as text), every document once
    let mut lines = Vec::new();
    let values = [
        json!(10),
        json!("9"),
        json!(9.5),
        json!("abc"),
        json!(true),
        json!(-3),
        json!("10"),
    ];
    for i in 0..60 {
        lines.push(json!({"index": {"_index": "mixed", "_id": format!("{i:02}")}}));
        lines.push(json!({"f": values[i % values.len()]}));
    }
    let (st, v) = bulk(&c, &u, ndjson(&lines));
    assert_eq!((st, v["errors"].clone()), (200, json!(false)));
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/mixed/_search"),
        Some(&json!({"size": 100, "sort": [{"f": "asc"}, {"_id": "asc"}]})),
    );
    assert_eq!(st, 200, "{v}");
    let hits = v["hits"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 60);
    let firsts: Vec<Value> = hits.iter().map(|h| h["sort"][0].clone()).collect();
    let mut distinct = firsts.clone();
    distinct.dedup();
    assert_eq!(
        distinct,
        vec![
            json!(true),
            json!(-3),
            json!(9.5),
            json!(10),
            json!("10"),
            json!("9"),
            json!("abc")
        ]
    );
    // search_after walks the same order without loss or repetition
    let mut after: Option<Value> = None;
    let mut seen = Vec::new();
    loop {
        let mut body = json!({"size": 7, "sort": [{"f": "asc"}, {"_id": "asc"}]});
        if let Some(a) = &after {
            body["search_after"] = a.clone();
        }
        let (_, v) = call(&c, "POST", &format!("{u}/mixed/_search"), Some(&body));
        let page = v["hits"]["hits"].as_array().unwrap().clone();
        if page.is_empty() {
            break;
        }
        after = Some(page.last().unwrap()["sort"].clone());
        seen.extend(page.iter().map(|h| h["_id"].as_str().unwrap().to_string()));
    }
    let all: Vec<String> = hits
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(seen, all);
}

/// The bulk response is filtered while it is written; it must equal the general filter's
/// answer (forced here by a `-` exclusion of a path that does not exist) for every shape.
#[test]
fn bulk_filter_path_written_directly_matches_the_general_filter() {
    let c = client();
    let filters = [
        "errors,items.*.status,items.*._id,items.*.error",
        "items.*.error.type,items.*.error.caused_by.reason",
        "items.index",
        "items.*._shards.total",
        "**.status",
        "**",
        "errors",
        "took,items.index._seq_no",
        "items.delete.result,items.update.result",
        "nothing.at.all",
        "items.*._type,items.*._index",
        "items",
    ];
    let body = ndjson(&[
        json!({"index": {"_index": "a", "_id": "1"}}),
        json!({"n": 1}),
        json!({"create": {"_index": "a", "_id": "1"}}),
        json!({"n": 2}),
        json!({"update": {"_index": "a", "_id": "1"}}),
        json!({"doc": {"n": 1}}),
        json!({"delete": {"_index": "a", "_id": "9"}}),
        json!({"index": {"_index": "a", "_id": "bad"}}),
        json!({"n": 3}),
        json!({"update": {"_index": "a", "_id": "nope"}}),
        json!({"doc": {"n": 4}}),
    ]);
    for version in ["6.8.23", "7.10.2", "8.15.0"] {
        let failing = Faults {
            failing_ids: ["bad".to_string()].into(),
            ..Faults::default()
        };
        let start = || {
            let body = if version.starts_with('6') {
                body.replace("\"_index\":\"a\"", "\"_index\":\"a\",\"_type\":\"doc\"")
            } else {
                body.clone()
            };
            let s = TestServer::start(ServerConfig {
                faults: failing.clone(),
                ..ServerConfig::elasticsearch(version)
            });
            (s, body)
        };
        let ((direct, body), (general, _)) = (start(), start());
        for f in filters {
            let send = |s: &TestServer, param: String| -> Value {
                let r = c
                    .post(format!("{}/_bulk?filter_path={param}", s.url()))
                    .header("content-type", "application/x-ndjson")
                    .body(body.clone())
                    .send()
                    .unwrap();
                assert_eq!(r.status().as_u16(), 200);
                let mut v: Value = r.json().unwrap();
                if let Some(m) = v.as_object_mut() {
                    m.remove("took");
                }
                v
            };
            let a = send(&direct, f.to_string());
            let b = send(&general, format!("{f},-no.such.path"));
            assert_eq!(a, b, "{version} filter_path={f}");
            assert_eq!(a == json!({}), f == "nothing.at.all", "{version} {f}: {a}");
        }
    }
}

/// Issue 25, point 8: an index whose mapping says `"_source": {"enabled": false}` (at
/// creation, through a template, or typed on ES 6) answers as OpenSearch (and
/// `osmem-server`) do: GET, `_mget` and `_search` hits carry no `_source`, `_source` by id is
/// 404, the documents still count and match queries; `enabled` cannot be changed later.
#[test]
fn an_index_without_source_returns_none_but_counts_and_finds() {
    let c = client();
    let os = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let u = os.url();
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/ns"),
        Some(&json!({"mappings": {"_source": {"enabled": false},
                                  "properties": {"k": {"type": "keyword"}}}})),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/_index_template/t"),
        Some(&json!({"index_patterns": ["tp*"],
                     "template": {"mappings": {"_source": {"enabled": false}}}})),
    );
    assert_eq!(st, 200, "{v}");
    for idx in ["ns", "tp1", "kept"] {
        let (st, v) = call(
            &c,
            "PUT",
            &format!("{u}/{idx}/_doc/1?refresh=true"),
            Some(&json!({"k": "abc"})),
        );
        assert_eq!(st, 201, "{idx}: {v}");
    }
    for idx in ["ns", "tp1"] {
        let (st, v) = call(&c, "GET", &format!("{u}/{idx}/_doc/1"), None);
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["found"], json!(true), "{v}");
        assert_eq!(v["_version"], json!(1), "{v}");
        assert!(v.get("_source").is_none(), "{idx}: {v}");
        let (st, v) = call(&c, "GET", &format!("{u}/{idx}/_source/1"), None);
        assert_eq!(st, 404, "{v}");
        assert_eq!(v["error"]["type"], json!("resource_not_found_exception"));
        let (st, v) = call(
            &c,
            "POST",
            &format!("{u}/{idx}/_mget"),
            Some(&json!({"docs": [{"_id": "1"}, {"_id": "2"}]})),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["docs"][0]["found"], json!(true), "{v}");
        assert!(v["docs"][0].get("_source").is_none(), "{v}");
        assert_eq!(v["docs"][1]["found"], json!(false), "{v}");
        let (st, v) = call(
            &c,
            "POST",
            &format!("{u}/{idx}/_search"),
            Some(&json!({"query": {"term": {"k": "abc"}}})),
        );
        assert_eq!(st, 200, "{v}");
        let hits = v["hits"]["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 1, "{v}");
        assert_eq!(hits[0]["_id"], json!("1"));
        assert!(hits[0].get("_source").is_none(), "{v}");
        let (_, v) = call(&c, "GET", &format!("{u}/{idx}/_count"), None);
        assert_eq!(v["count"], json!(1), "{v}");
    }
    // an index that keeps `_source` still returns it
    let (_, v) = call(&c, "GET", &format!("{u}/kept/_doc/1"), None);
    assert_eq!(v["_source"], json!({"k": "abc"}), "{v}");
    // `_source.enabled` is fixed at creation, either way; the same value is accepted
    for (idx, to) in [("ns", true), ("kept", false)] {
        let (st, v) = call(
            &c,
            "PUT",
            &format!("{u}/{idx}/_mapping"),
            Some(&json!({"_source": {"enabled": to}})),
        );
        assert_eq!(st, 400, "{idx}: {v}");
        assert_eq!(v["error"]["type"], json!("illegal_argument_exception"));
        assert!(
            v["error"]["reason"].as_str().unwrap().contains(&format!(
                "Cannot update parameter [enabled] from [{}] to [{to}]",
                !to
            )),
            "{v}"
        );
    }
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/ns/_mapping"),
        Some(&json!({"_source": {"enabled": false}})),
    );
    assert_eq!(st, 200, "{v}");
    let (_, v) = call(&c, "GET", &format!("{u}/ns/_doc/1"), None);
    assert!(v.get("_source").is_none(), "{v}");

    // what such an index still answers: doc values, in Lucene's order (this answer is
    // the one osmem-server gives for the same mapping and document)
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/dv"),
        Some(
            &json!({"mappings": {"_source": {"enabled": false}, "properties": {
            "n": {"type": "long"}, "k": {"type": "keyword"}, "b": {"type": "boolean"},
            "u": {"properties": {"age": {"type": "integer"}}},
            "ia": {"type": "keyword", "ignore_above": 3}, "t": {"type": "text"}}}}),
        ),
    );
    assert_eq!(st, 200, "{v}");
    let (st, _) = call(
        &c,
        "PUT",
        &format!("{u}/dv/_doc/1"),
        Some(
            &json!({"n": [5, 3, 5, "7"], "k": ["b", "a", "b", 12], "b": [true, false, true],
                     "u": [{"age": 3}, {"age": 1}], "ia": ["abcd", "ab"], "t": "x"}),
        ),
    );
    assert_eq!(st, 201);
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/dv/_search"),
        Some(
            &json!({"query": {"ids": {"values": ["1"]}}, "_source": false,
                     "docvalue_fields": ["n", "k", "b", "u.age", {"field": "ia"}, "unmapped"]}),
        ),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["hits"]["hits"][0]["fields"],
        json!({"b": [false, true, true], "ia": ["ab"], "k": ["12", "a", "b"],
               "n": [3, 5, 5, 7], "u.age": [1, 3]}),
        "{v}"
    );
    // a type the server cannot answer is refused, never answered wrongly
    let (st, v) = call(
        &c,
        "POST",
        &format!("{u}/dv/_search"),
        Some(&json!({"docvalue_fields": ["t"]})),
    );
    assert_eq!(st, 400, "{v}");

    // ES 6: a typed mapping
    let es6 = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let u = es6.url();
    let (st, v) = call(
        &c,
        "PUT",
        &format!("{u}/old"),
        Some(&json!({"mappings": {"doc": {"_source": {"enabled": false}}}})),
    );
    assert_eq!(st, 200, "{v}");
    let (st, _) = call(&c, "PUT", &format!("{u}/old/doc/1"), Some(&json!({"f": 1})));
    assert_eq!(st, 201);
    let (st, v) = call(&c, "GET", &format!("{u}/old/doc/1"), None);
    assert_eq!((st, v["found"].clone()), (200, json!(true)), "{v}");
    assert!(v.get("_source").is_none(), "{v}");
}

/// OpenSearch Serverless time-series and vector-search collections refuse writes that
/// name a document id (400 `illegal_argument_exception`, per `_bulk` item and for the
/// single-document API) and generate ids for those that do not; a search collection
/// takes ids (see `CollectionType` for where this was read).
#[test]
fn serverless_collections_refuse_document_ids() {
    use testkit::server::CollectionType;
    let c = client();
    for ty in [CollectionType::Timeseries, CollectionType::Vectorsearch] {
        let s = TestServer::start(ServerConfig {
            serverless: Some(ty),
            ..ServerConfig::opensearch("2.11.0")
        });
        let u = s.url();
        let (st, v) = bulk(
            &c,
            &u,
            ndjson(&[
                json!({"index": {"_index": "ts", "_id": "1"}}),
                json!({"n": 1}),
                json!({"create": {"_index": "ts", "_id": "2"}}),
                json!({"n": 2}),
                json!({"index": {"_index": "ts"}}),
                json!({"n": 3}),
                json!({"create": {"_index": "ts"}}),
                json!({"n": 4}),
            ]),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["errors"], true);
        let items = v["items"].as_array().unwrap();
        for (i, action) in [(0, "index"), (1, "create")] {
            let item = &items[i][action];
            assert_eq!(item["status"], 400, "{ty:?} {item}");
            assert_eq!(item["error"]["type"], "illegal_argument_exception");
            assert_eq!(
                item["error"]["reason"],
                "Document ID is not supported in create/index operation request"
            );
        }
        let mut generated = Vec::new();
        for (i, action) in [(2, "index"), (3, "create")] {
            let item = &items[i][action];
            assert_eq!(item["status"], 201, "{ty:?} {item}");
            let id = item["_id"].as_str().unwrap().to_string();
            assert!(!id.is_empty());
            generated.push(id);
        }
        // Only the id-less documents were kept, under the ids the server gave them.
        let docs = s.documents("ts");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[&generated[0]], json!({"n": 3}));
        assert_eq!(docs[&generated[1]], json!({"n": 4}));
        // The single-document API: with an id refused, without accepted.
        for (m, path) in [
            ("PUT", "ts/_doc/9"),
            ("PUT", "ts/_create/9"),
            ("POST", "ts/_doc/9"),
        ] {
            let (st, v) = call(&c, m, &format!("{u}/{path}"), Some(&json!({"n": 9})));
            assert_eq!(st, 400, "{m} {path}: {v}");
            assert_eq!(v["error"]["type"], "illegal_argument_exception");
        }
        let (st, v) = call(&c, "POST", &format!("{u}/ts/_doc"), Some(&json!({"n": 5})));
        assert_eq!(st, 201, "{v}");
        assert_eq!(s.doc_count("ts"), 3);
    }
    // A search collection takes ids.
    let s = TestServer::start(ServerConfig {
        serverless: Some(CollectionType::Search),
        ..ServerConfig::opensearch("2.11.0")
    });
    let (_, v) = bulk(
        &c,
        &s.url(),
        ndjson(&[
            json!({"index": {"_index": "se", "_id": "1"}}),
            json!({"n": 1}),
        ]),
    );
    assert_eq!(v["errors"], false, "{v}");
    assert_eq!(s.documents("se")["1"], json!({"n": 1}));
}
