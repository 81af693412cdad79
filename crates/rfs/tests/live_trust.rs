//! The live-cluster source never finishes an item with documents missing (issue #36): a
//! restart with other `--slices` reads the slices of the plan; a resume after a delete
//! continues in the point in time of the plan; a page that timed out fails its item;
//! versions without point-in-time slicing or `_shard_doc` are read by scroll. Every copy
//! is read back from the target over plain HTTP and compared document by document.

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{copy, run, wait_for, Ran, Reaped};
use serde_json::Value;
use testkit::server::{Faults, ServerConfig, TestServer};

/// Loads `n` documents into `index` of `server` with a plain HTTP `_bulk`, in id order.
fn load(server: &TestServer, index: &str, n: usize) -> BTreeMap<String, Value> {
    let mut body = String::new();
    let mut docs = BTreeMap::new();
    for i in 0..n {
        let id = format!("{index}-{i:05}");
        let source = serde_json::json!({"n": i, "text": "é".repeat(i % 7)});
        let meta = serde_json::json!({"index": {"_index": index, "_id": id}});
        body.push_str(&format!("{meta}\n{source}\n"));
        docs.insert(id, source);
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    docs
}

/// Every document of `index` read back with plain HTTP searches sorted by `_id`.
fn http_documents(base: &str, index: &str) -> BTreeMap<String, Value> {
    let http = reqwest::blocking::Client::new();
    let mut out = BTreeMap::new();
    let mut after: Option<Value> = None;
    loop {
        let mut body = serde_json::json!({"size": 500, "sort": [{"_id": "asc"}]});
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

/// Compares the target's documents with `want`, naming the first few differences.
fn assert_same(held: &BTreeMap<String, Value>, want: &BTreeMap<String, Value>) {
    let missing: Vec<&String> = want.keys().filter(|k| !held.contains_key(*k)).collect();
    let extra: Vec<&String> = held.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} of {} held; missing {:?}…, extra {:?}…",
        held.len(),
        want.len(),
        &missing[..missing.len().min(5)],
        &extra[..extra.len().min(5)]
    );
    for (id, source) in want {
        assert_eq!(held.get(id), Some(source), "{id}");
    }
}

/// Stops a copy with SIGTERM (a graceful stop: batches in flight finish, the items are
/// checkpointed and released) and returns how it ended.
fn stop(mut child: Reaped, started: Instant) -> Ran {
    let c: Child = child.0.take().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(c.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    common::finish(c, started)
}

/// Starts a throttled copy of `index` and stops it once `at_least` documents are on the
/// target (before all are): the migration is left part-way, with checkpoints.
fn copy_part_way(
    dir: &std::path::Path,
    source: &TestServer,
    target: &TestServer,
    index: &str,
    extra: &[&str],
    at_least: u64,
) {
    let mut args = vec![
        "--max-docs-per-sec",
        "400",
        "--max-batch-docs",
        "20",
        "--checkpoint-seconds",
        "0.1",
    ];
    args.extend_from_slice(extra);
    let mut c = copy(
        dir,
        &format!("{}/{index}", source.url()),
        &target.url(),
        &args,
    );
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let child = Reaped(Some(c.spawn().unwrap()));
    wait_for("documents on the target", Duration::from_secs(60), || {
        target.total_doc_count() >= at_least
    });
    let r = stop(child, started);
    assert_eq!(r.code, Some(5), "a graceful stop: {r}");
    let st = common::status(dir);
    assert_eq!(st["finished"], false, "stopped part-way: {st}");
    assert!(st["docs_done"].as_u64().unwrap() > 0, "{st}");
}

/// The end of a copy that must deliver everything: exit 0, every document on the target,
/// the migration finished with exact counts.
fn assert_complete(
    dir: &std::path::Path,
    r: &Ran,
    target: &TestServer,
    index: &str,
    want: &BTreeMap<String, Value>,
) {
    assert_eq!(r.code, Some(0), "{r}");
    assert_same(&http_documents(&target.url(), index), want);
    let st = common::status(dir);
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["docs_done"], want.len() as u64, "{st}");
    assert_eq!(st["docs_skipped"], 0, "{st}");
    assert_eq!(st["docs_refused"], 0, "{st}");
    assert!(st.get("accounting").is_none(), "{st}");
}

/// Stopped part-way with 4 slices, restarted with `--slices 16`: each item is read as the
/// plan cut it (slice n of 4, recorded in the item), not as slice n of 16, with a WARN
/// that the plan's value wins. All 2,000 documents arrive, exit 0. (Before the fix the
/// restart read a sixteenth of each unfinished slice: 1,506 of 2,000, exit 0.)
#[test]
fn a_restart_with_other_slices_reads_the_slices_of_the_plan() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let want = load(&source, "logs", 2000);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    copy_part_way(
        dir.path(),
        &source,
        &target,
        "logs",
        &["--slices", "4"],
        300,
    );
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &["--slices", "16", "--checkpoint-seconds", "0.1"],
    ));
    assert!(r.all().contains("the plan's value wins"), "{r}");
    assert!(r.all().contains("4 slices"), "{r}");
    assert_complete(dir.path(), &r, &target, "logs", &want);
}

