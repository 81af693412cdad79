//! `rfs copy --from URL --to URL` through the connector registry, with real servers:
//! `rfs export`'s JSON lines into the test server by 3 workers (one SIGKILLed mid-run and
//! started again), the demo snapshot into DynamoDB (dynalite, read back with the AWS SDK),
//! a PostgreSQL table into `_bulk`, and the demo snapshot and its JSON lines read from GCS
//! (`gs://` and `gcs://` on fake-gcs-server); every document compared one by one.

mod common;
mod dynamo;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    assert_target_holds, copy, demo, expected_documents, rfs, run, wait_for, Reaped, SNAPSHOT,
};
use dynamo::{assert_item, aws_env, json_av, s, Sdk, SdkItem, SECRET};
use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

/// `rfs export` of the demo into `out` (one `<index>.jsonl` per index).
fn export_demo(out: &Path) {
    let mut c = rfs();
    c.arg("export")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--out"])
        .arg(out)
        .arg("--failure-log")
        .arg(out.join("..").join("export-failures.jsonl"));
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
}

/// Every document of `indices` read back with plain HTTP GETs (`_search` pages by id,
/// then each `_doc`), not through rfs.
fn http_documents(base: &str, index: &str) -> BTreeMap<String, Value> {
    let http = reqwest::blocking::Client::new();
    let mut out = BTreeMap::new();
    let mut after: Option<Value> = None;
    loop {
        let mut body =
            serde_json::json!({"size": 500, "sort": [{"_id": "asc"}], "query": {"match_all": {}}});
        if let Some(a) = &after {
            body["search_after"] = a.clone();
        }
        let r: Value = http
            .post(format!("{base}/{index}/_search"))
            .json(&body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        let hits = r["hits"]["hits"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"));
        if hits.is_empty() {
            break;
        }
        for h in hits {
            let id = h["_id"].as_str().unwrap().to_string();
            assert!(out.insert(id, h["_source"].clone()).is_none(), "{h}");
        }
        after = hits.last().map(|h| h["sort"].clone());
    }
    out
}

#[test]
fn export_lines_into_bulk_by_three_workers_one_killed() {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    export_demo(&lines);
    let from = format!("file://{}", lines.display());
    // Small items (many per file) and a rate limit, so the kill lands mid-run.
    let extra = [
        "--item-bytes",
        "16384",
        "--max-docs-per-sec",
        "400",
        "--max-batch-docs",
        "20",
        "--parallel",
        "2",
        "--checkpoint-seconds",
        "0.1",
        // The killed worker's items come back when their leases run out: short ones.
        "--lease-seconds",
        "3",
        "--max-attempts",
        "40",
        "--control-seconds",
        "0.2",
    ];
    let spawn = || {
        let mut c = copy(dir.path(), &from, &target.url(), &extra);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let started = Instant::now();
    let mut workers: Vec<Reaped> = (0..3).map(|_| Reaped(Some(spawn()))).collect();
    wait_for("documents on the target", Duration::from_secs(60), || {
        target.total_doc_count() > 300
    });
    // SIGKILL: no checkpoint, no release; its items come back when their leases expire.
    let victim = workers[1].0.as_mut().unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
    workers[1] = Reaped(Some(spawn()));
    for w in &mut workers {
        let r = common::finish(w.0.take().unwrap(), started);
        assert!(matches!(r.code, Some(0) | Some(3)), "{r}");
    }
    let expected = expected_documents();
    for (index, live) in common::LIVE {
        let held = http_documents(&target.url(), index);
        assert_eq!(held.len(), live, "{index}");
        for (id, source) in &held {
            assert_eq!(
                expected.get(&(index.to_string(), id.clone())),
                Some(source),
                "{index}/{id}"
            );
        }
    }
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(st["docs_refused"], 0, "{st}");
    let failures = std::fs::read_to_string(dir.path().join("failures.jsonl")).unwrap_or_default();
    assert!(failures.trim().is_empty(), "{failures}");
}

#[test]
fn bad_lines_are_skipped_and_counted() {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    std::fs::create_dir_all(&lines).unwrap();
    std::fs::write(
        lines.join("a.jsonl"),
        concat!(
            "{\"_index\":\"a\",\"_id\":\"1\",\"_source\":{\"x\":1}}\n",
            "not json\n",
            "\n",
            "{\"_index\":\"a\",\"_id\":\"2\"}\n",
            "{\"_index\":\"a\",\"_id\":\"3\",\"_source\":{\"x\":3}}",
        ),
    )
    .unwrap();
    let r = run(copy(
        dir.path(),
        lines.to_str().unwrap(),
        &target.url(),
        &[],
    ));
    assert_eq!(r.code, Some(7), "{r}");
    let held = http_documents(&target.url(), "a");
    assert_eq!(held.keys().collect::<Vec<_>>(), ["1", "3"]);
    assert_eq!(held["3"], serde_json::json!({"x": 3}));
    let st = common::status(dir.path());
    assert_eq!(st["docs_skipped"], 2, "{st}");
    let log = std::fs::read_to_string(dir.path().join("failures.jsonl")).unwrap();
    assert!(
        log.contains("bad_line") && log.contains("no_source"),
        "{log}"
    );
    assert!(log.contains("a.jsonl at byte 43"), "{log}");
}

#[test]
fn snapshot_into_dynamodb() {
    let Some(d) = testkit::services::Dynalite::start("copy_snapshot_into_dynamodb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let to = format!(
        "dynamodb://docs?region={}&endpoint={}",
        d.region(),
        d.endpoint()
    );
    let mut c = copy(
        dir.path(),
        &format!("file://{}", demo().display()),
        &to,
        &["--snapshot", SNAPSHOT, "--create-table"],
    );
    aws_env(&mut c);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.all().contains(SECRET), "{r}");
    let sdk = Sdk::new(&d.endpoint());
    assert_eq!(
        sdk.key_schema("docs"),
        vec![
            ("_index".to_string(), "HASH".to_string(), "S".to_string()),
            ("_id".to_string(), "RANGE".to_string(), "S".to_string())
        ]
    );
    let items = sdk.scan("docs");
    let expected = expected_documents();
    // The demo's ids are unique across its indices: one item per document.
    assert_eq!(items.len(), expected.len());
    let by_id: BTreeMap<String, &SdkItem> = items
        .iter()
        .map(|i| match &i["_id"] {
            dynamo::Av::S(id) => (id.clone(), i),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(by_id.len(), expected.len());
    for ((index, id), source) in &expected {
        let mut want: SdkItem = source
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), json_av(v)))
            .collect();
        want.insert("_id".into(), s(id.clone()));
        want.insert("_index".into(), s(index.clone()));
        assert_item(id, by_id[id], &want);
    }
}

/// The run finished with every document delivered and nothing in the failure log.
fn assert_clean_run(dir: &Path) {
    let st = common::status(dir);
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(st["docs_refused"], 0, "{st}");
    let failures = std::fs::read_to_string(dir.join("failures.jsonl")).unwrap_or_default();
    assert!(failures.trim().is_empty(), "{failures}");
}

#[test]
fn snapshot_from_gcs_into_bulk() {
    let Some(gcs) = testkit::services::FakeGcs::start("copy_snapshot_from_gcs_into_bulk") else {
        return;
    };
    gcs.create_bucket("snapshots");
    gcs.put_dir("snapshots", "repos/demo", &demo());
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        "gs://snapshots/repos/demo",
        &target.url(),
        &["--snapshot", SNAPSHOT, "--gcs-endpoint", &gcs.endpoint()],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_target_holds(&target, &["books", "reviews"]);
    assert_clean_run(dir.path());

    // A bucket that is not there: a failure naming it. The endpoint and a service-account
    // file (tokens off, as an emulator's) come from the environment this time; the key
    // never reaches the output.
    let dir = tempfile::tempdir().unwrap();
    let account = dir.path().join("account.json");
    std::fs::write(
        &account,
        serde_json::json!({
            "private_key": "PLANTED-PRIVATE-KEY",
            "private_key_id": "PLANTED-KEY-ID",
            "client_email": "rfs@example.invalid",
            "disable_oauth": true,
        })
        .to_string(),
    )
    .unwrap();
    let mut c = copy(
        dir.path(),
        "gs://no-such-bucket/repos/demo",
        &target.url(),
        &["--snapshot", SNAPSHOT],
    );
    c.env("RFS_GCS_ENDPOINT", gcs.endpoint())
        .env("RFS_GCS_SERVICE_ACCOUNT", &account);
    let r = run(c);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.stderr.contains("gs://no-such-bucket/repos/demo"), "{r}");
    assert!(!r.all().contains("PLANTED-"), "{r}");
}

