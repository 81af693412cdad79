//! `rfs verify` walks a path of its own (issues #36 "trust" and #42 "fidelity"):
//! - values compared exactly: a long number (a 30-digit integer, a numeric(40,20)) changed
//!   beyond the 16th significant digit on the target is a difference, though both sides
//!   are the same 64-bit float (the `_mget` path, on osmem-server, which keeps `_source`
//!   as sent, as a real cluster does);
//! - `--ids all`: every id of the target listed (ids only) against every id the source
//!   delivers, so one missing and one extra document are named, though the counts agree
//!   and no document is compared;
//! - a live-cluster source listed by verify's own request: an index the pattern matches
//!   that the copy left out (a dot-named one, a hidden one) is named, exit 6; excluded in
//!   the pattern, it is not.

mod common;

use std::path::Path;

use common::{rfs, run, Ran};
use serde_json::json;
use testkit::server::{ServerConfig, TestServer};
use testkit::services::Osmem;

fn copy(dir: &Path, from: &str, to: &str, extra: &[&str]) -> Ran {
    run(common::copy(dir, from, to, extra))
}

fn verify_from(from: &str, to: &str, extra: &[&str]) -> Ran {
    let mut c = rfs();
    c.arg("verify")
        .args(["--from", from, "--to", to])
        .args(extra);
    run(c)
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

/// A request with a JSON body given as text (its numbers exactly as written).
fn send(method: reqwest::Method, url: &str, body: &str) {
    let r = http()
        .request(method, url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{url}: {:?}", r.text());
}

/// `n` JSON-lines documents of `index` in `dir/<index>.jsonl`, each with a 30-digit
/// integer and a 40-digit decimal, written as text.
fn write_long_numbers(dir: &Path, index: &str, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let text: String = (0..n)
        .map(|i| {
            format!(
                "{{\"_index\":\"{index}\",\"_id\":\"{index}-{i:03}\",\"_source\":{{\"big\":1234567890123456789012345{i:05},\"d\":12345678901234567890.123456789012345{i:05},\"name\":\"doc {i}\"}}}}\n"
            )
        })
        .collect();
    std::fs::write(dir.join(format!("{index}.jsonl")), text).unwrap();
}

#[test]
fn a_long_number_changed_on_a_cluster_beyond_the_16th_digit_is_named() {
    let Some(target) =
        Osmem::start("a_long_number_changed_on_a_cluster_beyond_the_16th_digit_is_named")
    else {
        return;
    };
    // Numbers this long are refused as `long` by dynamic mapping: mapped as double (the
    // `_source` keeps them as sent).
    send(
        reqwest::Method::PUT,
        &format!("{}/nums", target.url()),
        r#"{"mappings":{"properties":{"big":{"type":"double"},"d":{"type":"double"}}}}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    write_long_numbers(&lines, "nums", 40);
    let from = format!("file://{}", lines.display());
    let r = copy(dir.path(), &from, &target.url(), &[]);
    assert_eq!(r.code, Some(0), "{r}");
    let r = verify_from(&from, &target.url(), &["--all"]);
    assert_eq!(r.code, Some(0), "{r}");

    // The 30-digit integer of one document changed in its 29th digit, the 40-digit
    // decimal of another in its last, over plain HTTP: the same f64 either way.
    send(
        reqwest::Method::PUT,
        &format!("{}/nums/_doc/nums-007?refresh=true", target.url()),
        r#"{"big":123456789012345678901234500017,"d":12345678901234567890.12345678901234500007,"name":"doc 7"}"#,
    );
    send(
        reqwest::Method::PUT,
        &format!("{}/nums/_doc/nums-011?refresh=true", target.url()),
        r#"{"name":"doc 11","d":12345678901234567890.12345678901234500012,"big":1.23456789012345678901234500011e29}"#,
    );
    // Equal values written otherwise (key order, exponent, trailing zeros): still equal.
    send(
        reqwest::Method::PUT,
        &format!("{}/nums/_doc/nums-012?refresh=true", target.url()),
        r#"{"name":"doc 12","d":12345678901234567890.1234567890123450001200,"big":1.23456789012345678901234500012e29}"#,
    );
    let r = verify_from(&from, &target.url(), &["--all"]);
    assert_eq!(r.code, Some(6), "{r}");
    let line = r
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some("nums"))
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        line.split_whitespace().skip(1).collect::<Vec<_>>(),
        ["40", "0", "40", "40", "0", "2", "MISMATCH"],
        "{r}"
    );
    assert!(r.stdout.contains("different nums-007"), "{r}");
    assert!(r.stdout.contains("different nums-011"), "{r}");
    assert!(!r.stdout.contains("different nums-012"), "{r}");
}

/// `n` plain documents of `index` in `dir/<index>.jsonl`.
fn write_lines(dir: &Path, index: &str, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let text: String = (0..n)
        .map(|i| {
            json!({"_index": index, "_id": format!("{index}-{i:04}"), "_source": {"n": i}})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join(format!("{index}.jsonl")), text).unwrap();
}

#[test]
fn every_id_listed_names_one_missing_and_one_extra_document() {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    write_lines(&lines, "alpha", 300);
    write_lines(&lines, "beta", 50);
    let from = format!("file://{}", lines.display());
    let r = copy(dir.path(), &from, &target.url(), &[]);
    assert_eq!(r.code, Some(0), "{r}");
    let r = verify_from(&from, &target.url(), &["--ids", "all", "--sample", "0"]);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.stdout
            .contains("ids: 300 in the source, 300 on the target: 0 missing, 0 extra"),
        "{r}"
    );

    // One document deleted, one put that the source does not hold, over plain HTTP: the
    // count is the same, and no document is compared (--sample 0).
    let r = http()
        .delete(format!(
            "{}/alpha/_doc/alpha-0123?refresh=true",
            target.url()
        ))
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text());
    send(
        reqwest::Method::PUT,
        &format!(
            "{}/alpha/_doc/not-from-the-source?refresh=true",
            target.url()
        ),
        r#"{"n": -1}"#,
    );
    let r = verify_from(&from, &target.url(), &["--sample", "0"]);
    assert_eq!(r.code, Some(0), "the counts agree: {r}");
    let r = verify_from(&from, &target.url(), &["--ids", "all", "--sample", "0"]);
    assert_eq!(r.code, Some(6), "{r}");
    assert!(
        r.stdout
            .contains("ids: 300 in the source, 300 on the target: 1 missing, 1 extra"),
        "{r}"
    );
    assert!(r.stdout.contains("missing   alpha-0123"), "{r}");
    assert!(r.stdout.contains("extra     not-from-the-source"), "{r}");
    assert!(
        r.stdout
            .contains("ids: 50 in the source, 50 on the target: 0 missing, 0 extra"),
        "{r}"
    );
    // The JSON report carries the same.
    let r = verify_from(
        &from,
        &target.url(),
        &["--ids", "all", "--sample", "0", "--json"],
    );
    assert_eq!(r.code, Some(6), "{r}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    let alpha = v["indices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["index"] == "alpha")
        .unwrap();
    assert_eq!(
        alpha["ids"],
        json!({"source": 300, "target": 300, "missing_count": 1, "extra_count": 1,
               "missing": ["alpha-0123"], "extra": ["not-from-the-source"]}),
        "{r}"
    );
}