/// The same by scroll (Elasticsearch 6.8): the slice of the plan, whatever `--slices` says.
#[test]
fn a_restart_with_other_slices_reads_the_slices_of_the_plan_by_scroll() {
    let source = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let mut body = String::new();
    let mut want = BTreeMap::new();
    for i in 0..2000 {
        let id = format!("old-{i:05}");
        let doc = serde_json::json!({"n": i});
        body.push_str(&format!(
            "{{\"index\":{{\"_index\":\"old\",\"_type\":\"doc\",\"_id\":\"{id}\"}}}}\n{doc}\n"
        ));
        want.insert(id, doc);
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", source.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    copy_part_way(dir.path(), &source, &target, "old", &["--slices", "3"], 300);
    let r = run(copy(
        dir.path(),
        &format!("{}/old", source.url()),
        &target.url(),
        &["--slices", "7", "--checkpoint-seconds", "0.1"],
    ));
    assert!(r.all().contains("the plan's value wins"), "{r}");
    assert_complete(dir.path(), &r, &target, "old", &want);
}

/// Stopped at a checkpoint, the first document (already copied) deleted in the source,
/// then resumed: the read continues in the point in time the plan opened, where every
/// document keeps its `_shard_doc`, so no untouched document is passed over. (Before the
/// fix the resume opened a new point in time, where the test server, as a real cluster
/// after a delete and a merge, numbers the documents anew: the one after the checkpoint
/// was lost, exit 0.)
#[test]
fn a_resume_after_a_delete_continues_in_the_point_in_time_of_the_plan() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let want = load(&source, "logs", 2000);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    copy_part_way(
        dir.path(),
        &source,
        &target,
        "logs",
        &["--slices", "1"],
        300,
    );
    // The first document in the index's order, copied before the stop.
    let first = "logs-00000";
    let held = http_documents(&target.url(), "logs");
    assert!(held.contains_key(first));
    let r = reqwest::blocking::Client::new()
        .delete(format!("{}/logs/_doc/{first}?refresh=true", source.url()))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &["--slices", "1", "--checkpoint-seconds", "0.1"],
    ));
    // Every other document arrives (and the deleted one was copied before it was deleted).
    assert_complete(dir.path(), &r, &target, "logs", &want);
}

/// Two pages time out on a shard (`timed_out: true`, `_shards.failed: 0`, that shard's
/// hits missing from the page and from `hits.total`, as a cluster with a search timeout
/// answers): each fails its item, which is read again; every document arrives, exit 0.
/// (Before the fix the pages passed as complete: documents missing, exit 0.)
#[test]
fn a_timed_out_page_fails_its_item_which_is_retried() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let want = load(&source, "logs", 1500);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    source.set_faults(Faults {
        timed_out_pages: 2,
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &["--slices", "2", "--checkpoint-seconds", "0.1"],
    ));
    assert_eq!(
        source.faults().timed_out_pages,
        0,
        "both time-outs were met: {r}"
    );
    assert!(r.all().matches("timed out").count() >= 2, "{r}");
    assert!(r.all().contains("/logs slice "), "{r}");
    assert_complete(dir.path(), &r, &target, "logs", &want);
}

