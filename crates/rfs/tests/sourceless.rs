//! A snapshot whose index has `_source: {"enabled": false}` migrates with the default
//! `--rebuild-source auto`: the target receives documents rebuilt from doc values and
//! stored fields, and `rfs verify` (which rebuilds the same way) finds them equal. The
//! index (written by real Lucene 9.9.1 the way Elasticsearch writes each mapping type)
//! and the original sources come from `crates/snapshot/tests/data/sourceless/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use std::sync::Arc;

use serde_json::Value;
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{rfs, show};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../snapshot/tests/data/sourceless")
}

#[test]
fn a_snapshot_without_source_migrates_rebuilt_documents_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let mapping: Value =
        serde_json::from_slice(&std::fs::read(data().join("mapping.json")).unwrap()).unwrap();
    one_index_repository(&repo, "logs", &data().join("l9-nosource"), mapping);
    let originals: BTreeMap<String, Value> =
        std::fs::read_to_string(data().join("l9.sources.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (v["id"].as_str().unwrap().to_string(), v["source"].clone())
            })
            .collect();

    // inspect says what cannot be rebuilt, before anything runs
    let out = rfs().arg("inspect").arg(&repo).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("_source rebuild auto") && text.contains("cannot rebuild note"),
        "{}",
        show(&out)
    );

    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let store = format!("sqlite://{}", tmp.path().join("state.db").display());
    let log = tmp.path().join("failures.jsonl");
    let log = log.to_str().unwrap();
    let run = |store: &str, extra: &[&str]| {
        run_snap(
            &repo,
            tmp.path(),
            &server.url(),
            store,
            &[&["--failure-log", log], extra].concat(),
        )
    };

    // Without --allow-partial-source the documents whose segment has an unrebuildable
    // field are not sent: logged as partial_source, exit 7.
    let strict = format!("sqlite://{}", tmp.path().join("strict.db").display());
    let out = run(&strict, &[]);
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("skipped:partial_source"),
        "{}",
        show(&out)
    );
    let records = engine::FailureLog::read(&tmp.path().join("failures.jsonl")).unwrap();
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.error_type == "partial_source"));

    // With it, every live document arrives, rebuilt.
    let out = run(&store, &["--allow-partial-source"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let held = server.documents("logs");
    assert_eq!(
        held.keys().collect::<Vec<_>>(),
        originals.keys().collect::<Vec<_>>()
    );
    for (id, original) in &originals {
        let got = &held[id];
        // fields whose rebuilt form is the original's (the rest is compared value by
        // value in crates/snapshot/tests/rebuild.rs)
        for k in [
            "count",
            "price",
            "scaled",
            "big",
            "when",
            "when_nanos",
            "flag",
            "addr",
            "title",
            "body",
            "user",
        ] {
            assert_eq!(got[k], original[k], "{id}: {k}");
        }
        assert!(got.get("note").is_none(), "{id}: note cannot be rebuilt");
    }

    // verify, rebuilding the same way and comparing values exactly, finds them equal
    let out = rfs()
        .arg("verify")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", "snap", "--target", &server.url()])
        .args(["--all", "--allow-partial-source"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    // One value changed on the target: the report names the document and the field, in
    // the text and the JSON (the rest of the document sent back as the target holds it).
    let held = String::from_utf8(server.document_bytes("logs", "doc-3").unwrap().to_vec()).unwrap();
    let count = originals["doc-3"]["count"].as_i64().unwrap();
    let changed = held.replacen(
        &format!("\"count\":{count}"),
        &format!("\"count\":{}", count + 1),
        1,
    );
    assert_ne!(changed, held);
    let r = reqwest::blocking::Client::new()
        .put(format!("{}/logs/_doc/doc-3?refresh=true", server.url()))
        .header("content-type", "application/json")
        .body(changed)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let out = verify_text(&repo, &server.url(), &["--all", "--allow-partial-source"]);
    assert_eq!(out.status.code(), Some(6), "{}", show(&out));
    let want = format!(
        "different doc-3: field count: source {count}, target {}",
        count + 1
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&want),
        "{}",
        show(&out)
    );
    let (_, v) = verify_many(&repo, &server.url(), &["--all", "--allow-partial-source"]);
    assert_eq!(
        v["indices"][0]["different"],
        serde_json::json!(["doc-3"]),
        "{v:#}"
    );
    assert_eq!(
        v["indices"][0]["differences"],
        serde_json::json!([format!(
            "doc-3: field count: source {count}, target {}",
            count + 1
        )]),
        "{v:#}"
    );
}

/// Issue 25, point 2: the reader held at most 10,000 skipped documents between two
/// documents it gave, and the rest of a run of skips vanished: in no failure log, no
/// count, and `verify` counted only what was given. 10,500 documents without `_source`
/// (real Lucene 8.7, `crates/snapshot/tests/data/MakeManySourceless.java`) with
/// `--rebuild-source off`: every one is skipped as `no_source`, counted, logged, and the
/// run exits 7; `verify` counts 10,500 live documents.
#[test]
fn every_one_of_more_than_ten_thousand_skipped_documents_is_counted_and_logged() {
    const N: u64 = 10_500;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    many_with_mapping(
        &repo,
        serde_json::json!({
            "_source": {"enabled": false},
            "properties": {"n": {"type": "long"}}
        }),
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let log = tmp.path().join("failures.jsonl");
    let store = format!("sqlite://{}", tmp.path().join("state.db").display());
    let out = run_snap(
        &repo,
        tmp.path(),
        &server.url(),
        &store,
        &[
            "--rebuild-source",
            "off",
            "--failure-log",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    let records = engine::FailureLog::read(&log).unwrap();
    assert_eq!(records.len() as u64, N, "{}", show(&out));
    let ids: std::collections::BTreeSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len() as u64, N);
    assert!(records.iter().all(|r| r.error_type == "no_source"));
    let st = rfs()
        .args(["status", "--json", "--store", &store])
        .arg("--failure-log")
        .arg(&log)
        .output()
        .unwrap();
    let st: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["docs_skipped"].as_u64(), Some(N), "{st:#}");
    assert!(server.documents("many").is_empty());

    // verify counts the snapshot's live documents, all of them not expected
    let (_, v) = verify_many(&repo, &server.url(), &["--all", "--rebuild-source", "off"]);
    assert_eq!(v["live"].as_u64(), Some(N), "{v:#}");
}

/// The 10,500-document index without `_source` (`sourceless-many/l8`, each document's `n`
/// is the number in its id `m-NNNNN`) as a snapshot repository at `repo`.
fn many_without_source(repo: &Path) {
    many_with_mapping(
        repo,
        serde_json::json!({
            "_source": {"enabled": false},
            "properties": {"n": {"type": "long"}}
        }),
    );
}

fn many_with_mapping(repo: &Path, mapping: Value) {
    one_index_repository(
        repo,
        "many",
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../snapshot/tests/data/sourceless-many/l8"),
        mapping,
    );
}

/// A repository of snapshot `snap` holding one index: `shard` (a Lucene index directory)
/// as its only shard, with `mapping`.
fn one_index_repository(repo: &Path, index: &str, shard: &Path, mapping: Value) {
    let mut spec = SnapshotSpec::new("snap");
    spec.indices.push(IndexSpec {
        name: index.into(),
        settings: serde_json::Map::new(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping,
        }],
        aliases: serde_json::Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(shard).unwrap(),
        ))],
        extra: serde_json::Map::new(),
    });
    write_repository(repo, &[spec], &WriteOptions::default()).unwrap();
}