#[test]
fn lines_from_gcs_into_bulk() {
    let Some(gcs) = testkit::services::FakeGcs::start("copy_lines_from_gcs_into_bulk") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    export_demo(&lines);
    gcs.create_bucket("exports");
    gcs.put_dir("exports", "demo/lines", &lines);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    // The endpoint as Google's clients take it: STORAGE_EMULATOR_HOST, a bare host:port.
    let mut c = copy(
        dir.path(),
        "gs://exports/demo/lines",
        &target.url(),
        &["--item-bytes", "65536"],
    );
    c.env(
        "STORAGE_EMULATOR_HOST",
        gcs.endpoint().trim_start_matches("http://"),
    );
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert_target_holds(&target, &["books", "reviews"]);
    assert_clean_run(dir.path());
}

/// `gcs://` names the same store as `gs://` for `copy` as it does for `run --repo`
/// (the snapshot connector takes its schemes from `blobstore::SCHEMES`).
#[test]
fn snapshot_from_gcs_scheme_into_bulk() {
    let Some(gcs) = testkit::services::FakeGcs::start("copy_snapshot_from_gcs_scheme") else {
        return;
    };
    gcs.create_bucket("snapshots");
    gcs.put_dir("snapshots", "repos/demo", &demo());
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        "gcs://snapshots/repos/demo",
        &target.url(),
        &["--snapshot", SNAPSHOT, "--gcs-endpoint", &gcs.endpoint()],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_target_holds(&target, &["books", "reviews"]);
    assert_clean_run(dir.path());
}