/// Elasticsearch 7.10–7.14 and OpenSearch before 3.3 cannot slice a point in time (and
/// 7.10, 7.11 and OpenSearch 2.x have no `_shard_doc`): the test server refuses both as
/// they do, and the source reads such clusters by sliced scroll. Elasticsearch 7.15+ and
/// OpenSearch 3.3 are read through a point in time. Every document arrives, exit 0.
#[test]
fn versions_without_point_in_time_slicing_are_read_by_scroll() {
    for config in [
        ServerConfig::elasticsearch("7.10.2"),
        ServerConfig::elasticsearch("7.14.2"),
        ServerConfig::opensearch("2.11.0"),
        ServerConfig::opensearch("3.2.0"),
        ServerConfig::elasticsearch("7.17.9"),
        ServerConfig::opensearch("3.3.0"),
    ] {
        let what = format!("{config:?}");
        let source = TestServer::start(config);
        let want = load(&source, "logs", 700);
        let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
        let dir = tempfile::tempdir().unwrap();
        let r = run(copy(
            dir.path(),
            &format!("{}/logs", source.url()),
            &target.url(),
            &["--slices", "2"],
        ));
        assert_eq!(r.code, Some(0), "{what}: {r}");
        assert_complete(dir.path(), &r, &target, "logs", &want);
        assert_eq!(source.open_search_contexts(), 0, "{what}");
    }
}

/// Writes `docs` (id → source) into `index` of `server` with a plain HTTP `_bulk`.
fn put(server: &TestServer, index: &str, docs: &BTreeMap<String, Value>) {
    let mut body = String::new();
    for (id, source) in docs {
        let meta = serde_json::json!({"index": {"_index": index, "_id": id}});
        body.push_str(&format!("{meta}\n{source}\n"));
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
}

/// Deletes `ids` from `index` of `server` with plain HTTP.
fn remove(server: &TestServer, index: &str, ids: &[&str]) {
    for id in ids {
        let r = reqwest::blocking::Client::new()
            .delete(format!("{}/{index}/_doc/{id}?refresh=true", server.url()))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{id}");
    }
}

/// `rfs status` as text.
fn status_text(dir: &std::path::Path) -> String {
    let mut c = common::rfs();
    c.args(["status", "--store", &common::sqlite(dir)])
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"));
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    r.stdout
}

/// Documents `late-…` for `put`.
fn late(n: usize) -> BTreeMap<String, Value> {
    (0..n)
        .map(|i| (format!("late-{i:03}"), serde_json::json!({"late": i})))
        .collect()
}

/// The plan records each index's total as the count under its point in time: documents
/// written after the plan are in neither that count nor the reads (which stay in the same
/// point in time), so the copy — stopped part-way, 20 documents written, resumed — holds
/// exactly the 1,000 of the plan, and `rfs status` says every document was delivered
/// against that exact total (JSON: `source_totals: proved`, the index's `source_total`).
#[test]
fn documents_written_after_the_plan_are_outside_its_exact_total() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let want = load(&source, "logs", 1000);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    copy_part_way(
        dir.path(),
        &source,
        &target,
        "logs",
        &["--slices", "2"],
        200,
    );
    put(&source, "logs", &late(20));
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &["--slices", "2", "--checkpoint-seconds", "0.1"],
    ));
    assert_complete(dir.path(), &r, &target, "logs", &want);
    let st = common::status(dir.path());
    assert_eq!(st["source_totals"], "proved", "{st}");
    let total = &st["per_index"]["logs"]["source_total"];
    assert_eq!(total["docs"], 1000, "{st}");
    assert_eq!(total["count"], "exact", "{st}");
    assert_eq!(total["verdict"], "proved", "{st}");
    let text = status_text(dir.path());
    assert!(
        text.contains("state: FINISHED: every document delivered   control"),
        "{text}"
    );
}