#[test]
fn an_index_the_pattern_matches_that_the_copy_left_out_is_named() {
    let Some(source) = Osmem::start("an_index_the_pattern_matches_that_the_copy_left_out_is_named")
    else {
        return;
    };
    let put = |index: &str, id: &str| {
        send(
            reqwest::Method::PUT,
            &format!("{}/{index}/_doc/{id}?refresh=true", source.url()),
            r#"{"n": 1}"#,
        )
    };
    for i in 0..5 {
        put("logs-a", &format!("a{i}"));
    }
    // A dot-named index and a hidden one, both matched by `*` (expand_wildcards=all).
    put(".logs-internal", "x1");
    send(
        reqwest::Method::PUT,
        &format!("{}/logs-h", source.url()),
        r#"{"settings":{"index.hidden":true}}"#,
    );
    put("logs-h", "h1");
    put("logs-h", "h2");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let to = format!("file://{}", out.display());
    let from = format!("{}/*", source.url());
    let r = copy(dir.path(), &from, &to, &[]);
    assert_eq!(r.code, Some(0), "{r}");
    let r = verify_from(&from, &to, &["--all"]);
    assert_eq!(r.code, Some(6), "{r}");
    assert!(
        r.stdout.contains(
            "MISMATCH left out .logs-internal: the source's pattern matches it (1 documents)"
        ),
        "{r}"
    );
    assert!(
        r.stdout
            .contains("MISMATCH left out logs-h: the source's pattern matches it (2 documents)"),
        "{r}"
    );
    // logs-a itself verifies.
    assert!(
        r.stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["logs-a", "5", "0", "5", "5", "0", "0", "ok"]),
        "{r}"
    );
    let r = verify_from(&from, &to, &["--all", "--json"]);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(
        v["left_out"],
        json!([{"index": ".logs-internal", "docs": 1}, {"index": "logs-h", "docs": 2}]),
        "{r}"
    );
    // Excluded in the pattern: not left out, nothing to name.
    let from = format!("{}/*,-.logs-internal,-logs-h", source.url());
    let dir2 = tempfile::tempdir().unwrap();
    let out2 = dir2.path().join("out");
    let to2 = format!("file://{}", out2.display());
    let r = copy(dir2.path(), &from, &to2, &[]);
    assert_eq!(r.code, Some(0), "{r}");
    let r = verify_from(&from, &to2, &["--all"]);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.stdout.contains("left out"), "{r}");
}