/// `--create-metadata` from a snapshot: each chosen index is created before its documents
/// exactly as `rfs metadata migrate` creates it (the same settings, mappings and aliases
/// on a second target); an index left out by `--index` is not created.
#[test]
fn create_metadata_from_a_snapshot_creates_what_metadata_migrate_creates() {
    let copied = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let migrated = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        &demo().display().to_string(),
        &copied.url(),
        &[
            "--snapshot",
            SNAPSHOT,
            "--create-metadata",
            "--index",
            "books",
        ],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_target_holds(&copied, &["books"]);
    assert!(!copied.index_names().contains(&"reviews".to_string()));
    let mut c = rfs();
    c.args([
        "metadata",
        "migrate",
        "--snapshot",
        SNAPSHOT,
        "--index",
        "books",
    ])
    .arg("--target")
    .arg(migrated.url())
    .arg(demo());
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    // What the target decides itself (a uuid, the creation time) set aside.
    let definition = |server: &TestServer| {
        let mut v: Value =
            reqwest::blocking::get(format!("{}/books?flat_settings=true", server.url()))
                .unwrap()
                .json()
                .unwrap();
        let settings = v["books"]["settings"].as_object_mut().unwrap();
        settings.retain(|k, _| !k.contains("uuid") && !k.contains("creation_date"));
        v
    };
    let (a, b) = (definition(&copied), definition(&migrated));
    assert!(a["books"]["mappings"]["properties"].is_object(), "{a}");
    assert_eq!(a, b);
}