/// A request to the target with an independent client: (status, JSON body).
fn call(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let c = reqwest::blocking::Client::new();
    let mut rb = c.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    let r = rb.send().unwrap();
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

/// `rfs run` of snapshot `snap` of `repo` into `target`, with the store given, in `dir`.
fn run_snap(repo: &Path, dir: &Path, target: &str, store: &str, extra: &[&str]) -> Output {
    rfs()
        .arg("run")
        .arg("--repo")
        .arg(repo)
        .args(["--snapshot", "snap", "--target", target])
        .args(["--store", store, "--no-progress"])
        .args(extra)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A run into `target` with a store in `dir` that must exit 0; index `many` refreshed.
fn migrate_many(repo: &Path, dir: &Path, target: &str, extra: &[&str]) {
    let store = format!("sqlite://{}", dir.join("state.db").display());
    let out = run_snap(repo, dir, target, &store, extra);
    assert_eq!(out.status.code(), Some(0), "{target}: {}", show(&out));
    call("POST", &format!("{target}/many/_refresh"), None);
}

/// `rfs verify` of snapshot `snap` of `repo` against `target`, with its text report.
fn verify_text(repo: &Path, target: &str, extra: &[&str]) -> Output {
    rfs()
        .arg("verify")
        .arg("--repo")
        .arg(repo)
        .args(["--snapshot", "snap", "--target", target])
        .args(extra)
        .output()
        .unwrap()
}

/// `rfs verify --json`: its output and the report.
fn verify_many(repo: &Path, target: &str, extra: &[&str]) -> (Output, Value) {
    let out = verify_text(repo, target, &[&["--json"], extra].concat());
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{target}: {e}: {}", show(&out)));
    (out, v)
}

/// `m-00007` changed on `target` (`n` 8 instead of 7): `verify --all` exits 6 and names it
/// different.
fn a_changed_document_is_found_different(name: &str, target: &str, repo: &Path) {
    let (st, d) = call(
        "PUT",
        &format!("{target}/many/_doc/m-00007?refresh=true"),
        Some(serde_json::json!({"n": 8})),
    );
    assert_eq!(st, 200, "{name}: {d}");
    let (out, v) = verify_many(repo, target, &["--all"]);
    assert_eq!(out.status.code(), Some(6), "{name}: {}", show(&out));
    assert_eq!(
        v["indices"][0]["different"],
        serde_json::json!(["m-00007"]),
        "{name}: {v:#}"
    );
}

/// The repository `make` writes at a place of its own, migrated with `extra` (a run that
/// must exit 0) into the test server and into `osmem-server`; then `check(name, target,
/// repo)` for each. Nothing when osmem-server is not installed (skipped, as `test` says).
fn into_both_targets(
    test: &str,
    make: impl FnOnce(&Path),
    extra: &[&str],
    mut check: impl FnMut(&str, &str, &Path),
) {
    let Some(osmem) = testkit::services::Osmem::start(test) else {
        return;
    };
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    make(&repo);
    for (name, target) in [("test server", server.url()), ("osmem", osmem.url())] {
        let dir = tmp.path().join(name.replace(' ', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        migrate_many(&repo, &dir, &target, extra);
        check(name, &target, &repo);
    }
}

/// Issue 25, point 8: a migration of an index without `_source` keeps the mapping (the
/// target stores no `_source`, as OpenSearch, `osmem-server` and the test server do), and
/// `rfs verify` with default flags exited 6 (MISMATCH) for every sampled document right
/// after a run that exited 0. It now compares what such a target keeps — the count, that
/// every sampled id is found, and the doc values of `n` against the rebuilt documents —
/// and says that this index was not compared whole; a document missing from the target,
/// or one whose value differs, is still a MISMATCH.
#[test]
fn a_target_without_source_is_verified_by_count_ids_and_doc_values() {
    const N: u64 = 10_500;
    into_both_targets(
        "a_target_without_source_is_verified_by_count_ids_and_doc_values",
        many_without_source,
        &[],
        |name, target, repo| {
            // the target keeps the documents (counted, found by id) but not their `_source`
            let (_, m) = call("GET", &format!("{target}/many/_mapping"), None);
            assert_eq!(
                m["many"]["mappings"]["_source"]["enabled"], false,
                "{name}: {m}"
            );
            let (_, c) = call("GET", &format!("{target}/many/_count"), None);
            assert_eq!(c["count"].as_u64(), Some(N), "{name}: {c}");
            let (st, d) = call("GET", &format!("{target}/many/_doc/m-00042"), None);
            assert_eq!((st, &d["found"]), (200, &Value::Bool(true)), "{name}: {d}");
            assert!(d.get("_source").is_none(), "{name}: {d}");

            // default flags: a sample of 100, compared by id
            let (out, v) = verify_many(repo, target, &[]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
            assert_eq!(v["ok"], true, "{name}: {v:#}");
            assert_eq!(v["without_source"], serde_json::json!(["many"]), "{name}");
            let i = &v["indices"][0];
            assert_eq!(
                i["compared_by"], "count, ids and doc values",
                "{name}: {v:#}"
            );
            assert_eq!(
                i["doc_value_fields"],
                serde_json::json!(["n"]),
                "{name}: {v:#}"
            );
            assert_eq!(i["compared"].as_u64(), Some(100), "{name}: {v:#}");
            assert_eq!(i["target_count"].as_u64(), Some(N), "{name}: {v:#}");
            assert_eq!(i["missing_count"].as_u64(), Some(0), "{name}: {v:#}");
            assert_eq!(i["different_count"].as_u64(), Some(0), "{name}: {v:#}");
            // the text report names the index
            let out = verify_text(repo, target, &[]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
            assert!(
                text.contains("ok (count, ids, doc values)"),
                "{name}: {text}"
            );
            assert!(
                text.contains(
                    "not compared whole: count and ids (and doc values where listed) only"
                ) && text.contains(": many")
                    && text.contains("many: doc values compared for n"),
                "{name}: {text}"
            );

            // a document whose value the target holds differently is found different (the
            // target keeps no `_source`, only its doc values can show it)
            a_changed_document_is_found_different(name, target, repo);
            let (st, d) = call(
                "PUT",
                &format!("{target}/many/_doc/m-00007?refresh=true"),
                Some(serde_json::json!({"n": 7})),
            );
            assert_eq!(st, 200, "{name}: {d}");

            // a document the target lost is found missing, by count and by id
            let (st, d) = call(
                "DELETE",
                &format!("{target}/many/_doc/m-00042?refresh=true"),
                None,
            );
            assert_eq!(st, 200, "{name}: {d}");
            let (out, v) = verify_many(repo, target, &["--all"]);
            assert_eq!(out.status.code(), Some(6), "{name}: {}", show(&out));
            let i = &v["indices"][0];
            assert_eq!(i["compared"].as_u64(), Some(N), "{name}: {v:#}");
            assert_eq!(
                i["missing"],
                serde_json::json!(["m-00042"]),
                "{name}: {v:#}"
            );
            assert_eq!(i["target_count"].as_u64(), Some(N - 1), "{name}: {v:#}");
        },
    );
}

/// `--target-source enable`: the target index stores `_source` (the documents rebuilt from
/// doc values), returns them, and `verify --all` compares every one exactly; a changed
/// document is a MISMATCH.
#[test]
fn target_source_enable_stores_the_rebuilt_documents_and_verify_compares_them() {
    const N: u64 = 10_500;
    into_both_targets(
        "target_source_enable_stores_the_rebuilt_documents_and_verify_compares_them",
        many_without_source,
        &["--target-source", "enable"],
        |name, target, repo| {
            let (_, m) = call("GET", &format!("{target}/many/_mapping"), None);
            assert!(
                m["many"]["mappings"].get("_source").is_none(),
                "{name}: {m}"
            );
            for n in [0u64, 42, 10_499] {
                let (_, d) = call("GET", &format!("{target}/many/_doc/m-{n:05}"), None);
                assert_eq!(d["_source"], serde_json::json!({"n": n}), "{name}: {d}");
            }
            let (out, v) = verify_many(repo, target, &["--all"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
            let i = &v["indices"][0];
            assert_eq!(i["compared_by"], "documents", "{name}: {v:#}");
            assert_eq!(i["compared"].as_u64(), Some(N), "{name}: {v:#}");
            assert_eq!(v["without_source"], serde_json::json!([]), "{name}");

            // a changed document is found different
            a_changed_document_is_found_different(name, target, repo);
        },
    );
}

/// A target index without `_source` whose mapping has no field with doc values (`n` mapped
/// with `doc_values: false`, so the rebuilt documents are empty and sent with
/// `--allow-partial-source`): verify can only compare the count and the ids, and says so.
#[test]
fn a_target_without_source_or_doc_values_is_verified_by_count_and_ids_only() {
    const N: u64 = 10_500;
    into_both_targets(
        "a_target_without_source_or_doc_values_is_verified_by_count_and_ids_only",
        |repo| {
            many_with_mapping(
                repo,
                serde_json::json!({
                    "_source": {"enabled": false},
                    "properties": {"n": {"type": "long", "doc_values": false}}
                }),
            )
        },
        &["--allow-partial-source"],
        |name, target, repo| {
            let (_, c) = call("GET", &format!("{target}/many/_count"), None);
            assert_eq!(c["count"].as_u64(), Some(N), "{name}: {c}");
            let (out, v) = verify_many(repo, target, &["--allow-partial-source"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
            let i = &v["indices"][0];
            assert_eq!(i["compared_by"], "count and ids only", "{name}: {v:#}");
            assert_eq!(i["compared"].as_u64(), Some(100), "{name}: {v:#}");
            assert!(i.get("doc_value_fields").is_none(), "{name}: {v:#}");
            assert_eq!(v["without_source"], serde_json::json!(["many"]), "{name}");
            let out = verify_text(repo, target, &["--allow-partial-source"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("ok (count and ids only)"), "{name}: {text}");
        },
    );
}

/// Issue 25: on a target without `_source`, verify compares the doc values of `date`
/// (as epoch milliseconds), `float` (as the 32-bit value the target widens), `double` and
/// `ip` (canonical text) fields with the rebuilt documents, beside keyword, whole-number
/// and boolean ones. The Lucene 9.9.1 index of `data/sourceless/l9-nosource` mapped with
/// `_source` disabled, into the test server and `osmem-server`: verify exits 0; one value
/// of one document changed on the target, field by field, is a MISMATCH naming the
/// document and the field.
#[test]
fn a_target_without_source_is_verified_by_date_float_double_and_ip_doc_values() {
    let mapping = serde_json::json!({
        "_source": {"enabled": false},
        "dynamic": false,
        "properties": {
            "tag": {"type": "keyword"},
            "count": {"type": "long"},
            "price": {"type": "double"},
            "ratio": {"type": "float"},
            "when": {"type": "date"},
            "flag": {"type": "boolean"},
            "addr": {"type": "ip"}
        }
    });
    // doc-3 as the target received it: its original values of the mapped fields
    let original: Value = std::fs::read_to_string(data().join("l9.sources.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == "doc-3")
        .unwrap()["source"]
        .clone();
    let mut doc3 = serde_json::Map::new();
    for k in ["tag", "count", "price", "ratio", "when", "flag", "addr"] {
        doc3.insert(k.into(), original[k].clone());
    }
    assert_eq!(doc3["when"], "2020-09-20T08:21:40.105Z");

    into_both_targets(
        "a_target_without_source_is_verified_by_date_float_double_and_ip_doc_values",
        |repo| one_index_repository(repo, "many", &data().join("l9-nosource"), mapping),
        &["--allow-partial-source"],
        |name, target, repo| {
            let (_, m) = call("GET", &format!("{target}/many/_mapping"), None);
            assert_eq!(
                m["many"]["mappings"]["_source"]["enabled"], false,
                "{name}: {m}"
            );
            let (out, v) = verify_many(repo, target, &["--all", "--allow-partial-source"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
            let i = &v["indices"][0];
            assert_eq!(
                i["compared_by"], "count, ids and doc values",
                "{name}: {v:#}"
            );
            let mut compared: Vec<&str> = i["doc_value_fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect();
            compared.sort();
            assert_eq!(
                compared,
                ["addr", "count", "flag", "price", "ratio", "tag", "when"],
                "{name}: {v:#}"
            );
            assert_eq!(i["compared"].as_u64(), Some(233), "{name}: {v:#}");

            for (field, changed) in [
                ("when", serde_json::json!("2020-09-20T08:21:40.106Z")),
                ("ratio", serde_json::json!(103.7251)),
                ("price", serde_json::json!(9568.6400001)),
                ("addr", serde_json::json!("::2")),
            ] {
                let mut body = doc3.clone();
                body.insert(field.into(), changed);
                let (st, d) = call(
                    "PUT",
                    &format!("{target}/many/_doc/doc-3?refresh=true"),
                    Some(Value::Object(body)),
                );
                assert_eq!(st, 200, "{name}: {d}");
                let (out, v) = verify_many(repo, target, &["--all", "--allow-partial-source"]);
                assert_eq!(out.status.code(), Some(6), "{name} {field}: {}", show(&out));
                let i = &v["indices"][0];
                assert_eq!(
                    i["different"],
                    serde_json::json!(["doc-3"]),
                    "{name}: {v:#}"
                );
                assert_eq!(
                    i["different_doc_values"],
                    serde_json::json!([{"id": "doc-3", "field": field}]),
                    "{name}: {v:#}"
                );
                let out = verify_text(repo, target, &["--all", "--allow-partial-source"]);
                assert_eq!(out.status.code(), Some(6), "{name}: {}", show(&out));
                assert!(
                    String::from_utf8_lossy(&out.stdout)
                        .contains(&format!("different doc-3 (doc values of {field})")),
                    "{name}: {}",
                    show(&out)
                );
            }
            // the original values back: every document matches again
            let (st, d) = call(
                "PUT",
                &format!("{target}/many/_doc/doc-3?refresh=true"),
                Some(Value::Object(doc3.clone())),
            );
            assert_eq!(st, 200, "{name}: {d}");
            let (out, _) = verify_many(repo, target, &["--all", "--allow-partial-source"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
        },
    );
}