/// Read by scroll (Elasticsearch 6.8), the plan's total is a `_count` taken before the
/// reads: an estimate. A document deleted after the plan and before it was read is not on
/// the target (the source no longer has it) and every item finishes, exit 0 — but the
/// counts do not equal the total, so `rfs status` does not say "every document
/// delivered": it names the index, both numbers and that the total is an estimate.
#[test]
fn status_does_not_claim_every_document_when_an_estimated_total_differs() {
    let source = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let mut body = String::new();
    let mut want = BTreeMap::new();
    for i in 0..2000 {
        let id = format!("old-{i:05}");
        let doc = serde_json::json!({"n": i});
        body.push_str(&format!(
            "{{\"index\":{{\"_index\":\"old\",\"_type\":\"doc\",\"_id\":\"{id}\"}}}}\n{doc}\n"
        ));
        want.insert(id, doc);
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", source.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    copy_part_way(dir.path(), &source, &target, "old", &["--slices", "1"], 300);
    // The last document in the index's order: not copied before the stop.
    let gone = "old-01999";
    assert!(!http_documents(&target.url(), "old").contains_key(gone));
    let r = reqwest::blocking::Client::new()
        .delete(format!("{}/old/doc/{gone}?refresh=true", source.url()))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    want.remove(gone);
    let r = run(copy(
        dir.path(),
        &format!("{}/old", source.url()),
        &target.url(),
        &["--slices", "1", "--checkpoint-seconds", "0.1"],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_same(&http_documents(&target.url(), "old"), &want);
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
    assert_eq!(st["source_totals"], "differs", "{st}");
    assert_eq!(st["totals_differ"][0]["index"], "old", "{st}");
    assert_eq!(st["totals_differ"][0]["total"], 2000, "{st}");
    assert_eq!(st["totals_differ"][0]["accounted"], 1999, "{st}");
    assert_eq!(st["totals_differ"][0]["count"], "estimated", "{st}");
    let text = status_text(dir.path());
    assert!(!text.contains("every document delivered"), "{text}");
    assert!(
        text.contains("TOTAL DIFFERS: old: 1999 accounted for") && text.contains("estimate: 2000"),
        "{text}"
    );
}

/// The plan's point in time gone on resume (its keep-alive ran out while the copy was
/// stopped) and a document not yet copied deleted meanwhile: the read starts over in a new
/// point in time, proves by digest that it passes over exactly the documents given, and
/// reads the rest — 1,999 documents against the plan's exact 2,000. Whether the missing
/// one was deleted or lost cannot be told any more, so the run does not end 0 and
/// `rfs status` names the index and both numbers instead of "every document delivered".
#[test]
fn a_resume_in_a_new_point_in_time_short_of_the_exact_total_is_no_success() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let mut want = load(&source, "logs", 2000);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    copy_part_way(
        dir.path(),
        &source,
        &target,
        "logs",
        &["--slices", "1"],
        300,
    );
    assert!(source.expire_search_contexts() > 0);
    let gone = "logs-01999";
    assert!(!http_documents(&target.url(), "logs").contains_key(gone));
    remove(&source, "logs", &[gone]);
    want.remove(gone);
    let r = run(copy(
        dir.path(),
        &format!("{}/logs", source.url()),
        &target.url(),
        &["--slices", "1", "--checkpoint-seconds", "0.1"],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(
        r.all().contains(
            "the source's total differs: logs: 1999 accounted for, the source holds 2000"
        ),
        "{r}"
    );
    // Nothing else is missing or doubled.
    assert_same(&http_documents(&target.url(), "logs"), &want);
    let st = common::status(dir.path());
    assert_eq!(st["source_totals"], "differs", "{st}");
    assert_eq!(st["totals_differ"][0]["count"], "exact", "{st}");
    let text = status_text(dir.path());
    assert!(!text.contains("every document delivered"), "{text}");
    assert!(
        text.contains("TOTAL DIFFERS: logs: 1999 accounted for, the source holds 2000"),
        "{text}"
    );
}

/// Flags a worker of the adversarial runs shares: short leases (items are handed to
/// successors at three quarters of theirs, and a killed worker's come back soon), frequent
/// checkpoints.
const SHORT_LEASES: [&str; 8] = [
    "--checkpoint-seconds",
    "0.1",
    "--lease-seconds",
    "2",
    "--max-attempts",
    "40",
    "--control-seconds",
    "0.2",
];

/// A throttled worker with 3 slices hands its items to successors at three quarters of
/// its 2-second leases; while it runs, documents are deleted (copied ones and not yet
/// copied ones), updated and written anew in the source; it is killed (no checkpoint, no
/// release), and a second worker with other flags (`--slices 7`, 100-document batches,
/// 2 items at once) takes the expired leases and the successors, resuming each in the
/// plan's point in time. The target holds exactly the plan's 3,000 documents as they were
/// when it was made — the deleted ones included, the updated one unchanged, none of the
/// new — compared one by one; exit 0; status proved against the exact total.
#[test]
fn successors_a_killed_worker_other_flags_and_writes_during_the_copy_deliver_the_plan() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let want = load(&source, "logs", 3000);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}/logs", source.url());
    let mut first = copy(
        dir.path(),
        &from,
        &target.url(),
        &[
            &SHORT_LEASES[..],
            &[
                "--slices",
                "3",
                "--max-docs-per-sec",
                "300",
                "--max-batch-docs",
                "20",
            ],
        ]
        .concat(),
    );
    first.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut first = Reaped(Some(first.spawn().unwrap()));
    wait_for("documents on the target", Duration::from_secs(60), || {
        target.total_doc_count() >= 400
    });
    remove(&source, "logs", &["logs-00000", "logs-01500", "logs-02999"]);
    let mut changed = BTreeMap::new();
    changed.insert(
        "logs-00001".to_string(),
        serde_json::json!({"changed": true}),
    );
    put(&source, "logs", &changed);
    put(&source, "logs", &late(10));
    // Long enough for hand-offs to successors (three quarters of 2 s) to happen.
    wait_for(
        "more documents on the target",
        Duration::from_secs(60),
        || target.total_doc_count() >= 900,
    );
    let victim = first.0.as_mut().unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
    assert!(target.total_doc_count() < 3000, "the kill came too late");
    let r = run(copy(
        dir.path(),
        &from,
        &target.url(),
        &[
            &SHORT_LEASES[..],
            &[
                "--slices",
                "7",
                "--max-batch-docs",
                "100",
                "--parallel",
                "2",
            ],
        ]
        .concat(),
    ));
    assert!(r.all().contains("the plan's value wins"), "{r}");
    assert_complete(dir.path(), &r, &target, "logs", &want);
    let st = common::status(dir.path());
    assert!(
        st["items"]["total"].as_u64().unwrap() > 3,
        "successors were made: {st}"
    );
    assert_eq!(st["source_totals"], "proved", "{st}");
    assert_eq!(
        st["per_index"]["logs"]["source_total"]["docs"], 3000,
        "{st}"
    );
}

/// The point in time lost while an item reads it (as when the node holding it restarts),
/// just after an already-copied document was deleted: the test server, like a cluster
/// after a delete and a merge, numbers `_shard_doc` anew in the new point in time the
/// read must open, so the next document's number is now the one already passed. The
/// read does not continue after that number (it would skip a document): it passes over
/// as many hits as were given and finds that their digest differs, so the item fails,
/// retry after retry, naming why; the run does not end 0 and status does not claim every
/// document. Nothing on the target is other than a document of the source.
#[test]
fn a_retry_in_a_renumbered_point_in_time_never_skips() {
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let want = load(&source, "logs", 2000);
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}/logs", source.url());
    let mut c = copy(
        dir.path(),
        &from,
        &target.url(),
        &[
            &SHORT_LEASES[..4],
            &[
                "--max-attempts",
                "3",
                "--slices",
                "1",
                "--max-docs-per-sec",
                "300",
                "--max-batch-docs",
                "20",
            ],
        ]
        .concat(),
    );
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let child = Reaped(Some(c.spawn().unwrap()));
    wait_for("documents on the target", Duration::from_secs(60), || {
        target.total_doc_count() >= 300
    });
    remove(&source, "logs", &["logs-00000"]);
    assert!(source.expire_search_contexts() > 0);
    let mut child = child;
    let r = common::finish(child.0.take().unwrap(), started);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("their digest differs"), "{r}");
    let held = http_documents(&target.url(), "logs");
    assert!(held.len() < want.len(), "{r}");
    for (id, doc) in &held {
        assert_eq!(want.get(id), Some(doc), "{id}");
    }
    let st = common::status(dir.path());
    assert_eq!(st["items"]["failed"], 1, "{st}");
    let text = status_text(dir.path());
    assert!(!text.contains("every document delivered"), "{text}");
}
