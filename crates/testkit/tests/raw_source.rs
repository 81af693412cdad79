//! The test server returns `_source` byte for byte as it was indexed, as a real cluster
//! does (elastic/elasticsearch `SearchHit`/`GetResult` write it with
//! `XContentHelper.writeRawField`): numbers keep every digit and their spelling, keys
//! their order and spacing. Before, the server parsed the source into a
//! `serde_json::Value` and printed it anew: `100.26189993135631` came back as
//! `100.26189993135633`, a 30-digit integer as a float, `1.0` as `1.0` by luck only.

use std::time::Duration;

use reqwest::blocking::Client;
use testkit::server::{ServerConfig, TestServer};

const SOURCE: &str = r#"{"lat":100.26189993135631, "big":123456789012345678901234567890,"one":1.0,"e":1E+2,"s":"\u00e9"}"#;

fn text(c: &Client, method: reqwest::Method, url: &str, body: Option<&str>) -> String {
    let mut rb = c
        .request(method, url)
        .header("content-type", "application/json");
    if let Some(b) = body {
        rb = rb.body(b.to_string());
    }
    let r = rb.send().unwrap();
    assert!(r.status().is_success(), "{url}: {}", r.status());
    r.text().unwrap()
}

#[test]
fn source_is_answered_as_the_bytes_indexed() {
    let c = Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    for server in [
        TestServer::start(ServerConfig::opensearch("2.11.0")),
        TestServer::start(ServerConfig::elasticsearch("8.15.0")),
    ] {
        let u = server.url();
        let bulk = format!("{{\"index\":{{\"_index\":\"x\",\"_id\":\"1\"}}}}\n{SOURCE}\n");
        let r = c
            .post(format!("{u}/_bulk?refresh=true"))
            .header("content-type", "application/x-ndjson")
            .body(bulk)
            .send()
            .unwrap();
        assert!(r.status().is_success());
        let get = reqwest::Method::GET;
        let post = reqwest::Method::POST;
        for (what, answer) in [
            ("GET", text(&c, get.clone(), &format!("{u}/x/_doc/1"), None)),
            (
                "_source",
                text(&c, get.clone(), &format!("{u}/x/_source/1"), None),
            ),
            (
                "_mget",
                text(
                    &c,
                    post.clone(),
                    &format!("{u}/x/_mget"),
                    Some(r#"{"ids":["1"]}"#),
                ),
            ),
            (
                "_search",
                text(
                    &c,
                    post.clone(),
                    &format!("{u}/x/_search"),
                    Some(r#"{"query":{"match_all":{}}}"#),
                ),
            ),
            (
                "scroll",
                text(
                    &c,
                    post.clone(),
                    &format!("{u}/x/_search?scroll=1m"),
                    Some(r#"{"size":10,"sort":["_doc"]}"#),
                ),
            ),
        ] {
            assert!(answer.contains(SOURCE), "{what}: {answer}");
        }
        // filter_path walks into the source: the answer is still the document
        let filtered = text(
            &c,
            get.clone(),
            &format!("{u}/x/_search?filter_path=hits.hits._source.s"),
            None,
        );
        assert_eq!(filtered, r#"{"hits":{"hits":[{"_source":{"s":"é"}}]}}"#);
    }
}