#[test]
fn table_into_bulk() {
    let Some(pg) = common_pg() else {
        return;
    };
    pg.exec(
        "CREATE TABLE events (id bigint PRIMARY KEY, room text NOT NULL, n int, doc jsonb);
         INSERT INTO events SELECT i, 'room-' || (i % 7), i * 3, jsonb_build_object('k', i)
           FROM generate_series(1, 500) i;",
    );
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}?table=events&key=id&slots=5", pg.url());
    let r = run(copy(
        dir.path(),
        &from,
        &format!("{}/ev", target.url()),
        &[],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    let held = http_documents(&target.url(), "ev");
    assert_eq!(held.len(), 500);
    for i in 1..=500i64 {
        let want = serde_json::json!({
            "id": i, "room": format!("room-{}", i % 7), "n": i * 3, "doc": {"k": i}
        });
        assert_eq!(held.get(&i.to_string()), Some(&want), "{i}");
    }
}

/// Loads `n` documents into `index` of `server` with a plain HTTP `_bulk` (of mapping type
/// `doc` when the server is Elasticsearch ≤ 6).
fn load(server: &TestServer, index: &str, n: usize) -> BTreeMap<String, Value> {
    let root: Value = reqwest::blocking::get(server.url())
        .unwrap()
        .json()
        .unwrap();
    let typed = root["version"]["distribution"].is_null()
        && root["version"]["number"]
            .as_str()
            .is_some_and(|v| v.split('.').next().unwrap().parse::<u32>().unwrap() <= 6);
    let mut body = String::new();
    let mut docs = BTreeMap::new();
    for i in 0..n {
        let id = format!("{index}-{i:05}");
        let source = serde_json::json!({"n": i, "index": index, "text": "ü".repeat(i % 13)});
        let mut meta = serde_json::json!({"index": {"_index": index, "_id": id}});
        if typed {
            meta["index"]["_type"] = "doc".into();
        }
        body.push_str(&meta.to_string());
        body.push('\n');
        body.push_str(&source.to_string());
        body.push('\n');
        docs.insert(id, source);
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    docs
}

#[test]
fn live_cluster_into_bulk_by_three_workers_one_killed() {
    three_workers_one_killed(&TestServer::start(ServerConfig::opensearch("2.11.0")));
}

/// Elasticsearch 6.8 has no point in time: the same copy by sliced scroll, the killed
/// worker's items resumed by count (the index does not change meanwhile).
#[test]
fn live_cluster_by_scroll_by_three_workers_one_killed() {
    three_workers_one_killed(&TestServer::start(ServerConfig::elasticsearch("6.8.23")));
}

/// `logs-a` (700) and `logs-b` (500) of `source` (and `other`, not named) copied by
/// `--from source/logs-*` into a fresh OpenSearch by 3 workers, one SIGKILLed mid-run and
/// started again: every document on the target once, compared one by one over plain HTTP.
fn three_workers_one_killed(source: &TestServer) {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let mut want = BTreeMap::new();
    for (index, n) in [("logs-a", 700), ("logs-b", 500)] {
        want.insert(index, load(source, index, n));
    }
    load(source, "other", 10);
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}/logs-*", source.url());
    let extra = [
        "--slices",
        "3",
        "--max-docs-per-sec",
        "300",
        "--max-batch-docs",
        "20",
        "--parallel",
        "2",
        "--checkpoint-seconds",
        "0.1",
        // The killed worker's items come back when their leases run out: short ones.
        "--lease-seconds",
        "3",
        "--max-attempts",
        "40",
        "--control-seconds",
        "0.2",
    ];
    let spawn = || {
        let mut c = copy(dir.path(), &from, &target.url(), &extra);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let started = Instant::now();
    let mut workers: Vec<Reaped> = (0..3).map(|_| Reaped(Some(spawn()))).collect();
    wait_for("documents on the target", Duration::from_secs(60), || {
        target.total_doc_count() > 200
    });
    let victim = workers[0].0.as_mut().unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
    workers[0] = Reaped(Some(spawn()));
    for w in &mut workers {
        let r = common::finish(w.0.take().unwrap(), started);
        assert!(matches!(r.code, Some(0) | Some(3)), "{r}");
    }
    for (index, docs) in &want {
        let held = http_documents(&target.url(), index);
        assert_eq!(&held, docs, "{index}");
    }
    // The index the pattern does not name was not copied, not even created.
    let other = reqwest::blocking::get(format!("{}/other", target.url())).unwrap();
    assert_eq!(other.status(), reqwest::StatusCode::NOT_FOUND);
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(st["docs_refused"], 0, "{st}");
    assert!(st.get("accounting").is_none(), "{st}");
}

/// Two scroll contexts expire mid-slice (as when a page waits longer than the keep-alive):
/// each item fails on its next page and is retried from its checkpoint; no document is
/// lost or doubled and the run ends 0 with exact counts.
#[test]
fn an_expired_scroll_fails_its_item_which_is_retried() {
    let source = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let want = load(&source, "logs", 2500);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    // Pages are 1000 hits: each of the 2 slices (about 1250) needs a continuation.
    source.set_faults(testkit::server::Faults {
        expire_scrolls: 2,
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--slices", "2", "--checkpoint-seconds", "0.1"];
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &extra,
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(source.faults().expire_scrolls, 0, "both expiries were met");
    assert!(r.all().contains("scroll context is gone"), "{r}");
    assert_eq!(http_documents(&target.url(), "logs"), want);
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["items"]["done"], 2, "{st}");
    assert_eq!(st["items"]["failed"], 0, "{st}");
    assert_eq!(st["docs_done"], 2500, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(st["docs_refused"], 0, "{st}");
    assert!(st.get("accounting").is_none(), "{st}");
    // Every scroll was cleared or expired.
    assert_eq!(source.open_search_contexts(), 0);
}

/// Elasticsearch 5.6: one shard fails while two scrolls open (answered 200 with
/// `_shards.failed: 1`, that shard's documents in neither the hits nor `hits.total`, as a
/// real cluster answers): each item fails by that reason rather than end done with a fifth
/// of its documents missing, and is read again; every document arrives once, exit 0.
#[test]
fn a_failed_shard_fails_its_scroll_item_which_is_retried() {
    let source = TestServer::start(ServerConfig::elasticsearch("5.6.16"));
    let want = load(&source, "logs", 1500);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    source.set_faults(testkit::server::Faults {
        scroll_shard_failures: 2,
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--slices", "2", "--checkpoint-seconds", "0.1"];
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &extra,
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        source.faults().scroll_shard_failures,
        0,
        "both failures were met"
    );
    assert!(r.all().contains("1 of 5 shards failed"), "{r}");
    assert_eq!(http_documents(&target.url(), "logs"), want);
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["items"]["done"], 2, "{st}");
    assert_eq!(st["docs_done"], 1500, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(source.open_search_contexts(), 0);
}

/// Elasticsearch 7.17 (point in time): one shard fails on the first page of both slices
/// (answered 200 with `_shards.failed: 1`, that shard's documents in neither the hits nor
/// `hits.total`; each slice fits one page, so the count cannot show them lost): each item
/// fails by that reason rather than end done without them, and is read again; every
/// document arrives once, exit 0.
#[test]
fn a_failed_shard_fails_its_pit_item_which_is_retried() {
    let source = TestServer::start(ServerConfig::elasticsearch("7.17.9"));
    let want = load(&source, "logs", 1500);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    source.set_faults(testkit::server::Faults {
        pit_shard_failures: 2,
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--slices", "2", "--checkpoint-seconds", "0.1"];
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &extra,
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        source.faults().pit_shard_failures,
        0,
        "both failures were met"
    );
    // Both failures are logged (the retries), naming the index and slice.
    assert!(r.all().matches("1 of 5 shards failed").count() >= 2, "{r}");
    assert!(r.all().contains("/logs slice "), "{r}");
    assert!(r.all().contains("node_disconnected_exception"), "{r}");
    assert_eq!(http_documents(&target.url(), "logs"), want);
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["items"]["done"], 2, "{st}");
    assert_eq!(st["items"]["failed"], 0, "{st}");
    assert_eq!(st["docs_done"], 1500, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(st["docs_refused"], 0, "{st}");
    assert_eq!(source.open_search_contexts(), 0);
}

/// Elasticsearch 5.6: an index with two mapping types may hold one `_id` in both, which a
/// typeless target index cannot keep apart: the copy refuses it by name before reading
/// anything, instead of letting one document silently replace the other.
#[test]
fn a_multi_type_index_is_refused_by_name() {
    let source = TestServer::start(ServerConfig::elasticsearch("5.6.16"));
    let two = serde_json::json!({"mappings": {
        "doc": {"properties": {"n": {"type": "long"}}},
        "event": {"properties": {"at": {"type": "date"}}},
    }});
    let r = reqwest::blocking::Client::new()
        .put(format!("{}/legacy", source.url()))
        .json(&two)
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text());
    load(&source, "legacy", 5);
    load(&source, "single", 5);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        &format!("{}/legacy,single", source.url()),
        &target.url(),
        &[],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("legacy [doc, event]"), "{r}");
    assert!(r.all().contains("several mapping types"), "{r}");
    assert!(!r.all().contains("single ["), "{r}");
    assert_eq!(target.total_doc_count(), 0);
    // The single-type index alone is copied.
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        &format!("{}/single", source.url()),
        &target.url(),
        &[],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(http_documents(&target.url(), "single").len(), 5);
}

#[test]
fn a_cluster_without_sliced_reads_is_refused_by_name() {
    let source = TestServer::start(ServerConfig::elasticsearch("2.4.6"));
    load(&source, "logs", 3);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!(
        "{}/logs",
        source.url().replace("http://", "http://u:secret@")
    );
    let r = run(copy(dir.path(), &from, &target.url(), &[]));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("nor sliced scroll"), "{r}");
    assert!(!r.all().contains("secret"), "{r}");
    assert_eq!(target.total_doc_count(), 0);
}

mod table;

fn common_pg() -> Option<table::Pg> {
    table::Pg::start("copy_table_into_bulk")
}

/// `--from-param`/`--to-param KEY=VALUE` reach the connectors: JSON lines (cut into
/// 4096-byte items by `item-bytes`) into files written as `_bulk` bodies (`format=bulk`),
/// every document read back one by one; a parameter only another kind of source takes is
/// refused naming the kind that takes it, one no sink takes naming what this one takes,
/// and a value without `=` is a usage error.
#[test]
fn connector_parameters_reach_the_connectors() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    std::fs::create_dir_all(&lines).unwrap();
    let mut text = String::new();
    let mut want = BTreeMap::new();
    for i in 0..200 {
        let source = serde_json::json!({"n": i, "pad": "x".repeat(40)});
        text.push_str(&format!(
            "{{\"_index\":\"a\",\"_id\":\"{i}\",\"_source\":{source}}}\n"
        ));
        want.insert(i.to_string(), source);
    }
    assert!(text.len() > 3 * 4096, "several items of 4096 bytes");
    std::fs::write(lines.join("a.jsonl"), text).unwrap();
    let out = dir.path().join("out");
    let r = run(copy(
        dir.path(),
        lines.to_str().unwrap(),
        out.to_str().unwrap(),
        &[
            "--from-param",
            "item-bytes=4096",
            "--to-param",
            "format=bulk",
        ],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    let files: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.starts_with("a.") && name.ends_with(".bulk"), "{name}");
    let body = std::fs::read_to_string(&files[0]).unwrap();
    let body: Vec<&str> = body.lines().collect();
    assert_eq!(body.len(), 2 * want.len());
    let mut held = BTreeMap::new();
    for pair in body.chunks(2) {
        let action: Value = serde_json::from_str(pair[0]).unwrap();
        let meta = action.as_object().unwrap().values().next().unwrap();
        assert_eq!(meta["_index"], "a", "{action}");
        let id = meta["_id"].as_str().unwrap().to_string();
        held.insert(id, serde_json::from_str::<Value>(pair[1]).unwrap());
    }
    assert_eq!(held, want);
    let st = common::status(dir.path());
    // 200 lines of 87 to 89 bytes in items of 4096 bytes: 5 items, not one.
    assert!(st["items"]["total"].as_u64().unwrap() >= 4, "{st:#}");

    let refused = |extra: &[&str]| {
        let d = tempfile::tempdir().unwrap();
        let r = run(copy(
            d.path(),
            lines.to_str().unwrap(),
            d.path().join("out").to_str().unwrap(),
            extra,
        ));
        (r.code, r.all())
    };
    let (code, all) = refused(&["--from-param", "slices=2"]);
    assert_eq!(code, Some(1), "{all}");
    assert!(
        all.contains("slices applies to a http:// source only"),
        "{all}"
    );
    let (code, all) = refused(&["--to-param", "bogus=1"]);
    assert_eq!(code, Some(1), "{all}");
    assert!(
        all.contains("bogus: the files sink takes no such parameter (it takes format)"),
        "{all}"
    );
    let (code, all) = refused(&["--to-param", "format"]);
    assert_eq!(code, Some(2), "{all}");
    assert!(all.contains("expected KEY=VALUE"), "{all}");
}
